"""Joint damping and friction too stiff for RK4, taken implicitly within each RK4 step.

URDF ``<dynamics damping friction>`` on a light link is stiff: the joint's speed decays at the rate
``(d + f / v_s) / I`` (viscous damping ``d``, the smooth Coulomb friction's slope ``f / v_s`` at
standstill, the joint's effective inertia ``I``), 10^4 to 10^6 /s on pybullet's xarm wrists,
beyond RK4's stability at 1 ms (a rate of 2.8 / dt).  At the start of each RK4 step the resistance ``r_j = d w + f tanh(w / v_s)`` those joints put up
over the step is found by a backward Euler step of the speeds, the other forces explicit:

    minimize  Phi(du) = du^T M du / 2 - h F^T du + h sum_j rho_j(u_j + du_j)   subject to  A du = 0

with ``rho_j(w) = d w^2 / 2 + f v_s log cosh(w / v_s)`` (so ``rho_j' = r_j``), M, F the mass
matrix and the forcing without the table's dissipation (servos applied) and A the enabled
velocity constraints; ``r*_j = r_j(u_j + du_j)``.  Phi is convex, so Newton's method (each step
solving ``(M + h K) dx = -grad`` on the constraints, K the resistances' slopes) with a
backtracking line search converges from any start.  The four RK4 stages then take ``-r*`` as a
constant force in place of the joints' damping and friction: the stiff part advances as backward
Euler does (L-stable: a joint that should stop within a step stops, a joint held by friction
stays held, a driven joint moves at its terminal speed), the rest stays RK4.  First order in
the stiff joints' dissipation; where no joint is stiff a step is classic RK4 bit for bit, and
outside the RK4 integrator nothing changes.

Which joints are stiff is judged at each step where the robot is (:func:`stiff_rows`): the
resistance's slope at the joint's speed, times dt over its effective inertia there
``1 / (M^-1)_ss``, above :data:`STIFF_RATE_DT`, or friction stiff at rest able to stop the joint
within the step.  A joint moving fast, where friction's slope vanishes, stays in RK4; one at rest
is held without chatter.

The rows (``EquationsOfMotion.dissipation_rows``, flattened; one per joint with damping or
friction) are :data:`COLUMNS`: the speed's index and the parameter indices of ``d``, ``f``,
``v_s`` (-1 for an exact zero), so parameters change at run time; the generated C holds them as
``mb_dissipation`` (``mb_first_stage`` in the runtime), the NumPy backend reads them here.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mb_sim.codegen.projection import solve_gram

__all__ = ["COLUMNS", "DISSIPATION_WIDTH", "MAX_ITERATIONS", "STIFF_RATE_DT", "TOLERANCE", "coefficients",
           "resistance", "resistance_estimate", "stiff_rows"]

#: Row layout: speed index, then the parameter indices of damping, friction and friction speed.
COLUMNS = ("speed", "damping", "friction", "friction_speed")
DISSIPATION_WIDTH = len(COLUMNS)
#: A joint is stiff at a step where its resistance's slope times dt over its effective inertia
#: exceeds this (RK4's stability on a decay ends at 2.78).
STIFF_RATE_DT = 1.0
#: Newton iterations at most per step (2 to 8 on the stiffest joints tried).
MAX_ITERATIONS = 30
#: Converged when no speed's Newton step exceeds this times (1 + the largest speed [rad/s or m/s]).
TOLERANCE = 1e-13
#: Where the Newton decrement is below this times the size of Phi's terms, the full Newton step is
#: taken (no line search: Phi's decrease there is at the level of its rounding).
NEWTON_REGION = 1e-10


def coefficients(rows: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row (an ``(n, 4)`` int array of :data:`COLUMNS`): speed index, damping, friction and
    friction speed (0 where the index is -1)."""
    value = lambda k: np.array([params[i] if i >= 0 else 0.0 for i in rows[:, k]], dtype=float)  # noqa: E731
    return rows[:, 0], value(1), value(2), value(3)


