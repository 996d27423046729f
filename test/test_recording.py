"""The CSV and MCAP writers and the trajectory plot, on synthetic trajectories."""
from __future__ import annotations

import csv
import warnings

import numpy as np
import pytest
from transforms3d.euler import euler2mat
from transforms3d.quaternions import quat2mat

from mb_sim.sim.outputs import Trajectory
from mb_sim.sim.plotting import plot_trajectory
from mb_sim.sim.frames import Edge
from mb_sim.sim.recording import Recording, message_definition, relative_transforms, write_csv, write_mcap

SEPARATOR = "=" * 80


def read_mcap(path) -> list:
    """All ROS 2 messages of an MCAP file, in log-time order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the module warns on import only
        from mcap_ros2.reader import read_ros2_messages
    return list(read_ros2_messages(str(path)))


def pose(rotation: np.ndarray, position) -> np.ndarray:
    """A 4x4 homogeneous transform."""
    matrix = np.eye(4)
    matrix[:3, :3], matrix[:3, 3] = rotation, position
    return matrix


@pytest.fixture
def trajectory() -> Trajectory:
    times = np.linspace(0.0, 0.5, 6)
    q = np.column_stack([np.sin(times), np.cos(times)])
    return Trajectory(times, q, np.gradient(q, times, axis=0), ["shoulder_q", "elbow_q"], ["shoulder_u", "elbow_u"])


def two_link_recording(trajectory: Trajectory, root: str = "base") -> Recording:
    """A planar double pendulum's recording: links rotated about y by the joint angles."""
    poses = []
    for shoulder, elbow in trajectory.q:
        base = np.eye(4)
        upper = pose(euler2mat(0, shoulder, 0), [0, 0, 2])
        lower = upper @ pose(euler2mat(0, elbow, 0), [0, 0, -1])
        poses.append([base, upper, lower])
    return Recording(
        times=trajectory.times, joint_names=["shoulder", "elbow"], positions=trajectory.q,
        velocities=trajectory.u, efforts=np.tile([0.5, 0.0], (len(trajectory.times), 1)),
        link_names=[root, "upper", "lower"], link_poses=np.array(poses),
        edges=[*([Edge(None, None, root, "world", root)] if root != "world" else []),
               Edge("shoulder", root, "upper", root, "upper"), Edge("elbow", "upper", "lower", "upper", "lower")],
    )


def test_csv_has_a_header_of_names_and_one_row_per_sample(tmp_path, trajectory):
    path = tmp_path / "run.csv"
    write_csv(path, trajectory)
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["time", "shoulder_q", "elbow_q", "shoulder_u", "elbow_u"]
    table = np.array(rows[1:], dtype=float)
    assert table.shape == (6, 5)
    np.testing.assert_array_equal(table, np.column_stack([trajectory.times, trajectory.q, trajectory.u]))


def test_message_definition_concatenates_dependencies_once_as_rosbag2_does(tmp_path):
    msg = tmp_path / "share" / "pkg" / "msg"
    msg.mkdir(parents=True)
    (msg / "Outer.msg").write_text("# comment Inner\nInner[] a\npkg/Inner b  # twice\nstring<=8 s\nint32 K=3\n")
    (msg / "Inner.msg").write_text("other/Leaf[<=2] leaf\nfloat64[9] m\n")
    (tmp_path / "share" / "other" / "msg").mkdir(parents=True)
    (tmp_path / "share" / "other" / "msg" / "Leaf.msg").write_text("bool flag\n")
    text = message_definition("pkg/msg/Outer", [tmp_path / "missing", tmp_path / "share"])
    assert text == ("# comment Inner\nInner[] a\npkg/Inner b  # twice\nstring<=8 s\nint32 K=3\n"
                    f"{SEPARATOR}\nMSG: pkg/msg/Inner\nother/Leaf[<=2] leaf\nfloat64[9] m\n"
                    f"{SEPARATOR}\nMSG: other/msg/Leaf\nbool flag\n")


def test_message_definition_of_a_missing_type_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="pkg/msg/Nothing"):
        message_definition("pkg/msg/Nothing", [tmp_path])


def test_installed_tf_message_definition_is_complete():
    text = message_definition("tf2_msgs/msg/TFMessage")
    names = [line.removeprefix("MSG: ") for line in text.splitlines() if line.startswith("MSG: ")]
    assert sorted(names) == sorted(["geometry_msgs/msg/TransformStamped", "std_msgs/msg/Header",
                                    "builtin_interfaces/msg/Time", "geometry_msgs/msg/Transform",
                                    "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Quaternion"])


def test_relative_transforms_form_a_tree_under_world(trajectory):
    recording = two_link_recording(trajectory)
    edges = relative_transforms(recording, 3)
    assert [(parent, child) for parent, child, _ in edges] == [("world", "base"), ("base", "upper"), ("upper", "lower")]
    np.testing.assert_allclose(edges[0][2], np.eye(4))
    np.testing.assert_allclose(edges[2][2], pose(euler2mat(0, trajectory.q[3, 1], 0), [0, 0, -1]), atol=1e-12)
    rooted = relative_transforms(two_link_recording(trajectory, root="world"), 3)
    assert [(parent, child) for parent, child, _ in rooted] == [("world", "upper"), ("upper", "lower")]


def test_mcap_reads_back_as_joint_states_and_tf(tmp_path, trajectory):
    path = tmp_path / "run.mcap"
    recording = two_link_recording(trajectory)
    write_mcap(path, recording)
    messages = read_mcap(path)
    states = [m for m in messages if m.channel.topic == "/joint_states"]
    tfs = [m for m in messages if m.channel.topic == "/tf"]
    assert len(states) == len(tfs) == 6
    assert states[0].schema.name == "sensor_msgs/msg/JointState"
    assert [m.log_time_ns for m in states] == [round(t * 1e9) for t in trajectory.times]
    last = states[-1].ros_msg
    assert list(last.name) == ["shoulder", "elbow"]
    np.testing.assert_allclose(last.position, trajectory.q[-1])
    np.testing.assert_allclose(last.velocity, trajectory.u[-1])
    np.testing.assert_allclose(last.effort, [0.5, 0.0])
    assert (last.header.stamp.sec, last.header.stamp.nanosec) == (0, 500_000_000)
    transforms = tfs[-1].ros_msg.transforms
    assert [(t.header.frame_id, t.child_frame_id) for t in transforms] == [
        ("world", "base"), ("base", "upper"), ("upper", "lower")]
    elbow = transforms[2].transform
    rotation = quat2mat([elbow.rotation.w, elbow.rotation.x, elbow.rotation.y, elbow.rotation.z])
    np.testing.assert_allclose(rotation, euler2mat(0, trajectory.q[-1, 1], 0), atol=1e-12)
    np.testing.assert_allclose([elbow.translation.x, elbow.translation.y, elbow.translation.z], [0, 0, -1], atol=1e-12)


def test_plot_is_a_png(tmp_path, trajectory):
    path = tmp_path / "run.png"
    plot_trajectory(path, trajectory, "double_pendulum: rk4")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert 10_000 < len(data) < 2_000_000
