"""Joint servos: position, velocity and trajectory commands for effort-actuated joints.

A servo is a PD law with feed-forward evaluated inside the generated code at every RK4 stage (see
:mod:`mb_sim.codegen.servo` for the law).  This module keeps, per joint, what it follows: a
position (held), a velocity, or a trajectory as polynomial segments, and writes the table rows of
the segments in force.  Default gains make each joint a critically damped second-order system of
natural frequency ``frequency`` [Hz] about its smallest effective inertia (the inertia the
joint stops are tuned from): ``kp = I w^2``, ``kd = 2 zeta I w``.  With ``feed_forward`` (the
default) the servos add the computed-torque feed-forward, so they follow their references exactly
while inside the effort limits; without it they are plain PD laws (as MuJoCo's position actuators).
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mb_sim.codegen.servo import SERVO_WIDTH, column

__all__ = ["Segment", "JointServos", "SERVO_FREQUENCY", "SERVO_DAMPING_RATIO", "MODES"]

#: Natural frequency of the default gains [Hz] and their damping ratio.
SERVO_FREQUENCY = 10.0
SERVO_DAMPING_RATIO = 1.0
#: What a joint can follow ("effort": no servo, its effort input alone).
MODES = ("effort", "position", "velocity", "trajectory")
_P, _V, _A = column("p0"), column("v0"), column("a0")


@dataclass(frozen=True)
class Segment:
    """A reference from sim time ``begin`` on: position coefficients ``p`` (lowest power first, in
    ``s = t - origin``); ``position`` False for a velocity reference (``kp`` not applied, the
    velocity given by ``v``)."""

    begin: float
    origin: float
    p: tuple[float, ...]
    position: bool = True
    v: tuple[float, ...] | None = None

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position (6), velocity (5) and acceleration (4) coefficients."""
        p = np.zeros(6)
        p[:len(self.p)] = self.p
        if self.v is not None:
            v = np.zeros(5)
            v[:len(self.v)] = self.v
        else:
            v = p[1:] * np.arange(1, 6)
        return p, v, v[1:] * np.arange(1, 5)

    def sample(self, t: float) -> tuple[float, float, float]:
        """Reference position, velocity and acceleration at `t`."""
        s = t - self.origin
        return tuple(float(np.polynomial.polynomial.polyval(s, c)) for c in self.coefficients())


