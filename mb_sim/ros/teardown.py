"""Leaving ROS 2 without hanging: node and context teardown with a time limit.

Destroying DDS entities can deadlock inside Fast DDS when one of its timer callbacks needs a lock
the destroying thread holds (eProsima/Fast-DDS#6502, open; seen here as a node stuck for good in
``rcl_service_fini`` when several nodes started and stopped at once).  The blocked call holds the
GIL, so no Python thread can step in: the limit is faulthandler's C watchdog, which ends the
process with status 1 once ``TEARDOWN_TIMEOUT`` has passed.  A normal teardown takes milliseconds.
"""
from __future__ import annotations

import faulthandler
import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TEARDOWN_TIMEOUT", "bounded_teardown"]

#: Seconds a teardown may take before the process is ended (status 1).
TEARDOWN_TIMEOUT = 1.5


@contextmanager
def bounded_teardown(timeout: float = TEARDOWN_TIMEOUT) -> Iterator[None]:
    """Run the body (destroy nodes, shut rclpy down); past `timeout` s, exit the process with 1.

    The watchdog writes its thread dump to /dev/null: a user stopping a node wants no traceback.
    """
    with open(os.devnull, "w") as sink:
        faulthandler.dump_traceback_later(timeout, exit=True, file=sink)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
