"""A Franka Panda picks a box from a table and places it 20 cm away, through the simulator's topics;
RViz if asked.

The node gets a robot_description made here from example-robot-data's Panda with a topic-based
<ros2_control> element holding its arm at the "ready" pose from the start (position interfaces whose
initial_value is the pose: no controller is needed to keep it up), and two objects (the node's
objects parameter): a fixed table (0.6 x 0.8 x 0.4 m) and a 4 cm, 100 g box on it (friction 1,
touching the hand and the fingers).  mb_sim_pick_and_place, a client like any other, reads the
description and the box's entity state (simulation_interfaces), plans straight lines of the tool
point by inverse kinematics, sends them as one ~/joint_trajectory, waits in sim time and logs where
the box ended (exit status 0 within 2 cm of its place).  RViz shows the arm, the table and the box.

Fixed here (not arguments): the robot source (robot_description; robot, urdf_file,
robot_description_topic, xacro_args, initial_positions and floating_base are not offered: the pose
is the <ros2_control> element's), the objects, servo_feed_forward false (the computed-torque
feed-forward would cancel the fingers' squeeze) and servo_frequency 20 Hz.

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file):
  urdf              the Panda URDF (default: example-robot-data's panda_description/urdf/panda.urdf,
                    found as mb_sim finds package:// meshes).
  namespace         namespace of both nodes; RViz is remapped to it (default: none).
  use_sim_time      true/false: the client and RViz follow /clock (default: true).
  start_paused      true: start paused (~/pause with data: false to go on).
  publish_rate      rate of /joint_states, /tf and /clock [Hz of sim time] (node default 100).
  physics_dt        physics step [s] (node default 0.001).
  real_time_factor  simulated seconds per wall-clock second; 0 runs as fast as possible (node default 1.0).
  lockstep          true: advance one publish period per command, wait otherwise.
  strict            true: refuse a URDF the loader would repair instead of loading it.
  log_level         log level of both nodes: debug, info, warn, error, fatal (default: info).
  params_file       YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  rviz              true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: false).

Example: ros2 launch mb_sim pick_and_place.launch.py rviz:=true
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments
from mb_sim.sim.pick_place import PANDA

ARGUMENTS = ("namespace", "use_sim_time", "start_paused", "publish_rate", "physics_dt", "real_time_factor",
             "lockstep", "strict", "log_level", "params_file", "rviz")
PANDA_URDF = "robots/panda_description/urdf/panda.urdf"
CLIENT = "mb_sim_pick_and_place"
OBJECTS = ["name=table shape=box size=0.6,0.8,0.4 xyz=0.55,0,0.2 fixed rgba=0.6,0.6,0.6,1",
           "name=box shape=box size=0.04,0.04,0.04 mass=0.1 xyz=0.5,-0.1,0.42 friction=1 "
           "touches=panda_hand,panda_leftfinger,panda_rightfinger"]
RVIZ_TOPICS = ("/robot_description",)


def panda_urdf(text: str) -> Path:
    """The Panda URDF given, else example-robot-data's where mb_sim looks for it."""
    return Path(text).expanduser() if text else launch_arguments.example_robot_data(PANDA_URDF, "urdf")


def held_description(path: Path) -> str:
    """The URDF at `path` with a topic-based <ros2_control> holding the arm and gripper at PANDA's
    home pose, open."""
    try:
        xml = path.read_text()
    except OSError as err:
        raise launch_arguments.LaunchArgumentError("urdf", f"{path}: {err}") from None
    pose = {**dict(zip(PANDA.arm_joints, PANDA.home)), PANDA.gripper_joint: PANDA.gripper_open}
    control = launch_arguments.position_hold("ready", pose)
    if "</robot>" not in xml:
        raise launch_arguments.LaunchArgumentError("urdf", f"{path}: not a URDF (no </robot>)")
    end = xml.rindex("</robot>")
    return xml[:end] + control + xml[end:]


def _nodes(context, rviz_config) -> list:
    """The simulation, the pick-and-place client, and RViz if asked; a bad argument stops the
    launch here."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    path = panda_urdf(str(configurations.get("urdf", "")).strip())
    fixed = {"robot_description": held_description(path), "robot_description_topic": "", "urdf_file": "",
             "xacro_args": "", "objects": OBJECTS, "servo_feed_forward": False, "servo_frequency": 20.0}
    simulation = launch_arguments.simulation_node(configurations, fixed)
    client = launch_arguments.helper_node(configurations, CLIENT, params_file="")
    nodes = [Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE)),
             Node(**client.options(CLIENT, "pick_and_place"))]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config, RVIZ_TOPICS)))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    defaults = {"params_file": PathJoinSubstitution([config, "mb_sim.yaml"])}
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="",
                              description="The Panda URDF (default: example-robot-data's panda.urdf)"),
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(ARGUMENTS, **defaults)],
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "mb_sim.rviz"])]),
    ])
