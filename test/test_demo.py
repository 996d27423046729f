"""The demo: the PD control law, the controller node over real ROS 2 traffic, and the ``make sim`` runner
with the real simulation node, as separate processes."""
from __future__ import annotations

import io
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rclpy
import yaml
from sensor_msgs.msg import JointState

from mb_sim.ros.controller import DemoController, Gains, SineTarget, pd_efforts
from mb_sim.ros.conversions import seconds
from mb_sim.ros.demo import Snapshot, StatusLine, format_status

CONTROLLER = [sys.executable, "-m", "mb_sim.ros.controller"]
RUNNER = [sys.executable, "-m", "mb_sim.ros.demo"]
STATUS = re.compile(r"^sim\s+(?P<sim>[\d.]+) s \| real-time factor\s+(?P<factor>[\d.]+|--)")


@pytest.fixture(scope="session")
def sim_env(model_cache) -> dict[str, str]:
    """Environment of the processes under test: the tests' shared cache of compiled models."""
    return {**os.environ, "MB_SIM_CACHE_DIR": str(model_cache)}


@pytest.fixture
def context():
    """An rclpy context of this test process, shut down afterwards."""
    ctx = rclpy.Context()
    yield ctx
    rclpy.try_shutdown(context=ctx)


# --- the control law ---------------------------------------------------------------------------

def test_sine_targets_are_spread_evenly_in_phase():
    target = SineTarget(amplitude=0.5, frequency=0.25)
    omega = 2 * math.pi * 0.25
    assert target.at(0.0, 0, 4) == pytest.approx((0.0, 0.5 * omega))
    assert target.at(0.0, 1, 4) == pytest.approx((0.5, 0.0), abs=1e-12)  # a quarter period ahead
    assert target.at(1.0, 0, 4) == pytest.approx((0.5, 0.0), abs=1e-12)  # a quarter period later
    assert target.at(0.0, 2, 4) == pytest.approx((0.0, -0.5 * omega), abs=1e-12)


def test_pd_efforts_push_towards_the_moving_target():
    target = SineTarget(amplitude=0.5, frequency=0.25)
    q0, v0 = target.at(2.0, 0, 2)
    q1, v1 = target.at(2.0, 1, 2)
    gains = [Gains(kp=10.0, kd=2.0), Gains(kp=100.0, kd=0.0)]
    # On target: no effort.  Below target and slower than it: positive effort, by the PD law.
    assert pd_efforts(2.0, [q0, q1], [v0, v1], gains, target) == pytest.approx([0.0, 0.0], abs=1e-12)
    efforts = pd_efforts(2.0, [q0 - 0.1, q1 + 0.2], [v0 - 1.0, v1], gains, target)
    assert efforts == pytest.approx([10.0 * 0.1 + 2.0 * 1.0, -100.0 * 0.2])


def test_pd_efforts_need_one_gain_per_joint():
    with pytest.raises(ValueError):
        pd_efforts(0.0, [0.0, 0.0], [0.0, 0.0], [Gains(1.0, 0.0)], SineTarget(0.5, 0.25))


# --- the controller node ---------------------------------------------------------------------------

@pytest.mark.parametrize(("arguments", "expected"), [([], True), (["-p", "use_sim_time:=false"], False)])
def test_controller_runs_on_sim_time_unless_told_otherwise(context, arguments, expected):
    rclpy.init(args=["--ros-args", *arguments], context=context)
    node = DemoController(context=context)
    try:
        assert node.get_parameter("use_sim_time").value is expected
        assert node.get_clock().ros_time_is_active is expected
    finally:
        node.destroy_node()


