"""Inverse kinematics of one link of a component model: the joint positions that put a tool point
on it at a world pose (damped least squares on the forward kinematics).

The link's pose is the model's forward kinematics (:func:`~mb_sim.model.kinematics.link_pose_expressions`,
compiled with NumPy); its Jacobian is taken by central differences (a handful of joints: cheap and
exact enough for a target at 1e-9 m).  Each step solves ``(J J^T + lambda^2 I) y = e``,
``dq = J^T y``, with ``e`` the position error and the rotation error ``1/2 sum_i r_i x t_i`` (r_i,
t_i the columns of the current and target rotations), so it also crosses singular poses; the
joints are kept within their limits.  Warm-started from the last solution, a path of nearby
targets (a straight line in small steps) takes two or three steps each.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sympy import Symbol, lambdify

from mb_sim.model.base import symbol_name
from mb_sim.model.kinematics import link_pose_expressions
from mb_sim.model.robot import Robot

__all__ = ["InverseKinematics", "IKError"]


class IKError(ValueError):
    """No joint positions reach the target within the tolerance (out of reach, or past the limits)."""


class InverseKinematics:
    """Joint positions of `joints` (one-DoF joint names) putting the point `tool` (in link
    `link`'s frame) at a world pose; the other coordinates stay where the start puts them."""

    def __init__(self, robot: Robot, link: str, joints: Sequence[str], tool: Sequence[float] = (0.0, 0.0, 0.0)):
        if link not in robot.links:
            raise KeyError(f"robot '{robot.name}' has no link {link!r}")
        q = list(robot.system.q)
        names = [symbol_name(s) for s in q]
        self.coordinates = names
        self.indices = []
        self.bounds = []
        for joint in joints:
            if joint not in robot.joints or len(robot.joints[joint].q) != 1:
                raise KeyError(f"robot '{robot.name}' has no one-DoF joint {joint!r}")
            self.indices.append(names.index(symbol_name(robot.joints[joint].q[0])))
            limit = robot.joints[joint].joint_description.limit
            self.bounds.append((-np.inf if limit.lower is None else limit.lower,
                                np.inf if limit.upper is None else limit.upper))
        self.joints = list(joints)
        plain = [Symbol(f"_q{i}") for i in range(len(q))]
        parameters = robot.parameters
        pose = link_pose_expressions(robot)[link].xreplace(dict(zip(q, plain))).xreplace(dict(parameters))
        self._pose = lambdify([plain], pose, modules="numpy", cse=True)
        self.tool = np.asarray(tool, dtype=float)

    def pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World position of the tool point and rotation of the link at coordinates `q`."""
        T = np.asarray(self._pose(list(q)), dtype=float)
        return T[:3, 3] + T[:3, :3] @ self.tool, T[:3, :3]

    def solve(self, position: Sequence[float], rotation: np.ndarray, start: Mapping[str, float] | np.ndarray,
              tolerance: float = 1e-9, iterations: int = 200, damping: float = 1e-3) -> dict[str, float]:
        """The joints' positions reaching (`position`, `rotation`) from `start` (coordinates by
        name, or the whole vector); IKError when the error stays above `tolerance`."""
        q = self.coordinates_of(start)
        target, goal = np.asarray(position, dtype=float), np.asarray(rotation, dtype=float)
        error = np.inf
        for _ in range(iterations):
            e = self._error(q, target, goal)
            error = float(np.linalg.norm(e))
            if error < tolerance:
                return {joint: float(q[i]) for joint, i in zip(self.joints, self.indices)}
            J = self._jacobian(q, target, goal)
            step = J.T @ np.linalg.solve(J @ J.T + damping ** 2 * np.eye(6), e)
            q[self.indices] = np.clip(q[self.indices] + step, *np.array(self.bounds).T)
        raise IKError(f"the tool of the link cannot reach {np.round(target, 6).tolist()} with that orientation "
                      f"(error {error:.3g} after {iterations} steps: out of reach or past the joint limits)")

    def coordinates_of(self, start: Mapping[str, float] | np.ndarray) -> np.ndarray:
        """The whole coordinate vector of `start` (values by coordinate name, the others zero and
        unit quaternions; or the vector itself, copied)."""
        if isinstance(start, Mapping):
            q = np.zeros(len(self.coordinates))
            for name, value in start.items():
                q[self.coordinates.index(name)] = value
            if not any(name.endswith("qw") for name in start):  # unit quaternions where none is given
                q[[k for k, n in enumerate(self.coordinates) if n.endswith("_qw")]] = 1.0
            return q
        return np.array(start, dtype=float)

    def _error(self, q: np.ndarray, target: np.ndarray, goal: np.ndarray) -> np.ndarray:
        position, rotation = self.pose(q)
        turn = 0.5 * sum(np.cross(rotation[:, i], goal[:, i]) for i in range(3))
        return np.concatenate([target - position, turn])

    def _jacobian(self, q: np.ndarray, target: np.ndarray, goal: np.ndarray, h: float = 1e-6) -> np.ndarray:
        """d(-error)/dq of the joints, by central differences."""
        columns = []
        for i in self.indices:
            up, down = q.copy(), q.copy()
            up[i] += h
            down[i] -= h
            columns.append((self._error(down, target, goal) - self._error(up, target, goal)) / (2 * h))
        return np.array(columns).T
