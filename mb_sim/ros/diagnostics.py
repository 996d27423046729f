"""The ``mb_sim`` node's ``/diagnostics`` (about 1 Hz): one status ``<node>: <robot>`` with the run's
state, pace, constraint errors and switches, springs, motors, joints beyond their limits, command
age, backend and recording; WARN while lagging, beyond a limit or with stale commands, ERROR after a
divergence or a failed recording, OK otherwise."""
from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType

from mb_sim.codegen import FactorizationError
from mb_sim.ros.motors import motor_diagnostics
from mb_sim.ros.node_parameters import NodeParameters
from mb_sim.ros.robot_source import BACKEND
from mb_sim.ros.ticks import TickLoop
from mb_sim.session import Session
from mb_sim.session.pacing import lag_warning

__all__ = ["DIAGNOSTICS_PERIOD", "Diagnostics"]

#: Period of /diagnostics [s].
DIAGNOSTICS_PERIOD = 1.0
#: Seconds between two warnings about lagging.
WARNING_THROTTLE = 2.0


class Diagnostics:
    """Publishes `session`'s status on /diagnostics from `node`'s steady timer; `ticks` tell the pace,
    `loop_wrenches` the loop joints whose position errors are listed."""

    def __init__(self, node, session: Session, params: NodeParameters, ticks: TickLoop, loop_wrenches: list,
                 prismatic_motors: set[str]) -> None:
        self._node, self._session, self._params, self._ticks = node, session, params, ticks
        self._loops, self._prismatic_motors = [w.constraint for w in loop_wrenches], prismatic_motors
        self._publisher = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._timer = node.create_timer(DIAGNOSTICS_PERIOD, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def publish(self) -> None:
        """One status message (and the recording flushed: what a quiet spell left in memory)."""
        now = time.monotonic()
        session, sim, params = self._session, self._session.sim, self._params
        session.flush_recording()
        lagging, achieved = self._ticks.lagging(now)
        if lagging:
            self._node.get_logger().warning(lag_warning(params.real_time_factor, achieved),
                                            throttle_duration_sec=WARNING_THROTTLE)
        values = self._pace(achieved)
        try:
            out = sim.outputs()
            values |= {"constraint position error": f"{out.position_error:.3g}",
                       "constraint velocity error": f"{out.velocity_error:.3g}",
                       "total energy [J]": f"{out.energy:.9g}"}
        except FactorizationError as err:
            out = sim.outputs(dynamics=False)
            values["outputs"] = f"unavailable: {err}"
        values |= {f"constraint {name}": "enabled" if sim.constraint_enabled(name) else "disabled"
                   for name in sim.constraints}
        if self._loops:  # enabled or not: a released loop shows how far it has come apart
            errors = sim.constraint_errors()
            values |= {f"constraint {name} position error": f"{_largest(errors[name].position):.3g}"
                       for name in self._loops}
        for name, spring in out.springs.items():
            values[f"spring {name} force [N]"] = f"{spring.force:.9g}"
            values[f"spring {name} length [m]"] = f"{spring.distance:.9g}"
        values |= motor_diagnostics(out.motors, self._prismatic_motors)
        beyond = sim.beyond_limits()  # what the stops did not hold: never reported OK
        values |= {f"joint {name} beyond its limit [rad or m]": f"{excess:.3g}" for name, excess in beyond.items()}
        command_now = session.command_time(now)
        router = session.router
        ages = [age for age in (router.efforts.age(command_now), router.voltages.age(command_now)) if age is not None]
        values["command age [s]"] = f"{min(ages):.3f}" if ages else "no command yet"
        values["backend"] = f"{BACKEND} ({type(sim.model).__name__}, rk4)"
        values["recording"] = session.recording or (
            f"failed: {session.recording_failure}" if session.recording_failure else "off")
        level, message = self._level(values, beyond, lagging)
        name = f"{self._node.get_fully_qualified_name().lstrip('/')}: {sim.robot.name}"
        status = DiagnosticStatus(level=level, name=name, message=message, hardware_id=sim.robot.name,
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        array = DiagnosticArray(status=[status])
        array.header.stamp = self._node.get_clock().now().to_msg()
        self._publisher.publish(array)

    def _pace(self, achieved: float | None) -> dict[str, str]:
        """State, sim time and the pace figures."""
        session, params, ticks = self._session, self._params, self._ticks
        return {
            "state": "diverged" if session.failure else "paused" if session.paused else "running",
            "sim time [s]": f"{session.sim.time:.6f}",
            "target real-time factor": ("0 (as fast as possible)" if ticks.pacer.as_fast_as_possible
                                        else f"{params.real_time_factor:g}"),
            "achieved real-time factor": "n/a" if achieved is None else f"{achieved:.3f}",
            "sim time dropped to keep up [s]": f"{ticks.pacer.slipped:.3f}",
            "publish periods dropped to keep up": f"{ticks.pacer.slipped * params.publish_rate:.0f}",
            "publish periods merged into the next message": str(ticks.merged_periods),
            "ticks cut at their wall budget": str(ticks.cut_ticks),
            "physics dt [s]": f"{params.dt:g}",
            "publish rate [Hz]": f"{params.publish_rate:g}",
        }

    def _level(self, values: dict[str, str], beyond: dict[str, float], lagging: bool) -> tuple[bytes, str]:
        """The status level and message, the worst first."""
        session, router, params = self._session, self._session.router, self._params
        if session.failure is not None:
            return DiagnosticStatus.ERROR, f"diverged at {session.failure}; call ~/reset"
        if session.recording_failure is not None:
            return (DiagnosticStatus.ERROR,
                    f"{session.recording_failure}; not recording (~/record data: true starts a new one)")
        if beyond:
            return DiagnosticStatus.WARN, "beyond the position limit: " + ", ".join(
                f"joint {name} by {abs(excess):.3g} rad or m" for name, excess in beyond.items())
        if lagging:
            return (DiagnosticStatus.WARN, f"cannot keep up: real-time factor {values['achieved real-time factor']} "
                                           f"of {params.real_time_factor:g}")
        if router.efforts.stale or router.voltages.stale:
            return DiagnosticStatus.WARN, f"commands stale (older than {params.command_timeout:g} s)"
        return DiagnosticStatus.OK, values["state"]


def _largest(values: np.ndarray) -> float:
    """Largest absolute value (0 for none)."""
    return float(np.abs(values).max()) if len(values) else 0.0
