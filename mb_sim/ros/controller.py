"""The ``mb_sim_demo_controller`` node: joint-space PD tracking of sine targets, for demos.

On every ``/joint_states`` message it computes, for each controlled joint ``j`` (``j = 0..n-1``),

    target_j(t) = amplitude * sin(2 pi frequency t + 2 pi j / n)
    effort_j    = kp_j (target_j - q_j) + kd_j (dtarget_j/dt - qdot_j)

at the message's stamp ``t`` (sim time, so the targets follow the simulation whatever its pace)
and publishes the efforts on ``/mb_sim/joint_commands`` (``sensor_msgs/JointState``: ``name`` +
``effort``) with the same stamp.  Gravity is *not* compensated: a joint that carries weight sags
below its target by about its weight torque / kp.

Parameters (read once, at start):
  use_sim_time  default true: the node's clock (log stamps) follows ``/clock``.
  kp, kd        gains of every joint [N m/rad, N m s/rad] (default 30, 3: right for the pendulums).
  gains.<joint>.kp, gains.<joint>.kd
                gains of one joint, declared when the joint first appears (default: kp, kd).
                Light links need far lower gains than heavy ones to stay stable with efforts that
                change only at the ``/joint_states`` rate: ``config/demo_controller.yaml`` holds
                arm6's.
  amplitude     target amplitude [rad or m] (default 0.5).
  frequency     target frequency [Hz] (default 0.25).
  joints        joints to control (default unset: every joint in ``/joint_states``).  Name the
                actuated ones on robots with mimic or passive joints: the node rejects a
                command that names those.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rclpy.exceptions import InvalidParameterValueException, ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from rcl_interfaces.msg import ParameterDescriptor
from sensor_msgs.msg import JointState

from mb_sim.ros.conversions import seconds
from mb_sim.ros.teardown import end_process, run_until_signal, spin_node

__all__ = ["Gains", "SineTarget", "pd_efforts", "DemoController", "main", "NODE_NAME"]

NODE_NAME = "mb_sim_demo_controller"
COMMAND_TOPIC = "mb_sim/joint_commands"  # relative: the namespace it is launched in


@dataclass(frozen=True)
class Gains:
    """PD gains of one joint."""

    kp: float
    kd: float


@dataclass(frozen=True)
class SineTarget:
    """Sine targets, phase-shifted evenly across the controlled joints so they move apart."""

    amplitude: float
    frequency: float

    def at(self, t: float, index: int, count: int) -> tuple[float, float]:
        """Target position and velocity of joint `index` of `count` at time `t`."""
        omega = 2.0 * math.pi * self.frequency
        angle = omega * t + 2.0 * math.pi * index / count
        return self.amplitude * math.sin(angle), self.amplitude * omega * math.cos(angle)


def pd_efforts(t: float, positions: Sequence[float], velocities: Sequence[float],
               gains: Sequence[Gains], target: SineTarget) -> list[float]:
    """PD efforts towards the moving targets: the pure control law of the node."""
    count = len(positions)
    efforts = []
    for j, (q, qdot, g) in enumerate(zip(positions, velocities, gains, strict=True)):
        q_target, qdot_target = target.at(t, j, count)
        efforts.append(g.kp * (q_target - q) + g.kd * (qdot_target - qdot))
    return efforts


class DemoController(Node):
    """Tracks sine targets on the simulated robot's joints with a PD law."""

    def __init__(self, **node_options: Any) -> None:
        super().__init__(NODE_NAME, **node_options)
        # On sim time unless told otherwise: declared again so a given value still wins.
        self.undeclare_parameter("use_sim_time")
        self.declare_parameter("use_sim_time", True)
        self._default_gains = Gains(self._number("kp", 30.0, "P gain of every joint [N m/rad]"),
                                    self._number("kd", 3.0, "D gain of every joint [N m s/rad]"))
        self._target = SineTarget(self._number("amplitude", 0.5, "target amplitude [rad or m]"),
                                  self._number("frequency", 0.25, "target frequency [Hz]"))
        self._wanted: list[str] = self.declare_parameter(
            "joints", Parameter.Type.STRING_ARRAY,
            ParameterDescriptor(description="joints to control; unset or empty: all in /joint_states", read_only=True),
        ).value or []
        self._gains: dict[str, Gains] = {}
        self._joints: list[str] = []
        self._publisher = self.create_publisher(JointState, COMMAND_TOPIC, 10)
        self.create_subscription(JointState, "joint_states", self._on_joint_states, qos_profile_sensor_data)
        self.get_logger().info(
            f"tracking {self._target.amplitude} sin(2 pi {self._target.frequency} t + phase) on "
            f"{', '.join(self._wanted) or 'every joint'}; publishing {COMMAND_TOPIC}")

    def _number(self, name: str, default: float, description: str) -> float:
        """Declare a read-only numeric parameter; integers are accepted too (``-p kp:=50``)."""
        descriptor = ParameterDescriptor(description=description, read_only=True, dynamic_typing=True)
        value = self.declare_parameter(name, default, descriptor).value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidParameterValueException(name, value, "must be a number")
        return float(value)

    def _gains_of(self, joint: str) -> Gains:
        """The joint's gains: ``gains.<joint>.kp/kd`` if given, else the common ones."""
        if joint not in self._gains:
            self._gains[joint] = Gains(self._number(f"gains.{joint}.kp", self._default_gains.kp, f"P gain of {joint}"),
                                       self._number(f"gains.{joint}.kd", self._default_gains.kd, f"D gain of {joint}"))
        return self._gains[joint]

    def _controlled(self, names: Sequence[str]) -> list[str]:
        """Joints of this message to control; logs the set whenever it changes."""
        joints = [name for name in (self._wanted or names) if name in names]
        if joints != self._joints:
            self._joints = joints
            gains = ", ".join(f"{j} (kp {self._gains_of(j).kp:g}, kd {self._gains_of(j).kd:g})" for j in joints)
            missing = sorted(set(self._wanted) - set(names))
            self.get_logger().info(f"controlling {gains or 'no joint'}"
                                   + (f"; not in /joint_states: {', '.join(missing)}" if missing else ""))
        return joints

    def _on_joint_states(self, msg: JointState) -> None:
        """One control step per measurement, at the measurement's time stamp."""
        if not (len(msg.position) == len(msg.velocity) == len(msg.name)):
            self.get_logger().warning("/joint_states without one position and velocity per joint; ignored",
                                      throttle_duration_sec=10.0)
            return
        joints = self._controlled(msg.name)
        if not joints:
            return
        index = {name: k for k, name in enumerate(msg.name)}
        t = seconds(msg.header.stamp)
        efforts = pd_efforts(t, [msg.position[index[j]] for j in joints], [msg.velocity[index[j]] for j in joints],
                             [self._gains_of(j) for j in joints], self._target)
        command = JointState(name=joints, effort=efforts)
        command.header.stamp = msg.header.stamp
        self._publisher.publish(command)


def main(args: list[str] | None = None) -> int:
    """Entry point of ``mb_sim_demo_controller``: spin until Ctrl-C or shutdown, clean up quietly,
    and end the process (:func:`mb_sim.ros.teardown.end_process`).

    rclpy's own signal handlers wake the executor (this node has no timer that would) and call on
    to :func:`mb_sim.ros.teardown.run_until_signal`'s, so whatever the executor raises once a
    signal arrived ends quietly with status 0; the teardown ignores further signals and is
    time-limited (see :mod:`mb_sim.ros.teardown`).
    """
    return end_process(run_until_signal(lambda: _run(args)))


def _run(args: list[str] | None) -> int:
    return spin_node(DemoController, NODE_NAME, {ParameterException: "bad parameter: "}, args)


if __name__ == "__main__":
    sys.exit(main())
