"""``mb_sim_node`` with closed loops and spring-dampers, as a real process over DDS (the helpers
and fixtures of :mod:`test_node`): the four-bar's reaction wrench against the Python simulator
at the published state, its initial crank angle, the refusal of a dependent joint's initial
position, and the spring-mass's spring in /diagnostics and on ``~/springs``."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import StepSimulation
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
from tf2_msgs.msg import TFMessage

from mb_sim.ros.conversions import transform_matrix
from mb_sim.ros.reactions import wrench_in_child_frame
from mb_sim.ros.simulation_node import LATCHED_QOS
from mb_sim.ros.springs import spring_color
from mb_sim.sim import Simulator
from test_node import NODE_EXE, node_env, nodes, peer, reset, shared_peer, stamp_of, wait_for_output  # noqa: F401

WRENCH_TOPIC = "/mb_sim/constraints/rocker_pin/wrench"
CRANK_START = 0.5
#: The spring-mass's spring: stiffness [N/m], damping [N s/m], reference length [m]; body start [m].
SPRING_K, SPRING_D, SPRING_L0, BODY_X0 = 100.0, 1.0, 1.0, 1.05
#: The node's default spring_force_scale [N].
FORCE_SCALE = 10.0


def matched(states: list, others: list, key=stamp_of) -> list[tuple]:
    """(joint state, other message) pairs with the same stamp; `key` gives the other's stamp."""
    by_stamp = {key(m): m for m in others}
    return [(s, by_stamp[stamp_of(s)]) for s in states if stamp_of(s) in by_stamp]


def since_reset(messages: list, key=stamp_of) -> list:
    """The messages from the last one stamped 0 (published by ~/reset) on."""
    starts = [k for k, m in enumerate(messages) if key(m) == 0.0]
    return messages[starts[-1]:] if starts else []


def tf_stamp(message: TFMessage) -> float:
    return stamp_of(message.transforms[0])


def world_poses(static: TFMessage, moving: TFMessage) -> dict[str, np.ndarray]:
    """World pose of every frame, composed from /tf_static and one /tf message (a tree under world)."""
    edges = {tf.child_frame_id: (tf.header.frame_id, transform_matrix(tf.transform))
             for tf in [*static.transforms, *moving.transforms]}
    poses = {"world": np.eye(4)}

    def pose(frame: str) -> np.ndarray:
        if frame not in poses:
            parent, relative = edges[frame]
            poses[frame] = pose(parent) @ relative
        return poses[frame]

    for frame in edges:
        pose(frame)
    return poses


# -- the four-bar: a closed loop ------------------------------------------------------------------
@pytest.fixture
def four_bar(nodes):
    return nodes.get("-p", "urdf_file:=four_bar", "-p", f"initial_positions.crank_joint:={CRANK_START}")


@pytest.fixture(scope="module")
def four_bar_sim(repo, node_env):
    """The Python simulator of the same robot (the node's compiled model, from the same cache)."""
    return Simulator(repo / "urdf" / "four_bar.urdf", cache_dir=node_env["MB_SIM_CACHE_DIR"])


def test_four_bar_starts_from_the_crank_angle_with_the_loop_closed(four_bar, four_bar_sim, peer):
    assert wait_for_output(peer, four_bar, re.escape(
        "loop joint 'rocker_pin': reaction on link rocker published on ~/constraints/rocker_pin/wrench "
        "(geometry_msgs/WrenchStamped in frame rocker)")), four_bar.output
    static = peer.collect(TFMessage, "/tf_static", LATCHED_QOS)
    states = peer.collect(JointState, "/joint_states")
    transforms = peer.collect(TFMessage, "/tf")
    reset(peer)  # publishes the initial state at sim time 0
    after_reset = lambda: matched(since_reset(states), since_reset(transforms, tf_stamp), tf_stamp)  # noqa: E731
    assert peer.spin_until(lambda: static and len(after_reset()) > 20, 20)
    start, _ = after_reset()[0]
    assert stamp_of(start) == 0.0
    four_bar_sim.set_state({"crank_joint": CRANK_START})
    expected = four_bar_sim.outputs(dynamics=False).joint_positions
    position = dict(zip(start.name, start.position))
    assert position["crank_joint"] == CRANK_START
    for joint in ("coupler_joint", "rocker_joint"):  # solved by the node as by the simulator
        assert position[joint] == pytest.approx(expected[joint], abs=1e-12)
    assert abs(position["rocker_joint"]) > 0.05  # the loop moved it (0 closes it at crank angle 0)
    gaps = []
    for state, message in after_reset():
        far_end = world_poses(static[0], message)["rocker"] @ [3.0, 0.0, 0.0, 1.0]
        gaps.append(np.abs(far_end[:3] - [4.0, 0.0, 0.0]).max())
    assert max(gaps) < 1e-9, max(gaps)  # at the start and while it moves


