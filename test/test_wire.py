"""The node's serialized per-period messages against the same messages built field by field.

``mb_sim.ros.wire`` patches numbers into bytes serialized once; ``mb_sim.ros.state_messages``
reads them from the simulator's buffers.  Both are checked here against the independent path:
``Simulator.outputs`` turned into message objects by ``mb_sim.ros.conversions`` and serialized
by rclpy, then compared after deserializing (for the quaternions: also against transforms3d).
"""
from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage
from nav_msgs.msg import Odometry
from transforms3d.euler import euler2mat
from transforms3d.quaternions import mat2quat

from mb_sim.ros.conversions import joint_state, odometry, stamp, transform_stamped
from mb_sim.ros.state_messages import StateMessages
from mb_sim.ros.wire import joint_state_template, stamp_parts, tf_template
from mb_sim.sim import Simulator
from mb_sim.sim.frames import EdgePoses, base_twist_function, edge_poses, frame_tree, quaternions


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


def test_quaternions_match_transforms3d_for_every_kind_of_rotation():
    rng = np.random.default_rng(3)
    rotations = [euler2mat(*rng.uniform(-np.pi, np.pi, 3)) for _ in range(500)]
    rotations += [np.eye(3), np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])]  # half turns
    rotations += [euler2mat(np.pi - 1e-9, 0.0, 0.0), euler2mat(0.0, 0.0, np.pi + 1e-9)]  # near them
    ours = quaternions(np.array(rotations))
    for rotation, q in zip(rotations, ours):
        w, x, y, z = mat2quat(rotation)
        reference = np.array([x, y, z, w]) * (1.0 if w >= 0 else -1.0)
        # q and -q are the same rotation; only at w == 0 may the sign differ from transforms3d's
        assert min(abs(q - reference).max(), abs(q + reference).max()) < 1e-15 * 10
        assert q[3] >= 0.0


def test_a_template_renders_what_rclpy_serializes():
    names = ["a", "joint with spaces", "ü"]
    template = joint_state_template(names)
    values = np.array([1.5, -2.0, 3e-300, 0.0, -0.0, np.inf, 1e300, np.nan, 7.0])
    message = deserialize_message(template.render(values, (12, 345_000_000)), JointState)
    assert message.name == names and message.header.stamp.sec == 12 and message.header.stamp.nanosec == 345_000_000
    np.testing.assert_array_equal(np.concatenate([message.position, message.velocity, message.effort]), values)
    finite = np.arange(9.0) - 4.5
    reference = joint_state(names, finite[:3], finite[3:6], finite[6:], stamp(12.345))
    # The same message (the bytes may differ in CDR padding, which serializers leave as it is).
    assert deserialize_message(template.render(finite, stamp_parts(12.345)), JointState) == reference
    assert deserialize_message(serialize_message(reference), JointState) == reference
    with pytest.raises(ValueError, match="9 values expected, got 2"):
        template.render([1.0, 2.0])


def test_negative_and_large_stamps_round_trip():
    template = tf_template([("world", "base"), ("base", "tool")])
    for sec, nanosec in [(0, 0), (-5, 999_999_999), (2**31 - 1, 1)]:
        message = deserialize_message(template.render(np.zeros(14), (sec, nanosec)), TFMessage)
        assert {(t.header.stamp.sec, t.header.stamp.nanosec) for t in message.transforms} == {(sec, nanosec)}


@pytest.mark.parametrize("robot", ["arm6", "free_body", "diff_drive", "four_bar"])
def test_state_messages_equal_the_outputs_message_by_message(repo, cache_dir, robot):
    sim = Simulator(repo / "urdf" / f"{robot}.urdf", cache_dir=cache_dir)
    rng = np.random.default_rng(7)
    if sim.actuated_joints:
        sim.set_efforts(rng.uniform(-1, 1, len(sim.actuated_joints)))
    if sim.motors:
        sim.set_voltages([12.0, -7.0])
    sim.advance(0.05)
    sim.set_state(velocities={name: float(v) for name, v in zip(sim.independent_joints,
                                                                rng.uniform(-1, 1, len(sim.independent_joints)))})
    sim.advance(0.137)  # a state with speeds, efforts and (diff_drive) currents, at an odd time
    tree = frame_tree(sim.robot, "odom", "r/")
    twists = [(edge, base_twist_function(sim.robot, edge.joint)) for edge in tree.odometry]
    state = StateMessages(sim, tree, "odom", twists).render()
    out = sim.outputs()
    when = stamp(out.time)

    names = list(out.joint_positions)
    expected = joint_state(names, [out.joint_positions[n] for n in names], [out.joint_velocities[n] for n in names],
                           [out.efforts.get(n, 0.0) for n in names], when)
    assert deserialize_message(state.joint_states, JointState) == expected  # every value, names and stamp

    ours = deserialize_message(state.tf, TFMessage).transforms
    theirs = [transform_stamped(e.parent_frame, e.child_frame, pose, when)
              for e, pose in edge_poses(tree.moving, out.link_poses)]
    assert [(t.header.frame_id, t.child_frame_id, t.header.stamp) for t in ours] == \
           [(t.header.frame_id, t.child_frame_id, t.header.stamp) for t in theirs]
    for a, b in zip(ours, theirs):
        assert _transform(a) == pytest.approx(_transform(b), abs=1e-14)

    assert len(state.odometry) == len(tree.odometry) == (1 if robot in ("free_body", "diff_drive") else 0)
    for message, (edge, twist) in zip(state.odometry, twists):
        linear, angular = twist(sim.q, sim.u, sim.model.buffers.params)
        reference = odometry("odom", edge.child_frame, out.link_poses[edge.child_link], linear, angular, when)
        ours = deserialize_message(message, Odometry)
        assert (ours.header, ours.child_frame_id) == (reference.header, reference.child_frame_id)
        assert _odometry(ours) == pytest.approx(_odometry(reference), abs=1e-14)
    assert deserialize_message(state.clock, Clock).clock == when


def test_unwanted_messages_are_not_rendered(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "free_body.urdf", cache_dir=cache_dir)
    tree = frame_tree(sim.robot)
    state = StateMessages(sim, tree, "world", [(e, base_twist_function(sim.robot, e.joint)) for e in tree.odometry])
    quiet = state.render(joint_states=False, tf=False, odometry=False)
    assert quiet.joint_states is None and quiet.tf is None and quiet.odometry == [] and quiet.clock


def test_edge_poses_equal_the_matrix_inverse(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "arm6.urdf", cache_dir=cache_dir)
    sim.set_state(positions={j: 0.3 * k for k, j in enumerate(sim.independent_joints)})
    out = sim.outputs(dynamics=False)
    tree = frame_tree(sim.robot)
    rows = sim.model.layout.view(sim.model.buffers.out, "link_poses")
    rotation, position = EdgePoses([*tree.moving, *tree.static], sim.model.link_names)(rows)
    for k, (edge, pose) in enumerate(edge_poses([*tree.moving, *tree.static], out.link_poses)):
        np.testing.assert_allclose(rotation[k], pose[:3, :3], atol=1e-15)
        np.testing.assert_allclose(position[k], pose[:3, 3], atol=1e-15)


def _transform(message) -> list[float]:
    t, r = message.transform.translation, message.transform.rotation
    return [t.x, t.y, t.z, r.x, r.y, r.z, r.w]


def _odometry(message) -> list[float]:
    p, o = message.pose.pose.position, message.pose.pose.orientation
    v, w = message.twist.twist.linear, message.twist.twist.angular
    return [p.x, p.y, p.z, o.x, o.y, o.z, o.w, v.x, v.y, v.z, w.x, w.y, w.z]
