"""Record and replay over real DDS: a node process records a controller's commands and its states
to MCAP (from the start with ``record_file``, or by ``~/record``), then ``mb-sim replay`` re-runs
the recording offline in its own process and reports the largest difference from the states."""
from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from builtin_interfaces.msg import Duration
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mb_sim import cli
from mb_sim.resources import robot_path
from mb_sim.session import Session
from mb_sim.sim import Simulator
from mb_sim.sim.servos import SERVO_FREQUENCY

from test_node import node_env, nodes, peer, reset, shared_peer  # noqa: F401
from test_node_commands import lockstep_run
from test_servos import ARM6

MB_SIM = Path(sys.executable).parent / "mb-sim"


def replay(path: Path, env: dict, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MB_SIM), "replay", str(path), "--quiet", *options], env=env, text=True,
                          capture_output=True, timeout=300)


def largest(output: str) -> float:
    """The largest of the three differences `mb-sim replay` prints."""
    values = re.findall(r"(position|velocity|effort) ([0-9.e+-]+|inf|nan)", output)
    assert len(values) == 3, output
    return max(float(v) for _, v in values)


def test_a_ten_second_lockstep_recording_replays_to_rounding(nodes, node_env, peer, tmp_path):
    path = tmp_path / "lockstep.mcap"
    nodes.get("-p", "urdf_file:=arm6", "-p", "lockstep:=true", "-p", f"record_file:={path}")
    states = peer.collect(JointState, "/joint_states")
    commands = peer.publisher(JointState, "/mb_sim/joint_commands")
    efforts = peer.publisher(Float64MultiArray, "/mb_sim/effort_commands")
    trajectories = peer.publisher(JointTrajectory, "/mb_sim/joint_trajectory")
    nan, count = math.nan, [0]

    def command(state) -> None:
        k = count[0] = count[0] + 1
        if k == 400:  # a trajectory for every joint, then position/velocity/effort mixes
            points = [JointTrajectoryPoint(positions=[0.2 * (i + 1) * s for i in range(6)], velocities=[0.0] * 6,
                                           time_from_start=Duration(sec=s)) for s in (1, 2)]
            trajectories.publish(JointTrajectory(joint_names=ARM6, points=points))
        elif k % 3 == 0 or k > 700:
            efforts.publish(Float64MultiArray(data=[5.0 * (0.3 - p) - 1.0 * v for p, v in zip(state.position, state.velocity)]))
        elif k < 400:
            commands.publish(JointState(name=ARM6, position=[0.4, nan, -0.3, nan, nan, nan],
                                        velocity=[nan, 0.5, nan, nan, nan, nan],
                                        effort=[0.0, 0.0, 0.0, 1.0, -1.0, 0.5]))
        else:
            trajectories.publish(JointTrajectory())  # no message type change: an empty trajectory holds all joints

    reset(peer)
    lockstep_run(peer, states, command, 1000)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success
    result = replay(path, node_env, "--tolerance", "1e-12")
    assert result.returncode == 0, result.stderr + result.stdout
    assert re.search(r"replayed 1000 commands and 1 events over 10 s", result.stdout), result.stdout
    assert int(re.search(r"compared (\d+) joint states", result.stdout)[1]) >= 1001
    assert largest(result.stdout) <= 1e-12


def test_a_recording_started_by_the_service_in_real_time_replays(nodes, node_env, peer, tmp_path):
    path = tmp_path / "service.mcap"
    nodes.get("-p", "urdf_file:=pendulum", "-p", "command_timeout:=0.0", "-p", f"record_file:={path}")
    peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False))  # the one from the start: not wanted
    states = peer.collect(JointState, "/joint_states")
    commands = peer.publisher(JointState, "/mb_sim/joint_commands")
    assert peer.spin_until(lambda: len(states) > 5, 10.0)
    response = peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=True))
    path = tmp_path / "service_2.mcap"  # record_file is taken by the first recording: never overwritten
    assert response.success and str(path) in response.message, response.message
    for k in range(8):  # arrive between ticks, whenever they do
        commands.publish(JointState(name=["hinge"], effort=[2.0 * math.sin(k)]))
        peer.spin_for(0.05)
    reset(peer)
    commands.publish(JointState(name=["hinge"], position=[0.5]))
    peer.spin_for(0.3)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success
    result = replay(path, node_env)
    assert result.returncode == 0, result.stderr
    assert re.search(r"replayed 9 commands and 1 events", result.stdout), result.stdout
    assert largest(result.stdout) <= 1e-12


