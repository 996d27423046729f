"""Commands to the simulation: validation of incoming messages and the command timeout.

Pure Python (no rclpy): the node passes message fields in and gets efforts or voltages, or a
:class:`CommandError`, out.  Conventions follow ros2_control's forward command controllers:
``effort_commands`` carries one value per actuated joint in ``Simulator.actuated_joints`` order,
``joint_commands`` (``sensor_msgs/JointState``) commands the joints it names and leaves the others
unchanged, each on the interface its fields select (topic_based_ros2_control's convention: a
field may be empty, else it has one value per name, NaN meaning "not on this interface"):
``position`` given -> a position servo (``velocity`` then its velocity reference, ``effort`` its
feed-forward), else ``velocity`` -> a velocity servo, else ``effort`` -> the effort alone.  Voltages of DC motors alike: ``voltage_commands`` one value per motor
in ``Simulator.motors`` order, ``voltage_joint_commands`` (``sensor_msgs/JointState``) the
voltage of each motor it names (by motor name or by the name of the motor's joint) in ``effort``.

A joint driven by a motor takes no effort (the simulator's torque on it is the motor's): an effort
command naming it is refused, pointing at the voltage topics.

Validation costs time linear in the message and is bounded: a message naming more inputs than the
robot has is refused before anything else is looked at, and error messages list a few culprits,
not all of them (a hostile message of 100k names costs milliseconds, not minutes).
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CommandError", "JointCommand", "effort_array", "joint_commands", "joint_efforts", "voltage_array", "motor_voltages", "TimedCommands",
    "EffortCommands", "VOLTAGE_TOPICS", "ros2_control_commands",
]

#: The node's voltage topics, named in the hint of a refused effort on a motorized joint.
VOLTAGE_TOPICS = ("~/voltage_commands", "~/voltage_joint_commands")


class CommandError(ValueError):
    """A command the node rejects.  ``kind`` names the problem (one throttled warning per kind):
    ``length``, ``not_finite``, ``unknown_joint``, ``duplicate_joint``, ``empty``, ``no_motor``,
    ``motorized_joint`` (an effort for a joint a motor drives), ``unknown_motor``,
    ``duplicate_motor``, ``too_many`` (more names than the robot has inputs), ``no_interface`` (a
    ros2_control command on an interface its joint lacks), ``no_value`` (a
    joint with no value on any interface), ``no_servo`` (a position or velocity for a joint
    without a servo), ``frame`` (a push in a frame neither the world's nor its link's),
    ``wrench`` (a push :meth:`~mb_sim.sim.Simulator.apply_wrench` refuses)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


#: Culprits named in one error message; the rest are counted.
LISTED = 5


def _listed(names: Sequence[str]) -> str:
    """``'a', 'b', ... and N more``: at most ``LISTED`` names, quoted."""
    shown = ", ".join(map(repr, names[:LISTED]))
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def _repeated(names: Sequence[str]) -> list[str]:
    """The names that occur more than once, in order of first occurrence (linear time)."""
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for name in names:
        if name in seen:
            repeated[name] = None
        seen.add(name)
    return list(repeated)


def _check_size(names: Sequence[str], limit: int, what: str) -> None:
    """Refuse at once a message naming more than `limit` inputs (more than the robot has)."""
    if len(names) > limit:
        raise CommandError("too_many", f"the command names {len(names)} {what}s; this robot has {limit}")


def _finite(values: Sequence[float], names: Sequence[str], what: str = "effort") -> np.ndarray:
    array = np.asarray(values, dtype=float)
    bad = [f"{name}={value}" for name, value in zip(names, array.tolist()) if not math.isfinite(value)]
    if bad:
        more = f" and {len(bad) - LISTED} more" if len(bad) > LISTED else ""
        raise CommandError("not_finite", f"non-finite {what} ({', '.join(bad[:LISTED])}{more})")
    return array


def _driven_by(joints: Sequence[str], motorized: Mapping[str, str]) -> str:
    """``joint 'a' is driven by motor 'm'[, ...]: use <voltage topics>``."""
    which = ", ".join(f"joint {joint!r} is driven by motor {motorized[joint]!r}" for joint in joints)
    return f"{which}: use {' or '.join(VOLTAGE_TOPICS)}"


