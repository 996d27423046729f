"""The differential-drive controller: its pure logic (description, kinematics, PI loop, odometry),
the loop closed on the Python Simulator, the node on its own, and the node driving ``mb_sim_node``
over DDS, both as separate processes on sim time."""
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
from geometry_msgs.msg import Twist, TwistStamped, Vector3
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from mb_sim.ros.conversions import seconds
from mb_sim.ros.diff_drive import (
    DescriptionError, DriveLoop, PIGains, SpeedPI, VelocityCommand, WheelOdometry, drive_from_description, se2_step,
)
from mb_sim.ros.diff_drive_controller import DESCRIPTION_QOS, DiffDriveController

BIN = Path(sys.executable).parent
CONTROLLER = [str(BIN / "mb_sim_diff_drive_controller")]
NODE = [str(BIN / "mb_sim_node")]
ODOM_TOPIC = "/mb_sim_diff_drive_controller/odom"
COMMAND_TOPIC = "/mb_sim/voltage_joint_commands"
GAINS = PIGains(kp=0.2, ki=5.0)  # config/diff_drive_controller.yaml's
COMMAND_TIMEOUT = 1.0  # cmd_vel_timeout of the test over DDS [s]
R, B = 0.15, 0.6  # wheel radius, half track of urdf/diff_drive.urdf [m]


@pytest.fixture(scope="module")
def urdf(repo) -> str:
    return (repo / "urdf" / "diff_drive.urdf").read_text()


@pytest.fixture(scope="module")
def drive(urdf):
    return drive_from_description(urdf)


# --- the description --------------------------------------------------------------------------
def test_the_seed_robot_is_read_from_its_description(drive):
    assert (drive.left.joint, drive.right.joint) == ("left_wheel_joint", "right_wheel_joint")  # by y
    assert (drive.left.motor, drive.right.motor) == ("left_motor", "right_motor")
    assert drive.base == "base_link"
    assert drive.separation == pytest.approx(2 * B) and drive.left_radius == drive.right_radius == R
    assert (drive.left.y, drive.right.y, drive.axle_x) == (0.6, -0.6, 0.0)
    assert drive.left.direction == drive.right.direction == 1.0  # axes along +y
    for wheel in (drive.left, drive.right):
        assert wheel.feedforward_gain == 1.0  # K n [V s/rad]: K = 1 N m/A, n = 1, no friction
        assert wheel.voltage_limit == 48.0


def test_wheel_joints_can_be_named(urdf):
    drive = drive_from_description(urdf, right_wheel_joint="right_wheel_joint")
    assert (drive.left.joint, drive.right.joint) == ("left_wheel_joint", "right_wheel_joint")
    with pytest.raises(DescriptionError, match="left wheel .* is not to the left of the right wheel"):
        drive_from_description(urdf, left_wheel_joint="right_wheel_joint", right_wheel_joint="left_wheel_joint")
    with pytest.raises(DescriptionError, match="left_wheel_joint 'front' is not a joint of a motor-driven rolling "
                                               "wheel of robot 'diff_drive'; those are: right_wheel_joint, "
                                               "left_wheel_joint"):
        drive_from_description(urdf, left_wheel_joint="front")


@pytest.mark.parametrize(("edit", "message"), [
    (None, re.escape("robot 'pendulum' is not a differential drive: it needs two rolling wheels driven by DC "
                     "motors (<rolling_wheel>, or a <collision> cylinder on the ground, on a link whose revolute or "
                     "continuous joint has a <dc_motor>); found none")),
    (lambda text: re.sub(r'<dc_motor name="left_motor".*?/>', "", text, flags=re.S),
     "robot 'diff_drive' is not a differential drive: .*found right_wheel_joint$"),
    (lambda text: re.sub(r'<rolling_wheel name="right_wheel_contact".*?/>', "", text),
     "is not a differential drive: .*found left_wheel_joint$"),
    (lambda text: text.replace('<origin xyz="0 0.6 0"/><axis xyz="0 1 0"/>',
                               '<origin xyz="0 0.6 0"/><axis xyz="1 0 0"/>'),
     "wheel joint 'left_wheel_joint': its axis in the frame of 'base_link' is \\[1.0, 0.0, 0.0\\], not along y"),
    (lambda text: text.replace('<origin xyz="0 0.6 0"/>', '<origin xyz="0.2 0.6 0"/>'),
     "wheels 'left_wheel_joint' \\(x = 0.2 m\\) and 'right_wheel_joint' \\(x = 0 m\\) are not on one axle"),
    (lambda text: text[:200], "the robot description is not a valid URDF: <string>: malformed XML"),
], ids=["no wheels", "one motor", "one wheel", "axis along x", "two axles", "no URDF"])
def test_a_description_without_two_motorized_wheels_is_refused(repo, urdf, edit, message):
    text = (repo / "urdf" / "pendulum.urdf").read_text() if edit is None else edit(urdf)
    with pytest.raises(DescriptionError, match=message):
        drive_from_description(text)


def test_a_wheel_turning_the_other_way_and_an_offset_base_are_taken_into_account(urdf):
    flipped = urdf.replace('<origin xyz="0 0.6 0"/><axis xyz="0 1 0"/>', '<origin xyz="0 0.7 0"/><axis xyz="0 -1 0"/>')
    drive = drive_from_description(flipped)
    assert drive.left.direction == -1.0 and drive.separation == pytest.approx(1.3)
    left, right = drive.joint_speeds(0.5, 0.3)
    assert left == pytest.approx(-(0.5 - 0.3 * 0.7) / R)  # the base frame is 0.05 m right of the midpoint
    assert right == pytest.approx((0.5 + 0.3 * 0.6) / R)
    assert drive.body_velocity(left, right) == pytest.approx((0.5, 0.0, 0.3))


# --- kinematics --------------------------------------------------------------------------------
def test_commanded_velocity_becomes_wheel_speeds_and_back(drive):
    left, right = drive.joint_speeds(0.5, 0.3)
    assert right == pytest.approx((0.5 + 0.3 * B) / R)  # omega_R = (v + w b) / r
    assert left == pytest.approx((0.5 - 0.3 * B) / R)  # omega_L = (v - w b) / r
    assert drive.body_velocity(left, right) == pytest.approx((0.5, 0.0, 0.3))
    assert drive.joint_speeds(0.0, 1.0) == pytest.approx((-B / R, B / R))  # turning on the spot


def test_multipliers_scale_track_and_radii(urdf):
    drive = drive_from_description(urdf, separation_multiplier=1.1, left_radius_multiplier=0.9,
                                   right_radius_multiplier=1.2)
    assert drive.separation == pytest.approx(1.32)
    left, right = drive.joint_speeds(0.5, 0.3)
    assert left == pytest.approx((0.5 - 0.3 * 0.66) / (0.9 * R))
    assert right == pytest.approx((0.5 + 0.3 * 0.66) / (1.2 * R))
    with pytest.raises(DescriptionError, match="wheel_separation_multiplier must be a positive number, got 0"):
        drive_from_description(urdf, separation_multiplier=0)


# --- the PI loop -------------------------------------------------------------------------------
def test_pi_loop_adds_feedforward_proportional_and_integral_terms():
    pi = SpeedPI(PIGains(kp=0.5, ki=2.0), feedforward_gain=1.5, limit=48.0)
    assert pi.update(4.0, 4.0, 0.01) == pytest.approx(6.0)  # on target: the feed-forward K n omega alone
    assert pi.update(4.0, 3.0, 0.1) == pytest.approx(6.0 + 0.5 + 0.2)  # e = 1: kp e + ki e dt
    assert pi.integral == pytest.approx(0.2)
    assert pi.update(4.0, 3.0, 0.0) == pytest.approx(6.7)  # dt = 0: no integration
    pi.reset()
    assert pi.integral == 0.0 and pi.hold(0.0, 2.0) == pytest.approx(-1.0)  # stopping: P only


