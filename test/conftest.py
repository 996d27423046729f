"""Shared test set-up: ROS 2 traffic of a test run stays on this machine and in its own domain (one
per pytest-xdist worker); compiled models are shared by every test of a run (and by later runs);
tests marked ``slow`` run only when asked for (``-m slow``: ``make test-slow``)."""
from __future__ import annotations

import inspect
import os
import random
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # test helper modules


def _domain_id() -> str:
    """A DDS domain private to this run and, under pytest-xdist, to this worker: the run's base
    (drawn once, inherited by the workers) plus the worker's number, within 1..101."""
    base = int(os.environ.setdefault("MB_SIM_TEST_DOMAIN_BASE", str(random.randint(0, 100))))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return str((base + int(worker if worker.isdigit() else 0)) % 101 + 1)


# Before rclpy is imported anywhere: a private DDS domain per run (and worker), localhost only, so
# parallel runs, the workers of one run and other ROS 2 systems on the machine cannot cross-talk
# with the tests.  Subprocesses started by tests inherit these.
if "PYTEST_XDIST_WORKER" in os.environ:  # (the controller's domain, inherited, is not this worker's)
    os.environ["ROS_DOMAIN_ID"] = _domain_id()
else:
    os.environ.setdefault("ROS_DOMAIN_ID", _domain_id())
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
# A first load waits for the optimized build, as the tests' figures were measured; quick first
# builds (mb_sim.codegen.tiers, the default for users) are tested in test_quick_builds.py.
os.environ.setdefault("MB_SIM_FIRST_BUILD", "optimized")


@pytest.fixture(scope="session")
def repo() -> Path:
    """Root of the source checkout under test."""
    return REPO


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """The compiled-model cache the tests share: ``$MB_SIM_TEST_CACHE``, else the user's
    (``$MB_SIM_CACHE_DIR`` or ``~/.cache/mb_sim``), so a robot compiles once per machine, whichever
    test and worker first needs it (the cache is safe for concurrent processes).  Tests of the
    cache itself use their own directories."""
    from mb_sim.codegen.cache import cache_directory

    directory = Path(os.environ.get("MB_SIM_TEST_CACHE") or cache_directory())
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory


#: Fixtures that start processes (nodes, DDS peers, the command line), and what a test's own code
#: calls to start one: such tests get the ``process`` marker.
PROCESS_FIXTURES = {"nodes", "peer", "shared_peer", "node_env", "mb_sim", "sim_env"}
PROCESS_CALLS = re.compile(r"\bsubprocess\.|\b(Popen|Process|NodeProcess|Peer|start_node|_source_and_run)\(|"
                           r"backend=\"(dask|local)\"|\bworkers=[2-9]")


def _starts_processes(item: pytest.Item) -> bool:
    if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    try:
        return bool(PROCESS_CALLS.search(inspect.getsource(item.function)))
    except (AttributeError, OSError, TypeError):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that start processes get the ``process`` marker (``make test-fast`` leaves them out).
    Without a marker expression (``-m``), tests marked ``slow`` are skipped: ``make test-slow``
    (``-m slow``) runs them, and CI runs both."""
    for item in items:
        if _starts_processes(item):
            item.add_marker(pytest.mark.process)
    if config.option.markexpr:
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow (make test-slow)")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)
