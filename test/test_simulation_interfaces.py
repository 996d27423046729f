"""The ROS simulation standard (simulation_interfaces) on a real ``mb_sim_node`` process, over DDS.

The client side uses the same definitions as the node (built by set-up from .ci/interfaces); the
last test checks that those installed definitions are the stored upstream ones.
"""
from __future__ import annotations

import filecmp
import sys
from pathlib import Path

import numpy as np
import pytest
import rclpy
from rclpy.action import ActionClient
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import EntityCategory, Result, SimulationState, SimulatorFeatures
from simulation_interfaces.srv import (
    GetEntities, GetEntityInfo, GetEntityState, GetSimulationState, GetSimulatorFeatures, ResetSimulation,
    SetEntityState, SetSimulationState, StepSimulation,
)
from std_srvs.srv import SetBool, Trigger

from mb_sim.ros.conversions import seconds
from test_node import node_env, nodes, peer, shared_peer  # noqa: F401

NODE = "/mb_sim"
DT = 0.001
GRAVITY = 9.81
F = SimulatorFeatures
#: The interfaces each feature stands for, from the comments of upstream's definitions.
FEATURE_INTERFACES = {
    F.SPAWNING: {"spawn_entity"}, F.DELETING: {"delete_entity"}, F.NAMED_POSES: {"get_named_poses"},
    F.POSE_BOUNDS: {"get_named_pose_bounds"}, F.ENTITY_BOUNDS: {"get_entity_bounds"},
    F.ENTITY_STATE_GETTING: {"get_entity_state", "get_entities_states"}, F.ENTITY_STATE_SETTING: {"set_entity_state"},
    F.ENTITY_INFO_GETTING: {"get_entity_info"}, F.ENTITY_INFO_SETTING: {"set_entity_info"},
    F.SPAWNABLES: {"get_spawnables"}, F.SIMULATION_RESET: {"reset_simulation"},
    F.SIMULATION_STATE_GETTING: {"get_simulation_state"}, F.SIMULATION_STATE_SETTING: {"set_simulation_state"},
    F.STEP_SIMULATION_SINGLE: {"step_simulation"}, F.STEP_SIMULATION_MULTIPLE: {"step_simulation"},
    F.STEP_SIMULATION_ACTION: {"simulate_steps"}, F.WORLD_LOADING: {"load_world"},
    F.WORLD_UNLOADING: {"unload_world"}, F.WORLD_INFO_GETTING: {"get_current_world"},
    F.AVAILABLE_WORLDS: {"get_available_worlds"}, F.SPAWNING_ENTITIES: {"spawn_entities"},
}
#: Offered whatever the features (GetSimulatorFeatures itself; GetEntities has no feature flag).
ALWAYS = {"get_simulator_features", "get_entities"}


def pendulum_args() -> tuple[str, ...]:
    return ("-p", "urdf_file:=pendulum", "-p", "start_paused:=true", "-p", "initial_positions.hinge:=0.5")


def call(peer, service_type, name: str, **fields):
    return peer.call(service_type, f"{NODE}/{name}", service_type.Request(**fields))


def ok(response) -> None:
    assert response.result.result == Result.RESULT_OK, response.result.error_message


def sim_time(peer) -> float:
    response = call(peer, GetEntityState, "get_entity_state", entity=entity_name(peer))
    ok(response)
    return seconds(response.state.header.stamp)


def entity_name(peer) -> str:
    response = call(peer, GetEntities, "get_entities")
    ok(response)
    assert len(response.entities) == 1, response.entities
    return response.entities[0]


def simulation_state(peer) -> int:
    response = call(peer, GetSimulationState, "get_simulation_state")
    ok(response)
    return response.state.state


def set_state(peer, state: int):
    return call(peer, SetSimulationState, "set_simulation_state", state=SimulationState(state=state))


# -- stepping and the simulation state ---------------------------------------------------------
def test_step_simulation_advances_exactly_n_physics_steps(nodes, peer):
    nodes.get(*pendulum_args())
    ok(call(peer, ResetSimulation, "reset_simulation"))
    assert simulation_state(peer) == SimulationState.STATE_STOPPED
    assert sim_time(peer) == 0.0
    ok(call(peer, StepSimulation, "step_simulation", steps=37))
    assert sim_time(peer) == pytest.approx(37 * DT, abs=1e-12)
    assert simulation_state(peer) == SimulationState.STATE_PAUSED
    ok(call(peer, StepSimulation, "step_simulation"))  # the default: one step
    assert sim_time(peer) == pytest.approx(38 * DT, abs=1e-12)