def test_four_bar_wrench_equals_the_simulators_reaction(four_bar, four_bar_sim, peer):
    states = peer.collect(JointState, "/joint_states")
    wrenches = peer.collect(WrenchStamped, WRENCH_TOPIC)
    assert peer.spin_until(lambda: len(matched(states, wrenches)) >= 20, 20), f"{len(wrenches)} wrenches"
    loop = four_bar_sim.robot.loop_joints["rocker_pin"].loop_description
    worst = 0.0
    for state, message in matched(states, wrenches)[-20:]:
        assert message.header.frame_id == "rocker"
        w = message.wrench
        force = np.array([w.force.x, w.force.y, w.force.z])
        torque = np.array([w.torque.x, w.torque.y, w.torque.z])
        assert np.all(np.isfinite(force)) and np.all(np.isfinite(torque))
        assert np.linalg.norm(force) > 1.0  # it carries the rocker
        four_bar_sim.set_state(dict(zip(state.name, state.position)), dict(zip(state.name, state.velocity)))
        out = four_bar_sim.outputs()
        reaction = out.reactions["rocker_pin"]
        expected_force, expected_torque = wrench_in_child_frame(
            reaction.force, reaction.torque, out.link_poses["ground"], out.link_poses["rocker"],
            loop.origin_rpy, loop.child_origin_xyz)
        worst = max(worst, np.abs(force - expected_force).max(), np.abs(torque - expected_torque).max())
    assert worst < 1e-9, worst
    # The sim-time stamps advance with the joint states'.
    stamps = [stamp_of(m) for m in wrenches]
    assert all(b > a for a, b in zip(stamps, stamps[1:])) and stamps[-1] > 0.0


def test_four_bar_diagnostics_give_the_loop_position_error(four_bar, peer):
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    assert peer.spin_until(lambda: diagnostics, 5)
    values = {kv.key: kv.value for kv in diagnostics[-1].status[0].values}
    assert values["constraint rocker_pin"] == "enabled"
    assert float(values["constraint rocker_pin position error"]) < 1e-9


def test_a_released_loop_publishes_zero_wrench(four_bar, peer):
    service = "/mb_sim/constraints/rocker_pin/enable"
    wrenches = peer.collect(WrenchStamped, WRENCH_TOPIC)
    response = peer.call(SetBool, service, SetBool.Request(data=False))
    assert response.success, response.message
    released_at = float(re.search(r"at sim time (\S+) s", response.message).group(1))
    after = lambda: [m for m in wrenches if stamp_of(m) > released_at + 1e-4]  # noqa: E731
    try:
        assert peer.spin_until(lambda: len(after()) >= 5, 10)
        for message in after():
            w = message.wrench
            assert [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z] == [0.0] * 6
    finally:
        reset(peer)  # back on the loop, where enabling it again cannot fail
        response = peer.call(SetBool, service, SetBool.Request(data=True))
    assert response.success, response.message
    count = len(wrenches)
    assert peer.spin_until(lambda: len(wrenches) > count + 3, 10)
    assert abs(wrenches[-1].wrench.force.x) + abs(wrenches[-1].wrench.force.z) > 1.0


def test_a_dependent_joints_initial_position_is_refused(node_env):
    proc = subprocess.run([str(NODE_EXE), "--ros-args", "-p", "urdf_file:=four_bar",
                           "-p", "initial_positions.rocker_joint:=0.1"],
                          capture_output=True, text=True, timeout=120, env=node_env)
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mb_sim_node:")]
    assert len(errors) == 1 and errors[0] == proc.stderr.strip().splitlines()[-1], proc.stderr
    assert errors[0].startswith("mb_sim_node: parameter initial_positions.rocker_joint: ")
    assert "independent joints: crank_joint" in errors[0]
    assert "Traceback" not in proc.stderr