def test_pi_loop_does_not_wind_up_at_the_voltage_limit():
    pi = SpeedPI(PIGains(kp=0.5, ki=2.0), feedforward_gain=1.0, limit=48.0)
    for _ in range(1000):  # 10 s asking for 40 rad/s of a wheel held back at 10 rad/s: 55 V wanted
        assert pi.update(40.0, 10.0, 0.01) == 48.0
    assert pi.integral == 0.0  # a plain integrator would hold 600 V (and keep the wheel at 48 V for long)
    assert pi.update(40.0, 40.0, 0.01) == pytest.approx(40.0)  # released: the feed-forward at once
    pi.reset()
    for _ in range(1000):  # a small error within the limit integrates ...
        pi.update(40.0, 39.0, 0.01)
    assert pi.integral == pytest.approx(48.0 - 40.5, abs=0.03)  # ... until the output reaches the limit
    assert pi.update(40.0, 41.0, 0.01) < 48.0  # and backs off as soon as the error turns
    pi.reset()
    for _ in range(1000):  # the same the other way
        assert pi.update(-40.0, -10.0, 0.01) == -48.0
    assert pi.integral == 0.0


def test_pi_loop_compares_with_the_lagged_reference():
    pi = SpeedPI(PIGains(kp=1.0, ki=0.0), feedforward_gain=1.0, limit=48.0, time_constant=0.03)
    # A step from rest: the model starts at the measured speed, then follows with the lag.
    assert pi.update(3.0, 0.0, 0.0) == pytest.approx(3.0)  # the feed-forward only, no P kick
    expected_model = 3.0 * (1 - math.exp(-0.01 / 0.03))
    assert pi.update(3.0, 0.0, 0.01) == pytest.approx(3.0 + expected_model)
    assert pi.model_speed == pytest.approx(expected_model)


# --- odometry ----------------------------------------------------------------------------------
def _arc(v: float, w: float, t: float) -> tuple[float, float, float]:
    """Pose at `t` of a base starting at the origin along x with constant v, w."""
    return v / w * math.sin(w * t), v / w * (1 - math.cos(w * t)), w * t


@pytest.mark.parametrize("position_feedback", [True, False])
def test_odometry_follows_an_analytic_arc(drive, position_feedback):
    v, w = 0.5, 0.3
    left_speed, right_speed = drive.joint_speeds(v, w)
    odometry = WheelOdometry(drive, position_feedback, window=10)
    t, times = 0.0, []
    rng = np.random.default_rng(1)
    while t < 10.0:
        times.append(t)
        t += rng.uniform(0.005, 0.03)  # irregular intervals, as DDS delivers them
    for t in times:
        odometry.update(t, (left_speed * t + 1.0, right_speed * t - 2.0), (left_speed, right_speed))
    x, y, heading = _arc(v, w, times[-1])
    assert (odometry.x, odometry.y) == pytest.approx((x, y), abs=1e-9)
    assert odometry.heading == pytest.approx(math.remainder(heading, math.tau), abs=1e-12)
    assert odometry.twist == pytest.approx((v, 0.0, w), abs=1e-9)
    odometry.reset()
    assert (odometry.x, odometry.y, odometry.heading, odometry.twist) == (0.0, 0.0, 0.0, (0.0, 0.0, 0.0))


def test_odometry_steps_are_arcs_and_a_straight_line_stays_straight():
    assert se2_step(1.0, 0.0, 0.0, math.pi / 2) == pytest.approx((0.0, 1.0, 0.0), abs=1e-15)
    assert se2_step(math.pi / 2, 0.0, math.pi / 2, 0.0) == pytest.approx((1.0, 1.0, math.pi / 2))  # a quarter circle
    assert se2_step(0.0, 1.0, 0.0, 0.0) == pytest.approx((0.0, 1.0, 0.0))  # sideways (axle off the origin)


# --- the loop: commands, timeout, reset --------------------------------------------------------
def test_velocity_command_goes_stale_after_its_timeout():
    command = VelocityCommand(timeout=0.5)
    assert command.target(0.0) == (0.0, 0.0)  # none yet
    command.set(0.5, 0.3, 1.0)
    assert command.target(1.5) == (0.5, 0.3) and command.target(1.51) == (0.0, 0.0)