def test_replaying_a_file_that_is_not_a_recording_says_so_in_one_line(tmp_path, node_env):
    path = tmp_path / "not.mcap"
    path.write_bytes(b"hello")
    result = replay(path, node_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert re.fullmatch(r"mb-sim: .*not\.mcap: not a readable MCAP recording.*\n", result.stderr), result.stderr
    assert replay(tmp_path / "missing.mcap", node_env).stderr == f"mb-sim: {tmp_path / 'missing.mcap'}: no such file\n"


# -- hostile and damaged recordings, replayed in-process (no DDS) --------------------------------
def pendulum_recording(path: Path, cache_dir: str, periods: int = 20) -> Path:
    """A lockstep pendulum recording written by the node's own Session and Recorder: one effort
    command and one joint state per 10 ms period, each flushed to its own chunk (the wall clock
    the recorder reads advances a second a call), as a node flushes under way."""
    ticks = itertools.count()
    sim = Simulator(robot_path("pendulum"), dt=1e-3, cache_dir=cache_dir, default_effort_limit=5.0)
    session = Session(sim, start_paused=True, clock=lambda: float(next(ticks)))
    settings = {"node": "/mb_sim", "physics_dt": 1e-3, "period_steps": 10, "lockstep": True,
                "command_timeout": 0.0, "allow_partial_joints_goal": False,
                "simulator": {"default_effort_limit": 5.0, "servo_frequency": SERVO_FREQUENCY,
                              "servo_feed_forward": True, "initial_positions": {}},
                "command_topics": {"/mb_sim/joint_commands": "joint_commands"}, "joint_states_topic": "/joint_states"}
    session.start_recording(str(path), settings, serialize_message(String(data=robot_path("pendulum").read_text())),
                            lambda text: serialize_message(String(data=text)))
    for k in range(periods):
        command = JointState(name=["hinge"], effort=[math.sin(k)])
        session.command("joint_commands", command)
        session.write("/mb_sim/joint_commands", "sensor_msgs/msg/JointState", serialize_message(command))
        assert session.advance(10, session.current_inputs())
        out = sim.outputs(dynamics=False)
        state = JointState(name=["hinge"], position=[out.joint_positions["hinge"]],
                           velocity=[out.joint_velocities["hinge"]], effort=[out.efforts["hinge"]])
        state.header.stamp.sec, state.header.stamp.nanosec = divmod(round(sim.time * 1e9), 10**9)
        session.write("/joint_states", "sensor_msgs/msg/JointState", serialize_message(state))
    session.stop_recording()
    return path


@pytest.fixture(scope="module")
def cache_dir(model_cache) -> str:
    return str(model_cache)


@pytest.fixture(scope="module")
def recording(tmp_path_factory, cache_dir) -> Path:
    return pendulum_recording(tmp_path_factory.mktemp("recording") / "pendulum.mcap", cache_dir)


@pytest.fixture
def replay_here(cache_dir, monkeypatch, capsys):
    """``mb-sim replay FILE`` in this process: (exit status, stdout, stderr lines); no traceback
    escapes (it would fail the test)."""
    monkeypatch.setenv("MB_SIM_CACHE_DIR", cache_dir)

    def run(path: Path, *options: str) -> tuple[int, str, list[str]]:
        capsys.readouterr()
        code = cli.main(["replay", str(path), "--quiet", *options])
        out, err = capsys.readouterr()
        return code, out, err.splitlines()
    return run


def rewrite(source: Path, target: Path, change) -> Path:
    """`source` copied message by message into `target`, each message's data passed through
    ``change(topic, data)`` (the data to write, or None to leave the message out)."""
    from mcap.reader import make_reader
    from mcap.writer import Writer

    with open(source, "rb") as stream, open(target, "wb") as out:
        writer, channels, schemas = Writer(out), {}, {}
        writer.start(profile="ros2")
        for schema, channel, message in make_reader(stream).iter_messages(log_time_order=False):
            if schema.name not in schemas:
                schemas[schema.name] = writer.register_schema(schema.name, schema.encoding, schema.data)
            if channel.topic not in channels:
                channels[channel.topic] = writer.register_channel(channel.topic, "cdr", schemas[schema.name])
            data = change(channel.topic, message.data)
            if data is not None:
                writer.add_message(channels[channel.topic], message.log_time, data, message.publish_time)
        writer.finish()
    return target


def with_header(source: Path, target: Path, edit) -> Path:
    """`source` with its header JSON text replaced by ``edit(header dict)`` (a dict, or JSON text)."""
    def change(topic: str, data: bytes) -> bytes:
        if topic != "/mb_sim/recording":
            return data
        header = json.loads(deserialize_message(data, String).data)
        edited = edit(header)
        return serialize_message(String(data=edited if isinstance(edited, str) else json.dumps(edited)))
    return rewrite(source, target, change)


def compared(out: str) -> int:
    return int(re.search(r"compared (\d+) joint states", out)[1])


@pytest.mark.slow
def test_a_recording_cut_at_any_byte_replays_up_to_where_it_ends(recording, replay_here, tmp_path):
    # A killed node leaves no summary: the replay read it with mcap's seeking reader, which needs
    # one, and failed (or a record cut in two raised struct.error / EndOfFile).
    from mcap.reader import make_reader

    data = recording.read_bytes()
    with open(recording, "rb") as stream:
        reader = make_reader(stream)
        chunks = reader.get_summary().chunk_indexes
        states = [m.log_time for _, _, m in reader.iter_messages(topics=["/joint_states"])]
    data_end = max(c.chunk_start_offset + c.chunk_length + c.message_index_length for c in chunks) + 13  # DataEnd
    header_end = min(c.chunk_start_offset + c.chunk_length for c in chunks) + 32
    # every byte of the header's chunk (no simulator built there), then every 17th: about 400 cuts
    offsets = [*range(header_end), *range(header_end, len(data) + 1, 17), data_end - 1, data_end, len(data)]
    cut, previous = tmp_path / "cut.mcap", -1
    for offset in offsets:
        cut.write_bytes(data[:offset])
        code, out, err = replay_here(cut)
        if offset < header_end - 32:  # the header or the URDF incomplete: refused
            assert code == 1 and len(err) == 1 and str(cut) in err[0], (offset, err)
            continue
        assert code == 0, (offset, err)
        ended = [c for c in chunks if c.chunk_start_offset + c.chunk_length + c.message_index_length <= offset]
        least = sum(1 for t in states if ended and t <= max(c.message_end_time for c in ended))
        assert least <= compared(out) and previous <= compared(out), (offset, out)
        previous = compared(out)
        if offset < data_end:
            assert len(err) == 1 and re.fullmatch(r"mb-sim: note: .*cut\.mcap ends at byte \d+ .*truncated.*", err[0]), \
                (offset, err)
        else:  # only the summary cut: nothing lost
            assert err == [] and compared(out) == 20, (offset, err)
        assert largest(out) == 0.0, (offset, out)


@pytest.mark.slow
def test_flipped_bytes_give_at_most_one_line(recording, replay_here, tmp_path):
    # Flipped bytes reached struct.error, KeyError and UnicodeDecodeError tracebacks; chunks are
    # CRC-checked now, and what cannot be read ends the replay there with one line.
    data = recording.read_bytes()
    damaged = tmp_path / "flipped.mcap"
    for offset in range(0, len(data), 13):
        damaged.write_bytes(data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1:])
        code, out, err = replay_here(damaged)
        assert code in (0, 1) and len(err) <= 1 and (code == 0 or len(err) == 1), (offset, code, err)
        assert code == 1 or "compared" in out, (offset, out)


