"""Constraint singularities passed along the motion (mb_sim.sim.singularity): where the enforced
constraint rows lose a rank, the simulator says so (ConstraintSingularityWarning, and
``Simulator.singularities.crossings``).

The delta robot (urdf/delta_robot.urdf, a 3-RUU) released from test_delta_robot.py's start
passes three: its constraint matrix's smallest singular value goes through zero near 0.302 s
(test_dae_reference.py found it with an independent DAE), 1.0 s and 1.70 s.  The watch is checked
against a sampling of its own at every step (the sign of det(A_k A_k+1^T), which flips where the
rows' exterior product goes through zero, and the singular values of A), on robots that cross
singularities and on robots that never do while their rows turn around (a crank spun through many
turns, a wheeled base through every heading).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from mb_sim.sim import Simulator
from mb_sim.sim.singularity import ConstraintSingularityWarning
from mb_sim.symbolic.rank import independent_rows

MOTORS = ["motor_1", "motor_2", "motor_3"]
START = dict(zip(MOTORS, (0.4, -0.2, 0.7))), dict(zip(MOTORS, (1.0, -0.5, 0.0)))
#: Efforts that make the delta robot pass a singularity five times in 0.6 s.
FLAILING = {"motor_1": 1.3, "motor_2": -1.7, "motor_3": 0.4}


def simulator(repo, cache, name: str, **options) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (assembly notes)
        return Simulator(repo / "urdf" / f"{name}.urdf", cache_dir=cache, **options)


def rows(sim: Simulator) -> np.ndarray:
    """The constraint rows at the current state (all enabled here)."""
    sim.model.evaluate_into(sim.time)
    return sim.constraint_system().matrix


def step_by_step(sim: Simulator, duration: float) -> tuple[list[float], list[float]]:
    """Advance one step at a time: the times where det(A_k A_k+1^T) < 0 (a flip of the
    orientation of the rows independent at the start, in order) and at each step the rank-th
    singular value of all the rows over the largest (the rank at the start: the diff drive's
    four rows have rank three, the double link's two rank one)."""
    chosen = independent_rows(rows(sim), list(range(len(sim.model.constraint_names))))
    flips, ratios, before = [], [], rows(sim)[chosen]
    for _ in range(round(duration / sim.dt)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstraintSingularityWarning)  # (judged by the callers)
            sim.advance(sim.dt)
        values = np.linalg.svd(rows(sim), compute_uv=False)
        ratios.append(values[len(chosen) - 1] / values[0])
        now = rows(sim)[chosen]
        if np.linalg.det(before @ now.T) < 0:
            flips.append(sim.time)
        before = now
    return flips, ratios


def test_the_delta_robot_s_three_crossings_are_found_where_every_step_flips(repo, model_cache):
    """Each crossing's window holds one of the flips found at every step, and each flip lies in
    one window; there the smallest singular value is below 1 % of the largest (the start's: 6 %).
    One warning names the loop joints whose rows lost the rank."""
    sim = simulator(repo, model_cache, "delta_robot")
    sim.set_state(*START)
    with pytest.warns(ConstraintSingularityWarning, match="constraints 'wrist_2', 'wrist_3'") as said:
        sim.advance(2.0)
    assert len([w for w in said if w.category is ConstraintSingularityWarning]) == 1
    assert said[0].filename == __file__  # the warning points at the caller's advance
    windows = [(c.after, c.before) for c in sim.singularities.crossings]
    sim.reset()
    sim.set_state(*START)
    flips, ratios = step_by_step(sim, 2.0)
    print("windows", windows, "flips", flips)
    assert len(flips) == len(windows) == 3
    for (after, before), flip in zip(windows, flips):
        assert after < flip <= before + 1e-12
        assert before - after <= 0.05
        steps = slice(round(after / sim.dt), round(before / sim.dt))
        assert min(ratios[steps]) < 0.01
    assert windows[0][0] < 0.3017 < windows[0][1]  # the DAE reference's zero


def test_an_adaptive_integrator_is_judged_from_its_dense_output(repo, model_cache):
    """DOP853 in one call of 0.4 s finds the crossing at 0.30 s too, in a window as narrow as the
    fixed-step path's."""
    sim = simulator(repo, model_cache, "delta_robot", integrator="DOP853")
    sim.set_state(*START)
    with pytest.warns(ConstraintSingularityWarning):
        sim.advance(0.4)
    crossing = sim.singularities.crossings[0]
    assert crossing.after < 0.3017 < crossing.before <= crossing.after + 0.02


def test_crossings_are_said_once_until_the_state_is_set(repo, model_cache):
    """Flailing under efforts the delta robot crosses five times in 0.6 s: five crossings, one
    warning; after a reset the next crossing is said again."""
    sim = simulator(repo, model_cache, "delta_robot")
    sim.set_efforts(FLAILING)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        sim.advance(0.6)
        assert len(sim.singularities.crossings) == 5
        sim.reset()
        sim.set_efforts(FLAILING)
        sim.advance(0.3)
    assert len([w for w in said if w.category is ConstraintSingularityWarning]) == 2
    sim.reset()
    sim.set_efforts(FLAILING)
    flips, _ = step_by_step(sim, 0.6)
    assert len(flips) == 5


def test_a_state_set_across_a_singularity_is_no_crossing(repo, model_cache):
    """Samples on both sides of a set_state are not compared: jumping from before the 0.30 s
    singularity to after it is not motion through it."""
    sim = simulator(repo, model_cache, "delta_robot")
    sim.set_state(*START)
    sim.advance(0.295)
    before = sim.q, sim.u
    with pytest.warns(ConstraintSingularityWarning):
        sim.advance(0.015)
    after = sim.q, sim.u
    assert len(sim.singularities.crossings) == 1  # the motion itself crossed
    sim.singularities.crossings.clear()
    sim.set_state(q=before[0], u=before[1])
    sim.advance(0.002)  # sampled before the singularity (every step after a state is set)
    sim.set_state(q=after[0], u=after[1])
    sim.advance(0.005)  # and after it
    assert sim.singularities.crossings == []


@pytest.mark.parametrize("name, drive, duration", [
    ("slider_crank", {"efforts": {"crank_joint": 5.0}}, 3.0),
    ("four_bar", {}, 3.0),
    ("diff_drive", {"voltages": (24.0, 12.0)}, 6.0),
    ("stewart_platform", {}, 1.0),
    ("../test/urdf/loop_double_link_ground_parent", {}, 1.0),  # one of its two rows through zero
])
def test_rows_that_turn_around_are_no_singularity(repo, model_cache, name, drive, duration):
    """Robots whose rows never lose a rank (at every step their rank-th singular value above 1e-3
    of the largest), some turning them around fast, one with a row through zero while another
    keeps the rank: no crossing, no warning."""
    sim = simulator(repo, model_cache, name)
    if "efforts" in drive:
        sim.set_efforts(drive["efforts"])
    if "voltages" in drive:
        sim.set_voltages(dict(zip(sim.motors, drive["voltages"])))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstraintSingularityWarning)
        sim.advance(duration)
    assert sim.singularities.crossings == []
    if name == "slider_crank":  # the crank went round many times
        assert abs(sim.q[sim.joint_indices["crank_joint"][0]]) > 8 * 2 * np.pi  # (9.4 turns)
    if name == "diff_drive":  # through every heading
        assert sim.q[sim.coordinate_names.index("base_joint_theta")] > 2 * np.pi
    sim.reset()
    if "efforts" in drive:
        sim.set_efforts(drive["efforts"])
    if "voltages" in drive:
        sim.set_voltages(dict(zip(sim.motors, drive["voltages"])))
    flips, ratios = step_by_step(sim, min(duration, 1.0))
    assert min(ratios) > 1e-3
    if "double_link" in name:  # the first row goes through zero (the second keeps the rank)
        assert len(flips) == 2
    else:
        assert flips == []


