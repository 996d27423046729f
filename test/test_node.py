"""The installed ``mb_sim_node`` executable, run as its own process and talked to over ROS 2.

No mocks: each node is a real subprocess (compiled models in a session-wide cache directory, so
each robot compiles once per run); the test side is a real rclpy context and executor.  Waits have
deadlines rather than fixed sleeps: the machines are small and noisy.
"""
from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from tf2_msgs.msg import TFMessage

from mb_sim.model import link_poses, load_urdf
from mb_sim.ros.conversions import pose_matrix, seconds, transform_matrix
from mb_sim.ros.simulation_node import LATCHED_QOS

NODE_EXE = Path(sys.executable).parent / "mb_sim_node"
#: Start-up deadline: imports, URDF, and (first time per robot) derivation and compilation.
START_TIMEOUT = 120.0
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
PENDULUM_INERTIA = 1.0 * 1.0**2 + 0.001  # about the hinge [kg m^2]
ARM6_START = {"shoulder_pan_joint": 0.4, "shoulder_lift_joint": -1.1, "elbow_joint": 0.9,
              "wrist_1_joint": -0.6, "wrist_2_joint": 0.5, "wrist_3_joint": 0.2}


# -- helpers ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def node_env(model_cache) -> dict[str, str]:
    """Environment of the node processes: the tests' shared model cache, unbuffered logging."""
    return {**os.environ, "MB_SIM_CACHE_DIR": str(model_cache),
            "RCUTILS_LOGGING_BUFFERED_STREAM": "0", "PYTHONUNBUFFERED": "1"}


class NodeProcess:
    """``mb_sim_node`` with ``--ros-args`` `arguments`; its output (rclpy logs go to stderr) is
    collected line by line."""

    def __init__(self, env: dict[str, str], *arguments: str) -> None:
        self.proc = subprocess.Popen([str(NODE_EXE), "--ros-args", *arguments], env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> tuple[int, float]:
        """Ctrl-C; the exit code and the seconds it took to exit."""
        started = time.monotonic()
        if self.running():
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        elapsed = time.monotonic() - started
        self._reader.join(timeout=5)
        return self.proc.returncode, elapsed


class Peer:
    """The test side: a node in its own rclpy context, spun by hand."""

    def __init__(self, name: str = "mb_sim_test_peer") -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._entities: list = []

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def forget(self) -> None:
        """Destroy the subscriptions and publishers made so far (the end of a test)."""
        for entity in self._entities:
            if isinstance(entity, rclpy.subscription.Subscription):
                self.node.destroy_subscription(entity)
            else:
                self.node.destroy_publisher(entity)
        self._entities.clear()

    def collect(self, message_type, topic: str, qos=RELIABLE) -> list:
        """Every message on `topic` from now on, appended as it arrives."""
        received: list = []
        self._entities.append(self.node.create_subscription(message_type, topic, received.append, qos))
        return received

    def spin_until(self, condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=0.02)
        return True

    def spin_for(self, seconds_: float) -> None:
        self.spin_until(lambda: False, seconds_)

    def publisher(self, message_type, topic: str):
        """A publisher on `topic`, once the node's subscription is matched."""
        publisher = self.node.create_publisher(message_type, topic, 10)
        self._entities.append(publisher)
        assert self.spin_until(lambda: publisher.get_subscription_count() > 0, 20), f"nobody subscribes {topic}"
        return publisher

    def call(self, service_type, name: str, request, timeout: float = 20.0):
        client = self.node.create_client(service_type, name)
        assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout), f"no response from {name}"
        self.node.destroy_client(client)
        return future.result()


@pytest.fixture(scope="module")
def shared_peer():
    peer = Peer()
    yield peer
    peer.close()


@pytest.fixture
def peer(shared_peer):
    """The test side's node (one per module: discovery takes a while), clean for each test."""
    yield shared_peer
    shared_peer.forget()


def start_node(env: dict[str, str], *arguments: str) -> NodeProcess:
    """A running node: it has published /robot_description, at the end of its start-up."""
    process = NodeProcess(env, *arguments)
    probe = Peer("mb_sim_test_probe")
    try:
        description = probe.collect(String, "/robot_description", LATCHED_QOS)
        ready = probe.spin_until(lambda: description or not process.running(), START_TIMEOUT)
    finally:
        probe.close()
    if not ready or not process.running():
        process.stop()
        pytest.fail(f"mb_sim_node did not start:\n{process.output}")
    return process


