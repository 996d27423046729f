"""Hostile and unlucky sequences a client can send the ``mb_sim`` node (issue 24), one test each,
so they never come back.  Each node is a real process, as in :mod:`test_node`; a test passes
when the node answers as it should and is still running (the pool's stop checks it exits
cleanly, without a traceback).
"""
from __future__ import annotations

import re
import time

from rcl_interfaces.srv import GetParameters
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetEntities, StepSimulation
from std_srvs.srv import SetBool

from test_node import node_env, nodes, peer, shared_peer, wait_for_output  # noqa: F401


def record(peer, data: bool) -> SetBool.Response:
    return peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=data))


def test_record_twice_and_stop_twice_are_refused_and_the_node_goes_on(nodes, peer, tmp_path):
    # One call site logging a success (INFO) and a refusal (WARN) crashed the node: rclpy
    # refuses a logging call site that changes severity.
    path = tmp_path / "run.mcap"
    node = nodes.get("-p", f"record_file:={path}")
    refused = record(peer, True)  # recording from the start already
    assert not refused.success and f"already recording to {path}" in refused.message, refused.message
    stopped = record(peer, False)
    assert stopped.success, stopped.message
    assert not record(peer, False).success  # not recording
    started = record(peer, True)  # to record_file again
    assert started.success, started.message
    again = record(peer, True)
    assert not again.success and "already recording" in again.message, again.message
    assert record(peer, False).success
    assert node.running(), node.output
    assert "Logger severity cannot be changed" not in node.output


def test_the_lag_warning_right_after_a_resume(nodes, peer):
    # At 1000x with 0.1 ms steps the node falls behind at once and hits the catch-up cap; within
    # half a second of a resume the achieved factor is not measured yet (None) and the lag
    # warning formatted it: a TypeError in the /diagnostics timer.
    node = nodes.get("-p", "physics_dt:=0.0001", "-p", "publish_rate:=1000.0", "-p", "real_time_factor:=1000.0")
    mark = len(node.lines)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and node.running():
        assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=True)).success
        assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False)).success
        peer.spin_for(0.25)
    assert node.running(), node.output
    assert wait_for_output(peer, node, re.escape("cannot keep up"), start=mark), node.output
    assert "Traceback" not in node.output, node.output


def test_a_refused_constraint_enable_after_a_successful_switch(nodes, peer, repo):
    # The constraint services logged success (INFO) and refusal (WARN) from one call site.
    # Paused and stepped exactly: 1 s after its pin is released the left lever has fallen too
    # far for the pin to be enabled again.
    node = nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'parallel_gripper.urdf'}", "-p", "start_paused:=true")
    service = "/mb_sim/constraints/left_lever_pin/enable"
    released = peer.call(SetBool, service, SetBool.Request(data=False))
    assert released.success, released.message
    stepped = peer.call(StepSimulation, "/mb_sim/step_simulation", StepSimulation.Request(steps=1000))
    assert stepped.result.result == Result.RESULT_OK, stepped.result.error_message
    refused = peer.call(SetBool, service, SetBool.Request(data=True))
    assert not refused.success and "too far from satisfying it" in refused.message, refused.message
    assert peer.call(SetBool, service, SetBool.Request(data=False)).success  # and the node still answers
    assert node.running(), node.output


def test_a_tick_is_bounded_whatever_the_pace(nodes, peer):
    # 1 us steps at 1000x: a tick owed 5 x 10^7 steps and held the node for seconds (the pacer's
    # catch-up cap was 2.5 x 10^8 steps); now one tick advances one bounded unit of the session.
    node = nodes.get("-p", "physics_dt:=0.000001", "-p", "publish_rate:=20.0", "-p", "real_time_factor:=1000.0")
    peer.spin_for(1.0)  # past the first ticks
    for _ in range(3):  # answered within the call's 10 s (liveness, not speed: on a loaded machine a
        # bounded tick takes up to a few seconds; before, the node never answered)
        response = peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=True), timeout=10.0)
        assert response is not None and response.success
        assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False), timeout=10.0).success
        peer.spin_for(0.5)
    assert node.running(), node.output


def test_a_catastrophic_entity_filter_is_answered(nodes, peer):
    # ((.?){14}){14}X held Python's backtracking re for about 40 s, and the node's executor with it;
    # the linear-time filter answers (within the call's 10 s: liveness) and the node goes on.
    node = nodes.get()
    request = GetEntities.Request()
    request.filters.filter = "((.?){14}){14}X"
    response = peer.call(GetEntities, "/mb_sim/get_entities", request, timeout=10.0)
    assert response is not None and response.result.result == Result.RESULT_OK and response.entities == []
    request.filters.filter = r"(\w)\1"  # a backreference: refused in one line, not matched
    refused = peer.call(GetEntities, "/mb_sim/get_entities", request, timeout=10.0)
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert "a backreference is not supported" in refused.result.error_message, refused.result.error_message
    assert node.running(), node.output


LIMITED_PENDULUM = """<robot name="limited"><link name="base"/>
  <link name="rod"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/>
    <limit lower="0.2" upper="1.0" effort="10" velocity="5"/></joint></robot>"""


def test_initial_positions_parameters_say_where_the_joints_start(nodes, peer, tmp_path):
    # The URDF's zero lies below the hinge's limits, so the robot starts at 0.2 (the nearest
    # limit); `ros2 param get` said 0.0 all the same.
    urdf = tmp_path / "limited.urdf"
    urdf.write_text(LIMITED_PENDULUM)
    node = nodes.get("-p", f"urdf_file:={urdf}", "-p", "start_paused:=true")
    response = peer.call(GetParameters, "/mb_sim/get_parameters", GetParameters.Request(names=["initial_positions.hinge"]))
    assert response.values[0].double_value == 0.2
    assert node.running(), node.output