def effort_array(data: Sequence[float], joints: Sequence[str],
                 motorized: Mapping[str, str] | None = None) -> np.ndarray:
    """Efforts of a ``Float64MultiArray``: exactly one finite value per joint of `joints`.

    `motorized` maps the joints a motor drives to their motors (they are not in `joints`): an
    array with a value for them too is refused as ``motorized_joint``, any other wrong length
    says which joints take voltages instead.
    """
    motorized = dict(motorized or {})
    if len(data) != len(joints):
        expected = f"{len(joints)} values (one per actuated joint: {', '.join(joints) or 'none'})"
        message = f"expected {expected}, got {len(data)}"
        if motorized:
            message += f"; {_driven_by(list(motorized), motorized)}"
        kind = "motorized_joint" if motorized and len(data) == len(joints) + len(motorized) else "length"
        raise CommandError(kind, message)
    return _finite(list(data), joints)


def _check_joint_names(names: list[str], joints: Sequence[str], motorized: Mapping[str, str]) -> None:
    """Refuse names of motor-driven joints, of joints not in `joints`, and names given twice."""
    driven = [name for name in dict.fromkeys(names) if name in motorized]
    if driven:
        raise CommandError("motorized_joint", _driven_by(driven[:LISTED], motorized))
    known = set(joints)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise CommandError("unknown_joint", f"unknown or unactuated joint(s) {_listed(unknown)}; "
                                            f"actuated joints: {', '.join(joints) or 'none'}")
    duplicates = _repeated(names)
    if duplicates:
        raise CommandError("duplicate_joint", f"joint(s) named twice: {_listed(duplicates)}")


def joint_efforts(names: Sequence[str], efforts: Sequence[float], joints: Sequence[str],
                  motorized: Mapping[str, str] | None = None) -> dict[str, float]:
    """Efforts by name of a ``JointState`` command: its ``name`` and ``effort`` fields.

    A name in `motorized` (joint -> the motor driving it) is refused as ``motorized_joint``.
    """
    motorized = dict(motorized or {})
    names = list(names)
    if not names:
        raise CommandError("empty", "the command names no joint")
    _check_size(names, len(joints) + len(motorized), "joint")
    if len(efforts) != len(names):
        raise CommandError("length", f"{len(names)} names but {len(efforts)} efforts")
    _check_joint_names(names, joints, motorized)
    return dict(zip(names, _finite(list(efforts), names).tolist()))


@dataclass(frozen=True)
class JointCommand:
    """One joint's command: ``mode`` "effort", "position" or "velocity"; ``effort`` the effort or
    the servo's feed-forward (0 when not given: ``effort_given`` False), ``velocity`` the velocity
    reference (0 when not given for a position)."""

    mode: str
    position: float = 0.0
    velocity: float = 0.0
    effort: float = 0.0
    effort_given: bool = False


def _interface(values: Sequence[float], names: Sequence[str], field: str) -> np.ndarray | None:
    """A JointState field: None when empty, else one value per name, finite or NaN (not given)."""
    if not len(values):
        return None
    if len(values) != len(names):
        raise CommandError("length", f"{len(names)} names but {len(values)} values in {field} "
                                     "(each field is empty or has one value per name)")
    array = np.asarray(values, dtype=float)
    bad = [f"{name}={value}" for name, value in zip(names, array.tolist()) if math.isinf(value)]
    if bad:
        raise CommandError("not_finite", f"infinite {field} ({', '.join(bad[:LISTED])}); NaN means not commanded")
    return array


def _given(array: np.ndarray | None, k: int) -> bool:
    return array is not None and not math.isnan(array[k])


def joint_commands(names: Sequence[str], positions: Sequence[float], velocities: Sequence[float],
                   efforts: Sequence[float], joints: Sequence[str], servoed: Sequence[str] = (),
                   motorized: Mapping[str, str] | None = None) -> dict[str, JointCommand]:
    """The commands of a ``JointState`` message by joint (see the module docstring).

    `joints` take efforts, `servoed` (a subset) also positions and velocities; a name in
    `motorized` (joint -> motor) is refused as ``motorized_joint``.  All or nothing: a message
    with one bad joint changes none.
    """
    motorized = dict(motorized or {})
    names = list(names)
    if not names:
        raise CommandError("empty", "the command names no joint")
    _check_size(names, len(joints) + len(motorized), "joint")
    fields = [_interface(values, names, field) for values, field in
              ((positions, "position"), (velocities, "velocity"), (efforts, "effort"))]
    _check_joint_names(names, joints, motorized)
    return _select(names, *fields, set(servoed))