def test_drive_loop_stops_without_fresh_commands_and_restarts_when_time_goes_back(drive):
    loop = DriveLoop(drive, GAINS, cmd_vel_timeout=0.5)
    out = loop.update(0.0, [0.0, 0.0], [0.0, 0.0])
    assert out.target == (0.0, 0.0) and out.voltages == {"left_wheel_joint": 0.0, "right_wheel_joint": 0.0}
    loop.command(0.5, 0.3)  # arrives at t = 0
    out = loop.update(0.01, [0.0, 0.0], [0.0, 0.0])
    assert out.target == (0.5, 0.3)
    left, right = drive.joint_speeds(0.5, 0.3)
    assert out.voltages["right_wheel_joint"] > right > left > 0  # feed-forward plus the loop's push
    for k in range(2, 51):
        out = loop.update(k * 0.01, [0.0, 0.0], [left, right])
        assert not out.timed_out
    out = loop.update(0.51, [0.0, 0.0], [left, right])
    assert out.timed_out and out.target == (0.0, 0.0)
    assert all(pi.integral == 0.0 for pi in loop.loops.values())
    assert out.voltages["right_wheel_joint"] == pytest.approx(-GAINS.kp * right)  # braking
    assert not loop.update(0.52, [0.0, 0.0], [0.0, 0.0]).timed_out  # said once
    loop.command(0.2, 0.0)
    loop.update(0.6, [1.0, 1.0], [0.0, 0.0])
    loop.update(0.7, [2.0, 2.0], [0.0, 0.0])
    assert (loop.odometry.x, loop.odometry.y) == pytest.approx((2 * R, 0.0))  # both wheels turned 2 rad
    out = loop.update(0.0, [0.0, 0.0], [0.0, 0.0])  # the simulation was reset
    assert out.time_jumped_back and out.target == (0.0, 0.0)
    assert loop.odometry.x == 0.0
    with pytest.raises(ValueError, match="not finite"):
        loop.command(math.nan, 0.0)


def test_a_command_before_the_first_measurement_counts_from_it(drive):
    loop = DriveLoop(drive, GAINS, cmd_vel_timeout=0.5)
    loop.command(0.5, 0.0)
    assert loop.update(100.0, [0.0, 0.0], [0.0, 0.0]).target == (0.5, 0.0)
    assert loop.update(100.5, [0.0, 0.0], [0.0, 0.0]).target == (0.5, 0.0)
    assert loop.update(100.51, [0.0, 0.0], [0.0, 0.0]).target == (0.0, 0.0)


# --- the loop closed on the Python simulator ---------------------------------------------------
def _closed_loop(repo, cache_dir, drive, duration: float, command_until: float):
    """The drive loop on the Simulator at 100 Hz, voltages held between updates; samples of
    (t, forward speed, yaw rate, true x, y, heading, odometry x, y, heading)."""
    from mb_sim.sim import Simulator

    sim = Simulator(repo / "urdf" / "diff_drive.urdf", cache_dir=cache_dir)
    loop = DriveLoop(drive, GAINS, cmd_vel_timeout=0.5, reference_time_constant=0.03)
    motors = {drive.left.joint: drive.left.motor, drive.right.joint: drive.right.motor}
    samples = []
    while sim.time < duration - 1e-9:
        out = sim.outputs(dynamics=False)
        if sim.time < command_until:
            loop.command(0.5, 0.3)
        result = loop.update(sim.time, [out.joint_positions[j] for j in loop.joints],
                             [out.joint_velocities[j] for j in loop.joints])
        sim.set_voltages({motors[joint]: voltage for joint, voltage in result.voltages.items()})
        x, y, heading = sim.q[:3]
        vx, vy, w = sim.u[:3]  # world axes
        samples.append((sim.time, math.cos(heading) * vx + math.sin(heading) * vy, w, x, y, heading,
                        loop.odometry.x, loop.odometry.y, loop.odometry.heading))
        sim.advance(0.01)
    return np.array(samples)


