"""``mb-sim replay``: re-run a node's recording (:mod:`mb_sim.session.recorder`) offline and compare.

The recording's header rebuilds the simulator as the node had it (URDF, physics step, servo
options, state, held commands); then the file is walked in order: each command is applied at the
sim time it took effect (through the node's own :class:`~mb_sim.session.Session`),
events (resets, constraint switches, commands timing out) are redone, and at each recorded
``joint_states`` message the simulation is advanced to its stamp and compared joint by joint
(position, velocity, effort).  In lockstep the node advances only on commands, so the replay
repeats it exactly: differences are zero to rounding (bit for bit in practice).  In real time the
commands took effect at the node's ticks, which is also the sim time recorded, so it repeats too.

A file is hostile until read: nothing from it is evaluated (JSON and CDR only, decoded with this
installation's message definitions, never the file's), its records, JSON and URDF are bounded in
size, its header is checked key by key, and the work it asks for is bounded
(:data:`MAX_JUMP_STEPS` between messages, ``max_steps`` in all).  A file that ends early (a
killed node never wrote its summary) or is damaged part way is replayed up to there, and the
report says where it ended (:attr:`ReplayReport.ended`).  No rclpy: mcap and mcap_ros2.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import struct
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from mcap.data_stream import ReadDataStream
from mcap.opcode import Opcode
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import breakup_chunk
from mcap_ros2.decoder import DecoderFactory

from mb_sim.session import MAX_ADVANCE_STEPS, Session
from mb_sim.session.command_router import command_type
from mb_sim.session.commands import CommandError
from mb_sim.session.recorder import EVENTS_TOPIC, FORMAT, RECORDING_TOPIC
from mb_sim.sim import SimulationError, Simulator
from mb_sim.sim.recording import message_definition
from mb_sim.sim.servos import MODES

__all__ = ["ReplayError", "ReplayReport", "replay", "MAX_RECORD_BYTES", "MAX_JSON_BYTES", "MAX_JSON_DEPTH",
           "MAX_JUMP_STEPS", "MAX_STEPS"]


class ReplayError(ValueError):
    """A file that is not a recording this version can replay; the message says why."""


#: Largest MCAP record (a chunk, a schema...) and largest chunk once decompressed [bytes].
MAX_RECORD_BYTES = 256 * 2**20
#: Largest JSON text (the header, an event) [bytes] and deepest nesting of its lists and objects.
MAX_JSON_BYTES = 64 * 2**20
MAX_JSON_DEPTH = 32
#: Most physics steps from one message to the next: far more than a node advances between two
#: states it publishes (one wall-clock tick's work), far less than hours of replay.
MAX_JUMP_STEPS = 10**7
#: Default bound on the physics steps of a whole replay (``mb-sim replay --max-steps``).
MAX_STEPS = 10**8
#: Bounds of what a header may ask for: the node's physics step, sim time and command timeout.
PHYSICS_DT = (1e-6, 0.1)
MAX_TIME = 1e9
MAX_TIMEOUT = 1e6
#: Message types of the topics a replay reads (decoded with this installation's definitions).
STRING, JOINT_STATE = "std_msgs/msg/String", "sensor_msgs/msg/JointState"
MAGIC = b"\x89MCAP0\r\n"


@dataclass
class ReplayReport:
    """What a replay found: counts, the largest differences from the recorded states, and where
    the replay stopped before the file's end (``ended``; None: it read the whole recording)."""

    commands: int = 0
    states: int = 0
    events: int = 0
    rejected: int = 0
    duration: float = 0.0
    steps: int = 0
    position: float = 0.0  # largest |difference| [rad or m]
    velocity: float = 0.0
    effort: float = 0.0
    worst: dict = field(default_factory=dict)  # quantity -> (sim time, joint)
    ended: str | None = None

    @property
    def largest(self) -> float:
        return max(self.position, self.velocity, self.effort)

    def summary(self) -> str:
        """Lines for the terminal."""
        worst = {k: f" (joint {j} at {t:.6g} s)" for k, (t, j) in self.worst.items()}
        return "\n".join([
            f"replayed {self.commands} commands and {self.events} events over {self.duration:.6g} s of sim time, "
            f"compared {self.states} joint states" + (f"; {self.rejected} commands rejected" if self.rejected else ""),
            f"largest difference from the recording: position {self.position:.3g}{worst.get('position', '')}, "
            f"velocity {self.velocity:.3g}{worst.get('velocity', '')}, effort {self.effort:.3g}{worst.get('effort', '')}"])


