"""``~/joint_trajectory`` commands (``trajectory_msgs/JointTrajectory``), validated as
joint_trajectory_controller validates them, without rclpy: the node passes fields in and gets each
joint's waypoints (sim times) or a :class:`~mb_sim.session.commands.CommandError` out.

- ``header.stamp`` zero starts the trajectory on arrival; otherwise it starts at that sim time.
- Every joint must be named unless partial goals are allowed (``allow_partial_joints_goal``, as the
  controller's parameter); joints not named keep what they follow.
- ``time_from_start`` must increase strictly; ``positions`` has one value per joint, ``velocities``
  and ``accelerations`` none or one per joint; all finite.
- A trajectory without points stops the joints it names (all if none): they hold their position.
- A trajectory ending in the past is refused; waypoints in the past are dropped
  (:func:`mb_sim.sim.trajectory.joint_segments`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mb_sim.session.commands import LISTED, CommandError, _listed, _repeated
from mb_sim.sim.trajectory import Waypoint

__all__ = ["TrajectoryPoint", "trajectory_waypoints"]


@dataclass(frozen=True)
class TrajectoryPoint:
    """The fields of one ``JointTrajectoryPoint`` the node uses (time in seconds)."""

    time_from_start: float
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    accelerations: Sequence[float] = ()


def trajectory_waypoints(joint_names: Sequence[str], points: Sequence[TrajectoryPoint], start: float,
                         servoed: Sequence[str], allow_partial: bool = False,
                         motorized: Mapping[str, str] | None = None) -> dict[str, list[Waypoint]]:
    """Each named joint's waypoints at sim times ``start + time_from_start`` (empty lists: stop)."""
    names = list(joint_names) or ([] if points else list(servoed))
    _check_joints(names, list(servoed), allow_partial, dict(motorized or {}))
    previous = -math.inf
    waypoints: dict[str, list[Waypoint]] = {name: [] for name in names}
    for index, point in enumerate(points):
        when = float(point.time_from_start)
        if not math.isfinite(when) or when < 0 or when <= previous:
            raise CommandError("time", f"point {index}: time_from_start {when:g} s must be finite, not negative and "
                                       f"after the previous point's ({previous:g} s)")
        previous = when
        fields = [_field(point.positions, names, index, "positions", required=True),
                  _field(point.velocities, names, index, "velocities"),
                  _field(point.accelerations, names, index, "accelerations")]
        for k, name in enumerate(names):
            p, v, a = (None if f is None else f[k] for f in fields)
            waypoints[name].append(Waypoint(start + when, p, v, a))
    return waypoints


def _check_joints(names: list[str], servoed: list[str], allow_partial: bool, motorized: dict[str, str]) -> None:
    if not names:
        raise CommandError("empty", "the trajectory names no joint")
    driven = [name for name in dict.fromkeys(names) if name in motorized]
    if driven:
        raise CommandError("motorized_joint", f"joint(s) {_listed(driven)} are driven by motors: command their voltage")
    unknown = [name for name in names if name not in set(servoed)]
    if unknown:
        raise CommandError("unknown_joint", f"joint(s) {_listed(unknown)} cannot follow a trajectory; joints that can: "
                                            f"{', '.join(servoed) or 'none'}")
    duplicates = _repeated(names)
    if duplicates:
        raise CommandError("duplicate_joint", f"joint(s) named twice: {_listed(duplicates)}")
    missing = [name for name in servoed if name not in set(names)]
    if missing and not allow_partial:
        raise CommandError("partial", f"the trajectory leaves out joint(s) {_listed(missing)}; name every joint or set "
                                      "allow_partial_joints_goal")


def _field(values: Sequence[float], names: list[str], index: int, what: str, required: bool = False):
    """A point's field as floats, None when empty (and allowed to be)."""
    if not len(values) and not required:
        return None
    if len(values) != len(names):
        expected = "one value" if required else "none or one value"
        raise CommandError("length", f"point {index}: {len(values)} {what} for {len(names)} joints ({expected} per joint)")
    floats = [float(v) for v in values]
    bad = [f"{name}={v}" for name, v in zip(names, floats) if not math.isfinite(v)]
    if bad:
        raise CommandError("not_finite", f"point {index}: non-finite {what} ({', '.join(bad[:LISTED])})")
    return floats
