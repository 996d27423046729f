"""One simulation run, without rclpy: the :class:`Session` owns the
:class:`~mb_sim.sim.Simulator`, the commands it holds (:class:`~mb_sim.session.command_router.CommandRouter`),
whether it is paused or has diverged, the clock commands age by and the recording.

The ROS 2 node, its simulation_interfaces server and the tests all drive a run through the same
small public API (:meth:`Session.pause`, :meth:`~Session.resume`, :meth:`~Session.reset`,
:meth:`~Session.step`, :meth:`~Session.advance`); what they must react to (the run stopped or
started, it diverged, commands went stale) reaches them as events of :meth:`Session.subscribe`.

Times: ``now`` is wall time from a monotonic clock (``clock``, :func:`time.monotonic` by default),
sim time is :attr:`Session.time`.  The command clock is wall time that stands still while the run
is not running (paused or diverged), so a pause never times a command out.

Example (the ``pendulum`` shipped in ``urdf/``)::

    >>> from mb_sim.resources import robot_path
    >>> session = Session(Simulator(robot_path("pendulum"), dt=1e-3), start_paused=True)
    >>> session.step(10)      # ten physics steps under the commands held
    True
    >>> session.reset()       # back to sim time 0; it had not diverged
    False
"""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from mb_sim.session.command_router import CommandRouter
from mb_sim.session.recorder import Recorder, RecordingError
from mb_sim.sim import SimulationError, Simulator
from mb_sim.sim.carry import carry_state

__all__ = ["Session", "SessionError", "Listener", "EVENTS", "MAX_ADVANCE_STEPS"]

#: Most physics steps one call advances: the unit of work a caller (a timer tick, a service)
#: holds its thread for is bounded whatever the parameters; more is done call after call.
MAX_ADVANCE_STEPS = 100_000

#: What :meth:`Session.subscribe` listeners hear: ``event`` and its details.
#: ``stopped`` (paused, or diverged: details ``reason``), ``started`` (resumed), ``reset``
#: (details ``recovered``: it had diverged), ``diverged`` (details ``reason``), ``stale`` (details
#: ``joints`` and ``motors`` whose commands timed out), ``recording_failed`` (the recording could
#: not be written and is over: details ``reason``, naming the file), ``singularity`` (the motion
#: passed a constraint singularity, said once until the state is next set: details ``message``).
EVENTS = ("stopped", "started", "reset", "diverged", "stale", "recording_failed", "singularity")

Listener = Callable[..., None]


class SessionError(RuntimeError):
    """An operation the session refuses in its current state (the message says why and what to do)."""