def test_the_loop_on_the_simulator_tracks_stops_and_its_odometry_matches(repo, model_cache, drive):
    samples = _closed_loop(repo, model_cache, drive, duration=5.0, command_until=3.0)
    t, v, w = samples[:, 0], samples[:, 1], samples[:, 2]
    driving = (t >= 0.5) & (t < 3.0)
    assert np.all(np.abs(v[driving] - 0.5) <= 0.01) and np.all(np.abs(w[driving] - 0.3) <= 0.006)  # 2 %
    assert v.max() < 0.5 * 1.02 and w.max() < 0.3 * 1.05  # overshoot
    stopped = t >= 3.0 + 0.5 + 0.3  # the timeout, then 0.3 s
    assert np.all(np.abs(v[stopped]) < 0.005) and np.all(np.abs(w[stopped]) < 0.005)
    error = np.hypot(samples[:, 3] - samples[:, 6], samples[:, 4] - samples[:, 7])
    assert error.max() < 1e-5  # rolling without slipping: dead reckoning is exact up to the sampling
    assert np.abs(np.remainder(samples[:, 5] - samples[:, 8] + np.pi, 2 * np.pi) - np.pi).max() < 1e-5


# --- the node ----------------------------------------------------------------------------------
@pytest.fixture
def context():
    ctx = rclpy.Context()
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize(("arguments", "expected"), [([], True), (["-p", "use_sim_time:=false"], False)])
def test_controller_runs_on_sim_time_unless_told_otherwise(context, arguments, expected):
    rclpy.init(args=["--ros-args", *arguments], context=context)
    node = DiffDriveController(context=context)
    try:
        assert node.get_parameter("use_sim_time").value is expected
        assert node.get_clock().ros_time_is_active is expected
        assert node.get_parameter("use_stamped_vel").value is True
        assert node.get_parameter("cmd_vel_timeout").value == 0.5
    finally:
        node.destroy_node()


def test_controller_parameters_file_holds_the_defaults(repo, context):
    import yaml

    params = yaml.safe_load((repo / "config" / "diff_drive_controller.yaml").read_text())
    params = params["mb_sim_diff_drive_controller"]["ros__parameters"]
    rclpy.init(args=["--ros-args"], context=context)
    node = DiffDriveController(context=context)
    try:
        for name, value in params.items():
            default = node.get_parameter(name).value
            assert (default if isinstance(default, (bool, int, float, str)) else list(default)) == value, name
    finally:
        node.destroy_node()


