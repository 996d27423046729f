"""The quality-of-service profiles of the node's topics that are not rclpy's defaults."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

__all__ = ["LATCHED_QOS", "TF_QOS"]

#: QoS of latched topics (/robot_description, /tf_static): late subscribers still get the message.
LATCHED_QOS = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)
#: QoS of /tf, as tf2's TransformBroadcaster.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
