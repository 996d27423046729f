"""Seed 004's five loop mechanisms, the constraint kinematics solver, and the smaller extension
elements (coordinate constraints, joint springs, gravity, user force laws), each against an
independent reference: the seed's table, closed-form kinematics, analytic solutions, or the same
robot derived without the element."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.model import register_force_law
from mb_sim.sim import SimulationError, Simulator
from mb_sim.symbolic import analyse_constraints

#: Seed 004's table: open-loop DoF, active constraints, closed-loop DoF.
SEED_TABLE = {
    "urdf/four_bar.urdf": (3, 2, 1),
    "test/urdf/loop_three_bar.urdf": (2, 2, 0),
    "test/urdf/loop_spherical.urdf": (6, 5, 1),
    "test/urdf/loop_umbrella.urdf": (5, 4, 1),
    "test/urdf/loop_double_link.urdf": (2, 1, 1),
    # built as the seed describes them: the umbrella's stretchers as long as the rib's top half
    # (its samples anywhere fall on a fold of rank 3), the double link's loop from the ground
    "test/urdf/umbrella_isosceles.urdf": (5, 4, 1),
    "test/urdf/loop_double_link_ground_parent.urdf": (2, 1, 1),
    "test/urdf/four_bar_parallelogram.urdf": (3, 2, 1),
}


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


@pytest.mark.parametrize("path", sorted(SEED_TABLE))
def test_seed_table_from_the_python_api_and_mb_sim_info(repo, path):
    open_loop, active, closed_loop = SEED_TABLE[path]
    analysis = analyse_constraints(load_urdf(repo / path)).analysis
    assert (analysis.open_loop_dof, analysis.kept, analysis.closed_loop_dof) == (open_loop, active, closed_loop)
    result = subprocess.run([sys.executable, "-m", "mb_sim.cli", "info", str(repo / path)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"Degrees of freedom: {closed_loop} ({open_loop} speeds of the open tree - {active} independent " \
           "constraints)" in result.stdout
    assert re.search(rf"^Constraints: {active} of \d+ kept$", result.stdout, re.M), result.stdout


@pytest.mark.parametrize("path", sorted(SEED_TABLE))
def test_seed_mechanisms_move_on_their_constraints(repo, cache_dir, path):
    sim = Simulator(repo / path, cache_dir=cache_dir)
    sim.advance(0.5)
    out = sim.outputs()
    assert out.position_error < 1e-10 and out.velocity_error < 1e-10 and out.acceleration_error < 1e-8


def test_dropped_conditions_are_named_with_the_reason(repo):
    report = "\n".join(analyse_constraints(load_urdf(repo / "test/urdf/loop_double_link.urdf")).report)
    assert "loop joint 'pin_a_again': position along y holds identically" in report
    assert "loop joint 'pin_a_again': position along x) is redundant with the others where the robot is " \
           "assembled; enforced with them" in report


# -- the constraint kinematics solver ----------------------------------------------------------
def four_bar_closed_form(phi1: float) -> tuple[float, float]:
    """Absolute coupler and rocker angles (about +y) of the four-bar's assembly branch, from the
    crank's, by intersecting two circles (ground pins 4 m apart; links 1, 3.5, 3 m)."""
    b = np.array([np.cos(phi1), -np.sin(phi1)])  # (x, z) of B
    d = np.array([4.0, 0.0])
    distance = np.linalg.norm(d - b)
    along = (3.5**2 - 3.0**2 + distance**2) / (2 * distance)
    e = (d - b) / distance
    c = b + along * e + np.sqrt(3.5**2 - along**2) * np.array([-e[1], e[0]])  # the upper branch
    angle = lambda v: -np.arctan2(v[1], v[0])  # noqa: E731 (about +y: direction (cos, -sin))
    return angle(c - b), angle(d - c)


def test_set_state_solves_the_dependent_joints_on_the_same_branch(repo, cache_dir):
    sim = Simulator(repo / "urdf/four_bar.urdf", cache_dir=cache_dir)
    assert sim.independent_joints == ["crank_joint"]
    for q_crank in (0.4, 2.5, -1.9, 6.0):  # far from the start: continuation keeps the branch
        sim.set_state({"crank_joint": q_crank}, {"crank_joint": 1.5})
        q = sim.outputs().joint_positions
        phi1 = -np.pi / 2 + q_crank
        phi2, phi3 = four_bar_closed_form(phi1)
        relative = np.array([phi2 - phi1 - 1.0226484275561756, phi3 - phi2 - 1.7745849023174847])
        solved = np.array([q["coupler_joint"], q["rocker_joint"]])
        assert np.abs(np.angle(np.exp(1j * (solved - relative)))).max() < 1e-10, q_crank
        assert q["crank_joint"] == q_crank  # held exactly
        assert sim.outputs().velocity_error < 1e-12 and sim.u[0] == 1.5


def test_giving_a_dependent_joint_frees_an_independent_one(repo, cache_dir):
    sim = Simulator(repo / "urdf/four_bar.urdf", cache_dir=cache_dir)
    sim.set_state({"rocker_joint": 0.1})
    assert sim.outputs().joint_positions["rocker_joint"] == 0.1 and sim.outputs().position_error < 1e-12
    assert sim.outputs().joint_positions["crank_joint"] != 0.0


