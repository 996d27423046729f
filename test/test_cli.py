"""The installed ``mb-sim`` command, run as a user would."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MB_SIM = Path(sys.executable).parent / "mb-sim"

#: The command line as a user runs it: a process per call.
pytestmark = pytest.mark.process


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MB_SIM), *args], capture_output=True, text=True, timeout=120)


def test_describe_shipped_robot_by_name():
    result = run("describe", "double_pendulum")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Robot 'double_pendulum': 3 links, 2 joints, 2 coordinates")
    assert "elbow_q: joint 'elbow': angle about the axis [rad]" in result.stdout


def test_describe_bad_urdf_is_one_line_without_traceback(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='r'><link name='a'><inertial><mass value='-1'/></inertial></link></robot>")
    result = run("describe", str(bad))
    assert result.returncode == 1
    assert result.stderr.strip() == f"mb-sim: {bad}: link 'a' <inertial>: negative mass -1.0"


def test_describe_missing_robot():
    result = run("describe", "no_such_robot")
    assert result.returncode == 1
    assert "no_such_robot" in result.stderr and "Traceback" not in result.stderr


def test_doctor_reports_a_working_installation():
    result = run("doctor")
    assert result.returncode == 0, result.stdout
    assert "ok  tf2_msgs.msg" in result.stdout


def test_describe_and_eom_report_bad_input_in_one_line(tmp_path):
    """Everything the other commands report in one line, these do too (no traceback)."""
    far_loop = (tmp_path / "far.urdf")
    far_loop.write_text(
        "<robot name='r'><link name='g'/><link name='a'><inertial><mass value='1'/><inertia ixx='1' ixy='0' "
        "ixz='0' iyy='1' iyz='0' izz='1'/></inertial></link><joint name='j' type='revolute'><parent link='g'/>"
        "<child link='a'/><axis xyz='0 1 0'/></joint><mb_sim><loop_joint name='l' type='spherical' parent='g' "
        "child='a'><origin xyz='0 0.5 0'/></loop_joint></mb_sim></robot>")
    component = tmp_path / "component.urdf"
    component.write_text("<robot name='r'><link name='a'/><component type='nothing_registered' name='c' "
                         "attach_to='a'><parameter name='k' value='abc'/></component></robot>")
    cases = [("eom", far_loop, "loop joint 'l': position along y is -0.5 whatever the coordinates"),
             ("describe", component, "component 'c' <parameter name=\"k\" value=\"abc\">: not a number"),
             ("eom", component, "not a number"), ("describe", tmp_path, "is a directory")]
    for command, path, expected in cases:
        result = run(command, str(path), *(["--quiet"] if command == "eom" else []))
        assert result.returncode == 1, (command, path, result.stdout)
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert expected in result.stderr, (command, result.stderr)
