"""``mb-sim-demo``, the runner behind ``make sim``: the simulation and the demo controller, with a status line.

Starts ``mb_sim_node`` (the robot named on the command line, default arm6) and
``mb_sim_demo_controller`` (``config/demo_controller.yaml``) as child processes, relays their logs to
stderr, listens to ``/clock`` and ``/diagnostics`` and keeps one status line on stdout: sim time, the
real-time factor achieved (``/clock`` against the wall clock), and the factor and total energy the
node reports.  On a terminal the line is rewritten in place, otherwise printed once a second.

Ctrl-C (or SIGTERM) stops everything within 2 s: the children get SIGINT, then SIGTERM, then SIGKILL,
and the runner exits with status 0.  A child that exits by itself ends the run with status 1.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TextIO

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from rclpy.signals import SignalHandlerOptions
from rosgraph_msgs.msg import Clock

from mb_sim.resources import share_directory
from mb_sim.session.pacing import RateMonitor
from mb_sim.ros.conversions import seconds
from mb_sim.ros.teardown import bounded_teardown

__all__ = ["main", "Snapshot", "format_status", "StatusLine", "Monitor", "Child", "DEFAULT_ROBOT"]

DEFAULT_ROBOT = "arm6"
#: Seconds the children get for SIGINT, then for SIGTERM, before SIGKILL (the total stays under 2 s).
SIGINT_GRACE, SIGTERM_GRACE = 1.0, 0.4
#: Seconds to wait for a stopped child's last output.
RELAY_GRACE = 0.2
#: Status refresh period [s] on a terminal and otherwise.
TTY_PERIOD, LOG_PERIOD = 0.1, 1.0
#: Key/values of the node's diagnostics shown on the status line.
NODE_FACTOR_KEY, ENERGY_KEY = "achieved real-time factor", "total energy [J]"


@dataclass
class Snapshot:
    """What the runner knows of the simulation: the latest /clock and /diagnostics."""

    sim_time: float | None = None
    clock_factor: float | None = None
    node_values: dict[str, str] = field(default_factory=dict)
    node_message: str = ""


def format_status(s: Snapshot) -> str:
    """The one-line status: sim time, real-time factors, energy, and any warning of the node."""
    if s.sim_time is None:
        return "waiting for /clock (a robot's first run derives and compiles its equations)"
    factor = "real-time factor " + ("  -- " if s.clock_factor is None else f"{s.clock_factor:5.2f}")
    if NODE_FACTOR_KEY in s.node_values:
        factor += f" (node {s.node_values[NODE_FACTOR_KEY]})"
    parts = [f"sim {s.sim_time:9.3f} s", factor]
    if ENERGY_KEY in s.node_values:
        parts.append(f"energy {float(s.node_values[ENERGY_KEY]):.4f} J")
    if s.node_message:
        parts.append(s.node_message)
    return " | ".join(parts)


class StatusLine:
    """Prints the status to `out` (rewritten in place on a terminal) and relays logs to `log`."""

    def __init__(self, out: TextIO, log: TextIO) -> None:
        self.out, self.log = out, log
        self.tty = out.isatty()
        self._text = ""
        self._shown_at = -float("inf")
        self._lock = threading.Lock()

    def _fit(self, text: str) -> str:
        """`text` cut to the terminal's width: a wrapped line could not be rewritten in place."""
        return text[:shutil.get_terminal_size().columns - 1] if self.tty else text

    def show(self, text: str, now: float) -> None:
        """Update the status if its refresh period has passed."""
        with self._lock:
            if now - self._shown_at < (TTY_PERIOD if self.tty else LOG_PERIOD):
                return
            self._text, self._shown_at = self._fit(text), now
            self.out.write(f"\r{self._text}\x1b[K" if self.tty else f"{self._text}\n")
            self.out.flush()

    def message(self, text: str) -> None:
        """A log line, printed above the status line on a terminal."""
        with self._lock:
            if self.tty:
                self.out.write("\r\x1b[K")
                self.out.flush()
            self.log.write(f"{text}\n")
            self.log.flush()
            if self.tty and self._text:
                self.out.write(self._text)
                self.out.flush()

    def close(self, text: str) -> None:
        """Print the final status as a line of its own."""
        with self._lock:
            self.out.write(f"\r{self._fit(text)}\x1b[K\n" if self.tty else f"{text}\n")
            self.out.flush()


class Monitor(Node):
    """Listens to /clock and /diagnostics and keeps a :class:`Snapshot`."""

    def __init__(self) -> None:
        super().__init__("mb_sim_demo_monitor")
        self.snapshot = Snapshot()
        self.first_clock: float | None = None
        self._rate = RateMonitor()
        self.create_subscription(Clock, "/clock", self._on_clock, qos_profile_sensor_data)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos_profile_sensor_data)

    def _on_clock(self, msg: Clock) -> None:
        """Sim time and the factor achieved over the last second (restarted when time jumps back)."""
        now, sim = time.monotonic(), seconds(msg.clock)
        if self.snapshot.sim_time is not None and sim < self.snapshot.sim_time:
            self._rate.reset()
        self.first_clock = self.first_clock or now
        self._rate.add(now, sim)
        self.snapshot.sim_time, self.snapshot.clock_factor = sim, self._rate.factor()

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        """The node's own status (named ``mb_sim: <robot>``); its message unless all is well."""
        for status in msg.status:
            if status.name.startswith("mb_sim:"):
                self.snapshot.node_values = {kv.key: kv.value for kv in status.values}
                self.snapshot.node_message = status.message if status.level != status.OK else ""