def stop_node(process: NodeProcess) -> None:
    code, elapsed = process.stop()
    assert code == 0, process.output
    assert "Traceback" not in process.output, process.output
    assert elapsed < 2.0, f"took {elapsed:.2f} s to stop after Ctrl-C"


class NodePool:
    """At most one simulation node at a time (they share topic and service names): tests that
    ask for the same arguments in a row share one node; other arguments replace it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._arguments: tuple[str, ...] | None = None
        self._process: NodeProcess | None = None

    def get(self, *arguments: str) -> NodeProcess:
        if self._process is None or arguments != self._arguments or not self._process.running():
            self.close()
            self._process, self._arguments = start_node(self.env, *arguments), arguments
        return self._process

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_node(process)


@pytest.fixture(scope="module")
def nodes(node_env):
    pool = NodePool(node_env)
    yield pool
    pool.close()


def wait_for_output(peer: Peer, process: NodeProcess, pattern: str, timeout: float = 10.0,
                    start: int = 0) -> bool:
    """Spin until a line after line `start` of the node's output matches `pattern`."""
    regex = re.compile(pattern)
    return peer.spin_until(lambda: any(regex.search(line) for line in process.lines[start:]), timeout)


def stamp_of(message) -> float:
    return seconds(message.header.stamp)


def reset(peer: Peer) -> None:
    response = peer.call(Trigger, "/mb_sim/reset", Trigger.Request())
    assert response.success, response.message


# -- start-up and shut-down -------------------------------------------------------------------
def _receive_latched(topic: str, timeout: float) -> str | None:
    """First message on a transient-local topic, or None after `timeout` seconds."""
    peer = Peer("mb_sim_test_description")
    try:
        got = peer.collect(String, topic, LATCHED_QOS)
        peer.spin_until(lambda: got, timeout)
    finally:
        peer.close()
    return got[0].data if got else None


