"""Commands to the simulation: validation of incoming messages and the command timeout.

Pure Python (no rclpy): the node passes message fields in and gets efforts or a
:class:`CommandError` out.  Conventions follow ros2_control's forward command controllers:
``effort_commands`` carries one value per actuated joint in ``Simulator.actuated_joints`` order,
``joint_commands`` (``sensor_msgs/JointState``) sets the ``effort`` of the joints it names and
leaves the others unchanged.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["CommandError", "effort_array", "joint_efforts", "voltage_array", "EffortCommands"]


class CommandError(ValueError):
    """A command the node rejects.  ``kind`` names the problem (one throttled warning per kind):
    ``length``, ``not_finite``, ``unknown_joint``, ``duplicate_joint``, ``empty``, ``no_motor``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _finite(values: Sequence[float], names: Sequence[str]) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    bad = [f"{name}={value}" for name, value in zip(names, array.tolist()) if not math.isfinite(value)]
    if bad:
        raise CommandError("not_finite", f"non-finite effort ({', '.join(bad)})")
    return array


def effort_array(data: Sequence[float], joints: Sequence[str]) -> np.ndarray:
    """Efforts of a ``Float64MultiArray``: exactly one finite value per joint of `joints`."""
    if len(data) != len(joints):
        expected = f"{len(joints)} values (one per actuated joint: {', '.join(joints) or 'none'})"
        raise CommandError("length", f"expected {expected}, got {len(data)}")
    return _finite(list(data), joints)


def joint_efforts(names: Sequence[str], efforts: Sequence[float], joints: Sequence[str]) -> dict[str, float]:
    """Efforts by name of a ``JointState`` command: its ``name`` and ``effort`` fields."""
    names = list(names)
    if not names:
        raise CommandError("empty", "the command names no joint")
    if len(efforts) != len(names):
        raise CommandError("length", f"{len(names)} names but {len(efforts)} efforts")
    unknown = [name for name in names if name not in joints]
    if unknown:
        raise CommandError("unknown_joint", f"unknown or unactuated joint(s) {', '.join(map(repr, unknown))}; "
                                            f"actuated joints: {', '.join(joints) or 'none'}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise CommandError("duplicate_joint", f"joint(s) named twice: {', '.join(map(repr, duplicates))}")
    return dict(zip(names, _finite(list(efforts), names).tolist()))


def voltage_array(data: Sequence[float], motor_joints: Sequence[str]) -> np.ndarray:
    """Voltages of a ``Float64MultiArray``: one finite value per joint with a DC motor."""
    if not motor_joints:
        raise CommandError("no_motor", "no joint has a motor: this robot takes no voltage commands")
    if len(data) != len(motor_joints):
        raise CommandError("length", f"expected {len(motor_joints)} values (one per motor joint: "
                                     f"{', '.join(motor_joints)}), got {len(data)}")
    return _finite(list(data), motor_joints)


class EffortCommands:
    """The commanded effort of each actuated joint and when it arrived (wall time, seconds).

    A joint's command older than `timeout` seconds is stale: its effort falls back to zero
    (``timeout == 0`` keeps commands forever).
    """

    def __init__(self, joints: Sequence[str], timeout: float) -> None:
        if timeout < 0:
            raise ValueError(f"timeout must not be negative, got {timeout}")
        self.joints, self.timeout = list(joints), timeout
        n = len(self.joints)
        self._values = np.zeros(n)
        self._received = np.full(n, -math.inf)
        self._timed_out = np.zeros(n, dtype=bool)  # the last command timed out

    def set_all(self, values: Sequence[float], now: float) -> None:
        """A command for every joint (already validated)."""
        self._values[:] = values
        self._received[:] = now
        self._timed_out[:] = False

    def set_some(self, efforts: dict[str, float], now: float) -> None:
        """Commands for the named joints (already validated); the others are unchanged."""
        for name, value in efforts.items():
            k = self.joints.index(name)
            self._values[k], self._received[k], self._timed_out[k] = value, now, False

    def clear(self) -> None:
        """No command at all (after a reset)."""
        self._values[:] = 0.0
        self._received[:] = -math.inf
        self._timed_out[:] = False

    def current(self, now: float) -> tuple[np.ndarray, list[str]]:
        """The efforts to apply at `now`, and the joints whose command timed out just now."""
        expired: list[str] = []
        if self.timeout > 0:
            live = np.isfinite(self._received) & ~self._timed_out  # a command holds, not timed out
            old = live & (now - self._received > self.timeout)
            if old.any():
                self._values[old] = 0.0
                self._timed_out[old] = True
                expired = [name for name, flag in zip(self.joints, old) if flag]
        return self._values.copy(), expired

    @property
    def stale(self) -> bool:
        """Whether some joint's last command timed out (and none came since)."""
        return bool(self._timed_out.any())

    def age(self, now: float) -> float | None:
        """Seconds since the most recent command, or None when none has arrived."""
        if not len(self._received) or not np.isfinite(self._received).any():
            return None
        return now - float(self._received.max())
