"""The ``mb_sim_diff_drive_controller`` node: velocity commands to a simulated differential drive.

ros2_control's ``diff_drive_controller`` conventions, for a robot whose wheels are driven by
``<dc_motor>`` models in ``mb_sim_node`` (``urdf/diff_drive.urdf``): ``/cmd_vel`` (linear x,
angular z) becomes one speed per wheel, held by a PI loop per wheel on its motor voltage; wheel
odometry is published alongside.  The logic lives in :mod:`mb_sim.ros.diff_drive` (no rclpy).

Subscribes
    ``/robot_description`` (std_msgs/String, transient local): the URDF, read once.  The wheels,
    their radii, the track and the motors' constants come from it (two ``<rolling_wheel>``
    elements on links whose joints have a ``<dc_motor>``; the left one is the one further along
    +y unless ``left_wheel_joint``/``right_wheel_joint`` say otherwise).  A description that is
    no such robot ends the node with exit status 1 and one line saying why; later descriptions
    are ignored (a warning if they differ).
    ``cmd_vel`` (geometry_msgs/TwistStamped, or geometry_msgs/Twist with ``use_stamped_vel``
    false; relative: ``/cmd_vel`` at the root, ``/<ns>/cmd_vel`` in a namespace): ``linear.x``
    [m/s] and ``angular.z`` [rad/s] of the base.  DDS never delivers a publisher of the other
    type (teleop_twist_keyboard publishes Twist unless ``-p stamped:=true``): once a second the
    node looks at the topic's publishers and warns once per publisher of the other type, saying
    what to change.
    ``/joint_states`` (sensor_msgs/JointState): each message carrying both wheel joints is one
    control step at its stamp (sim time).

Publishes
    ``/mb_sim/voltage_joint_commands`` (sensor_msgs/JointState): ``name`` = the two wheel joints,
    ``effort`` = their motor voltages [V], stamped like the /joint_states message it answers.
    ``~/odom`` (nav_msgs/Odometry): dead reckoning from the wheel joints, frame
    ``odom_frame_id`` -> ``base_frame_id``, starting at the origin with the first /joint_states
    message; twist in the base frame.  Compare it with the simulator's ground truth ``/odom``.
    No TF: the simulator already publishes ``odom -> base_link``.

Control law (per wheel, every /joint_states message, ``dt`` the time since the last one)
    ``omega_ref`` from (v, w) by the kinematics; ``V = clamp(n K omega_ref + kp e + I, +-V_max)``
    with ``e = omega_m - omega`` (``omega_m``: ``omega_ref`` through a first-order lag of
    ``reference_time_constant``) and ``I += ki e dt`` unless that winds up against the voltage
    limit.  A /cmd_vel older than ``cmd_vel_timeout`` (measured in /joint_states time from its
    arrival, whatever its stamp says), or none yet: zero targets, integrators held at zero.  Time
    going backwards (the simulator's ``~/reset``) restarts odometry and loops and drops the command.

Parameters (read once, at start; documented in ``config/diff_drive_controller.yaml``)
    use_sim_time (true), use_stamped_vel (true), cmd_vel_timeout (0.5 s), left_wheel_joint,
    right_wheel_joint ("": from the description), wheel_separation_multiplier,
    left_wheel_radius_multiplier, right_wheel_radius_multiplier (1.0), kp (0.2 V s/rad),
    ki (5.0 V/rad), reference_time_constant (0.03 s), odom_frame_id (odom), base_frame_id
    (base_link), position_feedback (true), velocity_rolling_window_size (10),
    pose_covariance_diagonal, twist_covariance_diagonal (six zeros).

Exit status: 0 after Ctrl-C, SIGTERM or shutdown (quietly, no traceback); 1 with one line naming
a bad parameter, or saying why the robot description is no differential drive.  The process ends
as soon as the node is destroyed and rclpy shut down (:func:`mb_sim.ros.teardown.end_process`).
"""
from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import InvalidParameterValueException, ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from mb_sim.ros.conversions import odometry
from mb_sim.ros.diff_drive import DescriptionError, DiffDrive, DriveLoop, PIGains, drive_from_description
from mb_sim.ros.teardown import end_process, run_until_signal, spin_node

__all__ = ["DiffDriveController", "DescriptionRefused", "main", "NODE_NAME", "COMMAND_TOPIC", "CMD_VEL_TOPIC",
           "DESCRIPTION_QOS", "cmd_vel_type_warning"]

