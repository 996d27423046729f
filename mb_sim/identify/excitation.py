"""Excitation trajectories: finite Fourier series shaped to make the regressor well conditioned.

Each joint follows (Swevers, Ganseman, Tukel, de Schutter and van Brussel 1997)

    q(t) = q0 + s(t) sum_l ( a_l / (l w) sin(l w t) - b_l / (l w) cos(l w t) + b_l / (l w) )

with w = 2 pi / period, so one period repeats exactly, and a smooth ramp s(t) (0 to 1 over the
first and last :data:`RAMP` of the duration, with every derivative continuous)
so the robot starts and ends at rest at q0.  The coefficients minimize the condition number of
the base-parameter regressor sampled along the trajectory, with the URDF's position, speed and
effort limits (efforts from the URDF's own parameters) as penalties, by SciPy's L-BFGS-B from
several random starts; the result is checked against the limits and refused if it breaks one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import minimize

from mb_sim.identify.base import BaseParameters
from mb_sim.identify.regressor import NumericRegressor

__all__ = ["ExcitationTrajectory", "design_excitation", "RAMP"]

RAMP = 0.1
"""Fraction of the duration over which the motion fades in and out."""
LIMIT_MARGIN = 0.9
"""The trajectory keeps within this fraction of every limit (of the position range about its middle)."""


@dataclass
class ExcitationTrajectory:
    """The designed motion of `joint_names`: evaluate with :meth:`sample`."""

    joint_names: list[str]
    offsets: np.ndarray  # q0 (n,)
    sines: np.ndarray  # a (n, L)
    cosines: np.ndarray  # b (n, L)
    period: float
    duration: float
    condition_number: float = float("nan")

    def sample(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and accelerations (len(times), n)."""
        t = np.asarray(times, dtype=float)[:, None]
        w = 2 * np.pi / self.period
        f, df, ddf = np.zeros((len(t), len(self.offsets))), 0.0, 0.0
        for l in range(1, self.sines.shape[1] + 1):
            a, b, lw = self.sines[:, l - 1], self.cosines[:, l - 1], l * w
            s, c = np.sin(lw * t), np.cos(lw * t)
            f = f + (a * s - b * c + b) / lw
            df = df + a * c + b * s
            ddf = ddf + (-a * s + b * c) * lw
        r, dr, ddr = _ramp(t[:, 0], self.duration)
        r, dr, ddr = r[:, None], dr[:, None], ddr[:, None]
        return self.offsets + r * f, dr * f + r * df, ddr * f + 2 * dr * df + r * ddf


