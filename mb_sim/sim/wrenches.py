"""Pushes: external wrenches on links over an interval of time (Gazebo's apply-link-wrench).

A push on a link that takes a wrench (:mod:`mb_sim.model.wrench`: loaded with ``wrench_links`` or
``<mb_sim><external_wrench link>``) is a force at the link's origin and a torque, in world
components fixed when the push is given (components given in the link's frame are turned into
the world's with the link's orientation then), held from the current time for a duration (or
until cleared).  Several pushes on a link add.  The inputs are held over a step; the step a push
ends within gets the push scaled by the part of the step it covers, so a push of force F for a
duration T gives the impulse F T whatever the step (a free body's momentum changes by exactly that).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mb_sim.sim.robot_model import RobotModel

__all__ = ["ExternalWrenches", "MAX_WRENCH", "Push"]

#: The largest force [N] or torque [N m] a push may have: beyond any robot's (a car is 1e4 N),
#: where it can only be a mistake in units or a corrupted message.
MAX_WRENCH = 1e7
#: A push ending within this fraction of a step of a step's end ends there (float round-off).
_END_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Push:
    """A wrench on `link` (world components: force at the link's origin [N], torque [N m]) from
    `start` to `end` [s] (inf: until cleared)."""

    link: str
    wrench: np.ndarray
    start: float
    end: float


class ExternalWrenches:
    """The pushes of a run, written into the wrench inputs of `robot` (in `inputs`, the model's
    input buffer) before each step (see the module docstring)."""

    def __init__(self, robot: RobotModel, inputs: np.ndarray) -> None:
        self.links = list(robot.wrench_links)
        first = len(robot.actuated_joints) + len(robot.motors)
        self._inputs = inputs[first:first + 6 * len(self.links)]  # a view
        self.pushes: list[Push] = []

    @property
    def active(self) -> bool:
        """Whether a push is pending or acting."""
        return bool(self.pushes)

    def add(self, link: str, force: Sequence[float], torque: Sequence[float], frame: str,
            orientation: Callable[[], np.ndarray] | None, start: float, duration: float | None,
            replace: bool = False) -> Push:
        """Push `link` from `start` for `duration` (None: until cleared), components in `frame`
        ("world", "" or the link's name: then `orientation` gives the link's rotation matrix); with
        `replace` the link's other pushes end (only once this one is found valid).  ValueError
        naming the culprit for a link that takes no wrench, another frame, a non-finite or absurd
        component or duration: the pushes are then as they were."""
        self._check_link(link)
        if frame not in ("world", "", link):
            raise ValueError(f"push on link {link!r}: frame {frame!r} is neither 'world' nor the link's own")
        wrench = np.concatenate([_vector(force, "force", link), _vector(torque, "torque", link)])
        if frame == link:
            rotation = orientation()
            wrench = np.concatenate([rotation @ wrench[:3], rotation @ wrench[3:]])
        if duration is not None and not (math.isfinite(duration) and duration >= 0):
            raise ValueError(f"push on link {link!r}: duration must be a finite time >= 0 s, got {duration}")
        end = math.inf if duration is None else start + float(duration)
        push = Push(link, wrench, float(start), end)
        if replace:
            self.pushes = [p for p in self.pushes if p.link != link]
        if end > start and (wrench.any() or not replace):
            self.pushes.append(push)
        return push

    def clear(self, link: str | None = None) -> None:
        """End the pushes on `link` (None: on every link) now."""
        if link is not None:
            self._check_link(link)
        self.pushes = [p for p in self.pushes if link is not None and p.link != link]
        self._inputs[:] = 0.0

    def write_step(self, t: float, dt: float) -> int:
        """Write the inputs of the step from `t` (each push by the part of the step it covers) and
        return how many steps they hold for (at least 1)."""
        self.pushes = [p for p in self.pushes if p.end > t + _END_TOLERANCE * dt]
        self._inputs[:] = 0.0
        hold = math.inf
        for push in self.pushes:
            covered = (min(push.end, t + dt) - max(push.start, t)) / dt
            if covered >= 1.0 - _END_TOLERANCE:
                if push.end < math.inf:
                    hold = min(hold, math.floor((push.end - t) / dt + _END_TOLERANCE))
            elif covered > 0.0:
                hold = 1
            else:  # starts later (a push is given at the current time: not reached)
                hold = min(hold, max(1, math.floor((push.start - t) / dt + _END_TOLERANCE)))
            self._add(push, min(max(covered, 0.0), 1.0))
        return int(hold) if hold < math.inf else 2**62

    def write_at(self, t: float) -> float:
        """Write the inputs at time `t` (the pushes acting then, in full) and return when they next
        change (inf: never); for the adaptive integrators, which stop there."""
        self.pushes = [p for p in self.pushes if p.end > t + 1e-12 * max(1.0, abs(t))]
        self._inputs[:] = 0.0
        for push in self.pushes:
            if push.start <= t:
                self._add(push, 1.0)
        changes = [p.end for p in self.pushes] + [p.start for p in self.pushes if p.start > t]
        return min(changes, default=math.inf)

    def _add(self, push: Push, scale: float) -> None:
        k = 6 * self.links.index(push.link)
        self._inputs[k:k + 6] += scale * push.wrench

    def _check_link(self, link: str) -> None:
        if link in self.links:
            return
        takes = ", ".join(self.links) or "none"
        raise ValueError(f"link {link!r} takes no external wrench (links taking one: {takes}); load the robot "
                         f"with wrench_links=[{link!r}] or give <mb_sim><external_wrench link=\"{link}\"/></mb_sim>")


def _vector(values: Sequence[float], what: str, link: str) -> np.ndarray:
    """Three finite components of at most MAX_WRENCH in magnitude."""
    try:
        array = np.array(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"push on link {link!r}: {what} must be three numbers, got {values!r}") from None
    if array.shape != (3,):
        raise ValueError(f"push on link {link!r}: {what} must be three numbers, got {len(array)}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"push on link {link!r}: {what} is not finite: {array.tolist()}")
    if np.linalg.norm(array) > MAX_WRENCH:
        raise ValueError(f"push on link {link!r}: {what} {np.linalg.norm(array):.3g} is beyond {MAX_WRENCH:g} "
                         "(N or N m): a unit or message error, not a push")
    return array
