"""A differential-drive robot driven from /cmd_vel, with RViz: seed 002's (urdf/diff_drive.urdf, its
wheels rolling by constraint), or a wheeled base on the ground by contact (robot:=wheeled_base,
urdf/wheeled_base.urdf: a TurtleBot-like base whose wheels roll by friction, a low-friction caster).

mb_sim_node simulates the robot (world_frame odom: TF and the ground-truth
/odom in the frame odom); mb_sim_diff_drive_controller turns /cmd_vel (geometry_msgs/TwistStamped
by default; a publisher of plain Twist, as teleop_twist_keyboard without -p stamped:=true, gets
one warning saying what to change: use_stamped_vel: false in controller_params_file takes Twist)
into motor voltages and publishes its wheel odometry on /mb_sim_diff_drive_controller/odom; RViz
shows the robot, both odometries and TF in the fixed frame odom.

Fixed here (not arguments): world_frame odom (urdf_file, robot_description, robot_description_topic
and xacro_args are not offered: the robot comes from robot).

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file):
  robot                   diff_drive (default) or wheeled_base, or any URDF whose two wheel joints
                          have a <dc_motor> (a <rolling_wheel> or a collision cylinder on the ground).
  namespace               namespace of all nodes (r1: /r1/mb_sim, /r1/cmd_vel, /r1/odom); /tf, /tf_static,
                          /clock stay global; RViz is remapped to it (default: none).
  use_sim_time            true/false: the controller and RViz follow /clock (default: true).
  start_paused            true: start paused (~/pause with data: false, or ~/step, to go on).
  initial_positions       initial joint positions [rad or m], e.g. "left_wheel_joint:=0.5".
  publish_rate            rate of /joint_states, /odom, /tf [Hz of sim time]: the controller's
                          loop rate (node default 100).
  physics_dt              physics step [s] (node default 0.001).
  real_time_factor        simulated seconds per wall-clock second; 0 runs as fast as possible
                          (node default 1.0).
  lockstep                true: advance one publish period per command (the controller answers each
                          /joint_states with one).
  strict                  true: refuse a URDF the loader would repair instead of loading it with
                          the repairs logged.
  log_level               log level of both mb_sim nodes: debug, info, warn, error, fatal (default: info).
  params_file             YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  controller_params_file  YAML with mb_sim_diff_drive_controller parameters
                          (default: share/mb_sim/config/diff_drive_controller.yaml).
  rviz                    true: also start RViz with share/mb_sim/config/diff_drive.rviz (default: true);
                          without the rviz2 package, nothing starts (status 1, pass rviz:=false).

Example: ros2 launch mb_sim diff_drive.launch.py (or robot:=wheeled_base), then
  ros2 topic pub -r 10 /cmd_vel geometry_msgs/msg/TwistStamped "{twist: {linear: {x: 0.5}, angular: {z: 0.3}}}"
or, namespaced: ros2 launch mb_sim diff_drive.launch.py namespace:=r1 rviz:=false, then
  ros2 topic pub -r 10 /r1/cmd_vel geometry_msgs/msg/TwistStamped "{twist: {linear: {x: 0.5}}}"
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

ARGUMENTS = ("robot", "namespace", "use_sim_time", "start_paused", "initial_positions", "publish_rate", "physics_dt",
             "real_time_factor", "lockstep", "strict", "log_level", "params_file", "rviz")
CONTROLLER = "mb_sim_diff_drive_controller"
#: The node parameters this launch file fixes.
FIXED = {"robot_description": "", "robot_description_topic": "", "xacro_args": "", "world_frame": "odom"}
#: The absolute topics config/diff_drive.rviz shows: remapped into the namespace.
RVIZ_TOPICS = ("/robot_description", "/odom", "/mb_sim_diff_drive_controller/odom")


def _nodes(context, rviz_config) -> list:
    """The simulation, the controller, and RViz if asked; a bad argument (or rviz:=true without
    rviz2) stops the launch here, before any process has started."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    simulation = launch_arguments.simulation_node(configurations, FIXED)
    controller = launch_arguments.helper_node(configurations, CONTROLLER)
    nodes = [
        Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE)),
        Node(**controller.options(CONTROLLER, CONTROLLER)),
    ]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config, RVIZ_TOPICS)))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    defaults = {"robot": "diff_drive", "rviz": "true", "params_file": PathJoinSubstitution([config, "mb_sim.yaml"])}
    return LaunchDescription([
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(ARGUMENTS, **defaults)],
        DeclareLaunchArgument(
            "controller_params_file", default_value=PathJoinSubstitution([config, "diff_drive_controller.yaml"]),
            description="YAML file with mb_sim_diff_drive_controller parameters"),
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "diff_drive.rviz"])]),
    ])