def test_infeasible_request_is_refused_with_the_residual_and_keeps_the_state(repo, cache_dir):
    sim = Simulator(repo / "test/urdf/loop_three_bar.urdf", cache_dir=cache_dir)  # a rigid triangle
    before = sim.q
    with pytest.raises(ValueError, match=r"position .* of 'pin_._q' contradicts the constraints"):
        sim.set_state({"pin_a": 0.3, "pin_b": 0.0})
    np.testing.assert_array_equal(sim.q, before)


def test_constraint_errors_per_named_constraint(repo, cache_dir):
    sim = Simulator(repo / "test/urdf/loop_umbrella.urdf", cache_dir=cache_dir)
    sim.set_constraint_enabled("rib_left_pin", False)
    sim.set_efforts({"runner_joint": 2.0})
    sim.advance(0.2)
    errors = sim.constraint_errors()
    assert set(errors) == {"rib_left_pin", "rib_right_pin"}
    right, left = errors["rib_right_pin"], errors["rib_left_pin"]
    assert right.enabled and not left.enabled
    assert right.position.shape == (2,) and np.abs(right.position).max() < 1e-12
    assert np.abs(right.velocity).max() < 1e-12 and np.abs(right.acceleration).max() < 1e-8
    assert np.abs(left.position).max() > 1e-3  # released: the left rib no longer follows


def test_a_disabled_loop_moves_like_the_open_tree(repo, cache_dir):
    """The four-bar with its loop joint disabled against the same URDF without the <mb_sim>
    element (a triple pendulum, derived without any constraint)."""
    text = (repo / "urdf/four_bar.urdf").read_text()
    open_chain = re.sub(r"<mb_sim>.*</mb_sim>", "", text, flags=re.S)
    closed, free = Simulator(text, cache_dir=cache_dir), Simulator(open_chain, cache_dir=cache_dir)
    closed.set_constraint_enabled("rocker_pin", False)
    closed.set_state({"crank_joint": 0.2, "coupler_joint": -0.3}, {"rocker_joint": 1.0})
    free.set_state(q=closed.q, u=closed.u)
    for _ in range(5):
        closed.advance(0.1)
        free.advance(0.1)
    assert np.abs(closed.q - free.q).max() < 1e-12 and np.abs(closed.u - free.u).max() < 1e-12
    assert np.abs(closed.constraint_errors()["rocker_pin"].position).max() > 1e-2
    closed.set_constraint_enabled("rocker_pin", True)
    assert closed.outputs().position_error < 1e-12 and closed.outputs().velocity_error < 1e-12


# -- coordinate constraints, joint springs, gravity --------------------------------------------
DISK = ('<link name="{0}"><inertial><mass value="1"/><inertia ixx="{1}" ixy="0" ixz="0" iyy="{1}" iyz="0" '
        'izz="{2}"/></inertial></link>')


def two_disks(extension: str) -> str:
    """Two disks spinning about their own z axes (inertias 0.2 and 0.05), no gravity."""
    return ('<robot name="disks"><link name="base"/>' + DISK.format("input", 0.15, 0.2) + DISK.format("output", 0.03, 0.05)
            + '<joint name="input_joint" type="continuous"><parent link="base"/><child link="input"/>'
            '<axis xyz="0 0 1"/></joint>'
            '<joint name="output_joint" type="continuous"><parent link="base"/><child link="output"/>'
            '<origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>'
            f'<mb_sim><gravity xyz="0 0 0"/>{extension}</mb_sim></robot>')


def test_a_gear_between_two_joints_reflects_the_inertia(cache_dir):
    """q_out = -3 q_in + 0.1: a torque tau on the input accelerates it by tau / (I_in + 9 I_out)."""
    sim = Simulator(two_disks('<coordinate_constraint name="gear" joint="output_joint" reference="input_joint" '
                              'ratio="-3" offset="0.1"/>'), cache_dir=cache_dir)
    assert sim.independent_joints == ["input_joint"] and sim.constraints == ["gear"]
    sim.set_efforts({"input_joint": 1.3})
    sim.advance(1.0)
    q = sim.outputs().joint_positions
    expected = 0.5 * 1.3 / (0.2 + 9 * 0.05)
    assert q["input_joint"] == pytest.approx(expected, rel=1e-12)
    assert q["output_joint"] == pytest.approx(-3 * expected + 0.1, rel=1e-12)
    generalized = sim.constraint_reactions()["gear"].generalized_forces
    assert generalized["output_joint_u"] == pytest.approx(0.05 * -3 * 1.3 / (0.2 + 9 * 0.05), rel=1e-12)


