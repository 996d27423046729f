"""``mb-sim simulate``, ``info`` and ``derive``, run as the installed command a user would run."""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from transforms3d.quaternions import quat2mat

from mb_sim.cli import _ProgressBar
from mb_sim.model import link_poses
from mb_sim.resources import robot_path
from mb_sim.sim import Simulator
from mb_sim.sim.recording import recording_of
from test_recording import read_mcap

MB_SIM = Path(sys.executable).parent / "mb-sim"
DURATION, DT, SAMPLE_EVERY = 1.0, 1e-3, 10
SAMPLES = 1 + round(DURATION / DT / SAMPLE_EVERY)
INITIAL, INPUT = {"shoulder": 0.5, "elbow": -0.3}, {"elbow": 0.2}


@pytest.fixture(scope="session")
def cache_dir(model_cache) -> Path:
    """The tests' shared compiled-model cache, so each robot compiles once."""
    return model_cache


@pytest.fixture(scope="session")
def mb_sim(cache_dir):
    """Run ``mb-sim`` with the session's cache."""
    env = {**os.environ, "MB_SIM_CACHE_DIR": str(cache_dir)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(MB_SIM), *args], capture_output=True, text=True, timeout=120, env=env)
    return run


@pytest.fixture(scope="session")
def simulated(mb_sim, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """One double pendulum run writing CSV, MCAP and a plot into a fresh directory."""
    out = tmp_path_factory.mktemp("simulate")
    result = mb_sim("simulate", "double_pendulum", "--duration", str(DURATION), "--dt", str(DT),
                    "--sample-every", str(SAMPLE_EVERY),
                    "--initial", *(f"{k}={v}" for k, v in INITIAL.items()),
                    "--input", *(f"{k}={v}" for k, v in INPUT.items()),
                    "--csv", str(out / "run.csv"), "--mcap", str(out / "run.mcap"), "--plot", str(out / "run.png"))
    assert result.returncode == 0, result.stderr
    return result, out


@pytest.fixture(scope="session")
def reference(cache_dir) -> tuple[Simulator, object]:
    """The same run in process: the simulator after it, and its trajectory."""
    sim = Simulator(robot_path("double_pendulum"), dt=DT, cache_dir=cache_dir)
    sim.set_state(positions=INITIAL)
    sim.set_efforts(INPUT)
    return sim, sim.simulate(DURATION, SAMPLE_EVERY)


def test_simulate_prints_a_one_line_summary_and_progress(simulated):
    result, _ = simulated
    (summary,) = result.stdout.splitlines()
    assert summary.startswith("double_pendulum: simulated 1 s in ")
    assert "x real time" in summary and "final energy" in summary
    progress = [line for line in result.stderr.splitlines() if line.startswith("simulating")]
    assert len(progress) == 4 and "100.0 %" in progress[-1] and "\r" not in result.stderr


def test_csv_has_named_columns_and_one_row_per_sample(simulated, reference):
    _, out = simulated
    rows = list(csv.reader((out / "run.csv").open()))
    assert rows[0] == ["time", "shoulder_q", "elbow_q", "shoulder_u", "elbow_u"]
    table = np.array(rows[1:], dtype=float)
    assert table.shape == (SAMPLES, 5)
    assert np.all(np.diff(table[:, 0]) > 0) and table[-1, 0] == pytest.approx(DURATION)
    np.testing.assert_allclose(table[0, 1:3], [INITIAL["shoulder"], INITIAL["elbow"]])
    _, trajectory = reference
    np.testing.assert_allclose(table[:, 1:3], trajectory.q, rtol=1e-12, atol=1e-12)


def test_plot_is_a_png(simulated):
    _, out = simulated
    data = (out / "run.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and 10_000 < len(data) < 2_000_000


def test_mcap_holds_joint_states_and_the_tf_tree(simulated, reference):
    _, out = simulated
    sim, trajectory = reference
    messages = read_mcap(out / "run.mcap")
    states = [m.ros_msg for m in messages if m.channel.topic == "/joint_states"]
    tfs = [m.ros_msg for m in messages if m.channel.topic == "/tf"]
    assert len(states) == len(tfs) == SAMPLES
    assert list(states[-1].name) == ["shoulder", "elbow"]
    np.testing.assert_allclose([s.position for s in states], trajectory.q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(states[-1].effort, [0.0, INPUT["elbow"]])
    assert states[-1].header.stamp.sec == 1 and states[-1].header.stamp.nanosec == 0
    transforms = {(t.header.frame_id, t.child_frame_id): t.transform for t in tfs[-1].transforms}
    assert set(transforms) == {("world", "base"), ("base", "upper"), ("upper", "lower")}
    poses = link_poses(sim.robot)(trajectory.q[-1])  # the model's own kinematics, not the generated code
    expected = np.linalg.inv(poses["upper"]) @ poses["lower"]
    elbow = transforms["upper", "lower"]
    rotation = quat2mat([elbow.rotation.w, elbow.rotation.x, elbow.rotation.y, elbow.rotation.z])
    np.testing.assert_allclose(rotation, expected[:3, :3], atol=1e-9)
    np.testing.assert_allclose([elbow.translation.x, elbow.translation.y, elbow.translation.z],
                               expected[:3, 3], atol=1e-9)


def test_recording_leaves_the_simulator_state_alone(reference):
    sim, trajectory = reference
    q, u = sim.q, sim.u
    recording = recording_of(sim, trajectory)
    np.testing.assert_array_equal(sim.q, q)
    np.testing.assert_array_equal(sim.u, u)
    np.testing.assert_allclose(recording.link_poses[-1][recording.link_names.index("lower")],
                               link_poses(sim.robot)(trajectory.q[-1])["lower"], atol=1e-12)


@pytest.mark.parametrize("arguments, culprit", [
    (["no_such_robot.urdf", "--duration", "1"], "no_such_robot.urdf"),
    (["double_pendulum", "--duration", "1", "--input", "elbw=1"], "--input: joint 'elbw' is unknown"),
    (["double_pendulum", "--duration", "1", "--initial", "elbw=1"], "--initial: unknown joint or coordinate 'elbw'"),
    (["double_pendulum", "--duration", "1", "--input", "elbow=abc"], "--input: elbow: not a number: 'abc'"),
    (["double_pendulum", "--duration", "1", "--input", "elbow"], "--input: expected JOINT=VALUE, got 'elbow'"),
    (["double_pendulum", "--duration", "-1"], "--duration: must be positive, got '-1'"),
    (["double_pendulum", "--duration", "1", "--csv", "/no/such/dir/o.csv"], "--csv: cannot write '/no/such/dir/o.csv'"),
    (["double_pendulum", "--duration", "1", "--plot", "."], "--plot: cannot write '.': it is a directory"),
    (["double_pendulum", "--duration", "1", "--integrator", "euler"], "--integrator: unknown 'euler'"),
    (["diff_drive", "--duration", "1", "--voltage", "front_motor=3"], "--voltage: no motor 'front_motor' (motors: "
                                                                       "right_motor, left_motor)"),
    (["diff_drive", "--duration", "1", "--input", "right_wheel_joint=3"],
     "--input: joint 'right_wheel_joint' is driven by a motor: give its voltage with --voltage"),
    (["diff_drive", "--duration", "1", "--voltage", "left_motor=nan"], "--voltage: left_motor: not a finite number"),
])
def test_bad_input_is_one_line_naming_the_culprit(mb_sim, arguments, culprit):
    result = mb_sim("simulate", *arguments)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("mb-sim: ") and culprit in line


def test_disable_releases_a_named_constraint(mb_sim, repo, tmp_path):
    zoo = str(repo / "test" / "urdf" / "kinematic_zoo.urdf")
    contradicting = ["--duration", "0.1", "--initial", "shoulder=0.3", "finger_joint=0.7"]
    refused = mb_sim("simulate", zoo, *contradicting)
    assert refused.returncode != 0 and "contradicts the constraints" in refused.stderr
    released = mb_sim("simulate", zoo, *contradicting, "--disable", "finger_joint", "--csv", str(tmp_path / "z.csv"))
    assert released.returncode == 0, released.stderr
    with open(tmp_path / "z.csv") as csv:
        header, first = csv.readline().strip().split(","), csv.readline().strip().split(",")
    assert float(first[header.index("finger_joint_q")]) == 0.7  # kept: nothing ties it to the shoulder
    unknown = mb_sim("simulate", "double_pendulum", "--duration", "0.1", "--disable", "elbow")
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    assert unknown.stderr.strip().splitlines()[-1] == (
        "mb-sim: --disable: unknown constraint 'elbow'; constraints: none: this robot has no constraints")


def test_voltages_drive_the_seed_robot_and_the_plot_shows_its_path(mb_sim, tmp_path):
    """Seed 002's 24 V / 20 V run: the currents are CSV columns, the plot has the x-y path."""
    result = mb_sim("simulate", "diff_drive", "--duration", "2", "--voltage", "right_motor=24", "left_motor=20",
                    "--csv", str(tmp_path / "d.csv"), "--plot", str(tmp_path / "d.png"))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "d.csv") as table:
        rows = list(csv.DictReader(table))
    assert {"right_motor_i", "left_motor_i"} <= set(rows[0])
    assert float(rows[-1]["right_wheel_joint_u"]) == pytest.approx(24.0, rel=1e-6)  # V / K, no load
    assert float(rows[1]["right_motor_i"]) > 0 and float(rows[-1]["base_joint_theta"]) > 0.5  # turning left
    assert (tmp_path / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_info_prints_the_tree_and_the_degrees_of_freedom(mb_sim):
    result = mb_sim("info", "arm6")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Robot 'arm6': ")
    assert "  elbow_joint_q: joint 'elbow_joint': angle about the axis [rad]" in result.stdout
    assert "Degrees of freedom: 6 " in result.stdout


def test_info_counts_constraints(mb_sim, repo):
    result = mb_sim("info", str(repo / "test" / "urdf" / "kinematic_zoo.urdf"))
    assert result.returncode == 0, result.stderr
    assert "Constraints: 1 of 1 kept" in result.stdout and "Degrees of freedom: 6 " in result.stdout
    assert ("  finger_joint: 1 equation; switch with --disable finger_joint or ~/constraints/finger_joint/enable"
            in result.stdout)


def test_info_lists_dropped_constraints(repo, monkeypatch, capsys):
    from test_symbolic import ExtraConstraints

    from mb_sim import cli
    from mb_sim.cli import inspection
    from mb_sim.model import build_robot
    from mb_sim.urdf import parse_urdf

    robot = build_robot(parse_urdf(repo / "test" / "urdf" / "kinematic_zoo.urdf"))
    robot.joints["finger_joint"].add_load_group(ExtraConstraints("extra"))
    robot.define_all()
    monkeypatch.setattr(inspection, "robot_from_args", lambda _args: robot)
    assert cli.main(["info", "zoo_with_extra_constraints"]) == 0
    text = capsys.readouterr().out
    assert ("Constraints: 1 of 3 kept\n"
            "  constraint 1 (RevoluteJoint 'finger_joint') is redundant with the others where the robot is "
            "assembled; enforced with them (the dynamics keep the independent rows wherever the robot is)\n"
            "  constraint 2 (RevoluteJoint 'finger_joint') is already satisfied (zero row); dropped\n"
            "  finger_joint: 1 equation (+1 redundant where assembled); switch with --disable finger_joint or "
            "~/constraints/finger_joint/enable\n"
            "Degrees of freedom: 6 (7 speeds of the open tree - 1 independent constraints)\n"
            "Dependent coordinates (solved from the others): finger_joint_q\n") in text


def test_derive_compiles_into_the_cache(mb_sim, cache_dir):
    result = mb_sim("derive", "pendulum")
    assert result.returncode == 0, result.stderr
    library = Path(result.stdout.splitlines()[-1].removeprefix("library: "))
    assert library.is_file() and library.parent == cache_dir
    again = mb_sim("derive", "pendulum")
    assert "(from the cache)" in again.stdout and again.stdout.splitlines()[-1] == f"library: {library}"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_redraws_one_line_on_a_terminal():
    stream = Terminal()
    bar = _ProgressBar(2.0, stream)
    bar.REDRAW = 0.0
    for k in range(1, 11):
        bar.update(k / 10, k / 5)
    text = stream.getvalue()
    assert text.count("\r") == 10 and text.endswith("100.0 %  t = 2.000 / 2 s  wall 0.0 s\n")
    assert text.count("\n") == 1


def test_progress_bar_prints_plain_lines_per_quarter_elsewhere():
    stream = io.StringIO()
    bar = _ProgressBar(1.0, stream)
    for k in range(1, 101):
        bar.update(k / 100, k / 100)
    lines = stream.getvalue().splitlines()
    assert [line.split("]")[1].split("%")[0].strip() for line in lines] == ["25.0", "50.0", "75.0", "100.0"]


def test_spring_outputs_are_in_the_csv_and_the_mcap(mb_sim, tmp_path):
    # spring_mass: anchor at the origin, body from x = 1.05 m, reference length 1 m, k = 100 N/m,
    # d = 1 N s/m, no gravity: force = k (L - 1) + d L' (tension positive), L = 1.05 + q, L' = u.
    result = mb_sim("simulate", "spring_mass", "--duration", "0.5", "--dt", "1e-3", "--sample-every", "10",
                    "--csv", str(tmp_path / "run.csv"), "--mcap", str(tmp_path / "run.mcap"))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "run.csv") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 51
    assert list(rows[0])[-3:] == ["spring_length", "spring_length_rate", "spring_force"]
    for row in rows:
        q, u = float(row["slide_q"]), float(row["slide_u"])
        length, rate = float(row["spring_length"]), float(row["spring_length_rate"])
        assert length == pytest.approx(1.05 + q, abs=1e-12) and rate == pytest.approx(u, abs=1e-12)
        assert float(row["spring_force"]) == pytest.approx(100.0 * (length - 1.0) + 1.0 * rate, abs=1e-9)
    springs = [m.ros_msg for m in read_mcap(tmp_path / "run.mcap") if m.channel.topic == "/mb_sim/springs"]
    assert len(springs) == 51 and list(springs[-1].name) == ["spring"]
    assert springs[-1].position[0] == pytest.approx(float(rows[-1]["spring_length"]), abs=1e-12)
    assert springs[-1].effort[0] == pytest.approx(float(rows[-1]["spring_force"]), abs=1e-12)