def test_node_publishes_robot_description_and_stops_on_ctrl_c(repo, node_env, nodes):
    nodes.close()
    proc = subprocess.Popen([str(NODE_EXE), "--ros-args", "-p", "urdf_file:=pendulum"], env=node_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        description = _receive_latched("/robot_description", timeout=START_TIMEOUT)
    finally:
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        out, err = proc.communicate(timeout=10)
        stop_time = time.monotonic() - started
    assert description == (repo / "urdf" / "pendulum.urdf").read_text()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert stop_time < 2.0, f"took {stop_time:.2f} s to stop after Ctrl-C"


def test_node_with_missing_urdf_file_says_which_parameter(node_env):
    proc = subprocess.run([str(NODE_EXE), "--ros-args", "-p", "urdf_file:=/no/such/robot.urdf"],
                          capture_output=True, text=True, timeout=60, env=node_env)
    assert proc.returncode == 1
    assert "urdf_file" in proc.stderr and "/no/such/robot.urdf" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ctrl_c_during_start_up_is_quiet(node_env, nodes):
    nodes.close()
    for delay in (0.5, 2.0):  # importing; loading the robot
        process = NodeProcess(node_env, "-p", "urdf_file:=arm6")
        time.sleep(delay)
        code, elapsed = process.stop()
        assert code == 0, process.output
        assert "Traceback" not in process.output, process.output
        assert elapsed < 2.0, f"took {elapsed:.2f} s to stop after Ctrl-C at {delay} s"


def test_bad_parameters_name_the_parameter_and_exit_1(tmp_path, node_env):
    bad_urdf = tmp_path / "bad.urdf"
    bad_urdf.write_text('<robot name="bad"><link name="a"/><link name="b"/>'
                        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
                        '<axis xyz="0 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    cases = {
        "physics_dt": ["-p", "physics_dt:=0.0"],
        "publish_rate": ["-p", "publish_rate:=-5.0"],
        "real_time_factor": ["-p", "real_time_factor:=-1.0"],
        "urdf_file": ["-p", f"urdf_file:={bad_urdf}"],
        "initial_positions.nope": ["-p", "initial_positions.nope:=1.0"],
        "disabled_constraints": ["-p", "disabled_constraints:=[elbow]"],
        "spring_force_scale": ["-p", "spring_force_scale:=0.0"],
    }
    procs = {name: subprocess.Popen([str(NODE_EXE), "--ros-args", *arguments], env=node_env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, arguments in cases.items()}
    errors = {}
    for name, proc in procs.items():
        out, errors[name] = proc.communicate(timeout=120)
        assert proc.returncode == 1, (name, out, errors[name])
        last = errors[name].strip().splitlines()[-1]
        assert last.startswith(f"mb_sim_node: parameter {name}"), (name, errors[name])
        assert "Traceback" not in errors[name], errors[name]
    assert "bad.urdf" in errors["urdf_file"] and "axis" in errors["urdf_file"]
    assert "unknown constraint 'elbow'" in errors["disabled_constraints"]
    assert "must be positive" in errors["spring_force_scale"]


def test_parameters_out_of_their_bounds_are_refused_at_once(node_env):
    # Before: physics_dt 1e-12 ran 1.4e9 steps in one C call (deaf to signals), publish_rate
    # 1e-300 ended in an OverflowError traceback.  The bounds are declared in the descriptors.
    cases = [
        (["physics_dt:=1e-12"], "parameter physics_dt: must be within [1e-06, 0.1] s, got 1e-12"),
        (["physics_dt:=5"], "parameter physics_dt: must be within [1e-06, 0.1] s, got 5"),  # an integer
        (["physics_dt:=.nan"], "parameter physics_dt: must be a finite number, got nan"),
        (["publish_rate:=1e-300"], "parameter publish_rate: must be within [0.1, 10000] Hz, got 1e-300"),
        (["real_time_factor:=1e9"], "parameter real_time_factor: must be within [0, 1000], got 1000000000.0"),
        (["publish_rate:=2000.0"], "parameter publish_rate: 2000 Hz publishes more often than the physics steps "
                                   "(physics_dt 0.001 s): at most 1000 Hz"),
        (["physics_dt:=1e-6", "publish_rate:=0.1"], "parameters physics_dt and publish_rate: a publish period of "
                                                    "10 s is 1e+07 steps of 1e-06 s, more than 100000"),
    ]
    procs = [(expected, subprocess.Popen(
        [str(NODE_EXE), "--ros-args", *[item for a in arguments for item in ("-p", a)]], env=node_env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)) for arguments, expected in cases]
    for expected, proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, (expected, out, err)
        assert err.strip().splitlines()[-1].startswith(f"mb_sim_node: {expected}"), err
        assert "Traceback" not in err, err


# -- repairs and strict ----------------------------------------------------------------------------
#: A link whose inertia has a rounding-level negative principal moment (-1e-7 of 1: printed with
#: 7 digits), as test_inertia_policy's; the loader raises it to zero.
ROUNDED_ARM = (
    '<robot name="rounded"><link name="base"/><link name="b"><inertial><origin xyz="0 0 -0.5"/>'
    '<mass value="1"/><inertia ixx="0.5" ixy="0.5000001" ixz="0" iyy="0.5" iyz="0" izz="1"/></inertial></link>'
    '<joint name="j" type="revolute"><parent link="base"/><child link="b"/><axis xyz="0 1 0"/>'
    '<limit lower="-1" upper="1" effort="10" velocity="5"/></joint></robot>')


def test_the_start_log_lists_each_repair_once_and_strict_refuses_naming_the_link(tmp_path, node_env, nodes):
    nodes.close()
    path = tmp_path / "rounded.urdf"
    path.write_text(ROUNDED_ARM)
    process = start_node(node_env, "-p", f"urdf_file:={path}")
    try:
        deadline = time.monotonic() + 10
        while not any("physics dt" in line for line in process.lines) and time.monotonic() < deadline:
            time.sleep(0.05)  # the last line of the start log
        log = process.output
    finally:
        stop_node(process)
    assert re.search(r"\[WARN\].*robot 'rounded' \(urdf_file\): 1 repair made while loading the URDF "
                     r"\(strict:=true refuses them instead\):\n", log), log
    (repair,) = [line for line in process.lines if "rounding-level negative principal moment" in line]  # once
    assert "[WARN]" in repair and "repair: link 'b': inertia has rounding-level negative" in repair
    assert "raised them to 0" in repair

    refused = subprocess.run([str(NODE_EXE), "--ros-args", "-p", f"urdf_file:={path}", "-p", "strict:=true"],
                             capture_output=True, text=True, timeout=60, env=node_env)
    assert refused.returncode == 1, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr
    (line,) = [line for line in refused.stderr.splitlines() if "link 'b'" in line]
    assert line == refused.stderr.strip().splitlines()[-1]
    assert line.startswith(f"mb_sim_node: parameter strict: {path}: link 'b' <inertial>: inertia is not positive "
                           "definite"), line


# -- the pendulum, running in real time ---------------------------------------------------------
@pytest.fixture
def pendulum(nodes):
    return nodes.get("-p", "urdf_file:=pendulum", "-p", "command_timeout:=0.5")


def test_constant_effort_accelerates_the_pendulum_by_effort_over_inertia(pendulum, peer):
    reset(peer)
    states = peer.collect(JointState, "/joint_states")
    assert peer.spin_until(lambda: len(states) >= 3, 10)
    effort = 2.0
    command = peer.publisher(Float64MultiArray, "/mb_sim/effort_commands")

    def moving_for(duration: float) -> bool:
        moving = [s for s in states if s.velocity[0] != 0.0]
        return bool(moving) and stamp_of(moving[-1]) - stamp_of(moving[0]) >= duration

    deadline = time.monotonic() + 20
    while not moving_for(0.25) and time.monotonic() < deadline:
        command.publish(Float64MultiArray(data=[effort]))  # refreshed well within command_timeout
        peer.spin_for(0.05)
    assert moving_for(0.25), "the pendulum does not move"
    first = next(k for k, s in enumerate(states) if s.velocity[0] != 0.0)
    assert first > 0 and states[first - 1].velocity[0] == 0.0
    t0 = stamp_of(states[first - 1])  # the effort acts from this sample on (at rest, q = 0)
    samples = [(stamp_of(s) - t0, s.velocity[0]) for s in states[first - 1:] if stamp_of(s) - t0 <= 0.2 + 1e-9]
    s, v = np.array(samples).T
    assert len(s) >= 10 and s[-1] > 0.15
    assert states[first].name == ["hinge"]
    assert all(state.effort[0] == effort for state in states[first:first + len(s) - 1])  # applied effort
    # v(s) = a (s - d) - a (g / l) (s - d)^3 / 6 + ...: gravity's torque grows with the angle, so the
    # straight line through 0.2 s would be ~6 % low; fitting the cubic term as well gives the
    # acceleration at the bottom, where gravity gives no torque.  The effort starts at some d in the
    # first period (a tick cut short under load resumes the period after the command arrived), so
    # the fit has a constant term and starts after the first moving sample (d <= 0.02 s: < 1 %).
    s, v = s[2:], v[2:]
    (_, a, _), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(s), s, s**3]), v, rcond=None)
    assert a == pytest.approx(effort / PENDULUM_INERTIA, rel=0.02)


