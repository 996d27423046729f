"""The cart-pole (urdf/cart_pole.urdf) balanced upright by the LQR controller, RViz if asked.

The simulation starts with the pole tipped by `initial_angle`, paused; mb_sim_lqr_controller
linearizes the model exactly about the upright equilibrium, solves the Riccati equation, resumes
the simulation once it is connected (resume_simulation: else the pole fell before the controller
was up in about half the launches) and pushes the cart (config/lqr_controller.yaml: inputs,
operating point, weights).

Fixed here (not arguments): the robot (urdf_file cart_pole: the controller's parameters are for it;
robot, urdf_file, robot_description, robot_description_topic and xacro_args are not offered) and the
node's start_paused (true: the controller resumes the simulation once it is ready; the argument
start_paused:=true tells it not to).

Arguments (node-parameter ones default to "": params_file's value, else the node's default; a
value given on the command line always wins over params_file):
  namespace               namespace of both mb_sim nodes (r1: /r1/mb_sim, /r1/mb_sim_lqr_controller);
                          RViz is remapped to it (default: none).
  use_sim_time            true/false: the controller and RViz follow /clock (default: true).
  initial_angle           the pole's angle from upright at the start [rad] (default: 0.1).
  initial_positions       other initial joint positions [rad or m], e.g. "cart_joint:=0.2"
                          (pole_joint is initial_angle's).
  start_paused            true: stay paused once the controller is up (call ~/pause with data: false
                          to start) (default: false).
  publish_rate            rate of /joint_states [Hz of sim time]: the controller's rate (node default 100).
  physics_dt              physics step [s] (node default 0.001).
  real_time_factor        simulated seconds per wall-clock second; 0 runs as fast as possible
                          (node default 1.0).
  lockstep                true: advance one publish period per command (the controller answers each
                          /joint_states with one).
  strict                  true: refuse a URDF the loader would repair instead of loading it.
  log_level               log level of both mb_sim nodes: debug, info, warn, error, fatal (default: info).
  params_file             YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  controller_params_file  YAML with mb_sim_lqr_controller parameters
                          (default: share/mb_sim/config/lqr_controller.yaml).
  rviz                    true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: true);
                          without the rviz2 package, nothing starts (status 1, pass rviz:=false).

Example: ros2 launch mb_sim cart_pole_lqr.launch.py initial_angle:=0.2
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from mb_sim import launch_arguments

ARGUMENTS = ("namespace", "use_sim_time", "initial_positions", "start_paused", "publish_rate", "physics_dt",
             "real_time_factor", "lockstep", "strict", "log_level", "params_file", "rviz")
CONTROLLER = "mb_sim_lqr_controller"
#: The node parameters this launch file fixes: paused until the controller is up (it resumes the
#: simulation): else the pole fell before the controller was up in about half the launches.
FIXED = {"urdf_file": "cart_pole", "robot_description": "", "robot_description_topic": "", "xacro_args": "",
         "start_paused": True}
RVIZ_TOPICS = ("/robot_description", "/mb_sim/springs", "/mb_sim/contact_markers")


def _pole_tipped(configurations) -> dict:
    """initial_positions with the pole at initial_angle (naming pole_joint there too is refused)."""
    positions = launch_arguments.initial_positions(str(configurations.get("initial_positions", "")))
    if "initial_positions.pole_joint" in positions:
        raise launch_arguments.LaunchArgumentError("initial_positions", "pole_joint is set by initial_angle")
    angle = launch_arguments.number(configurations, "initial_angle")
    return {**positions, "initial_positions.pole_joint": 0.1 if angle is None else angle}


def _nodes(context, rviz_config) -> list:
    """The simulation, the LQR controller, and RViz if asked; a bad argument (or rviz:=true without
    rviz2) stops the launch here, before any process has started."""
    configurations = context.launch_configurations
    rviz = launch_arguments.require_rviz(configurations)
    simulation = launch_arguments.simulation_node(
        {**configurations, "start_paused": ""}, {**_pole_tipped(configurations), **FIXED})
    resume = not launch_arguments.flag(configurations, "start_paused")  # ~/pause false once the LQR is ready
    controller = launch_arguments.helper_node(configurations, CONTROLLER, overrides={"resume_simulation": resume})
    nodes = [
        Node(**simulation.options("mb_sim_node", launch_arguments.SIMULATION_NODE)),
        Node(**controller.options(CONTROLLER, CONTROLLER)),
    ]
    if rviz:
        nodes.append(Node(**launch_arguments.rviz_node(configurations, rviz_config, RVIZ_TOPICS)))
    return nodes


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    defaults = {"rviz": "true", "params_file": PathJoinSubstitution([config, "mb_sim.yaml"])}
    return LaunchDescription([
        DeclareLaunchArgument("initial_angle", default_value="0.1",
                              description="The pole's angle from upright at the start [rad]"),
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in launch_arguments.declarations(ARGUMENTS, **defaults)],
        DeclareLaunchArgument("controller_params_file",
                              default_value=PathJoinSubstitution([config, "lqr_controller.yaml"]),
                              description="YAML file with mb_sim_lqr_controller parameters"),
        OpaqueFunction(function=_nodes, args=[PathJoinSubstitution([config, "mb_sim.rviz"])]),
    ])