def _stamped(names: list[str], positions: list[float], velocities: list[float], t: float) -> JointState:
    """A /joint_states message as the simulation node publishes it."""
    msg = JointState(name=names, position=positions, velocity=velocities, effort=[0.0] * len(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), round((t - int(t)) * 1e9)
    return msg


def _command_for(state: JointState, ros_arguments: list[str], context) -> tuple[JointState, str]:
    """The controller's first command answering `state` (published here), and its log."""
    proc = subprocess.Popen([*CONTROLLER, "--ros-args", *ros_arguments],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    got: list[JointState] = []
    try:
        rclpy.init(context=context)
        node = rclpy.create_node("mb_sim_test_joint_states", context=context)
        publisher = node.create_publisher(JointState, "/joint_states", 10)
        node.create_subscription(JointState, "/mb_sim/joint_commands", got.append, 10)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            publisher.publish(state)
            executor.spin_once(timeout_sec=0.05)
        executor.shutdown()
        node.destroy_node()
    finally:
        proc.send_signal(signal.SIGINT)
        _, log = proc.communicate(timeout=10)
    assert proc.returncode == 0, log
    assert "Traceback" not in log
    assert got, f"no command on /mb_sim/joint_commands; controller log:\n{log}"
    return got[0], log


def test_controller_commands_pd_efforts_with_the_demo_gains(repo, context):
    params = yaml.safe_load((repo / "config" / "demo_controller.yaml").read_text())
    params = params["/**/mb_sim_demo_controller"]["ros__parameters"]
    names, t = ["shoulder_lift_joint", "hinge", "wrist_3_joint"], 1.25
    positions, velocities = [0.1, -0.2, 0.3], [0.5, 0.0, -1.0]
    command, _ = _command_for(_stamped(names, positions, velocities, t),
                              ["--params-file", str(repo / "config" / "demo_controller.yaml")], context)
    gains = [Gains(**params["gains"].get(name, {"kp": params["kp"], "kd": params["kd"]})) for name in names]
    expected = pd_efforts(t, positions, velocities, gains, SineTarget(params["amplitude"], params["frequency"]))
    assert list(command.name) == names
    assert list(command.effort) == pytest.approx(expected, rel=1e-12)
    assert (command.header.stamp.sec, command.header.stamp.nanosec) == (1, 250_000_000)
    assert gains[0].kp > gains[1].kp > gains[2].kp  # arm6's shoulder, the default, arm6's light wrist


def test_controller_commands_only_the_joints_it_is_given(context):
    state = _stamped(["shoulder", "hinge"], [0.0, 0.2], [0.0, -0.1], 3.0)
    command, log = _command_for(state, ["-p", "joints:=[hinge,gripper]", "-p", "kp:=50"], context)
    assert list(command.name) == ["hinge"]
    expected = pd_efforts(3.0, [0.2], [-0.1], [Gains(50.0, 3.0)], SineTarget(0.5, 0.25))
    assert list(command.effort) == pytest.approx(expected, rel=1e-12)
    assert "not in /joint_states: gripper" in log


def test_controller_with_a_bad_parameter_says_which():
    proc = subprocess.run([*CONTROLLER, "--ros-args", "-p", "amplitude:=large"], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 1
    assert "amplitude" in proc.stderr and "must be a number" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- the make sim runner -----------------------------------------------------------------------------

def test_status_line_shows_what_is_known():
    assert "waiting for /clock" in format_status(Snapshot())
    line = format_status(Snapshot(sim_time=12.3456, clock_factor=0.987,
                                  node_values={"achieved real-time factor": "0.990", "total energy [J]": "-9.80671"},
                                  node_message="cannot keep up"))
    assert line == "sim    12.346 s | real-time factor  0.99 (node 0.990) | energy -9.8067 J | cannot keep up"
    assert STATUS.match(line)


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_status_line_is_printed_once_a_second_into_a_log():
    out, log = io.StringIO(), io.StringIO()
    status = StatusLine(out, log)
    for now, text in [(0.0, "a"), (0.5, "b"), (1.0, "c")]:
        status.show(text, now)
    status.message("a log line")
    status.close("d")
    assert out.getvalue() == "a\nc\nd\n"
    assert log.getvalue() == "a log line\n"


def test_status_line_is_rewritten_in_place_on_a_terminal():
    out, log = Terminal(), io.StringIO()
    status = StatusLine(out, log)
    status.show("sim 1", 0.0)
    status.show("sim 2", 0.2)
    status.message("a log line")  # clears the status line, which comes back below the log line
    status.close("sim 3")
    assert out.getvalue() == "\rsim 1\x1b[K\rsim 2\x1b[K\r\x1b[Ksim 2\rsim 3\x1b[K\n"
    assert log.getvalue() == "a log line\n"


def _sim_times(stdout: str) -> list[float]:
    """Sim times of the runner's status lines."""
    return [float(m["sim"]) for m in map(STATUS.match, stdout.splitlines()) if m]


def test_runner_with_duration_shows_sim_time_advancing_and_exits_0(sim_env):
    proc = subprocess.run([*RUNNER, "pendulum", "--duration", "3"], env=sim_env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    times = _sim_times(proc.stdout)
    assert len(times) >= 3, proc.stdout
    assert times == sorted(times) and times[-1] - times[0] >= 1.5, proc.stdout
    factors = [float(m["factor"]) for m in map(STATUS.match, proc.stdout.splitlines()) if m and m["factor"] != "--"]
    assert factors and all(0.2 < f < 2.0 for f in factors), proc.stdout
    assert "(node " in proc.stdout and "energy" in proc.stdout
    assert "[mb_sim_demo_controller]: tracking" in proc.stderr  # the controller's log, relayed


def test_runner_makes_the_simulated_pendulum_track_its_target(sim_env, context):
    rclpy.init(context=context)
    node = rclpy.create_node("mb_sim_test_tracking", context=context)
    samples: list[tuple[float, float]] = []
    node.create_subscription(JointState, "/joint_states", lambda msg: samples.append(
        (seconds(msg.header.stamp), msg.position[0])), 10)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    proc = subprocess.Popen([*RUNNER, "pendulum", "--duration", "8"], env=sim_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
    finally:
        executor.shutdown()
        node.destroy_node()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    target = SineTarget(0.5, 0.25)  # the demo's: config/demo_controller.yaml
    tracked = [(q, target.at(t, 0, 1)[0]) for t, q in samples if t >= 4.0]
    assert len(tracked) > 100
    positions = [q for q, _ in tracked]
    assert max(positions) - min(positions) > 0.6  # it swings (the target: 1 rad peak to peak) ...
    assert max(abs(q - goal) for q, goal in tracked) < 0.2  # ... close to the target


def _children(pid: int) -> dict[int, str]:
    """Child processes of `pid`: command line by process id."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    children = {}
    for child in map(int, out.split()):
        try:  # the whole command line: ps truncates it to the terminal width
            children[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return children


def test_runner_stops_itself_and_its_children_within_2_s_of_ctrl_c(sim_env):
    proc = subprocess.Popen([*RUNNER, "pendulum"], env=sim_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines: list[str] = []
    running = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if STATUS.match(line):
                running.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert running.wait(timeout=300), "".join(lines)
        children = _children(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, err = proc.communicate(timeout=10)
        stop_time = time.monotonic() - started
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert stop_time < 2.0, f"took {stop_time:.2f} s to stop after Ctrl-C"
    assert any("mb_sim_node" in args or "mb_sim.ros.node" in args for args in children.values()), children
    assert any("controller" in args for args in children.values()), children
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "children left running"


def test_runner_reports_a_child_that_exits_early(sim_env):
    proc = subprocess.run([*RUNNER, "/no/such/robot.urdf"], env=sim_env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert "mb_sim_node exited with status 1" in proc.stderr
    assert "/no/such/robot.urdf" in proc.stderr  # the node's own message, relayed
    assert "Traceback" not in proc.stderr
