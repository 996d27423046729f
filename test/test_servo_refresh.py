"""The servo table is rewritten only when its rows change (mb_sim/sim/servos.py ``refresh``): after
every kind of change (a segment begun within a period, time going back, gains set or assigned,
the feed-forward switched, a release, a new command) the table a refresh leaves is, bit for bit,
the one a forced full rewrite gives, and the next begin it returns is the scan's.  Real arm6,
real generated C."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mb_sim.codegen.servo import SERVO_WIDTH
from mb_sim.sim import Simulator
from mb_sim.sim.trajectory import Waypoint, joint_segments

ARM6 = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]


@pytest.fixture(scope="module")
def sim(repo, model_cache) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # effort limits missing from the test URDF
        return Simulator(repo / "urdf" / "arm6.urdf", cache_dir=model_cache)


def rows(sim: Simulator) -> bytes:
    """The table's row count and rows in force, as bytes (bit-for-bit comparison)."""
    table = sim.model.buffers.servo
    return table[:1 + int(table[0]) * SERVO_WIDTH].tobytes()


def rewritten(sim: Simulator, time: float) -> bytes:
    """The rows a full rewrite at `time` gives: set_gains (public, same gains) forces one."""
    joint = sim.servos.joints[0]
    sim.servos.set_gains(joint, *sim.servos.gains[joint])
    sim.servos.refresh(time)
    return rows(sim)


def next_begin(sim: Simulator, time: float) -> float:
    """The earliest segment begin after `time` over all plans, by a scan."""
    later = [s.begin for j in sim.servos.joints for s in sim.servos.plan(j) if s.begin > time + 1e-12]
    return min(later, default=math.inf)


def check(sim: Simulator, time: float) -> None:
    upcoming = sim.servos.refresh(time)
    cached = rows(sim)
    assert upcoming == next_begin(sim, time)
    assert cached == rewritten(sim, time)


def test_a_refresh_leaves_the_rows_a_full_rewrite_gives_after_every_kind_of_change(sim):
    sim.reset()
    for joint in ARM6:
        sim.servos.hold_position(joint, 0.1)
    check(sim, sim.time)
    sim.advance(0.01)
    check(sim, sim.time)
    # a trajectory whose segments begin inside publish periods (every 7 ms), another joint holding
    waypoints = [Waypoint(sim.time + 0.007 * (k + 1), 0.2 * math.sin(k)) for k in range(12)]
    sim.servos.follow("elbow_joint", joint_segments(sim.time, 0.1, 0.0, waypoints))
    times = []
    for _ in range(12):
        sim.advance(0.01)
        times.append(sim.time)
        check(sim, sim.time)
    for time in [*np.linspace(0.0, times[-1] + 0.05, 97), times[3], 0.0, times[-1]]:  # back and forth
        check(sim, float(time))
    sim.servos.gains["wrist_1_joint"] = (12.5, 0.5)  # assigned, not through set_gains
    before = rows(sim)
    check(sim, sim.time)
    assert rows(sim) != before
    sim.servos.feed_forward = not sim.servos.feed_forward
    before = rows(sim)
    check(sim, sim.time)
    assert rows(sim) != before
    sim.servos.release("shoulder_pan_joint")
    check(sim, sim.time)
    sim.servos.hold_velocity("shoulder_pan_joint", 0.3, sim.time)
    check(sim, sim.time)
    sim.servos.clear()
    check(sim, sim.time)
    assert sim.model.buffers.servo[0] == 0
