"""mb_sim's closed-loop dynamics (Kane's method in joint coordinates, loop-closure constraints)
against an independent reference in absolute coordinates (test/absolute_dae.py: every link a free
rigid body, every joint and loop joint constraint rows with Lagrange multipliers, an index-1 DAE
with Baumgarte stabilization integrated by SciPy's DOP853).  Only the starting state comes from
mb_sim (its link poses and joint speeds, turned into link twists here); the reference reads the
URDF itself.

Measured (DOP853 both, mb_sim rtol 1e-10 / atol 1e-12, the reference 1e-11 / 1e-12):

- delta robot, 2 s from motors (1.2, 1.9, 1.5) rad at (1.0, -0.5, 0) rad/s: every link origin
  within 5.5e-12 m at 0.5 s, 1.1e-10 m at 1 s, 7.5e-10 m at 1.5 s, 5.3e-10 m at 2 s (rotation
  matrices within 3.6e-9).  The difference is the reference's: mb_sim at rtol 1e-12 moves by
  3e-12 m, the reference at rtol 1e-12 comes within 2e-10 m of mb_sim; hence the tolerance 1e-8 m;
- delta robot from test_delta_robot.py's start (motors 0.4, -0.2, 0.7 at 1.0, -0.5, 0): within
  5.1e-12 m up to 0.25 s.  At 0.30 s that motion crosses a constraint singularity of the 3-RUU
  mechanism (the smallest singular value of G, and of mb_sim's constraint matrix, falls linearly
  to zero and rises again: the three legs' constraint couples are coplanar there and the platform
  could start to turn), where both formulations are ill-conditioned (mb_sim's energy jumps by
  7e-9 J, the reference's steps shrink to 1e-6 s) and neither trajectory is a reference for the
  other; it crosses another near 1.0 s;
- Stewart platform, 2 s without gravity (under gravity its passive legs collapse: beyond -0.2 m
  at 0.19 s, on the stops at -0.25 m near 0.21 s) from leg extensions within 0.05 m at speeds
  within 0.05 m/s: every link's position within 8e-15 m and rotation within 1.2e-14 (the motion
  is smooth: mb_sim at rtol 1e-5 differs from rtol 1e-10 by 2e-10 m), tolerance 1e-10; a piston
  1 % heavier in the reference moves the links by 9.5e-6 m.

The reference conserves energy to 2.7e-11 J (delta, |E| = 2-4 J) and 1e-16 J (Stewart) and keeps
its constraint residuals below 5e-12 m (positions) and 1.3e-10 m/s (velocities).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import absolute_dae as dae
from mb_sim.sim import Simulator

MOTORS = ["motor_1", "motor_2", "motor_3"]
LEGS = [f"leg_{n}" for n in range(1, 7)]
FLOATING_SPEEDS = ("vx", "vy", "vz", "wx", "wy", "wz")


# -- mb_sim's side ----------------------------------------------------------------------------
def simulator(path, cache_dir) -> Simulator:
    """A tightly integrated mb_sim simulator (DOP853 at rtol 1e-10, atol 1e-12)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (assembly notes)
        return Simulator(path, cache_dir=cache_dir, integrator="DOP853", rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def delta(repo, model_cache):
    """mb_sim's delta robot and the reference's."""
    return simulator(repo / "urdf" / "delta_robot.urdf", model_cache), dae.load(repo / "urdf" / "delta_robot.urdf")


@pytest.fixture(scope="module")
def stewart(repo, model_cache):
    """mb_sim's Stewart platform and the reference's."""
    path = repo / "urdf" / "stewart_platform.urdf"
    return simulator(path, model_cache), dae.load(path)


def joint_speeds(sim: Simulator, mech: dae.Mechanism) -> dict[str, float | np.ndarray]:
    """mb_sim's speeds by joint: one-DoF joints' rates; a floating joint's six speeds."""
    speeds: dict[str, float | np.ndarray] = {joint: float(sim.u[u]) for joint, (_, u) in sim.joint_indices.items()}
    for joint in mech.joints.values():
        if joint.type == "floating":
            speeds[joint.name] = np.array([sim.u[sim.speed_names.index(f"{joint.name}_{c}")] for c in FLOATING_SPEEDS])
    return speeds


def absolute_state(sim: Simulator, mech: dae.Mechanism) -> np.ndarray:
    """The reference's state at mb_sim's: link poses as mb_sim places them, twists from its speeds."""
    poses = sim.outputs(dynamics=False).link_poses
    return dae.initial_state(mech, poses, dae.link_twists(mech, poses, joint_speeds(sim, mech)))


def mb_sim_poses(sim: Simulator, times) -> list[dict[str, np.ndarray]]:
    """mb_sim's link poses at `times` (from now, which is time 0)."""
    poses, now = [], 0.0
    for t in times:
        sim.advance(t - now)
        now = t
        poses.append(sim.outputs(dynamics=False).link_poses)
    return poses


def position_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """Largest distance between the two sets' link origins."""
    assert a.keys() <= b.keys()
    return max(float(np.linalg.norm(a[link][:3, 3] - b[link][:3, 3])) for link in a)


def rotation_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """Largest rotation-matrix entry difference over the links."""
    return max(float(np.abs(a[link][:3, :3] - b[link][:3, :3]).max()) for link in a)


def check_reference(solution: dae.Solution, energy_tolerance: float) -> None:
    """The reference's own checks: energy kept, constraints held, away from singular configurations."""
    assert np.abs(solution.energy - solution.energy[0]).max() < energy_tolerance
    assert solution.position_residual.max() < 1e-9
    assert solution.velocity_residual.max() < 1e-9
    assert solution.singular_value.min() > 0.02


def compare(sim: Simulator, mech: dae.Mechanism, times, tolerance: float, gravity: float = dae.GRAVITY,
            energy_tolerance: float = 1e-9) -> list[float]:
    """Run both from mb_sim's present state over `times`; every link origin within `tolerance`."""
    y0 = absolute_state(sim, mech)
    reference = dae.simulate(mech, y0, [0.0, *times], gravity=gravity)
    check_reference(reference, energy_tolerance)
    differences = [position_difference(p, q) for p, q in zip(mb_sim_poses(sim, times), reference.link_poses[1:])]
    assert max(differences) < tolerance, dict(zip(times, differences))
    return differences


# -- the reference on its own -------------------------------------------------------------------
def phi_and_rate(mech: dae.Mechanism, y: np.ndarray, accelerations: np.ndarray | None = None):
    """(Phi, G nu, G nu' + gamma) of the reference at state y."""
    rates = dae.AbsoluteDAE(mech)
    x, quat, v, w = rates.unpack(y)
    phi, G, gamma = dae.constraints(mech, dae.Kinematics.of(x, dae.quaternion_matrices(quat), v, w))
    nu = np.hstack([v, w]).ravel()
    return phi, G @ nu, None if accelerations is None else G @ accelerations + gamma


@pytest.mark.parametrize("robot", ["delta_robot", "stewart_platform"])
def test_reference_jacobians_and_biases_are_the_derivatives_of_the_constraints(repo, robot):
    """At random states off the constraints: Phi' = G nu and (G nu)' = G nu' + gamma by central
    differences along the motion (x' = v, q' = (0, w) q / 2, nu' random)."""
    mech = dae.load(repo / "urdf" / f"{robot}.urdf")
    rates, rng, n = dae.AbsoluteDAE(mech), np.random.default_rng(1), mech.n
    quat = rng.normal(size=(n, 4))
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    x, v, w, acceleration = rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 6))
    y = np.concatenate([x.ravel(), quat.ravel(), v.ravel(), w.ravel()])
    motion = np.concatenate([v.ravel(), dae.quaternion_rates(quat, w).ravel(), acceleration[:, :3].ravel(),
                             acceleration[:, 3:].ravel()])
    h = 1e-6
    ahead, behind = phi_and_rate(mech, y + h * motion), phi_and_rate(mech, y - h * motion)
    _, phi_rate, phi_acceleration = phi_and_rate(mech, y, acceleration.ravel())
    for difference, analytic in (((ahead[0] - behind[0]) / (2 * h), phi_rate),
                                 ((ahead[1] - behind[1]) / (2 * h), phi_acceleration)):
        assert np.abs(difference - analytic).max() < 1e-7 * (1 + np.abs(analytic).max())
    assert rates.residuals(y)[0] > 0.1  # (off the constraints: every term of G and gamma counts)