@pytest.mark.parametrize(("arguments", "reason"), [
    (["-p", "kp:=fast"], "must be a number"),
    (["-p", "ki:=-1"], "must be non-negative"),
    (["-p", "cmd_vel_timeout:=0"], "must be positive"),
    (["-p", "velocity_rolling_window_size:=0"], "must be a positive integer"),
])
def test_controller_with_a_bad_parameter_says_which(arguments, reason):
    proc = subprocess.run([*CONTROLLER, "--ros-args", *arguments], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    name = arguments[1].split(":=")[0]
    assert proc.stderr.startswith("mb_sim_diff_drive_controller: bad parameter: ")
    assert name in proc.stderr and reason in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


class Peer:
    """The test side: one node in its own context, spun by hand."""

    def __init__(self, name: str) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def collect(self, message_type, topic: str, qos=100) -> list:
        received: list = []
        self.node.create_subscription(message_type, topic, received.append, qos)
        return received

    def spin_until(self, condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=0.01)
        return True

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class Process:
    """A child process whose merged output is collected line by line."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._reader.start()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self) -> tuple[int, float]:
        """Ctrl-C; the exit code and the seconds it took."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        elapsed = time.monotonic() - started
        self._reader.join(timeout=5)
        return self.proc.returncode, elapsed


def _joint_state(t: float, positions, velocities) -> JointState:
    message = JointState(name=["right_wheel_joint", "left_wheel_joint", "caster"], position=[*positions, 0.0],
                         velocity=[*velocities, 0.0], effort=[0.0, 0.0, 0.0])
    message.header.stamp.sec, message.header.stamp.nanosec = int(t), round((t - int(t)) * 1e9)
    return message


def test_controller_refuses_a_robot_without_two_motorized_wheels(repo):
    controller = Process(CONTROLLER)
    peer = Peer("mb_sim_test_description")
    try:
        peer.node.create_publisher(String, "/robot_description", DESCRIPTION_QOS).publish(
            String(data=(repo / "urdf" / "pendulum.urdf").read_text()))
        assert peer.spin_until(lambda: controller.proc.poll() is not None, 30), controller.output
    finally:
        peer.close()
        code, _ = controller.stop()
    assert code == 1
    assert ("mb_sim_diff_drive_controller: cannot drive this robot: robot 'pendulum' is not a differential drive"
            in controller.output)
    assert "Traceback" not in controller.output


def test_controller_answers_joint_states_with_voltages_and_odometry(urdf):
    """Unstamped Twist commands and custom frame ids; a fake simulator: the wheels turn as commanded."""
    controller = Process([*CONTROLLER, "--ros-args", "-p", "use_stamped_vel:=false", "-p", "odom_frame_id:=wheel_odom",
                          "-p", "base_frame_id:=chassis"])
    peer = Peer("mb_sim_test_fake_sim")
    try:
        peer.node.create_publisher(String, "/robot_description", DESCRIPTION_QOS).publish(String(data=urdf))
        states = peer.node.create_publisher(JointState, "/joint_states", 10)
        commands = peer.node.create_publisher(Twist, "/cmd_vel", 10)
        voltages = peer.collect(JointState, COMMAND_TOPIC)
        odometry = peer.collect(Odometry, ODOM_TOPIC)
        left, right = drive_from_description(urdf).joint_speeds(0.5, 0.3)
        t = 0.0

        def publish() -> bool:
            nonlocal t
            commands.publish(Twist(linear=Vector3(x=0.5), angular=Vector3(z=0.3)))
            states.publish(_joint_state(t, (right * t, left * t), (right, left)))
            t += 0.01
            peer.executor.spin_once(timeout_sec=0.01)
            return False

        assert peer.spin_until(lambda: publish() or len(odometry) > 150, 60), controller.output
    finally:
        peer.close()
        code, elapsed = controller.stop()
    assert code == 0 and elapsed < 2.0, controller.output
    assert "Traceback" not in controller.output
    last = voltages[-1]
    assert sorted(last.name) == ["left_wheel_joint", "right_wheel_joint"]
    assert last.header.stamp == states_stamp(last)  # answers a /joint_states message, with its stamp
    by_name = dict(zip(last.name, last.effort))
    # Wheels at the commanded speeds: the feed-forward K n omega alone (K = n = 1).
    assert by_name["right_wheel_joint"] == pytest.approx(right, abs=1e-9)
    assert by_name["left_wheel_joint"] == pytest.approx(left, abs=1e-9)
    odom = odometry[-1]
    assert (odom.header.frame_id, odom.child_frame_id) == ("wheel_odom", "chassis")
    assert odom.twist.twist.linear.x == pytest.approx(0.5, abs=1e-9)
    assert odom.twist.twist.angular.z == pytest.approx(0.3, abs=1e-9)
    # From the origin, where the first /joint_states after the description found the robot.
    elapsed = _yaw(odom.pose.pose.orientation) / 0.3
    assert 0.5 < elapsed < 2 * math.pi / 0.3
    x, y, _ = _arc(0.5, 0.3, elapsed)
    assert (odom.pose.pose.position.x, odom.pose.pose.position.y) == pytest.approx((x, y), abs=1e-6)


def states_stamp(message: JointState):
    """The stamp a fake /joint_states message at a multiple of 10 ms would carry."""
    t = round(seconds(message.header.stamp), 2)
    return _joint_state(t, (0.0, 0.0), (0.0, 0.0)).header.stamp


# --- with the simulator, over DDS --------------------------------------------------------------
def _yaw(orientation) -> float:
    return 2.0 * math.atan2(orientation.z, orientation.w)


def test_controller_drives_the_simulated_robot_over_dds(repo, model_cache):
    """mb_sim_node (diff_drive, world_frame odom, real time) and the controller as separate
    processes on sim time; a peer publishes /cmd_vel (0.5 m/s, 0.3 rad/s) at 20 Hz for 4 s of sim
    time, then stops.  Odometry tolerance: 0.1 mm measured 1e-6 m over 1.7 m; the only error is
    the controller's arc per /joint_states interval while the speeds change (the start, the stop),
    which grows with the interval squared: 25 times for a catch-up tick of 5 periods.  The command
    timeout is 1 s here, not the default 0.5 s: this test's own process publishes the commands, and
    on a loaded two-core machine it once went 0.5 s of sim time without publishing (the robot
    stopped as it should, and the test failed on tracking)."""
    env = {**os.environ, "MB_SIM_CACHE_DIR": str(model_cache),
           "RCUTILS_LOGGING_BUFFERED_STREAM": "0", "PYTHONUNBUFFERED": "1"}
    peer = Peer("mb_sim_test_cmd_vel")
    description = peer.collect(String, "/robot_description", DESCRIPTION_QOS)
    truth = peer.collect(Odometry, "/odom")
    wheel_odometry = peer.collect(Odometry, ODOM_TOPIC)
    simulator = Process([*NODE, "--ros-args", "-p", "urdf_file:=diff_drive", "-p", "world_frame:=odom",
                         "-p", "real_time_factor:=1.0"], env)
    controller = Process([*CONTROLLER, "--ros-args", "--params-file",
                          str(repo / "config" / "diff_drive_controller.yaml"),
                          "-p", f"cmd_vel_timeout:={COMMAND_TIMEOUT}"], env)
    command_period = 4.0  # sim seconds of /cmd_vel
    try:
        assert peer.spin_until(lambda: description and truth and wheel_odometry, 120), \
            f"not running:\n{simulator.output}\n{controller.output}"
        publisher = peer.node.create_publisher(TwistStamped, "/cmd_vel", 10)
        assert peer.spin_until(lambda: publisher.get_subscription_count() > 0, 20)
        start = seconds(truth[-1].header.stamp)
        command = TwistStamped()
        command.twist.linear.x, command.twist.angular.z = 0.5, 0.3
        last_sent, sent = 0.0, []  # wall time of the last command; sim times of all

        def drive() -> bool:
            nonlocal last_sent
            now = seconds(truth[-1].header.stamp)
            if now < start + command_period and time.monotonic() - last_sent >= 0.05:  # 20 Hz, like a teleop
                publisher.publish(command)
                last_sent = time.monotonic()
                sent.append(now)
            return now >= start + command_period + COMMAND_TIMEOUT + 1.5

        assert peer.spin_until(drive, 60), "sim time did not advance"
    finally:
        peer.close()
        results = {name: process.stop() for name, process in (("controller", controller), ("simulator", simulator))}
    for name, (code, elapsed) in results.items():
        process = controller if name == "controller" else simulator
        assert code == 0 and elapsed < 2.0, process.output
        assert "Traceback" not in process.output, process.output

    # Tracking: the ground truth's twist (base frame) within 2 % of the command within 3 s ...
    t = np.array([seconds(m.header.stamp) for m in truth])
    v = np.array([m.twist.twist.linear.x for m in truth])
    w = np.array([m.twist.twist.angular.z for m in truth])
    assert len(sent) > 20, f"this test published {len(sent)} /cmd_vel"
    gap = np.diff(sent).max()  # sim time between two commands of this test's own publisher
    assert gap < COMMAND_TIMEOUT, f"this test published no /cmd_vel for {gap:.2f} s of sim time"
    commanded = (t >= sent[0]) & (t <= sent[-1])
    off = commanded & ((np.abs(v - 0.5) > 0.02 * 0.5) | (np.abs(w - 0.3) > 0.02 * 0.3))
    settled = t[off].max() + 0.01 if off.any() else sent[0]
    assert (commanded & (t >= settled)).sum() > 100, (f"off the command at t = {t[off]} s (commands from "
                                                      f"{sent[0]:.2f} s)\n{controller.output}")
    steady = commanded & (t >= sent[0] + 1.0)
    print(f"\nwithin 2 % {settled - sent[0]:.2f} s after the first /cmd_vel; from 1 s on |v - 0.5| <= "
          f"{np.abs(v[steady] - 0.5).max():.1e} m/s, |w - 0.3| <= {np.abs(w[steady] - 0.3).max():.1e} rad/s")
    assert settled - sent[0] <= 3.0
    # ... stopped within 1.5 s of sim time after the last /cmd_vel (1 s of it the timeout) ...
    moving = (t > sent[-1]) & ((np.abs(v) >= 0.005) | (np.abs(w) >= 0.005))
    stopped_after = (t[moving].max() + 0.01 if moving.any() else sent[-1]) - sent[-1]
    print(f"stopped (|v| < 5 mm/s, |w| < 5 mrad/s) {stopped_after:.2f} s after the last /cmd_vel")
    assert COMMAND_TIMEOUT < stopped_after <= COMMAND_TIMEOUT + 0.5 and t.max() > sent[-1] + 1.5
    # ... and the wheel odometry where the ground truth is, matched by stamp.
    by_stamp = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in truth}
    pairs = [(by_stamp[key], m) for m in wheel_odometry
             if (key := (m.header.stamp.sec, m.header.stamp.nanosec)) in by_stamp]
    assert len(pairs) > 200
    position_error = max(math.hypot(a.pose.pose.position.x - b.pose.pose.position.x,
                                    a.pose.pose.position.y - b.pose.pose.position.y) for a, b in pairs)
    heading_error = max(abs(math.remainder(_yaw(a.pose.pose.orientation) - _yaw(b.pose.pose.orientation), math.tau))
                        for a, b in pairs)
    distance = max(math.hypot(a.pose.pose.position.x, a.pose.pose.position.y) for a, _ in pairs)
    print(f"odometry vs ground truth over {len(pairs)} stamps ({distance:.2f} m from the start): position "
          f"{position_error:.2e} m, heading {heading_error:.2e} rad")
    assert distance > 1.0
    assert position_error < 1e-4 and heading_error < 1e-4


