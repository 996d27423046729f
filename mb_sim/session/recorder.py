"""Recordings of a running node: commands in and states out, as an MCAP file of the ROS 2 profile
(CDR messages, each channel's schema the complete ``ros2msg`` definition, as ``ros2 bag record``
writes them), so ``ros2 bag play``, Foxglove and ``mb-sim replay`` read it.

Channels, in the order things happened (file order; log time = sim time, which a reset sets back):

- ``/mb_sim/recording`` (``std_msgs/msg/String``, first): JSON with what a replay needs to start
  where the recording did: the node's settings (physics step, publish period, lockstep, servo
  options), the simulator state (time, q, u, z, enabled constraints, the state a reset returns
  to) and what commands had set (held efforts and voltages, servo gains and references);
- ``/robot_description`` (``std_msgs/msg/String``): the URDF;
- each command the node accepted, on its topic (``/<node>/joint_commands``...), at the sim time it
  took effect (rejected messages changed nothing and are not recorded);
- ``/mb_sim/events`` (``std_msgs/msg/String``): JSON events that change the state other than
  commands and physics: ``{"event": "reset"}``, ``{"event": "constraint", "name": ..., "enabled": ...}``,
  ``{"event": "stale", "joints": [...], "motors": [...]}`` (commands that timed out);
- the states the node published: ``joint_states`` (``sensor_msgs/msg/JointState``) every period.

Nothing is lost to a crash but the last moments: messages go out in small chunks, the file is
flushed at least every :data:`FLUSH_PERIOD` seconds of wall time, so a killed node leaves a file
without its summary that ``mb-sim replay`` reads up to where it ends.  A recording never
overwrites a file: a name taken gets a suffix (``run.mcap``, ``run_2.mcap``, ``run_3.mcap``...).
Any failure to write (at open, at a write, at close) is a :class:`RecordingError`.

Pure Python (the node hands serialized messages in), no rclpy.
"""
from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable

from mcap.writer import Writer

from mb_sim.sim.recording import message_definition

__all__ = ["Recorder", "RecordingError", "RECORDING_TOPIC", "EVENTS_TOPIC", "FORMAT", "FLUSH_PERIOD",
           "CHUNK_SIZE", "MAX_NUMBERED"]

RECORDING_TOPIC = "/mb_sim/recording"
EVENTS_TOPIC = "/mb_sim/events"
#: The value of the recording header's "format" key (replay refuses others).
FORMAT = "mb_sim recording 1"
#: Longest wall time [s] a written message waits in memory before it is flushed to the file.
FLUSH_PERIOD = 0.5
#: Bytes of messages per MCAP chunk (mcap's default, 1 MiB, held seconds of a recording in memory).
CHUNK_SIZE = 64 * 1024
#: Most numbered names (``_2`` ... ) tried for a recording whose name is taken.
MAX_NUMBERED = 1000


class RecordingError(OSError):
    """A recording that cannot be opened, written or completed; the message names the file and why."""


def _reason(err: BaseException) -> str:
    """An OSError's reason without its file name (the caller names the file), else the error."""
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def numbered(path: str, number: int) -> str:
    """`path` with ``_<number>`` before its extension (number 1: `path` itself)."""
    if number == 1:
        return path
    stem, extension = os.path.splitext(path)
    return f"{stem}_{number}{extension}"


def open_new(path: str) -> tuple[object, str]:
    """A new file for writing at `path`, or at the first free numbered name after it; never an
    existing file (opened with ``xb``), except a device such as ``/dev/null``, which is appended
    to (nothing to overwrite).  The stream and its path; RecordingError if none can be opened."""
    for number in range(1, MAX_NUMBERED + 1):
        candidate = numbered(path, number)
        try:
            return open(candidate, "xb"), candidate
        except FileExistsError:
            if os.path.isdir(candidate):
                raise RecordingError(f"cannot record to {candidate}: it is a directory (name a file)") from None
            if _is_device(candidate):
                return _open_device(candidate), candidate
        except OSError as err:
            raise RecordingError(f"cannot record to {candidate}: {_reason(err)}") from None
    raise RecordingError(f"cannot record to {path}: it and {MAX_NUMBERED - 1} numbered names after it exist")


