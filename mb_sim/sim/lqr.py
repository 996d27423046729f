"""A linear-quadratic regulator about an operating point, from the exact linearization.

``lqr_policy`` linearizes the robot (:mod:`mb_sim.sim.linearize`), keeps the inputs it may use,
solves the continuous algebraic Riccati equation with SciPy and returns the state feedback
``r = r_eq - K (x - x_eq)`` on the minimal state (independent joint positions and speeds; a
floating base's orientation as a rotation in its tangent chart): what a controller needs, by
joint name (or from the full state, :meth:`LQRPolicy.command_state`), with no ROS in it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from mb_sim.sim.linearize import Linearization, LinearizationError, equilibrium, linearize

__all__ = ["LQRPolicy", "lqr_policy"]


@dataclass
class LQRPolicy:
    """State feedback on named joints: ``inputs = equilibrium - gain @ (state - point)``.

    ``positions``/``speeds`` name the joints whose position and speed form the minimal state, in
    the order of ``gain``'s columns; ``inputs`` the joints (or motors) it commands.
    """

    positions: list[str]  # joint names, or coordinate names where not a one-DoF joint's (chart: <joint>_rx...)
    speeds: list[str]
    inputs: list[str]
    point: np.ndarray
    equilibrium: np.ndarray
    gain: np.ndarray
    linearization: Linearization

    def command(self, positions: Mapping[str, float], velocities: Mapping[str, float]) -> dict[str, float]:
        """The inputs for a measured state (joint name -> value)."""
        state = np.array([positions[j] for j in self.positions] + [velocities[j] for j in self.speeds])
        return dict(zip(self.inputs, (self.equilibrium - self.gain @ (state - self.point)).tolist()))

    def command_state(self, q, u, z=()) -> dict[str, float]:
        """The inputs for the full state (q, u, z), through the linearization's chart (a floating
        base's quaternion as its rotation from the point's)."""
        deviation = self.linearization.deviation(np.asarray(q, dtype=float), np.asarray(u, dtype=float),
                                                 np.asarray(z, dtype=float))
        return dict(zip(self.inputs, (self.equilibrium - self.gain @ deviation).tolist()))

    @property
    def closed_loop_eigenvalues(self) -> np.ndarray:
        lin, columns = self.linearization, [self.linearization.inputs.index(i) for i in self.inputs]
        return np.linalg.eigvals(lin.A - lin.B[:, columns] @ self.gain)


def lqr_policy(sim, point: Mapping[str, float], inputs: Sequence[str], state_weights: Sequence[float] | None = None,
               input_weights: Sequence[float] | None = None) -> LQRPolicy:
    """The LQR of `sim`'s robot about the configuration `point` (joints or coordinates at rest;
    the others as the simulator has them), commanding the joints, motors or wrench components
    `inputs` (:func:`~mb_sim.sim.linearize.input_names`); weights default to identity."""
    lin = linearize(sim, point)
    missing = [name for name in inputs if name not in lin.inputs]
    if missing:
        raise LinearizationError(f"{missing[0]!r} takes no input; inputs: {', '.join(lin.inputs)}")
    columns = [lin.inputs.index(name) for name in inputs]
    n = len(lin.states)
    q = np.diag(state_weights) if state_weights is not None else np.eye(n)
    r = np.diag(input_weights) if input_weights is not None else np.eye(len(columns))
    if q.shape != (n, n) or r.shape != (len(columns), len(columns)):
        raise LinearizationError(f"weights: {n} state weights ({', '.join(lin.states)}) and {len(columns)} input "
                                 "weights expected")
    b = lin.B[:, columns]
    riccati = scipy.linalg.solve_continuous_are(lin.A, b, q, r)
    gain = np.linalg.solve(r, b.T @ riccati)
    joint_of = {sim.coordinate_names[i]: joint for joint, (i, _) in sim.joint_indices.items()}
    joint_of |= {sim.speed_names[k]: joint for joint, (_, k) in sim.joint_indices.items()}
    coordinates = [joint_of.get(name, name) for name in lin.independent_coordinates]
    speeds = [joint_of.get(name, name) for name in lin.independent_speeds]
    held = equilibrium(sim, point, inputs=list(inputs))
    values = np.array([float(lin.point["q"].get(name, point.get(j, 0.0))) for j, name
                       in zip(coordinates, lin.independent_coordinates)] + [0.0] * len(speeds))
    return LQRPolicy(coordinates, speeds, list(inputs), values,
                     np.array([held.inputs.get(name, 0.0) for name in inputs]), gain, lin)
