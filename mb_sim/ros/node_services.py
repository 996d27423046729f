"""The ``mb_sim`` node's own services: ``~/reset``, ``~/pause``, ``~/step``, ``~/record`` and
``~/constraints/<name>/enable``; each calls the session's public API and answers in one line
(logged: INFO on success, WARN on refusal)."""
from __future__ import annotations

import datetime
from collections.abc import Callable

from std_srvs.srv import SetBool, Trigger

from mb_sim.ros.recording import NodeRecording
from mb_sim.session import Session, SessionError
from mb_sim.session.recorder import RecordingError
from mb_sim.sim import SimulationError

__all__ = ["NodeServices"]


class NodeServices:
    """The services of `node` over `session`; `publish` publishes the state reached, `advance`
    advances one publish period in lockstep (returning whether it did), `constraint_services`
    maps each named constraint to its service name."""

    def __init__(self, node, session: Session, publish: Callable[[], None], recording: NodeRecording,
                 constraint_services: dict[str, str], period_steps: int, lockstep: bool) -> None:
        self._node, self._session, self._publish, self._recording = node, session, publish, recording
        self._constraint_services, self._period_steps, self._lockstep = constraint_services, period_steps, lockstep
        node.create_service(Trigger, "~/reset", self._on_reset)
        node.create_service(SetBool, "~/pause", self._on_pause)
        node.create_service(Trigger, "~/step", self._on_step)
        node.create_service(SetBool, "~/record", self._on_record)
        for constraint, service in constraint_services.items():
            node.create_service(SetBool, service,
                                lambda request, response, name=constraint: self._on_constraint(name, request, response))

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        recovered = self._session.reset()
        self._publish()
        response.success = True
        response.message = "back to the initial state at sim time 0" + (" (recovered from divergence)"
                                                                       if recovered else "")
        self._node.get_logger().info(f"~/reset: {response.message}")
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        try:
            if request.data:
                self._session.pause()
                message = f"paused at sim time {self._session.sim.time:.6g} s"
            else:
                self._session.resume()
                message = f"running from sim time {self._session.sim.time:.6g} s"
        except SessionError as err:
            response.success, response.message = False, str(err)
        else:
            response.success, response.message = True, message
        _log_outcome(self._node.get_logger(), response.success, f"~/pause: {response.message}")
        return response

    def _on_step(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        session, steps = self._session, self._period_steps
        try:
            if self._lockstep and session.running:  # in lockstep ~/step advances without a pause
                stepped = session.advance(steps, session.current_inputs())
            else:
                stepped = session.step(steps)
        except SessionError as err:
            response.success, response.message = False, str(err)
            return response
        if stepped:
            self._publish()
            response.success = True
            response.message = f"stepped {steps * session.sim.dt:g} s to sim time {session.sim.time:.6g} s"
        else:
            response.success, response.message = False, f"the simulation diverged ({session.failure})"
        return response

    def _on_constraint(self, name: str, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        """Enable (data: true) or disable constraint `name`; enabling projects the state onto it."""
        try:
            self._session.set_constraint_enabled(name, bool(request.data))
        except (ValueError, SimulationError) as err:
            response.success, response.message = False, str(err)
        else:
            state = "enabled" if request.data else "disabled"
            response.success = True
            response.message = f"constraint '{name}' {state} at sim time {self._session.sim.time:.6g} s"
            if request.data:
                self._publish()  # the projection may have moved the state
        _log_outcome(self._node.get_logger(), response.success,
                     f"{self._constraint_services[name]}: {response.message}")
        return response

    def _on_record(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        """Start (data: true; to record_file, else a time-stamped file in the working directory) or
        stop recording.  Starting while recording is refused and leaves the recording alone; a
        file is never overwritten: a name taken gets a suffix (run.mcap, run_2.mcap...), which the
        response names."""
        session, time = self._session, self._session.sim.time
        if request.data and session.recording is not None:
            response.success, response.message = False, f"already recording to {session.recording}"
        elif request.data:
            path = self._recording.record_file or f"mb_sim_{datetime.datetime.now():%Y%m%d_%H%M%S}.mcap"
            try:
                self._recording.start(path)
            except RecordingError as err:
                response.success, response.message = False, str(err)
            else:
                response.success = True
                response.message = f"recording to {session.recording} from sim time {time:.6g} s"
        elif session.recording is None:
            response.success, response.message = False, "not recording"
        else:
            try:
                path = session.stop_recording()
            except RecordingError as err:
                response.success, response.message = False, str(err)
            else:
                response.success = True
                response.message = f"recording {path} closed at sim time {time:.6g} s"
        _log_outcome(self._node.get_logger(), response.success, f"~/record: {response.message}")
        return response


def _log_outcome(logger, success: bool, message: str) -> None:
    """`message` at INFO when `success`, else WARN.  Two call sites on purpose: rclpy refuses one call
    site that logs with two severities ("Logger severity cannot be changed between calls")."""
    if success:
        logger.info(message)
    else:
        logger.warning(message)
