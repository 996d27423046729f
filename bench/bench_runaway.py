"""Benchmark: what the runaway checks cost per ``Simulator.advance`` call.

arm6 at 1 ms, ``advance(0.01)`` (10 RK4 steps, one call of the generated code: the node's tick at
100 Hz), unforced from a moving state so the energy is watched too.  The baseline is one
``model.rk4_into`` call with the bookkeeping ``advance`` had before the checks (duration to steps,
the time kept); then ``advance`` as it is, with the energy judged every ENERGY_CHECK_STEPS steps
(the default), judged at every call, with an effort applied (speeds only) and with both checks
off.  Best of 15 rounds of 3000 calls each, rounds interleaved.

Run: ``.venv/bin/python bench/bench_runaway.py``.  Nothing is asserted (machines are noisy);
target: under 10 % on the default line.
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

from mb_sim.sim import Simulator, runaway

REPO = Path(__file__).resolve().parent.parent
CALLS, ROUNDS = 3000, 15


def baseline(sim: Simulator, duration: float) -> None:
    """advance() without the checks: the steps in one call, the time kept."""
    steps = round(duration / sim.dt)
    if abs(steps * sim.dt - duration) > 1e-9 * max(1.0, duration):
        raise ValueError(duration)
    sim.time = sim.model.rk4_into(sim.dt, steps, sim.time)


def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = Simulator(REPO / "urdf" / "arm6.urdf")
    sim.set_state({"shoulder_lift_joint": -1.0, "elbow_joint": 1.0}, {"shoulder_pan_joint": 0.3})
    start = sim.q, sim.u
    default_every = runaway.ENERGY_CHECK_STEPS
    cases = {
        "baseline (one C call, no checks)": (baseline, default_every, 0.0, True),
        f"advance: energy every {default_every} steps (default)": (Simulator.advance, default_every, 0.0, True),
        "advance: energy at every call": (Simulator.advance, 1, 0.0, True),
        "advance: effort applied (speeds only)": (Simulator.advance, default_every, 1e-3, True),
        "advance: both checks off": (Simulator.advance, default_every, 0.0, False),
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(ROUNDS):
        for name, (advance, every, effort, checks) in cases.items():
            sim.set_state(q=start[0], u=start[1], time=0.0)
            sim.set_efforts({"wrist_3_joint": effort})
            runaway.ENERGY_CHECK_STEPS = every
            watch = sim.runaway
            saved = watch._smallest_squared, watch._blocked
            if not checks:
                watch._smallest_squared, watch._blocked = float("inf"), "off"  # (after set_state's restart)
            began = time.perf_counter()
            for _ in range(CALLS):
                advance(sim, 0.01)
            best[name] = min(best[name], (time.perf_counter() - began) / CALLS)
            watch._smallest_squared, watch._blocked = saved
    runaway.ENERGY_CHECK_STEPS = default_every
    base = best["baseline (one C call, no checks)"]
    for name, seconds in best.items():
        print(f"{name:48s} {seconds * 1e6:6.2f} us per advance(0.01)   {100 * (seconds / base - 1):+5.1f} %")


if __name__ == "__main__":
    main()
