"""The topic-based ros2_control hardware (joint_state_topic_hardware_interface/JointStateTopicSystem)
of the URDF's ``<ros2_control>`` elements, served by the ``mb_sim`` node: its
``joint_commands_topic`` in (through :class:`~mb_sim.ros.command_topics.CommandTopics`), its
``joint_states_topic`` out (best effort, as the hardware subscribes); a position state interface's
``initial_value`` is where the joint starts.  ``ros2_control_topics: false`` ignores them."""
from __future__ import annotations

from rclpy.exceptions import InvalidTopicNameException, NameValidationException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from mb_sim.model import Robot
from mb_sim.ros.command_topics import CommandTopics
from mb_sim.ros.node_parameters import StartupError
from mb_sim.ros.robot_source import RobotSource, rcl_problem
from mb_sim.ros.subscribers import counted_publisher, listened
from mb_sim.session import Session
from mb_sim.session.command_router import ROS2_CONTROL_TOPIC
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError
from mb_sim.urdf.ros2_control import Ros2ControlSystem, check_systems, ros2_control_systems
from mb_sim.urdf.ros2_control import initial_positions as ros2_control_initial_positions

__all__ = ["Ros2ControlElements", "Ros2ControlTopics"]


class Ros2ControlElements:
    """The ``<ros2_control>`` elements of the robot's URDF (none when `enabled` is false) and
    where they start their joints."""

    def __init__(self, node, robot_source: RobotSource, enabled: bool) -> None:
        self.parameter = robot_source.parameter
        self.source = ("<string>" if self.parameter == "robot_description"
                       else str(node.get_parameter(self.parameter).value))
        self.systems: list[Ros2ControlSystem] = []
        if enabled:
            try:
                self.systems = ros2_control_systems(robot_source.text, self.source)
            except URDFError as err:
                raise StartupError(f"parameter {self.parameter}: {err}") from None

    def initial_positions(self, node, robot: Robot) -> dict[str, float]:
        """Where the elements start the one-DoF joints that are not mimic joints (a position state
        interface's ``initial_value``, as Gazebo's and the mock hardware do); logged."""
        joints = {j.name for j in robot.joints.values() if len(j.q) == 1 and j.joint_description.mimic is None}
        start = ros2_control_initial_positions(self.systems, joints)
        if start:
            listed = ", ".join(f"{joint} {value:g}" for joint, value in start.items())
            node.get_logger().info(f"initial positions from <ros2_control> initial_value: {listed} "
                                   "(initial_positions.<joint> overrides them)")
        return start


class Ros2ControlTopics:
    """The served hardware of `elements` (the topic-based ones), checked against `sim`'s robot;
    :meth:`serve` opens its topics."""

    def __init__(self, node, elements: Ros2ControlElements, sim: Simulator, mimic_joints: set[str]) -> None:
        self.systems = systems = [system for system in elements.systems if system.topic_based]
        self._mimic_joints = mimic_joints
        self.subscriptions: list = []
        self.publishers: list = []
        try:
            check_systems(systems, elements.source, list(sim.joint_indices), sim.actuated_joints, sim.servos.joints,
                          {joint: motor for motor, joint in sim.motor_joints.items()}, mimic_joints)
        except URDFError as err:
            raise StartupError(f"parameter {elements.parameter}: {err}") from None
        for system in systems:
            _check_topic_names(node, system, f"parameter {elements.parameter}: {elements.source}")

    def serve(self, node, session: Session, commands: CommandTopics) -> None:
        """The hardware's interfaces in `session`'s router, its command subscriptions feeding
        `commands`, one state publisher per topic."""
        systems = self.systems
        session.router.serve_ros2_control(
            {joint.name: joint.command_interfaces for system in systems for joint in system.joints},
            {joint.name for system in systems for joint in system.joints
             if joint.mimic is not None or joint.name in self._mimic_joints})
        self.subscriptions = [node.create_subscription(  # its publisher: QoS(1), reliable
            JointState, system.commands_topic,
            lambda message, k=k: commands.receive(ROS2_CONTROL_TOPIC, self.subscriptions[k].topic_name,
                                                  "sensor_msgs/msg/JointState", message), 10)
            for k, system in enumerate(systems)]
        # the hardware subscribes with SensorDataQoS: best effort, the latest few; one publisher per
        # state topic: two elements reading one topic would get each message twice
        self.publishers = [counted_publisher(node, JointState, topic, qos_profile_sensor_data) for topic
                           in dict.fromkeys(node.resolve_topic_name(s.states_topic) for s in systems)]

    def topics(self) -> dict[str, str]:
        """Resolved command topic -> ROS2_CONTROL_TOPIC, for a recording's settings."""
        return {sub.topic_name: ROS2_CONTROL_TOPIC for sub in self.subscriptions}

    def listened(self) -> bool:
        """Whether some hardware reads the joint states."""
        return any(map(listened, self.publishers))

    def publish(self, joint_states) -> None:
        """The serialized /joint_states message, on every state topic."""
        for publisher in self.publishers:
            publisher.publish(joint_states)

    def log(self, log, lockstep: bool) -> None:
        """What each served hardware commands, where; in lockstep, a warning when the hardware sends
        only on change (the simulation would wait once the robot reaches its goal)."""
        for system in self.systems:
            joints = ", ".join(f"{j.name} ({'/'.join(j.command_interfaces) or 'state only'}"
                               f"{', mimic' if j.mimic else ''})" for j in system.joints)
            log.info(f"{system.label} ({system.plugin}): commands on {system.commands_topic}, state on "
                     f"{system.states_topic} (best effort) for [{joints}]; commands hold until the next one "
                     "(no command_timeout)")
            if lockstep and not system.threshold < 0:
                log.warning(f"lockstep with {system.label}: its hardware sends a command only when it differs from "
                            "the state, and the simulation waits for commands; set <param name="
                            "\"trigger_joint_command_threshold\">-1</param> in its <hardware> to send every "
                            "controller period")


def _check_topic_names(node, system: Ros2ControlSystem, where: str) -> None:
    """Refuse a topic parameter of `system` that is no ROS topic name, in one line (rclpy's
    refusal, when the node creates the topic, was a traceback)."""
    for name, topic in (("joint_commands_topic", system.commands_topic), ("joint_states_topic", system.states_topic)):
        try:
            node.resolve_topic_name(topic)
        except (NameValidationException, InvalidTopicNameException, _rclpy.RCLError) as err:
            raise StartupError(f'{where}: {system.label} <param name="{name}">: {topic!r}: {rcl_problem(err)}') from None
