"""Which joints' damping and friction are too stiff for explicit RK4 at the simulator's step.

A joint's URDF ``<dynamics damping friction>`` makes its speed decay at up to the rate
``(d + f / v_s) / I`` (the smooth friction's slope at standstill, ``I`` the joint's effective
inertia).  Where ``rate * dt`` exceeds :data:`~mb_sim.codegen.dissipation.STIFF_RATE_DT`,
explicit RK4 would amplify instead of damp (its stability ends at 2.78); the generated code then
takes that joint's dissipation implicitly, judged at every step where the robot is
(:mod:`mb_sim.codegen.dissipation`).  This lists the joints for people (``mb-sim info``,
``Simulator.stiff_joints``), at the smallest effective inertia over the poses the simulator
samples: what the integrator may meet.
"""
from __future__ import annotations

import numpy as np

from mb_sim.codegen.dissipation import STIFF_RATE_DT, coefficients

__all__ = ["stiff_joints"]


def stiff_joints(rows: np.ndarray, joint_of_speed: dict[int, str], params: np.ndarray, inertia: np.ndarray,
                 dt: float) -> dict[str, float]:
    """Joint -> its largest decay rate times `dt`, for the joints with damping or friction
    (`rows`, the model's ``dissipation_rows``) where that exceeds STIFF_RATE_DT, given the
    parameters and the smallest effective inertia per speed."""
    speeds, d, f, v = coefficients(rows, params)
    slope = np.abs(d) + np.where((f != 0.0) & (v > 0.0), np.abs(f) / np.where(v > 0.0, v, 1.0), 0.0)
    rate_dt = slope / inertia[speeds] * dt
    return {joint_of_speed[int(s)]: float(r) for s, r in zip(speeds, rate_dt) if r > STIFF_RATE_DT}
