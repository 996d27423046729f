"""Start the mb_sim simulation node for one robot, and RViz if asked.

Arguments:
  robot             URDF shipped in share/mb_sim/urdf (name, with or without .urdf) or a path
                    (default: pendulum).
  rviz              true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: false);
                    without the rviz2 package, nothing starts (status 1, pass rviz:=false).
  real_time_factor  simulated seconds per wall-clock second; 0 runs as fast as possible (default: 1.0).
  strict            true: refuse a URDF the loader would repair (inertias, a mimic on a fixed joint)
                    instead of loading it with the repairs logged (default: false).
  floating_base     true: join the root link to the world by a floating joint (6 DoF) instead of
                    fixing it (a root link named world is the world itself) (default: false).
  params_file       YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml);
                    robot, real_time_factor, strict and floating_base override its urdf_file,
                    real_time_factor, strict and floating_base.

Example: ros2 launch mb_sim sim.launch.py robot:=arm6 rviz:=true
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
    """With rviz:=true and no rviz2 installed, fail before any process has started.  (Launch would
    otherwise start the processes listed before RViz, fail on RViz's package, exit with status 1
    and leave them running, orphaned.)"""
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
        DeclareLaunchArgument(
            "robot", default_value="pendulum",
            description="URDF shipped in share/mb_sim/urdf (name) or a path to a URDF file"),
        DeclareLaunchArgument(
            "rviz", default_value="false",
            description="Also start RViz with config/mb_sim.rviz"),
        DeclareLaunchArgument(
            "real_time_factor", default_value="1.0",
            description="Simulated seconds per wall-clock second; 0 runs as fast as possible"),
        DeclareLaunchArgument(
            "strict", default_value="false",
            description="Refuse a URDF the loader would repair instead of loading it with the repairs logged"),
        DeclareLaunchArgument(
            "floating_base", default_value="false",
            description="Join the root link to the world by a floating joint instead of fixing it"),
        DeclareLaunchArgument(
            "params_file", default_value=PathJoinSubstitution([config, "mb_sim.yaml"]),
            description="YAML file with mb_sim_node parameters"),
        OpaqueFunction(function=_require_rviz),  # before any process starts
        Node(
            package="mb_sim",
            executable="mb_sim_node",
            name="mb_sim",
            output="screen",
            parameters=[
                LaunchConfiguration("params_file"),
                {"urdf_file": ParameterValue(LaunchConfiguration("robot"), value_type=str),
                 "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"), value_type=float),
                 "strict": ParameterValue(LaunchConfiguration("strict"), value_type=bool),
                 "floating_base": ParameterValue(LaunchConfiguration("floating_base"), value_type=bool)},
            ],
        ),
        Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            output="screen",
            arguments=["-d", PathJoinSubstitution([config, "mb_sim.rviz"])],
            # TF is stamped with sim time: RViz must look it up on /clock.
            parameters=[{"use_sim_time": True}],
            condition=IfCondition(LaunchConfiguration("rviz")),
        ),
    ])