def test_a_joint_spring_is_a_harmonic_oscillator(cache_dir):
    """k = 2 N m/rad on I = 0.2 kg m^2 about a rest angle 0.3 rad, undamped: the angle is
    0.3 + (q0 - 0.3) cos(sqrt(k/I) t) and the energy (spring included) is kept."""
    sim = Simulator(two_disks('<joint_spring joint="input_joint" stiffness="2" reference="0.3"/>'),
                    cache_dir=cache_dir)
    sim.set_state({"input_joint": 1.0})
    energy = sim.outputs().energy
    assert energy == pytest.approx(0.5 * 2 * 0.7**2, rel=1e-14)
    for _ in range(4):
        sim.advance(0.25)
        expected = 0.3 + 0.7 * np.cos(np.sqrt(2 / 0.2) * sim.time)
        assert sim.outputs().joint_positions["input_joint"] == pytest.approx(expected, abs=1e-9)
    assert sim.outputs().energy == pytest.approx(energy, rel=1e-9)
    sim.set_parameters({"input_joint_spring_damping": 0.5})  # zero in the file, tunable at run time
    sim.advance(1.0)
    assert sim.outputs().energy < 0.9 * energy


def test_gravity_in_another_direction(repo, cache_dir):
    text = (repo / "urdf/free_body.urdf").read_text().replace("</robot>", '<mb_sim><gravity xyz="1.5 0 -2"/>'
                                                                         "</mb_sim></robot>")
    sim = Simulator(text, cache_dir=cache_dir)
    start = sim.outputs().link_poses
    sim.advance(1.0)
    moved = {name: pose[:3, 3] - start[name][:3, 3] for name, pose in sim.outputs().link_poses.items()}
    body = next(name for name in moved if np.abs(moved[name]).max() > 0)
    np.testing.assert_allclose(moved[body], [0.75, 0.0, -1.0], atol=1e-12)  # g t^2 / 2


# -- user force laws ---------------------------------------------------------------------------
def spring_mass_with_law(repo, law: str) -> str:
    return (repo / "urdf/spring_mass.urdf").read_text().replace('reference_length="1"',
                                                                f'reference_length="1" law="{law}"')


def test_a_user_law_equal_to_the_linear_one_gives_the_same_motion(repo, cache_dir):
    """Exudyn's example law k u + d v + F0, registered by name: the same trajectory as the
    built-in linear law, through the C callback and through NumPy."""
    register_force_law("exudyn_example", lambda t, name, u, v, k, d, f0: k * u + d * v + f0)
    linear = Simulator(repo / "urdf/spring_mass.urdf", cache_dir=cache_dir)
    for backend in ("c", "numpy"):
        user = Simulator(spring_mass_with_law(repo, "exudyn_example"), cache_dir=cache_dir, backend=backend)
        reference = Simulator(repo / "urdf/spring_mass.urdf", cache_dir=cache_dir)
        user.advance(0.3)
        reference.advance(0.3)
        np.testing.assert_allclose(user.q, reference.q, rtol=1e-13, atol=1e-15)
        assert user.outputs().springs["spring"].force == pytest.approx(reference.outputs().springs["spring"].force,
                                                                       rel=1e-12)
    assert linear.model.force_laws == []


def test_a_nonlinear_user_law_conserves_its_energy(repo, cache_dir):
    """A hardening spring f = 5e4 u^3 (undamped): kinetic energy + 5e4 u^4 / 4 is constant."""
    register_force_law("cubic", lambda t, name, u, v, k, d, f0: 5e4 * u**3)
    sim = Simulator(spring_mass_with_law(repo, "cubic").replace('damping="1"', 'damping="0"'), cache_dir=cache_dir)

    def energy() -> float:
        out = sim.outputs()
        return out.kinetic_energy + 5e4 * (out.springs["spring"].distance - 1.0) ** 4 / 4

    start, lowest = energy(), 0.0
    for _ in range(20):
        sim.advance(0.1)
        lowest = min(lowest, sim.outputs().joint_positions["slide"])
        assert abs(energy() - start) < 1e-9 * start
    assert lowest < -0.09  # it swung through, from 1.05 to below 0.95


def test_force_law_failures_name_the_spring_and_the_law(repo, cache_dir):
    with pytest.raises(ValueError, match=r"spring-damper 'spring': no force law registered as 'nowhere'"):
        Simulator(spring_mass_with_law(repo, "nowhere"), cache_dir=cache_dir)

    def broken(t, name, u, v, k, d, f0):
        if t > 0.05:
            raise ZeroDivisionError("lookup table ends")
        return k * u

    register_force_law("broken", broken)
    sim = Simulator(spring_mass_with_law(repo, "broken"), cache_dir=cache_dir)
    with pytest.raises(SimulationError, match=r"spring-damper 'spring': force law 'broken' failed: "
                                              r"ZeroDivisionError: lookup table ends"):
        sim.advance(0.1)
    assert 0.05 - 1e-3 <= sim.time <= 0.051


def test_a_spring_of_zero_length_stops_the_simulation_naming_it(repo, cache_dir):
    """Marker 1 on the anchor: the spring's direction is undefined."""
    text = (repo / "urdf/spring_mass.urdf").read_text().replace('<origin xyz="1.05 0 0"/>', '<origin xyz="0 0 0"/>')
    sim = Simulator(text, cache_dir=cache_dir)
    with pytest.raises(SimulationError, match=r"t = 0 s: spring-damper 'spring': its length reached zero"):
        sim.advance(0.01)
