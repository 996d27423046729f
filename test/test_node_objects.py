"""``mb_sim_node`` with objects beside the robot (the ``objects`` parameter), as a real process over
DDS (the helpers and fixtures of :mod:`test_node`): urdf/gripper_lift.urdf and a 20 mm box on the
ground between its fingers.  The box is in /robot_description (RViz draws it), its pose on /tf
(from the world, where it rests on the ground), and bad object strings stop the start-up with one
line naming the parameter."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from mb_sim.ros.qos import LATCHED_QOS
from test_node import NODE_EXE, node_env, nodes, peer, shared_peer  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
BOX = "name=box shape=box size=0.02,0.02,0.02 mass=0.05 xyz=0,0,0.01 friction=1"


@pytest.fixture
def scene(nodes):
    return nodes.get("-p", f"urdf_file:={REPO / 'urdf' / 'gripper_lift.urdf'}", "-p", f"objects:=['{BOX}']")


def test_an_object_is_in_the_description_and_on_tf(scene, peer):
    descriptions = peer.collect(String, "/robot_description", LATCHED_QOS)
    assert peer.spin_until(lambda: bool(descriptions), 60), scene.output
    assert '<link name="box">' in descriptions[-1].data and 'name="box_joint" type="floating"' in descriptions[-1].data
    transforms = peer.collect(TFMessage, "/tf")

    def box() -> list:
        return [tf for message in transforms for tf in message.transforms if tf.child_frame_id == "box"]

    assert peer.spin_until(lambda: len(box()) >= 20, 30), scene.output
    last = box()[-1]
    assert last.header.frame_id == "world"
    assert last.transform.translation.z == pytest.approx(0.01, abs=1e-3)  # resting on the ground
    assert abs(last.transform.translation.x) < 1e-4 and abs(last.transform.translation.y) < 1e-4


@pytest.mark.parametrize("value, expected", [
    ("['name=box shape=cone']", "parameter objects: object 'box': unknown shape 'cone'"),
    ("['name=box size=0.1,nan,0.1']", "parameter objects: object 'box': size must be 3 finite numbers"),
    ("['name=box colour=red']", "parameter objects: object 'name=box colour=red': unknown key 'colour'"),
    ("['name=a', 'name=a']", "parameter objects: object 'a': the name is taken by another object"),
])
def test_bad_objects_stop_the_start_naming_the_parameter(node_env, value, expected):
    proc = subprocess.run([str(NODE_EXE), "--ros-args", "-p", "urdf_file:=arm6", "-p", f"objects:={value}"],
                          env=node_env, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"mb_sim_node: {expected}"), proc.stderr


def test_objects_are_entities_of_the_simulation_interfaces(scene, peer):
    """GetEntities lists the robot and the box (CATEGORY_OBJECT); the box's state is its pose on the
    ground; SetEntityState puts it up in the air, and it falls back."""
    from simulation_interfaces.msg import EntityCategory, Result
    from simulation_interfaces.srv import GetEntities, GetEntityInfo, GetEntityState, SetEntityState

    node = "/mb_sim"
    listed = peer.call(GetEntities, f"{node}/get_entities", GetEntities.Request())
    assert listed.result.result == Result.RESULT_OK and listed.entities == ["gripper_lift", "box"], listed
    request = GetEntities.Request()
    request.filters.categories = [EntityCategory(category=EntityCategory.CATEGORY_OBJECT)]
    assert peer.call(GetEntities, f"{node}/get_entities", request).entities == ["box"]
    info = peer.call(GetEntityInfo, f"{node}/get_entity_info", GetEntityInfo.Request(entity="box"))
    assert info.info.category.category == EntityCategory.CATEGORY_OBJECT and "object 'box'" in info.info.description
    state = peer.call(GetEntityState, f"{node}/get_entity_state", GetEntityState.Request(entity="box")).state
    assert state.pose.position.z == pytest.approx(0.01, abs=1e-3)
    moved = SetEntityState.Request(entity="box")
    moved.state.pose.position.x, moved.state.pose.position.z, moved.state.pose.orientation.w = 0.3, 0.5, 1.0
    answer = peer.call(SetEntityState, f"{node}/set_entity_state", moved)
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message

    def height() -> float:
        return peer.call(GetEntityState, f"{node}/get_entity_state", GetEntityState.Request(entity="box")).state.pose.position.z

    assert height() > 0.1  # set up in the air
    assert peer.spin_until(lambda: height() < 0.012, 30)  # fell back to the ground