def _select(names: list[str], position, velocity, effort, servoed: set[str]) -> dict[str, JointCommand]:
    """Each joint's interface from the fields it has a value in."""
    commands, empty, unservoed = {}, [], []
    for k, name in enumerate(names):
        feed_forward = float(effort[k]) if _given(effort, k) else 0.0
        if _given(position, k) or _given(velocity, k):
            if name not in servoed:
                unservoed.append(name)
                continue
            v = float(velocity[k]) if _given(velocity, k) else 0.0
            mode = "position" if _given(position, k) else "velocity"
            p = float(position[k]) if mode == "position" else 0.0
            commands[name] = JointCommand(mode, p, v, feed_forward, _given(effort, k))
        elif _given(effort, k):
            commands[name] = JointCommand("effort", effort=feed_forward, effort_given=True)
        else:
            empty.append(name)
    if unservoed:
        raise CommandError("no_servo", f"joint(s) {_listed(unservoed)} take efforts only (no position or velocity "
                                       f"servo); servoed joints: {', '.join(sorted(servoed)) or 'none'}")
    if empty:
        raise CommandError("no_value", f"joint(s) {_listed(empty)} have no position, velocity or effort "
                                       "(every field empty or NaN)")
    return commands


def _scatter(values: Sequence[float], names: list[str], takes: list[bool], field: str) -> list[float]:
    """A JointState field as topic_based_hardware_interfaces sends it, one value per name (NaN where
    none): `values` holds one value per name whose joint `takes` the interface (in order), or one
    per name (the plain convention), or none."""
    if not len(values):
        return []
    if len(values) == len(names):
        lacking = [name for name, t, value in zip(names, takes, values) if not t and not math.isnan(value)]
        if lacking:  # a value the hardware would never send: the element gives the joint no such interface
            raise CommandError("no_interface", f"joint(s) {_listed(lacking)} have no {field} command interface in "
                                               f"the URDF's <ros2_control>: their {field} must be NaN")
        return list(values)
    if len(values) != sum(takes):
        taking = [name for name, t in zip(names, takes) if t]
        raise CommandError("length", f"{len(values)} values in {field}: expected one per named joint with a {field} "
                                     f"command interface ({len(taking)}: {_listed(taking) or 'none'}) or one per name "
                                     f"({len(names)})")
    it = iter(values)
    return [float(next(it)) if t else math.nan for t in takes]


def ros2_control_commands(names: Sequence[str], positions: Sequence[float], velocities: Sequence[float],
                          efforts: Sequence[float], interfaces: Mapping[str, Sequence[str]],
                          ignored: Collection[str] = ()) -> tuple[list[str], list[float], list[float], list[float]]:
    """A command of ros2_control's topic-based hardware, as a plain ``joint_commands`` message.

    The hardware names every joint of its ``<ros2_control>`` element and fills each field with the
    commands of the joints having that command interface only (`interfaces`: joint -> its
    interfaces), so a field may be shorter than ``name``.  Before a controller claims a joint its
    command is NaN: joints with no finite value, and `ignored` ones (mimic joints), are left out:
    they keep the command they hold.  Returns (names, positions, velocities, efforts), each field
    empty or one value per name left.
    """
    names = list(names)
    if not names:
        raise CommandError("empty", "the command names no joint")
    _check_size(names, len(interfaces), "joint")
    unknown = [name for name in names if name not in interfaces]
    if unknown:
        raise CommandError("unknown_joint", f"joint(s) {_listed(unknown)} not in the URDF's <ros2_control>; "
                                            f"its joints: {', '.join(interfaces) or 'none'}")
    duplicates = _repeated(names)
    if duplicates:
        raise CommandError("duplicate_joint", f"joint(s) named twice: {_listed(duplicates)}")
    fields = [_scatter(values, names, [field in interfaces[name] for name in names], field)
              for values, field in ((positions, "position"), (velocities, "velocity"), (efforts, "effort"))]
    kept = [k for k, name in enumerate(names) if name not in ignored
            and any(values and not math.isnan(values[k]) for values in fields)]
    return ([names[k] for k in kept], *([values[k] for k in kept] if values else [] for values in fields))


def _no_motor() -> CommandError:
    return CommandError("no_motor", "no joint has a motor: this robot takes no voltage commands")


def voltage_array(data: Sequence[float], motors: Sequence[str]) -> np.ndarray:
    """Voltages of a ``Float64MultiArray``: exactly one finite value per motor of `motors`
    (``Simulator.motors`` order)."""
    if not motors:
        raise _no_motor()
    if len(data) != len(motors):
        raise CommandError("length", f"expected {len(motors)} values (one per motor: {', '.join(motors)}), "
                                     f"got {len(data)}")
    return _finite(list(data), motors, "voltage")


