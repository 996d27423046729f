"""Go1 (example-robot-data) standing on the ground plane, its joints held by position servos; RViz if asked.

The node gets a robot_description made here from the Go1 URDF: a floating joint root_joint whose
origin is the drop height (`height`), the ground plane z = 0 under the four feet (<mb_sim><ground
links="FR_foot ..." stiction="true">: exact Coulomb friction, the feet hold on a slope; the other
parameters the defaults chosen from Go1's mass and its feet) and a topic-based <ros2_control> element
giving the twelve leg joints a position interface whose initial_value is the stance (hips 0, thighs
0.85 rad, calves -1.7 rad).  The servos hold the stance from the start, so the robot drops about
2 cm, settles within a second and stands (base about 0.29 m up): no controller is needed.  Send
other positions on ~/joint_commands (sensor_msgs/JointState) or through ros2_control's
JointStateTopicSystem (/robot_joint_commands).  RViz (rviz:=true) shows the contact forces as arrows
(~/contact_markers); each foot's contact wrench is on ~/contacts/<foot link>, and the IMU of Go1's
imu_link (on the trunk) on ~/imu/imu (sensor_msgs/Imu).

Fixed here (not arguments): the robot source (robot_description; robot, urdf_file,
robot_description_topic, xacro_args, initial_positions and floating_base are not offered: the
stance is the <ros2_control> element's), servo_feed_forward false (the computed-torque
feed-forward cancels the joints' share of the contact forces: plain PD stands) and servo_frequency
30 Hz (default gains critically damped at 30 Hz: thighs about 285 N m/rad, calves about 84 N m/rad;
gains.<joint>.p and .d in params_file override them).

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file):
  urdf              the Go1 URDF (default: example-robot-data's go1_description/urdf/go1.urdf, found
                    as mb_sim finds package:// meshes); another file must have Go1's joint names.
  height            the base's height at the start [m] (default: 0.32).
  namespace         namespace of the node; RViz is remapped to it (default: none).
  use_sim_time      true/false: RViz follows /clock (default: true).
  start_paused      true: start paused (~/pause with data: false to go on).
  publish_rate      rate of /joint_states, /tf, /odom and /clock [Hz of sim time] (node default 100).
  physics_dt        physics step [s] (node default 0.001: the ground's parameters are set for it).
  real_time_factor  simulated seconds per wall-clock second; 0 runs as fast as possible (node default 1.0).
  lockstep          true: advance one publish period per command, wait otherwise.
  strict            true: refuse a URDF the loader would repair (Go1's base inertia) instead of loading it.
  log_level         log level of the node: debug, info, warn, error, fatal (default: info).
  params_file       YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  rviz              true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: false).

Example: ros2 launch mb_sim quadruped.launch.py rviz:=true
"""
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

ARGUMENTS = ("namespace", "use_sim_time", "start_paused", "publish_rate", "physics_dt", "real_time_factor",
             "lockstep", "strict", "log_level", "params_file", "rviz")
GO1 = "robots/go1_description/urdf/go1.urdf"
#: Go1's stance [rad]; servo frequency [Hz]; the ground under the feet, with stiction (feet hold where
#: they stand instead of creeping at the regularized law's speed), and an IMU on imu_link.
STANCE = {f"{leg}_{part}_joint": angle for leg in ("FR", "FL", "RR", "RL")
          for part, angle in (("hip", 0.0), ("thigh", 0.85), ("calf", -1.7))}
SERVO_FREQUENCY = 30.0
GROUND = ('<mb_sim><ground stiction="true" links="FR_foot FL_foot RR_foot RL_foot"/>'
          '<imu name="imu" link="imu_link"/></mb_sim>')
RVIZ_TOPICS = ("/robot_description", "/mb_sim/springs", "/mb_sim/contact_markers")


def go1_urdf() -> Path:
    """example-robot-data's Go1, where mb_sim looks for package://example-robot-data."""
    return launch_arguments.example_robot_data(GO1, "urdf")


def standing_description(path: Path, height: float) -> str:
    """The URDF at `path` on a floating joint at `height`, with the ground and the stance held by a
    topic-based <ros2_control> element (see the module docstring)."""
    try:
        xml = path.read_text()
        root = ET.fromstring(xml)
    except (OSError, ET.ParseError) as err:
        raise launch_arguments.LaunchArgumentError("urdf", f"{path}: {err}") from None
    children = {j.find("child").get("link") for j in root.findall("joint") if j.find("child") is not None}
    roots = [link.get("name") for link in root.findall("link") if link.get("name") not in children]
    if len(roots) != 1 or roots[0] == "world":
        raise launch_arguments.LaunchArgumentError("urdf", f"{path}: needs one root link not named world")
    floating = (f'<link name="world"/><joint name="root_joint" type="floating"><origin xyz="0 0 {height!r}"/>'
                f'<parent link="world"/><child link="{roots[0]}"/></joint>')
    control = launch_arguments.position_hold("stance", STANCE)
    start, end = xml.index(">", xml.index("<robot")) + 1, xml.rindex("</robot>")
    return xml[:start] + floating + xml[start:end] + GROUND + control + xml[end:]


def _fixed(configurations) -> dict:
    """The node parameters this file sets: the description, plain-PD servos and their frequency."""
    text = str(configurations.get("urdf", "")).strip()
    height = launch_arguments.number(configurations, "height")
    if height is not None and not (math.isfinite(height) and 0 < height < 10):
        raise launch_arguments.LaunchArgumentError("height", f"must be in (0, 10) m, got {height}")
    description = standing_description(Path(text).expanduser() if text else go1_urdf(),
                                       0.32 if height is None else height)
    return {"robot_description": description, "robot_description_topic": "", "urdf_file": "", "xacro_args": "",
            "servo_feed_forward": False, "servo_frequency": SERVO_FREQUENCY}


def _nodes(context, rviz_config) -> list:
    """The simulation node, and RViz if asked; a bad argument stops the launch here."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    simulation = launch_arguments.simulation_node(configurations, _fixed(configurations))
    nodes = [Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE))]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config, RVIZ_TOPICS)))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    defaults = {"params_file": PathJoinSubstitution([config, "mb_sim.yaml"])}
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="",
                              description="The Go1 URDF (default: example-robot-data's go1.urdf)"),
        DeclareLaunchArgument("height", default_value="0.32", description="The base's height at the start [m]"),
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(ARGUMENTS, **defaults)],
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "mb_sim.rviz"])]),
    ])
