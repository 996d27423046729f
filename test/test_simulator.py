"""The simulator against analytic results: pendulum period (elliptic integral), energy
conservation, constraints kept, joint stops, and clear failures."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ellipk

from mb_sim.model import link_poses
from mb_sim.sim import SimulationError, Simulator


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


def downward_zero_crossings(times: np.ndarray, q: np.ndarray, qdot: np.ndarray) -> list[float]:
    """Times where q crosses zero going down, from cubic Hermite interpolation (error ~dt^4)."""
    crossings = []
    for i in np.flatnonzero((q[:-1] > 0) & (q[1:] <= 0)):
        t0, h = times[i], times[i + 1] - times[i]
        p0, p1, m0, m1 = q[i], q[i + 1], qdot[i] * h, qdot[i + 1] * h
        coefficients = [2 * p0 - 2 * p1 + m0 + m1, -3 * p0 + 3 * p1 - 2 * m0 - m1, m0, p0]
        roots = [r.real for r in np.roots(coefficients) if abs(r.imag) < 1e-12 and -1e-9 <= r.real <= 1 + 1e-9]
        crossings.append(t0 + h * min(roots, key=lambda r: abs(r - 0.5)))
    return crossings


@pytest.mark.parametrize("integrator", ["rk4", "DOP853"])
def test_pendulum_period_matches_the_elliptic_integral(repo, cache_dir, integrator):
    sim = Simulator(repo / "urdf" / "pendulum.urdf", integrator=integrator, cache_dir=cache_dir)
    amplitude = np.pi / 2
    sim.set_state({"hinge": amplitude})
    trajectory = sim.simulate(7.0)
    q, u = trajectory.q[:, 0], trajectory.u[:, 0]
    crossings = downward_zero_crossings(trajectory.times, -q, -u)  # first crossing: swinging down
    measured = np.diff(crossings).mean()
    mass, length, inertia_cm, g = 1.0, 1.0, 0.001, 9.81  # urdf/pendulum.urdf
    pivot_inertia = mass * length**2 + inertia_cm
    exact = 4 * np.sqrt(pivot_inertia / (mass * g * length)) * ellipk(np.sin(amplitude / 2) ** 2)
    assert len(crossings) >= 2
    assert measured == pytest.approx(exact, rel=1e-6)


def energy_drift(sim: Simulator, duration: float) -> float:
    """Largest |E(t) - E(0)| over `duration`, relative to the largest kinetic energy seen."""
    start = sim.outputs().energy
    drift, kinetic = 0.0, 0.0
    for _ in range(round(duration / 0.1)):
        sim.advance(0.1)
        out = sim.outputs()
        drift, kinetic = max(drift, abs(out.energy - start)), max(kinetic, out.kinetic_energy)
    return drift / kinetic


def test_double_pendulum_conserves_energy(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "double_pendulum.urdf", cache_dir=cache_dir)
    sim.set_state({"shoulder": 1.2, "elbow": -0.7}, {"shoulder": 0.5})
    assert energy_drift(sim, 10.0) < 1e-6


def test_arm_without_damping_conserves_energy(repo, cache_dir):
    """The falling arm swings wildly (wrist joints pass their 2 pi stops), so damping, friction and
    the stops, the only non-conservative loads, are switched off through their parameters."""
    sim = Simulator(repo / "urdf" / "arm6.urdf", cache_dir=cache_dir)
    dissipative = ("_damping", "_friction", "_limit_stiffness")
    sim.set_parameters({name: 0.0 for name in sim.parameter_names if name.endswith(dissipative)})
    sim.set_state({"shoulder_lift_joint": -0.8, "elbow_joint": 0.6, "wrist_1_joint": 0.3},
                  {"shoulder_pan_joint": 0.4, "wrist_3_joint": 1.0})
    assert energy_drift(sim, 10.0) < 1e-6


def test_mimic_constraint_is_kept(repo, cache_dir):
    sim = Simulator(repo / "test" / "urdf" / "kinematic_zoo.urdf", cache_dir=cache_dir)
    sim.set_state({"shoulder": 0.5, "lift": 0.1}, {"shoulder": 1.0, "base_plane_w": 0.3})
    worst = 0.0
    for _ in range(100):
        sim.advance(0.1)
        out = sim.outputs()
        worst = max(worst, out.position_error)
        assert out.velocity_error < 1e-9
    assert worst < 1e-9
    assert out.joint_positions["finger_joint"] == pytest.approx(-0.5 * out.joint_positions["shoulder"] + 0.1, abs=1e-9)


def test_stiff_integrator_keeps_constraints_and_agrees_with_dop853(repo, cache_dir):
    """The final projection keeps the constraint whatever the tolerances; the comparison with a
    tight explicit integration is what checks Radau's dynamics."""
    states = {}
    for integrator, tolerance in (("Radau", 1e-8), ("DOP853", 1e-11)):
        sim = Simulator(repo / "test" / "urdf" / "kinematic_zoo.urdf", integrator=integrator, cache_dir=cache_dir,
                        rtol=tolerance, atol=tolerance)
        sim.set_state({"shoulder": 0.5}, {"shoulder": 1.0})
        sim.advance(0.5)
        assert sim.outputs().position_error < 1e-9 and sim.time == pytest.approx(0.5)
        states[integrator] = sim.q
    np.testing.assert_allclose(states["Radau"], states["DOP853"], atol=1e-6)


