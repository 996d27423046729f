"""Console entry points of the controllers: the signal handling is installed before the heavy
imports (rclpy, message types, SymPy: about a second), so a Ctrl-C while a launch starts ends the
process quietly with status 0 instead of a KeyboardInterrupt traceback from an import (as
``mb_sim.ros.node`` does for ``mb_sim_node``)."""
from __future__ import annotations

import importlib

__all__ = ["demo_controller", "diff_drive_controller", "lqr_controller", "pick_and_place"]


def _main(module: str, args: list[str] | None = None) -> int:
    """``module``'s ``_run(args)`` under :func:`~mb_sim.ros.teardown.run_until_signal`, imported
    inside it; the process then ends (:func:`~mb_sim.ros.teardown.end_process`)."""
    from mb_sim.ros.teardown import end_process, run_until_signal

    return end_process(run_until_signal(lambda: importlib.import_module(module)._run(args)))


def demo_controller(args: list[str] | None = None) -> int:
    """``mb_sim_demo_controller`` (mb_sim.ros.controller)."""
    return _main("mb_sim.ros.controller", args)


def diff_drive_controller(args: list[str] | None = None) -> int:
    """``mb_sim_diff_drive_controller`` (mb_sim.ros.diff_drive_controller)."""
    return _main("mb_sim.ros.diff_drive_controller", args)


def lqr_controller(args: list[str] | None = None) -> int:
    """``mb_sim_lqr_controller`` (mb_sim.ros.lqr_controller)."""
    return _main("mb_sim.ros.lqr_controller", args)


def pick_and_place(args: list[str] | None = None) -> int:
    """``mb_sim_pick_and_place`` (mb_sim.ros.pick_and_place)."""
    return _main("mb_sim.ros.pick_and_place", args)