def _ramp(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """s(t), s'(t), s''(t): a smooth step (every derivative continuous: no kink or jump a
    differentiating filter would smear) up over the first RAMP, down over the last.

    s = L(w(x)) with the logistic L(w) = 1 / (1 + exp(-w)) and w = 1/(1 - x) - 1/x on 0 < x < 1,
    the classic C-infinity transition exp(-1/x) / (exp(-1/x) + exp(-1/(1 - x))).
    """
    width = RAMP * duration
    x = np.clip(np.minimum(t, duration - t) / width, 0.0, 1.0)
    sign = np.where(t <= duration / 2, 1.0, -1.0)
    s, ds, dds = (x > 0.5).astype(float), np.zeros_like(x), np.zeros_like(x)
    inside = (x > 1e-3) & (x < 1 - 1e-3)  # beyond, s is 0 or 1 to rounding
    xi = x[inside]
    w = 1 / (1 - xi) - 1 / xi
    dw, ddw = 1 / (1 - xi) ** 2 + 1 / xi ** 2, 2 / (1 - xi) ** 3 - 2 / xi ** 3
    with np.errstate(over="ignore"):
        L = 1 / (1 + np.exp(-w))
    dL = L * (1 - L)
    s[inside] = L
    ds[inside] = dL * dw * sign[inside] / width
    dds[inside] = (dL * (1 - 2 * L) * dw ** 2 + dL * ddw) / width ** 2
    return s, ds, dds


@dataclass
class _Limits:
    lower: np.ndarray
    upper: np.ndarray
    speed: np.ndarray
    effort: np.ndarray


def joint_limits(robot, joints: list[str]) -> _Limits:
    """The URDF limits of `joints` (a joint without position bounds gets +-pi about zero)."""
    lower, upper, speed, effort = [], [], [], []
    for name in joints:
        limit = robot.joints[name].joint_description.limit
        lo = -np.pi if limit.lower is None else limit.lower
        hi = np.pi if limit.upper is None else limit.upper
        lower.append(lo)
        upper.append(hi)
        speed.append(limit.velocity)
        effort.append(limit.effort)
    return _Limits(*(np.array(x, dtype=float) for x in (lower, upper, speed, effort)))


def design_excitation(robot, regressor: NumericRegressor, base: BaseParameters, prior: np.ndarray, *,
                      duration: float = 20.0, period: float = 10.0, harmonics: int = 5, samples: int = 120,
                      starts: int = 2, seed: int = 0, start: dict[str, float] | None = None,
                      progress: Callable[[str], None] | None = None, budget: float = 60.0) -> ExcitationTrajectory:
    """The excitation of every one-DoF joint of `robot` (see the module docstring), about `start`
    (joint positions; default the middle of each joint's range).  The optimizer stops after
    `budget` seconds of work in all (its best so far is kept: a large robot's regressor is slow to
    sample, and a good condition number is reached long before the optimum)."""
    joints = sorted(regressor.speed_of, key=regressor.speed_of.get)
    limits = joint_limits(robot, joints)
    q0 = (limits.lower + limits.upper) / 2 if start is None else np.array([float(start[j]) for j in joints])
    times = np.linspace(0.0, duration, samples)
    n, L = len(joints), harmonics
    w = 2 * np.pi / period
    scale = np.minimum(0.5 * (limits.upper - limits.lower) * w, np.where(np.isfinite(limits.speed), limits.speed, 3.0))
    rng = np.random.default_rng(seed)

    def trajectory(x):
        a, b = x[:n * L].reshape(n, L), x[n * L:].reshape(n, L)
        return ExcitationTrajectory(joints, q0, a * scale[:, None] / L, b * scale[:, None] / L, period, duration)

    def objective(x):
        traj = trajectory(x)
        q, u, a = traj.sample(times)
        full = regressor(_coordinates(regressor, joints, q), u, a)
        tau = np.einsum("skp,p->sk", full, prior)
        return np.log(_condition(full, base)) + 100.0 * _violation(q, u, tau, limits)

    best, deadline = None, time.monotonic() + budget

    def out_of_time(intermediate_result) -> None:
        if time.monotonic() > deadline:
            raise StopIteration

    for k in range(starts):
        if best is not None and time.monotonic() > deadline:
            break
        x0 = rng.uniform(-0.5, 0.5, 2 * n * L)
        result = minimize(objective, x0, method="L-BFGS-B", options={"maxiter": 40}, callback=out_of_time)
        if best is None or result.fun < best.fun:
            best = result
        if progress is not None:
            progress(f"random start {k + 1} of {starts} optimized (objective: log condition number "
                     f"plus limit penalties = {result.fun:.3g})")
    fine = np.linspace(0.0, duration, 20 * samples)
    for shrink in 0.97 ** np.arange(40):  # between the optimizer's samples it may overshoot a little
        traj = trajectory(best.x * shrink)
        q, u, a = traj.sample(fine)
        full = regressor(_coordinates(regressor, joints, q), u, a)
        broken = _violation(q, u, np.einsum("skp,p->sk", full, prior), limits, margin=1.0)
        if broken == 0.0:
            break
    else:
        raise ValueError(f"no excitation of robot '{robot.name}' within its limits was found "
                         f"(violation {broken:.3g}); try a longer period or fewer harmonics")
    traj.condition_number = _condition(full, base)
    return traj


def _condition(full: np.ndarray, base: BaseParameters) -> float:
    """Condition number of the base columns, each scaled to unit norm."""
    W = full[:, :, base.independent].reshape(-1, len(base.independent))
    norms = np.linalg.norm(W, axis=0)
    return float(np.linalg.cond(W / np.where(norms > 0, norms, 1.0)))


def _coordinates(regressor: NumericRegressor, joints: list[str], q: np.ndarray) -> np.ndarray:
    out = np.zeros((q.shape[0], regressor.n_q))
    for column, joint in enumerate(joints):
        out[:, regressor.symbolic.coordinates[joint]] = q[:, column]
    return out


def _violation(q: np.ndarray, u: np.ndarray, tau: np.ndarray, limits: _Limits, margin: float = LIMIT_MARGIN) -> float:
    """How far the motion goes beyond `margin` of the limits (relative, squared, summed over joints)."""
    middle, half = (limits.upper + limits.lower) / 2, margin * (limits.upper - limits.lower) / 2
    over = np.maximum(np.abs(q - middle).max(axis=0) / half - 1, 0)
    speed = np.where(np.isfinite(limits.speed), limits.speed * margin, np.inf)
    over = over + np.maximum(np.abs(u).max(axis=0) / speed - 1, 0)
    effort = np.where(np.isfinite(limits.effort), limits.effort * margin, np.inf)
    over = over + np.maximum(np.abs(tau).max(axis=0) / effort - 1, 0)
    return float(np.sum(over ** 2))


def trajectory_message(trajectory: ExcitationTrajectory, rate: float) -> dict:
    """A ``trajectory_msgs/JointTrajectory`` as a dict (stamp zero: start on arrival), waypoints at
    `rate` per second with positions, velocities and accelerations."""
    times = np.arange(0.0, trajectory.duration + 0.5 / rate, 1.0 / rate)
    times[-1] = min(times[-1], trajectory.duration)
    q, u, a = trajectory.sample(times)
    points = []
    for k, t in enumerate(times):
        nanoseconds = round(float(t) * 1e9)
        points.append({"positions": q[k].tolist(), "velocities": u[k].tolist(), "accelerations": a[k].tolist(),
                       "time_from_start": {"sec": nanoseconds // 10 ** 9, "nanosec": nanoseconds % 10 ** 9}})
    return {"joint_names": list(trajectory.joint_names), "points": points}