def test_stale_commands_fall_back_to_zero_effort(pendulum, peer):
    reset(peer)
    states = peer.collect(JointState, "/joint_states")
    mark = len(pendulum.lines)
    command = peer.publisher(JointState, "/mb_sim/joint_commands")
    command.publish(JointState(name=["hinge"], effort=[0.7]))
    sent = time.monotonic()
    arrivals: list[tuple[float, float]] = []
    seen = 0

    def effort_back_to_zero() -> bool:
        nonlocal seen
        for state in states[seen:]:
            arrivals.append((time.monotonic(), state.effort[0]))
        seen = len(states)
        applied = [k for k, (_, e) in enumerate(arrivals) if e == 0.7]
        return bool(applied) and any(e == 0.0 for _, e in arrivals[applied[0]:])

    assert peer.spin_until(effort_back_to_zero, 10), f"efforts seen: {sorted({e for _, e in arrivals})}"
    zero_at = next(t for t, e in arrivals[[e for _, e in arrivals].index(0.7):] if e == 0.0)
    assert zero_at - sent > 0.4, "the command timed out early"
    assert wait_for_output(peer, pendulum, r"no command for 0\.5 s: effort of hinge set to zero", start=mark)
    assert len([line for line in pendulum.lines[mark:] if "set to zero" in line]) == 1  # logged once