def resistance(rows: np.ndarray, params: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(speeds, r, slope, rho)`` per row at the speeds `u`: the resistance ``d w + f tanh(w / v_s)``,
    its derivative by ``w`` and its potential ``d w^2 / 2 + f v_s log cosh(w / v_s)``."""
    speeds, d, f, v = coefficients(rows, params)
    w = u[speeds]
    friction = (f != 0.0) & (v > 0.0)
    x = np.where(friction, w / np.where(friction, v, 1.0), 0.0)
    ax = np.abs(x)
    r = d * w + np.where(friction, f * np.tanh(x), 0.0)
    slope = d + np.where(friction, f / np.where(friction, v, 1.0) / np.cosh(np.minimum(ax, 350.0)) ** 2, 0.0)
    rho = 0.5 * d * w * w + np.where(friction, f * v * (ax + np.log1p(np.exp(-2.0 * ax)) - np.log(2.0)), 0.0)
    return speeds, r, slope, rho


def stiff_rows(rows: np.ndarray, params: np.ndarray, u: np.ndarray, h: float, mass_matrix: np.ndarray) -> np.ndarray:
    """Which rows RK4 cannot take explicitly at a step `h` from speeds `u` (``mb_stiff_rows``)."""
    speeds, _, f, v = coefficients(rows, params)
    inertia = 1.0 / np.diag(np.linalg.inv(mass_matrix))[speeds]
    _, _, slope, _ = resistance(rows, params, u)
    w, f = u[speeds], np.abs(f)
    at_rest = (v > 0.0) & (f * h > STIFF_RATE_DT * v * inertia) & (np.abs(w) < 2.0 * f * h / inertia)
    return (slope * h > STIFF_RATE_DT * inertia) | at_rest


def resistance_estimate(rows: np.ndarray, params: np.ndarray, u: np.ndarray, h: float, mass_matrix: np.ndarray,
                        forcing: np.ndarray, constraints: np.ndarray, enabled: np.ndarray) -> np.ndarray | None:
    """``r*`` per row (the rows stiff at this step) over a step `h` from speeds `u` (see the
    module docstring), given the mass matrix, the forcing without those rows' dissipation and the
    velocity constraint matrix at the step's start; None if ``M + h K`` is singular."""
    on = enabled != 0.0
    a = constraints[on] if len(constraints) else constraints
    du = np.zeros_like(u)

    def phi(change: np.ndarray) -> float:
        return 0.5 * change @ mass_matrix @ change - h * forcing @ change + h * float(np.sum(resistance(rows, params, u + change)[3]))

    for _ in range(MAX_ITERATIONS):
        speeds, r, slope, _ = resistance(rows, params, u + du)
        gradient = mass_matrix @ du - h * forcing
        gradient[speeds] += h * r
        stiffened = mass_matrix.copy()
        stiffened[speeds, speeds] += h * slope
        try:
            step = _constrained_solve(stiffened, a, -gradient)
        except np.linalg.LinAlgError:
            return None
        decrement = -float(gradient @ step)
        if not decrement > 0.0 or np.max(np.abs(step)) <= TOLERANCE * (1.0 + np.max(np.abs(u + du))):
            break  # converged (Newton's steps shrink quadratically)
        if decrement <= NEWTON_REGION * _energy_scale(mass_matrix, forcing, u, du, h, r, speeds):
            du = du + step  # that close, the full step: Phi's decrease would be lost in rounding
        else:
            du = du + _line_search(phi, du, step, decrement)
    return resistance(rows, params, u + du)[1]


def _energy_scale(mass_matrix: np.ndarray, forcing: np.ndarray, u: np.ndarray, du: np.ndarray, h: float,
                  r: np.ndarray, speeds: np.ndarray) -> float:
    """The size of Phi's terms [J]: kinetic energy of u, the forcing's and the resistance's work over h."""
    return float(0.5 * abs(u @ mass_matrix @ u) + h * np.sum(np.abs(forcing * (u + du)))
                 + h * np.sum(np.abs(r * (u + du)[speeds]))) + 1e-300


def _constrained_solve(m: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x of ``m x = b - a^T lam``, ``a x = 0`` (Schur complement; rows dependent here get lam = 0)."""
    x = np.linalg.solve(m, b)
    if len(a) == 0:
        return x
    y = np.linalg.solve(m, a.T)
    return x - y @ solve_gram(a @ y, a @ x)


def _line_search(phi: Callable[[np.ndarray], float], du: np.ndarray, step: np.ndarray, decrement: float) -> np.ndarray:
    """The Newton step scaled by 1, 1/2, 1/4... until Phi decreases enough (Armijo)."""
    start, scale = phi(du), 1.0
    for _ in range(40):
        if phi(du + scale * step) <= start - 1e-4 * scale * decrement:
            break
        scale *= 0.5
    return scale * step
