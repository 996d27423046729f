"""Real-time pacing: how far each tick of the node's wall-clock timer advances the physics.

Pure Python (no rclpy), so the logic is unit-tested without ROS.  Times are seconds: ``wall``
from a monotonic clock, ``sim`` the simulation time.

With a real-time factor ``r > 0`` the simulation keeps ``sim - sim0 = r (wall - wall0)``, measured
from the last (re)start, resume or reset; each tick advances by the whole physics steps that are
due, in one call.  A tick never advances more than ``MAX_CATCH_UP_PERIODS`` publish periods
(times the factor when it exceeds 1), so a simulation that cannot keep up stays responsive: the
deficit beyond the cap is dropped (the reference point moves; the dropped time is counted in
``Pacer.slipped``) and reported, never silently.  With ``r = 0`` (as fast as possible) a tick
advances publish period after publish period, publishing each, until it has used
``FAST_TICK_BUDGET`` of wall time, then returns to the executor (commands, services) and the
next tick follows at once; while nobody reads what a period publishes, the periods are advanced
in long calls and the state is published once at the end of the tick.

Whatever the parameters, a tick's work is bounded in wall time, not only in steps:
:func:`advance_within` advances in chunks sized by the measured cost of a step (:class:`StepCost`)
and stops at a deadline (:func:`tick_budget` of the tick's period); the steps not done stay due.
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Pacer", "Advance", "RateMonitor", "StepCost", "advance_within", "tick_budget",
           "steps_per_period", "is_lagging", "lag_warning", "TICK_WALL_BUDGET", "TICK_BUDGET_FRACTION", "MIN_TICK_BUDGET",
           "MAX_CATCH_UP_PERIODS", "FAST_TIMER_PERIOD", "FAST_TICK_BUDGET", "LAG_THRESHOLD", "RATE_WINDOW",
           "STEP_SLICE_BUDGET", "periods_passed"]

#: At most this many publish periods of simulation per tick.
MAX_CATCH_UP_PERIODS = 5
#: Timer period [s] with ``real_time_factor: 0`` (as fast as possible) while running: short, so
#: the next tick follows the last at once (a timer overdue by several periods waits for the next).
FAST_TIMER_PERIOD = 1e-4
#: Wall time [s] one tick may spend advancing as fast as possible before it serves callbacks:
#: one turn of rclpy's executor over a node's entities (a quadruped's: about 100 services,
#: subscriptions, timers and publisher events) costs about a millisecond, 5 % of this; commands
#: and service calls wait at most this long.
FAST_TICK_BUDGET = 0.02
#: Wall time [s] of one slice of a StepSimulation call or SimulateSteps goal (feedback, cancel).
STEP_SLICE_BUDGET = 0.005
#: Most wall time [s] one real-time tick spends advancing, whatever the parameters: the steps
#: still due then stay due (the simulation lags; the catch-up cap drops what it cannot recover).
TICK_WALL_BUDGET = 0.05
#: ... and at most this fraction of the tick's period, so the timer keeps its rate, but never
#: less than MIN_TICK_BUDGET (the Python around a tick takes tens of microseconds).
TICK_BUDGET_FRACTION = 0.5
MIN_TICK_BUDGET = 0.002
#: The simulation is lagging when the achieved factor is below this fraction of the target.
LAG_THRESHOLD = 0.9
#: Window [s] over which the achieved real-time factor is measured.
RATE_WINDOW = 1.0
# Rounding slack when converting times into whole physics steps.
_SLACK = 1e-6


def steps_per_period(dt: float, publish_rate: float) -> int:
    """Physics steps in one publish period (1 / `publish_rate`), rounded, at least one."""
    return max(1, round(1.0 / (publish_rate * dt)))


@dataclass(frozen=True)
class Advance:
    """What one tick does: advance `steps` physics steps; `capped` when the catch-up cap cut it."""

    steps: int
    capped: bool = False


class Pacer:
    """Decides, per tick, how many physics steps keep simulation time on real time."""

    def __init__(self, dt: float, period_steps: int, real_time_factor: float,
                 max_catch_up_periods: int = MAX_CATCH_UP_PERIODS) -> None:
        if not dt > 0 or period_steps < 1 or real_time_factor < 0 or max_catch_up_periods < 1:
            raise ValueError("Pacer needs dt > 0, period_steps >= 1, real_time_factor >= 0, max_catch_up_periods >= 1")
        self.dt, self.period_steps, self.real_time_factor = dt, period_steps, real_time_factor
        # A tick advances about period_steps x real_time_factor steps; it catches up at most
        # max_catch_up_periods of those.
        self.max_steps = max_catch_up_periods * max(period_steps, math.ceil(period_steps * real_time_factor))
        self.slipped = 0.0
        self._reference: tuple[float, float] | None = None

    @property
    def as_fast_as_possible(self) -> bool:
        """True for ``real_time_factor == 0``."""
        return self.real_time_factor == 0

    def restart(self, wall: float, sim: float) -> None:
        """Measure real time from here (start, resume, reset)."""
        self._reference = (wall, sim)

    def stop(self, wall: float | None = None, sim: float | None = None) -> None:
        """Forget the reference point; the next tick restarts from its own time.  Stopped at wall
        time `wall` with the simulation at `sim` (a pause), the time owed beyond one publish period
        (ticks that never came: the process was starved) is counted as dropped, not lost."""
        if wall is not None and sim is not None and self._reference is not None and not self.as_fast_as_possible:
            owed = self._due(wall, sim) - self.period_steps
            if owed > 0:
                self.slipped += owed * self.dt
        self._reference = None

    def _due(self, wall: float, sim: float) -> int:
        """Whole physics steps due at wall time `wall` with the simulation at `sim`."""
        wall0, sim0 = self._reference
        return math.floor((sim0 + (wall - wall0) * self.real_time_factor - sim) / self.dt + _SLACK)

    def next_advance(self, wall: float, sim: float) -> Advance:
        """The steps due at wall time `wall` with the simulation at `sim`."""
        if self.as_fast_as_possible:
            return Advance(self.period_steps)
        if self._reference is None:
            self.restart(wall, sim)
            return Advance(0)
        due = self._due(wall, sim)
        if due <= 0:
            return Advance(0)
        if due > self.max_steps:
            self.slipped += (due - self.max_steps) * self.dt
            wall0, sim0 = self._reference  # the part of a step not yet due stays owed: only whole
            self._reference = (wall, sim0 + (wall - wall0) * self.real_time_factor - (due - self.max_steps) * self.dt)
            return Advance(self.max_steps, capped=True)
        return Advance(due)


class RateMonitor:
    """Achieved real-time factor (simulated seconds per wall second) over a sliding window."""

    def __init__(self, window: float = RATE_WINDOW) -> None:
        self.window = window
        self._samples: deque[tuple[float, float]] = deque()

    def reset(self) -> None:
        """Forget all samples (after a pause, a reset or a step: simulation time jumped)."""
        self._samples.clear()

    def add(self, wall: float, sim: float) -> None:
        """Record that the simulation was at `sim` at wall time `wall`."""
        self._samples.append((wall, sim))
        # Keep one sample at or before the window's start so the span covers the whole window.
        while len(self._samples) > 2 and self._samples[1][0] <= wall - self.window:
            self._samples.popleft()

    def factor(self) -> float | None:
        """Simulated over wall time across the window; None until half a window is covered."""
        if len(self._samples) < 2:
            return None
        (wall0, sim0), (wall1, sim1) = self._samples[0], self._samples[-1]
        span = wall1 - wall0
        if span < 0.5 * self.window:
            return None
        return (sim1 - sim0) / span


def is_lagging(target: float, achieved: float | None, capped_recently: bool) -> bool:
    """Whether the simulation falls behind: the cap was hit, or the achieved factor is below
    ``LAG_THRESHOLD`` of a positive target."""
    if target <= 0:
        return False
    if capped_recently:
        return True
    return achieved is not None and achieved < LAG_THRESHOLD * target


def lag_warning(target: float, achieved: float | None) -> str:
    """The warning for a simulation :func:`is_lagging` judges behind `target`.  `achieved` is None
    within half a window of a reset or resume (too little measured), when only the catch-up cap
    says so: the text then says that rather than formatting a factor it does not have."""
    if achieved is None:
        return (f"the simulation cannot keep up: it fell more than {MAX_CATCH_UP_PERIODS} publish periods behind "
                f"real time since it last started (target real-time factor {target:g}; achieved not measured yet)")
    if achieved >= 0.99 * target:  # judged by a recent cap or cut tick, not by the rate
        return (f"the simulation fell behind real time for a moment (a tick ran out of its wall time or "
                f"publish periods were dropped); achieved real-time factor {achieved:.2f} over the last "
                f"{RATE_WINDOW:g} s (target {target:g})")
    return (f"the simulation cannot keep up: achieved real-time factor {achieved:.2f} over the last "
            f"{RATE_WINDOW:g} s (target {target:g})")


def tick_budget(period: float) -> float:
    """Wall seconds a tick of `period` seconds may spend advancing (:data:`TICK_WALL_BUDGET`,
    :data:`TICK_BUDGET_FRACTION`)."""
    return min(TICK_WALL_BUDGET, max(TICK_BUDGET_FRACTION * period, MIN_TICK_BUDGET))


class StepCost:
    """Running estimate of the wall seconds one physics step takes, from chunks measured: sizes
    the next chunk so one call of the (uninterruptible) compiled integrator ends near a deadline."""

    #: The first chunk, before anything is measured; later chunks grow at most this many times.
    FIRST_CHUNK = 16
    GROWTH = 8

    def __init__(self) -> None:
        self.seconds: float | None = None
        self._last_chunk = 0

    def chunk(self, wall_left: float, most: int) -> int:
        """Steps to advance next with `wall_left` seconds to go: at least one, at most `most`."""
        if self.seconds is None or self.seconds <= 0:
            size = self.FIRST_CHUNK
        else:
            size = min(int(wall_left / self.seconds), max(self._last_chunk, 1) * self.GROWTH)
        self._last_chunk = max(1, min(size, most))
        return self._last_chunk

    def measured(self, steps: int, seconds: float) -> None:
        """`steps` steps took `seconds` of wall time."""
        if steps > 0 and seconds >= 0:
            sample = seconds / steps
            self.seconds = sample if self.seconds is None else 0.5 * (self.seconds + sample)


def periods_passed(left: int, steps: int, period: int) -> tuple[int, int]:
    """How many publish-period boundaries `steps` physics steps pass when the next is `left` steps
    away (periods of `period` steps), and how far the one after them then is."""
    if steps < left:
        return 0, left - steps
    beyond = steps - left
    return 1 + beyond // period, period - beyond % period


def advance_within(advance: Callable[[int], bool], steps: int, deadline: float, cost: StepCost,
                   most_per_call: int, clock: Callable[[], float] = time.monotonic,
                   at_least_one: bool = False) -> tuple[int, bool]:
    """Advance `steps` physics steps with ``advance(n)`` in chunks sized by `cost` (at most
    `most_per_call` each), stopping once `clock()` reaches `deadline` (checked before every chunk,
    but the first when `at_least_one`: a caller's progress whatever its own overhead);
    (steps done, False if ``advance`` said the simulation diverged)."""
    done = 0
    while done < steps:
        now = clock()
        if now >= deadline and not (at_least_one and done == 0):
            break
        n = cost.chunk(deadline - now, min(steps - done, most_per_call))
        ok = advance(n)
        cost.measured(n, clock() - now)
        if not ok:
            return done, False
        done += n
    return done, True