def change_key(path: list, value):
    """An edit setting the header's key at `path` (keys of nested objects) to `value`; MISSING deletes it."""
    def edit(header: dict) -> dict:
        target = header
        for key in path[:-1]:
            target = target[key]
        if value is MISSING:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return header
    return edit


MISSING = object()
HEADER_CASES = {
    "missing physics_dt": (["physics_dt"], MISSING, "no key 'physics_dt'"),
    "physics_dt a string": (["physics_dt"], "0.001", "physics_dt: expected a number"),
    "physics_dt zero": (["physics_dt"], 0, "physics_dt: 0 is not a finite number"),
    "physics_dt huge": (["physics_dt"], 1e308, "physics_dt: 1e+308 is not"),
    "time 1e12": (["time"], 1e12, "time: 1000000000000.0 is not"),
    "time a list": (["time"], [0], "time: expected a number"),
    "state not an object": (["state"], [1, 2], "'state': expected an object"),
    "q missing": (["state", "q"], MISSING, "state: no key 'q'"),
    "q of strings": (["state", "q"], ["a"], "state.q[0]: expected a number"),
    "initial short": (["state", "initial"], [[0.0]], "state.initial: expected [q, u, z, time]"),
    "enabled a list": (["state", "enabled"], [], "state.enabled: expected an object"),
    "efforts of nulls": (["commands", "efforts"], [None], "commands.efforts[0]: expected a number"),
    "gains of a string": (["commands", "gains"], {"hinge": "x"}, "commands.gains.hinge: expected a list"),
    "segment without p": (["commands", "servos"], {"hinge": {"mode": "position", "segments": [
        {"begin": 0, "origin": 0, "position": True, "v": None}]}}, "segments[0]: no key 'p'"),
    "simulator option unknown": (["simulator", "rtol"], 1.0, "unknown option 'rtol'"),
    "simulator a number": (["simulator"], 3, "'simulator': expected an object"),
    "command topic kind unknown": (["command_topics"], {"/x": "eval"}, "unknown kind 'eval'"),
    "joint_states_topic a number": (["joint_states_topic"], 7, "'joint_states_topic': expected a string"),
    "timeout huge int": (["command_timeout"], 10**400, "command_timeout:"),
}


