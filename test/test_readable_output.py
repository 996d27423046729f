"""Output for people (issue 25): `mb-sim eom` a person can read, LaTeX with readable symbol names,
and plots whose axes carry one unit each with a mobile base's pose apart from the joint angles."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mb_sim.model import load_urdf
from mb_sim.resources import robot_path
from mb_sim.sim import Simulator

MB_SIM = Path(sys.executable).parent / "mb-sim"


def eom(*args: str) -> str:
    """stdout of ``mb-sim eom ARGS --quiet``, which must succeed."""
    result = subprocess.run([str(MB_SIM), "eom", *args, "--quiet"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_eom_of_arm6_is_a_summary_a_person_can_read():
    """Every symbol with its unit and description, the sizes and operation counts; no temporaries
    (98 KB of them with 1,800-character lines before)."""
    text = eom("arm6")
    assert len(text) < 20_000, f"{len(text)} characters"
    assert "_tmp" not in text
    lines = text.splitlines()
    assert max(map(len, lines)) <= 150, max(lines, key=len)
    assert "  shoulder_pan_joint_q   [rad]  joint 'shoulder_pan_joint': angle about the axis" in lines
    assert "  elbow_joint_effort          [N m]  commanded effort of joint 'elbow_joint' (input)" in lines
    assert any(re.fullmatch(r"  base_link_m +=  ?4 kg +mass of link 'base_link'", line) for line in lines), text
    assert "  M: 6 x 6 (symmetric), F: 6 x 1" in lines
    temporaries = re.search(r"^  temporaries: (\d+), ([\d,]+) operations \(mul [\d,]+, add", text, re.M)
    assert temporaries, text
    full = eom("arm6", "--full")  # the former output, still there
    assert f"Temporaries ({temporaries.group(1)}, in evaluation order):" in full and "Mass matrix M(q):" in full
    assert "27 of 27 entries too large to print expanded" in text


def test_eom_prints_small_entries_of_m_and_f_simplified_and_wrapped():
    """The double pendulum's M and F as a textbook has them (lower link: m c^2 + I; gravity on
    the elbow through sin(q1 + q2)), each entry on lines of at most 100 characters."""
    text = eom("double_pendulum")
    assert "  M[elbow_u, elbow_u] = lower_com_z**2*lower_m + lower_iyy\n" in text
    entries = text[text.index("M (upper triangle"):]
    assert ("  F[elbow_u] = elbow_effort - elbow_origin_z*lower_com_z*lower_m*shoulder_u**2*sin(elbow_q) +\n"
            "      gravity_g*lower_com_z*lower_m*sin(elbow_q + shoulder_q)\n") in entries
    assert len(re.findall(r"^  [MF]\[", entries, re.M)) == 3 + 2
    assert max(len(line) for line in entries.splitlines()[2:]) <= 100


def test_eom_temporaries_on_request():
    text = eom("four_bar", "--temporaries")
    assert re.search(r"^Temporaries \(\d+, in evaluation order\):$", text, re.M)
    assert re.search(r"^  _tmp\d+ = cos\(crank_joint_q\)    \[rotation joint crank_joint <- crank\]$", text, re.M), \
        text[:3000]
    assert "  M[crank_joint_u, crank_joint_u] = _tmp" in text
    assert max(len(line) for line in text.splitlines()) <= 150


@pytest.mark.parametrize("robot, expected", [
    ("arm6", [r"q_{\mathrm{shoulder\_pan\_joint}}", r"\tau_{\mathrm{elbow\_joint}}", r"m_{\mathrm{forearm\_link}}"]),
    pytest.param("four_bar", [r"q_{\mathrm{crank\_joint}}", r"\mathrm{com\_x}_{\mathrm{coupler}}"],
                 marks=pytest.mark.slow),  # (its LaTeX takes 15-20 s)
    ("diff_drive", [r"\theta_{\mathrm{base\_joint}}", r"v_{\mathrm{right\_motor}}", r"i_{\mathrm{left\_motor}}"]),
])
def test_latex_keeps_symbol_names_readable(robot, expected):
    """``q_{\\mathrm{crank\\_joint}}``, not SymPy's ``crank_{joint q}`` (every underscore after the
    first was a space in a subscript)."""
    for text in (eom(robot, "--format", "latex"), eom(robot, "--format", "latex", "--full")):
        for name in expected:
            assert name in text, name
        mangled = re.findall(r"[a-z0-9]+_\{[a-z0-9]+ [a-z0-9 ]+\}", text)
        assert not mangled, mangled[:5]
    assert r"\mathrm{tmp}_{0} = " in text  # the temporaries of --full


def _axes(figure) -> list:
    """Every axes of `figure`, its subfigures' included."""
    return [*figure.get_axes(), *(a for sub in figure.subfigs for a in _axes(sub))]


