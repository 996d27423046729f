"""Simulate a robot under ros2_control without C++ in the simulator: mb_sim_node serves the topics of
the URDF's topic-based ros2_control hardware (joint_state_topic_hardware_interface/JointStateTopicSystem),
controller_manager's ros2_control_node loads that hardware and the controllers, spawners start them.
The controller manager reads the URDF from mb_sim_node's robot_description topic (transient local):
no robot_state_publisher needed.  Without the controller_manager package (ros-<distro>-ros2-control,
ros-<distro>-ros2-controllers, ros-<distro>-topic-based-hardware-interfaces) only the simulation
starts, and a line says what is missing.

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file):
  namespace          namespace of all the nodes (the hardware's topics in the URDF are absolute).
  use_sim_time       true/false: the controller manager and controllers follow /clock (default: true).
  robot              URDF or xacro with a topic-based <ros2_control>: a name shipped in
                     share/mb_sim/urdf or a path (default: arm6_ros2_control).
  urdf_file          alias of robot (wins when both are given).
  robot_description  URDF text; wins over robot_description_topic, urdf_file and robot.
  robot_description_topic  read the URDF from this topic (std_msgs/String, transient local);
                     wins over urdf_file and robot.
  xacro_args         arguments of a .xacro robot as on xacro's command line: "a:=1 b:=2".
  start_paused       true: start paused (~/pause with data: false, or ~/step, to go on).
  initial_positions  initial joint positions [rad or m]: "elbow_joint:=1" or "{elbow_joint: 1}".
  publish_rate       rate of /joint_states, the hardware's state topic and /clock [Hz of sim time].
  physics_dt         physics step [s] (node default 0.001).
  real_time_factor   simulated seconds per wall-clock second (node default 1.0).
  lockstep           true: each command advances one publish period (give the hardware
                     trigger_joint_command_threshold -1 so that it sends every controller period).
  strict             true: refuse a URDF the loader would repair.
  floating_base      true: join the root link to the world by a floating joint instead of fixing it.
  log_level          log level of the nodes: debug, info, warn, error, fatal (default: info).
  params_file        YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  rviz               true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: false).
  controllers_file   controller_manager's YAML (default: share/mb_sim/config/arm6_ros2_control.yaml).
  controllers        controllers to spawn, in order (default: "joint_state_broadcaster
                     joint_trajectory_controller").

A bad value stops the launch before any process starts, with one line naming the argument.

Example: ros2 launch mb_sim ros2_control.launch.py
"""
from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

ARGUMENTS = ("namespace", "use_sim_time", "robot", "urdf_file", "robot_description", "robot_description_topic",
             "xacro_args", "start_paused", "initial_positions", "publish_rate", "physics_dt", "real_time_factor",
             "lockstep", "strict", "floating_base", "log_level", "params_file", "rviz")
#: The absolute topics config/mb_sim.rviz shows: remapped into the namespace.
RVIZ_TOPICS = ("/robot_description", "/mb_sim/springs", "/mb_sim/contact_markers")
#: Arguments of this launch file only: name -> (default, description); controllers_file's default is
#: the shipped YAML (set in generate_launch_description).
OWN_ARGUMENTS = {
    "controllers_file": "controller_manager's parameters and the controllers' (YAML)",
    "controllers": "Controllers to spawn, in order, separated by spaces",
}
DEFAULT_CONTROLLERS = "joint_state_broadcaster joint_trajectory_controller"


def _controller_manager_installed() -> bool:
    try:
        get_package_prefix("controller_manager")
    except (PackageNotFoundError, OSError):  # OSError: no ROS 2 environment at all (AMENT_PREFIX_PATH unset)
        return False
    return True


def _nodes(context, rviz_config) -> list:
    """The simulation node, RViz if asked; the controller manager and its spawners where
    controller_manager is installed.  A bad argument stops the launch here, before any process
    has started."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    simulation = launch_arguments.simulation_node(configurations)
    nodes = [Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE))]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config, RVIZ_TOPICS)))
    if not _controller_manager_installed():
        return [*nodes, LogInfo(msg="ros2_control.launch.py: the controller_manager package is not installed: "
                                    "only the simulation runs (install ros-<distro>-ros2-control, "
                                    "ros-<distro>-ros2-controllers, ros-<distro>-topic-based-hardware-interfaces)")]
    controllers_file = configurations["controllers_file"]
    use_sim_time = {"use_sim_time": launch_arguments.flag(configurations, "use_sim_time", True)}
    nodes.append(Node(package="controller_manager", executable="ros2_control_node", namespace=simulation.namespace,
                      output="screen", parameters=[controllers_file, use_sim_time],
                      ros_arguments=simulation.ros_arguments))
    for controller in configurations.get("controllers", DEFAULT_CONTROLLERS).split():
        nodes.append(Node(package="controller_manager", executable="spawner", namespace=simulation.namespace,
                          output="screen", arguments=[controller, "--param-file", controllers_file]))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    defaults = {"params_file": PathJoinSubstitution([config, "mb_sim.yaml"]), "robot": "arm6_ros2_control"}
    own = {"controllers_file": PathJoinSubstitution([config, "arm6_ros2_control.yaml"]),
           "controllers": DEFAULT_CONTROLLERS}
    return LaunchDescription([
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(ARGUMENTS, **defaults)],
        *[DeclareLaunchArgument(name, default_value=own[name], description=description)
          for name, description in OWN_ARGUMENTS.items()],
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "mb_sim.rviz"])]),
    ])
