"""Loop-joint reactions as RViz draws them (``~/constraints/<token>/wrench``), without rclpy.

The simulator reports a loop joint's reaction on its child link as a force F and a torque about
the child-side point C, both in the axes of the parent-side frame J
(:class:`~mb_sim.sim.outputs.ConstraintReaction`).  RViz's Wrench display draws a
``geometry_msgs/WrenchStamped`` at the origin of its ``header.frame_id`` in that frame's axes, so
the node publishes the same reaction in the child link's frame: force in child-link axes, torque
about the child link's origin in child-link axes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = ["LoopWrench", "loop_wrenches", "wrench_in_child_frame"]


def wrench_in_child_frame(force: np.ndarray, torque: np.ndarray, parent_pose: np.ndarray, child_pose: np.ndarray,
                          origin_rpy: np.ndarray, child_origin_xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A loop joint's reaction on its child link, moved to the child link's frame.

    `force` and `torque` (about C) are in the axes of J: the parent link's axes rotated by the
    loop joint's `origin_rpy`; `parent_pose`/`child_pose` are the links' 4x4 world poses; C sits at
    `child_origin_xyz` in the child link.  Returns the force in child-link axes and the torque
    about the child link's origin in child-link axes:
    ``F_c = R_c^T R_J F``, ``tau_c = R_c^T R_J tau + r_C x F_c``.
    """
    to_child = np.asarray(child_pose, dtype=float)[:3, :3].T @ (
        np.asarray(parent_pose, dtype=float)[:3, :3] @ rpy_to_matrix(np.asarray(origin_rpy, dtype=float)))
    force_c = to_child @ np.asarray(force, dtype=float)
    torque_c = to_child @ np.asarray(torque, dtype=float) + np.cross(np.asarray(child_origin_xyz, dtype=float), force_c)
    return force_c, torque_c


@dataclass(frozen=True)
class LoopWrench:
    """What the node needs to publish one loop joint's reaction: the constraint (loop joint)
    name, the topic, the TF frame of the child link and the loop joint's geometry."""

    constraint: str
    topic: str
    frame: str
    parent: str
    child: str
    origin_rpy: np.ndarray
    child_origin_xyz: np.ndarray

    def in_child_frame(self, force: np.ndarray, torque: np.ndarray,
                       link_poses: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """:func:`wrench_in_child_frame` of the simulator's reaction, at `link_poses`."""
        return wrench_in_child_frame(force, torque, link_poses[self.parent], link_poses[self.child],
                                     self.origin_rpy, self.child_origin_xyz)


def loop_wrenches(loop_joints: dict, topics: dict[str, str], link_frames: dict[str, str]) -> list[LoopWrench]:
    """One :class:`LoopWrench` per loop joint that has a topic in `topics` (by constraint name),
    in `loop_joints` order; `loop_joints` maps names to objects with a ``loop_description``
    (``Robot.loop_joints``), `link_frames` link names to TF frame ids."""
    wrenches = []
    for name, joint in loop_joints.items():
        if name not in topics:
            continue
        d = joint.loop_description
        wrenches.append(LoopWrench(name, topics[name], link_frames[d.child], d.parent, d.child,
                                   np.array(d.origin_rpy, dtype=float), np.array(d.child_origin_xyz, dtype=float)))
    return wrenches
