"""Rotation helpers in URDF's conventions (numeric)."""
from __future__ import annotations

import numpy as np

__all__ = ["rpy_to_matrix", "RIGHT_ANGLE_TOLERANCE", "quarter_turns"]

#: Angles this close to a multiple of pi/2 are taken as that multiple exactly (mb_sim-wide).
RIGHT_ANGLE_TOLERANCE = 1e-12


def quarter_turns(angle: float) -> int | None:
    """k where `angle` is k * pi/2 to within :data:`RIGHT_ANGLE_TOLERANCE`, else None."""
    k = round(angle / (np.pi / 2))
    return k if abs(angle - k * np.pi / 2) <= RIGHT_ANGLE_TOLERANCE else None


def _cos_sin(angle: float) -> tuple[float, float]:
    """cos and sin, exact for right angles (no 6e-17 where 0 is meant)."""
    k = quarter_turns(angle)
    if k is None:
        return float(np.cos(angle)), float(np.sin(angle))
    return ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))[k % 4]


def rpy_to_matrix(rpy: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z): ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    (cr, sr), (cp, sp), (cy, sy) = (_cos_sin(angle) for angle in rpy)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])
