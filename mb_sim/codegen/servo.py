"""Joint servos evaluated inside the dynamics: the table both backends read, and its NumPy form.

A servo turns a joint's effort input into a PD law with feed-forward, evaluated at every call of
the dynamics (so at every RK4 stage, not once per command):

    effort = clamp(ff + kp (p_ref(s) - q_j) + kd (v_ref(s) - u_j) [+ (M a_ref)_j - F0_j], +-limit)

with ``s = t - t0``, ``ff`` the joint's effort input (the commanded feed-forward), ``p_ref``,
``v_ref``, ``a_ref`` polynomials in ``s`` (a trajectory segment; constants for a position or
velocity command).  The bracket, where the row asks for it, is the computed-torque feed-forward:
``M a_ref`` over the servoed speeds' reference accelerations (zero for the others) minus ``F0_j``,
the joint's generalized force without the servos (gravity, Coriolis and centrifugal terms,
springs, damping), so servoed joints follow their reference exactly while the efforts stay inside
their limits, and the PD terms only correct errors.  The effort replaces ``ff`` in the forcing
``F`` of the joint's own speed (a joint effort enters F there with coefficient one).

The table is one float64 array: ``table[0]`` the number of active rows, then rows of
``SERVO_WIDTH`` values laid out as ``COLUMNS``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["COLUMNS", "SERVO_WIDTH", "servo_table", "apply_servos", "column"]

#: Row layout: input index, coordinate index, speed index, gains, effort limit, segment start,
#: feed-forward flag, then the reference's polynomial coefficients (lowest power first).
COLUMNS = ("input", "coordinate", "speed", "kp", "kd", "limit", "t0", "feed_forward",
           "p0", "p1", "p2", "p3", "p4", "p5", "v0", "v1", "v2", "v3", "v4", "a0", "a1", "a2", "a3")
SERVO_WIDTH = len(COLUMNS)
_INDEX = {name: k for k, name in enumerate(COLUMNS)}


def column(name: str) -> int:
    """Index of column `name` in a row."""
    return _INDEX[name]


def servo_table(n_inputs: int) -> np.ndarray:
    """An empty table with room for one row per input."""
    return np.zeros(1 + max(n_inputs, 1) * SERVO_WIDTH)


def _polynomial(coefficients: np.ndarray, s: float) -> float:
    value = 0.0
    for c in coefficients[::-1]:
        value = value * s + c
    return value


def apply_servos(table: np.ndarray, q: np.ndarray, u: np.ndarray, inputs: np.ndarray, t: float,
                 mass_matrix: np.ndarray, forcing: np.ndarray, applied: np.ndarray | None = None) -> None:
    """Add the servos' efforts to `forcing` in place, as the generated C does; the applied effort
    of each input goes into `applied` (the inputs where no servo acts)."""
    if applied is not None:
        applied[:] = inputs
    rows = table[1:1 + int(table[0]) * SERVO_WIDTH].reshape(-1, SERVO_WIDTH)
    speeds = rows[:, 2].astype(int)
    reference = [[_polynomial(row[_INDEX[f"{x}0"]:_INDEX[f"{x}0"] + n], t - row[6]) for x, n in (("p", 6), ("v", 5), ("a", 4))]
                 for row in rows]
    accelerations = np.array([r[2] for r in reference])
    efforts = []
    for row, (p, v, _) in zip(rows, reference):
        k, i, j = int(row[0]), int(row[1]), int(row[2])
        effort = inputs[k] + row[3] * (p - q[i]) + row[4] * (v - u[j])
        if row[7] != 0:
            effort += mass_matrix[j, speeds] @ accelerations - (forcing[j] - inputs[k])
        efforts.append(min(max(effort, -row[5]), row[5]))
    for row, effort in zip(rows, efforts):
        k, j = int(row[0]), int(row[2])
        forcing[j] += effort - inputs[k]
        if applied is not None:
            applied[k] = effort