class Session:
    """A simulation run: `sim` under the commands of a :class:`CommandRouter` (stale after
    `command_timeout` seconds of the command clock; 0: never), paused from the start when
    `start_paused`."""

    def __init__(self, sim: Simulator, *, command_timeout: float = 0.0, allow_partial: bool = False,
                 start_paused: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self._sim = sim
        self._router = CommandRouter(sim, command_timeout, allow_partial)
        self._clock = clock
        self._paused = start_paused
        self._failure: str | None = None
        self._stopped_since: float | None = clock() if start_paused else None  # not running since (wall)
        self._stopped_total = 0.0  # wall seconds not running before that
        self._recorder: Recorder | None = None
        self._recording_failure: str | None = None
        self._listeners: list[Listener] = []

    # -- what a client may read ------------------------------------------------------------------
    @property
    def sim(self) -> Simulator:
        """The simulator this run advances."""
        return self._sim

    @property
    def router(self) -> CommandRouter:
        """The commands held (their ages, staleness, servo references)."""
        return self._router

    @property
    def paused(self) -> bool:
        """Paused by :meth:`pause` (or ``start_paused``) and not resumed since."""
        return self._paused

    @property
    def failure(self) -> str | None:
        """Why the simulation diverged (None: it has not, or was reset since)."""
        return self._failure

    @property
    def running(self) -> bool:
        """Neither paused nor diverged."""
        return not self._paused and self._failure is None

    @property
    def time(self) -> float:
        """Sim time [s]."""
        return self._sim.time

    @property
    def recording(self) -> str | None:
        """The path of the open recording (None: not recording)."""
        return None if self._recorder is None else self._recorder.path

    @property
    def recording_failure(self) -> str | None:
        """Why the last recording failed (None: it did not, or a recording started since)."""
        return self._recording_failure

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(event, **details)`` on each of :data:`EVENTS`."""
        self._listeners.append(listener)

    def command_time(self, now: float | None = None) -> float:
        """The command clock at wall time `now` (default: the clock's now)."""
        now = self._clock() if now is None else now
        return (now if self._stopped_since is None else self._stopped_since) - self._stopped_total

    def replace_simulator(self, sim: Simulator) -> None:
        """Go on with `sim`, the same robot in another scene (an object spawned or deleted): the
        run is carried over (:func:`~mb_sim.sim.carry.carry_state`), the commands held, the pause
        and the command clock stay.  Refused (:class:`SessionError`) while recording (a
        recording holds one model) and for a robot with other actuated joints or motors."""
        if self._recorder is not None:
            raise SessionError("a recording is running: stop it first (a recording holds one model)")
        old = self._sim
        if sim.actuated_joints != old.actuated_joints or sim.motors != old.motors:
            raise SessionError("the new simulator's actuated joints or motors differ from the running one's")
        carry_state(old, sim)
        self._sim = self._router.sim = sim

    # -- running and stopping --------------------------------------------------------------------
    def pause(self) -> None:
        """Stop advancing (commands stop ageing); a no-op when paused already."""
        was_running = self.running
        self._paused = True
        if was_running:
            self._stopped()

    def resume(self) -> None:
        """Run again; refused (:class:`SessionError`) after a divergence, until :meth:`reset`."""
        if self._failure is not None:
            raise SessionError(f"cannot resume: the simulation diverged ({self._failure}); call ~/reset")
        if self._paused:
            self._paused = False
            self._started()

    def reset(self) -> bool:
        """Back to the initial state at sim time 0, commands cleared, a divergence forgotten;
        whether it recovered from a divergence."""
        self._sim.reset()
        self._router.clear()
        self._record("event", self.time, event="reset")
        recovered, self._failure = self._failure is not None, None
        if recovered and not self._paused:
            self._started()
        self._emit("reset", recovered=recovered)
        return recovered

    def _stopped(self) -> None:
        if self._stopped_since is None:
            self._stopped_since = self._clock()
        self._emit("stopped", reason=self._failure)

    def _started(self) -> None:
        if self._stopped_since is not None:
            self._stopped_total += self._clock() - self._stopped_since
            self._stopped_since = None
        self._emit("started")

    def _emit(self, event: str, **details) -> None:
        for listener in list(self._listeners):
            listener(event, **details)

    # -- advancing ---------------------------------------------------------------------------------
    def current_inputs(self, now: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The efforts (actuated joints) and voltages (motors) the commands held ask for at wall
        time `now`: stale ones zero, announced (event ``stale``, and in the recording) once."""
        inputs, stale_joints, stale_motors = self._router.current(self.command_time(now))
        if stale_joints or stale_motors:
            self._record("event", self.time, event="stale", joints=stale_joints, motors=stale_motors)
            self._emit("stale", joints=stale_joints, motors=stale_motors)
        return inputs

    def advance(self, steps: int, inputs: tuple[np.ndarray, np.ndarray] | None = None) -> bool:
        """Advance `steps` physics steps (whatever the pause: callers pace), under `inputs` when
        given (else those applied last); False on divergence, which stops the run (:attr:`failure`).
        More than :data:`MAX_ADVANCE_STEPS` at once is refused (:class:`SessionError`)."""
        if not 0 <= steps <= MAX_ADVANCE_STEPS:
            raise SessionError(f"{steps} steps: one advance takes 0 to {MAX_ADVANCE_STEPS} physics steps")
        if inputs is not None:
            self._router.apply(inputs)
        said = len(self._sim.singularities.said)
        try:
            self._sim.advance(steps * self._sim.dt)
        except SimulationError as err:
            self._fail(str(err))
            return False
        finally:
            for message in self._sim.singularities.said[said:]:
                self._emit("singularity", message=message)
        return True

    def step(self, steps: int, now: float | None = None) -> bool:
        """While paused: `steps` physics steps under the commands held at `now`; refused
        (:class:`SessionError`) when diverged or running; False on divergence."""
        if self._failure is not None:
            raise SessionError(f"cannot step: the simulation diverged ({self._failure}); call ~/reset")
        if not self._paused:
            raise SessionError("not paused: call ~/pause with data: true first")
        if not 1 <= steps <= MAX_ADVANCE_STEPS:
            raise SessionError(f"{steps} steps: a step takes 1 to {MAX_ADVANCE_STEPS} physics steps")
        return self.advance(steps, self.current_inputs(now))

    def _fail(self, reason: str) -> None:
        was_running = self.running
        self._failure = reason
        self._emit("diverged", reason=reason)
        if was_running:
            self._stopped()

    # -- commands and constraints -----------------------------------------------------------------
    def command(self, topic: str, message, now: float | None = None) -> None:
        """A message on command topic `topic` (a key of COMMAND_TOPICS), applied whole at the
        command clock's `now`; a bad one raises CommandError and changes nothing."""
        self._router.handle(topic, message, self.command_time(now))

    def set_constraint_enabled(self, name: str, enabled: bool) -> None:
        """Enable (projecting the state onto it) or release constraint `name`; ValueError
        (unknown name) or SimulationError (cannot be enabled here) change nothing."""
        self._sim.set_constraint_enabled(name, enabled)
        self._record("event", self.time, event="constraint", name=name, enabled=bool(enabled))

    # -- recording ----------------------------------------------------------------------------------
    def start_recording(self, path: str, settings: dict, urdf: bytes, string: Callable[[str], bytes]) -> None:
        """Record to `path` from the current state (`settings`: what a replay needs beside the
        state, `urdf` and `string` as :class:`Recorder` takes them; a name taken gets a numbered
        suffix: :attr:`recording` is the path written).  Refused (:class:`SessionError`, nothing
        opened, no file touched) while recording; :class:`RecordingError` (also kept as
        :attr:`recording_failure`) when the file cannot be written."""
        if self._recorder is not None:
            raise SessionError(f"already recording to {self._recorder.path}")
        try:
            self._recorder = Recorder(path, {**settings, **self._recording_state()}, urdf, string, self._clock)
        except RecordingError as err:
            self._recording_failure = str(err)
            raise
        self._recording_failure = None

    def _recording_state(self) -> dict:
        """The state a recording starts from: time, q, u, z, constraints, the initial state, commands."""
        sim = self._sim
        q, u, z, t = sim.initial_state
        return {"time": sim.time,
                "state": {"q": sim.q.tolist(), "u": sim.u.tolist(), "z": sim.z.tolist(),
                          "enabled": {name: sim.constraint_enabled(name) for name in sim.constraints},
                          "initial": [q.tolist(), u.tolist(), z.tolist(), t]},
                "commands": self._router.snapshot()}

    def write(self, topic: str, type_name: str, data: bytes) -> None:
        """Message `data` (CDR) on `topic` at the current sim time, when recording."""
        self._record("write", topic, type_name, data, self.time)

    def flush_recording(self) -> None:
        """Flush the recording if messages have waited long enough (call it on a wall-clock timer:
        what was recorded before a quiet spell reaches the file too)."""
        self._record("flush_if_due")

    def stop_recording(self) -> str | None:
        """Close the recording, if any; its path.  RecordingError (also kept as
        :attr:`recording_failure`) when the file cannot be completed; the recording is over."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return None
        try:
            recorder.close()
        except RecordingError as err:
            self._recording_failure = str(err)
            raise
        return recorder.path

    def _record(self, method: str, *args, **fields) -> None:
        """Call the recorder's `method`, if recording; a failure ends the recording (the file
        keeps what was flushed) and is announced (event ``recording_failed``), the run goes on."""
        if self._recorder is None:
            return
        try:
            getattr(self._recorder, method)(*args, **fields)
        except RecordingError as err:
            recorder, self._recorder = self._recorder, None
            recorder.abandon()
            self._recording_failure = str(err)
            self._emit("recording_failed", reason=str(err))
