"""What a simulator reports about its state (all SI units)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SimulationOutputs", "Trajectory"]


@dataclass(frozen=True)
class SimulationOutputs:
    """One snapshot of the simulation.

    ``positions``/``velocities`` are keyed by generalized coordinate/speed name (e.g.
    ``elbow_q``, ``elbow_u``); ``joint_positions``/``joint_velocities`` by joint name for one-DoF
    joints; ``efforts`` are the applied (clamped) efforts by actuated joint; ``link_poses`` are 4x4
    world transforms by link.  Constraint errors are the largest absolute residuals of
    Phi(q) = 0, A u + b = 0 and A u' + c = 0; ``constraint_forces`` are the generalized forces
    -A^T lambda the constraints exert, by speed name (errors and forces of enforced constraints
    only).  Without dynamics (``Simulator.outputs(dynamics=False)``) ``accelerations`` and
    ``constraint_forces`` are empty and ``acceleration_error`` is NaN.
    """

    time: float
    positions: dict[str, float]
    velocities: dict[str, float]
    accelerations: dict[str, float]
    joint_positions: dict[str, float]
    joint_velocities: dict[str, float]
    efforts: dict[str, float]
    link_poses: dict[str, np.ndarray]
    position_error: float
    velocity_error: float
    acceleration_error: float
    kinetic_energy: float
    potential_energy: float
    constraint_forces: dict[str, float] = field(default_factory=dict)

    @property
    def energy(self) -> float:
        """Kinetic plus gravitational potential energy [J]."""
        return self.kinetic_energy + self.potential_energy


@dataclass(frozen=True)
class Trajectory:
    """Sampled states: ``times`` (n,), ``q`` (n, n_q), ``u`` (n, n_u), with their names."""

    times: np.ndarray
    q: np.ndarray
    u: np.ndarray
    coordinate_names: list[str]
    speed_names: list[str]