NODE_NAME = "mb_sim_diff_drive_controller"
COMMAND_TOPIC = "mb_sim/voltage_joint_commands"  # relative: the namespace it is launched in
CMD_VEL_TOPIC = "cmd_vel"  # relative: /cmd_vel at the root, /<ns>/cmd_vel in a namespace
#: Seconds between two looks at the types the publishers of cmd_vel send (wall clock).
CMD_VEL_TYPE_CHECK_PERIOD = 1.0
VELOCITY_TYPES = {True: "geometry_msgs/msg/TwistStamped", False: "geometry_msgs/msg/Twist"}
#: As the simulator publishes /robot_description: a late subscriber still gets it.
DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
#: Seconds between two warnings of the same kind.
WARNING_THROTTLE = 5.0


class DescriptionRefused(RuntimeError):
    """The robot description is no differential drive this node can drive (ends the node)."""


class DiffDriveController(Node):
    """Drives the simulated differential drive from /cmd_vel and publishes its wheel odometry."""

    def __init__(self, **node_options: Any) -> None:
        super().__init__(NODE_NAME, **node_options)
        # On sim time unless told otherwise: declared again so a given value still wins.
        self.undeclare_parameter("use_sim_time")
        self.declare_parameter("use_sim_time", True)
        self._read_parameters()
        self._drive: DiffDrive | None = None
        self._loop: DriveLoop | None = None
        self._description: str | None = None
        self._command_pub = self.create_publisher(JointState, COMMAND_TOPIC, 10)
        self._odom_pub = self.create_publisher(Odometry, "~/odom", 10)
        self.create_subscription(String, "robot_description", self._on_description, DESCRIPTION_QOS)
        if self.use_stamped_vel:
            self._cmd_vel_sub = self.create_subscription(TwistStamped, CMD_VEL_TOPIC,
                                                         lambda msg: self._on_cmd_vel(msg.twist), 10)
        else:
            self._cmd_vel_sub = self.create_subscription(Twist, CMD_VEL_TOPIC, self._on_cmd_vel, 10)
        self._warned_publishers: set[tuple[str, str]] = set()  # (node, type) warned about
        self.create_timer(CMD_VEL_TYPE_CHECK_PERIOD, self._check_cmd_vel_publishers,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))  # also while sim time stands still
        self.create_subscription(JointState, "joint_states", self._on_joint_states, qos_profile_sensor_data)
        self.get_logger().info(f"waiting for /robot_description; {self._cmd_vel_sub.topic_name} as "
                               f"{'TwistStamped' if self.use_stamped_vel else 'Twist'}")

    # -- parameters ---------------------------------------------------------------------------
    def _declare(self, name: str, default: Any, description: str, numeric: bool = False) -> Any:
        descriptor = ParameterDescriptor(description=description, read_only=True, dynamic_typing=numeric)
        return self.declare_parameter(name, default, descriptor).value

    def _number(self, name: str, default: float, description: str, valid, requirement: str) -> float:
        """A read-only number (integers accepted: ``-p ki:=5``) that must satisfy `valid`."""
        value = self._declare(name, default, description, numeric=True)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidParameterValueException(name, value, "must be a number")
        if not valid(value):
            raise InvalidParameterValueException(name, value, f"must be {requirement}")
        return float(value)

    def _covariance(self, name: str, description: str) -> list[float]:
        value = self._declare(name, [0.0] * 6, description)
        values = list(value)
        if len(values) != 6 or not all(math.isfinite(v) and v >= 0 for v in values):
            raise InvalidParameterValueException(name, value, "must be six non-negative numbers")
        return values

    def _read_parameters(self) -> None:
        self.use_stamped_vel = bool(self._declare(
            "use_stamped_vel", True, "/cmd_vel is geometry_msgs/TwistStamped (true) or Twist (false)"))
        self.cmd_vel_timeout = self._number(
            "cmd_vel_timeout", 0.5, "stop when the last /cmd_vel is older than this [s, sim time]",
            lambda v: v > 0, "positive")
        self.left_wheel_joint = str(self._declare(
            "left_wheel_joint", "", "left wheel joint; empty: the driven wheel further along +y"))
        self.right_wheel_joint = str(self._declare(
            "right_wheel_joint", "", "right wheel joint; empty: the driven wheel further along -y"))
        positive = (lambda v: v > 0, "positive")
        self.multipliers = {name: self._number(name, 1.0, description, *positive) for name, description in (
            ("wheel_separation_multiplier", "scales the track from the description"),
            ("left_wheel_radius_multiplier", "scales the left wheel's radius from the description"),
            ("right_wheel_radius_multiplier", "scales the right wheel's radius from the description"))}
        non_negative = (lambda v: v >= 0, "non-negative")
        self.gains = PIGains(self._number("kp", 0.2, "P gain of the wheel speed loops [V s/rad]", *non_negative),
                             self._number("ki", 5.0, "I gain of the wheel speed loops [V/rad]", *non_negative))
        self.reference_time_constant = self._number(
            "reference_time_constant", 0.03, "lag of the speed the PI loops compare with [s]; 0: none",
            *non_negative)
        self.odom_frame_id = str(self._declare("odom_frame_id", "odom", "frame of ~/odom"))
        self.base_frame_id = str(self._declare("base_frame_id", "base_link", "child frame of ~/odom"))
        self.position_feedback = bool(self._declare(
            "position_feedback", True, "odometry from wheel positions (true) or speeds (false)"))
        window = self._declare("velocity_rolling_window_size", 10, "samples in the mean of the odometry twist")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise InvalidParameterValueException("velocity_rolling_window_size", window,
                                                 "must be a positive integer")
        self.velocity_window = window
        self.pose_covariance = self._covariance("pose_covariance_diagonal", "~/odom pose covariance diagonal")
        self.twist_covariance = self._covariance("twist_covariance_diagonal", "~/odom twist covariance diagonal")

    # -- callbacks ----------------------------------------------------------------------------
    def _on_description(self, message: String) -> None:
        """Configure from the first description; later ones are ignored."""
        if self._description is not None:
            if message.data != self._description:
                self.get_logger().warning("a different /robot_description arrived; ignored (the controller is "
                                          "configured once: restart it for another robot)")
            return
        self._description = message.data
        try:
            drive = drive_from_description(message.data, self.left_wheel_joint, self.right_wheel_joint,
                                           self.multipliers["wheel_separation_multiplier"],
                                           self.multipliers["left_wheel_radius_multiplier"],
                                           self.multipliers["right_wheel_radius_multiplier"])
        except DescriptionError as err:
            raise DescriptionRefused(str(err)) from None
        self._drive = drive
        self._loop = DriveLoop(drive, self.gains, self.cmd_vel_timeout, self.reference_time_constant,
                               self.position_feedback, self.velocity_window)
        self._log_configuration(drive)

    def _log_configuration(self, drive: DiffDrive) -> None:
        log = self.get_logger()
        for side, wheel, radius in (("left", drive.left, drive.left_radius),
                                    ("right", drive.right, drive.right_radius)):
            log.info(f"{side} wheel: joint {wheel.joint} (motor {wheel.motor}, {wheel.voltage_limit:g} V max, "
                     f"feed-forward {wheel.feedforward_gain:g} V s/rad), radius {radius:g} m, y {wheel.y:g} m")
        log.info(f"track {drive.separation:g} m; PI kp {self.gains.kp:g} V s/rad, ki {self.gains.ki:g} V/rad, "
                 f"reference lag {self.reference_time_constant:g} s; commands on {COMMAND_TOPIC}, odometry "
                 f"{self.odom_frame_id} -> {self.base_frame_id} on {self._odom_pub.topic_name}")
        if drive.base != self.base_frame_id:
            log.warning(f"base_frame_id is {self.base_frame_id!r} but the wheels hang from link {drive.base!r}")

    def _check_cmd_vel_publishers(self) -> None:
        """Warn once per publisher of cmd_vel whose type is not the one taken here: DDS does not
        match them, so its commands would vanish without a word."""
        topic = self._cmd_vel_sub.topic_name
        for info in self.get_publishers_info_by_topic(topic):
            node = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            seen = (node, info.topic_type)
            if info.topic_type == VELOCITY_TYPES[self.use_stamped_vel] or seen in self._warned_publishers:
                continue
            self._warned_publishers.add(seen)
            self.get_logger().warning(cmd_vel_type_warning(node, topic, info.topic_type, self.use_stamped_vel))

    def _on_cmd_vel(self, twist: Twist) -> None:
        if self._loop is None:
            self.get_logger().info("no /robot_description yet: /cmd_vel ignored",
                                   throttle_duration_sec=WARNING_THROTTLE)
            return
        try:
            self._loop.command(twist.linear.x, twist.angular.z)
        except ValueError as err:
            self.get_logger().warning(f"/cmd_vel rejected: {err}", throttle_duration_sec=WARNING_THROTTLE)

    def _wheel_values(self, message: JointState) -> tuple[list[float], list[float]] | None:
        """(positions, velocities) of the (left, right) wheel joints, or None (warned) if missing."""
        index = {name: k for k, name in enumerate(message.name)}
        joints = self._loop.joints
        missing = [joint for joint in joints if joint not in index]
        if missing:
            return None  # another publisher's joints (or a partial message): not ours
        rows = [index[joint] for joint in joints]
        if max(rows) >= len(message.velocity) or (self.position_feedback and max(rows) >= len(message.position)):
            self.get_logger().warning("/joint_states without the wheels' position and velocity; ignored",
                                      throttle_duration_sec=WARNING_THROTTLE)
            return None
        positions = [message.position[k] if k < len(message.position) else 0.0 for k in rows]
        velocities = [message.velocity[k] for k in rows]
        if not all(math.isfinite(v) for v in (*positions, *velocities)):
            self.get_logger().warning("/joint_states with non-finite wheel values; ignored",
                                      throttle_duration_sec=WARNING_THROTTLE)
            return None
        return positions, velocities

    def _on_joint_states(self, message: JointState) -> None:
        """One control step per measurement, at its stamp."""
        if self._loop is None:
            return
        values = self._wheel_values(message)
        if values is None:
            return
        t = message.header.stamp.sec + message.header.stamp.nanosec * 1e-9
        output = self._loop.update(t, *values)
        if output.time_jumped_back:
            self.get_logger().warning("time went backwards (simulation reset?): odometry back at the origin, "
                                      "speed loops restarted, the last /cmd_vel dropped")
        if output.timed_out:
            self.get_logger().info(f"no /cmd_vel for {self.cmd_vel_timeout:g} s: stopping")
        command = JointState(name=list(output.voltages), effort=[float(v) for v in output.voltages.values()])
        command.header.stamp = message.header.stamp
        self._command_pub.publish(command)
        self._odom_pub.publish(self._odometry(message))

    def _odometry(self, message: JointState) -> Odometry:
        odom = self._loop.odometry
        pose = np.eye(4)
        c, s = math.cos(odom.heading), math.sin(odom.heading)
        pose[:2, :2] = [[c, -s], [s, c]]
        pose[0, 3], pose[1, 3] = odom.x, odom.y
        linear, lateral, angular = odom.twist
        result = odometry(self.odom_frame_id, self.base_frame_id, pose, (linear, lateral, 0.0), (0.0, 0.0, angular),
                          message.header.stamp)
        result.pose.covariance = _diagonal(self.pose_covariance)
        result.twist.covariance = _diagonal(self.twist_covariance)
        return result


