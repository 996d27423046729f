"""``mb_sim_node`` driving DC motors, as a real process over DDS (the helpers and fixtures of
:mod:`test_node`): the differential drive (``urdf/diff_drive.urdf``: ``right_motor`` then
``left_motor``, 48 V limits, K = 1 N m/A, wheel radius 0.15 m) in ``world_frame: odom``, commanded
on ``~/voltage_commands`` and ``~/voltage_joint_commands``; ``~/motor_states`` against
/joint_states; bad voltage commands and efforts for motorized joints refused with a warning."""
from __future__ import annotations

import math
import re
import time
from collections import Counter

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from mb_sim.ros.motors import motor_states_from_message
from test_node import node_env, nodes, peer, reset, shared_peer, stamp_of, wait_for_output  # noqa: F401

MOTORS = ["right_motor", "left_motor"]
WHEELS = ["right_wheel_joint", "left_wheel_joint"]
WHEEL_RADIUS = 0.15
VOLTAGE_LIMIT = 48.0
VOLTAGES = "/mb_sim/voltage_commands"
VOLTAGES_BY_NAME = "/mb_sim/voltage_joint_commands"
MOTOR_STATES = "/mb_sim/motor_states"
#: Republishing period of commands that must stay fresh (command_timeout is 0.5 s).
REFRESH = 0.05


@pytest.fixture
def diff_drive(nodes):
    return nodes.get("-p", "urdf_file:=diff_drive", "-p", "world_frame:=odom", "-p", "command_timeout:=0.5")


def drive(peer, publisher, message, duration: float) -> None:
    """Publish `message` every REFRESH seconds for `duration` seconds, spinning in between."""
    end = time.monotonic() + duration
    while time.monotonic() < end:
        publisher.publish(message)
        peer.spin_for(REFRESH)


def voltages_of(message: Float64MultiArray) -> list[float]:
    return [state.voltage for state in motor_states_from_message(message).values()]


def wheel_speeds(state: JointState) -> list[float]:
    velocity = dict(zip(state.name, state.velocity))
    return [velocity[wheel] for wheel in WHEELS]


def test_start_up_logs_the_motor_order(diff_drive, peer):
    assert wait_for_output(peer, diff_drive, re.escape(
        "DC motors in ~/voltage_commands order: [right_motor (joint right_wheel_joint, +-48 V), "
        "left_motor (joint left_wheel_joint, +-48 V)]")), diff_drive.output
    assert wait_for_output(peer, diff_drive, r"no actuated joint \(~/effort_commands takes empty arrays\)")


def test_equal_voltages_drive_it_straight(diff_drive, peer):
    reset(peer)
    odometry = peer.collect(Odometry, "/odom")
    states = peer.collect(JointState, "/joint_states")
    motor_states = peer.collect(Float64MultiArray, MOTOR_STATES)
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    command = peer.publisher(Float64MultiArray, VOLTAGES)
    drive(peer, command, Float64MultiArray(data=[12.0, 12.0]), 2.2)  # settles in ~0.3 s: speed V / K
    at_end, state_at_end = odometry[-1], states[-1]  # received while the command was fresh

    driven = [o for o in odometry if o.pose.pose.position.x > 0.0]
    assert len(driven) > 50, f"{len(odometry)} /odom messages, {len(driven)} moving"
    assert all((o.header.frame_id, o.child_frame_id) == ("odom", "base_link") for o in odometry)
    xs = [o.pose.pose.position.x for o in driven]
    assert all(b >= a for a, b in zip(xs, xs[1:])) and xs[-1] > 1.0, xs[-5:]  # ~1.8 m/s for over a second
    for o in odometry:  # straight along x: equal voltages, a symmetric robot
        assert abs(o.pose.pose.position.y) < 1e-9 and abs(o.pose.pose.orientation.z) < 1e-9
        assert abs(o.twist.twist.linear.y) < 1e-9 and abs(o.twist.twist.angular.z) < 1e-9
    assert at_end.twist.twist.linear.x == pytest.approx(WHEEL_RADIUS * 12.0, rel=1e-3)
    assert wheel_speeds(state_at_end) == pytest.approx([12.0, 12.0], rel=1e-3)

    # ~/motor_states: the layout, the commanded volts, and the state /joint_states reports.
    assert motor_states, "nothing on ~/motor_states"
    last = motor_states[-1]
    assert [(d.label, d.size, d.stride) for d in last.layout.dim] == [
        ("motors:right_motor,left_motor", 2, 8), ("voltage,current,torque,speed", 4, 4)]
    assert last.layout.data_offset == 0 and len(last.data) == 8
    assert voltages_of(last) == [12.0, 12.0]
    # The same snapshot as a /joint_states message: the one with these wheel speeds (while they
    # change; at standstill or steady state many share them).
    counts = Counter(tuple(wheel_speeds(s)) for s in states)
    by_speeds = {tuple(wheel_speeds(s)): s for s in states if counts[tuple(wheel_speeds(s))] == 1}
    matched = 0
    for message in motor_states:
        motors = motor_states_from_message(message)
        speeds = tuple(motors[m].speed for m in MOTORS)
        if speeds not in by_speeds:
            continue
        matched += 1
        state = by_speeds[speeds]
        effort = dict(zip(state.name, state.effort))
        assert [motors[m].torque for m in MOTORS] == [effort[w] for w in WHEELS]  # n K i on the joint
        for m in MOTORS:
            assert motors[m].torque == pytest.approx(motors[m].current, rel=1e-12)  # K = 1, no gearing
            assert motors[m].voltage in (0.0, 12.0)
    assert matched > 20
    moving = [motor_states_from_message(m) for m in motor_states if voltages_of(m) == [12.0, 12.0]]
    assert moving[-1]["right_motor"].speed == pytest.approx(12.0, rel=1e-3)  # V / K at steady state
    assert abs(moving[-1]["left_motor"].current) < 0.05  # no load left but the ground's

    # /diagnostics (1 Hz): the last status while driving is from the second half, at steady state.
    while_driving = [values for values in ({kv.key: kv.value for kv in d.status[0].values} for d in diagnostics)
                     if values.get("motor left_motor voltage [V]") == "12"]
    assert while_driving, [d.status[0].values for d in diagnostics]
    values = while_driving[-1]
    for motor in MOTORS:
        for key in ("voltage [V]", "current [A]", "torque [N m]", "speed [rad/s]"):
            assert f"motor {motor} {key}" in values, sorted(values)
        assert float(values[f"motor {motor} speed [rad/s]"]) == pytest.approx(12.0, rel=1e-2)


def test_voltages_by_motor_name_and_by_joint_name(diff_drive, peer):
    reset(peer)
    motor_states = peer.collect(Float64MultiArray, MOTOR_STATES)
    odometry = peer.collect(Odometry, "/odom")
    command = peer.publisher(JointState, VOLTAGES_BY_NAME)

    drive(peer, command, JointState(name=["left_motor", "right_motor"], effort=[20.0, 24.0]), 0.4)
    assert voltages_of(motor_states[-1]) == [24.0, 20.0]  # in motor order whatever the message's
    assert odometry[-1].twist.twist.angular.z > 0.0  # right faster: turning left

    drive(peer, command, JointState(name=WHEELS, effort=[-6.0, 6.0]), 0.5)  # by joint name: on the spot
    assert voltages_of(motor_states[-1]) == [-6.0, 6.0]
    twist = odometry[-1].twist.twist
    assert twist.angular.z < 0.0 and abs(twist.linear.x) < 0.05  # right wheel back, left ahead: clockwise

    # One motor per message: the other keeps its command.  Over the limit: clamped.
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        command.publish(JointState(name=["left_motor"], effort=[6.0]))
        command.publish(JointState(name=["right_wheel_joint"], effort=[100.0]))
        peer.spin_for(REFRESH)
    assert all(voltages_of(m) == [VOLTAGE_LIMIT, 6.0] for m in motor_states[-10:])


def test_stale_voltage_commands_fall_back_to_zero_volts(diff_drive, peer):
    reset(peer)
    motor_states = peer.collect(Float64MultiArray, MOTOR_STATES)
    mark = len(diff_drive.lines)
    command = peer.publisher(Float64MultiArray, VOLTAGES)
    command.publish(Float64MultiArray(data=[6.0, -6.0]))
    sent = time.monotonic()
    arrivals: list[tuple[float, list[float]]] = []
    seen = 0

    def back_to_zero() -> bool:
        nonlocal seen
        arrivals.extend((time.monotonic(), voltages_of(m)) for m in motor_states[seen:])
        seen = len(motor_states)
        applied = [k for k, (_, v) in enumerate(arrivals) if v == [6.0, -6.0]]
        return bool(applied) and any(v == [0.0, 0.0] for _, v in arrivals[applied[0]:])

    assert peer.spin_until(back_to_zero, 10), f"voltages seen: {sorted({tuple(v) for _, v in arrivals})}"
    first = [v for _, v in arrivals].index([6.0, -6.0])
    zero_at = next(t for t, v in arrivals[first:] if v == [0.0, 0.0])
    assert zero_at - sent > 0.4, "the command timed out early"
    assert wait_for_output(peer, diff_drive, r"no command for 0\.5 s: voltage of right_motor, left_motor set to zero",
                           start=mark)
    peer.spin_for(0.3)
    assert len([line for line in diff_drive.lines[mark:] if "set to zero" in line]) == 1  # logged once


@pytest.mark.parametrize("topic, message, problem", [
    (VOLTAGES, Float64MultiArray(data=[6.0]),
     r"expected 2 values \(one per motor: right_motor, left_motor\), got 1"),
    (VOLTAGES, Float64MultiArray(data=[6.0, 6.0, 6.0]), r"expected 2 values .*got 3"),
    (VOLTAGES, Float64MultiArray(data=[math.nan, 6.0]), r"non-finite voltage \(right_motor=nan\)"),
    (VOLTAGES, Float64MultiArray(data=[6.0, math.inf]), r"non-finite voltage \(left_motor=inf\)"),
    (VOLTAGES_BY_NAME, JointState(name=["front_motor"], effort=[6.0]),
     r"unknown motor or motor joint\(s\) 'front_motor'; motors: right_motor \(joint right_wheel_joint\)"),
    (VOLTAGES_BY_NAME, JointState(name=["left_motor"], effort=[-math.inf]), r"non-finite voltage \(left_motor=-inf\)"),
    (VOLTAGES_BY_NAME, JointState(name=WHEELS, effort=[6.0]), r"2 names but 1 voltages"),
    (VOLTAGES_BY_NAME, JointState(name=["left_motor", "left_wheel_joint"], effort=[6.0, 6.0]),
     r"motor\(s\) named twice .*'left_motor'"),
    ("/mb_sim/joint_commands", JointState(name=["right_wheel_joint"], effort=[1.0]),
     r"joint 'right_wheel_joint' is driven by motor 'right_motor': use ~/voltage_commands"),
    ("/mb_sim/effort_commands", Float64MultiArray(data=[1.0, 1.0]),
     r"expected 0 values .*got 2; joint 'right_wheel_joint' is driven by motor 'right_motor', joint "
     r"'left_wheel_joint' is driven by motor 'left_motor': use ~/voltage_commands"),
], ids=["short", "long", "nan", "inf", "unknown-motor", "by-name-inf", "length-mismatch", "duplicate",
        "effort-by-name-on-a-wheel", "effort-array-for-the-wheels"])
def test_bad_motor_commands_are_rejected_with_a_warning_and_the_node_goes_on(diff_drive, peer, topic, message,
                                                                             problem):
    reset(peer)
    mark = len(diff_drive.lines)
    publisher = peer.publisher(type(message), topic)
    pattern = re.compile(rf"WARN.*{re.escape(topic)}: command rejected: {problem}")
    deadline = time.monotonic() + 10  # warnings are throttled per topic and kind: 2 s
    while not any(pattern.search(line) for line in diff_drive.lines[mark:]) and time.monotonic() < deadline:
        publisher.publish(message)
        peer.spin_for(0.25)
    assert any(pattern.search(line) for line in diff_drive.lines[mark:]), "".join(diff_drive.lines[mark:])
    states = peer.collect(JointState, "/joint_states")
    motor_states = peer.collect(Float64MultiArray, MOTOR_STATES)
    assert peer.spin_until(lambda: len(states) >= 5 and len(motor_states) >= 5, 10), "the node stopped publishing"
    assert diff_drive.running()
    assert voltages_of(motor_states[-1]) == [0.0, 0.0]  # the bad command changed nothing
    assert wheel_speeds(states[-1]) == [0.0, 0.0]
