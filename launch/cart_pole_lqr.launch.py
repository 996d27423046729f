"""The cart-pole (urdf/cart_pole.urdf) balanced upright by the LQR controller, RViz if asked.

The simulation starts with the pole tipped by `initial_angle`, paused; mb_sim_lqr_controller
linearizes the model exactly about the upright equilibrium, solves the Riccati equation, resumes
the simulation once it is connected (resume_simulation: else the pole fell before the controller
was up in about half the launches) and pushes the cart (config/lqr_controller.yaml: inputs,
operating point, weights).

Arguments:
  initial_angle     the pole's angle from upright at the start [rad] (default: 0.1).
  rviz              true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: true);
                    without the rviz2 package, nothing starts (status 1, pass rviz:=false).
  real_time_factor  simulated seconds per wall-clock second; 0 runs as fast as possible (default: 1.0).
  params_file       YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  controller_params_file  YAML with mb_sim_lqr_controller parameters
                          (default: share/mb_sim/config/lqr_controller.yaml).

Example: ros2 launch mb_sim cart_pole_lqr.launch.py initial_angle:=0.2
"""
from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def _require_rviz(context) -> list:
    """With rviz:=true and no rviz2 installed, fail before any process has started (as sim.launch.py)."""
    if IfCondition(LaunchConfiguration("rviz")).evaluate(context):
        try:
            get_package_prefix("rviz2")
        except PackageNotFoundError:
            raise RuntimeError("rviz:=true but the package rviz2 is not installed: "
                               "install it (ros-<distro>-rviz2) or pass rviz:=false") from None
    return []


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    return LaunchDescription([
        DeclareLaunchArgument("initial_angle", default_value="0.1",
                              description="The pole's angle from upright at the start [rad]"),
        DeclareLaunchArgument("rviz", default_value="true", description="Also start RViz with config/mb_sim.rviz"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0",
                              description="Simulated seconds per wall-clock second; 0 runs as fast as possible"),
        DeclareLaunchArgument("params_file", default_value=PathJoinSubstitution([config, "mb_sim.yaml"]),
                              description="YAML file with mb_sim_node parameters"),
        DeclareLaunchArgument("controller_params_file",
                              default_value=PathJoinSubstitution([config, "lqr_controller.yaml"]),
                              description="YAML file with mb_sim_lqr_controller parameters"),
        OpaqueFunction(function=_require_rviz),  # before any process starts
        Node(
            package="mb_sim",
            executable="mb_sim_node",
            name="mb_sim",
            output="screen",
            parameters=[
                LaunchConfiguration("params_file"),
                {"urdf_file": "cart_pole",
                 "start_paused": True,  # until the controller is up: it resumes the simulation
                 "initial_positions.pole_joint": ParameterValue(LaunchConfiguration("initial_angle"), value_type=float),
                 "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"), value_type=float)},
            ],
        ),
        Node(
            package="mb_sim",
            executable="mb_sim_lqr_controller",
            name="mb_sim_lqr_controller",
            output="screen",
            parameters=[LaunchConfiguration("controller_params_file"),  # use_sim_time: true by default
                        {"resume_simulation": True}],  # ~/pause false once the LQR is ready and connected
        ),
        Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            output="screen",
            arguments=["-d", PathJoinSubstitution([config, "mb_sim.rviz"])],
            parameters=[{"use_sim_time": True}],  # TF is stamped with sim time
            condition=IfCondition(LaunchConfiguration("rviz")),
        ),
    ])
