"""Start the mb_sim simulation node for one robot, and RViz if asked.

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file):
  namespace                namespace of the node (r1: /r1/mb_sim, /r1/joint_states); /tf, /tf_static,
                           /clock and /diagnostics stay global; RViz is remapped to it (default: none).
  use_sim_time             true/false: RViz follows /clock (default: true); the simulation node
                           publishes /clock and keeps wall time itself.
  robot                    URDF or xacro shipped in share/mb_sim/urdf (name, with or without .urdf) or
                           a path: the node's urdf_file (default: params_file's, else pendulum).
  urdf_file                alias of robot (wins when both are given).
  robot_description        URDF text, e.g. robot_description:="$(cat my.urdf)"; wins over
                           robot_description_topic, urdf_file and robot.
  robot_description_topic  read the URDF from this topic (std_msgs/String, transient local, e.g.
                           robot_state_publisher's /robot_description); wins over urdf_file and robot.
  xacro_args               arguments of a .xacro robot as on xacro's command line: "a:=1 b:=2".
  start_paused             true: start paused (~/pause with data: false, or ~/step, to go on).
  initial_positions        initial joint positions [rad or m]: "hinge:=0.5 elbow:=1" or "{hinge: 0.5}".
  objects                  objects beside the robot, ';'-separated: "name=box shape=box size=0.1,0.1,0.1
                           xyz=0.5,0,0.05; name=ball shape=sphere size=0.05 xyz=0.5,0.3,0.05" (docs/contact.md).
  publish_rate             rate of /joint_states, /tf and /clock [Hz of sim time] (node default 100).
  physics_dt               physics step [s] (node default 0.001).
  real_time_factor         simulated seconds per wall-clock second; 0 runs as fast as possible
                           (node default 1.0).
  lockstep                 true: advance one publish period per command, wait otherwise.
  strict                   true: refuse a URDF the loader would repair (inertias, a mimic on a fixed
                           joint) instead of loading it with the repairs logged.
  floating_base            true: join the root link to the world by a floating joint (6 DoF) instead of
                           fixing it (a root link named world is the world itself).
  log_level                log level of the node (--ros-args --log-level): debug, info, warn, error,
                           fatal (default: info).
  params_file              YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml);
                           its key mb_sim applies in any namespace.
  rviz                     true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: false);
                           without the rviz2 package, nothing starts (status 1, pass rviz:=false).

A bad value stops the launch before any process starts, with one line naming the argument.

Example: ros2 launch mb_sim sim.launch.py robot:=arm6 namespace:=r1 initial_positions:="elbow_joint:=1.0" rviz:=true
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

ARGUMENTS = ("namespace", "use_sim_time", "robot", "urdf_file", "robot_description", "robot_description_topic",
             "xacro_args", "start_paused", "initial_positions", "publish_rate", "physics_dt", "real_time_factor",
             "lockstep", "strict", "floating_base", "objects", "log_level", "params_file", "rviz")
#: The absolute topics config/mb_sim.rviz shows: remapped into the namespace.
RVIZ_TOPICS = ("/robot_description", "/mb_sim/springs", "/mb_sim/contact_markers")


def _nodes(context, rviz_config) -> list:
    """The simulation node, and RViz if asked; a bad argument (or rviz:=true without rviz2) stops
    the launch here, before any process has started."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    simulation = launch_arguments.simulation_node(configurations)
    nodes = [Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE))]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config, RVIZ_TOPICS)))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    defaults = {"params_file": PathJoinSubstitution([config, "mb_sim.yaml"])}
    return LaunchDescription([
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(ARGUMENTS, **defaults)],
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "mb_sim.rviz"])]),
    ])
