"""Spawning and deleting objects in a running ``mb_sim_node`` (simulation_interfaces' SpawnEntity,
SpawnEntities, DeleteEntity, ResetSimulation's SCOPE_SPAWNED), a real process over DDS (the
helpers of :mod:`test_node`): urdf/gripper_lift.urdf with a 20 mm box, a cube spawned beside it
falls and rests on the ground while the node went on publishing during the build; deleting it
brings the first scene back from the cache.  Bad requests get their Result code and one line,
and the running simulation is untouched."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from sensor_msgs.msg import JointState
from simulation_interfaces.msg import Result, SimulatorFeatures
from simulation_interfaces.msg import SpawnEntity as SpawnEntityEntry
from simulation_interfaces.srv import (
    DeleteEntity, GetEntities, GetEntityState, GetSimulatorFeatures, ResetSimulation, SpawnEntities, SpawnEntity,
)
from std_msgs.msg import String

from mb_sim.ros.qos import LATCHED_QOS
from test_node import node_env, nodes, peer, shared_peer, stamp_of  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
BOX = "name=box shape=box size=0.02,0.02,0.02 mass=0.05 xyz=0,0,0.01 friction=1"
NODE = "/mb_sim"
#: A spawn derives and compiles the new scene: a cold cache takes tens of seconds on 2 cores.
BUILD_TIMEOUT = 240.0


@pytest.fixture
def scene(nodes):
    return nodes.get("-p", f"urdf_file:={REPO / 'urdf' / 'gripper_lift.urdf'}", "-p", f"objects:=['{BOX}']")


def spawn_request(name: str = "cube", resource: str = "shape=box size=0.05,0.05,0.05 mass=0.2", x: float = 0.3,
                  z: float = 0.2, **fields) -> SpawnEntity.Request:
    request = SpawnEntity.Request(name=name, resource_string=resource, **fields)
    request.initial_pose.pose.position.x, request.initial_pose.pose.position.z = x, z
    request.initial_pose.pose.orientation.w = 1.0
    return request


def entities(peer) -> list[str]:
    return list(peer.call(GetEntities, f"{NODE}/get_entities", GetEntities.Request()).entities)


def entity_z(peer, name: str) -> float:
    return peer.call(GetEntityState, f"{NODE}/get_entity_state", GetEntityState.Request(entity=name)).state.pose.position.z


@pytest.mark.slow  # a new scene derived and compiled cold: half a minute on 2 cores
def test_spawn_and_delete_while_running(scene, peer):
    features = peer.call(GetSimulatorFeatures, f"{NODE}/get_simulator_features", GetSimulatorFeatures.Request())
    assert {SimulatorFeatures.SPAWNING, SimulatorFeatures.DELETING} <= set(features.features.features)
    assert "mb_sim_object" in features.features.spawn_formats
    states = peer.collect(JointState, "/joint_states")
    descriptions = peer.collect(String, "/robot_description", LATCHED_QOS)
    assert peer.spin_until(lambda: len(states) > 10, 30), scene.output
    box_before = entity_z(peer, "box")
    client = peer.node.create_client(SpawnEntity, f"{NODE}/spawn_entity")
    assert client.wait_for_service(timeout_sec=20)
    future = client.call_async(spawn_request())
    assert peer.spin_until(lambda: len(states) > 20, 10)
    during = len(states)
    assert peer.spin_until(future.done, BUILD_TIMEOUT), scene.output
    answer = future.result()
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message
    assert answer.entity_name == "cube" and "built in" in answer.result.error_message
    stamps = [stamp_of(m) for m in states]
    assert stamps == sorted(stamps)  # sim time went on through the swap, never back
    if not future.done() or len(states) - during < 5:
        pytest.fail(f"the node stopped publishing during the build: {len(states) - during} messages")
    assert entities(peer) == ["gripper_lift", "box", "cube"]
    assert peer.spin_until(lambda: '<link name="cube">' in descriptions[-1].data, 10)
    assert entity_z(peer, "box") == pytest.approx(box_before, abs=1e-4)  # carried over, still resting
    peer.spin_for(2.0)
    assert entity_z(peer, "cube") == pytest.approx(0.025, abs=1e-3)  # fell 0.175 m and rests on the ground
    deleted = peer.call(DeleteEntity, f"{NODE}/delete_entity", DeleteEntity.Request(entity="cube"),
                        timeout=BUILD_TIMEOUT)
    assert deleted.result.result == Result.RESULT_OK, deleted.result.error_message
    assert entities(peer) == ["gripper_lift", "box"]
    assert peer.spin_until(lambda: '<link name="cube">' not in descriptions[-1].data, 10)
    client.destroy()


@pytest.mark.parametrize("request_, code, says", [
    (spawn_request(name="box"), SpawnEntity.Response.NAME_NOT_UNIQUE, "name 'box' is taken"),
    (spawn_request(name="left_finger"), SpawnEntity.Response.NAME_NOT_UNIQUE, "name 'left_finger' is taken"),
    (spawn_request(name="a b"), SpawnEntity.Response.NAME_INVALID, "names have no spaces"),
    (spawn_request(name=""), SpawnEntity.Response.NAME_INVALID, "no name given"),
    (spawn_request(resource=""), SpawnEntity.Response.NO_RESOURCE, "both empty"),
    (spawn_request(resource="shape=cone"), SpawnEntity.Response.RESOURCE_PARSE_ERROR, "unknown shape 'cone'"),
    (spawn_request(resource="shape=box size=0.1,-1,0.1"), SpawnEntity.Response.RESOURCE_PARSE_ERROR,
     "size must be positive"),
    (spawn_request(resource="shape=box mass=nan"), SpawnEntity.Response.RESOURCE_PARSE_ERROR, "mass must be"),
    (spawn_request(resource="shape=box friction=-1"), SpawnEntity.Response.RESOURCE_PARSE_ERROR, "friction must be"),
    (spawn_request(resource="shape=box xyz=1,2,3"), SpawnEntity.Response.RESOURCE_PARSE_ERROR, "initial_pose"),
    (spawn_request(resource="<robot name='x'><link"), SpawnEntity.Response.RESOURCE_PARSE_ERROR, "does not parse"),
    (spawn_request(resource="<sdf version='1.9'/>"), SpawnEntity.Response.UNSUPPORTED_FORMAT, "<sdf>"),
    (spawn_request(resource="", uri="/nonexistent/cup.urdf"), Result.RESULT_NOT_FOUND, "no such file"),
    (spawn_request(x=math.nan), SpawnEntity.Response.INVALID_POSE, "finite"),
    (spawn_request(x=1e9), SpawnEntity.Response.INVALID_POSE, "beyond"),
], ids=["taken", "link_name", "space", "no_name", "no_resource", "shape", "negative_size", "nan_mass",
        "negative_friction", "pose_in_text", "bad_xml", "sdf", "missing_file", "nan_pose", "far"])
def test_bad_spawns_are_refused_in_one_line(scene, peer, request_, code, says):
    answer = peer.call(SpawnEntity, f"{NODE}/spawn_entity", request_)
    assert answer.result.result == code, answer.result.error_message
    assert says in answer.result.error_message and "\n" not in answer.result.error_message
    assert entities(peer) == ["gripper_lift", "box"]  # untouched


def test_a_frame_other_than_the_world_and_a_bad_quaternion_are_invalid_poses(scene, peer):
    request = spawn_request()
    request.initial_pose.header.frame_id = "finger_left"
    answer = peer.call(SpawnEntity, f"{NODE}/spawn_entity", request)
    assert answer.result.result == SpawnEntity.Response.INVALID_POSE and "world frame" in answer.result.error_message
    request = spawn_request()
    request.initial_pose.pose.orientation.w = 2.0
    answer = peer.call(SpawnEntity, f"{NODE}/spawn_entity", request)
    assert answer.result.result == SpawnEntity.Response.INVALID_POSE and "unit quaternion" in answer.result.error_message


def test_deleting_the_robot_or_an_unknown_entity_is_refused(scene, peer):
    answer = peer.call(DeleteEntity, f"{NODE}/delete_entity", DeleteEntity.Request(entity="gripper_lift"))
    assert answer.result.result == Result.RESULT_OPERATION_FAILED and "is the robot" in answer.result.error_message
    answer = peer.call(DeleteEntity, f"{NODE}/delete_entity", DeleteEntity.Request(entity="cup"))
    assert answer.result.result == Result.RESULT_NOT_FOUND and "the objects are box" in answer.result.error_message


@pytest.mark.slow  # another new scene, cold
def test_spawn_entities_renames_and_reset_despawns(scene, peer):
    """Two spawns in one call (one model build), the second renamed (allow_renaming); a third one
    refused alone; ResetSimulation (SCOPE_DEFAULT) de-spawns both and restarts the launched scene."""
    def entry(name: str, x: float, renaming: bool = False) -> SpawnEntityEntry:
        one = SpawnEntityEntry(name=name, allow_renaming=renaming)
        one.entity_resource.resource_string = "shape=box size=0.05,0.05,0.05 mass=0.2"
        one.initial_pose.pose.position.x, one.initial_pose.pose.position.z = x, 0.2
        one.initial_pose.pose.orientation.w = 1.0
        return one

    request = SpawnEntities.Request(spawn_requests=[entry("cube", 0.3), entry("cube", -0.3, True), entry("box", 0.0)])
    answer = peer.call(SpawnEntities, f"{NODE}/spawn_entities", request, timeout=BUILD_TIMEOUT)
    assert answer.result.result == SpawnEntities.Response.ENTITIES_SPAWN_FAILED
    assert [r.entity_name for r in answer.results] == ["cube", "cube_1", ""]
    assert [r.result.result for r in answer.results] == [Result.RESULT_OK, Result.RESULT_OK,
                                                        SpawnEntity.Response.NAME_NOT_UNIQUE]
    assert entities(peer) == ["gripper_lift", "box", "cube", "cube_1"]
    reset = peer.call(ResetSimulation, f"{NODE}/reset_simulation", ResetSimulation.Request(), timeout=BUILD_TIMEOUT)
    assert reset.result.result == Result.RESULT_OK, reset.result.error_message
    assert entities(peer) == ["gripper_lift", "box"]


@pytest.mark.slow  # a new scene, cold
def test_pybullet_objects_spawn_into_a_robot_started_without_any(nodes, peer):
    """arm6 alone on the ground, then pybullet_data's duck (a convex mesh) and its tray (a base of
    mass 0: static, pybullet's convention) spawned in one SpawnEntities call, from their files."""
    data = pytest.importorskip("pybullet_data").getDataPath()
    from simulation_interfaces.msg import EntityCategory
    from simulation_interfaces.srv import GetEntityInfo

    nodes.get("-p", "urdf_file:=arm6", "-p", "ground:=true")

    def entry(name: str, path: str, x: float, z: float) -> SpawnEntityEntry:
        one = SpawnEntityEntry(name=name)
        one.entity_resource.uri = f"file://{data}/{path}"
        one.initial_pose.pose.position.x, one.initial_pose.pose.position.z = x, z
        one.initial_pose.pose.orientation.w = 1.0
        return one

    request = SpawnEntities.Request(spawn_requests=[entry("duck", "duck_vhacd.urdf", 0.6, 0.3),
                                                    entry("tray", "tray/traybox.urdf", -0.6, 0.0)])
    answer = peer.call(SpawnEntities, f"{NODE}/spawn_entities", request, timeout=BUILD_TIMEOUT)
    assert answer.result.result == Result.RESULT_OK, [r.result.error_message for r in answer.results]
    assert entities(peer) == ["arm6", "duck", "tray"]
    categories = {name: peer.call(GetEntityInfo, f"{NODE}/get_entity_info", GetEntityInfo.Request(entity=name))
                  .info.category.category for name in ("duck", "tray")}
    assert categories == {"duck": EntityCategory.CATEGORY_OBJECT, "tray": EntityCategory.CATEGORY_STATIC_OBJECT}
    peer.spin_for(2.0)
    assert 0.0 < entity_z(peer, "duck") < 0.05  # fell from 0.3 m onto the ground and rests there
