"""What a command message does to the simulation, without rclpy: shared by the node and by
``mb-sim replay`` (which feeds it the recorded messages, decoded from MCAP).

Each command topic (the keys of :data:`COMMAND_TOPICS`, relative to the node) has a handler that
validates the message (raising :class:`~mb_sim.session.commands.CommandError`) and then sets efforts,
voltages or servo references; efforts and voltages are held in
:class:`~mb_sim.session.commands.TimedCommands` (stale ones fall to zero) and handed to the simulator by
:meth:`CommandRouter.apply`.  Messages only need the ROS field names as attributes (rclpy messages
and mcap_ros2's decoded ones both do).
"""
from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from mb_sim.session.commands import (
    CommandError, TimedCommands, effort_array, joint_commands, motor_voltages, ros2_control_commands, voltage_array,
)
from mb_sim.session.trajectory_commands import TrajectoryPoint, trajectory_waypoints
from mb_sim.sim import Simulator
from mb_sim.sim.servos import Segment
from mb_sim.sim.trajectory import TrajectoryError, joint_segments

__all__ = ["COMMAND_TOPICS", "CommandRouter", "MAX_TRAJECTORY_POINTS", "ROS2_CONTROL_TOPIC", "WRENCH_COMMAND",
           "command_type"]

#: Most points one ~/joint_trajectory message may hold (100 s at 1 kHz): its segments are built
#: on arrival, so a longer one would hold the node for seconds and its memory.
MAX_TRAJECTORY_POINTS = 100_000

#: Command topics (relative to the node: ``~/<topic>``) and their message types.
COMMAND_TOPICS = {
    "effort_commands": "std_msgs/msg/Float64MultiArray",
    "joint_commands": "sensor_msgs/msg/JointState",
    "voltage_commands": "std_msgs/msg/Float64MultiArray",
    "voltage_joint_commands": "sensor_msgs/msg/JointState",
    "joint_trajectory": "trajectory_msgs/msg/JointTrajectory",
}

#: The handler key of the commands of ros2_control's topic-based hardware (its topic is the
#: ``joint_commands_topic`` of the URDF's ``<ros2_control>``, not one of COMMAND_TOPICS).
ROS2_CONTROL_TOPIC = "ros2_control_commands"


#: The handler key of a push on link ``<link>`` is ``apply_wrench/<link>`` (its topic
#: ``~/apply_wrench/<link>``), its message a geometry_msgs/WrenchStamped.
WRENCH_COMMAND, WRENCH_TYPE = "apply_wrench/", "geometry_msgs/msg/WrenchStamped"


def command_type(kind: str) -> str | None:
    """The message type of command `kind` (a key of COMMAND_TOPICS, ROS2_CONTROL_TOPIC or a push);
    None for no known kind."""
    if kind in COMMAND_TOPICS:
        return COMMAND_TOPICS[kind]
    if kind == ROS2_CONTROL_TOPIC:
        return "sensor_msgs/msg/JointState"
    return WRENCH_TYPE if kind.startswith(WRENCH_COMMAND) and len(kind) > len(WRENCH_COMMAND) else None


def _seconds(time) -> float:
    """A ``builtin_interfaces`` Time or Duration in seconds."""
    return time.sec + 1e-9 * time.nanosec