def _panels(robot: str) -> dict[str, list[str]]:
    """Per axes of the plot of a short simulation of `robot`, its y label -> its lines' names."""
    from mb_sim.sim.plotting import trajectory_figure

    sim = Simulator(load_urdf(robot_path(robot)))
    trajectory = sim.simulate(0.05, 10)
    figure = trajectory_figure(trajectory, robot, robot=sim.robot)
    return {axes.get_ylabel(): [line.get_label() for line in axes.lines] for axes in _axes(figure)}


def test_plot_of_an_all_revolute_arm_says_rad():
    assert _panels("arm6") == {
        "joint angles [rad]": [f"{j}_q" for j in ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                                                   "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")],
        "joint angular rates [rad/s]": [f"{j}_u" for j in ("shoulder_pan_joint", "shoulder_lift_joint",
                                                             "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                                                             "wrist_3_joint")]}


def test_plot_of_a_slider_crank_puts_metres_apart_from_radians():
    assert _panels("slider_crank") == {
        "joint angles [rad]": ["crank_joint_q", "rod_joint_q"], "joint position [m]": ["slider_joint_q"],
        "joint angular rates [rad/s]": ["crank_joint_u", "rod_joint_u"], "joint velocity [m/s]": ["slider_joint_u"]}


def test_plot_of_a_mobile_base_puts_its_pose_apart_from_the_wheel_angles():
    panels = _panels("diff_drive")
    assert panels["base 'base_joint' position [m]"] == ["base_joint_x", "base_joint_y"]
    assert panels["base 'base_joint' angle [rad]"] == ["base_joint_theta"]
    assert panels["joint angles [rad]"] == ["right_wheel_joint_q", "left_wheel_joint_q"]
    assert panels["base 'base_joint' velocity [m/s]"] == ["base_joint_vx", "base_joint_vy"]
    assert panels["joint angular rates [rad/s]"] == ["right_wheel_joint_u", "left_wheel_joint_u"]
    assert panels["y [m]"] == ["base_joint path", "base_joint start"]  # the map view


def test_plot_of_a_free_body_gives_each_axis_its_unit():
    panels = _panels("free_body")
    assert panels["base 'base_joint' position [m]"] == ["base_joint_x", "base_joint_y", "base_joint_z"]
    assert panels["base 'base_joint' orientation quaternion [1]"] == [f"base_joint_q{c}" for c in "wxyz"]
    assert panels["base 'base_joint' velocity [m/s]"] == ["base_joint_vx", "base_joint_vy", "base_joint_vz"]
    assert panels["base 'base_joint' angular rate [rad/s]"] == ["base_joint_wx", "base_joint_wy", "base_joint_wz"]


def test_simulate_plot_draws_the_panels(tmp_path):
    """`mb-sim simulate --plot` draws the robot's panels: for diff_drive three rows (base position,
    base heading, wheel angles) beside the path, 18 x 8.2 inches at 100 dpi (one row of stacked
    coordinates and speeds before: 16 x 7)."""
    png = tmp_path / "drive.png"
    result = subprocess.run([str(MB_SIM), "simulate", "diff_drive", "--duration", "0.2", "--voltage", "right_motor=5",
                             "--plot", str(png)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")) == (1800, 820)
