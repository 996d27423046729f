"""Differential drive: the logic behind ``mb_sim_diff_drive_controller``, without rclpy.

Conventions follow ros2_control's ``diff_drive_controller``: a body velocity command (v forward,
w about z, in the base frame) becomes one speed per wheel; the wheels' joint positions give the
odometry by dead reckoning (pose and twist of the base frame in the odometry frame).  Unlike
``diff_drive_controller``, which sends the wheel speeds to velocity interfaces, this drive holds
them with a PI loop per wheel on its DC motor's voltage (:class:`SpeedPI`).

The geometry comes from the robot description (:func:`drive_from_description`): two
``<rolling_wheel>`` elements on links moved by joints with a ``<dc_motor>``, both joints children
of the same link (the base), their axes along the base's y axis.  The base frame need not sit on
the axle midpoint: each wheel's lateral position ``y`` enters the kinematics, and an axle at
``x != 0`` gives the base a sideways speed ``-w x`` (what rolling without slipping imposes).

Wheel speed of a wheel at lateral position y (rolling speed of its rim, [m/s]):
``s = v - w y``, so with the base frame on the axle midpoint (``y = -/+ b`` for the right/left
wheel, b the half track) ``omega_R = (v + w b) / r_R`` and ``omega_L = (v - w b) / r_L``; a joint
whose axis points along -y turns the other way (``Wheel.direction``).
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mb_sim.urdf import (
    DCMotorDescription, JointDescription, RobotDescription, RollingWheelDescription, URDFError, parse_urdf,
)
from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = [
    "DescriptionError", "Wheel", "DiffDrive", "drive_from_description", "PIGains", "SpeedPI",
    "VelocityCommand", "WheelOdometry", "DriveLoop", "DriveOutput", "se2_step", "AXIS_TOLERANCE",
]

#: A wheel axis counts as along the base's y axis, and two wheels as on one axle, within this [-, m].
AXIS_TOLERANCE = 1e-6


class DescriptionError(ValueError):
    """The robot description does not describe a differential drive this controller can drive."""


# -- geometry -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Wheel:
    """One driven wheel: its joint and motor, where it sits on the base, and its motor's constants.

    ``x``, ``y``: the wheel centre in the base frame [m]; ``direction``: +1 when a positive joint
    speed rolls the wheel forward (axis along +y), -1 when the axis points along -y.
    """

    joint: str
    motor: str
    radius: float
    x: float
    y: float
    direction: float
    torque_constant: float
    resistance: float
    gear_ratio: float = 1.0
    viscous_friction: float = 0.0
    voltage_limit: float = math.inf

    @property
    def feedforward_gain(self) -> float:
        """Steady-state voltage per joint speed [V s/rad] of the unloaded motor:
        ``n (K + R b / K)`` (back-EMF ``K n omega`` plus the current that overcomes the shaft's
        viscous friction; just ``K n`` without friction)."""
        K, n = self.torque_constant, self.gear_ratio
        return n * (K + self.resistance * self.viscous_friction / K)


@dataclass(frozen=True)
class DiffDrive:
    """Two driven wheels on one axle, the multipliers of ``diff_drive_controller`` applied.

    ``separation_multiplier`` scales the track about the axle midpoint, the radius multipliers
    each wheel's radius (calibration of the kinematics; 1 = the description's values).
    """

    base: str
    left: Wheel
    right: Wheel
    separation_multiplier: float = 1.0
    left_radius_multiplier: float = 1.0
    right_radius_multiplier: float = 1.0

    @property
    def separation(self) -> float:
        """Distance between the wheels [m] (the track; 2 b)."""
        return (self.left.y - self.right.y) * self.separation_multiplier

    @property
    def left_y(self) -> float:
        return self._midpoint + self.separation / 2

    @property
    def right_y(self) -> float:
        return self._midpoint - self.separation / 2

    @property
    def _midpoint(self) -> float:
        return (self.left.y + self.right.y) / 2

    @property
    def axle_x(self) -> float:
        """Position of the axle along the base's x axis [m]."""
        return self.left.x

    @property
    def left_radius(self) -> float:
        return self.left.radius * self.left_radius_multiplier

    @property
    def right_radius(self) -> float:
        return self.right.radius * self.right_radius_multiplier

    def joint_speeds(self, linear: float, angular: float) -> tuple[float, float]:
        """Joint speeds (left, right) [rad/s] that drive the base at `linear` [m/s] (x) and
        `angular` [rad/s] (about z)."""
        left = self.left.direction * (linear - angular * self.left_y) / self.left_radius
        right = self.right.direction * (linear - angular * self.right_y) / self.right_radius
        return left, right

    def body_velocity(self, left: float, right: float) -> tuple[float, float, float]:
        """Base velocity (forward, sideways, angular) from joint speeds (left, right); also turns
        joint angle increments into base displacement increments."""
        s_left = self.left.direction * left * self.left_radius
        s_right = self.right.direction * right * self.right_radius
        angular = (s_right - s_left) / self.separation
        linear = s_right + angular * self.right_y
        return linear, -angular * self.axle_x, angular


def _wheel_candidates(
        description: RobotDescription) -> dict[str, tuple[RollingWheelDescription, JointDescription, DCMotorDescription]]:
    """Joint name -> (rolling wheel, joint, motor) of every wheel whose joint has a motor: a
    ``<rolling_wheel>``, or where the link has none a ``<collision>`` cylinder turning about the
    joint's axis (or a sphere) touching the ground (its radius the wheel's)."""
    by_child = {joint.child: joint for joint in description.joints}
    motors = {motor.joint: motor for motor in description.extensions.dc_motors}
    candidates = {}
    for wheel in [*description.extensions.rolling_wheels, *_contact_wheels(description)]:
        joint = by_child.get(wheel.link)
        if joint is not None and joint.type in ("revolute", "continuous") and joint.name in motors \
                and joint.name not in candidates:
            candidates[joint.name] = (wheel, joint, motors[joint.name])
    return candidates


def _contact_wheels(description: RobotDescription) -> list[RollingWheelDescription]:
    """A wheel on the ground by contact: the first collision cylinder (about its own axis, in the
    link frame) or sphere of each link moved by a joint with a motor."""
    motored = {motor.joint for motor in description.extensions.dc_motors}
    rolling = {wheel.link for wheel in description.extensions.rolling_wheels}
    wheels = []
    for joint in description.joints:
        if joint.name not in motored or joint.child in rolling:
            continue
        for shape in description.collisions:
            if shape.link == joint.child and shape.shape in ("cylinder", "sphere"):
                axis = np.asarray(shape.rotation)[:, 2] if shape.shape == "cylinder" else None
                wheels.append(RollingWheelDescription(f"{joint.child}_contact", joint.child, float(shape.size[0]),
                                                      axis))
                break
    return wheels


def _with_wheel_shapes(description: RobotDescription, text: str) -> RobotDescription:
    """`description` with the collision shapes of its motor-driven links read (parsed again with a
    ground touching only those links) where it has no rolling wheels and read no shapes."""
    if description.extensions.rolling_wheels or description.collisions:
        return description
    by_joint = {joint.name: joint.child for joint in description.joints}
    links = [by_joint[m.joint] for m in description.extensions.dc_motors if m.joint in by_joint]
    if not links:
        return description
    try:
        return parse_urdf(text, ground=links)
    except URDFError:
        return description


