"""Joint trajectories as ros2_control's joint_trajectory_controller interpolates them.

Between waypoints the reference is a spline whose degree follows what the points give: linear with
positions only, cubic (Hermite) with velocities, quintic with accelerations.  The segment before
the first waypoint starts from the joint's state when the trajectory arrives (its position and
velocity; acceleration zero), as the controller's "point before the trajectory".  After the last
waypoint the joint holds its position.  Waypoints already in the past when the trajectory starts
are dropped; a trajectory that ends in the past is refused, as by the controller.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mb_sim.sim.servos import Segment

__all__ = ["Waypoint", "TrajectoryError", "spline", "joint_segments"]


class TrajectoryError(ValueError):
    """A trajectory that cannot be followed; the message says why."""


@dataclass(frozen=True)
class Waypoint:
    """One joint's waypoint at sim time ``time``: position, and velocity/acceleration or None."""

    time: float
    position: float
    velocity: float | None = None
    acceleration: float | None = None


def spline(start: tuple[float, float, float], end: tuple[float, float, float], duration: float,
           degree: int) -> tuple[float, ...]:
    """Coefficients (lowest power first) of the degree-1, 3 or 5 polynomial on ``[0, duration]``
    from ``start = (p, v, a)`` to ``end`` (degree 1 uses the positions only, 3 adds velocities)."""
    (p0, v0, a0), (p1, v1, a1), T = start, end, duration
    if degree == 1:
        return (p0, (p1 - p0) / T)
    if degree == 3:
        return (p0, v0, (3 * (p1 - p0) - (2 * v0 + v1) * T) / T**2, (2 * (p0 - p1) + (v0 + v1) * T) / T**3)
    h = p1 - p0 - v0 * T - 0.5 * a0 * T**2  # the quintic's free part, in the classic closed form
    dv, da = v1 - v0 - a0 * T, a1 - a0
    c3 = (10 * h - 4 * dv * T + 0.5 * da * T**2) / T**3
    c4 = (-15 * h + 7 * dv * T - da * T**2) / T**4
    c5 = (6 * h - 3 * dv * T + 0.5 * da * T**2) / T**5
    return (p0, v0, 0.5 * a0, c3, c4, c5)


def _degree(waypoints: Sequence[Waypoint]) -> int:
    if all(w.acceleration is not None for w in waypoints):
        return 5
    if all(w.velocity is not None for w in waypoints):
        return 3
    return 1


def joint_segments(now: float, position: float, velocity: float, waypoints: Sequence[Waypoint]) -> list[Segment]:
    """The segments one joint follows from `now` (its state there: `position`, `velocity`)
    through `waypoints` (sorted, increasing times): one per interval, then a hold."""
    if not waypoints:
        return [Segment(now, now, (position,), True, (0.0,))]
    if waypoints[-1].time < now:
        raise TrajectoryError(f"the trajectory ends {now - waypoints[-1].time:.6g} s in the past")
    ahead = [w for w in waypoints if w.time > now]
    degree = _degree(waypoints)
    previous = Waypoint(now, position, velocity, 0.0)
    segments = []
    for waypoint in ahead:
        duration = waypoint.time - previous.time
        coefficients = spline(_state(previous), _state(waypoint), duration, degree)
        segments.append(Segment(previous.time, previous.time, coefficients))
        previous = waypoint
    last = ahead[-1] if ahead else waypoints[-1]
    segments.append(Segment(max(last.time, now), last.time, (last.position,), True, (0.0,)))
    return segments


def _state(waypoint: Waypoint) -> tuple[float, float, float]:
    return (waypoint.position, waypoint.velocity or 0.0, waypoint.acceleration or 0.0)
