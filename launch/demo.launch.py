"""Demo: the simulation (sim.launch.py, with RViz) and the demo controller tracking sine targets.

Arguments: those of sim.launch.py (its docstring says what each does; node-parameter ones default
to "": params_file's value, else the node's default; the command line wins over params_file), with
other defaults for robot and rviz, and the controller's parameters file:
  namespace                namespace of both nodes (r1: /r1/mb_sim, /r1/mb_sim_demo_controller).
  use_sim_time             true/false: the controller and RViz follow /clock (default: true).
  robot                    URDF or xacro shipped in share/mb_sim/urdf (name) or a path (default: arm6).
  urdf_file                alias of robot (wins when both are given).
  robot_description        URDF text; wins over robot_description_topic, urdf_file and robot.
  robot_description_topic  read the URDF from this topic (std_msgs/String, transient local).
  xacro_args               arguments of a .xacro robot: "a:=1 b:=2".
  start_paused             true: start paused (~/pause with data: false to go on).
  initial_positions        initial joint positions [rad or m]: "elbow_joint:=1.0" or "{elbow_joint: 1.0}".
  objects                  objects beside the robot, ';'-separated: "name=box shape=box size=0.1,0.1,0.1
                           xyz=0.5,0,0.05; name=ball shape=sphere size=0.05 xyz=0.5,0.3,0.05" (docs/contact.md).
  publish_rate             rate of /joint_states [Hz] (node default 100).
  physics_dt               physics step [s] (node default 0.001).
  real_time_factor         simulated seconds per wall-clock second; 0 as fast as possible (node default 1.0).
  lockstep                 true: advance one publish period per command (the controller answers each
                           /joint_states with one).
  strict                   true: refuse a URDF the loader would repair instead of loading it with
                           the repairs logged.
  floating_base            true: join the root link to the world by a floating joint instead of
                           fixing it.
  log_level                log level of both nodes: debug, info, warn, error, fatal (default: info).
  params_file              YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  rviz                     true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: true);
                           without the rviz2 package, nothing starts (status 1, pass rviz:=false).
  controller_params_file   YAML with mb_sim_demo_controller parameters
                           (default: share/mb_sim/config/demo_controller.yaml).

Example: ros2 launch mb_sim demo.launch.py robot:=double_pendulum
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

SIM_ARGUMENTS = ("namespace", "use_sim_time", "robot", "urdf_file", "robot_description", "robot_description_topic",
                 "xacro_args", "start_paused", "initial_positions", "publish_rate", "physics_dt", "real_time_factor",
                 "lockstep", "strict", "floating_base", "objects", "log_level", "params_file", "rviz")
CONTROLLER = "mb_sim_demo_controller"


def _controller(context) -> list:
    """The demo controller, in the simulation's namespace, with its parameters file."""
    controller = launch_arguments.helper_node(context.launch_configurations, CONTROLLER)
    return [Node(**controller.options(CONTROLLER, CONTROLLER))]


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("mb_sim")
    defaults = {"robot": "arm6", "rviz": "true", "params_file": PathJoinSubstitution([share, "config", "mb_sim.yaml"])}
    return LaunchDescription([
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(SIM_ARGUMENTS, **defaults)],
        DeclareLaunchArgument(
            "controller_params_file",
            default_value=PathJoinSubstitution([share, "config", "demo_controller.yaml"]),
            description="YAML file with mb_sim_demo_controller parameters"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "sim.launch.py"])),
            launch_arguments={name: LaunchConfiguration(name) for name in SIM_ARGUMENTS}.items(),
        ),
        OpaqueFunction(function=_controller),  # after the simulation launch file checked its arguments
    ])
