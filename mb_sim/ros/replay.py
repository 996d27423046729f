"""``mb-sim replay``: re-run a node's recording (:mod:`mb_sim.session.recorder`) offline and compare.

The recording's header rebuilds the simulator as the node had it (URDF, physics step, servo
options, state, held commands); then the file is walked in order: each command is applied at the
sim time it took effect (through the node's own :class:`~mb_sim.session.Session`),
events (resets, constraint switches, commands timing out) are redone, and at each recorded
``joint_states`` message the simulation is advanced to its stamp and compared joint by joint
(position, velocity, effort).  In lockstep the node advances only on commands, so the replay
repeats it exactly: differences are zero to rounding (bit for bit in practice).  In real time the
commands took effect at the node's ticks, which is also the sim time recorded, so it repeats too.

No rclpy: messages are decoded with mcap_ros2.  Nothing from the file is evaluated: JSON and CDR
only.
"""
from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from mb_sim.session import MAX_ADVANCE_STEPS, Session
from mb_sim.session.commands import CommandError
from mb_sim.session.recorder import EVENTS_TOPIC, FORMAT, RECORDING_TOPIC
from mb_sim.sim import Simulator

__all__ = ["ReplayError", "ReplayReport", "replay"]


class ReplayError(ValueError):
    """A file that is not a recording this version can replay; the message says why."""


@dataclass
class ReplayReport:
    """What a replay found: counts and the largest differences from the recorded states."""

    commands: int = 0
    states: int = 0
    events: int = 0
    rejected: int = 0
    duration: float = 0.0
    position: float = 0.0  # largest |difference| [rad or m]
    velocity: float = 0.0
    effort: float = 0.0
    worst: dict = field(default_factory=dict)  # quantity -> (sim time, joint)

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


def _messages(path: str):
    """(topic, log time [s], decoded message) in file order."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            yield channel.topic, message.log_time * 1e-9, decoded


def replay(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None,
           progress: Callable[[str], None] | None = None) -> ReplayReport:
    """Replay the recording at `path` (see the module docstring)."""
    path = os.fspath(path)
    messages = _messages(path)
    try:
        topic, _, first = next(messages)
        header = json.loads(first.data) if topic == RECORDING_TOPIC else None
        _, _, description = next(messages)
    except StopIteration:
        raise ReplayError(f"{path}: empty, or not an mb_sim recording") from None
    except Exception as err:  # noqa: BLE001 (any corrupt or foreign file)
        raise ReplayError(f"{path}: not a readable MCAP recording ({err})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ReplayError(f"{path}: not an mb_sim recording (its first message is not {RECORDING_TOPIC} "
                          f"with format {FORMAT!r})")
    run = _Replay(header, description.data, cache_dir, progress)
    for topic, time, message in messages:
        run.take(topic, time, message)
    return run.report


def _no_wall_clock() -> float:
    """A replay's wall clock: none.  Commands age by the recording's stale events instead."""
    return 0.0


class _Replay:
    """One replay: a :class:`~mb_sim.session.Session` (the node's own), fed the recording's
    messages in order, and what it found."""

    def __init__(self, header: dict, urdf: str, cache_dir, progress) -> None:
        options = header["simulator"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # repairs and missing limits were reported when the node started
            self.sim = Simulator(urdf, dt=header["physics_dt"], cache_dir=cache_dir, progress=progress, **options)
        state = header["state"]
        for name, enabled in state["enabled"].items():
            self.sim.set_constraint_enabled(name, enabled)
        self.sim.restore(state["q"], state["u"], state["z"], header["time"], initial=state["initial"])
        self.session = Session(self.sim, command_timeout=header["command_timeout"],
                               allow_partial=header["allow_partial_joints_goal"], start_paused=True,
                               clock=_no_wall_clock)
        self.session.router.restore(header["commands"], 0.0)
        self.commands, self.joint_states = header["command_topics"], header["joint_states_topic"]
        self.report = ReplayReport()

    def take(self, topic: str, time: float, message) -> None:
        if topic in self.commands:
            self._advance_to(time)
            try:
                self.session.command(self.commands[topic], message)
                self.report.commands += 1
            except CommandError:
                self.report.rejected += 1
        elif topic == EVENTS_TOPIC:
            self._event(time, json.loads(message.data))
        elif topic == self.joint_states:
            self._advance_to(_stamp(message))
            self._compare(message)

    def _advance_to(self, time: float) -> None:
        steps = round((time - self.sim.time) / self.sim.dt)
        inputs = self.session.current_inputs() if steps > 0 else None
        while steps > 0:  # in units the session bounds
            chunk = min(steps, MAX_ADVANCE_STEPS)
            if not self.session.advance(chunk, inputs):
                raise ReplayError(f"the replay diverged at {self.session.failure}")
            self.report.duration += chunk * self.sim.dt
            steps, inputs = steps - chunk, None

    def _event(self, time: float, event: dict) -> None:
        self.report.events += 1
        kind = event.get("event")
        if kind == "reset":
            self.session.reset()
        elif kind == "constraint":
            self._advance_to(time)
            self.session.set_constraint_enabled(event["name"], bool(event["enabled"]))
        elif kind == "stale":
            self._advance_to(time)
            self.session.router.expire(list(event.get("joints", [])), list(event.get("motors", [])))

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


def _stamp(message) -> float:
    return message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec

