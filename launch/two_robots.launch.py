"""Two robots side by side: two simulation nodes, each with its demo controller, in namespaces
/robot1 and /robot2, with RViz.

Each robot's mb_sim_node (node /robotN/mb_sim) publishes robotN/joint_states and
robotN/robot_description in its namespace and its link frames with the frame_prefix robotN/ on the
global /tf and /tf_static, in its own world_frame robotN/world; static_transform_publisher (tf2_ros)
places robot1/world at y = -0.5 m and robot2/world at y = +0.5 m in world, 1 m apart.  Only robot1
publishes /clock (robot2: publish_clock false): both run at the same real_time_factor, and every
node is on sim time.  Each mb_sim_demo_controller (/robotN/mb_sim_demo_controller) reads its
namespace's joint_states and commands robotN/mb_sim/joint_commands.

Fixed here (not arguments): the namespaces robot1 and robot2 (their frame prefixes, world frames
and the RViz config follow them); each robot's URDF is a file (robot1, robot2): robot_description
text or topics are not offered (start sim.launch.py once per robot with namespace:= for those).

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file; shared ones apply to both robots):
  robot1                    URDF or xacro of /robot1 shipped in share/mb_sim/urdf (name) or a path
                            (default: arm6).
  robot2                    URDF or xacro of /robot2, likewise (default: double_pendulum).
  robot1_xacro_args         arguments of robot1's .xacro: "a:=1 b:=2".
  robot2_xacro_args         arguments of robot2's .xacro.
  robot1_initial_positions  initial joint positions of robot1 [rad or m]: "elbow_joint:=1.0" or
                            "{elbow_joint: 1.0}".
  robot2_initial_positions  initial joint positions of robot2, likewise.
  use_sim_time              true/false: the controllers and RViz follow /clock (default: true).
  start_paused              true: both start paused (~/pause with data: false on each to go on).
  publish_rate              rate of each robot's joint_states [Hz of sim time] (node default 100).
  physics_dt                physics step [s] (node default 0.001).
  real_time_factor          simulated seconds per wall-clock second of both simulations; 0 runs as
                            fast as possible (node default 1.0).
  lockstep                  true: each simulation advances one publish period per command of its
                            controller.
  strict                    true: refuse a URDF the loader would repair instead of loading it.
  log_level                 log level of the mb_sim nodes: debug, info, warn, error, fatal (default: info).
  params_file               YAML with the parameters of both mb_sim_node nodes (default:
                            share/mb_sim/config/mb_sim.yaml; its key mb_sim applies in both
                            namespaces); frame_prefix, world_frame and publish_clock are set here.
  controller_params_file    YAML with the parameters of both mb_sim_demo_controller nodes
                            (default: share/mb_sim/config/demo_controller.yaml); gains are per joint
                            name, so one file serves both robots.
  rviz                      true: also start RViz with share/mb_sim/config/two_robots.rviz (default: true);
                            without the rviz2 package, nothing starts (status 1, pass rviz:=false).

Example: ros2 launch mb_sim two_robots.launch.py robot2:=pendulum
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

#: Namespace (also the launch argument naming its URDF, and its frame prefix), y of its world
#: frame in world [m], whether it publishes /clock.
ROBOTS = (("robot1", -0.5, True), ("robot2", 0.5, False))
#: Arguments both robots share.
ARGUMENTS = ("use_sim_time", "start_paused", "publish_rate", "physics_dt", "real_time_factor", "lockstep",
             "strict", "log_level", "params_file", "rviz")
#: Per robot: "<namespace>_<name>" -> the argument of sim.launch.py it stands for.
PER_ROBOT = ("xacro_args", "initial_positions")
CONTROLLER = "mb_sim_demo_controller"


def _robot_configurations(configurations, namespace: str) -> dict:
    """The arguments as one robot's simulation sees them: its namespace, URDF, xacro arguments and
    initial positions."""
    own = {name: configurations.get(f"{namespace}_{name}", "") for name in PER_ROBOT}
    launch_arguments.xacro_args(configurations, f"{namespace}_xacro_args")  # errors name the robot's argument
    launch_arguments.initial_positions(own["initial_positions"], f"{namespace}_initial_positions")
    return {**configurations, **own, "namespace": namespace, "robot": configurations.get(namespace, "")}


def _robot(configurations, namespace: str, y: float, publish_clock: bool) -> list:
    """The processes of one robot: its world frame placed in world, its simulation, its controller."""
    mine = _robot_configurations(configurations, namespace)
    simulation = launch_arguments.simulation_node(mine, {"frame_prefix": f"{namespace}/",
                                                         "world_frame": f"{namespace}/world",
                                                         "publish_clock": publish_clock})
    controller = launch_arguments.helper_node(mine, CONTROLLER)
    return [
        Node(
            package="tf2_ros",
            executable="static_transform_publisher",
            name=f"world_to_{namespace}",
            output="screen",
            arguments=["--x", "0", "--y", str(y), "--z", "0", "--roll", "0", "--pitch", "0", "--yaw", "0",
                       "--frame-id", "world", "--child-frame-id", f"{namespace}/world"],
        ),
        Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE)),
        Node(**controller.options(CONTROLLER, CONTROLLER)),
    ]


def _nodes(context, rviz_config) -> list:
    """Both robots, and RViz if asked; a bad argument (or rviz:=true without rviz2) stops the
    launch here, before any process has started."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    nodes = [node for namespace, y, publish_clock in ROBOTS
             for node in _robot(configurations, namespace, y, publish_clock)]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config)))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    robots = [("robot1", "arm6", "URDF or xacro of /robot1 shipped in share/mb_sim/urdf (name) or a path"),
              ("robot2", "double_pendulum", "URDF or xacro of /robot2 shipped in share/mb_sim/urdf (name) or a path")]
    per_robot = [(f"{namespace}_{name}", "", f"{namespace}: {launch_arguments.ARGUMENTS[name][1]}")
                 for namespace, _, _ in ROBOTS for name in PER_ROBOT]
    defaults = {"rviz": "true", "params_file": PathJoinSubstitution([config, "mb_sim.yaml"])}
    return LaunchDescription([
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in [*robots, *per_robot,
                                             *launch_arguments.declarations(ARGUMENTS, **defaults)]],
        DeclareLaunchArgument(
            "controller_params_file", default_value=PathJoinSubstitution([config, "demo_controller.yaml"]),
            description="YAML file with the parameters of both mb_sim_demo_controller nodes"),
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "two_robots.rviz"])]),
    ])