def _wheel(candidate: tuple[RollingWheelDescription, JointDescription, DCMotorDescription]) -> Wheel:
    """The wheel of a candidate, its axis checked to lie along the y axis of its joint's parent."""
    wheel, joint, motor = candidate
    axis = np.asarray(joint.axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    if wheel.axis is not None:  # in the link frame, which is the joint frame at q = 0
        spin = np.asarray(wheel.axis, dtype=float)
        if np.linalg.norm(np.cross(spin / np.linalg.norm(spin), axis)) > AXIS_TOLERANCE:
            raise DescriptionError(f"wheel joint {joint.name!r}: the rolling wheel {wheel.name!r} spins about "
                                   f"{spin.tolist()}, not about its joint's axis {axis.tolist()}")
    in_base = rpy_to_matrix(np.asarray(joint.origin_rpy, dtype=float)) @ axis
    if abs(abs(in_base[1]) - 1.0) > AXIS_TOLERANCE:
        raise DescriptionError(f"wheel joint {joint.name!r}: its axis in the frame of {joint.parent!r} is "
                               f"{np.round(in_base, 6).tolist()}, not along y: a differential drive's wheels "
                               "turn about the base's lateral axis")
    x, y, _ = (float(v) for v in joint.origin_xyz)
    return Wheel(joint=joint.name, motor=motor.name, radius=float(wheel.radius), x=x, y=y,
                 direction=1.0 if in_base[1] > 0 else -1.0, torque_constant=motor.torque_constant,
                 resistance=motor.resistance, gear_ratio=motor.gear_ratio,
                 viscous_friction=motor.viscous_friction, voltage_limit=motor.voltage_limit)


def drive_from_description(description: RobotDescription | str, left_wheel_joint: str = "",
                           right_wheel_joint: str = "", separation_multiplier: float = 1.0,
                           left_radius_multiplier: float = 1.0, right_radius_multiplier: float = 1.0) -> DiffDrive:
    """The differential drive a robot description (URDF text or parsed) describes.

    Its driven wheels are the ``<rolling_wheel>`` elements (or, on a link without one, a collision
    cylinder turning about the joint's axis: a wheel on the ground by contact) on links moved by a
    revolute or continuous joint that has a ``<dc_motor>``.  With exactly two, the one further along +y is the
    left one; `left_wheel_joint` / `right_wheel_joint` name them explicitly (needed with more than
    two).  Raises :class:`DescriptionError` saying why when the description is no URDF, has fewer
    than two driven wheels, or their joints do not share a parent link, turn about its y axis and
    sit on one axle with the left wheel left of the right one.
    """
    if isinstance(description, str):
        try:
            text, description = description, parse_urdf(description)
        except URDFError as err:
            raise DescriptionError(f"the robot description is not a valid URDF: {err}") from None
        description = _with_wheel_shapes(description, text)
    candidates = _wheel_candidates(description)
    found = ", ".join(candidates) or "none"
    if len(candidates) < 2:
        raise DescriptionError(
            f"robot {description.name!r} is not a differential drive: it needs two rolling wheels driven by DC "
            f"motors (<rolling_wheel>, or a <collision> cylinder on the ground, on a link whose revolute or "
            f"continuous joint has a <dc_motor>); found {found}")
    for parameter, name in (("left_wheel_joint", left_wheel_joint), ("right_wheel_joint", right_wheel_joint)):
        if name and name not in candidates:
            raise DescriptionError(f"{parameter} {name!r} is not a joint of a motor-driven rolling wheel of robot "
                                   f"{description.name!r}; those are: {found}")
    if left_wheel_joint and right_wheel_joint and left_wheel_joint == right_wheel_joint:
        raise DescriptionError(f"left_wheel_joint and right_wheel_joint are both {left_wheel_joint!r}")
    wheels = {name: _wheel(candidate) for name, candidate in candidates.items()}
    if left_wheel_joint and right_wheel_joint:
        left, right = wheels[left_wheel_joint], wheels[right_wheel_joint]
    elif left_wheel_joint or right_wheel_joint:
        given = wheels[left_wheel_joint or right_wheel_joint]
        others = [w for name, w in wheels.items() if name != given.joint]
        if len(others) != 1:
            raise DescriptionError(f"robot {description.name!r} has {len(wheels)} motor-driven rolling wheels "
                                   f"({found}): name both left_wheel_joint and right_wheel_joint")
        left, right = (given, others[0]) if left_wheel_joint else (others[0], given)
    elif len(wheels) > 2:
        raise DescriptionError(f"robot {description.name!r} has {len(wheels)} motor-driven rolling wheels "
                               f"({found}): name the two to drive with left_wheel_joint and right_wheel_joint")
    else:
        right, left = sorted(wheels.values(), key=lambda w: w.y)
    parents = {candidates[w.joint][1].parent for w in (left, right)}
    if len(parents) != 1:
        raise DescriptionError(f"wheel joints {left.joint!r} and {right.joint!r} hang from different links "
                               f"({', '.join(sorted(parents))}); a differential drive's wheels share its base")
    if not left.y - right.y > AXIS_TOLERANCE:
        raise DescriptionError(f"the left wheel ({left.joint!r}, y = {left.y:g} m) is not to the left of the right "
                               f"wheel ({right.joint!r}, y = {right.y:g} m) in the base frame")
    if abs(left.x - right.x) > AXIS_TOLERANCE:
        raise DescriptionError(f"wheels {left.joint!r} (x = {left.x:g} m) and {right.joint!r} (x = {right.x:g} m) "
                               "are not on one axle")
    for name, value in (("wheel_separation_multiplier", separation_multiplier),
                        ("left_wheel_radius_multiplier", left_radius_multiplier),
                        ("right_wheel_radius_multiplier", right_radius_multiplier)):
        if not (math.isfinite(value) and value > 0):
            raise DescriptionError(f"{name} must be a positive number, got {value}")
    return DiffDrive(parents.pop(), left, right, separation_multiplier, left_radius_multiplier,
                     right_radius_multiplier)


# -- speed loop ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PIGains:
    """Gains of the wheel speed loop: ``kp`` [V s/rad] on the joint speed error, ``ki`` [V/rad] on
    its integral."""

    kp: float
    ki: float


@dataclass
class SpeedPI:
    """PI speed loop of one wheel on its motor voltage, with feed-forward and anti-windup.

    ``V = clamp(ff omega_ref + kp e + I, -limit, limit)`` with ``e = omega_m - omega`` and
    ``I += ki e dt`` -- except while the output is saturated and the error would push it further
    (conditional integration: the integral never winds up beyond what the limit lets through);
    ``|I|`` is also kept within ``limit``.

    ``omega_m`` is the reference model: the commanded speed ``omega_ref`` through a first-order
    lag of ``time_constant`` [s], started from the measured speed after a reset.  The feed-forward
    alone makes the wheel follow a step of ``omega_ref`` with roughly that lag; comparing the
    measurement with ``omega_m`` instead of ``omega_ref`` keeps the integrator from charging up
    over every acceleration (which it would then give back as overshoot), so the loop corrects
    model errors and disturbances only.  ``time_constant`` 0: ``omega_m = omega_ref``.
    """

    gains: PIGains
    feedforward_gain: float
    limit: float = math.inf
    time_constant: float = 0.0
    integral: float = 0.0
    model_speed: float | None = None

    def reset(self) -> None:
        """Integral to zero; the reference model restarts from the next measured speed."""
        self.integral, self.model_speed = 0.0, None

    def _clamp(self, voltage: float) -> float:
        return min(max(voltage, -self.limit), self.limit)

    def hold(self, reference: float, measured: float) -> float:
        """The voltage while stopping or stopped: loop reset (integral zero), no reference lag,
        ``V = clamp(ff omega_ref + kp (omega_ref - omega))``."""
        self.reset()
        return self._clamp(self.feedforward_gain * reference + self.gains.kp * (reference - measured))

    def update(self, reference: float, measured: float, dt: float) -> float:
        """The voltage for this period; `dt` [s] the time since the last update (0: no integration)."""
        if self.model_speed is None:
            self.model_speed = measured if self.time_constant > 0 else reference
        if self.time_constant > 0:
            self.model_speed += (reference - self.model_speed) * -math.expm1(-dt / self.time_constant)
        else:
            self.model_speed = reference
        error = self.model_speed - measured
        base = self.feedforward_gain * reference + self.gains.kp * error
        candidate = self.integral + self.gains.ki * error * dt
        unsaturated = base + candidate
        winding_up = (unsaturated > self.limit and error > 0) or (unsaturated < -self.limit and error < 0)
        if not winding_up:
            self.integral = min(max(candidate, -self.limit), self.limit)
        return self._clamp(base + self.integral)


# -- command and odometry -----------------------------------------------------------------------
@dataclass
class VelocityCommand:
    """The last velocity command and when it arrived; stale after `timeout` seconds."""

    timeout: float
    linear: float = 0.0
    angular: float = 0.0
    received: float | None = None  # its arrival time, None: no command (or dropped)

    def set(self, linear: float, angular: float, now: float) -> None:
        self.linear, self.angular, self.received = float(linear), float(angular), now

    def clear(self) -> None:
        self.linear, self.angular, self.received = 0.0, 0.0, None

    def fresh(self, now: float) -> bool:
        """A command arrived no more than `timeout` seconds before `now`."""
        return self.received is not None and now - self.received <= self.timeout

    def target(self, now: float) -> tuple[float, float]:
        """(linear, angular) to drive at: the command while fresh, else zero."""
        return (self.linear, self.angular) if self.fresh(now) else (0.0, 0.0)


def se2_step(linear: float, lateral: float, angular: float, heading: float) -> tuple[float, float, float]:
    """Displacement (dx, dy, dheading) in the odometry frame of a base at `heading` moved by the
    body-frame increments (`linear`, `lateral`, `angular`) as a constant twist over the interval
    (an arc; the exponential map of SE(2)), exact when speeds are constant over it."""
    if abs(angular) < 1e-9:  # second order in angular: the arc's chord, to rounding
        sin_term, cos_term = 1.0 - angular**2 / 6.0, angular / 2.0
    else:
        sin_term, cos_term = math.sin(angular) / angular, (1.0 - math.cos(angular)) / angular
    dx_body = linear * sin_term - lateral * cos_term
    dy_body = linear * cos_term + lateral * sin_term
    c, s = math.cos(heading), math.sin(heading)
    return c * dx_body - s * dy_body, s * dx_body + c * dy_body, angular


@dataclass
class WheelOdometry:
    """Dead reckoning of the base from its wheels, as ``diff_drive_controller`` does it.

    With ``position_feedback`` the wheel joint positions give each interval's increments; without,
    the joint speeds times the interval.  The pose integrates them as arcs (:func:`se2_step`); the
    twist is the mean increment rate over the last ``window`` intervals (``diff_drive_controller``'s
    ``velocity_rolling_window_size``).
    """

    drive: DiffDrive
    position_feedback: bool = True
    window: int = 10
    x: float = 0.0
    y: float = 0.0
    heading: float = 0.0
    time: float | None = None
    _previous: tuple[float, float] | None = None
    _rates: deque = field(default_factory=deque)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"the velocity window must be at least 1 sample, got {self.window}")
        self._rates = deque(maxlen=self.window)

    def reset(self) -> None:
        """Back to the origin, at rest; the next update starts again."""
        self.x = self.y = self.heading = 0.0
        self.time, self._previous = None, None
        self._rates.clear()

    @property
    def twist(self) -> tuple[float, float, float]:
        """Base velocity (forward, sideways, angular) in the base frame: the rolling mean."""
        if not self._rates:
            return 0.0, 0.0, 0.0
        return tuple(float(v) for v in np.mean(self._rates, axis=0))

    def update(self, t: float, positions: tuple[float, float], velocities: tuple[float, float]) -> None:
        """Integrate to time `t` given the wheel joints' positions and speeds (left, right)."""
        if self.time is None or self._previous is None:
            self.time, self._previous = t, positions
            return
        dt = t - self.time
        if dt <= 0:
            return
        if self.position_feedback:
            increments = (positions[0] - self._previous[0], positions[1] - self._previous[1])
        else:
            increments = (velocities[0] * dt, velocities[1] * dt)
        linear, lateral, angular = self.drive.body_velocity(*increments)
        dx, dy, dheading = se2_step(linear, lateral, angular, self.heading)
        self.x, self.y = self.x + dx, self.y + dy
        self.heading = math.remainder(self.heading + dheading, math.tau)
        self._rates.append((linear / dt, lateral / dt, angular / dt))
        self.time, self._previous = t, positions


