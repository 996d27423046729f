"""The differential-drive robot (urdf/diff_drive.urdf) driven from /cmd_vel, with RViz.

mb_sim_node simulates the robot (urdf_file diff_drive, world_frame odom: TF and the ground-truth
/odom in the frame odom); mb_sim_diff_drive_controller turns /cmd_vel (geometry_msgs/TwistStamped
by default) into motor voltages and publishes its wheel odometry on
/mb_sim_diff_drive_controller/odom; RViz shows the robot, both odometries and TF in the fixed
frame odom.

Arguments:
  rviz                    true: also start RViz with share/mb_sim/config/diff_drive.rviz (default: true);
                          without the rviz2 package, nothing starts (status 1, pass rviz:=false).
  real_time_factor        simulated seconds per wall-clock second; 0 runs as fast as possible
                          (default: 1.0).
  strict                  true: refuse a URDF the loader would repair instead of loading it with
                          the repairs logged (default: false).
  params_file             YAML with mb_sim_node parameters (default: share/mb_sim/config/mb_sim.yaml);
                          the robot, world_frame, real_time_factor and strict are set here.
  controller_params_file  YAML with mb_sim_diff_drive_controller parameters
                          (default: share/mb_sim/config/diff_drive_controller.yaml).

Example: ros2 launch mb_sim diff_drive.launch.py, then
  ros2 topic pub -r 10 /cmd_vel geometry_msgs/msg/TwistStamped "{twist: {linear: {x: 0.5}, angular: {z: 0.3}}}"
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
            "rviz", default_value="true",
            description="Also start RViz with config/diff_drive.rviz"),
        DeclareLaunchArgument(
            "real_time_factor", default_value="1.0",
            description="Simulated seconds per wall-clock second; 0 runs as fast as possible"),
        DeclareLaunchArgument(
            "strict", default_value="false",
            description="Refuse a URDF the loader would repair instead of loading it with the repairs logged"),
        DeclareLaunchArgument(
            "params_file", default_value=PathJoinSubstitution([config, "mb_sim.yaml"]),
            description="YAML file with mb_sim_node parameters"),
        DeclareLaunchArgument(
            "controller_params_file", default_value=PathJoinSubstitution([config, "diff_drive_controller.yaml"]),
            description="YAML file with mb_sim_diff_drive_controller parameters"),
        OpaqueFunction(function=_require_rviz),  # before any process starts
        Node(
            package="mb_sim",
            executable="mb_sim_node",
            name="mb_sim",
            output="screen",
            parameters=[
                LaunchConfiguration("params_file"),
                {"urdf_file": "diff_drive", "world_frame": "odom",
                 "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"), value_type=float),
                 "strict": ParameterValue(LaunchConfiguration("strict"), value_type=bool)},
            ],
        ),
        Node(
            package="mb_sim",
            executable="mb_sim_diff_drive_controller",
            name="mb_sim_diff_drive_controller",
            output="screen",
            parameters=[LaunchConfiguration("controller_params_file")],  # use_sim_time: true by default
        ),
        Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            output="screen",
            arguments=["-d", PathJoinSubstitution([config, "diff_drive.rviz"])],
            # TF is stamped with sim time: RViz must look it up on /clock.
            parameters=[{"use_sim_time": True}],
            condition=IfCondition(LaunchConfiguration("rviz")),
        ),
    ])
