"""Redundant constraints judged where the robot is (issue 22): seed 004's umbrella built as the
seed describes it (stretchers as long as the rib's top half), on its own branch and on the fold
where the runner sits at the hub; a redundant statement that stops holding fails loudly.

References are independent of the simulator: the umbrella's closed-form kinematics (hub, runner
and rib midpoint form an isosceles triangle: runner height 1 - cos(theta)), its energy, and on the
fold each rib with its stretcher as a compound pendulum about the hub, integrated here by SciPy.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mb_sim import load_urdf
from mb_sim.sim import SimulationError, Simulator
from mb_sim.sim.linearize import linearize
from mb_sim.sim.singularity import ConstraintSingularityWarning
from mb_sim.symbolic import analyse_constraints

UMBRELLA = "test/urdf/umbrella_isosceles.urdf"
RIB_PITCH = np.pi / 6  # the ribs' joint origins: pitch 30 degrees, 60 degrees from the downward vertical
GRAVITY = 9.81
#: A rib (0.1 kg, centre 0.5 m out, 0.0084 kg m^2 about it) and its stretcher (0.05 kg, 0.25 m,
#: 0.00105 kg m^2) turning together about the hub, as they do on the fold.
FOLD_INERTIA = 0.0084 + 0.1 * 0.5**2 + 0.00105 + 0.05 * 0.25**2
FOLD_MOMENT = 0.1 * 0.5 + 0.05 * 0.25  # mass times distance of the centre from the hub [kg m]


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


def umbrella(repo, cache_dir) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no effort limits: not what this file tests
        return Simulator(repo / UMBRELLA, cache_dir=cache_dir)


def rib_angle(sim: Simulator, side: str) -> float:
    """A rib's angle from the downward vertical (the joint turns it about y from 30 degrees pitch)."""
    return np.pi / 2 - (RIB_PITCH + sim.outputs(dynamics=False).joint_positions[f"rib_{side}_joint"])


def test_redundancy_is_judged_where_the_umbrella_is_assembled(repo):
    """On the umbrella's own branch its two loops give 4 independent conditions (1 DoF); the
    configurations drawn anywhere fall on the fold (3): that is reported, not taken."""
    constraints = analyse_constraints(load_urdf(repo / UMBRELLA))
    analysis = constraints.analysis
    assert (analysis.open_loop_dof, analysis.kept, analysis.closed_loop_dof) == (5, 4, 1)
    assert constraints.redundant == []
    assert any("4 independent constraints where the robot is assembled, 3 on another branch" in line
               for line in constraints.report), constraints.report


def test_the_umbrella_keeps_both_loops_closed_and_its_shape(repo, cache_dir):
    """Falling under gravity for 1 s: both loops closed, both ribs at one angle, the runner at
    1 - cos(theta) (the isosceles triangle), and the energy kept (no damping, no input).  The ribs
    swing through the fold (theta = 0, the runner at the hub) once, and the simulator says so."""
    sim = umbrella(repo, cache_dir)
    assert sim.degrees_of_freedom() == 1
    start = sim.outputs(dynamics=False)
    energy = start.kinetic_energy + start.potential_energy
    angles = [rib_angle(sim, "left")]
    for _ in range(10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstraintSingularityWarning)  # (judged below)
            sim.advance(0.1)
        out = sim.outputs()
        theta = rib_angle(sim, "left")
        angles.append(theta)
        runner = 0.5 + out.joint_positions["runner_joint"]
        assert out.position_error < 1e-10 and out.velocity_error < 1e-10
        assert rib_angle(sim, "right") == pytest.approx(theta, abs=1e-9)
        assert runner == pytest.approx(1 - np.cos(theta), abs=1e-9)
        assert out.kinetic_energy + out.potential_energy == pytest.approx(energy, abs=1e-6)
    assert abs(theta - np.pi / 3) > 0.3  # it moved
    through_zero = [k for k in range(10) if angles[k] * angles[k + 1] < 0]
    assert len(through_zero) == 1 and len(sim.singularities.crossings) == 1
    crossing = sim.singularities.crossings[0]
    assert through_zero[0] * 0.1 <= crossing.after < crossing.before <= through_zero[0] * 0.1 + 0.1 + 1e-9
    assert crossing.constraints == ["rib_left_pin", "rib_right_pin"]


