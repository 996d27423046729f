"""A separate ROS 2 process for the tests: publishes a known JointState and TFMessage at 20 Hz.

Run as ``python ros_peer.py DURATION``; it exits by itself after DURATION seconds.
"""
from __future__ import annotations

import sys
import time

import rclpy
from geometry_msgs.msg import TransformStamped
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

JOINT_NAMES = ["shoulder", "elbow"]
POSITIONS = [0.25, -1.5]
TRANSLATION = (1.0, 2.0, 3.0)
ROTATION_XYZW = (0.0, 0.0, 0.7071067811865476, 0.7071067811865476)


def joint_state() -> JointState:
    """The JointState the peer publishes."""
    return JointState(name=JOINT_NAMES, position=POSITIONS, velocity=[0.5, 0.0], effort=[1.0, 2.0])


def transforms() -> TFMessage:
    """The TFMessage the peer publishes: world -> link1."""
    tf = TransformStamped()
    tf.header.frame_id = "world"
    tf.child_frame_id = "link1"
    tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = TRANSLATION
    r = tf.transform.rotation
    r.x, r.y, r.z, r.w = ROTATION_XYZW
    return TFMessage(transforms=[tf])


def main() -> None:
    duration = float(sys.argv[1])
    rclpy.init()
    node = rclpy.create_node("mb_sim_test_peer")
    joint_pub = node.create_publisher(JointState, "/mb_sim_test/joint_states", 10)
    tf_pub = node.create_publisher(TFMessage, "/mb_sim_test/tf", 10)
    end = time.monotonic() + duration
    while time.monotonic() < end:
        joint_pub.publish(joint_state())
        tf_pub.publish(transforms())
        time.sleep(0.05)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
