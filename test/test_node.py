"""The installed ``mb_sim_node`` executable, run as its own process and talked to over ROS 2."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import rclpy
from std_msgs.msg import String

from mb_sim.ros.node import LATCHED_QOS

NODE_EXE = Path(sys.executable).parent / "mb_sim_node"


def _receive_latched(topic: str, timeout: float) -> str | None:
    """First message on a transient-local topic, or None after `timeout` seconds."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("mb_sim_test_description", context=context)
    got: list[str] = []
    node.create_subscription(String, topic, lambda msg: got.append(msg.data), LATCHED_QOS)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    deadline = time.monotonic() + timeout
    while not got and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)
    return got[0] if got else None


def test_node_publishes_robot_description_and_stops_on_ctrl_c(repo):
    proc = subprocess.Popen([str(NODE_EXE), "--ros-args", "-p", "urdf_file:=pendulum"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        description = _receive_latched("/robot_description", timeout=20)
    finally:
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        out, err = proc.communicate(timeout=10)
        stop_time = time.monotonic() - started
    assert description == (repo / "urdf" / "pendulum.urdf").read_text()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert stop_time < 2.0, f"took {stop_time:.2f} s to stop after Ctrl-C"


def test_node_with_missing_urdf_file_says_which_parameter():
    proc = subprocess.run([str(NODE_EXE), "--ros-args", "-p", "urdf_file:=/no/such/robot.urdf"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "urdf_file" in proc.stderr and "/no/such/robot.urdf" in proc.stderr
    assert "Traceback" not in proc.stderr