def test_simulate_steps_action_gives_feedback_and_advances_n_steps(nodes, peer):
    nodes.get(*pendulum_args())
    ok(call(peer, ResetSimulation, "reset_simulation"))
    client = ActionClient(peer.node, SimulateSteps, f"{NODE}/simulate_steps")
    try:
        assert client.wait_for_server(timeout_sec=20)
        feedback = []
        goal = client.send_goal_async(SimulateSteps.Goal(steps=250), feedback_callback=lambda m: feedback.append(
            (m.feedback.completed_steps, m.feedback.remaining_steps)))
        assert peer.spin_until(goal.done, 20)
        handle = goal.result()
        assert handle.accepted
        outcome = handle.get_result_async()
        assert peer.spin_until(outcome.done, 30)
        response = outcome.result()
    finally:
        client.destroy()
    assert response.status == 4, response  # GoalStatus.STATUS_SUCCEEDED
    ok(response.result)
    assert sim_time(peer) == pytest.approx(250 * DT, abs=1e-12)
    # one feedback per step; rclpy's client drops what arrives after the result, and DDS keeps the
    # last 10 of a burst: so at least ten, in order
    assert len(feedback) >= 10, feedback
    assert all(done + left == 250 for done, left in feedback)
    assert [done for done, _ in feedback] == sorted(done for done, _ in feedback)


def test_stepping_is_refused_while_playing_and_state_follows_the_node(nodes, peer):
    nodes.get(*pendulum_args())
    ok(set_state(peer, SimulationState.STATE_PLAYING))
    assert simulation_state(peer) == SimulationState.STATE_PLAYING
    refused = call(peer, StepSimulation, "step_simulation", steps=5)
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert "pause" in refused.result.error_message
    ok(set_state(peer, SimulationState.STATE_PAUSED))
    assert simulation_state(peer) == SimulationState.STATE_PAUSED
    # the std_srvs services still work beside the standard's
    assert peer.call(Trigger, f"{NODE}/step", Trigger.Request()).success
    assert peer.call(SetBool, f"{NODE}/pause", SetBool.Request(data=True)).success
    ok(set_state(peer, SimulationState.STATE_STOPPED))
    assert simulation_state(peer) == SimulationState.STATE_STOPPED and sim_time(peer) == 0.0
    quitting = set_state(peer, SimulationState.STATE_QUITTING)
    assert quitting.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    zero = call(peer, StepSimulation, "step_simulation", steps=0)
    assert zero.result.result == Result.RESULT_OPERATION_FAILED


def test_reset_simulation_returns_to_time_zero(nodes, peer):
    nodes.get(*pendulum_args())
    ok(call(peer, StepSimulation, "step_simulation", steps=100))
    assert sim_time(peer) > 0.0
    ok(call(peer, ResetSimulation, "reset_simulation", scope=ResetSimulation.Request.SCOPE_ALL))
    assert sim_time(peer) == 0.0
    time_only = call(peer, ResetSimulation, "reset_simulation", scope=ResetSimulation.Request.SCOPE_TIME)
    assert time_only.result.result == Result.RESULT_FEATURE_UNSUPPORTED


# -- features ------------------------------------------------------------------------------------
def test_features_list_exactly_the_interfaces_offered(nodes, peer):
    nodes.get(*pendulum_args())
    features = set(call(peer, GetSimulatorFeatures, "get_simulator_features").features.features)
    offered: set[str] = set()
    assert peer.spin_until(lambda: _offered(peer, offered) >= ALWAYS | {"simulate_steps"}, 10), offered
    claimed = set().union(*(FEATURE_INTERFACES.get(f, set()) for f in features))
    assert offered - ALWAYS == claimed, (sorted(offered), sorted(features))
    assert {F.STEP_SIMULATION_SINGLE, F.STEP_SIMULATION_MULTIPLE, F.SIMULATION_STATE_PAUSE} <= features
    assert {F.SPAWNING, F.SPAWNING_ENTITIES, F.DELETING, F.SIMULATION_RESET_SPAWNED} <= features
    assert F.ENTITY_TAGS not in features and F.SPAWNABLES not in features


def _offered(peer, into: set[str]) -> set[str]:
    """Services and actions of type simulation_interfaces the node offers (names after /mb_sim/)."""
    into.clear()
    for name, types in peer.node.get_service_names_and_types_by_node("mb_sim", "/"):
        if name.startswith(f"{NODE}/") and any(t.startswith("simulation_interfaces/srv/") for t in types):
            into.add(name.removeprefix(f"{NODE}/"))
    for name, types in rclpy.action.get_action_server_names_and_types_by_node(peer.node, "mb_sim", "/"):
        if any(t.startswith("simulation_interfaces/action/") for t in types):
            into.add(name.removeprefix(f"{NODE}/"))
    return into


# -- entities ----------------------------------------------------------------------------------
def test_entity_of_a_fixed_base_robot_cannot_be_moved(nodes, peer):
    nodes.get(*pendulum_args())
    name = entity_name(peer)
    assert name == "pendulum"
    info = call(peer, GetEntityInfo, "get_entity_info", entity=name)
    ok(info)
    assert info.info.category.category == EntityCategory.CATEGORY_ROBOT
    state = call(peer, GetEntityState, "get_entity_state", entity=name).state
    state.pose.position.x = 1.0
    refused = call(peer, SetEntityState, "set_entity_state", entity=name, state=state)
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert "fixed base" in refused.result.error_message
    unknown = call(peer, GetEntityState, "get_entity_state", entity="no_such_robot")
    assert unknown.result.result == Result.RESULT_NOT_FOUND
    assert "no_such_robot" in unknown.result.error_message
    filtered = call(peer, GetEntities, "get_entities")
    filtered_request = GetEntities.Request()
    filtered_request.filters.filter = "pend.*"
    assert peer.call(GetEntities, f"{NODE}/get_entities", filtered_request).entities == ["pendulum"]
    filtered_request.filters.filter = "pend"
    assert peer.call(GetEntities, f"{NODE}/get_entities", filtered_request).entities == []
    ok(filtered)


def test_floating_base_is_set_read_back_and_falls(nodes, peer):
    nodes.get("-p", "urdf_file:=free_body", "-p", "start_paused:=true")
    name = entity_name(peer)
    request = SetEntityState.Request(entity=name)
    pose = request.state.pose
    pose.position.x, pose.position.y, pose.position.z = 0.5, -0.25, 3.0
    half = np.sqrt(0.5)
    pose.orientation.z, pose.orientation.w = half, half  # 90 degrees about z
    request.state.twist.linear.x = 2.0
    request.state.twist.angular.z = 0.3
    ok(peer.call(SetEntityState, f"{NODE}/set_entity_state", request))
    state = call(peer, GetEntityState, "get_entity_state", entity=name).state
    position = state.pose.position
    assert (position.x, position.y, position.z) == pytest.approx((0.5, -0.25, 3.0), abs=1e-12)
    assert (state.pose.orientation.z, state.pose.orientation.w) == pytest.approx((half, half), abs=1e-12)
    assert (state.twist.linear.x, state.twist.angular.z) == pytest.approx((2.0, 0.3), abs=1e-12)
    start = seconds(state.header.stamp)
    ok(call(peer, StepSimulation, "step_simulation", steps=200))
    after = call(peer, GetEntityState, "get_entity_state", entity=name).state
    elapsed = seconds(after.header.stamp) - start
    assert elapsed == pytest.approx(200 * DT, abs=1e-12)
    # free flight; the origin, 1 cm from the centre of mass, turns about it at 0.3 rad/s: 1e-5 m
    assert after.pose.position.x == pytest.approx(0.5 + 2.0 * elapsed, abs=1e-5)
    assert after.pose.position.z == pytest.approx(3.0 - GRAVITY * elapsed**2 / 2, abs=1e-6)
    bad = SetEntityState.Request(entity=name)
    bad.state.pose.orientation.w = 0.0  # a zero quaternion
    refused = peer.call(SetEntityState, f"{NODE}/set_entity_state", bad)
    assert refused.result.result == SetEntityState.Response.INVALID_POSE


# -- the definitions ---------------------------------------------------------------------------
def test_installed_definitions_are_the_stored_upstream_ones(repo):
    stored = repo / ".ci" / "interfaces" / "simulation_interfaces"
    installed = Path(sys.prefix) / "share" / "simulation_interfaces"
    for kind, suffix in (("msg", ".msg"), ("srv", ".srv"), ("action", ".action")):
        names = sorted(p.name for p in (stored / kind).glob(f"*{suffix}"))
        assert names == sorted(p.name for p in (installed / kind).glob(f"*{suffix}")), kind
        different = [n for n in names if not filecmp.cmp(stored / kind / n, installed / kind / n, shallow=False)]
        assert not different, f"installed {kind} definitions differ from .ci/interfaces: {different}"
    assert len(list((stored / "srv").glob("*.srv"))) == 22
