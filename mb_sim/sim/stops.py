"""Joint stops (the URDF's position limits) and the effective inertia they are tuned by.

A stop is a one-sided spring-damper that never pulls (dissipative), critically damped about the
joint's smallest effective inertia ``1 / (M^-1)_ii`` (the other joints free) over the neutral, the
derivation's generic and eight seeded random poses: ``M_ii`` at the neutral pose overstates it in
folded poses, where a stop tuned from it is too stiff for RK4 at dt.  The servos' default gains and
the stiff-dissipation check read the same inertia.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np

from mb_sim.sim.robot_model import RobotModel
from mb_sim.sim.state import kept

__all__ = ["JointStops", "LIMIT_SLACK", "LIMIT_TOLERANCE", "STOP_FREQUENCY", "STOP_OVERSHOOT", "STOP_REFERENCE_STEP",
           "STOP_STIFFEST_FREQUENCY", "smallest_effective_inertia", "stop_frequency"]

#: Joint stops are tuned critically damped, at a frequency of at least STOP_FREQUENCY / dt rad/s
#: and stiff enough to hold the joint's rated effort within STOP_OVERSHOOT (rad or m) of its
#: limit, up to STOP_STIFFEST_FREQUENCY / dt: RK4 is stable on a critically damped stop up to
#: 2.78 / dt (the smallest effective inertia makes the frequency an upper bound).  Below
#: STOP_REFERENCE_STEP [s] the floor stays at STOP_FREQUENCY / STOP_REFERENCE_STEP (250 rad/s): a
#: smaller step resolves the same stop better instead of making it stiffer (a stiffness growing as
#: 1/dt^2 threw a joint started 0.3 rad in its stop out at 24 rad/s at 1 ms, 2,300 rad/s at 10 us).
STOP_FREQUENCY = 0.25
STOP_REFERENCE_STEP = 1e-3
STOP_OVERSHOOT = 0.01
STOP_STIFFEST_FREQUENCY = 1.5
#: How far beyond a position limit a joint may be before :meth:`JointStops.beyond_limits` names it
#: (rad for revolute, m for prismatic joints): the stops concede STOP_OVERSHOOT at the rated effort.
LIMIT_TOLERANCE = {"revolute": 0.05, "prismatic": 0.01}
#: A start this close to a position limit [rad or m] counts as inside it (rounding of the limits).
LIMIT_SLACK = 1e-12


def smallest_effective_inertia(robot: RobotModel, model, count: int = 8) -> np.ndarray:
    """Per generalized speed, min over configurations of ``1 / (M^-1)_ii`` (the state in the
    buffers is kept): the current one, the derivation's generic ones and `count` seeded poses
    with every one-DoF joint drawn inside its limits (within +-pi)."""
    b = model.buffers
    with kept(b) as (q, _):
        configurations = [q, *model.generic_configurations, *_random_poses(robot, q, count)]
        inverse_diagonals = [np.diag(np.linalg.inv(model.evaluate(c, np.zeros(model.n_u), b.inputs, b.params)
                                                   ["mass_matrix"])) for c in configurations]
    return 1.0 / np.max(inverse_diagonals, axis=0)


def _random_poses(robot: RobotModel, neutral: np.ndarray, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(20261123)
    coordinates, lower, upper = [], [], []
    for name, (coordinate, _) in robot.one_dof.items():
        limit = robot.facts.joint(name)
        coordinates.append(coordinate)
        lower.append(-np.pi if limit.lower is None else max(limit.lower, -np.pi))
        upper.append(max(lower[-1], np.pi if limit.upper is None else min(limit.upper, np.pi)))
    poses = np.tile(neutral, (count, 1))
    poses[:, coordinates] = rng.uniform(lower, upper, (count, len(coordinates)))
    return list(poses)


class JointStops:
    """The stops of one run's robot: their tuning, the position limits they guard and the joints
    they failed to hold."""

    def __init__(self, robot: RobotModel, params: np.ndarray) -> None:
        self.robot, self.params = robot, params
        self.stops = robot.facts.stops

    def tune(self, inertia: np.ndarray, effort_limits: Mapping[str, float], dt: float) -> dict[str, float]:
        """The stiffness and damping parameters of every stop, critically damped about `inertia` (per
        speed) at :func:`stop_frequency`; `effort_limits` the clamps of actuated joints (others:
        their URDF rating)."""
        values = {}
        for stop in self.stops:
            speed = self.robot.one_dof[stop.joint][1]
            effort = effort_limits.get(stop.joint, self.robot.facts.joint(stop.joint).effort)
            omega = stop_frequency(inertia[speed], float(effort), dt)
            values[stop.stiffness] = inertia[speed] * omega**2
            values[stop.damping] = 2.0 * inertia[speed] * omega
        return values

    def position_limits(self) -> dict[int, tuple[float, float]]:
        """Coordinate index -> (lower, upper) of each joint with a stop (a missing bound infinite)."""
        limits = {}
        for stop in self.stops:
            lower = -math.inf if stop.lower_value is None else stop.lower_value
            upper = math.inf if stop.upper_value is None else stop.upper_value
            if lower <= upper:
                limits[self.robot.one_dof[stop.joint][0]] = (lower, upper)
        return limits

    def outside_limits(self, q: np.ndarray, skip: Collection[int] = ()) -> dict[int, float]:
        """The coordinates of `q` beyond their position limits (but `skip`), with the nearest limit."""
        return {k: min(max(q[k], lower), upper) for k, (lower, upper) in self.position_limits().items()
                if k not in skip and not lower - LIMIT_SLACK <= q[k] <= upper + LIMIT_SLACK}

    def beyond_limits(self, q: np.ndarray) -> dict[str, float]:
        """Joints beyond a position limit (the current parameter values) by more than LIMIT_TOLERANCE,
        with how far (positive above the upper limit, negative below the lower)."""
        beyond = {}
        names = self.robot.parameter_names
        for stop in self.stops:
            value = float(q[self.robot.one_dof[stop.joint][0]])
            bounds = {side: float(self.params[names.index(term)]) if isinstance(term, str) else float(term)
                      for side, term in (("lower", stop.lower), ("upper", stop.upper)) if term is not None}
            excess = max(value - bounds["upper"], 0.0) if "upper" in bounds else 0.0
            if "lower" in bounds and value < bounds["lower"]:
                excess = value - bounds["lower"]
            if abs(excess) > LIMIT_TOLERANCE[self.robot.facts.joint(stop.joint).type]:
                beyond[stop.joint] = excess
        return beyond


def stop_frequency(inertia: float, effort: float, dt: float) -> float:
    """A stop's frequency [rad/s]: at least STOP_FREQUENCY / dt, as stiff as holding `effort` (the
    rated effort) within STOP_OVERSHOOT needs, at most STOP_STIFFEST_FREQUENCY / dt; independent of
    dt below STOP_REFERENCE_STEP unless the cap binds."""
    needed = math.sqrt(effort / (inertia * STOP_OVERSHOOT)) if math.isfinite(effort) and inertia > 0 else 0.0
    floor = STOP_FREQUENCY / max(dt, STOP_REFERENCE_STEP)  # bounded as dt -> 0: see STOP_REFERENCE_STEP
    return min(max(floor, needed), STOP_STIFFEST_FREQUENCY / dt)
