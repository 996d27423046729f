"""Benchmark: spawning and deleting an object in a running ``mb_sim_node``, and what the node does
meanwhile, measured from a separate rclpy process.

The node runs urdf/gripper_lift.urdf with a 20 mm box at real time (publish_rate 100 Hz, a private
empty model cache).  The measuring process subscribes to /joint_states and calls, in turn:
SpawnEntity of a 5 cm cube (a new scene: derived and compiled in a process of the node's own),
DeleteEntity of it (the start-up scene again: from the cache), and SpawnEntity of it again (cached).
For each call: its wall time, the node's own split (build, load on a thread, swap) from the answer,
and over the call's window the /joint_states received per second, the longest gap between two of them
(wall) and the sim seconds advanced per wall second (real time: 1).

Run: ``.venv/bin/python -W ignore bench/bench_spawn.py [--markdown PATH]`` (``make bench`` writes
bench/results/spawn.md).  Prints figures, asserts nothing (the build shares the two cores).
"""
from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from sensor_msgs.msg import JointState
from simulation_interfaces.srv import DeleteEntity, SpawnEntity
from std_msgs.msg import String

from bench_node import running, spin_until
from bench_report import machine, machine_line
from mb_sim.ros.qos import LATCHED_QOS

REPO = Path(__file__).resolve().parent.parent
BOX = "name=box shape=box size=0.02,0.02,0.02 mass=0.05 xyz=0,0,0.01 friction=1"
COLUMNS = ("call", "wall [s]", "node: build / load / swap", "/joint_states per s", "longest gap [ms] (from)",
           "sim s per wall s")


def spawn_cube() -> SpawnEntity.Request:
    request = SpawnEntity.Request(name="cube", resource_string="shape=box size=0.05,0.05,0.05 mass=0.2")
    request.initial_pose.pose.position.x, request.initial_pose.pose.position.z = 0.3, 0.2
    request.initial_pose.pose.orientation.w = 1.0
    return request


def timed_call(node, received: list, service_type, name: str, request) -> list[str]:
    """Call, wait for the answer; the row of figures over the call's window."""
    client = node.create_client(service_type, name)
    client.wait_for_service(timeout_sec=30)
    began = time.monotonic()
    future = client.call_async(request)
    spin_until(node, future.done, 600)
    ended = time.monotonic()
    node.destroy_client(client)
    answer = future.result()
    message = answer.result.error_message if answer else "no answer"
    split = re.search(r"built in ([\d.]+) s and loaded in ([\d.]+) s .*swapped in (\d+) ms", message)
    window = [(wall, stamp) for wall, stamp in received if began <= wall <= ended]
    walls = np.array([began, *(w for w, _ in window), ended])
    advanced = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0]) if len(window) > 1 else float("nan")
    return [f"{service_type.__name__} ({answer.result.result if answer else '-'})", f"{ended - began:.2f}",
            f"{split[1]} s / {split[2]} s / {split[3]} ms" if split else message[:60],
            f"{len(window) / (ended - began):.0f}",
            f"{np.diff(walls).max() * 1e3:.0f} ({walls[np.argmax(np.diff(walls))] - began:.2f} s in)", f"{advanced:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args()
    started, report = time.monotonic(), {"machine": machine()}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "MB_SIM_CACHE_DIR": cache}
        env.setdefault("ROS_DOMAIN_ID", "62")
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
        rclpy.init()
        node = rclpy.create_node("mb_sim_spawn_bench")
        received: list[tuple[float, float]] = []
        node.create_subscription(JointState, "/joint_states", lambda m: received.append(
            (time.monotonic(), m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec)), 100)
        described: list = []
        node.create_subscription(String, "/robot_description", described.append, LATCHED_QOS)
        rows = []
        with running(REPO / "urdf" / "gripper_lift.urdf", env, f"objects:=['{BOX}']"):
            spin_until(node, lambda: len(received) > 100, 300)  # started (its first load: untimed), settled
            for service_type, request in ((SpawnEntity, spawn_cube()), (DeleteEntity, DeleteEntity.Request(entity="cube")),
                                          (SpawnEntity, spawn_cube())):
                name = "/mb_sim/spawn_entity" if service_type is SpawnEntity else "/mb_sim/delete_entity"
                rows.append(timed_call(node, received, service_type, name, request))
                spin_until(node, lambda: False, 1.0)
        node.destroy_node()
        rclpy.shutdown()
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report["wall_seconds"] = time.monotonic() - started
    lines = [machine_line(report), "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
             *("| " + " | ".join(row) + " |" for row in rows)]
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("# Spawning and deleting in a running node\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