class _Stop(Exception):
    """The replay stops here (the file ends early, is damaged, or asks for too much); why."""


# -- reading the file -----------------------------------------------------------------------------
class _McapMessages:
    """(topic, log time [s], decoded message) of an MCAP file in file order, read record by record
    with every length checked against the file and the bounds; :class:`_Stop` where the data
    section cannot be read further (truncated or damaged)."""

    def __init__(self, stream, size: int) -> None:
        self._stream, self._size, self._offset = stream, size, 0
        self._schemas: dict[int, str] = {}
        self._channels: dict[int, tuple[str, str | None]] = {}  # id -> (topic, schema name)
        self._decoders: dict[str, Callable] = {}
        self._factory = DecoderFactory()

    def __iter__(self) -> Iterator[tuple[str, float, object]]:
        if self._stream.read(len(MAGIC)) != MAGIC:
            raise _Stop("has no MCAP magic at its start: not an MCAP file")
        self._offset = len(MAGIC)
        while True:
            opcode, body = self._record()
            if opcode == Opcode.DATA_END or opcode == Opcode.FOOTER:
                return  # the data section is complete: the summary after it is not needed
            for record in self._open(opcode, body):
                decoded = self._take(record)
                if decoded is not None:
                    yield decoded

    def _record(self) -> tuple[int, bytes]:
        """The next record's opcode and body."""
        head = self._stream.read(9)
        if len(head) < 9:
            raise _Stop(f"ends at byte {self._offset} without its summary (truncated: the recording "
                        "was not closed)")
        opcode, length = struct.unpack("<BQ", head)
        left = self._size - self._offset - 9
        if length > left:
            raise _Stop(f"ends at byte {self._size} inside a record of {length} bytes that starts at byte "
                        f"{self._offset} (truncated)")
        if length > MAX_RECORD_BYTES:
            raise _Stop(f"has a record of {length} bytes at byte {self._offset} (more than {MAX_RECORD_BYTES})")
        body = self._stream.read(length)
        self._offset += 9 + length
        return opcode, body

    def _open(self, opcode: int, body: bytes) -> list:
        """The schema, channel and message records in `body` (a chunk's, unpacked and checked)."""
        start = self._offset - len(body) - 9
        try:
            stream = ReadDataStream(io.BytesIO(body))
            if opcode == Opcode.CHUNK:
                chunk = Chunk.read(stream)
                if chunk.compression not in ("", "zstd"):
                    raise ValueError(f"compression {chunk.compression!r} (mb_sim writes zstd)")
                if chunk.uncompressed_size > MAX_RECORD_BYTES:
                    raise ValueError(f"{chunk.uncompressed_size} bytes uncompressed (more than {MAX_RECORD_BYTES})")
                return breakup_chunk(chunk, validate_crc=True)
            if opcode == Opcode.SCHEMA:
                return [Schema.read(stream)]
            if opcode == Opcode.CHANNEL:
                return [Channel.read(stream)]
            if opcode == Opcode.MESSAGE:
                return [Message.read(stream, len(body))]
        except Exception as err:  # noqa: BLE001 (damaged bytes fail in many ways: struct, zstd, CRC, UTF-8)
            raise _Stop(f"is damaged at byte {start}: {_describe(err)}") from None
        return []  # indexes, statistics, attachments: not needed

    def _take(self, record) -> tuple[str, float, object] | None:
        if isinstance(record, Schema):
            self._schemas[record.id] = record.name
        elif isinstance(record, Channel):
            self._channels[record.id] = (record.topic, self._schemas.get(record.schema_id))
        elif isinstance(record, Message):
            if record.channel_id not in self._channels:
                raise _Stop(f"is damaged at byte {self._offset}: a message on channel {record.channel_id}, "
                            "which no channel record declared")
            topic, type_name = self._channels[record.channel_id]
            return topic, record.log_time * 1e-9, (type_name, record.data)
        return None

    def decode(self, topic: str, type_name: str | None, data: bytes, expected: str):
        """`data`, a message on `topic` of `type_name`, which must be `expected`, decoded."""
        if type_name != expected:
            raise _Stop(f"has topic {topic} of type {type_name}, not {expected}")
        decoder = self._decoders.get(type_name)
        if decoder is None:
            schema = Schema(id=len(self._decoders) + 1, name=type_name, encoding="ros2msg",
                            data=message_definition(type_name).encode())
            decoder = self._decoders[type_name] = self._factory.decoder_for("cdr", schema)
        try:
            return decoder(data)
        except Exception as err:  # noqa: BLE001 (CDR of damaged bytes: struct, index, UTF-8 errors)
            raise _Stop(f"has a message on {topic} that cannot be decoded as {type_name}: {_describe(err)}") from None