# -- against mb_sim ---------------------------------------------------------------------------------
def test_delta_start_is_on_the_reference_constraints_with_mb_sims_energy(delta):
    """mb_sim's assembled state satisfies the reference's own constraint rows, and the reference's
    kinetic and potential energy of it are mb_sim's."""
    sim, mech = delta
    sim.reset()
    sim.set_state(dict(zip(MOTORS, (0.4, -0.2, 0.7))), dict(zip(MOTORS, (1.0, -0.5, 0.0))))
    y0 = absolute_state(sim, mech)
    rates = dae.AbsoluteDAE(mech)
    assert max(rates.residuals(y0)[:2]) < 1e-12
    kinetic, potential = rates.energy(y0)
    out = sim.outputs()
    assert kinetic > 0.01
    assert abs(kinetic - out.kinetic_energy) < 1e-12 and abs(potential - out.potential_energy) < 1e-12


def test_delta_two_seconds_under_gravity(delta):
    """2 s of free motion under gravity (no effort, friction or damping) from a start whose
    motion stays clear of constraint singularities (smallest singular value of G at least 0.03
    at the output times; 0.027 sampled every 10 ms)."""
    sim, mech = delta
    sim.reset()
    sim.set_state(dict(zip(MOTORS, (1.2, 1.9, 1.5))), dict(zip(MOTORS, (1.0, -0.5, 0.0))))
    start = sim.outputs(dynamics=False).link_poses["platform"][:3, 3]
    compare(sim, mech, [0.5, 1.0, 1.5, 2.0], tolerance=1e-8)
    assert np.linalg.norm(sim.outputs(dynamics=False).link_poses["platform"][:3, 3] - start) > 0.01  # it moved