def test_a_pause_does_not_time_commands_out(pendulum, peer):
    # Commands age with the running simulation: a controller on sim time sends nothing while
    # paused, so a pause longer than the timeout must not zero its last command.
    reset(peer)
    states = peer.collect(JointState, "/joint_states")
    mark = len(pendulum.lines)
    peer.publisher(JointState, "/mb_sim/joint_commands").publish(JointState(name=["hinge"], effort=[0.7]))
    assert peer.spin_until(lambda: states and states[-1].effort[0] == 0.7, 5)
    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=True)).success
    peer.spin_for(1.2)  # more than twice the 0.5 s timeout
    assert not any("set to zero" in line for line in pendulum.lines[mark:]), "timed out while paused"
    count = len(states)
    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False)).success
    assert peer.spin_until(lambda: len(states) > count + 2, 5)
    assert states[count].effort[0] == 0.7, "the command did not survive the pause"
    assert peer.spin_until(lambda: states[-1].effort[0] == 0.0, 5), "the command never timed out after the pause"
    assert wait_for_output(peer, pendulum, r"no command for 0\.5 s: effort of hinge set to zero", start=mark)


@pytest.mark.parametrize("topic, message, problem", [
    ("/mb_sim/effort_commands", Float64MultiArray(data=[1.0, 2.0]), r"expected 1 values .*hinge.*got 2"),
    ("/mb_sim/effort_commands", Float64MultiArray(data=[math.nan]), r"non-finite effort \(hinge=nan\)"),
    ("/mb_sim/joint_commands", JointState(name=["nope"], effort=[1.0]), r"unknown .*'nope'"),
    ("/mb_sim/joint_commands", JointState(name=["hinge"], effort=[1.0, 2.0]), r"1 names but 2 values in effort"),
    ("/mb_sim/joint_commands", JointState(name=["hinge"], effort=[]), r"joint\(s\) 'hinge' have no position, velocity or effort"),
    ("/mb_sim/joint_commands", JointState(name=["hinge"], effort=[math.inf]), r"infinite effort \(hinge=inf\)"),
    ("/mb_sim/voltage_commands", Float64MultiArray(data=[6.0]), r"no joint has a motor"),
    ("/mb_sim/voltage_joint_commands", JointState(name=["hinge"], effort=[6.0]), r"no joint has a motor"),
], ids=["wrong-length", "nan", "unknown-joint", "length-mismatch", "no-value", "inf", "voltage", "voltage-by-name"])
def test_bad_commands_are_rejected_with_a_warning_and_the_node_goes_on(pendulum, peer, topic, message, problem):
    reset(peer)
    mark = len(pendulum.lines)
    publisher = peer.publisher(type(message), topic)
    publisher.publish(message)
    assert wait_for_output(peer, pendulum, rf"WARN.*{re.escape(topic)}: command rejected: {problem}", start=mark), \
        "".join(pendulum.lines[mark:])
    states = peer.collect(JointState, "/joint_states")
    assert peer.spin_until(lambda: len(states) >= 5, 10), "the node stopped publishing"
    assert pendulum.running()
    assert states[-1].effort[0] == 0.0  # the bad command changed nothing


def test_a_robot_without_motors_has_no_motor_states(pendulum, peer):
    assert wait_for_output(peer, pendulum, re.escape(
        "~/voltage_commands: no joint has a motor, every voltage command will be rejected"))
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    assert peer.spin_until(lambda: diagnostics, 5)
    assert not [kv.key for kv in diagnostics[-1].status[0].values if kv.key.startswith("motor ")]
    assert peer.node.get_publishers_info_by_topic("/mb_sim/motor_states") == []
    for topic in ("/mb_sim/voltage_commands", "/mb_sim/voltage_joint_commands"):  # there, refusing
        assert peer.spin_until(lambda: peer.node.get_subscriptions_info_by_topic(topic), 5), topic


def test_joint_states_arrive_at_the_publish_rate(pendulum, peer):
    states = peer.collect(JointState, "/joint_states")
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    assert peer.spin_until(lambda: states, 10)
    count = len(states)
    peer.spin_for(5.0)
    rate = (len(states) - count) / 5.0
    assert 80.0 <= rate <= 120.0, f"{rate:.1f} Hz"
    stamps = [stamp_of(s) for s in states]
    assert all(b > a for a, b in zip(stamps, stamps[1:])), "sim time stamps must increase"
    assert diagnostics, "no /diagnostics"
    status = diagnostics[-1].status[0]
    assert status.name == "mb_sim: pendulum"
    values = {kv.key: kv.value for kv in status.values}
    for key in ("sim time [s]", "target real-time factor", "achieved real-time factor", "physics dt [s]",
                "constraint position error", "constraint velocity error", "total energy [J]",
                "command age [s]", "backend"):
        assert key in values, sorted(values)
    assert float(values["achieved real-time factor"]) > 0.0
    assert values["target real-time factor"] == "1" and values["physics dt [s]"] == "0.001"
    # OK while keeping up; a noisy machine may make it fall behind for a moment (WARN), never ERROR.
    assert status.level in (DiagnosticStatus.OK, DiagnosticStatus.WARN)
    assert status.level == DiagnosticStatus.WARN or status.message == "running"


