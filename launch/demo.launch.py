"""Demo: the simulation (sim.launch.py, with RViz) and the demo controller tracking sine targets.

Arguments:
  robot                   URDF shipped in share/mb_sim/urdf (name) or a path (default: arm6).
  rviz                    true: also start RViz with share/mb_sim/config/mb_sim.rviz (default: true);
                          without the rviz2 package, nothing starts (status 1, pass rviz:=false).
  real_time_factor        simulated seconds per wall-clock second; 0 runs as fast as possible
                          (default: 1.0).
  strict                  true: refuse a URDF the loader would repair instead of loading it with
                          the repairs logged (default: false).
  floating_base           true: join the root link to the world by a floating joint instead of
                          fixing it (default: false).
  params_file             YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml).
  controller_params_file  YAML with mb_sim_demo_controller parameters
                          (default: share/mb_sim/config/demo_controller.yaml).

Example: ros2 launch mb_sim demo.launch.py robot:=double_pendulum
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

SIM_ARGUMENTS = ("robot", "rviz", "real_time_factor", "strict", "floating_base", "params_file")


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("mb_sim")
    return LaunchDescription([
        DeclareLaunchArgument(
            "robot", default_value="arm6",
            description="URDF shipped in share/mb_sim/urdf (name) or a path to a URDF file"),
        DeclareLaunchArgument(
            "rviz", default_value="true",
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
            "params_file", default_value=PathJoinSubstitution([share, "config", "mb_sim.yaml"]),
            description="YAML file with mb_sim_node parameters"),
        DeclareLaunchArgument(
            "controller_params_file",
            default_value=PathJoinSubstitution([share, "config", "demo_controller.yaml"]),
            description="YAML file with mb_sim_demo_controller parameters"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "sim.launch.py"])),
            launch_arguments={name: LaunchConfiguration(name) for name in SIM_ARGUMENTS}.items(),
        ),
        Node(
            package="mb_sim",
            executable="mb_sim_demo_controller",
            name="mb_sim_demo_controller",
            output="screen",
            parameters=[LaunchConfiguration("controller_params_file")],  # use_sim_time: true by default
        ),
    ])
