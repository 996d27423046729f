"""Start the mb_sim simulation node for one robot.

Arguments:
  robot        URDF shipped in share/mb_sim/urdf (name, with or without .urdf) or a path.
  params_file  YAML with node parameters (default: share/mb_sim/config/mb_sim.yaml).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("mb_sim")
    return LaunchDescription([
        DeclareLaunchArgument(
            "robot", default_value="pendulum",
            description="URDF shipped in share/mb_sim/urdf (name) or a path to a URDF file"),
        DeclareLaunchArgument(
            "params_file", default_value=os.path.join(share, "config", "mb_sim.yaml"),
            description="YAML file with mb_sim_node parameters"),
        Node(
            package="mb_sim",
            executable="mb_sim_node",
            name="mb_sim",
            output="screen",
            parameters=[LaunchConfiguration("params_file"),
                        {"urdf_file": LaunchConfiguration("robot")}],
        ),
    ])
