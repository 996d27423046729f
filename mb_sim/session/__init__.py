"""A simulation run without rclpy: the :class:`Session` (simulator, held commands, pause and
failure, the command clock, the recording) and the logic it is made of: command validation
(:mod:`~mb_sim.session.commands`, :mod:`~mb_sim.session.trajectory_commands`), command routing
(:mod:`~mb_sim.session.command_router`), real-time pacing (:mod:`~mb_sim.session.pacing`) and
recordings (:mod:`~mb_sim.session.recorder`).  The ROS 2 node (:mod:`mb_sim.ros`) is an adapter
over it; nothing here imports rclpy, so it is tested without DDS.
"""
from __future__ import annotations

from mb_sim.session.session import MAX_ADVANCE_STEPS, Session, SessionError

__all__ = ["Session", "SessionError", "MAX_ADVANCE_STEPS"]