def cmd_vel_type_warning(node: str, topic: str, sent: str, use_stamped_vel: bool) -> str:
    """One line: who sends what on `topic`, that it never arrives, and the two ways out."""
    taken = VELOCITY_TYPES[use_stamped_vel]
    if use_stamped_vel:
        fix = ("set use_stamped_vel false for this controller (-p use_stamped_vel:=false, or in "
               "controller_params_file), or make the publisher stamp its commands (teleop_twist_keyboard: "
               "--ros-args -p stamped:=true)")
    else:
        fix = "set use_stamped_vel true for this controller (its default), or make the publisher send Twist"
    return (f"{node} publishes {sent} on {topic} but this controller takes {taken} (use_stamped_vel "
            f"{str(use_stamped_vel).lower()}): none of its commands arrive; {fix}")


def _diagonal(values: Sequence[float]) -> list[float]:
    """A row-major 6x6 covariance with `values` on its diagonal."""
    matrix = [0.0] * 36
    for k, value in enumerate(values):
        matrix[7 * k] = float(value)
    return matrix


def main(args: list[str] | None = None) -> int:
    """Entry point of ``mb_sim_diff_drive_controller``: spin until Ctrl-C or shutdown, clean up
    quietly, and end the process (it does not return, except where another thread still runs).

    Exits with status 1 on a bad parameter or a description that is no differential drive.
    rclpy's signal handlers stay installed (they are what wakes the executor between its
    once-a-second timer's ticks), and they call on to
    :func:`mb_sim.ros.teardown.run_until_signal`'s, which marks the interrupt; whatever the
    executor raises once a signal has arrived then ends quietly with status 0:
    KeyboardInterrupt, ExternalShutdownException, or an error from a message taken while rclpy
    shuts down (seen with /cmd_vel arriving at Ctrl-C: ``RuntimeError: Unable to
    convert call argument '0' to Python object`` from ``take_message``).
    """
    return end_process(run_until_signal(lambda: _run(args)))


def _run(args: list[str] | None) -> int:
    return spin_node(DiffDriveController, NODE_NAME, {ParameterException: "bad parameter: ",
                                                      DescriptionRefused: "cannot drive this robot: "}, args)


if __name__ == "__main__":
    sys.exit(main())