class JointServos:
    """The servos of one simulator's effort-actuated one-DoF joints, writing the model's table.

    Parameters
    ----------
    table
        The model's servo table (``buffers.servo``), written in place.
    joints
        ``{joint: (input index, coordinate index, speed index)}``.
    limits, inertia
        Per joint (same order): effort limit (inf: none) and effective inertia for default gains.
    dt
        The physics step (default gains stay below a quarter of the step's frequency).
    """

    def __init__(self, table: np.ndarray, joints: Mapping[str, tuple[int, int, int]], limits: Sequence[float],
                 inertia: Sequence[float], dt: float, frequency: float = SERVO_FREQUENCY,
                 damping_ratio: float = SERVO_DAMPING_RATIO, feed_forward: bool = True) -> None:
        if not frequency > 0 or not damping_ratio >= 0:
            raise ValueError(f"servo frequency must be positive and damping ratio not negative, got "
                             f"{frequency}, {damping_ratio}")
        self._table, self._joints = table, dict(joints)
        self._limits = dict(zip(self._joints, map(float, limits)))
        omega = min(2.0 * math.pi * frequency, 0.25 / dt)
        self.default_gains = {name: (i * omega * omega, 2.0 * damping_ratio * i * omega)
                              for name, i in zip(self._joints, map(float, inertia))}
        self.gains = dict(self.default_gains)
        self.feed_forward = feed_forward
        self._plans: dict[str, list[Segment]] = {}
        self._begins: dict[str, list[float]] = {}  # per plan, its segments' begins (bisected)
        self._kinds: dict[str, str] = {}
        # What the table's rows were written for (see refresh): the span of time + 1e-12 over
        # which the same segments are in force, and the gains and feed-forward used.
        self._written_gains: dict[str, tuple[float, float]] = {}
        self._written_feed_forward = feed_forward
        self.clear()

    @property
    def joints(self) -> list[str]:
        """The joints that can take a servo."""
        return list(self._joints)

    def _check(self, joint: str) -> None:
        if joint not in self._joints:
            known = ", ".join(self._joints) or "none"
            raise ValueError(f"joint {joint!r} takes no position or velocity command (not an effort-actuated "
                             f"one-DoF joint); joints that do: {known}")

    def mode(self, joint: str) -> str:
        """What `joint` follows: one of MODES."""
        self._check(joint)
        return self._kinds.get(joint, "effort")

    def set_gains(self, joint: str, kp: float, kd: float) -> None:
        """Gains of `joint` [N m/rad, N m s/rad or N/m, N s/m]: finite and not negative."""
        self._check(joint)
        if not (math.isfinite(kp) and math.isfinite(kd) and kp >= 0 and kd >= 0):
            raise ValueError(f"joint {joint!r}: servo gains must be finite and not negative, got kp={kp}, kd={kd}")
        self.gains[joint] = (float(kp), float(kd))
        self._invalidate()

    def hold_position(self, joint: str, position: float, velocity: float = 0.0, now: float = 0.0) -> None:
        """Servo `joint` to `position` (with a velocity reference `velocity`, 0: hold still)."""
        self._follow(joint, "position", [Segment(now, now, (position,), True, (velocity,))])

    def hold_velocity(self, joint: str, velocity: float, now: float = 0.0) -> None:
        """Servo `joint`'s speed to `velocity` (no position gain)."""
        self._follow(joint, "velocity", [Segment(now, now, (0.0,), False, (velocity,))])

    def follow(self, joint: str, segments: Sequence[Segment]) -> None:
        """Follow `segments` (sorted by ``begin``; the last holds on)."""
        if not segments:
            raise ValueError(f"joint {joint!r}: a trajectory needs at least one segment")
        self._follow(joint, "trajectory", list(segments))

    def _follow(self, joint: str, kind: str, segments: list[Segment]) -> None:
        self._check(joint)
        self._plans[joint], self._kinds[joint] = segments, kind
        self._begins[joint] = [segment.begin for segment in segments]
        self._invalidate()
        self.refresh(segments[0].begin)

    def plan(self, joint: str) -> list[Segment]:
        """The segments `joint` follows (empty: effort only)."""
        self._check(joint)
        return list(self._plans.get(joint, []))

    def restore(self, joint: str, mode: str, segments: Sequence[Segment]) -> None:
        """Follow `segments` in `mode` (one of MODES but "effort"), as :meth:`plan` and
        :meth:`mode` gave them: a recording's snapshot."""
        if mode not in MODES[1:]:
            raise ValueError(f"joint {joint!r}: unknown servo mode {mode!r}; one of {', '.join(MODES[1:])}")
        self._follow(joint, mode, list(segments))

    def release(self, joint: str) -> None:
        """No servo on `joint`: its effort input alone acts."""
        self._check(joint)
        self._plans.pop(joint, None)
        self._begins.pop(joint, None)
        self._kinds.pop(joint, None)
        self._invalidate()
        self.refresh(self._refreshed)

    def clear(self) -> None:
        """No servo on any joint (the table empty)."""
        self._plans.clear()
        self._begins.clear()
        self._kinds.clear()
        self._table[0] = 0.0
        self._refreshed = 0.0
        self._invalidate()

    @property
    def active(self) -> bool:
        """Whether some joint follows a servo."""
        return bool(self._plans)

    def segment(self, joint: str, time: float) -> Segment | None:
        """The segment `joint` follows at `time` (None: effort only): the last one begun, found by
        bisection, so a trajectory's cost per refresh does not grow with its length."""
        plan = self._plans.get(joint)
        if not plan:
            return None
        return plan[max(bisect_right(self._begins[joint], time + 1e-12) - 1, 0)]

    def refresh(self, time: float) -> float:
        """Write the rows in force at `time` into the table; the next time a segment begins
        (inf: none).  The rows are rewritten only when they would change: a command, a release,
        new gains (:meth:`set_gains` or ``gains`` assigned), ``feed_forward`` changed, or `time`
        on the other side of a segment's begin than at the last write; otherwise the table
        already holds exactly those rows, and a refresh per publish period costs a comparison."""
        self._refreshed = time
        key = time + 1e-12  # as segment() bisects
        if (self._valid_from <= key < self._valid_until and self.feed_forward == self._written_feed_forward
                and self.gains == self._written_gains):
            return self._valid_until
        return self._rewrite(time, key)

    def _rewrite(self, time: float, key: float) -> float:
        """Write every row in force at `time`; remember the span of `key` (time + 1e-12) over which
        the same segments are in force: from the latest begin passed to the earliest one not."""
        upcoming, passed, row = math.inf, -math.inf, 0
        for joint, begins in self._begins.items():
            following = bisect_right(begins, key)
            upcoming = min(upcoming, begins[following]) if following < len(begins) else upcoming
            passed = max(passed, begins[following - 1]) if following > 0 else passed
            self._write(row, joint, self.segment(joint, time))
            row += 1
        self._table[0] = row
        self._valid_from, self._valid_until = passed, upcoming
        self._written_gains, self._written_feed_forward = dict(self.gains), self.feed_forward
        return upcoming

    def _invalidate(self) -> None:
        """The rows written no longer stand: the next refresh rewrites them."""
        self._valid_from, self._valid_until = math.inf, -math.inf

    def _write(self, row: int, joint: str, segment: Segment) -> None:
        values = self._table[1 + row * SERVO_WIDTH:1 + (row + 1) * SERVO_WIDTH]
        kp, kd = self.gains[joint]
        p, v, a = segment.coefficients()
        values[:8] = (*self._joints[joint], kp if segment.position else 0.0, kd, self._limits[joint],
                      segment.origin, 1.0 if self.feed_forward else 0.0)
        values[_P:_P + 6], values[_V:_V + 5], values[_A:_A + 4] = p, v, a
