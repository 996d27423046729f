"""The set-up script reports which step failed and why."""
from __future__ import annotations

import os
import re
import subprocess


def test_setup_names_the_failing_step(repo, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ROS_DISTRO"}
    env.update(PYTHON="/no/such/python3.11", VENV=str(tmp_path / "venv"))
    proc = subprocess.run(["bash", str(repo / ".ci" / "setup-env")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert 'step "find Python 3.11"' in proc.stderr
    assert "/no/such/python3.11" in proc.stderr
    assert not (tmp_path / "venv").exists()


def _source_and_run(repo, tmp_path, commands: str) -> subprocess.CompletedProcess:
    """Source the set-up script (which then runs no step) and run `commands` with its functions, a
    heartbeat every second.  A script that ran its steps when sourced fails at "find Python 3.11"."""
    env = {k: v for k, v in os.environ.items() if k != "ROS_DISTRO"}
    env.update(PYTHON="/no/such/python3.11", VENV=str(tmp_path / "venv"), MB_SIM_SETUP_HEARTBEAT="1")
    script = f'source "{repo / ".ci" / "setup-env"}"; LOG="{tmp_path / "setup.log"}"; STEP="testing step"; {commands}'
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_a_long_step_reports_its_progress_while_it_runs(repo, tmp_path):
    """A step that runs for seconds prints a heartbeat (its time so far and the log's last line)
    until it ends, and its output still goes to the log."""
    proc = _source_and_run(repo, tmp_path, "run bash -c 'echo Collecting ros-rclpy; sleep 3.5; echo finished'; "
                                           "echo returned; sleep 2.5")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    beats = [line for line in lines if "testing step," in line]
    assert len(beats) >= 2, proc.stdout
    assert all(re.fullmatch(r"\[setup +\d+s\]   \.\.\. testing step, \d+ s so far: Collecting ros-rclpy", b)
               for b in beats), beats
    assert lines[-1] == "returned", "a heartbeat outlived its step:\n" + proc.stdout
    assert (tmp_path / "setup.log").read_text() == "Collecting ros-rclpy\nfinished\n"


def test_a_failing_step_stops_its_heartbeat_and_shows_the_log(repo, tmp_path):
    proc = _source_and_run(repo, tmp_path, "run bash -c 'echo compiling; sleep 2.5; echo error: no such type >&2; exit 3'")
    assert proc.returncode == 1
    assert 'setup failed at step "testing step"' in proc.stderr and "error: no such type" in proc.stderr
    assert "wait_for" not in proc.stderr and "Terminated" not in proc.stderr, proc.stderr
    beats = [line for line in proc.stdout.splitlines() if "testing step," in line]
    assert beats and all(line.endswith("so far: compiling") for line in beats), proc.stdout