# -- the whole loop -----------------------------------------------------------------------------
@dataclass(frozen=True)
class DriveOutput:
    """One update's result: voltages by wheel joint, the targets, and what happened."""

    voltages: dict[str, float]
    target: tuple[float, float]  # (linear, angular) driven at
    timed_out: bool = False  # the command went stale at this update
    time_jumped_back: bool = False  # time went backwards (a simulation reset): all restarted


class DriveLoop:
    """The controller's logic: velocity commands in, wheel voltages out, odometry alongside.

    Time is the measurements' (``update(t, ...)``, sim time): a command counts as arriving at the
    time of the latest update (:meth:`command`), so its age does not depend on the sender's clock.
    A command older than `cmd_vel_timeout`, or none yet, means stopping: zero wheel speed targets
    and the integrators held at zero (so they cannot wind up against the braking and turn the
    wheels back).  Time going backwards (the simulation was reset) restarts
    everything: odometry at the origin, integrators, no command.
    """

    def __init__(self, drive: DiffDrive, gains: PIGains, cmd_vel_timeout: float = 0.5,
                 reference_time_constant: float = 0.0, position_feedback: bool = True,
                 velocity_window: int = 10) -> None:
        self.drive = drive
        self.command_state = VelocityCommand(cmd_vel_timeout)
        self.loops = {wheel.joint: SpeedPI(gains, wheel.feedforward_gain, wheel.voltage_limit, reference_time_constant)
                      for wheel in (drive.left, drive.right)}
        self.odometry = WheelOdometry(drive, position_feedback, velocity_window)
        self.time: float | None = None
        self._early: tuple[float, float] | None = None  # a command that came before the first update
        self._was_fresh = False

    @property
    def joints(self) -> tuple[str, str]:
        """The wheel joints, (left, right)."""
        return self.drive.left.joint, self.drive.right.joint

    def command(self, linear: float, angular: float) -> None:
        """A velocity command, arriving now (at the time of the latest update)."""
        if not (math.isfinite(linear) and math.isfinite(angular)):
            raise ValueError(f"velocity command is not finite: linear {linear}, angular {angular}")
        if self.time is None:
            self._early = (linear, angular)
        else:
            self.command_state.set(linear, angular, self.time)

    def _restart(self) -> None:
        self.odometry.reset()
        self.command_state.clear()
        self._early = None
        for loop in self.loops.values():
            loop.reset()
        self._was_fresh = False

    def update(self, t: float, positions: Sequence[float], velocities: Sequence[float]) -> DriveOutput:
        """One control step at time `t` given the wheel joints' (left, right) positions and speeds."""
        jumped = self.time is not None and t < self.time
        if jumped:
            self._restart()
        dt = 0.0 if self.time is None or jumped else t - self.time
        self.time = t
        if self._early is not None:
            self.command_state.set(*self._early, t)
            self._early = None
        fresh = self.command_state.fresh(t)
        timed_out = self._was_fresh and not fresh
        self._was_fresh = fresh
        target = self.command_state.target(t)
        references = self.drive.joint_speeds(*target)
        voltages = {}
        for (joint, loop), reference, measured in zip(self.loops.items(), references, velocities):
            # Stopping: integrators held at zero, the P term and the motors' back-EMF brake.
            measured = float(measured)
            voltages[joint] = loop.update(reference, measured, dt) if fresh else loop.hold(reference, measured)
        self.odometry.update(t, (float(positions[0]), float(positions[1])),
                             (float(velocities[0]), float(velocities[1])))
        return DriveOutput(voltages, target, timed_out, jumped)
