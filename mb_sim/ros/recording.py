"""Recordings of the ``mb_sim`` node (``record_file``, ``~/record``): an MCAP file of the commands in
and the states out, with what ``mb-sim replay`` needs to run it again (the URDF, the simulator's
options, the pace, the topics and what they carried)."""
from __future__ import annotations

from collections.abc import Callable

from rclpy.serialization import serialize_message
from std_msgs.msg import String

from mb_sim.ros.node_parameters import NodeParameters
from mb_sim.session import Session

__all__ = ["NodeRecording"]


class NodeRecording:
    """Starts `session`'s recordings for `node`; `settings` gives, when a recording starts, what
    the node adds to its header (topics, the simulator's options)."""

    def __init__(self, node, session: Session, params: NodeParameters, urdf_text: str, period_steps: int,
                 settings: Callable[[], dict]) -> None:
        self._node, self._session, self._params = node, session, params
        self.urdf_text, self._period_steps, self._settings = urdf_text, period_steps, settings  # (the scene's)
        self.record_file = params.record_file

    def start(self, path: str) -> None:
        """Open a recording (mb_sim.session.recorder) to `path`, starting from the current state."""
        params = self._params
        settings = {"node": self._node.get_fully_qualified_name(), "physics_dt": params.dt,
                    "period_steps": self._period_steps, "lockstep": params.lockstep,
                    "command_timeout": 0.0 if params.lockstep else params.command_timeout,
                    "allow_partial_joints_goal": params.allow_partial, **self._settings()}
        self._session.start_recording(path, settings, serialize_message(String(data=self.urdf_text)),
                                      lambda text: serialize_message(String(data=text)))
        self._node.get_logger().info(f"recording commands and states to {self._session.recording}")
