"""The node's per-period messages (/joint_states, /tf, /odom, /clock) of one simulator, serialized.

Read straight from the simulator's buffers with index arrays fixed at start-up and written into
the wire templates of :mod:`mb_sim.ros.wire`: no dictionaries, no message objects, so publishing a
period costs tens of microseconds, not hundreds.  The values are those of
:meth:`Simulator.outputs` (the tests check them against it, message for message).  No rclpy
node: the node publishes the bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mb_sim.ros.wire import clock_template, joint_state_template, odometry_template, stamp_parts, tf_template
from mb_sim.sim import Simulator
from mb_sim.sim.frames import Edge, EdgePoses, FrameTree, Twist, quaternions

__all__ = ["StateMessages", "SerializedState"]


@dataclass(frozen=True)
class SerializedState:
    """One period's messages, serialized: None where not wanted (``tf`` also for a robot without
    moving joints); ``odometry`` has one message per odometry edge, or none."""

    joint_states: bytes | None
    tf: bytes | None
    clock: bytes
    odometry: list[bytes]


class StateMessages:
    """Renders the state of `sim` as the node publishes it each period.

    `tree` gives the moving TF edges, `odometry` the ``(edge, twist function)`` of each base with
    ``/odom`` (in `world_frame`, the child link's world pose and its twist in its own axes).
    """

    def __init__(self, sim: Simulator, tree: FrameTree, world_frame: str,
                 odometry: list[tuple[Edge, Twist]]) -> None:
        self.sim = sim
        indices = sim.joint_indices
        self.joint_names = list(indices)
        self._q = np.array([q for q, _ in indices.values()], dtype=np.intp)
        self._u = np.array([u for _, u in indices.values()], dtype=np.intp)
        position = {name: k for k, name in enumerate(self.joint_names)}
        self._actuated = np.array([position[j] for j in sim.actuated_joints], dtype=np.intp)
        self._motorized = np.array([position[j] for j in sim.motor_joints.values()], dtype=np.intp)
        self._values = np.zeros(3 * len(self.joint_names))
        self._joint_states = joint_state_template(self.joint_names)
        self._edges = EdgePoses(tree.moving, sim.model.link_names)
        self._tf = tf_template([(e.parent_frame, e.child_frame) for e in tree.moving]) if tree.moving else None
        self._clock = clock_template()
        links = {name: k for k, name in enumerate(sim.model.link_names)}
        self._odometry = [(links[edge.child_link], twist, odometry_template(world_frame, edge.child_frame))
                          for edge, twist in odometry]

    def render(self, evaluated: bool = False, joint_states: bool = True, tf: bool = True,
               odometry: bool = True) -> SerializedState:
        """The messages of the current state (those not wanted are skipped: None, or no odometry);
        `evaluated`: the model's outputs are already those of the current state
        (``Simulator.outputs`` was just called), else they are evaluated when needed."""
        sim = self.sim
        when = stamp_parts(sim.time)
        if not (joint_states or tf and self._tf or odometry and self._odometry):
            return SerializedState(None, None, self._clock.render((), when), [])
        if not evaluated:
            sim.model.evaluate_into(sim.time)
        rows = sim.model.layout.view(sim.model.buffers.out, "link_poses")
        return SerializedState(self._joint_states.render(self._joint_values(), when) if joint_states else None,
                               self._tf_message(rows, when) if tf else None,
                               self._clock.render((), when),
                               self._odometry_messages(rows, when) if odometry else [])

    def _joint_values(self) -> np.ndarray:
        """Positions, velocities and efforts of the one-DoF joints, one array."""
        b, view = self.sim.model.buffers, self.sim.model.layout.view
        n = len(self.joint_names)
        values = self._values
        values[:n], values[n:2 * n] = b.q[self._q], b.u[self._u]
        efforts = values[2 * n:]
        efforts[:] = 0.0
        efforts[self._actuated] = self.sim.efforts if self.sim.servos.active else b.inputs[:len(self._actuated)]
        if len(self._motorized):
            efforts[self._motorized] = view(b.out, "motor_states")[:, 2]
        return values

    def _tf_message(self, rows: np.ndarray, when: tuple[int, int]) -> bytes | None:
        if self._tf is None:
            return None
        rotation, position = self._edges(rows)
        return self._tf.render(np.hstack([position, quaternions(rotation)]), when)

    def _odometry_messages(self, rows: np.ndarray, when: tuple[int, int]) -> list[bytes]:
        b, messages = self.sim.model.buffers, []
        for link, twist, template in self._odometry:
            row = rows[link]
            linear, angular = twist(b.q, b.u, b.params)
            pose = np.concatenate([row[9:12], quaternions(row[:9])[0], np.ravel(linear), np.ravel(angular)])
            messages.append(template.render(pose, when))
        return messages

    def clock(self) -> bytes:
        """/clock at the current sim time (also while paused)."""
        return self._clock.render((), stamp_parts(self.sim.time))
