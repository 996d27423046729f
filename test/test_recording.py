"""The CSV and MCAP writers and the trajectory plot, on synthetic trajectories."""
from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from transforms3d.euler import euler2mat
from transforms3d.quaternions import quat2mat

from mb_sim.session.recorder import FLUSH_PERIOD, Recorder, RecordingError
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


# -- the node's recordings (mb_sim.session.recorder): never overwritten, flushed, failures caught --
def string(text: str) -> bytes:
    """A std_msgs/String as CDR, without rclpy: little-endian header, length, text, NUL."""
    data = text.encode() + b"\0"
    return b"\0\1\0\0" + len(data).to_bytes(4, "little") + data


def open_recorder(path, clock=None) -> Recorder:
    return Recorder(path, {"time": 0.0}, string("<robot/>"), string, **({"clock": clock} if clock else {}))


def on_disk(path) -> list[str]:
    """The topics of the messages a reader finds in the file as it is now (no summary needed)."""
    from mcap.stream_reader import StreamReader
    from mcap.records import Channel, Message

    topics, found = {}, []
    try:
        for record in StreamReader(open(path, "rb")).records:
            if isinstance(record, Channel):
                topics[record.id] = record.topic
            elif isinstance(record, Message):
                found.append(topics[record.channel_id])
    except Exception:  # noqa: BLE001 (the file ends without its summary: read up to there)
        pass
    return found


def test_a_recording_never_overwrites_a_file(tmp_path):
    # A second recording to the same name reopened it with "wb": the first was lost.
    path = tmp_path / "run.mcap"
    path.write_bytes(b"precious")
    recorders = [open_recorder(path) for _ in range(3)]
    for recorder in recorders:
        recorder.close()
    assert [r.path for r in recorders] == [str(tmp_path / f"run_{k}.mcap") for k in (2, 3, 4)]
    assert path.read_bytes() == b"precious"


@pytest.mark.parametrize("where, reason", [
    ("directory", "it is a directory"), ("missing/run.mcap", "No such file or directory"),
    ("/dev/full", "No space left on device")])
def test_a_recording_that_cannot_be_opened_is_one_recording_error(tmp_path, where, reason):
    path = tmp_path / where if not where.startswith("/") else Path(where)
    if where == "directory":
        path.mkdir()
    with pytest.raises(RecordingError, match=f"^(cannot record to|recording) {re.escape(str(path))}: .*{reason}"):
        open_recorder(path)


def test_what_was_written_reaches_the_file_within_the_flush_period(tmp_path):
    # mcap's 1 MiB chunks stayed in memory: a killed node left the magic and the header only.
    now = [0.0]
    recorder = open_recorder(tmp_path / "run.mcap", clock=lambda: now[0])
    recorder.write("/joint_states", "std_msgs/msg/String", string("a"), 0.1)
    now[0] = FLUSH_PERIOD / 2
    recorder.write("/joint_states", "std_msgs/msg/String", string("b"), 0.2)
    assert on_disk(recorder.path) == ["/mb_sim/recording", "/robot_description"]  # two in memory
    now[0] = FLUSH_PERIOD
    recorder.flush_if_due()  # a timer's call: a quiet spell after "b"
    assert on_disk(recorder.path) == ["/mb_sim/recording", "/robot_description", "/joint_states", "/joint_states"]
    recorder.close()


SESSION_FAILING_MID_RECORDING = """
import json, resource, sys
from mb_sim.resources import robot_path
from mb_sim.session import Session
from mb_sim.sim import Simulator
sim = Simulator(robot_path("pendulum"), dt=1e-3, cache_dir=sys.argv[2], default_effort_limit=1.0)
session, events = Session(sim, start_paused=True), []
session.subscribe(lambda event, **details: events.append([event, details]))
string = lambda text: text.encode()
resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))  # the kernel refuses writes beyond: EFBIG
session.start_recording(sys.argv[1], {}, b"<robot/>", string)
for k in range(2000):
    session.write("/joint_states", "std_msgs/msg/String", bytes(range(256)) * 4)
    assert session.step(1)
print(json.dumps({"events": events, "recording": session.recording, "failure": session.recording_failure,
                  "time": sim.time}))
"""


def test_a_write_failing_mid_recording_ends_the_recording_not_the_session(tmp_path):
    # The OSError of a full disk escaped Session.write (and killed the node's timer callback).
    path = tmp_path / "run.mcap"
    result = subprocess.run([sys.executable, "-c", SESSION_FAILING_MID_RECORDING, str(path), str(tmp_path / "cache")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    reason = f"recording {path}: cannot write: File too large"
    assert outcome["events"] == [["recording_failed", {"reason": reason}]]
    assert outcome["recording"] is None and outcome["failure"] == reason
    assert outcome["time"] == pytest.approx(2.0)  # the run went on to the end
    assert on_disk(path)[:3] == ["/mb_sim/recording", "/robot_description", "/joint_states"]