def test_divergence_pauses_with_an_error_and_reset_recovers(pendulum, peer):
    reset(peer)
    mark = len(pendulum.lines)
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    command = peer.publisher(Float64MultiArray, "/mb_sim/effort_commands")
    command.publish(Float64MultiArray(data=[1e308]))  # finite, but the state overflows
    assert wait_for_output(peer, pendulum, r"ERROR.*simulation diverged at t = [0-9.e-]+ s", start=mark)
    assert peer.spin_until(lambda: any(d.status[0].level == DiagnosticStatus.ERROR for d in diagnostics), 5)
    refused = peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False))
    assert not refused.success and "~/reset" in refused.message
    reset(peer)
    clock = peer.collect(Clock, "/clock")
    assert peer.spin_until(lambda: len({seconds(c.clock) for c in clock}) > 3, 10), "no recovery"
    assert pendulum.running()


# -- pause, step and reset, with the parameters from YAML -------------------------------------------
@pytest.fixture
def swinging_pendulum(nodes, repo, tmp_path):
    overrides = tmp_path / "swinging.yaml"
    overrides.write_text("mb_sim:\n  ros__parameters:\n    publish_rate: 50.0\n"
                         "    initial_positions:\n      hinge: 0.3\n")
    return nodes.get("--params-file", str(repo / "config" / "mb_sim.yaml"), "--params-file", str(overrides))


def test_pause_step_and_reset(swinging_pendulum, peer):
    clock = peer.collect(Clock, "/clock")
    states = peer.collect(JointState, "/joint_states")
    times = lambda: [seconds(c.clock) for c in clock]  # noqa: E731
    assert peer.spin_until(lambda: len(set(times())) > 3, 10), "/clock does not advance"

    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=True)).success
    count, deadline = -1, time.monotonic() + 5
    while count != len(clock) and time.monotonic() < deadline:  # the messages sent before the pause
        count = len(clock)
        peer.spin_for(0.2)
    paused_at, count = times()[-1], len(clock)
    peer.spin_for(0.5)
    assert times()[-1] == paused_at, "/clock advanced while paused"
    # Paused, /clock keeps coming with the paused time (as Gazebo's), so nodes on sim time see
    # time stand still instead of no time at all: about 25 messages in 0.5 s at 50 Hz.
    assert len(clock) - count >= 5, "/clock is not published while paused"
    assert set(times()[count:]) == {paused_at}

    response = peer.call(Trigger, "/mb_sim/step", Trigger.Request())
    assert response.success, response.message
    assert peer.spin_until(lambda: times()[-1] != paused_at, 5)  # (the paused time keeps coming until then)
    assert round((times()[-1] - paused_at) * 1e9) == 20_000_000  # one publish period at 50 Hz
    assert peer.spin_until(lambda: stamp_of(states[-1]) == times()[-1], 5)

    # Reset while paused: back to the initial position (from YAML) at sim time 0, still paused.
    reset(peer)
    assert peer.spin_until(lambda: stamp_of(states[-1]) == 0.0, 5)
    assert states[-1].position[0] == pytest.approx(0.3, abs=1e-12)
    assert states[-1].velocity[0] == 0.0
    peer.spin_for(0.3)
    assert times()[-1] == 0.0 and stamp_of(states[-1]) == 0.0

    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False)).success
    assert peer.spin_until(lambda: times()[-1] > 0.1, 10), "/clock does not resume"
    refused = peer.call(Trigger, "/mb_sim/step", Trigger.Request())
    assert not refused.success and "not paused" in refused.message
    assert min(s.position[0] for s in states) < 0.29  # it swings once running


def test_start_paused_then_as_fast_as_possible(nodes, peer):
    nodes.get("-p", "urdf_file:=pendulum", "-p", "start_paused:=true", "-p", "real_time_factor:=0.0")
    clock = peer.collect(Clock, "/clock")
    assert peer.spin_until(lambda: len(clock) >= 5, 5), "/clock is not published while paused"
    assert all(seconds(c.clock) == 0.0 for c in clock), "/clock advanced while paused"
    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False)).success
    assert peer.spin_until(lambda: clock and seconds(clock[-1].clock) > 0.0, 5)
    wall, sim = time.monotonic(), seconds(clock[-1].clock)
    peer.spin_for(1.0)
    factor = (seconds(clock[-1].clock) - sim) / (time.monotonic() - wall)
    assert factor > 1.5, f"real-time factor {factor:.2f} with real_time_factor: 0"