def test_delta_from_the_start_of_test_delta_robot_until_its_singularity(delta):
    """test_delta_robot.py's start: the links agree until the motion nears a constraint
    singularity (at 0.30 s, see the next test)."""
    sim, mech = delta
    sim.reset()
    sim.set_state(dict(zip(MOTORS, (0.4, -0.2, 0.7))), dict(zip(MOTORS, (1.0, -0.5, 0.0))))
    compare(sim, mech, [0.05, 0.1, 0.15, 0.2, 0.25], tolerance=1e-10)


def test_the_start_of_test_delta_robot_meets_a_constraint_singularity(delta):
    """Where mb_sim's motion from that start is at 0.30 s, the reference's constraint Jacobian
    has all but lost a rank (its smallest singular value is 1/48 of the start's; zero near
    0.3017 s), as has mb_sim's constraint matrix: comparing the two beyond it tests nothing."""
    sim, mech = delta
    sim.reset()
    sim.set_state(dict(zip(MOTORS, (0.4, -0.2, 0.7))), dict(zip(MOTORS, (1.0, -0.5, 0.0))))
    rates = dae.AbsoluteDAE(mech)
    start = rates.residuals(absolute_state(sim, mech))[2]
    sim.advance(0.30)
    near = rates.residuals(absolute_state(sim, mech))[2]
    assert near < start / 20, (near, start)
    assert np.linalg.svd(sim.constraint_system().matrix, compute_uv=False)[-1] < 0.01


def test_stewart_platform_two_seconds_without_gravity(stewart):
    """2 s of free motion without gravity (with it, the legs reach their stops at 0.21 s): legs
    started at up to 0.05 m, moving at up to 0.05 m/s, stay within 0.2 m of their nominal
    lengths (0.25 m: the stops); every link's pose, the platform's rotation included."""
    sim, mech = stewart
    sim.set_parameters({"gravity_g": 0.0})
    try:
        sim.reset()
        sim.set_state(dict(zip(LEGS, [0.05, -0.03, 0.02, -0.04, 0.03, -0.01])),
                      dict(zip(LEGS, [0.05, -0.04, 0.03, 0.02, -0.05, 0.04])))
        times = np.arange(1, 21) * 0.1
        y0 = absolute_state(sim, mech)
        reference = dae.simulate(mech, y0, [0.0, *times], gravity=0.0)
        check_reference(reference, 1e-12)
        poses, extensions = [], []
        for t, now in zip(times, [0.0, *times[:-1]]):
            sim.advance(t - now)
            poses.append(sim.outputs(dynamics=False).link_poses)
            extensions.append([sim.q[sim.joint_indices[leg][0]] for leg in LEGS])
        assert np.abs(extensions).max() < 0.2
        assert np.ptp(np.array(extensions), axis=0).max() > 0.05  # the legs moved
        assert max(position_difference(p, q) for p, q in zip(poses, reference.link_poses[1:])) < 1e-10
        assert max(rotation_difference(p, q) for p, q in zip(poses, reference.link_poses[1:])) < 1e-10
        turned = poses[-1]["platform"][:3, :3].T @ reference.link_poses[0]["platform"][:3, :3]
        assert np.arccos((np.trace(turned) - 1) / 2) > 0.1  # the platform turned
    finally:
        sim.set_parameters({"gravity_g": 9.81})
