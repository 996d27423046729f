"""Benchmark: ``mb_sim_node`` as users run it, measured from a separate rclpy process.

1. As fast as possible (``real_time_factor: 0``, publish_rate 100 Hz of sim time), while the measuring
   process subscribes to nothing else, to /clock (best effort, as rclpy's and rclcpp's time sources do),
   or to /clock, /joint_states and /tf (what RViz and a controller would), per 1 s report of /diagnostics:
   sim seconds per wall second (the node's own achieved factor, the sim time of consecutive reports over
   their arrival times, and the /clock stamps received over their arrival times), the publish periods the
   node completed per wall second (sim time advanced x publish_rate: each period publishes /clock, and
   /joint_states and /tf when someone subscribes; the node skips unsubscribed topics), the /joint_states
   the measuring process received per second, and the node's CPU time (utime + stime of /proc/<pid>/stat)
   per publish period and per /joint_states received.
2. Real time at ``publish_rate`` 100, 500 and 1000 Hz: the /joint_states rate the subscriber receives,
   the periods between messages (p50, p99, max over the window) and the node's CPU use (% of one core).

Every figure comes with its spread: median, min and max over the 1 s intervals of the steady window
(the first two /diagnostics reports, or the first 20 messages, are start-up and left out).  Robots:
pendulum, arm6 and Solo12 (example-robot-data's URDF as shipped: 12 DoF on a fixed base; bench_dynamics
puts it on a floating base, but with no ground it would fall until the node's runaway check stops it), plus
four_bar and diff_drive as fast as possible (not with --quick).

Run: ``.venv/bin/python -W ignore bench/bench_node.py [--quick] [--json PATH] [--markdown PATH]``
(``make bench`` writes bench/results/node.json and node.md).  Prints figures, asserts nothing (the
machines are noisy; the measuring process shares the cores with the node).  Every node compiles its
robot in a private cache first (not timed).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from bench_report import machine, machine_line, versions

REPO = Path(__file__).resolve().parent.parent
NODE = Path(sys.executable).parent / "mb_sim_node"
#: rclpy's TimeSource subscribes to /clock like this.
CLOCK_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
SUBSCRIPTIONS = {"none": (), "/clock": ("/clock",), "/clock,/joint_states,/tf": ("/clock", "/joint_states", "/tf")}
TYPES = {"/clock": Clock, "/joint_states": JointState, "/tf": TFMessage}
#: The node's default publish rate (Hz of sim time), used as fast as possible.
FAST_PUBLISH_RATE = 100.0
REAL_TIME_RATES = (100.0, 500.0, 1000.0)
#: Issue 13's targets for the node.
TARGET_FACTOR, TARGET_RATE, TARGET_P99_MS = 100.0, 1000.0, 2.0
TARGETS = (f"arm6 >= {TARGET_FACTOR:g}x real time with real_time_factor 0; {TARGET_RATE:g} Hz publishing held "
           f"(achieved rate within 1 %) with p99 period < {TARGET_P99_MS:g} ms, on 2 cores")
#: Longest wait for a node to start and report (compiled model, so seconds).
START_TIMEOUT = 120.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: The distributions whose versions the report records.
VERSIONS = ("mb_sim", "rclpy", "numpy", "example-robot-data")
#: /diagnostics reports arrive about 1 s apart; closer ones came in a burst (see fast_figures).
MIN_INTERVAL = 0.5


def solo12_urdf() -> Path:
    """Solo12's URDF in the example-robot-data wheel (fixed base; the node takes a path)."""
    return Path(distribution("example-robot-data").locate_file(
        "cmeel.prefix/share/example-robot-data/robots/solo_description/robots/solo12.urdf"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far, from /proc (fields 14 and 15 of stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def spread(values: list[float] | np.ndarray) -> dict:
    """Median, min, max and count of `values` (None when there are none): every figure's spread."""
    a = np.asarray(values, dtype=float)
    if not len(a):
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()), "n": int(len(a))}


@contextmanager
def running(robot: Path, env: dict[str, str], *parameters: str) -> Iterator[subprocess.Popen]:
    """A node on `robot` with `parameters`, stopped (SIGINT, then kill) however the block ends."""
    arguments = [item for p in (f"urdf_file:={robot}", *parameters) for item in ("-p", p)]
    proc = subprocess.Popen([str(NODE), "--ros-args", *arguments], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def spin_until(node: Node, done: Callable[[], bool], timeout: float) -> None:
    """Spin `node` until `done()` or `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.01)


def between(times: list[float], start: float, end: float) -> np.ndarray:
    """Indices of the sorted `times` in (start, end]."""
    return np.arange(np.searchsorted(times, start, "right"), np.searchsorted(times, end, "right"))


def fastest(node: Node, robot: Path, env: dict[str, str], topics: tuple[str, ...], reports: int) -> dict:
    """Figures per 1 s /diagnostics interval with `topics` subscribed, as fast as possible."""
    samples: list[tuple[float, float, float, float]] = []  # wall, node CPU, sim time, achieved factor
    states: list[str] = []
    clock: tuple[list[float], list[float]] = ([], [])  # arrival (wall), stamp (sim)
    joint_states: list[float] = []
    pid = 0

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            states.append(values.get("state", "?"))
            if values.get("achieved real-time factor", "n/a") != "n/a":
                samples.append((time.monotonic(), cpu_seconds(pid), float(values["sim time [s]"]),
                                float(values["achieved real-time factor"])))

    def on_clock(message: Clock) -> None:
        clock[0].append(time.monotonic())
        clock[1].append(message.clock.sec + message.clock.nanosec * 1e-9)

    callbacks = {"/clock": on_clock, "/joint_states": lambda m: joint_states.append(time.monotonic()),
                 "/tf": lambda m: None}
    subscriptions = [node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)]
    subscriptions += [node.create_subscription(TYPES[t], t, callbacks[t], CLOCK_QOS if t == "/clock" else 10)
                      for t in topics]
    try:
        with running(robot, env, "real_time_factor:=0.0", f"publish_rate:={FAST_PUBLISH_RATE}") as proc:
            pid = proc.pid
            spin_until(node, lambda: len(samples) >= reports + 3 or "diverged" in states or proc.poll() is not None,
                       START_TIMEOUT)  # the first two reports: start-up
    finally:
        for subscription in subscriptions:
            node.destroy_subscription(subscription)
    if "diverged" in states:
        print(f"  {robot.name}: the simulation diverged (see the node's /diagnostics)", flush=True)
    return fast_figures(samples[2:], clock, joint_states, topics)


def fast_figures(samples: list[tuple[float, float, float, float]], clock: tuple[list[float], list[float]],
                 joint_states: list[float], topics: tuple[str, ...]) -> dict:
    """Per-interval figures between consecutive /diagnostics `samples`, with their spreads.  Reports
    taken in a burst (the measuring process was busy with other topics and they queued) are merged
    into the interval before: their arrival times are not when the node sent them."""
    samples = [s for i, s in enumerate(samples) if i == 0 or s[0] - samples[i - 1][0] >= MIN_INTERVAL]
    rows: dict[str, list[float]] = {key: [] for key in (
        "node_factor", "diagnostics_factor", "clock_factor", "periods_per_s", "cpu_percent",
        "cpu_us_per_period", "joint_states_per_s", "cpu_us_per_joint_state", "clock_received_per_s")}
    for (w0, c0, s0, _), (w1, c1, s1, factor) in zip(samples, samples[1:]):
        wall, cpu, periods = w1 - w0, c1 - c0, (s1 - s0) * FAST_PUBLISH_RATE
        rows["node_factor"].append(factor)
        rows["diagnostics_factor"].append((s1 - s0) / wall)
        rows["periods_per_s"].append(periods / wall)
        rows["cpu_percent"].append(100.0 * cpu / wall)
        if periods:
            rows["cpu_us_per_period"].append(1e6 * cpu / periods)
        if "/clock" in topics:
            i = between(clock[0], w0, w1)
            rows["clock_received_per_s"].append(len(i) / wall)
            if len(i) >= 2:
                arrivals, stamps = np.take(clock[0], i), np.take(clock[1], i)
                rows["clock_factor"].append((stamps[-1] - stamps[0]) / (arrivals[-1] - arrivals[0]))
        if "/joint_states" in topics:
            received = len(between(joint_states, w0, w1))
            rows["joint_states_per_s"].append(received / wall)
            if received:
                rows["cpu_us_per_joint_state"].append(1e6 * cpu / received)
    return {key: spread(values) for key, values in rows.items() if values}


def real_time(node: Node, robot: Path, env: dict[str, str], rate: float, seconds: float) -> dict:
    """/joint_states rate and periods, and the node's CPU use, at `rate` Hz in real time."""
    arrivals: list[float] = []
    samples: list[tuple[float, float, int]] = []  # wall, node CPU, messages so far
    subscription = node.create_subscription(JointState, "/joint_states",
                                            lambda m: arrivals.append(time.monotonic()), 1000)
    try:
        with running(robot, env, "real_time_factor:=1.0", f"publish_rate:={rate}") as proc:
            spin_until(node, lambda: len(arrivals) >= 20 or proc.poll() is not None, START_TIMEOUT)
            arrivals.clear()
            start = time.monotonic()
            samples.append((start, cpu_seconds(proc.pid), 0))
            for second in range(1, int(seconds) + 1):
                spin_until(node, lambda: False, start + second - time.monotonic())
                samples.append((time.monotonic(), cpu_seconds(proc.pid), len(arrivals)))
    finally:
        node.destroy_subscription(subscription)
    periods = np.diff(arrivals) * 1e3
    intervals = list(zip(samples, samples[1:]))
    return {"rate_hz": spread([(n1 - n0) / (w1 - w0) for (w0, _, n0), (w1, _, n1) in intervals]),
            "cpu_percent": spread([100.0 * (c1 - c0) / (w1 - w0) for (w0, c0, _), (w1, c1, _) in intervals]),
            "messages": len(arrivals),
            "period_ms": ({"p50": float(np.percentile(periods, 50)), "p99": float(np.percentile(periods, 99)),
                           "max": float(periods.max())} if len(periods) >= 2 else None)}


def fmt(figure: dict | None, scale: float = 1.0, digits: int = 1) -> str:
    """'median (min-max)' of a spread, or n/a."""
    if not figure or figure["median"] is None:
        return "n/a"
    return (f"{figure['median'] * scale:.{digits}f} ({figure['min'] * scale:.{digits}f}-"
            f"{figure['max'] * scale:.{digits}f})")


FAST_COLUMNS = ("robot", "subscribed", "x real time (node)", "x real time (/diagnostics sim time)",
                "x real time (/clock)", "publish periods/s", "/joint_states received/s", "CPU %",
                "CPU us/period", "CPU us/joint_states received")
REAL_TIME_COLUMNS = ("robot", "publish_rate [Hz]", "received [Hz]", "period p50 [ms]", "period p99 [ms]",
                     "period max [ms]", "CPU % of a core")


def fast_row(r: dict) -> list[str]:
    """One markdown row of an as-fast-as-possible run."""
    f = r["figures"]
    return [r["robot"], r["subscribed"], fmt(f.get("node_factor")), fmt(f.get("diagnostics_factor")),
            fmt(f.get("clock_factor")), fmt(f.get("periods_per_s"), digits=0), fmt(f.get("joint_states_per_s"), digits=0),
            fmt(f.get("cpu_percent"), digits=0), fmt(f.get("cpu_us_per_period")), fmt(f.get("cpu_us_per_joint_state"))]


def real_time_row(r: dict) -> list[str]:
    """One markdown row of a real-time run."""
    p = r["period_ms"] or {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return [r["robot"], f"{r['publish_rate']:g}", fmt(r["rate_hz"]), f"{p['p50']:.3f}", f"{p['p99']:.3f}",
            f"{p['max']:.3f}", fmt(r["cpu_percent"])]


def table(columns: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    """A markdown table."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + ["| " + " | ".join(r) + " |" for r in rows]


def verdicts(report: dict) -> list[str]:
    """Each target, met or missed, with its figures (a miss is a finding: nothing is asserted)."""
    out = []
    for r in report["as_fast_as_possible"]:
        factor = r["figures"].get("node_factor")
        if r["robot"] == "arm6" and factor:
            met = factor["median"] >= TARGET_FACTOR
            out.append(f"arm6, real_time_factor 0, subscribed {r['subscribed']}: {factor['median']:.1f}x real time "
                       f"(median; target >= {TARGET_FACTOR:g}x): {'met' if met else 'MISSED'}")
    for r in report["real_time"]:
        if r["publish_rate"] == TARGET_RATE and r["period_ms"] and r["rate_hz"]["median"] is not None:
            rate, p99 = r["rate_hz"]["median"], r["period_ms"]["p99"]
            met = rate >= 0.99 * TARGET_RATE and p99 < TARGET_P99_MS
            out.append(f"{r['robot']}, {TARGET_RATE:g} Hz: received {rate:.1f} Hz (median), p99 period {p99:.3f} ms "
                       f"(target < {TARGET_P99_MS:g} ms): {'met' if met else 'MISSED'}")
    return out


def markdown(report: dict) -> str:
    """The report as markdown: machine, both tables and the targets."""
    v = report["versions"]
    lines = [f"# bench_node: {report['date']}", "", machine_line(report),
             f"Versions: mb_sim {v['mb_sim']}, rclpy {v['rclpy']}, NumPy {v['numpy']}, example-robot-data "
             f"{v['example-robot-data']}. Arguments: {' '.join(report['arguments']) or '(none)'}.", "",
             "Median (min-max) over the 1 s intervals of the steady window. " + report["method"], "",
             f"## real_time_factor 0 (as fast as possible), publish_rate {FAST_PUBLISH_RATE:g} Hz of sim time", ""]
    lines += table(FAST_COLUMNS, [fast_row(r) for r in report["as_fast_as_possible"]])
    lines += ["", "## real_time_factor 1: /joint_states as received", ""]
    lines += table(REAL_TIME_COLUMNS, [real_time_row(r) for r in report["real_time"]])
    lines += ["", "## Targets", "", f"{TARGETS}.", ""] + [f"- {line}" for line in report["verdicts"]]
    return "\n".join(lines) + "\n"


METHOD = ("As fast as possible: 'node' is the achieved factor the node reports on /diagnostics; "
          "'/diagnostics sim time' the sim time of consecutive reports over their arrival times; '/clock' the "
          "stamps received (best effort, depth 1) over their arrival times. Publish periods = sim time advanced x "
          "publish_rate (computed, not counted: each publishes /clock, and /joint_states and /tf only when "
          "subscribed). '/joint_states received' is counted by the measuring rclpy process (depth 10), which "
          "shares the 2 cores and may receive fewer than the node publishes. CPU: the node's utime + stime "
          "(/proc/<pid>/stat) over each interval. Real time: periods between /joint_states arrivals over the "
          "whole window; rate and CPU per 1 s interval.")


def main() -> None:
    """Run every benchmark, print the tables, and write JSON and markdown where asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="arm6 and Solo12 as fast as possible, arm6 in real time, shorter runs")
    parser.add_argument("--json", type=Path, help="write every figure with its spread here")
    parser.add_argument("--markdown", type=Path, help="write the markdown tables here")
    args = parser.parse_args()
    started = time.perf_counter()
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "arguments": sys.argv[1:],
              "machine": machine(), "versions": versions(VERSIONS), "method": METHOD, "targets": TARGETS,
              "as_fast_as_possible": [], "real_time": []}
    reports, seconds = (3, 3.0) if args.quick else (6, 6.0)
    with tempfile.TemporaryDirectory() as cache:
        paths = {name: REPO / "urdf" / f"{name}.urdf" for name in ("pendulum", "arm6", "four_bar", "diff_drive")}
        paths["solo12"] = solo12_urdf()
        fast = ["arm6", "solo12"] if args.quick else ["pendulum", "arm6", "solo12", "four_bar", "diff_drive"]
        real = ["arm6"] if args.quick else ["pendulum", "arm6", "solo12"]
        env = {**os.environ, "MB_SIM_CACHE_DIR": cache}
        env.setdefault("ROS_DOMAIN_ID", "61")
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
        for robot in dict.fromkeys(fast + real):  # compile once, untimed
            subprocess.run([sys.executable, "-m", "mb_sim.cli", "derive", str(paths[robot])], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rclpy.init()
        node = rclpy.create_node("mb_sim_bench")
        try:
            print(f"real_time_factor 0 (as fast as possible), publish_rate {FAST_PUBLISH_RATE:g} Hz: "
                  "median (min-max) over 1 s intervals")
            print("| " + " | ".join(FAST_COLUMNS) + " |")
            for robot in fast:
                for label, topics in SUBSCRIPTIONS.items():
                    r = {"robot": robot, "subscribed": label,
                         "figures": fastest(node, paths[robot], env, topics, reports)}
                    report["as_fast_as_possible"].append(r)
                    print("| " + " | ".join(fast_row(r)) + " |", flush=True)
            print("real_time_factor 1: /joint_states as received")
            print("| " + " | ".join(REAL_TIME_COLUMNS) + " |")
            for robot in real:
                for rate in REAL_TIME_RATES:
                    r = {"robot": robot, "publish_rate": rate, "seconds": seconds,
                         **real_time(node, paths[robot], env, rate, seconds)}
                    report["real_time"].append(r)
                    print("| " + " | ".join(real_time_row(r)) + " |", flush=True)
        finally:
            node.destroy_node()
            rclpy.shutdown()
    report["verdicts"] = verdicts(report)
    report["wall_seconds"] = time.perf_counter() - started
    report["machine"]["load_average_at_end"] = os.getloadavg()
    print(f"targets: {TARGETS}" + "".join(f"\n  {line}" for line in report["verdicts"]))
    for path, text in ((args.json, json.dumps(report, indent=1) + "\n"), (args.markdown, markdown(report))):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    print(f"{report['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()
