"""Enabling and disabling named constraints at run time (Karana's SubGraph enable/disableConstraint).

The independent check: with its mimic constraint disabled, the kinematic zoo must move exactly as
the same URDF derived without the ``<mimic>`` element (a different derivation, no constraint rows
at all); re-enabled, the state is projected back and the constraint holds again.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from mb_sim.codegen import CompiledModel, NumpyModel
from mb_sim.model import LoadGroupBase, build_robot
from mb_sim.model import RevoluteJoint
from mb_sim.sim import Simulator
from mb_sim.symbolic import derive_equations
from mb_sim.urdf import parse_urdf

MIMIC = "finger_joint"


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


@pytest.fixture(scope="module")
def zoo_path(repo):
    return repo / "test" / "urdf" / "kinematic_zoo.urdf"


@pytest.fixture(scope="module")
def zoo_without_mimic(zoo_path) -> str:
    text = zoo_path.read_text()
    stripped, count = re.subn(r"<mimic [^>]*/>", "", text)
    assert count == 1
    return stripped


def start(sim: Simulator) -> None:
    sim.set_state({"shoulder": 0.5, "lift": 0.1, "finger_joint": -0.15},
                  {"shoulder": 1.0, "base_plane_w": 0.3, "finger_joint": -0.5})


def mimic_error(sim: Simulator) -> float:
    """|q_finger - (-0.5 q_shoulder + 0.1)|: the mimic relation of the zoo, measured directly."""
    q = sim.outputs().joint_positions
    return abs(q[MIMIC] - (-0.5 * q["shoulder"] + 0.1))


@pytest.mark.parametrize("integrator", ["rk4", "DOP853"])
def test_disabled_mimic_moves_like_the_robot_derived_without_it(zoo_path, zoo_without_mimic, cache_dir,
                                                                 integrator):
    constrained = Simulator(zoo_path, cache_dir=cache_dir, integrator=integrator)
    free = Simulator(zoo_without_mimic, cache_dir=cache_dir, integrator=integrator)
    assert constrained.constraints == [MIMIC] and free.constraints == []
    assert constrained.coordinate_names == free.coordinate_names
    start(constrained)
    constrained.set_constraint_enabled(MIMIC, False)
    assert not constrained.constraint_enabled(MIMIC)
    free.set_state(q=constrained.q, u=constrained.u)
    free.set_efforts({"shoulder": 3.0})
    constrained.set_efforts({"shoulder": 3.0})  # the finger gets no effort: it must lag its mimic target
    for _ in range(3):  # 0.3 s, before any joint stop is reached (stops are tuned per robot)
        constrained.advance(0.1)
        free.advance(0.1)
    assert np.abs(constrained.q - free.q).max() < 1e-12
    assert np.abs(constrained.u - free.u).max() < 1e-12
    out = constrained.outputs()
    assert mimic_error(constrained) > 1e-2  # it really moved off the relation
    assert out.position_error == 0.0 and out.velocity_error == 0.0  # only enforced constraints count
    assert max(abs(f) for f in out.constraint_forces.values()) == 0.0


def test_reenabling_projects_onto_the_constraint_and_keeps_it(zoo_path, cache_dir):
    sim = Simulator(zoo_path, cache_dir=cache_dir)
    start(sim)
    sim.set_constraint_enabled(MIMIC, False)
    sim.set_efforts({"shoulder": 3.0})
    sim.advance(0.5)
    assert mimic_error(sim) > 1e-2
    before = sim.outputs()
    sim.set_constraint_enabled(MIMIC, True)
    after = sim.outputs()
    assert sim.constraint_enabled(MIMIC)
    assert mimic_error(sim) < 1e-12 and after.velocity_error < 1e-12
    changed = {name for name in sim.coordinate_names if after.positions[name] != before.positions[name]}
    assert changed == {f"{MIMIC}_q"}  # only the dependent coordinate is moved
    always = Simulator(zoo_path, cache_dir=cache_dir)  # never switched, from the projected state
    always.set_state(q=sim.q, u=sim.u)
    always.set_efforts({"shoulder": 3.0})
    worst = 0.0
    for _ in range(30):
        sim.advance(0.01)
        always.advance(0.01)
        worst = max(worst, mimic_error(sim))
    assert worst < 1e-9
    assert np.abs(sim.q - always.q).max() < 1e-12 and np.abs(sim.u - always.u).max() < 1e-12
    assert max(abs(f) for f in sim.outputs().constraint_forces.values()) > 1e-6  # it pushes again


def test_enabling_an_enabled_constraint_changes_nothing_and_switches_survive_reset(zoo_path, cache_dir):
    sim = Simulator(zoo_path, cache_dir=cache_dir)
    start(sim)
    q, u = sim.q, sim.u
    sim.set_constraint_enabled(MIMIC, True)
    assert np.array_equal(sim.q, q) and np.array_equal(sim.u, u)
    sim.set_constraint_enabled(MIMIC, False)
    sim.reset()
    assert not sim.constraint_enabled(MIMIC)


def test_unknown_constraint_is_named(zoo_path, repo, cache_dir):
    sim = Simulator(zoo_path, cache_dir=cache_dir)
    with pytest.raises(ValueError, match=r"unknown constraint 'elbow'; constraints: finger_joint"):
        sim.set_constraint_enabled("elbow", False)
    pendulum = Simulator(repo / "urdf" / "pendulum.urdf", cache_dir=cache_dir)
    with pytest.raises(ValueError, match="this robot has no constraints"):
        pendulum.constraint_enabled("hinge")


def test_numpy_backend_switches_as_the_c_code(zoo_path, cache_dir):
    robot = build_robot(parse_urdf(zoo_path))
    robot.define_all()
    eom = derive_equations(robot)
    c_model, numpy_model = CompiledModel(eom, cache_dir), NumpyModel(eom)
    rng = np.random.default_rng(6)
    q, u, inputs = rng.uniform(-1, 1, eom.n_q), rng.uniform(-1, 1, eom.n_u), rng.uniform(-1, 1, len(eom.inputs))
    results = []
    for model in (c_model, numpy_model):
        model.buffers.enabled[:] = 0.0
        qdot, udot = model.forward_dynamics(q, u, inputs)
        lam = model.buffers.lam.copy()
        projected = model.project(q, u)
        results.append((qdot, udot, lam, *projected))
    for c_value, numpy_value in zip(*results):
        np.testing.assert_allclose(c_value, numpy_value, rtol=1e-9, atol=1e-11)
    assert np.array_equal(results[0][2], np.zeros(eom.n_constraints))
    np.testing.assert_array_equal(results[0][3], q)  # nothing enforced: projection leaves q as is


def test_a_redundant_copy_takes_over_when_the_constraint_it_repeats_is_disabled(zoo_path, cache_dir):
    """A second, redundant statement of the mimic relation (owned by the shoulder): enforced with
    the mimic (the dynamics leave it to the mimic where both hold), so when the mimic is disabled
    the copy carries the relation alone and it still holds."""
    robot = build_robot(parse_urdf(zoo_path))
    finger, shoulder = robot.joints[MIMIC], robot.joints["shoulder"]

    class Copy(LoadGroupBase):
        required_parent_type = RevoluteJoint

        def _define_constraints(self) -> None:
            self.system.add_holonomic_constraints(2 * (finger.q[0] + shoulder.q[0] / 2 - 0.1))

    shoulder.add_load_group(Copy("copy"))
    robot.define_all()
    sim = Simulator(robot, cache_dir=cache_dir)
    assert sorted(sim.constraints) == sorted([MIMIC, "shoulder"])
    flags = sim.model.buffers.enabled
    (masked,) = sim.model.redundant_constraints  # the statement the report calls redundant
    kept = MIMIC if masked == "shoulder" else "shoulder"
    np.testing.assert_array_equal(flags, [1.0, 1.0])
    start(sim)
    assert sim.degrees_of_freedom() == sim.model.n_u - 1
    sim.set_constraint_enabled(kept, False)
    assert not sim.constraint_enabled(kept) and sim.constraint_enabled(masked)
    np.testing.assert_array_equal(flags, [float(name == masked) for name in sim.model.constraint_names])
    sim.set_efforts({"shoulder": 3.0})
    sim.advance(0.3)
    assert mimic_error(sim) < 1e-12  # the copy holds the relation
    sim.set_constraint_enabled(masked, False)
    np.testing.assert_array_equal(flags, [0.0, 0.0])
    sim.advance(0.3)
    assert mimic_error(sim) > 1e-2  # both released: the finger lags


def test_a_disabled_constraint_that_is_singular_here_does_not_poison_the_dynamics(zoo_without_mimic, cache_dir):
    """finger = 0.1 / shoulder has an infinite Jacobian at shoulder = 0: disabled, it must not
    matter (0 * inf would be NaN)."""
    robot = build_robot(parse_urdf(zoo_without_mimic))
    finger, shoulder = robot.joints[MIMIC], robot.joints["shoulder"]

    class Hyperbola(LoadGroupBase):
        required_parent_type = RevoluteJoint

        def _define_constraints(self) -> None:
            self.system.add_holonomic_constraints(finger.q[0] - 0.1 / shoulder.q[0])

    finger.add_load_group(Hyperbola("hyperbola"))
    robot.define_all()
    eom = derive_equations(robot)
    reference = Simulator(zoo_without_mimic, cache_dir=cache_dir).model
    q, u = np.zeros(eom.n_q), np.linspace(-0.5, 0.5, eom.n_u)  # shoulder = 0
    inputs = np.zeros(len(eom.inputs))
    expected = reference.forward_dynamics(q, u, inputs)
    for model in (CompiledModel(eom, cache_dir), NumpyModel(eom)):
        model.buffers.enabled[:] = 0.0
        with np.errstate(divide="ignore", invalid="ignore"):  # NumPy says what C does silently
            qdot, udot = model.forward_dynamics(q, u, inputs)
            projected_q, projected_u = model.project(q, u)
        assert np.all(np.isfinite(udot))
        np.testing.assert_allclose(udot, expected[1], rtol=1e-12, atol=1e-12)
        assert np.array_equal(projected_q, q) and np.array_equal(projected_u, u)


def test_the_constraint_system_is_exposed_row_by_row(zoo_path, cache_dir):
    # Karana-style introspection: which constraints are enabled, A, b and c (Gamma = -c) per row,
    # the multipliers and the generalized constraint forces; checked against the equations they
    # come from (A u + b = 0 on the constraint, A u' + c = 0 with the accelerations, -A^T lambda).
    sim = Simulator(zoo_path, cache_dir=cache_dir)
    start(sim)
    assert sim.enabled_constraints == sim.constraints and MIMIC in sim.constraints
    system = sim.constraint_system()
    outputs = sim.outputs()
    udot = np.array([outputs.accelerations[n] for n in sim.speed_names])
    assert system.matrix.shape == (len(system.rows), len(sim.speed_names)) and system.enabled.all()
    assert set(system.rows) == set(sim.constraints)
    assert np.abs(system.matrix @ sim.u + system.bias).max() < 1e-9
    assert np.abs(system.matrix @ udot + system.acceleration_bias).max() < 1e-9
    np.testing.assert_allclose(system.generalized_forces, [outputs.constraint_forces[n] for n in sim.speed_names],
                               rtol=1e-12, atol=1e-12)
    assert np.abs(system.multipliers).max() > 1e-4  # the finger is held on its mimic relation
    sim.set_constraint_enabled(MIMIC, False)
    assert MIMIC not in sim.enabled_constraints
    released = sim.constraint_system()
    rows = [i for i, name in enumerate(released.rows) if name == MIMIC]
    assert not released.enabled[rows].any() and np.all(released.multipliers[rows] == 0.0)


def test_a_moving_loop_has_its_acceleration_bias_and_multipliers(repo, cache_dir):
    # four_bar's pin closes a loop: its rows are nonlinear, so c = A' u + b' is not zero in motion
    sim = Simulator(repo / "urdf" / "four_bar.urdf", cache_dir=cache_dir)
    sim.set_state(velocities={"crank_joint": 2.0})
    system = sim.constraint_system()
    outputs = sim.outputs()
    udot = np.array([outputs.accelerations[n] for n in sim.speed_names])
    assert set(system.rows) == {"rocker_pin"} and system.enabled.all()
    assert np.abs(system.matrix @ sim.u + system.bias).max() < 1e-9
    assert np.abs(system.matrix @ udot + system.acceleration_bias).max() < 1e-9
    assert np.abs(system.acceleration_bias).max() > 0.1 and np.abs(system.multipliers).max() > 0.1


def test_the_constraints_on_a_link_are_those_of_the_components_joining_it(zoo_path, repo, cache_dir):
    # Karana's per-body query: a mimic joint's constraint acts on its own links and on those of the
    # joint it follows; a loop joint's on its parent and child (as the URDF's <loop_joint> says); a
    # rolling wheel's on its wheel.  The second load of each comes from the robot cache (the facts as JSON).
    for _ in range(2):
        zoo = Simulator(zoo_path, cache_dir=cache_dir)
        four_bar = Simulator(repo / "urdf" / "four_bar.urdf", cache_dir=cache_dir)
        drive = Simulator(repo / "urdf" / "diff_drive.urdf", cache_dir=cache_dir)
        assert [link for link in zoo.model.link_names if zoo.constraints_on(link)] == ["slider", "arm", "finger"]
        assert zoo.constraints_on("finger") == [MIMIC]
        assert [link for link in four_bar.model.link_names if four_bar.constraints_on(link)] == ["ground", "rocker"]
        assert drive.constraints_on("left_wheel") == ["left_wheel_contact"] and drive.constraints_on("base_link") == []
    zoo.set_constraint_enabled(MIMIC, False)
    assert zoo.constraints_on("finger") == [MIMIC]  # released, still the finger's
    with pytest.raises(ValueError, match="unknown link 'hand'; links: .*finger"):
        zoo.constraints_on("hand")