# -- arm6: /tf and /tf_static against forward kinematics ---------------------------------------------
@pytest.fixture
def arm6(nodes):
    arguments = [item for joint, value in ARM6_START.items() for item in ("-p", f"initial_positions.{joint}:={value}")]
    return nodes.get("-p", "urdf_file:=arm6", *arguments)


@pytest.fixture(scope="module")
def arm6_kinematics(repo):
    robot = load_urdf(repo / "urdf" / "arm6.urdf")
    return robot, link_poses(robot)


def test_tf_equals_forward_kinematics(arm6, arm6_kinematics, peer):
    robot, poses_of = arm6_kinematics
    coordinates = [str(q).removesuffix("(t)") for q in robot.system.q]
    states = peer.collect(JointState, "/joint_states")
    transforms = peer.collect(TFMessage, "/tf")

    def matched() -> list:
        """(joint states, transforms) pairs with the same stamp."""
        by_stamp = {stamp_of(m.transforms[0]): m for m in transforms}
        return [(s, by_stamp[stamp_of(s)]) for s in states if stamp_of(s) in by_stamp]

    assert peer.spin_until(lambda: len(matched()) >= 5, 20)
    for state, message in matched()[-5:]:
        position = dict(zip(state.name, state.position))
        assert position != ARM6_START  # it moves under gravity
        poses = poses_of([position[name.removesuffix("_q")] for name in coordinates])
        edges = {(tf.header.frame_id, tf.child_frame_id): tf for tf in message.transforms}
        assert len(edges) == 6
        for joint in robot.joints.values():
            d = joint.joint_description
            if d.type == "fixed":
                assert (d.parent, d.child) not in edges
                continue
            received = transform_matrix(edges[d.parent, d.child].transform)
            expected = np.linalg.solve(poses[d.parent], poses[d.child])
            np.testing.assert_allclose(received, expected, atol=1e-9, err_msg=joint.name)


def test_tf_static_holds_fixed_joints_and_the_world(arm6, arm6_kinematics, peer):
    robot, poses_of = arm6_kinematics
    static = peer.collect(TFMessage, "/tf_static", LATCHED_QOS)
    assert peer.spin_until(lambda: static, 20), "nothing on /tf_static"
    assert len(static) == 1
    edges = {(tf.header.frame_id, tf.child_frame_id): transform_matrix(tf.transform) for tf in static[0].transforms}
    assert set(edges) == {("world", "base_link"), ("wrist_3_link", "tool0")}
    np.testing.assert_array_equal(edges["world", "base_link"], np.eye(4))
    poses = poses_of(np.zeros(len(robot.system.q)))
    np.testing.assert_allclose(edges["wrist_3_link", "tool0"],
                               np.linalg.solve(poses["wrist_3_link"], poses["tool0"]), atol=1e-9)


# -- a floating body: /odom -----------------------------------------------------------------------------
def test_floating_base_odometry_matches_tf(nodes, peer):
    nodes.get("-p", "urdf_file:=free_body", "-p", "world_frame:=odom", "-p", "frame_prefix:=fb/")
    odometry = peer.collect(Odometry, "/odom")
    transforms = peer.collect(TFMessage, "/tf")
    static = peer.collect(TFMessage, "/tf_static", LATCHED_QOS)

    def matched() -> list:
        """(odometry, transform) pairs with the same stamp."""
        by_stamp = {stamp_of(m.transforms[0]): m.transforms[0] for m in transforms}
        return [(o, by_stamp[stamp_of(o)]) for o in odometry if stamp_of(o) in by_stamp]

    assert peer.spin_until(lambda: len(matched()) > 5 and static, 20)
    nodes.close()
    assert [(tf.header.frame_id, tf.child_frame_id) for tf in static[0].transforms] == [("fb/body", "fb/camera_mount")]
    for odom, tf in matched():
        assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "fb/body")
        assert (tf.header.frame_id, tf.child_frame_id) == ("odom", "fb/body")
        np.testing.assert_allclose(pose_matrix(odom.pose.pose), transform_matrix(tf.transform), atol=1e-12)
        # Free fall from rest, not rotating: the body frame keeps the world's axes.
        t = stamp_of(odom)
        twist = odom.twist.twist
        assert twist.linear.x == pytest.approx(0.0, abs=1e-12) and twist.linear.y == pytest.approx(0.0, abs=1e-12)
        assert twist.linear.z == pytest.approx(-9.81 * t, abs=1e-9)
        assert odom.pose.pose.position.z == pytest.approx(1.0 - 0.5 * 9.81 * t**2, abs=1e-9)