# --- the type of /cmd_vel ------------------------------------------------------------------------
@pytest.mark.parametrize(("arguments", "sent", "hint"), [
    ([], Twist, "-p use_stamped_vel:=false"),  # teleop_twist_keyboard's default against the default
    (["--ros-args", "-p", "use_stamped_vel:=false"], TwistStamped, "set use_stamped_vel true"),
], ids=["Twist to a TwistStamped controller", "TwistStamped to a Twist controller"])
def test_a_cmd_vel_publisher_of_the_other_type_gets_one_warning_saying_what_to_change(arguments, sent, hint):
    """DDS never delivers a publisher of the other type: without the warning its commands vanish
    silently.  A second such publisher (another node) gets its own warning, and by then the first
    has still been warned once only."""
    controller = Process([*CONTROLLER, *arguments])
    first, second = Peer("mb_sim_test_teleop"), Peer("mb_sim_test_teleop2")
    try:
        first.node.create_publisher(sent, "/cmd_vel", 10)
        warning = f"/mb_sim_test_teleop publishes geometry_msgs/msg/{sent.__name__} on /cmd_vel"
        assert first.spin_until(lambda: warning in controller.output, 20), controller.output
        second.node.create_publisher(sent, "/cmd_vel", 10)
        assert second.spin_until(lambda: "/mb_sim_test_teleop2 publishes" in controller.output, 20), controller.output
    finally:
        first.close()
        second.close()
        code, _ = controller.stop()
    assert code == 0 and "Traceback" not in controller.output, controller.output
    assert controller.output.count(warning) == 1, controller.output
    (line,) = [line for line in controller.lines if warning in line]
    assert "WARN" in line and hint in line and "none of its commands arrive" in line, line


def test_a_cmd_vel_publisher_of_the_right_type_gets_no_warning():
    """The controller looks once a second; a matching publisher and the mismatched one it is
    told apart from: only the mismatched one is named."""
    controller = Process(CONTROLLER)
    peer = Peer("mb_sim_test_right_type")
    other = Peer("mb_sim_test_wrong_type")
    try:
        peer.node.create_publisher(TwistStamped, "/cmd_vel", 10)
        other.node.create_publisher(Twist, "/cmd_vel", 10)
        assert other.spin_until(lambda: "/mb_sim_test_wrong_type publishes" in controller.output, 20), \
            controller.output
    finally:
        peer.close()
        other.close()
        controller.stop()
    assert "/mb_sim_test_right_type" not in controller.output, controller.output
