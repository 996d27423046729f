"""A pick-and-place plan: joint positions over time that take an object from where it is to a
place, for an arm with a gripper (pure Python: the ``mb_sim_pick_and_place`` node sends it as one
``~/joint_trajectory``, and a :class:`~mb_sim.sim.Simulator` can follow it with its servos).

The tool point (``tool`` in ``hand_link``'s frame: between the fingertips) moves in straight lines
at ``speed``, its orientation fixed (``tool_rpy``, the URDF's roll-pitch-yaw: a Panda's hand
pointing down): from the start to ``approach`` above the object (in joint space), down to it, the
gripper closes (``grip_time``), up, across to ``approach`` above the place, down, the gripper
opens, up.  Each point of the lines (every ``sample`` seconds) is solved by inverse kinematics
(:class:`~mb_sim.model.inverse_kinematics.InverseKinematics`) warm-started from the one before.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["PANDA", "GraspSpec", "plan_pick_and_place"]


@dataclass(frozen=True)
class GraspSpec:
    """An arm and its gripper: the link and tool point that grasp, the tool's orientation, the
    arm's joints, the gripper's joint and its open and closed positions, the motion's figures."""

    hand_link: str
    tool: tuple[float, float, float]
    tool_rpy: tuple[float, float, float]
    arm_joints: tuple[str, ...]
    gripper_joint: str
    gripper_open: float
    gripper_closed: float
    approach: float = 0.13
    speed: float = 0.065
    grip_time: float = 1.0
    sample: float = 0.1
    first_move: float = 2.0
    #: Where the inverse kinematics starts (arm joints' positions): a pose of the arm's usual working posture.
    home: tuple[float, ...] = ()


#: Franka Emika Panda (example-robot-data's panda.urdf): the tool point between the fingertips.
PANDA = GraspSpec("panda_hand", (0.0, 0.0, 0.1034), (math.pi, 0.0, math.pi / 4),
                  tuple(f"panda_joint{k}" for k in range(1, 8)), "panda_finger_joint1", 0.04, 0.0,
                  home=(0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785))  # its "ready" pose


def plan_pick_and_place(robot, pick, place, spec: GraspSpec = PANDA, start: dict[str, float] | None = None
                        ) -> tuple[list[str], list[tuple[float, list[float]]]]:
    """``(joint names, [(time from start [s], positions), ...])`` taking the object at `pick`
    (its grasp point, world) to `place` for `robot` (a :class:`mb_sim.model.Robot`); the inverse
    kinematics start from `start` (coordinates by name; default the spec's ``home``).  IKError
    where a point is out of reach."""
    from mb_sim.model.inverse_kinematics import InverseKinematics
    from mb_sim.urdf.rotations import rpy_to_matrix

    ik = InverseKinematics(robot, spec.hand_link, spec.arm_joints, spec.tool)
    rotation = rpy_to_matrix(np.asarray(spec.tool_rpy, dtype=float))
    q = ik.coordinates_of(start or {})
    if start is None:
        q[ik.indices] = spec.home
    pick, place = np.asarray(pick, dtype=float), np.asarray(place, dtype=float)
    up = np.array([0.0, 0.0, spec.approach])
    names = [*spec.arm_joints, spec.gripper_joint]
    points: list[tuple[float, list[float]]] = []
    t, gripper = 0.0, spec.gripper_open

    def reach(target) -> list[float]:
        solved = ik.solve(target, rotation, q)
        for joint, i in zip(spec.arm_joints, ik.indices):
            q[i] = solved[joint]
        return [solved[joint] for joint in spec.arm_joints]

    def line(a, b) -> None:
        nonlocal t
        steps = max(1, math.ceil(np.linalg.norm(b - a) / spec.speed / spec.sample))
        for k in range(1, steps + 1):
            t += spec.sample
            points.append((t, [*reach(a + (b - a) * k / steps), gripper]))

    def hold(position: float) -> None:
        nonlocal t, gripper
        gripper = position
        t += spec.grip_time
        points.append((t, [*points[-1][1][:-1], gripper]))

    t = spec.first_move
    points.append((t, [*reach(pick + up), gripper]))  # (joint space: the servos take the way)
    line(pick + up, pick)
    hold(spec.gripper_closed)
    line(pick, pick + up)
    line(pick + up, place + up)
    line(place + up, place)
    hold(spec.gripper_open)
    line(place, place + up)
    return names, points
