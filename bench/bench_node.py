"""Benchmark: ``mb_sim_node`` as users run it, measured from a separate rclpy process.

1. As fast as possible (``real_time_factor: 0``): the node's own achieved real-time factor (from
   /diagnostics) while the measuring process subscribes to nothing else, to /clock (best effort,
   as rclpy's and rclcpp's time sources do), or to /clock, /joint_states and /tf (what RViz and a
   controller would); plus the /clock messages the subscriber got.
2. Real time at ``publish_rate`` 100, 500 and 1000 Hz: the /joint_states rate the subscriber
   receives and the spread of the periods between messages (p50, p99, max).

Run: ``.venv/bin/python bench/bench_node.py [--quick]``.  Prints figures, asserts nothing (the
machines are noisy).  Targets: arm6 at >= 100x real time on 2 cores; 1 kHz with p99 < 2 ms.
Every node compiles its robot in a private cache first (not timed).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

NODE = Path(sys.executable).parent / "mb_sim_node"
#: rclpy's TimeSource subscribes to /clock like this.
CLOCK_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
SUBSCRIPTIONS = {"none": (), "/clock": ("/clock",), "/clock,/joint_states,/tf": ("/clock", "/joint_states", "/tf")}
TYPES = {"/clock": Clock, "/joint_states": JointState, "/tf": TFMessage}


def start(robot: str, env: dict[str, str], *parameters: str) -> subprocess.Popen:
    arguments = [item for p in (f"urdf_file:={robot}", *parameters) for item in ("-p", p)]
    return subprocess.Popen([str(NODE), "--ros-args", *arguments], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def fastest(node, robot: str, env: dict[str, str], topics: tuple[str, ...], reports: int) -> str:
    """The achieved real-time factors /diagnostics reports with `topics` subscribed."""
    factors, counts = [], {topic: 0 for topic in topics}

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            value = {kv.key: kv.value for kv in status.values}.get("achieved real-time factor", "n/a")
            if value != "n/a":
                factors.append(float(value))

    subscriptions = [node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)]
    for topic in topics:
        subscriptions.append(node.create_subscription(
            TYPES[topic], topic, lambda m, t=topic: counts.__setitem__(t, counts[t] + 1),
            CLOCK_QOS if topic == "/clock" else 10))
    proc = start(robot, env, "real_time_factor:=0.0")
    deadline = time.monotonic() + 120
    while len(factors) < reports + 2 and time.monotonic() < deadline:  # the first two: start-up
        rclpy.spin_once(node, timeout_sec=0.1)
    stop(proc)
    for subscription in subscriptions:
        node.destroy_subscription(subscription)
    steady = np.array(factors[2:])
    if not len(steady):
        return "no /diagnostics"
    received = ", ".join(f"{topic} {count}" for topic, count in counts.items())
    return f"{np.median(steady):7.1f}x (min {steady.min():.1f}, max {steady.max():.1f})" + \
        (f"; received {received}" if received else "")


def real_time(node, robot: str, env: dict[str, str], rate: float, seconds: float) -> str:
    """Rate and period spread of /joint_states at `rate` Hz, real time."""
    arrivals: list[float] = []
    subscription = node.create_subscription(JointState, "/joint_states",
                                            lambda m: arrivals.append(time.monotonic()), 1000)
    proc = start(robot, env, "real_time_factor:=1.0", f"publish_rate:={rate}")
    deadline = time.monotonic() + 120
    while len(arrivals) < 20 and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    arrivals.clear()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    stop(proc)
    node.destroy_subscription(subscription)
    periods = np.diff(arrivals) * 1e3
    if len(periods) < 2:
        return "no /joint_states"
    return (f"{len(arrivals) / seconds:7.1f} Hz; period p50 {np.percentile(periods, 50):.3f} ms, "
            f"p99 {np.percentile(periods, 99):.3f} ms, max {periods.max():.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer robots and shorter runs")
    args = parser.parse_args()
    robots = ["pendulum", "arm6"] if args.quick else ["pendulum", "arm6", "four_bar", "diff_drive"]
    reports = 3 if args.quick else 6
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "MB_SIM_CACHE_DIR": cache}
        env.setdefault("ROS_DOMAIN_ID", "61")
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
        for robot in robots:  # compile once, untimed
            subprocess.run([sys.executable, "-m", "mb_sim.cli", "derive", robot], env=env, check=True,
                           stdout=subprocess.DEVNULL)
        rclpy.init()
        node = rclpy.create_node("mb_sim_bench")
        print("real_time_factor 0 (as fast as possible), publish_rate 100 Hz: achieved factor")
        for robot in robots:
            for label, topics in SUBSCRIPTIONS.items():
                print(f"  {robot:10s} subscribed: {label:26s} {fastest(node, robot, env, topics, reports)}", flush=True)
        print("real_time_factor 1: /joint_states as received")
        for robot in robots[:2]:
            for rate in (100.0, 500.0, 1000.0):
                print(f"  {robot:10s} {rate:6.0f} Hz: {real_time(node, robot, env, rate, 3.0 if args.quick else 6.0)}",
                      flush=True)
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
