"""ROS 2 messages travel between processes with the wheels and the tf2_msgs built by set-up."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import rclpy
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

sys.path.insert(0, str(Path(__file__).parent))
import ros_peer  # noqa: E402


@pytest.fixture
def ros_node():
    """A node in this test process, with rclpy shut down afterwards."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("mb_sim_test_listener", context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    yield node, executor
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)


def test_joint_state_and_tf_cross_processes(ros_node):
    node, executor = ros_node
    received: dict[str, object] = {}
    node.create_subscription(JointState, "/mb_sim_test/joint_states",
                             lambda msg: received.setdefault("joints", msg), 10)
    node.create_subscription(TFMessage, "/mb_sim_test/tf",
                             lambda msg: received.setdefault("tf", msg), 10)
    peer = subprocess.Popen([sys.executable, ros_peer.__file__, "30"])
    try:
        deadline = time.monotonic() + 25
        while len(received) < 2 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
    finally:
        peer.terminate()
        peer.wait(timeout=10)
    assert set(received) == {"joints", "tf"}, f"received only {sorted(received)}"

    joints = received["joints"]
    assert list(joints.name) == ros_peer.JOINT_NAMES
    assert list(joints.position) == ros_peer.POSITIONS
    (tf,) = received["tf"].transforms
    assert (tf.header.frame_id, tf.child_frame_id) == ("world", "link1")
    t, r = tf.transform.translation, tf.transform.rotation
    assert (t.x, t.y, t.z) == ros_peer.TRANSLATION
    assert (r.x, r.y, r.z, r.w) == ros_peer.ROTATION_XYZW
