"""The ``mb_sim_node`` executable.

At this stage of the project the node loads the robot and publishes ``/robot_description``
(transient local, as robot_state_publisher does) so RViz and late joiners get the URDF.
Dynamics, ``/joint_states``, ``/tf`` and ``/clock`` arrive with the simulator.
"""
from __future__ import annotations

import sys
from pathlib import Path

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import ParameterDescriptor
from std_msgs.msg import String

from mb_sim.resources import robot_path

__all__ = ["SimulationNode", "main", "DEFAULT_ROBOT"]

DEFAULT_ROBOT = "pendulum"

#: QoS of latched topics (/robot_description, /tf_static): late subscribers still get the message.
LATCHED_QOS = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)


class StartupError(RuntimeError):
    """The node cannot start with the parameters it was given."""


class SimulationNode(Node):
    """Node that owns one robot and publishes what the simulator knows of it."""

    def __init__(self) -> None:
        super().__init__("mb_sim")
        self.declare_parameter(
            "robot_description", "",
            ParameterDescriptor(description="URDF text of the robot; takes precedence over urdf_file."),
        )
        self.declare_parameter(
            "urdf_file", DEFAULT_ROBOT,
            ParameterDescriptor(description="URDF path, or the name of a URDF shipped in share/mb_sim/urdf."),
        )
        self.urdf_text = self._read_robot_description()
        self._description_pub = self.create_publisher(String, "/robot_description", LATCHED_QOS)
        self._description_pub.publish(String(data=self.urdf_text))
        self.get_logger().info(f"published /robot_description ({len(self.urdf_text)} characters)")

    def _read_robot_description(self) -> str:
        text = self.get_parameter("robot_description").get_parameter_value().string_value
        if text.strip():
            return text
        robot = self.get_parameter("urdf_file").get_parameter_value().string_value
        try:
            return Path(robot_path(robot)).read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise StartupError(f"parameter urdf_file: {err}") from None


def main(args: list[str] | None = None) -> int:
    """Entry point of ``mb_sim_node``: spin until Ctrl-C or shutdown, then clean up quietly."""
    rclpy.init(args=args)
    node = None
    try:
        node = SimulationNode()
        rclpy.spin(node)
    except StartupError as err:
        print(f"mb_sim_node: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
