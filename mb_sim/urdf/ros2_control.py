"""The URDF's ``<ros2_control>`` elements, which urdf_parser_py ignores: which joints a ros2_control
hardware commands, on which interfaces, and the parameters of its ``<hardware>``.

mb_sim serves the topic-based hardware of ros-controls' topic_based_hardware_interfaces
(``joint_state_topic_hardware_interface/JointStateTopicSystem``, formerly
``topic_based_ros2_control/TopicBasedSystem``): that plugin publishes the commands as a
``sensor_msgs/JointState`` on ``joint_commands_topic`` and reads the state from
``joint_states_topic``; the defaults below are the plugin's (its source, not its README, which
says "/robot_joint_command").
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from mb_sim.urdf.description import ForceTorqueDescription, IMUDescription
from mb_sim.urdf.errors import URDFError, URDFWarning, warn_user
from mb_sim.urdf.xml_document import parse_document  # the loader's reading (urdfdom's leniency, no entities)

__all__ = ["COMMAND_INTERFACES", "DEFAULT_COMMANDS_TOPIC", "DEFAULT_STATES_TOPIC", "TOPIC_PLUGINS",
           "Ros2ControlJoint", "Ros2ControlSystem", "check_systems", "initial_positions", "read_ros2_control",
           "read_ros2_control_sensors", "ros2_control_systems"]

#: The hardware plugins whose topics mb_sim serves (the second is the deprecated name).
TOPIC_PLUGINS = ("joint_state_topic_hardware_interface/JointStateTopicSystem",
                 "topic_based_ros2_control/TopicBasedSystem")
#: The plugin's default topics (joint_commands_topic, joint_states_topic).
DEFAULT_COMMANDS_TOPIC = "/robot_joint_commands"
DEFAULT_STATES_TOPIC = "/robot_joint_states"
#: The plugin's default trigger_joint_command_threshold: it publishes a command only when the
#: commands differ from the state by more (summed over joints and interfaces); -1: always.
DEFAULT_THRESHOLD = 1e-5
#: The command interfaces a JointState carries, hence the ones mb_sim serves.
COMMAND_INTERFACES = ("position", "velocity", "effort")


@dataclass(frozen=True)
class Ros2ControlJoint:
    """One ``<joint>`` of a ``<ros2_control>``: its command interfaces in document order, the
    joint it mimics (``<param name="mimic">``; mb_sim's own mimic constraint moves it), and the
    position its hardware starts at (the position state interface's ``initial_value``)."""

    name: str
    command_interfaces: tuple[str, ...]
    mimic: str | None = None
    initial_position: float | None = None


@dataclass(frozen=True)
class Ros2ControlSystem:
    """One ``<ros2_control>`` element: its name, the ``<hardware>`` plugin and parameters, its joints."""

    name: str
    plugin: str
    parameters: dict[str, str] = field(default_factory=dict)
    joints: tuple[Ros2ControlJoint, ...] = ()

    @property
    def label(self) -> str:
        """How messages name the element: ``<ros2_control name="arm">``."""
        return f'<ros2_control name="{self.name}">'

    @property
    def topic_based(self) -> bool:
        """Whether its hardware is the topic-based plugin (whose topics mb_sim serves)."""
        return self.plugin in TOPIC_PLUGINS

    @property
    def commands_topic(self) -> str:
        """Where the hardware publishes its commands."""
        return self.parameters.get("joint_commands_topic", DEFAULT_COMMANDS_TOPIC)

    @property
    def states_topic(self) -> str:
        """Where the hardware reads the joints' state."""
        return self.parameters.get("joint_states_topic", DEFAULT_STATES_TOPIC)

    @property
    def threshold(self) -> float:
        """trigger_joint_command_threshold (NaN when not a number: the plugin would refuse it)."""
        try:
            return float(self.parameters.get("trigger_joint_command_threshold", DEFAULT_THRESHOLD))
        except ValueError:
            return math.nan

    @property
    def interfaces(self) -> dict[str, tuple[str, ...]]:
        """Command interfaces by joint name."""
        return {joint.name: joint.command_interfaces for joint in self.joints}


def ros2_control_systems(text: str, source: str = "<string>") -> list[Ros2ControlSystem]:
    """The ``<ros2_control>`` elements of URDF `text` (XML read as the URDF loader reads it)."""
    root, _ = parse_document(text, source)
    return read_ros2_control(root, source)


def read_ros2_control(root: ET.Element, source: str) -> list[Ros2ControlSystem]:
    """The ``<ros2_control>`` children of the URDF document element `root` (`source` names the
    file in errors).  Only elements with the topic-based hardware are checked (a ``<joint>``
    without a name, one listed twice, a command interface a JointState cannot carry); others,
    for hardware mb_sim does not serve, are read as they are."""
    return [_system(element, k, source) for k, element in enumerate(root.findall("ros2_control"))]


def _system(element: ET.Element, index: int, source: str) -> Ros2ControlSystem:
    """One ``<ros2_control>`` element, read."""
    name = element.get("name") or f"#{index + 1}"
    label = f'<ros2_control name="{name}">'
    hardware = element.find("hardware")
    plugin = (hardware.findtext("plugin") or "").strip() if hardware is not None else ""
    parameters = _parameters(hardware) if hardware is not None else {}
    checked = plugin in TOPIC_PLUGINS
    joints = tuple(_joint(joint, label, source, checked) for joint in element.findall("joint")
                   if checked or joint.get("name"))
    repeated = sorted({j.name for j in joints if sum(k.name == j.name for k in joints) > 1})
    if repeated and checked:
        raise URDFError(source, f'{label} <joint name="{repeated[0]}">', "joint listed twice")
    return Ros2ControlSystem(name, plugin, parameters, joints)


def _parameters(element: ET.Element) -> dict[str, str]:
    """The ``<param name="...">value</param>`` children of `element` (nameless ones skipped)."""
    return {param.get("name"): (param.text or "").strip() for param in element.findall("param") if param.get("name")}


def _joint(element: ET.Element, system: str, source: str, checked: bool) -> Ros2ControlJoint:
    """One ``<joint>`` of a ``<ros2_control>``: its command interfaces (`checked`: to be ones a
    JointState carries), and its mimic parameter."""
    name = element.get("name")
    if not name:
        raise URDFError(source, f"{system} <joint>", "a <joint> without a name")
    label = f'{system} <joint name="{name}">'
    interfaces = tuple(interface.get("name") or "" for interface in element.findall("command_interface"))
    for interface in interfaces if checked else ():
        if interface not in COMMAND_INTERFACES:
            raise URDFError(source, f'{label} <command_interface name="{interface}">',
                            f"mb_sim serves the command interfaces {', '.join(COMMAND_INTERFACES)} only")
    if checked and len(set(interfaces)) < len(interfaces):
        raise URDFError(source, label, "a command interface listed twice")
    mimic = _parameters(element).get("mimic") or ("(its URDF <mimic>)" if element.get("mimic") == "true" else None)
    return Ros2ControlJoint(name, interfaces, mimic, _initial_position(element, label, source, checked))


def _initial_position(element: ET.Element, label: str, source: str, checked: bool) -> float | None:
    """The ``initial_value`` of a joint's ``<state_interface name="position">`` (where ros2_control's
    simulated hardware, Gazebo's and the mock, start the joint), or None.  Not a finite number:
    refused for the topic-based hardware (`checked`), not used for other hardware."""
    for interface in element.findall("state_interface"):
        text = _parameters(interface).get("initial_value") if interface.get("name") == "position" else None
        if text is None:
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return value
        if checked:
            raise URDFError(source, f'{label} <state_interface name="position">',
                            f"initial_value {text!r} is not a finite number")
    return None


def initial_positions(systems: list[Ros2ControlSystem], joints: Collection[str]) -> dict[str, float]:
    """The ``initial_value`` positions of `systems` for `joints` (the robot's independent one-DoF
    joints: a mimic joint's position follows its reference)."""
    return {joint.name: joint.initial_position for system in systems for joint in system.joints
            if joint.initial_position is not None and joint.mimic is None and joint.name in joints}


def check_systems(systems: list[Ros2ControlSystem], source: str, joints: Collection[str],
                  actuated: Collection[str], servoed: Collection[str], motorized: Mapping[str, str],
                  mimics: Collection[str] = ()) -> None:
    """Refuse topic-based `systems` mb_sim cannot serve, one line naming the element: a joint the
    robot lacks (`joints`: its one-DoF joints), a command interface on a joint that cannot take it
    (efforts on `actuated` joints not driven by a motor of `motorized`, positions and velocities
    on `servoed` ones), a joint in two systems, two systems on one command topic.  Mimic joints
    (`mimics`: the URDF's; or marked so in the element) are state only: not checked."""
    seen: dict[str, str] = {}
    topics: dict[str, str] = {}
    for system in systems:
        if system.commands_topic in topics:
            raise URDFError(source, system.label, f"joint_commands_topic {system.commands_topic} is also that of "
                                                  f"{topics[system.commands_topic]}: give each <hardware> its own "
                                                  '<param name="joint_commands_topic">')
        topics[system.commands_topic] = system.label
        for joint in system.joints:
            label = f'{system.label} <joint name="{joint.name}">'
            if joint.name in seen:
                raise URDFError(source, label, f"the joint is also in {seen[joint.name]}")
            seen[joint.name] = system.label
            if joint.name not in mimics:
                _check_joint(joint, label, source, joints, actuated, servoed, motorized)
            elif joint.name not in joints:
                raise URDFError(source, label, "the robot has no such moving joint")


def _check_joint(joint: Ros2ControlJoint, label: str, source: str, joints: Collection[str],
                 actuated: Collection[str], servoed: Collection[str], motorized: Mapping[str, str]) -> None:
    """One joint of a topic-based system: it exists and takes each of its command interfaces."""
    if joint.name not in joints:
        raise URDFError(source, label, f"the robot has no such moving joint (one-DoF joints: {', '.join(joints)})")
    if joint.mimic is not None or not joint.command_interfaces:
        return  # state only: mb_sim's mimic constraint moves a mimic joint
    if joint.name in motorized:
        raise URDFError(source, label, f"a DC motor ({motorized[joint.name]!r}) drives this joint: mb_sim takes "
                                       "its voltage, not ros2_control commands")
    wanted = "servoed" if {"position", "velocity"} & set(joint.command_interfaces) else "actuated"
    if joint.name not in (servoed if wanted == "servoed" else actuated):
        raise URDFError(source, label, f"the joint is not {wanted} in mb_sim (a passive or constrained joint): "
                                       f"it cannot take {'/'.join(joint.command_interfaces)} commands")


#: State interfaces of ros2_control's semantic components: an IMU's (IMUSensor) and a
#: force-torque sensor's (ForceTorqueSensor), ``<prefix>.x|y|z|w``.
IMU_INTERFACES = ("orientation", "angular_velocity", "linear_acceleration")
FORCE_TORQUE_INTERFACES = ("force", "torque")


def read_ros2_control_sensors(root: ET.Element, source: str, parent_joints: Mapping[str, str],
                              declared: Collection[str]) -> tuple[list[IMUDescription], list[ForceTorqueDescription]]:
    """The IMUs and force-torque sensors the ``<sensor>`` elements of ``<ros2_control>`` declare
    (ros2_control's convention: state interfaces ``orientation.x`` ... ``linear_acceleration.z``
    for an IMU, ``force.x`` ... ``torque.z`` for a force-torque sensor, the sensor's link in
    ``<param name="frame_id">``, else a link of the sensor's name).

    `parent_joints` maps each link to the joint above it (a force-torque sensor measures there,
    child_to_parent: what a sensor between the two reads, SDFormat's default); a sensor whose name
    is in `declared` (a Gazebo ``<sensor>`` of the same name, as gz_ros2_control pairs them) is
    that one.  A sensor with neither kind of interface, or no link, is warned about, not read."""
    imus, force_torques = [], []
    for system_index, system in enumerate(root.findall("ros2_control")):
        system_label = f'<ros2_control name="{system.get("name") or f"#{system_index + 1}"}">'
        for sensor in system.findall("sensor"):
            name = (sensor.get("name") or "").strip()
            label = f'{system_label} <sensor name="{name}">'
            if not name or name in declared:
                continue
            prefixes = {(interface.get("name") or "").split(".")[0] for interface in sensor.findall("state_interface")}
            kind = ("imu" if prefixes & set(IMU_INTERFACES) else
                    "force_torque" if prefixes & set(FORCE_TORQUE_INTERFACES) else None)
            link = _parameters(sensor).get("frame_id") or (name if name in parent_joints or kind is None else "")
            if kind is None:
                warn_user(f"{source}: {label}: not simulated: mb_sim reads IMUs (state interfaces "
                          f"{', '.join(i + '.*' for i in IMU_INTERFACES)}) and force-torque sensors "
                          f"({', '.join(i + '.*' for i in FORCE_TORQUE_INTERFACES)})", URDFWarning)
            elif link not in parent_joints:
                warn_user(f"{source}: {label}: not simulated: "
                          + (f"frame_id '{link}' is no link of the robot" if link else
                             'no <param name="frame_id"> naming its link'), URDFWarning)
            elif kind == "imu":
                imus.append(IMUDescription(name, link, declared_in="ros2_control sensor"))
            elif parent_joints[link] is None:
                warn_user(f"{source}: {label}: not simulated: frame_id '{link}' is the root link "
                          "(a force-torque sensor measures at the joint above its link)", URDFWarning)
            else:
                force_torques.append(ForceTorqueDescription(name, parent_joints[link], "child", "child_to_parent",
                                                            "ros2_control sensor"))
    return imus, force_torques
