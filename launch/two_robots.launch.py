"""Two robots side by side: two simulation nodes, each with its demo controller, in namespaces
/robot1 and /robot2, with RViz.

Each robot's mb_sim_node (node /robotN/mb_sim) publishes robotN/joint_states and
robotN/robot_description in its namespace and its link frames with the frame_prefix robotN/ on the
global /tf and /tf_static, in its own world_frame robotN/world; static_transform_publisher (tf2_ros)
places robot1/world at y = -0.5 m and robot2/world at y = +0.5 m in world, 1 m apart.  Only robot1
publishes /clock (robot2: publish_clock false): both run at the same real_time_factor, and every
node is on sim time.  Each mb_sim_demo_controller (/robotN/mb_sim_demo_controller) reads its
namespace's joint_states and commands robotN/mb_sim/joint_commands.

Arguments:
  robot1                  URDF of /robot1 shipped in share/mb_sim/urdf (name) or a path (default: arm6).
  robot2                  URDF of /robot2, likewise (default: double_pendulum).
  rviz                    true: also start RViz with share/mb_sim/config/two_robots.rviz (default: true);
                          without the rviz2 package, nothing starts (status 1, pass rviz:=false).
  real_time_factor        simulated seconds per wall-clock second of both simulations; 0 runs as fast
                          as possible (default: 1.0).
  controller_params_file  YAML with the parameters of both mb_sim_demo_controller nodes
                          (default: share/mb_sim/config/demo_controller.yaml); its key must match
                          the namespaced nodes (/**/mb_sim_demo_controller); gains are per joint
                          name, so one file serves both robots.

Example: ros2 launch mb_sim two_robots.launch.py robot2:=pendulum
"""
from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

#: Namespace (also the launch argument naming its URDF, and its frame prefix), y of its world
#: frame in world [m], whether it publishes /clock.
ROBOTS = (("robot1", -0.5, True), ("robot2", 0.5, False))


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


def _robot(namespace: str, y: float, publish_clock: bool) -> list:
    """The processes of one robot: its world frame placed in world, its simulation, its controller."""
    return [
        Node(
            package="tf2_ros",
            executable="static_transform_publisher",
            name=f"world_to_{namespace}",
            output="screen",
            arguments=["--x", "0", "--y", str(y), "--z", "0", "--roll", "0", "--pitch", "0", "--yaw", "0",
                       "--frame-id", "world", "--child-frame-id", f"{namespace}/world"],
        ),
        Node(
            package="mb_sim",
            executable="mb_sim_node",
            name="mb_sim",
            namespace=namespace,
            output="screen",
            parameters=[
                {"urdf_file": ParameterValue(LaunchConfiguration(namespace), value_type=str),
                 "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"), value_type=float),
                 "frame_prefix": f"{namespace}/",
                 "world_frame": f"{namespace}/world",
                 "publish_clock": publish_clock},
            ],
        ),
        Node(
            package="mb_sim",
            executable="mb_sim_demo_controller",
            name="mb_sim_demo_controller",
            namespace=namespace,
            output="screen",
            parameters=[LaunchConfiguration("controller_params_file")],  # use_sim_time: true by default
        ),
    ]


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare("mb_sim"), "config"])
    return LaunchDescription([
        DeclareLaunchArgument(
            "robot1", default_value="arm6",
            description="URDF of /robot1 shipped in share/mb_sim/urdf (name) or a path to a URDF file"),
        DeclareLaunchArgument(
            "robot2", default_value="double_pendulum",
            description="URDF of /robot2 shipped in share/mb_sim/urdf (name) or a path to a URDF file"),
        DeclareLaunchArgument(
            "rviz", default_value="true",
            description="Also start RViz with config/two_robots.rviz"),
        DeclareLaunchArgument(
            "real_time_factor", default_value="1.0",
            description="Simulated seconds per wall-clock second; 0 runs as fast as possible"),
        DeclareLaunchArgument(
            "controller_params_file", default_value=PathJoinSubstitution([config, "demo_controller.yaml"]),
            description="YAML file with the parameters of both mb_sim_demo_controller nodes"),
        OpaqueFunction(function=_require_rviz),  # before any process starts
        *[node for namespace, y, publish_clock in ROBOTS for node in _robot(namespace, y, publish_clock)],
        Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            output="screen",
            arguments=["-d", PathJoinSubstitution([config, "two_robots.rviz"])],
            # TF is stamped with sim time: RViz must look it up on /clock.
            parameters=[{"use_sim_time": True}],
            condition=IfCondition(LaunchConfiguration("rviz")),
        ),
    ])
