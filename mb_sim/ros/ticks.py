"""The ``mb_sim`` node's wall-clock ticks: each advances the session by what real-time pacing says
is due (:mod:`mb_sim.session.pacing`), in chunks bounded in wall time, publishing at publish-period
boundaries; as fast as possible, period after period for a few milliseconds; in lockstep, only
commands advance.  While not running, /clock holds the paused time."""
from __future__ import annotations

import math
import sys
import time

from rclpy.clock import Clock, ClockType

from mb_sim.ros.node_parameters import NodeParameters
from mb_sim.ros.state_publishers import StatePublishers
from mb_sim.session import MAX_ADVANCE_STEPS, Session
from mb_sim.session.pacing import (
    FAST_TICK_BUDGET, FAST_TIMER_PERIOD, MAX_CATCH_UP_PERIODS, RATE_WINDOW, Pacer, RateMonitor, StepCost,
    advance_within, is_lagging, periods_passed, tick_budget,
)

__all__ = ["TickLoop"]

#: Seconds between two warnings about lagging.
WARNING_THROTTLE = 2.0


class TickLoop:
    """The tick timer of `node` (steady time, never /clock, which the node publishes) advancing
    `session` with period `period_steps` physics steps and publishing through `publishers`."""

    def __init__(self, node, session: Session, params: NodeParameters, period_steps: int,
                 publishers: StatePublishers) -> None:
        self._node, self._session, self._params = node, session, params
        self.period_steps, self._publishers = period_steps, publishers
        self.pacer = Pacer(params.dt, period_steps, params.real_time_factor)
        self.monitor = RateMonitor()
        self._last_cap = -math.inf
        self._tick_budget = tick_budget(1.0 / params.publish_rate)  # wall seconds a tick may advance
        self._step_cost = StepCost()
        self._period_left = period_steps  # physics steps to the next publish-period boundary
        self.cut_ticks = 0  # ticks that ran out of their wall budget
        self.merged_periods = 0  # publish periods that ended without a message of their own
        self._timer = node.create_timer(self._period(), self._on_tick, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def lagging(self, now: float) -> tuple[bool, float | None]:
        """Whether the run lags its target factor (or was capped within the rate window), and the
        achieved factor (None while not running)."""
        achieved = self.monitor.factor() if self._session.running else None
        return (self._session.running and is_lagging(self._params.real_time_factor, achieved,
                                                     now - self._last_cap < RATE_WINDOW), achieved)

    def on_session(self, event: str) -> None:
        """After a session event: pacing restarts on a start or reset, the timer is retimed; a pause
        between publish-period boundaries publishes the state it stopped at."""
        now = time.monotonic()
        if event == "stopped":
            self.pacer.stop(now, self._session.time)  # the time owed by ticks that never came: dropped
        if event in ("started", "reset"):  # real time counts from here, even if the next tick is late
            self.pacer.restart(now, self._session.time)
            self.monitor.reset()
            self._last_cap = -math.inf
        if event == "reset":
            self._period_left = self.period_steps  # publish periods count from sim time 0 again
        if event == "stopped" and self._session.paused and self._period_left != self.period_steps:
            self._publishers.publish_state()  # paused between boundaries: the state it stands at
        period = round(self._period() * 1e9)
        if self._timer.timer_period_ns != period:
            self._timer.timer_period_ns = period
            self._timer.reset()  # the next tick one new period from now, not on the old schedule

    def _period(self) -> float:
        """Wall seconds between ticks: a publish period, or FAST_TIMER_PERIOD while running as fast
        as possible (paused, the node only publishes /clock, once per publish period)."""
        fast = self.pacer.as_fast_as_possible and self._session.running and not self._params.lockstep
        return FAST_TIMER_PERIOD if fast else 1.0 / self._params.publish_rate

    def _on_tick(self) -> None:
        now = time.monotonic()
        session, sim = self._session, self._session.sim
        inputs = session.current_inputs(now)
        if not session.running or self._params.lockstep:  # in lockstep only commands advance
            self._publishers.publish_paused_clock(now)
            return
        if self.pacer.as_fast_as_possible:  # period after period, each published, for a few ms
            self._advance_publishing(sys.maxsize, inputs, now + FAST_TICK_BUDGET, each_period=True,
                                     unread=not self._publishers.periods_read())
            self.monitor.add(time.monotonic(), sim.time)
            return
        slipped = self.pacer.slipped
        advance = self.pacer.next_advance(now, sim.time)
        if advance.capped:
            self._last_cap = now
            self._node.get_logger().warning(
                f"the simulation fell more than {MAX_CATCH_UP_PERIODS} publish periods behind real time: "
                f"{self.pacer.slipped - slipped:.3f} s of sim time dropped ({self.pacer.slipped:.3f} s so far)",
                throttle_duration_sec=WARNING_THROTTLE)
        if advance.steps:  # at real time or slower a late tick publishes each period it owes
            done = self._advance_publishing(advance.steps, inputs, now + self._tick_budget,
                                            each_period=self._params.real_time_factor <= 1.0)
            if done is not None and done < advance.steps:
                self._cut_tick(now, done, advance.steps)
        self.monitor.add(now, sim.time)  # lagging is judged (and logged) with /diagnostics

    def _advance_publishing(self, steps: int, inputs, deadline: float, each_period: bool,
                            unread: bool = False) -> int | None:
        """Advance up to `steps` physics steps until wall time `deadline`, in chunks that end at
        publish-period boundaries; publish at each boundary (`each_period`) or once at the end.
        Boundaries passed without a message of their own are counted (``merged_periods``), but
        where nobody reads a period's messages (`unread`): then the chunks ignore the boundaries
        and the state is published once at the end.  The steps done; None on divergence (nothing
        published then: the session reports it)."""
        done, pending = 0, 0
        while done < steps:
            n = steps - done if unread else min(self._period_left, steps - done)
            applied, inputs = inputs, None  # commands only change between ticks: applied once
            got, ok = advance_within(lambda k: self._session.advance(k, applied), n, deadline, self._step_cost,
                                     MAX_ADVANCE_STEPS, at_least_one=done == 0)  # each tick makes progress
            if not ok:
                return None
            passed, self._period_left = periods_passed(self._period_left, got, self.period_steps)
            done, pending = done + got, pending + passed
            if passed and each_period and not unread:
                self._publishers.publish_state()
                pending = 0
            if got < n:  # out of wall time
                break
        if pending:  # faster than real time or unread: the state reached, once
            if not unread:
                self.merged_periods += pending - 1
            self._publishers.publish_state()
        return done

    def _cut_tick(self, now: float, done: int, due: int) -> None:
        """A tick ran out of its wall budget: the steps left stay due (lag), counted and warned."""
        self.cut_ticks += 1
        self._last_cap = now  # lagging: WARN in /diagnostics
        self._node.get_logger().warning(
            f"a tick used its {self._tick_budget * 1e3:.3g} ms of wall time after {done} of the {due} physics steps "
            f"due: the simulation lags real time ({self.cut_ticks} ticks cut so far)",
            throttle_duration_sec=WARNING_THROTTLE)

    def locked_step(self) -> None:
        """In lockstep: a command arrived, so advance one publish period (unless not running) and
        publish the state reached."""
        session = self._session
        if self._params.lockstep and session.running and session.advance(self.period_steps,
                                                                         session.current_inputs()):
            self._publishers.publish_state()

