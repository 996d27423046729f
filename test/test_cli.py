"""The installed ``mb-sim`` command, run as a user would."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MB_SIM = Path(sys.executable).parent / "mb-sim"


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
