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

Pure Python (the node hands serialized messages in), no rclpy.
"""
from __future__ import annotations

import json
import os

from mcap.writer import Writer

from mb_sim.sim.recording import message_definition

__all__ = ["Recorder", "RECORDING_TOPIC", "EVENTS_TOPIC", "FORMAT"]

RECORDING_TOPIC = "/mb_sim/recording"
EVENTS_TOPIC = "/mb_sim/events"
#: The value of the recording header's "format" key (replay refuses others).
FORMAT = "mb_sim recording 1"


class Recorder:
    """An open recording at `path`; `string` serializes a ``std_msgs/msg/String`` (CDR bytes)."""

    def __init__(self, path: str | os.PathLike, header: dict, urdf: bytes, string) -> None:
        self.path = os.fspath(path)
        self._string = string
        self._stream = open(self.path, "wb")
        self._writer = Writer(self._stream)
        self._writer.start(profile="ros2", library="mb_sim")
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence = 0
        self.write(RECORDING_TOPIC, "std_msgs/msg/String", string(json.dumps({"format": FORMAT, **header})), header["time"])
        self.write("/robot_description", "std_msgs/msg/String", urdf, header["time"])

    def write(self, topic: str, type_name: str, data: bytes, time: float) -> None:
        """Message `data` (CDR) of `type_name` on `topic` at sim time `time` [s]."""
        channel = self._channels.get(topic)
        if channel is None:
            if type_name not in self._schemas:
                self._schemas[type_name] = self._writer.register_schema(
                    type_name, "ros2msg", message_definition(type_name).encode())
            channel = self._channels[topic] = self._writer.register_channel(topic, "cdr", self._schemas[type_name])
        nanoseconds = max(0, round(time * 1e9))
        self._writer.add_message(channel, nanoseconds, bytes(data), nanoseconds, self._sequence)
        self._sequence += 1

    def event(self, time: float, **fields) -> None:
        """A JSON event on EVENTS_TOPIC."""
        self.write(EVENTS_TOPIC, "std_msgs/msg/String", self._string(json.dumps(fields)), time)

    def close(self) -> None:
        """Finish the file (its summary and footer)."""
        if self._stream.closed:
            return
        try:
            self._writer.finish()
        finally:
            self._stream.close()