def _sentence(err: BaseException) -> str:
    """A ValueError's message, or a :class:`_Stop`'s as "it <verb>..."."""
    return f"it {err}" if isinstance(err, _Stop) else str(err)


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


# -- JSON and the header --------------------------------------------------------------------------
def _json(text: str, what: str):
    """`text` parsed as JSON, bounded in size and nesting; ValueError naming `what` if not."""
    if len(text) > MAX_JSON_BYTES:
        raise ValueError(f"{what}: {len(text)} bytes of JSON (more than {MAX_JSON_BYTES})")
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', "", text).encode()
    codes = np.frombuffer(outside_strings, dtype=np.uint8)
    depth = np.cumsum(np.isin(codes, (0x5B, 0x7B)).astype(np.int64) - np.isin(codes, (0x5D, 0x7D)))
    if depth.size and depth.max() > MAX_JSON_DEPTH:
        raise ValueError(f"{what}: JSON nested more than {MAX_JSON_DEPTH} deep")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{what}: not valid JSON ({err})") from None


def _number(value, where: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite JSON number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: expected a number, got {_show(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (math.isfinite(number) and low <= number <= high):
        raise ValueError(f"{where}: {_show(value)} is not a finite number from {low:g} to {high:g}")
    return number


def _numbers(value, where: str, most: int | None = None) -> list[float]:
    """A JSON list of finite numbers (at most `most`)."""
    items = _typed(value, list, where)
    if most is not None and len(items) > most:
        raise ValueError(f"{where}: {len(items)} numbers, at most {most}")
    return [_number(v, f"{where}[{k}]") for k, v in enumerate(items)]


def _typed(value, kind: type, where: str):
    names = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}
    if not isinstance(value, kind):
        raise ValueError(f"{where}: expected {names[kind]}, got {_show(value)}")
    return value


def _key(mapping: dict, key: str, where: str):
    if key not in mapping:
        raise ValueError(f"{where}: no key {key!r}")
    return mapping[key]


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_header(header: dict) -> dict:
    """The header's values, each checked for type and range (ValueError naming the key); what a
    replay passes on to the simulator and the session."""
    where = "header"
    get = lambda key, kind: _typed(_key(header, key, where), kind, f"{where} key {key!r}")  # noqa: E731
    options = get("simulator", dict)
    allowed = {"default_effort_limit", "servo_frequency", "servo_feed_forward", "initial_positions", "floating_base",
               "ground", "wrench_links"}
    for key in set(options) - allowed:
        raise ValueError(f"{where} key 'simulator': unknown option {key!r}")
    simulator = {}
    if options.get("default_effort_limit") is not None:
        simulator["default_effort_limit"] = _number(options["default_effort_limit"], "simulator.default_effort_limit", 0)
    if "servo_frequency" in options:
        simulator["servo_frequency"] = _number(options["servo_frequency"], "simulator.servo_frequency", 0)
    for key in ("floating_base", "ground"):  # how the recorded URDF was loaded
        if key in options:
            simulator[key] = _typed(options[key], bool, f"simulator.{key}")
    if "wrench_links" in options:
        links = _typed(options["wrench_links"], list, "simulator.wrench_links")
        simulator["wrench_links"] = [_typed(link, str, "simulator.wrench_links[]") for link in links]
    if options.get("servo_feed_forward") is not None:  # None: the simulator's default for the robot
        simulator["servo_feed_forward"] = _typed(options["servo_feed_forward"], bool, "simulator.servo_feed_forward")
    if "initial_positions" in options:
        positions = _typed(options["initial_positions"], dict, "simulator.initial_positions")
        simulator["initial_positions"] = {joint: _number(v, f"simulator.initial_positions.{joint}")
                                          for joint, v in positions.items()}
    state = get("state", dict)
    initial = _typed(_key(state, "initial", "state"), list, "state.initial")
    if len(initial) != 4:
        raise ValueError(f"state.initial: expected [q, u, z, time], got {len(initial)} items")
    topics = get("command_topics", dict)
    for topic, kind in topics.items():
        if not isinstance(kind, str) or command_type(kind) is None:
            raise ValueError(f"{where} key 'command_topics': topic {topic}: unknown kind {_show(kind)}")
    return {"physics_dt": _number(_key(header, "physics_dt", where), "physics_dt", *PHYSICS_DT),
            "time": _number(_key(header, "time", where), "time", 0.0, MAX_TIME),
            "command_timeout": _number(_key(header, "command_timeout", where), "command_timeout", 0.0, MAX_TIMEOUT),
            "allow_partial": _typed(_key(header, "allow_partial_joints_goal", where), bool, "allow_partial_joints_goal"),
            "simulator": simulator,
            "q": _numbers(_key(state, "q", "state"), "state.q"), "u": _numbers(_key(state, "u", "state"), "state.u"),
            "z": _numbers(_key(state, "z", "state"), "state.z"),
            "enabled": {name: _typed(v, bool, f"state.enabled.{name}")
                        for name, v in _typed(_key(state, "enabled", "state"), dict, "state.enabled").items()},
            "initial": (_numbers(initial[0], "state.initial[0]"), _numbers(initial[1], "state.initial[1]"),
                        _numbers(initial[2], "state.initial[2]"), _number(initial[3], "state.initial[3]", 0.0, MAX_TIME)),
            "commands": _check_commands(get("commands", dict)),
            "command_topics": topics,
            "ros2_control": _check_ros2_control(header.get("ros2_control", {"interfaces": {}, "ignored": []})),
            "joint_states_topic": get("joint_states_topic", str),
            "wrench_frames": {_typed(k, str, "wrench_frames key"): _typed(v, str, f"wrench_frames.{k}")
                              for k, v in _typed(header.get("wrench_frames", {}), dict, "wrench_frames").items()}}


def _check_ros2_control(recorded) -> dict:
    """The recorded ros2_control hardware's joints: ``interfaces`` (joint -> command interfaces)
    and ``ignored`` (mimic joints), checked."""
    where = "header key 'ros2_control'"
    recorded = _typed(recorded, dict, where)
    interfaces = _typed(_key(recorded, "interfaces", where), dict, f"{where}.interfaces")
    for joint, names in interfaces.items():
        if not isinstance(names, list) or not all(name in ("position", "velocity", "effort") for name in names):
            raise ValueError(f"{where}.interfaces.{joint}: expected a list of position, velocity, effort")
    ignored = _typed(_key(recorded, "ignored", where), list, f"{where}.ignored")
    return {"interfaces": {joint: tuple(names) for joint, names in interfaces.items()},
            "ignored": {str(joint) for joint in ignored}}


def _check_commands(commands: dict) -> dict:
    """A recorded :meth:`~mb_sim.session.command_router.CommandRouter.snapshot`, checked."""
    gains = _typed(_key(commands, "gains", "commands"), dict, "commands.gains")
    servos = _typed(_key(commands, "servos", "commands"), dict, "commands.servos")
    checked_servos = {}
    for joint, servo in servos.items():
        where = f"commands.servos.{joint}"
        servo = _typed(servo, dict, where)
        mode = _typed(_key(servo, "mode", where), str, f"{where}.mode")
        if mode not in MODES[1:]:
            raise ValueError(f"{where}.mode: unknown servo mode {_show(mode)}")
        segments = []
        for k, segment in enumerate(_typed(_key(servo, "segments", where), list, f"{where}.segments")):
            at = f"{where}.segments[{k}]"
            segment = _typed(segment, dict, at)
            velocity = _key(segment, "v", at)
            segments.append({"begin": _number(_key(segment, "begin", at), f"{at}.begin"),
                             "origin": _number(_key(segment, "origin", at), f"{at}.origin"),
                             "p": _numbers(_key(segment, "p", at), f"{at}.p", 6),
                             "position": _typed(_key(segment, "position", at), bool, f"{at}.position"),
                             "v": None if velocity is None else _numbers(velocity, f"{at}.v", 5)})
        checked_servos[joint] = {"mode": mode, "segments": segments}
    return {"efforts": _numbers(_key(commands, "efforts", "commands"), "commands.efforts"),
            "voltages": _numbers(_key(commands, "voltages", "commands"), "commands.voltages"),
            "gains": {joint: _numbers(pair, f"commands.gains.{joint}", 2) for joint, pair in gains.items()},
            "servos": checked_servos}


# -- replaying --------------------------------------------------------------------------------------
def replay(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None,
           progress: Callable[[str], None] | None = None, max_steps: int = MAX_STEPS) -> ReplayReport:
    """Replay the recording at `path` (see the module docstring), at most `max_steps` physics
    steps.  ReplayError (one line naming the file) if it is not a recording that can be
    replayed; a file that ends early or asks for too much is replayed up to there (``ended``)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ReplayError(f"{path}: is a directory, not a recording")
    try:
        stream = open(path, "rb")
    except OSError as err:
        raise ReplayError(f"{path}: cannot be read: {err.strerror or err}") from None
    with stream:
        size = os.fstat(stream.fileno()).st_size
        if size == 0:
            raise ReplayError(f"{path}: is empty, not a recording")
        return _replay_stream(path, stream, size, cache_dir, progress, max_steps)


def _replay_stream(path: str, stream, size: int, cache_dir, progress, max_steps: int) -> ReplayReport:
    messages = _McapMessages(stream, size)
    walk = iter(messages)
    try:
        first = _next(walk)
        second = _next(walk)
    except _Stop as stop:
        raise ReplayError(f"{path}: not a readable MCAP recording: it {stop}") from None
    except ReplayError as err:
        raise ReplayError(f"{path}: {err}") from None
    if first[0] != RECORDING_TOPIC:
        raise ReplayError(f"{path}: not an mb_sim recording (its first message is on {first[0]}, "
                          f"not {RECORDING_TOPIC})")
    try:
        header = _json(messages.decode(first[0], first[2][0], first[2][1], STRING).data, "the header")
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"its first message is not {RECORDING_TOPIC} with format {FORMAT!r}")
        settings = _check_header(header)
        if second[0] != "/robot_description":
            raise ValueError(f"its second message is on {second[0]}, not /robot_description")
        urdf = messages.decode(second[0], second[2][0], second[2][1], STRING).data
    except (ValueError, _Stop) as err:
        raise ReplayError(f"{path}: not an mb_sim recording this version can replay: {_sentence(err)}") from None
    run = _Replay(path, settings, urdf, cache_dir, progress, max_steps)
    try:
        for topic, time, (type_name, data) in walk:
            run.take(messages, topic, time, type_name, data)
    except _Stop as stop:
        run.report.ended = f"{path} {stop}; replayed up to there"
    return run.report


def _next(walk: Iterator):
    try:
        return next(walk)
    except StopIteration:
        raise ReplayError("empty, or not an mb_sim recording (fewer than two messages)") from None


def _no_wall_clock() -> float:
    """A replay's wall clock: none.  Commands age by the recording's stale events instead."""
    return 0.0


class _Replay:
    """One replay: a :class:`~mb_sim.session.Session` (the node's own), fed the recording's
    messages in order, and what it found."""

    def __init__(self, path: str, settings: dict, urdf: str, cache_dir, progress, max_steps: int) -> None:
        if not urdf.lstrip().startswith("<"):
            raise ReplayError(f"{path}: its /robot_description is not URDF text")
        self.path, self.max_steps = path, max_steps
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # repairs and missing limits were reported when the node started
                self.sim = Simulator(urdf, dt=settings["physics_dt"], cache_dir=cache_dir, progress=progress,
                                     **settings["simulator"])
        except (ValueError, SimulationError) as err:  # URDFError is a ValueError
            raise ReplayError(f"{path}: its /robot_description cannot be simulated: {err}") from None
        try:
            _restore(self.sim, settings)
            self.session = Session(self.sim, command_timeout=settings["command_timeout"],
                                   allow_partial=settings["allow_partial"], start_paused=True, clock=_no_wall_clock)
            self.session.router.restore(settings["commands"], 0.0)
            self.session.router.wrench_frames.update(settings["wrench_frames"])
            self.session.router.serve_ros2_control(settings["ros2_control"]["interfaces"],
                                                   settings["ros2_control"]["ignored"], hold=False)
        except (ValueError, TypeError, KeyError, SimulationError) as err:
            raise ReplayError(f"{path}: its header does not fit its robot: {err}") from None
        self.commands, self.joint_states = settings["command_topics"], settings["joint_states_topic"]
        self.report = ReplayReport()

    def take(self, messages: _McapMessages, topic: str, time: float, type_name: str | None, data: bytes) -> None:
        """One message of the recording, in file order."""
        if topic in self.commands:
            kind = self.commands[topic]
            command = messages.decode(topic, type_name, data, command_type(kind))
            self._advance_to(time)
            try:
                self.session.command(self.commands[topic], command)
                self.report.commands += 1
            except CommandError:
                self.report.rejected += 1
        elif topic == EVENTS_TOPIC:
            text = messages.decode(topic, type_name, data, STRING).data
            try:
                event = _json(text, f"an event at sim time {time:.6g} s")
            except ValueError as err:
                raise _Stop(f"has {err}") from None
            self._event(time, event)
        elif topic == self.joint_states:
            state = messages.decode(topic, type_name, data, JOINT_STATE)
            self._advance_to(_stamp(state))
            self._compare(state)

    def _advance_to(self, time: float) -> None:
        """Advance to sim time `time`, at most :data:`MAX_JUMP_STEPS` from where it is and
        `max_steps` in all (:class:`_Stop` beyond)."""
        steps = round((time - self.sim.time) / self.sim.dt)
        if steps > MAX_JUMP_STEPS:
            raise _Stop(f"jumps from sim time {self.sim.time:.6g} s to {time:.6g} s ({steps} physics steps without "
                        f"a message, more than the {MAX_JUMP_STEPS} a replay takes at once): stopped there")
        if self.report.steps + steps > self.max_steps:
            raise _Stop(f"asks for more than {self.max_steps} physics steps (--max-steps) at sim time "
                        f"{self.sim.time:.6g} s: stopped there")
        inputs = self.session.current_inputs() if steps > 0 else None
        while steps > 0:  # in units the session bounds
            chunk = min(steps, MAX_ADVANCE_STEPS)
            if not self.session.advance(chunk, inputs):
                raise ReplayError(f"{self.path}: the replay diverged at {self.session.failure}")
            self.report.duration += chunk * self.sim.dt
            self.report.steps += chunk
            steps, inputs = steps - chunk, None

    def _event(self, time: float, event) -> None:
        if not isinstance(event, dict):
            raise _Stop(f"has an event at sim time {time:.6g} s that is not a JSON object")
        self.report.events += 1
        kind = event.get("event")
        try:
            if kind == "reset":
                self.session.reset()
            elif kind == "constraint":
                self._advance_to(time)
                self.session.set_constraint_enabled(_typed(event.get("name"), str, "its name"),
                                                    _typed(event.get("enabled"), bool, "enabled"))
            elif kind == "stale":
                self._advance_to(time)
                self.session.router.expire(self._names(event, "joints", self.sim.actuated_joints),
                                           self._names(event, "motors", self.sim.motors))
        except (ValueError, SimulationError) as err:
            raise _Stop(f"has a {kind} event at sim time {time:.6g} s that cannot be redone: {err}") from None

    @staticmethod
    def _names(event: dict, key: str, known: list[str]) -> list[str]:
        names = _typed(event.get(key, []), list, key)
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"{key}: unknown {_show(unknown)}")
        return names

    def _compare(self, message) -> None:
        out = self.sim.outputs(dynamics=False)
        self.report.states += 1
        for k, joint in enumerate(message.name):
            for quantity, recorded, simulated in (("position", message.position, out.joint_positions),
                                                  ("velocity", message.velocity, out.joint_velocities),
                                                  ("effort", message.effort, out.efforts)):
                value = simulated.get(joint, 0.0)
                difference = abs(value - recorded[k]) if k < len(recorded) else math.inf
                if difference > getattr(self.report, quantity) or math.isnan(difference):
                    setattr(self.report, quantity, difference)
                    self.report.worst[quantity] = (self.sim.time, joint)


def _restore(sim: Simulator, settings: dict) -> None:
    """Put `sim` in the state a checked header recorded: its constraints, state and initial state."""
    for name, enabled in settings["enabled"].items():
        sim.set_constraint_enabled(name, enabled)
    sim.restore(settings["q"], settings["u"], settings["z"], settings["time"], initial=settings["initial"])


def _stamp(message) -> float:
    return message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec
