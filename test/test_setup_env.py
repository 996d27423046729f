"""The set-up script reports which step failed and why."""
from __future__ import annotations

import os
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