@pytest.mark.parametrize("case", HEADER_CASES)
def test_a_hostile_header_is_refused_in_one_line_naming_the_key(case, recording, replay_here, tmp_path):
    # Each reached a KeyError, TypeError or a deep library error as a traceback (or was replayed).
    path, value, expected = HEADER_CASES[case]
    hostile = with_header(recording, tmp_path / "hostile.mcap", change_key(path, value))
    code, out, err = replay_here(hostile)
    assert code == 1 and len(err) == 1 and str(hostile) in err[0] and expected in err[0], err


@pytest.mark.parametrize("text, expected", [
    ("[" * 100_000 + "]" * 100_000, "nested more than 32 deep"),
    ("not json", "not valid JSON"),
])
def test_hostile_header_text_is_refused_in_one_line(text, expected, recording, replay_here, tmp_path):
    # 100,000 nested lists: a RecursionError traceback.
    hostile = with_header(recording, tmp_path / "hostile.mcap", lambda header: text)
    code, out, err = replay_here(hostile)
    assert code == 1 and len(err) == 1 and expected in err[0], err


def test_an_infinite_time_is_refused_in_one_line(recording, replay_here, tmp_path):
    infinite = lambda header: json.dumps({**header, "time": "TIME"}).replace('"TIME"', "1e999")  # noqa: E731
    code, out, err = replay_here(with_header(recording, tmp_path / "hostile.mcap", infinite))
    assert code == 1 and len(err) == 1 and "time: inf is not a finite number" in err[0], err


def test_files_that_are_not_recordings_give_one_line(replay_here, tmp_path):
    empty, text = tmp_path / "empty.mcap", tmp_path / "text.mcap"
    empty.write_bytes(b"")
    text.write_text("hello\n" * 100)
    for path, expected in ((empty, "is empty"), (text, "no MCAP magic at its start"), (tmp_path, "is a directory")):
        code, out, err = replay_here(path)
        assert code == 1 and len(err) == 1 and f"mb-sim: {path}: " in err[0] and expected in err[0], err


def test_a_jump_far_ahead_is_not_replayed_for_hours(recording, replay_here, tmp_path):
    # A joint state stamped 10^6 s after the one before it: a replay advanced 10^9 steps (hours).
    count = itertools.count()

    def jump(topic: str, data: bytes) -> bytes:
        if topic != "/joint_states" or next(count) != 10:
            return data
        state = deserialize_message(data, JointState)
        state.header.stamp.sec += 1_000_000
        return serialize_message(state)

    code, out, err = replay_here(rewrite(recording, tmp_path / "jump.mcap", jump))
    assert code == 0 and compared(out) == 10, out
    assert len(err) == 1 and re.search(r"note: .*jumps from sim time 0\.1 s to 1e\+06 s", err[0]), err


def test_the_steps_of_a_replay_are_bounded(recording, replay_here):
    code, out, err = replay_here(recording, "--max-steps", "55")
    assert code == 0 and compared(out) == 5, out
    assert len(err) == 1 and "more than 55 physics steps (--max-steps)" in err[0], err


def test_a_description_that_is_not_urdf_text_is_not_read_as_a_path(recording, replay_here, tmp_path):
    # /robot_description "/etc/passwd" would have been opened as a URDF file.
    def change(topic: str, data: bytes) -> bytes:
        return serialize_message(String(data="/etc/passwd")) if topic == "/robot_description" else data

    code, out, err = replay_here(rewrite(recording, tmp_path / "path.mcap", change))
    assert code == 1 and len(err) == 1 and "its /robot_description is not URDF text" in err[0], err