class CommandRouter:
    """Validates and applies command messages to `sim` (see the module docstring).

    `timeout` [s of the command clock the caller passes as ``now``; 0: never] makes commands
    stale; `allow_partial` accepts trajectories that leave out joints.
    """

    def __init__(self, sim: Simulator, timeout: float, allow_partial: bool = False) -> None:
        self.sim, self.allow_partial = sim, allow_partial
        self.efforts = TimedCommands(sim.actuated_joints, timeout)  # of the actuated joints (servo feed-forward)
        self.voltages = TimedCommands(sim.motors, timeout)
        self.motorized = {joint: motor for motor, joint in sim.motor_joints.items()}  # joint -> motor
        self.ros2_control: dict[str, tuple[str, ...]] = {}  # joint -> command interfaces (serve_ros2_control)
        self.ros2_control_ignored: set[str] = set()
        #: A push's frame_id -> the frame its components are in: "world" or a link (see _on_apply_wrench).
        self.wrench_frames: dict[str, str] = {"": "world", "world": "world", **{link: link for link in sim.wrench_links}}

    def handle(self, topic: str, message, now: float) -> None:
        """Apply `message` of command topic `topic` (a key of COMMAND_TOPICS, or ``apply_wrench/<link>``)
        at command time `now`."""
        if topic.startswith(WRENCH_COMMAND):
            self._on_apply_wrench(topic[len(WRENCH_COMMAND):], message)
            return
        getattr(self, f"_on_{topic}")(message, now)

    def _on_apply_wrench(self, link: str, message) -> None:
        """Push `link` with a WrenchStamped, held until the next one on its topic (a zero wrench
        ends it): force at the link's origin, components in the frame ``header.frame_id`` names
        (``wrench_frames``: empty or the world's, or the link's own TF frame)."""
        frame = self.wrench_frames.get(message.header.frame_id)
        if frame not in ("world", link):
            known = ", ".join(repr(f) for f, target in self.wrench_frames.items() if target in ("world", link))
            raise CommandError("frame", f"push on link {link!r}: frame_id {message.header.frame_id!r} is neither the "
                                        f"world's nor the link's (frame_ids taken: {known})")
        w = message.wrench
        force, torque = (w.force.x, w.force.y, w.force.z), (w.torque.x, w.torque.y, w.torque.z)
        try:  # the link's push replaced at once: a refused one leaves the last in place
            self.sim.apply_wrench(link, force, torque, "world" if frame == "world" else link, replace=True)
        except ValueError as err:
            raise CommandError("wrench", str(err)) from None

    def _on_effort_commands(self, message, now: float) -> None:
        self.efforts.set_all(effort_array(message.data, self.sim.actuated_joints, self.motorized), now)

    def _on_joint_commands(self, message, now: float) -> None:
        self._joint_commands(message.name, message.position, message.velocity, message.effort, now)

    def serve_ros2_control(self, interfaces: dict[str, tuple[str, ...]], ignored: set[str], hold: bool = True) -> None:
        """Take the commands of ros2_control's topic-based hardware (topic
        :data:`ROS2_CONTROL_TOPIC`): `interfaces` are the command interfaces of its joints, `ignored`
        joints (mimic joints) state only.  Its joints hold their start until commanded (and after
        a reset): a joint with a position interface holds its position, one with a velocity
        interface only is held still; `hold` false leaves the servos as they are now (a replay
        restored them)."""
        self.ros2_control, self.ros2_control_ignored = dict(interfaces), set(ignored)
        if hold:
            self._hold_ros2_control()

    def _hold_ros2_control(self) -> None:
        """Position-commanded joints hold where they are, velocity-commanded ones are held still."""
        q, indices, t, servos = self.sim.q, self.sim.joint_indices, self.sim.time, self.sim.servos
        for joint, interfaces in self.ros2_control.items():
            if joint in self.ros2_control_ignored:
                continue
            if "position" in interfaces:
                servos.hold_position(joint, float(q[indices[joint][0]]), 0.0, t)
            elif "velocity" in interfaces:
                servos.hold_velocity(joint, 0.0, t)

    def _on_ros2_control_commands(self, message, now: float) -> None:
        """A JointState of the topic-based hardware: fields shorter than its names (see
        :func:`~mb_sim.session.commands.ros2_control_commands`), NaN before a controller commands."""
        names, *fields = ros2_control_commands(message.name, message.position, message.velocity, message.effort,
                                               self.ros2_control, self.ros2_control_ignored)
        if names:
            self._joint_commands(names, *fields, now)

    def _joint_commands(self, names, positions, velocities, efforts, now: float) -> None:
        """Servo or drive each joint named on the interface its fields select."""
        commands = joint_commands(names, positions, velocities, efforts,
                                  self.sim.actuated_joints, self.sim.servos.joints, self.motorized)
        servos, t = self.sim.servos, self.sim.time
        for joint, command in commands.items():
            if command.mode == "position":
                servos.hold_position(joint, command.position, command.velocity, t)
            elif command.mode == "velocity":
                servos.hold_velocity(joint, command.velocity, t)
            else:
                servos.release(joint)
        self.efforts.set_some({joint: c.effort for joint, c in commands.items()}, now,
                              held={joint for joint, c in commands.items() if not c.effort_given})

    def _on_voltage_commands(self, message, now: float) -> None:
        self.voltages.set_all(voltage_array(message.data, self.sim.motors), now)

    def _on_voltage_joint_commands(self, message, now: float) -> None:
        self.voltages.set_some(motor_voltages(message.name, message.effort, self.sim.motor_joints,
                                              self.sim.actuated_joints), now)

    def _on_joint_trajectory(self, message, now: float) -> None:
        """Follow a trajectory as joint_trajectory_controller does (see trajectory_commands)."""
        if len(message.points) > MAX_TRAJECTORY_POINTS:
            raise CommandError("too_many", f"{len(message.points)} trajectory points: at most {MAX_TRAJECTORY_POINTS} "
                                           "in one message (send a long trajectory in parts)")
        stamp = message.header.stamp
        start = _seconds(stamp) if (stamp.sec or stamp.nanosec) else self.sim.time
        points = [TrajectoryPoint(_seconds(p.time_from_start), p.positions, p.velocities, p.accelerations)
                  for p in message.points]
        waypoints = trajectory_waypoints(message.joint_names, points, start, self.sim.servos.joints,
                                         self.allow_partial, self.motorized)
        q, u, indices, t = self.sim.q, self.sim.u, self.sim.joint_indices, self.sim.time
        try:
            plans = {joint: joint_segments(t, q[indices[joint][0]], u[indices[joint][1]], joint_points)
                     for joint, joint_points in waypoints.items()}
        except TrajectoryError as err:
            raise CommandError("past", str(err)) from None
        for joint, segments in plans.items():
            self.sim.servos.follow(joint, segments)
        self.efforts.set_some(dict.fromkeys(plans, 0.0), now, held=plans)

    def current(self, now: float) -> tuple[tuple[np.ndarray, np.ndarray], list[str], list[str]]:
        """The (efforts, voltages) to apply at `now`, and the joints and motors whose command just
        timed out."""
        efforts, stale_joints = self.efforts.current(now)
        voltages, stale_motors = self.voltages.current(now)
        return (efforts, voltages), stale_joints, stale_motors

    def apply(self, inputs: tuple[np.ndarray, np.ndarray]) -> None:
        """Hand (efforts, voltages) to the simulator, which clamps both to their limits."""
        efforts, voltages = inputs
        self.sim.set_efforts(efforts)
        if self.sim.motors:
            self.sim.set_voltages(voltages)

    def expire(self, joints: list[str], motors: list[str]) -> None:
        """Zero the commands of `joints` and `motors` (their timeout, replayed)."""
        self.efforts.set_some(dict.fromkeys(joints, 0.0), -math.inf)
        self.voltages.set_some(dict.fromkeys(motors, 0.0), -math.inf)

    def clear(self) -> None:
        """No command at all (after a reset): the ros2_control joints hold their start again."""
        self.efforts.clear()
        self.voltages.clear()
        self._hold_ros2_control()

    # -- snapshots for recordings -------------------------------------------------------------
    def snapshot(self) -> dict:
        """Everything commands set, as JSON-able data: held efforts and voltages, the servos'
        gains and references."""
        servos = self.sim.servos
        return {"efforts": self.efforts.values.tolist(), "voltages": self.voltages.values.tolist(),
                "gains": {joint: list(gains) for joint, gains in servos.gains.items()},
                "servos": {joint: {"mode": servos.mode(joint),
                                   "segments": [asdict(s) for s in servos.plan(joint)]}
                           for joint in servos.joints if servos.mode(joint) != "effort"}}

    def restore(self, snapshot: dict, now: float) -> None:
        """Set what :meth:`snapshot` recorded."""
        self.efforts.set_all(snapshot["efforts"], now)
        self.voltages.set_all(snapshot["voltages"], now)
        servos = self.sim.servos
        for joint, (kp, kd) in snapshot["gains"].items():
            servos.set_gains(joint, kp, kd)
        for joint, servo in snapshot["servos"].items():
            segments = [Segment(s["begin"], s["origin"], tuple(s["p"]), s["position"],
                                None if s["v"] is None else tuple(s["v"])) for s in servo["segments"]]
            servos.restore(joint, servo["mode"], segments)