def test_the_session_passes_the_warning_on_as_an_event(repo, model_cache):
    """What the node logs: one ``singularity`` event with the warning's text per crossing said."""
    from mb_sim.session import Session

    sim = simulator(repo, model_cache, "delta_robot")
    sim.set_state(*START)
    heard = []
    session = Session(sim)
    session.subscribe(lambda event, **details: heard.append((event, details)))
    with pytest.warns(ConstraintSingularityWarning):
        for _ in range(20):
            assert session.advance(100)
    said = [details["message"] for event, details in heard if event == "singularity"]
    assert len(sim.singularities.crossings) == 3
    assert said == sim.singularities.said and len(said) == 1
    assert "'wrist_2', 'wrist_3'" in said[0]


def test_watching_starts_at_the_state_set(repo, model_cache):
    """Set 12 ms before the 0.30 s crossing, with the watch sampling every 100 steps from slow
    motion before: the first sample is taken where the state was set and sampling starts again
    at every step, so the crossing is found."""
    sim = simulator(repo, model_cache, "delta_robot")
    sim.set_state(*START)
    sim.advance(0.29)
    q, u = sim.q, sim.u
    sim.singularities.interval = 100  # (as after slow motion)
    sim.set_state(q=q, u=u, time=0.29)
    with pytest.warns(ConstraintSingularityWarning):
        sim.advance(0.03)
    (crossing,) = sim.singularities.crossings[-1:]
    assert 0.29 <= crossing.after < 0.3017 < crossing.before <= 0.32


def test_the_warning_points_at_the_user_s_line_whichever_way_in(repo, model_cache):
    """From ``simulate`` (one frame deeper inside mb_sim than ``advance``) too."""
    sim = simulator(repo, model_cache, "delta_robot")
    sim.set_state(*START)
    with pytest.warns(ConstraintSingularityWarning) as said:
        sim.simulate(0.4, sample_every=100)
    assert said[0].filename == __file__
