"""Shared test set-up: ROS 2 traffic of a test run stays on this machine and in its own domain."""
from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # test helper modules

# Before rclpy is imported anywhere: a private DDS domain per run, localhost only, so parallel
# runs and other ROS 2 systems on the machine cannot cross-talk with the tests.  Subprocesses
# started by tests inherit these.
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


@pytest.fixture(scope="session")
def repo() -> Path:
    """Root of the source checkout under test."""
    return REPO