def motor_voltages(names: Sequence[str], voltages: Sequence[float], motor_joints: Mapping[str, str],
                   actuated: Sequence[str] = ()) -> dict[str, float]:
    """Voltages by motor of a ``JointState`` command: ``name`` holds motor names or the names of
    their joints, ``effort`` the voltages [V].

    `motor_joints` maps each motor to its joint (``Simulator.motor_joints``, in motor order);
    `actuated` are the joints that take efforts (named in the message when one is given here).
    Naming a motor twice (also once by motor and once by joint) is refused.
    """
    if not motor_joints:
        raise _no_motor()
    names = list(names)
    if not names:
        raise CommandError("empty", "the command names no motor")
    _check_size(names, len(motor_joints), "motor")
    if len(voltages) != len(names):
        raise CommandError("length", f"{len(names)} names but {len(voltages)} voltages (in effort)")
    by_joint = {joint: motor for motor, joint in motor_joints.items()}
    unknown = [name for name in names if name not in motor_joints and name not in by_joint]
    if unknown:
        known = ", ".join(f"{motor} (joint {joint})" for motor, joint in motor_joints.items())
        actuated = set(actuated)
        effort_driven = [name for name in dict.fromkeys(unknown) if name in actuated]
        hint = (f"; joint(s) {_listed(effort_driven)} have no motor: command their effort on "
                "~/joint_commands" if effort_driven else "")
        raise CommandError("unknown_motor", f"unknown motor or motor joint(s) {_listed(unknown)}; "
                                            f"motors: {known}{hint}")
    motors = [name if name in motor_joints else by_joint[name] for name in names]
    duplicates = _repeated(motors)
    if duplicates:
        raise CommandError("duplicate_motor", f"motor(s) named twice (by motor or joint name): {_listed(duplicates)}")
    return dict(zip(motors, _finite(list(voltages), names, "voltage").tolist()))


class TimedCommands:
    """The commanded value of each input (a joint's effort, a motor's voltage) and when it arrived
    (wall time, seconds).

    A command older than `timeout` seconds is stale: its value falls back to zero (``timeout == 0``
    keeps commands forever).  A value set as *held* (a servo's zero feed-forward where a position,
    velocity or trajectory command gave none) never goes stale: what holds is the servo's reference.
    """

    def __init__(self, names: Sequence[str], timeout: float) -> None:
        if timeout < 0:
            raise ValueError(f"timeout must not be negative, got {timeout}")
        self.names, self.timeout = list(names), timeout
        n = len(self.names)
        self._index = {name: k for k, name in enumerate(self.names)}
        self._values = np.zeros(n)
        self._received = np.full(n, -math.inf)
        self._timed_out = np.zeros(n, dtype=bool)  # the last command timed out
        self._expires = np.ones(n, dtype=bool)  # the last command goes stale after the timeout

    @property
    def joints(self) -> list[str]:
        """The inputs' names (joints for efforts)."""
        return self.names

    def set_all(self, values: Sequence[float], now: float) -> None:
        """A command for every input (already validated)."""
        self._values[:] = values
        self._received[:] = now
        self._timed_out[:] = False
        self._expires[:] = True

    def set_some(self, values: Mapping[str, float], now: float, held: Collection[str] = ()) -> None:
        """Commands for the named inputs (already validated); the others are unchanged.  Those in
        `held` never go stale."""
        for name, value in values.items():
            k = self._index[name]
            self._values[k], self._received[k], self._timed_out[k] = value, now, False
            self._expires[k] = name not in held

    def clear(self) -> None:
        """No command at all (after a reset)."""
        self._values[:] = 0.0
        self._received[:] = -math.inf
        self._timed_out[:] = False
        self._expires[:] = True

    def current(self, now: float) -> tuple[np.ndarray, list[str]]:
        """The values to apply at `now`, and the inputs whose command timed out just now."""
        expired: list[str] = []
        if self.timeout > 0:
            live = np.isfinite(self._received) & ~self._timed_out & self._expires  # not timed out yet
            old = live & (now - self._received > self.timeout)
            if old.any():
                self._values[old] = 0.0
                self._timed_out[old] = True
                expired = [name for name, flag in zip(self.names, old) if flag]
        return self._values.copy(), expired

    @property
    def values(self) -> np.ndarray:
        """The commanded values as they stand (a copy; stale ones zero once noticed)."""
        return self._values.copy()

    @property
    def stale(self) -> bool:
        """Whether some input's last command timed out (and none came since)."""
        return bool(self._timed_out.any())

    def age(self, now: float) -> float | None:
        """Seconds since the most recent command, or None when none has arrived."""
        if not len(self._received) or not np.isfinite(self._received).any():
            return None
        return now - float(self._received.max())


#: The effort bookkeeping of the actuated joints (the name it had before voltages came).
EffortCommands = TimedCommands