# -- switching a named constraint (the kinematic zoo's mimic joint) ------------------------------
def mimic_errors(states: list) -> list[float]:
    """|q_finger - (-0.5 q_shoulder + 0.1)| per message: the zoo's mimic relation."""
    errors = []
    for state in states:
        q = dict(zip(state.name, state.position))
        errors.append(abs(q["finger_joint"] - (-0.5 * q["shoulder"] + 0.1)))
    return errors


def test_a_constraint_singularity_passed_is_logged_once(nodes, peer):
    """The delta robot flailing under efforts passes a constraint singularity every 0.1 s or so
    (test_constraint_singularities.py): the node logs the first as a warning naming the loop
    joints, once, and Python's own warning is not printed beside it."""
    delta = nodes.get("-p", "urdf_file:=delta_robot", "-p", "command_timeout:=0.0")
    push = peer.publisher(JointState, "/mb_sim/joint_commands")
    push.publish(JointState(name=["motor_1", "motor_2", "motor_3"], effort=[1.3, -1.7, 0.4]))
    said = r"\[WARN\].*passed through or near a singular configuration of constraints? 'wrist_"
    assert wait_for_output(peer, delta, said, timeout=20), delta.output
    peer.spin_for(1.0)  # (several more crossings)
    assert len([line for line in delta.lines if "singular configuration" in line]) == 1, delta.output
    assert "ConstraintSingularityWarning" not in delta.output


def test_constraint_service_disables_and_reenables_the_mimic(nodes, peer, repo):
    zoo = nodes.get("-p", f"urdf_file:={repo / 'test' / 'urdf' / 'kinematic_zoo.urdf'}",
                    "-p", "disabled_constraints:=[finger_joint]", "-p", "command_timeout:=0.0")
    assert wait_for_output(peer, zoo, re.escape(
        "constraint 'finger_joint' (disabled): switch it with ~/constraints/finger_joint/enable")), zoo.output
    service = "/mb_sim/constraints/finger_joint/enable"
    states = peer.collect(JointState, "/joint_states")
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    push = peer.publisher(JointState, "/mb_sim/joint_commands")
    push.publish(JointState(name=["shoulder"], effort=[3.0]))
    # Started disabled: the finger does not follow the shoulder.
    assert peer.spin_until(lambda: mimic_errors(states) and mimic_errors(states)[-1] > 1e-2, 20), \
        mimic_errors(states)[-5:]
    assert peer.spin_until(lambda: diagnostics, 5)
    values = {kv.key: kv.value for kv in diagnostics[-1].status[0].values}
    assert values["constraint finger_joint"] == "disabled"

    response = peer.call(SetBool, service, SetBool.Request(data=True))
    assert response.success and "constraint 'finger_joint' enabled" in response.message, response.message
    enabled_at = float(re.search(r"at sim time (\S+) s", response.message).group(1))  # .6g: 1e-5 s
    at = lambda: [m for m in states if abs(stamp_of(m) - enabled_at) < 1e-4]  # noqa: E731
    later = lambda: [m for m in states if stamp_of(m) > enabled_at + 1e-4]  # noqa: E731
    assert peer.spin_until(lambda: len(later()) > 20, 10)
    assert min(mimic_errors(at())) < 1e-12  # republished at once, projected onto the constraint
    assert max(mimic_errors(later())) < 1e-9
    diagnostics.clear()
    assert peer.spin_until(lambda: diagnostics, 5)
    assert {kv.key: kv.value for kv in diagnostics[-1].status[0].values}["constraint finger_joint"] == "enabled"

    response = peer.call(SetBool, service, SetBool.Request(data=False))
    assert response.success and "disabled" in response.message
    push.publish(JointState(name=["shoulder"], effort=[-3.0]))  # off its stop, if it sits there
    count = len(states)
    assert peer.spin_until(lambda: len(states) > count + 5 and mimic_errors(states)[-1] > 1e-6, 20)
    assert zoo.running()