def _is_device(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _open_device(path: str):
    try:
        return open(path, "ab")
    except OSError as err:
        raise RecordingError(f"cannot record to {path}: {_reason(err)}") from None


class Recorder:
    """An open recording at `path` (or the first free numbered name after it: :attr:`path`);
    `string` serializes a ``std_msgs/msg/String`` (CDR bytes); `clock` is the wall clock flushes
    are timed by.  Every method raises :class:`RecordingError` when the file cannot be written;
    after one, the recording is over (:meth:`abandon` it)."""

    def __init__(self, path: str | os.PathLike, header: dict, urdf: bytes, string: Callable[[str], bytes],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream, self.path = open_new(os.fspath(path))
        self._string, self._clock = string, clock
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence = 0
        self._pending = False  # messages written since the last flush
        try:
            self._writer = Writer(self._stream, chunk_size=CHUNK_SIZE)
            self._writer.start(profile="ros2", library="mb_sim")
            self.write(RECORDING_TOPIC, "std_msgs/msg/String", string(json.dumps({"format": FORMAT, **header})),
                       header["time"])
            self.write("/robot_description", "std_msgs/msg/String", urdf, header["time"])
            self.flush()  # the header on disk at once: a file that fails fails now
        except BaseException:
            self.abandon()
            raise

    def write(self, topic: str, type_name: str, data: bytes, time: float) -> None:
        """Message `data` (CDR) of `type_name` on `topic` at sim time `time` [s]."""
        try:
            channel = self._channels.get(topic)
            if channel is None:
                if type_name not in self._schemas:
                    self._schemas[type_name] = self._writer.register_schema(
                        type_name, "ros2msg", message_definition(type_name).encode())
                channel = self._channels[topic] = self._writer.register_channel(topic, "cdr", self._schemas[type_name])
            nanoseconds = max(0, round(time * 1e9))
            self._writer.add_message(channel, nanoseconds, bytes(data), nanoseconds, self._sequence)
        except OSError as err:
            raise RecordingError(f"recording {self.path}: cannot write: {_reason(err)}") from None
        self._sequence += 1
        if not self._pending:
            self._pending, self._since = True, self._clock()
        elif self._clock() - self._since >= FLUSH_PERIOD:
            self.flush()

    def event(self, time: float, **fields) -> None:
        """A JSON event on EVENTS_TOPIC."""
        self.write(EVENTS_TOPIC, "std_msgs/msg/String", self._string(json.dumps(fields)), time)

    def flush(self) -> None:
        """End the chunk in progress and hand everything written to the operating system (what a
        killed process still leaves in the file)."""
        try:
            self._writer.flush()
        except OSError as err:
            raise RecordingError(f"recording {self.path}: cannot write: {_reason(err)}") from None
        self._pending = False

    def flush_if_due(self) -> None:
        """:meth:`flush` if a message has waited :data:`FLUSH_PERIOD` (a caller's timer: the last
        messages before a quiet spell reach the file too)."""
        if self._pending and self._clock() - self._since >= FLUSH_PERIOD:
            self.flush()

    def close(self) -> None:
        """Finish the file (its summary and footer)."""
        if self._stream.closed:
            return
        try:
            self._writer.finish()
            self._stream.close()
        except OSError as err:
            self.abandon()
            raise RecordingError(f"recording {self.path}: cannot complete the file: {_reason(err)}") from None

    def abandon(self) -> None:
        """Close the file as it is, after a failure (what was flushed stays readable); never raises."""
        try:
            self._stream.close()
        except OSError:
            pass  # the buffer could not be written either: the failure was reported already