# -- the spring-mass: a spring-damper --------------------------------------------------------------
@pytest.fixture
def spring_mass(nodes):
    return nodes.get("-p", "urdf_file:=spring_mass")


def spring_force(x: float, v: float) -> float:
    """The spring's scalar force (tension positive) with the body at x > 0 moving at v: the linear
    law of spring_mass.urdf, written out here."""
    return SPRING_K * (x - SPRING_L0) + SPRING_D * v


def test_spring_force_and_length_in_diagnostics(nodes, peer):
    # Paused and stepped, so /diagnostics reports the sim time of the state last published (running,
    # a tick may end between publish periods, whose states are the only ones published).
    nodes.get("-p", "urdf_file:=spring_mass", "-p", "start_paused:=true")
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    states = peer.collect(JointState, "/joint_states")
    stepped = peer.call(StepSimulation, "/mb_sim/step_simulation", StepSimulation.Request(steps=123))
    assert stepped.result.result == Result.RESULT_OK, stepped.result.error_message

    def reported() -> dict | None:
        for array in diagnostics:
            values = {kv.key: kv.value for kv in array.status[0].values}
            if abs(float(values["sim time [s]"]) - 0.123) < 1e-7:
                return values
        return None

    assert peer.spin_until(lambda: reported() is not None and any(abs(stamp_of(s) - 0.123) < 1e-7 for s in states), 10)
    values, state = reported(), next(s for s in states if abs(stamp_of(s) - 0.123) < 1e-7)
    x, v = BODY_X0 + state.position[0], state.velocity[0]
    assert v != 0.0  # it moved
    assert float(values["spring spring length [m]"]) == pytest.approx(x, abs=1e-8)
    assert float(values["spring spring force [N]"]) == pytest.approx(spring_force(x, v), abs=1e-7)


def test_spring_marker_runs_from_the_anchor_to_the_body(spring_mass, peer):
    from visualization_msgs.msg import Marker, MarkerArray

    static = peer.collect(TFMessage, "/tf_static", LATCHED_QOS)
    markers = peer.collect(MarkerArray, "/mb_sim/springs")
    states = peer.collect(JointState, "/joint_states")
    transforms = peer.collect(TFMessage, "/tf")
    marker_stamp = lambda m: stamp_of(m.markers[0])  # noqa: E731
    reset(peer)  # from 1.05 m: tension first, compression half a period (0.31 s) later

    def after_reset() -> list[tuple]:
        """(joint state, markers, transforms) with the same stamp, since the reset."""
        by_stamp = {tf_stamp(t): t for t in since_reset(transforms, tf_stamp)}
        return [(s, m, by_stamp[stamp_of(s)])
                for s, m in matched(since_reset(states), since_reset(markers, marker_stamp), marker_stamp)
                if stamp_of(s) in by_stamp]

    assert peer.spin_until(lambda: static and len(after_reset()) >= 50, 20)
    colours = set()
    for state, array, transform in after_reset():
        [marker] = array.markers
        assert (marker.ns, marker.id, marker.type, marker.header.frame_id) == ("springs", 0, Marker.LINE_STRIP, "world")
        body = world_poses(static[0], transform)["body"][:3, 3]
        assert body[0] == pytest.approx(BODY_X0 + state.position[0], abs=1e-12)
        start, end = ([p.x, p.y, p.z] for p in marker.points)
        assert start == [0.0, 0.0, 0.0]
        np.testing.assert_allclose(end, body, atol=1e-12)
        force = spring_force(body[0], state.velocity[0])
        c = marker.color
        np.testing.assert_allclose([c.r, c.g, c.b, c.a], spring_color(force, FORCE_SCALE), atol=1e-6)
        if abs(force) > 1.0:
            colours.add("red" if force > 0 else "blue")
            assert (c.r > c.b) == (force > 0)
    assert colours == {"red", "blue"}