def test_the_umbrella_on_its_fold_has_two_free_ribs(repo, cache_dir):
    """With the runner at the hub each stretcher lies along its rib and each rib swings on its own
    (2 DoF there): the runner stays at the hub and each rib follows the compound pendulum."""
    sim = umbrella(repo, cache_dir)
    ribs = np.array([0.3, -0.2])  # joint angles; stretchers along their ribs: 60 degrees more
    sim.set_state(q=[0.5, *ribs, *(ribs + np.pi / 3)], u=np.zeros(5))
    assert sim.outputs(dynamics=False).position_error < 1e-12
    assert sim.degrees_of_freedom() == 2
    start = {side: rib_angle(sim, side) for side in ("left", "right")}
    sim.advance(1.0)
    out = sim.outputs()
    assert out.position_error < 1e-10
    assert out.joint_positions["runner_joint"] == pytest.approx(0.5, abs=1e-9)
    rate = FOLD_MOMENT * GRAVITY / FOLD_INERTIA
    for side, theta0 in start.items():
        pendulum = solve_ivp(lambda t, x: [x[1], -rate * np.sin(x[0])], (0.0, 1.0), [theta0, 0.0],
                             method="DOP853", rtol=1e-12, atol=1e-12)
        assert rib_angle(sim, side) == pytest.approx(pendulum.y[0, -1], abs=1e-7), side


@pytest.mark.parametrize("integrator", ["rk4", "DOP853"])
def test_a_parallelogram_runs_through_its_change_points_on_its_branch(repo, cache_dir, integrator):
    """Without gravity a parallelogram four-bar's crank turns at a constant rate (its inertia does
    not change on the parallelogram branch): 3 rad/s for 5 s passes five change points (the crank
    level, at (k + 1/2) pi), where its two loop conditions become one, and stays a parallelogram
    (coupler angle = -crank angle).  The simulator says so: one warning, and each change point
    within one crossing's window (mb_sim.sim.singularity)."""
    sim = Simulator(repo / "test/urdf/four_bar_parallelogram.urdf", cache_dir=cache_dir, integrator=integrator)
    sim.set_parameters({"gravity_g": 0.0})
    sim.set_state({}, {"crank_joint": 3.0})
    with pytest.warns(ConstraintSingularityWarning, match="constraint 'rocker_pin'"):
        for _ in range(50):
            sim.advance(0.1)
            crank, coupler, rocker = sim.q
            assert coupler == pytest.approx(-crank, abs=1e-9) and rocker == pytest.approx(crank, abs=1e-9)
    windows = [(3 * c.after, 3 * c.before) for c in sim.singularities.crossings]  # crank angles [rad]
    assert len(windows) == 5
    assert all(low <= (k + 0.5) * np.pi <= high for k, (low, high) in enumerate(windows)), windows
    assert sim.q[0] == pytest.approx(15.0, abs=2e-3)
    assert sim.outputs().position_error < 1e-12


def test_a_redundant_statement_that_stops_holding_fails_loudly(repo, cache_dir):
    """Two coordinate constraints say the same thing; once their offsets differ, the one left to
    the other cannot hold: its residual is reported and the next step stops naming it (before,
    it was masked and let go with position_error 0)."""
    sim = Simulator(repo / "test/urdf/coupled_twice.urdf", cache_dir=cache_dir)
    assert sim.degrees_of_freedom() == 1
    sim.advance(0.2)
    sim.set_parameters({"gear_offset": 0.15})
    assert sim.outputs(dynamics=False).position_error == pytest.approx(0.1, abs=1e-12)
    before = sim.q
    with pytest.raises(SimulationError, match="coordinate constraint 'gear'.* cannot be held"):
        sim.advance(0.1)
    assert np.array_equal(sim.q, before)


def test_linearization_leaves_a_redundant_row_out_where_it_is_linearized(repo, cache_dir):
    """The double link's redundant row is enforced in the simulator; the linearization keeps the
    independent rows at its operating point: one coordinate and one speed, a pendulum's A."""
    sim = Simulator(repo / "test/urdf/loop_double_link.urdf", cache_dir=cache_dir)
    result = linearize(sim, positions={"pin_a": 0.0})
    # Both links (1 kg, 1 m) turn about A as one body: I = 2 (0.0834 + 0.25), m d = 2 x 0.5; at
    # pin_a = 0 they point 0.5 rad above the horizontal: V = -m d g sin(q - 0.5).
    stiffness = -(2 * 0.5) * GRAVITY * np.sin(0.5) / (2 * (0.0834 + 0.25))
    assert result.independent_coordinates == ["pin_a_q"]
    assert result.A == pytest.approx(np.array([[0.0, 1.0], [-stiffness, 0.0]]), abs=1e-9)