def test_dependent_coordinate_given_inconsistently_is_an_error(repo, cache_dir):
    sim = Simulator(repo / "test" / "urdf" / "kinematic_zoo.urdf", cache_dir=cache_dir)
    with pytest.raises(ValueError, match="'finger_joint_q' contradicts the constraints"):
        sim.set_state({"shoulder": 0.5, "finger_joint": 0.9})
    sim.set_state({"shoulder": 0.5, "finger_joint": -0.15})  # consistent: accepted


def test_outputs_poses_are_the_forward_kinematics(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "arm6.urdf", cache_dir=cache_dir)
    sim.set_state({"shoulder_pan_joint": 0.3, "elbow_joint": -1.1})
    sim.advance(0.05)
    expected = link_poses(sim.robot)(sim.q)
    for name, pose in sim.outputs().link_poses.items():
        assert np.abs(pose - expected[name]).max() < 1e-12


def test_efforts_are_clamped_to_the_urdf_limits(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "arm6.urdf", cache_dir=cache_dir)
    sim.set_efforts({"wrist_1_joint": 500.0, "elbow_joint": -20.0})
    assert sim.outputs().efforts["wrist_1_joint"] == 28.0  # <limit effort="28">
    assert sim.outputs().efforts["elbow_joint"] == -20.0
    with pytest.raises(ValueError, match="joint 'tool0_fixed_joint' takes no effort"):
        sim.set_efforts({"tool0_fixed_joint": 1.0})


def test_joint_stop_holds_the_limit(cache_dir):
    urdf = """<robot name="stopped"><link name="base"/>
      <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="2"/>
        <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.001"/></inertial></link>
      <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
        <limit lower="-0.5" upper="2" effort="10" velocity="5"/></joint></robot>"""
    sim = Simulator(urdf, cache_dir=cache_dir)
    sim.set_state({"hinge": 1.2})
    trajectory = sim.simulate(3.0)
    assert trajectory.q[:, 0].min() > -0.5 - 0.02  # bounced off the lower stop, small penetration
    assert trajectory.q[:, 0].min() < -0.49


def test_divergence_raises_with_time_and_coordinate_and_keeps_the_last_state(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "pendulum.urdf", cache_dir=cache_dir)
    sim.set_state({"hinge": 0.3})
    sim.advance(0.01)
    sim.set_parameters({"gravity_g": float("nan")})
    before = sim.q
    with pytest.raises(SimulationError, match=r"t = 0\.01 s \(hinge_u\): the state is not finite \(NaN") as raised:
        sim.advance(0.01)
    assert raised.value.time == pytest.approx(0.01) and raised.value.coordinate == "hinge_u"
    assert np.array_equal(sim.q, before) and sim.time == pytest.approx(0.01)


def test_reset_returns_to_the_initial_state(repo, cache_dir):
    sim = Simulator(repo / "urdf" / "double_pendulum.urdf", cache_dir=cache_dir)
    sim.set_state({"shoulder": 0.4})
    initial = sim.q
    sim.advance(0.5)
    sim.reset()
    assert sim.time == 0.0 and np.array_equal(sim.q, initial) and not sim.u.any()