def _command(script: str, module: str) -> list[str]:
    """The console script next to this interpreter, else the module run by it (source checkouts)."""
    executable = Path(sys.executable).parent / script
    return [str(executable)] if executable.is_file() else [sys.executable, "-m", module]


class Child:
    """One child process in its own session (so only the runner signals it), its output relayed."""

    def __init__(self, name: str, command: list[str], status: StatusLine) -> None:
        self.name = name
        env = dict(os.environ)
        if status.log.isatty():
            env.setdefault("RCUTILS_COLORIZED_OUTPUT", "1")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env, start_new_session=True)
        self._relay = threading.Thread(target=self._forward, args=(self.process.stdout, status), daemon=True)
        self._relay.start()

    @staticmethod
    def _forward(stream: IO[str], status: StatusLine) -> None:
        """Copy the child's output, line by line, until it closes."""
        for line in stream:
            status.message(line.rstrip("\n"))

    def signal(self, signum: int) -> None:
        """Send `signum` if the child still runs."""
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def finish(self) -> None:
        """Reap the child and let its last output through (not waiting for grandchildren holding the pipe)."""
        self.process.wait()
        self._relay.join(timeout=RELAY_GRACE)


def _stop(children: list[Child]) -> None:
    """SIGINT, then SIGTERM, then SIGKILL for the children still running after each grace period."""
    for signum, grace in ((signal.SIGINT, SIGINT_GRACE), (signal.SIGTERM, SIGTERM_GRACE), (signal.SIGKILL, 0.0)):
        for child in children:
            child.signal(signum)
        deadline = time.monotonic() + grace
        while any(c.process.poll() is None for c in children) and time.monotonic() < deadline:
            time.sleep(0.02)
    for child in children:
        child.finish()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(prog="mb-sim-demo", description=__doc__.splitlines()[0])
    parser.add_argument("robot", nargs="?", default=DEFAULT_ROBOT,
                        help=f"URDF shipped with mb_sim (name) or a path (default {DEFAULT_ROBOT})")
    parser.add_argument("--real-time-factor", type=float, default=1.0,
                        help="sim seconds per wall second; 0: as fast as possible (default 1)")
    parser.add_argument("--duration", type=float, default=None,
                        help="stop by itself this many wall seconds after the simulation starts")
    return parser.parse_args(argv)


def _children(args: argparse.Namespace, status: StatusLine) -> list[Child]:
    """Start the simulation node and the demo controller."""
    config = share_directory() / "config"
    node = [*_command("mb_sim_node", "mb_sim.ros.node"), "--ros-args", "--params-file", str(config / "mb_sim.yaml"),
            "-p", f"urdf_file:={args.robot}", "-p", f"real_time_factor:={args.real_time_factor}"]
    controller = [*_command("mb_sim_demo_controller", "mb_sim.ros.controller"),
                  "--ros-args", "--params-file", str(config / "demo_controller.yaml")]
    return [Child("mb_sim_node", node, status), Child("mb_sim_demo_controller", controller, status)]


def _run(args: argparse.Namespace, monitor: Monitor, children: list[Child], status: StatusLine,
         stop: threading.Event) -> int:
    """Spin and show the status until Ctrl-C, the duration, or a child's exit; the exit status."""
    executor = SingleThreadedExecutor()
    executor.add_node(monitor)
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
            now = time.monotonic()
            status.show(format_status(monitor.snapshot), now)
            for child in children:
                if child.process.poll() is not None:
                    child.finish()
                    status.message(f"mb-sim-demo: {child.name} exited with status {child.process.returncode}")
                    return 1
            if args.duration is not None and monitor.first_clock and now - monitor.first_clock >= args.duration:
                return 0
        return 0
    finally:
        executor.shutdown()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mb-sim-demo``: run until Ctrl-C, ``--duration``, or a child's exit."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    args = _parse(argv)
    status = StatusLine(sys.stdout, sys.stderr)
    status.message(f"mb-sim-demo: simulating {args.robot} with the demo controller; Ctrl-C stops")
    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
    monitor, children = None, []
    try:
        monitor = Monitor()
        children = _children(args, status)
        code = _run(args, monitor, children, status, stop)
    finally:
        _stop(children)
        with bounded_teardown():
            if monitor is not None:
                monitor.destroy_node()
            # spin_once leaves executor objects (its callback generator, tasks) in reference
            # cycles; collect them now, not during interpreter shutdown, where rclpy's Task
            # finalizer fails on torn-down modules and prints a traceback.
            gc.collect()
            rclpy.try_shutdown()
    status.close(format_status(monitor.snapshot))
    return code


if __name__ == "__main__":
    sys.exit(main())
