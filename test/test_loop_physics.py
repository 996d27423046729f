"""Physics of closed loops and spring-dampers against references that do not come from mb_sim.

Each test compares the simulator with something derived here by hand: a one-DoF Lagrange model
of the four-bar (closed-form position analysis, SymPy for the derivatives), the analytic damped
oscillator, the slider-crank's closed-form kinematics and the work-energy theorem, Newton-Euler
equations of each link written out with the reported loop reaction, statics of a welded body, and
the rigid-body impulse equations of two free bodies joined by a ball joint (momentum conservation).
Link geometry, masses and inertias are copied from the URDF files, the kinematics rewritten from
their joint origins; nothing is read back from the simulator's own model but the state, its rates
and the reported reactions.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from mb_sim.sim import Simulator

G = 9.81


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


def unit(phi):
    """Direction (x, y, z) of a link at absolute angle `phi` about +y: (cos, 0, -sin)."""
    return np.array([np.cos(phi), 0.0, -np.sin(phi)])


def unit_rate(phi):
    """d unit / d phi = y x unit."""
    return np.array([-np.sin(phi), 0.0, -np.cos(phi)])


def moment_y(r, f):
    """y component of r x f (moments about +y in the x-z plane)."""
    return r[2] * f[0] - r[0] * f[2]


# -- the four-bar, by hand (urdf/four_bar.urdf) ---------------------------------------------------
FB_LENGTHS = (1.0, 3.5, 3.0)  # crank AB, coupler BC, rocker CD [m]; uniform rods of 1 kg
FB_MASS = 1.0
FB_INERTIA = tuple(FB_MASS * length**2 / 12 for length in FB_LENGTHS)  # about the mass centre
FB_PITCH = (-np.pi / 2, 1.0226484275561756, 1.7745849023174847)  # joint origins' pitch angles
FB_D = np.array([4.0, 0.0, 0.0])


def four_bar_links(q, u, udot):
    """Per link (crank, coupler, rocker): first pin, absolute angle, its rate and acceleration, the
    pin's acceleration, from the tree joints' angles, rates and accelerations (planar chain)."""
    phi = np.cumsum(np.asarray(FB_PITCH) + q)
    omega, alpha = np.cumsum(u), np.cumsum(udot)
    pins, pin_acc = [np.zeros(3)], [np.zeros(3)]
    for k in range(3):
        pins.append(pins[-1] + FB_LENGTHS[k] * unit(phi[k]))
        pin_acc.append(pin_acc[-1] + FB_LENGTHS[k] * (alpha[k] * unit_rate(phi[k]) - omega[k] ** 2 * unit(phi[k])))
    return phi, omega, alpha, pins, pin_acc


def four_bar_energy(q, u):
    """Kinetic plus gravitational energy of the three rods from the tree joints' state."""
    phi, omega, _, pins, _ = four_bar_links(q, u, np.zeros(3))
    pin_vel = [np.zeros(3)]
    energy = 0.0
    for k in range(3):
        centre = pins[k] + FB_LENGTHS[k] / 2 * unit(phi[k])
        velocity = pin_vel[-1] + FB_LENGTHS[k] / 2 * omega[k] * unit_rate(phi[k])
        pin_vel.append(pin_vel[-1] + FB_LENGTHS[k] * omega[k] * unit_rate(phi[k]))
        energy += 0.5 * FB_MASS * velocity @ velocity + 0.5 * FB_INERTIA[k] * omega[k] ** 2 + FB_MASS * G * centre[2]
    return energy


def four_bar_state(sim):
    out = sim.outputs()
    joints = ("crank_joint", "coupler_joint", "rocker_joint")
    q = np.array([out.joint_positions[j] for j in joints])
    u = np.array([out.joint_velocities[j] for j in joints])
    udot = np.array([out.accelerations[f"{j}_u"] for j in joints])
    return out, q, u, udot


@pytest.fixture(scope="module")
def lagrange_four_bar():
    """The four-bar as one DoF, theta the crank's absolute angle: coupler and rocker from the
    closed-form intersection of two circles (the branch with C above the line BD), J(theta) from
    the rods' kinetic energy, V(theta) from their heights; J theta'' + J' theta'^2 / 2 + V' = 0.
    Returns (J, J', V') as a NumPy function of theta."""
    theta = sp.Symbol("theta")
    l1, l2, l3 = 1, sp.Rational(7, 2), 3
    b = sp.Matrix([l1 * sp.cos(theta), -l1 * sp.sin(theta)])  # (x, z)
    d = sp.Matrix([4, 0])
    distance = sp.sqrt((d - b).dot(d - b))
    along = (l2**2 - l3**2 + distance**2) / (2 * distance)
    e = (d - b) / distance
    c = b + along * e + sp.sqrt(l2**2 - along**2) * sp.Matrix([-e[1], e[0]])
    angles = [theta, sp.atan2(-(c[1] - b[1]), c[0] - b[0]), sp.atan2(-(d[1] - c[1]), d[0] - c[0])]
    centres = [b / 2, (b + c) / 2, (c + d) / 2]
    inertia = sum(centre.diff(theta).dot(centre.diff(theta)) + sp.Rational(length**2, 12) * angle.diff(theta) ** 2
                  for centre, angle, length in zip(centres, angles, (l1, l2, l3)))
    potential = sp.Rational(981, 100) * sum(centre[1] for centre in centres)
    return sp.lambdify(theta, [inertia, inertia.diff(theta), potential.diff(theta)], "numpy", cse=True)


def test_four_bar_keeps_its_loop_and_its_energy_for_ten_seconds(repo, cache_dir):
    """Released at rest with the crank straight up (not an equilibrium), RK4 at 1 ms: every
    residual of the loop closure stays below 1e-9, the loop closes in the hand-written forward
    kinematics too, and the energy computed by hand drifts less than 1e-6 of the largest kinetic
    energy."""
    sim = Simulator(repo / "urdf/four_bar.urdf", cache_dir=cache_dir)
    _, q, u, _ = four_bar_state(sim)
    start = four_bar_energy(q, u)
    drift = kinetic = residual = closure = 0.0
    for _ in range(100):
        sim.advance(0.1)
        out, q, u, _ = four_bar_state(sim)
        errors = sim.constraint_errors()["rocker_pin"]
        residual = max(residual, *np.abs(np.concatenate([errors.position, errors.velocity, errors.acceleration])))
        phi, omega, _, pins, _ = four_bar_links(q, u, np.zeros(3))
        d_velocity = sum(length * w * unit_rate(p) for length, w, p in zip(FB_LENGTHS, omega, phi))
        closure = max(closure, np.abs(pins[3] - FB_D).max(), np.abs(d_velocity).max())
        energy = four_bar_energy(q, u)
        assert out.energy == pytest.approx(energy, abs=1e-9)  # the simulator's own energy output agrees
        drift, kinetic = max(drift, abs(energy - start)), max(kinetic, out.kinetic_energy)
    print(f"four-bar 10 s: max residual {residual:.2e}, closure {closure:.2e}, drift/KEmax {drift / kinetic:.2e}")
    assert kinetic > 10.0  # it really swung (the rods fall by about 2 m)
    assert residual < 1e-9 and closure < 1e-9
    assert drift / kinetic < 1e-6


@pytest.mark.parametrize("integrator", ["rk4", "DOP853"])
def test_four_bar_crank_follows_the_one_dof_lagrange_model(repo, cache_dir, lagrange_four_bar, integrator):
    """Both integrators (RK4 at 1 ms; DOP853 at the Simulator's rtol = atol = 1e-10) agree with
    the hand-derived model, integrated by DOP853 at 1e-12, to 1e-6 rad over 3 s."""
    def rhs(t, x):
        inertia, inertia_rate, force = lagrange_four_bar(x[0])
        return [x[1], -(0.5 * inertia_rate * x[1] ** 2 + force) / inertia]

    reference = solve_ivp(rhs, (0.0, 3.0), [FB_PITCH[0], 0.0], method="DOP853", rtol=1e-12, atol=1e-12,
                          dense_output=True)
    sim = Simulator(repo / "urdf/four_bar.urdf", cache_dir=cache_dir, integrator=integrator)
    worst = 0.0
    for _ in range(30):
        sim.advance(0.1)
        theta, rate = reference.sol(sim.time)
        out = sim.outputs()
        worst = max(worst, abs(out.joint_positions["crank_joint"] - (theta - FB_PITCH[0])),
                    abs(out.joint_velocities["crank_joint"] - rate) / 10)
    print(f"four-bar vs Lagrange, {integrator}: {worst:.2e} rad")
    assert abs(sim.outputs().joint_positions["crank_joint"]) > 3.0  # it went over the top
    assert worst < 1e-6


# -- spring-damper -------------------------------------------------------------------------------
def test_spring_mass_is_the_analytic_damped_oscillator(repo, cache_dir):
    """x'' = -(k/m)(x - L0) - (d/m) x' from x = 1.05, x' = 0: position, velocity, acceleration and
    every spring output match the closed-form solution over 1 s (RK4 at 1 ms)."""
    k, d, m, length0 = 100.0, 1.0, 1.0, 1.0
    omega0, zeta = np.sqrt(k / m), d / (2 * np.sqrt(k * m))
    omega_d, decay = omega0 * np.sqrt(1 - zeta**2), zeta * omega0
    amplitude, phase = 0.05, 0.05 * decay / omega_d

    def analytic(t):
        c, s, envelope = np.cos(omega_d * t), np.sin(omega_d * t), np.exp(-decay * t)
        x = length0 + envelope * (amplitude * c + phase * s)
        v = envelope * ((phase * omega_d - decay * amplitude) * c - (amplitude * omega_d + decay * phase) * s)
        return x, v, -(k / m) * (x - length0) - (d / m) * v

    sim = Simulator(repo / "urdf/spring_mass.urdf", cache_dir=cache_dir)
    worst = 0.0
    for _ in range(100):
        sim.advance(0.01)
        x, v, a = analytic(sim.time)
        out = sim.outputs()
        worst = max(worst, abs(1.05 + out.joint_positions["slide"] - x), abs(out.joint_velocities["slide"] - v) / 10,
                    abs(out.accelerations["slide_u"] - a) / 100)
        spring = out.springs["spring"]
        force = k * (x - length0) + d * v
        assert spring.distance == pytest.approx(x, abs=1e-6)
        np.testing.assert_allclose(spring.displacement, [x, 0, 0], atol=1e-6)
        np.testing.assert_allclose(spring.velocity, [v, 0, 0], atol=1e-5)
        np.testing.assert_allclose(spring.markers[0], [0, 0, 0], atol=1e-15)
        np.testing.assert_allclose(spring.markers[1], [x, 0, 0], atol=1e-6)
        assert spring.force == pytest.approx(force, abs=1e-4)
        np.testing.assert_allclose(spring.force_vector, [force, 0, 0], atol=1e-4)  # +f on marker 0 (the anchor)
        assert out.accelerations["slide_u"] * m == pytest.approx(-spring.force_vector[0], abs=1e-9)  # -f on the body
        assert out.potential_energy == pytest.approx(0.5 * k * (x - length0) ** 2, abs=1e-6)
    print(f"spring-mass vs analytic: {worst:.2e}")
    assert worst < 1e-6
    assert sim.time == pytest.approx(1.0)


# -- slider-crank (urdf/slider_crank.urdf) -------------------------------------------------------
SC_R, SC_L, SC_ROD_PITCH, SC_X0 = 0.5, 1.5, 1.9106332362490185, np.sqrt(1.5**2 - 0.5**2)


def slider_crank_energy(out):
    """Kinetic plus gravitational energy from the crank angle and rate alone, with the slider and
    rod following the closed-form kinematics (masses and inertias from the URDF)."""
    phi, w = -np.pi / 2 + out.joint_positions["crank_joint"], out.joint_velocities["crank_joint"]
    root = np.sqrt(SC_L**2 - SC_R**2 * np.sin(phi) ** 2)
    b, b_dot = SC_R * unit(phi), SC_R * w * unit_rate(phi)
    x_dot = -SC_R * np.sin(phi) * w - SC_R**2 * np.sin(phi) * np.cos(phi) * w / root
    c_dot = np.array([x_dot, 0.0, 0.0])
    rod = np.array([SC_R * np.cos(phi) + root, 0.0, 0.0]) - b
    rod_rate = (c_dot - b_dot) @ unit_rate(np.arctan2(-rod[2], rod[0])) / SC_L
    kinetic = (0.5 * 0.0209333 * w**2 + 0.5 * 1.0 * (w * 0.25) ** 2  # crank: 1 kg, centre 0.25 m
               + 0.5 * 0.5 * (0.5 * (b_dot + c_dot)) @ (0.5 * (b_dot + c_dot)) + 0.5 * 0.09375 * rod_rate**2
               + 0.5 * 2.0 * x_dot**2)
    potential = G * (1.0 * 0.5 * b[2] + 0.5 * 0.5 * b[2])  # the slider stays at z = 0
    return kinetic + potential


@pytest.mark.parametrize("integrator, energy_tolerance", [("rk4", 1e-5), ("DOP853", 1e-9)])
def test_slider_crank_follows_its_closed_form_kinematics_and_the_work_of_the_effort(repo, cache_dir, integrator,
                                                                                    energy_tolerance):
    """5 N m on the crank for 2 s: at every 10 ms sample the slider is at
    r cos(phi) + sqrt(l^2 - r^2 sin(phi)^2), moves at its derivative, the rod points from the
    crank pin to the slider (all to 1e-9), and the energy gained equals the effort's work
    5 N m * crank angle.  RK4 at 1 ms misses the work by 1.7e-6 of it at 22 rad/s, its truncation
    error (1.1e-7 at 0.5 ms, 7.5e-9 at 0.25 ms: fourth order); DOP853 by 4e-11."""
    sim = Simulator(repo / "urdf/slider_crank.urdf", cache_dir=cache_dir, integrator=integrator)
    torque = 5.0
    sim.set_efforts({"crank_joint": torque})
    start, worst, worst_energy = slider_crank_energy(sim.outputs()), 0.0, 0.0
    for _ in range(200):
        sim.advance(0.01)
        out = sim.outputs(dynamics=False)
        q, u = out.joint_positions, out.joint_velocities
        phi, w = -np.pi / 2 + q["crank_joint"], u["crank_joint"]
        root = np.sqrt(SC_L**2 - SC_R**2 * np.sin(phi) ** 2)
        x = SC_R * np.cos(phi) + root
        x_dot = -SC_R * np.sin(phi) * w - SC_R**2 * np.sin(phi) * np.cos(phi) * w / root
        rod = np.array([x, 0.0, 0.0]) - SC_R * unit(phi)
        rod_angle = phi + SC_ROD_PITCH + q["rod_joint"]
        worst = max(worst, abs(SC_X0 + q["slider_joint"] - x), abs(u["slider_joint"] - x_dot) / max(1.0, abs(w)),
                    np.abs(rod / SC_L - unit(rod_angle)).max())
        work = torque * q["crank_joint"]
        worst_energy = max(worst_energy, abs(slider_crank_energy(out) - start - work) / max(1.0, abs(work)))
    print(f"slider-crank, {integrator}: kinematics {worst:.2e}, work-energy {worst_energy:.2e}")
    assert q["crank_joint"] > 4 * np.pi  # several revolutions
    assert worst < 1e-9
    assert worst_energy < energy_tolerance


# -- reactions: statics of a welded body (test/urdf/loop_fixed_body.urdf) -------------------------
WELD_MASS, WELD_COM = 2.0, np.array([0.3, -0.2, 0.1])  # mass centre in the body frame
WELD_BODY, WELD_J, WELD_C = np.array([1.0, 2.0, 3.0]), np.array([1.1, 2.0, 3.2]), np.array([0.1, 0.0, 0.2])
WELD_RPY = (0.3, -0.5, 1.2)


def rpy_matrix(roll, pitch, yaw):
    """URDF fixed-axis roll, pitch, yaw: Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp_, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp_], [0, 1, 0], [-sp_, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def weld_text(repo, origin_rpy=None, child_rpy=None) -> str:
    text = (repo / "test/urdf/loop_fixed_body.urdf").read_text()
    if origin_rpy is not None:
        text = text.replace('<origin xyz="1.1 2 3.2"/>', '<origin xyz="1.1 2 3.2" rpy="{} {} {}"/>'.format(*origin_rpy))
    if child_rpy is not None:
        text = text.replace('<child_origin xyz="0.1 0 0.2"/>',
                            '<child_origin xyz="0.1 0 0.2" rpy="{} {} {}"/>'.format(*child_rpy))
    return text


def weld_statics(body_rotation):
    """Force and torque about C (world axes) the weld must exert on the body at rest, and the
    body origin, for a body frame turned by `body_rotation` with C on J."""
    origin = WELD_J - body_rotation @ WELD_C
    weight = np.array([0.0, 0.0, -WELD_MASS * G])
    arm = body_rotation @ (WELD_COM - WELD_C)  # from C to the mass centre
    return -weight, -np.cross(arm, weight), origin


@pytest.mark.parametrize("rpy", [None, pytest.param(WELD_RPY, marks=pytest.mark.slow)], ids=["J-is-world", "J-and-C-turned"])
def test_a_welded_body_at_rest_hangs_on_its_loop_joint(repo, cache_dir, rpy):
    """Zero DoF: the body does not accelerate, and the reaction on it at C is its weight, upwards,
    with the torque about C that cancels gravity's moment about C, in J's axes (turned by the
    loop origin's rpy; the body frame is not turned, C carries the same rpy).  The generalized
    forces are that wrench seen at the floating joint: force in world axes, moment about the
    body origin in body axes (here the world's)."""
    sim = Simulator(weld_text(repo, rpy, rpy), cache_dir=cache_dir)
    assert sim.constraints == ["weld"] and len(sim.q) == 7 and len(sim.u) == 6
    force, torque, origin = weld_statics(np.eye(3))
    np.testing.assert_allclose(sim.outputs().link_poses["body"][:3, 3], WELD_BODY, atol=1e-15)
    out = sim.outputs()
    frame = np.eye(3) if rpy is None else rpy_matrix(*rpy)
    reaction = out.reactions["weld"]
    print(f"weld {rpy}: force {reaction.force}, torque {reaction.torque}")
    np.testing.assert_allclose(reaction.force, frame.T @ force, atol=1e-9 * WELD_MASS * G)
    np.testing.assert_allclose(reaction.torque, frame.T @ torque, atol=1e-9 * WELD_MASS * G)
    generalized = np.array([reaction.generalized_forces[f"body_joint_{s}"]
                            for s in ("vx", "vy", "vz", "wx", "wy", "wz")])
    np.testing.assert_allclose(generalized[:3], force, atol=1e-9 * WELD_MASS * G)
    np.testing.assert_allclose(generalized[3:], torque + np.cross(WELD_J - origin, force), atol=1e-9 * WELD_MASS * G)
    assert max(abs(a) for a in out.accelerations.values()) < 1e-10


def test_a_body_welded_to_a_turned_frame_turns_with_it_and_hangs_on_it(repo, cache_dir):
    """J turned by the loop origin's rpy, C not: the only configuration puts the body frame in J's
    axes, C on J.  The reaction is then the weight in J's axes, and the torque too."""
    sim = Simulator(weld_text(repo, WELD_RPY, None), cache_dir=cache_dir)
    rotation = rpy_matrix(*WELD_RPY)
    force, torque, origin = weld_statics(rotation)
    np.testing.assert_allclose(sim.outputs().link_poses["body"][:3, :3], rotation, atol=1e-10)
    np.testing.assert_allclose(sim.outputs().link_poses["body"][:3, 3], origin, atol=1e-10)
    reaction = sim.outputs().reactions["weld"]
    np.testing.assert_allclose(reaction.force, rotation.T @ force, atol=1e-9 * WELD_MASS * G)
    np.testing.assert_allclose(reaction.torque, rotation.T @ torque, atol=1e-9 * WELD_MASS * G)


def test_projection_puts_a_slightly_turned_welded_body_back(repo, cache_dir):
    """The weld allows one configuration, body frame at (1, 2, 3) unturned: a state 0.05 rad off
    about z must be projected back there."""
    sim = Simulator(repo / "test/urdf/loop_fixed_body.urdf", cache_dir=cache_dir)
    half = 0.025
    sim.set_state(q=[0.0, 0.0, 0.0, np.cos(half), 0.0, 0.0, np.sin(half)], u=np.zeros(6))
    np.testing.assert_allclose(sim.q, [0, 0, 0, 1, 0, 0, 0], atol=1e-10)


# -- reactions: Newton-Euler on each link of the moving four-bar ---------------------------------
@pytest.mark.parametrize("effort", [0.0, 3.0])
def test_four_bar_loop_reaction_satisfies_newton_euler_on_every_link(repo, cache_dir, effort):
    """At 0.3, 0.7 and 1.1 s of motion: with the reported force on the rocker at D, the pin forces
    at C, B and A follow from m a = sum F on rocker, coupler and crank in turn; the three moment
    equations I alpha = sum M left over must then hold (the rocker's involves only the loop
    reaction, gravity and its own motion).  Accelerations come from the hand-written planar
    kinematics of the joint angles, rates and accelerations."""
    sim = Simulator(repo / "urdf/four_bar.urdf", cache_dir=cache_dir)
    sim.set_efforts({"crank_joint": effort})
    weight = np.array([0.0, 0.0, -FB_MASS * G])
    for duration in (0.3, 0.4, 0.4):
        sim.advance(duration)
        out, q, u, udot = four_bar_state(sim)
        phi, omega, alpha, pins, pin_acc = four_bar_links(q, u, udot)
        centres = [pins[k] + FB_LENGTHS[k] / 2 * unit(phi[k]) for k in range(3)]
        acc = [pin_acc[k] + FB_LENGTHS[k] / 2 * (alpha[k] * unit_rate(phi[k]) - omega[k] ** 2 * unit(phi[k]))
               for k in range(3)]
        reaction = out.reactions["rocker_pin"]
        at_d = reaction.force  # on the rocker at D, in ground axes (no rpy on the loop origin)
        assert np.abs(reaction.torque).max() < 1e-12 and abs(at_d[1]) < 1e-12  # planar: no such rows
        at_c = FB_MASS * acc[2] - weight - at_d  # on the rocker, from the coupler
        at_b = FB_MASS * acc[1] - weight + at_c  # on the coupler, from the crank
        at_a = FB_MASS * acc[0] - weight + at_b  # on the crank, from the ground
        a, b, c, d = pins
        checks = np.array([
            FB_INERTIA[2] * alpha[2] - moment_y(c - centres[2], at_c) - moment_y(d - centres[2], at_d),
            FB_INERTIA[1] * alpha[1] - moment_y(b - centres[1], at_b) - moment_y(c - centres[1], -at_c),
            FB_INERTIA[0] * alpha[0] - moment_y(a - centres[0], at_a) - moment_y(b - centres[0], -at_b) - effort,
        ])
        scale = 4.0 * max(np.abs(f).max() for f in (at_a, at_b, at_c, at_d, weight))
        print(f"t = {sim.time:.1f}: |F_D| = {np.linalg.norm(at_d):.3f} N, moment residuals / scale "
              f"{np.abs(checks).max() / scale:.1e}")
        assert np.abs(at_d).max() > 1.0 and np.abs(pins[3] - FB_D).max() < 1e-9
        assert np.abs(checks).max() < 1e-9 * scale


# -- enabling a ball joint between two moving free bodies (test/urdf/loop_two_bodies.urdf) -------
BODIES = {  # mass, mass centre and inertia about it in the body frame, joint-frame origin, ball point
    "a": (1.5, np.array([0.1, 0.05, -0.02]),
          np.array([[0.02, 0.003, 0.001], [0.003, 0.035, -0.002], [0.001, -0.002, 0.045]]),
          np.zeros(3), np.array([0.5, 0.1, 0.0])),
    "b": (3.0, np.array([-0.1, 0.2, 0.05]),
          np.array([[0.12, -0.01, 0.004], [-0.01, 0.08, 0.006], [0.004, 0.006, 0.15]]),
          np.array([1.0, 0.0, 0.0]), np.array([-0.5, 0.1, 0.0])),
}


def quaternion_matrix(qw, qx, qy, qz):
    return np.array([[1 - 2 * (qy**2 + qz**2), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)],
                     [2 * (qx * qy + qw * qz), 1 - 2 * (qx**2 + qz**2), 2 * (qy * qz - qw * qx)],
                     [2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx**2 + qy**2)]])


def rigid_bodies(sim, q, u):
    """Per body: mass, world inertia about the mass centre, mass-centre position and velocity,
    world angular velocity, ball point and its velocity; from the state alone."""
    bodies = {}
    for key, (mass, com, inertia, origin, point) in BODIES.items():
        qi = [sim.coordinate_names.index(f"float_{key}_{c}") for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
        ui = [sim.speed_names.index(f"float_{key}_{s}") for s in ("vx", "vy", "vz", "wx", "wy", "wz")]
        rotation = quaternion_matrix(*q[qi[3:]])
        position, velocity, omega = origin + q[qi[:3]], u[ui[:3]], rotation @ u[ui[3:]]
        centre, ball = position + rotation @ com, position + rotation @ point
        bodies[key] = dict(mass=mass, inertia=rotation @ inertia @ rotation.T, centre=centre,
                           velocity=velocity + np.cross(omega, centre - position), omega=omega,
                           ball=ball, ball_velocity=velocity + np.cross(omega, ball - position),
                           rotation=rotation, position=position, q=qi, u=ui)
    return bodies


def momenta(bodies):
    """Linear momentum, angular momentum about the world origin, kinetic energy."""
    linear = sum(b["mass"] * b["velocity"] for b in bodies.values())
    angular = sum(b["mass"] * np.cross(b["centre"], b["velocity"]) + b["inertia"] @ b["omega"] for b in bodies.values())
    kinetic = sum(0.5 * b["mass"] * b["velocity"] @ b["velocity"] + 0.5 * b["omega"] @ b["inertia"] @ b["omega"]
                  for b in bodies.values())
    return linear, angular, kinetic


def skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def ball_impulse(bodies):
    """Rigid-body impulse equations: the impulse P on b at the ball point (-P on a) that leaves no
    relative velocity there.  Returns each body's mass-centre velocity and world angular velocity
    afterwards."""
    k = np.zeros((3, 3))
    for b in bodies.values():
        arm = skew(b["ball"] - b["centre"])
        k += np.eye(3) / b["mass"] - arm @ np.linalg.solve(b["inertia"], arm)
    impulse = np.linalg.solve(k, -(bodies["b"]["ball_velocity"] - bodies["a"]["ball_velocity"]))
    after = {}
    for key, sign in (("a", -1.0), ("b", 1.0)):
        b = bodies[key]
        after[key] = (b["velocity"] + sign * impulse / b["mass"],
                      b["omega"] + sign * np.linalg.solve(b["inertia"], np.cross(b["ball"] - b["centre"], impulse)))
    return after


SPEEDS = {"float_a_vx": 0.3, "float_a_vy": -0.2, "float_a_vz": 0.1, "float_a_wx": 1.0, "float_a_wy": 0.5,
          "float_a_wz": -0.7, "float_b_vx": -0.4, "float_b_vy": 0.6, "float_b_vz": 0.2, "float_b_wx": -0.3,
          "float_b_wy": 1.2, "float_b_wz": 0.8}


def fly_apart_and_meet(sim):
    """With the ball joint disabled, the bodies fly for 0.5 s from the zero configuration (they
    turn to generic orientations and separate); body b is then translated so the ball points meet
    again, leaving nothing for the position projection to do when the joint is enabled."""
    sim.set_constraint_enabled("ball", False)
    sim.set_state(q=sim.q, u=[SPEEDS[name] for name in sim.speed_names])
    sim.advance(0.5)
    q, u = sim.q, sim.u
    bodies = rigid_bodies(sim, q, u)
    assert np.linalg.norm(bodies["b"]["ball"] - bodies["a"]["ball"]) > 0.1  # they did fly apart
    q[bodies["b"]["q"][:3]] += bodies["a"]["ball"] - bodies["b"]["ball"]
    sim.set_state(q=q, u=u)
    assert np.abs(sim.constraint_errors()["ball"].position).max() < 1e-14


def test_enabling_a_ball_joint_between_moving_bodies_keeps_their_momentum(repo, cache_dir):
    """Enabled between two bodies whose ball points meet but move apart, the joint's speed jump is
    the one the rigid-body impulse equations give; linear and angular momentum are kept (an
    inelastic engagement: the kinetic energy drops) and the ball points move together.  The
    least-norm correction of the speeds, which satisfies the constraint too, would not keep the
    momentum: the check has teeth."""
    sim = Simulator(repo / "test/urdf/loop_two_bodies.urdf", cache_dir=cache_dir)
    assert sim.constraints == ["ball"]
    fly_apart_and_meet(sim)
    q, u = sim.q, sim.u
    before = rigid_bodies(sim, q, u)
    linear, angular, kinetic = momenta(before)
    expected = ball_impulse(before)
    b = sim.model.buffers  # (evaluate() loads its arguments into the simulator's state buffers: pass them)
    evaluated = sim.model.evaluate(b.q, b.u, b.inputs, b.params, sim.time)
    matrix, bias = evaluated["constraint_matrix"], evaluated["constraint_bias"][:, 0]
    np.testing.assert_array_equal(sim.q, q)
    sim.set_constraint_enabled("ball", True)
    assert np.abs(sim.q - q).max() == 0.0  # no position correction
    after = rigid_bodies(sim, sim.q, sim.u)
    linear_after, angular_after, kinetic_after = momenta(after)
    jump = max(max(np.abs(after[k]["velocity"] - expected[k][0]).max(),
                   np.abs(after[k]["omega"] - expected[k][1]).max()) for k in "ab")
    print(f"ball joint enabled: |dp|/|p| {np.linalg.norm(linear_after - linear) / np.linalg.norm(linear):.1e}, "
          f"|dH|/|H| {np.linalg.norm(angular_after - angular) / np.linalg.norm(angular):.1e}, "
          f"impulse model {jump:.1e}, KE {kinetic:.4f} -> {kinetic_after:.4f} J")
    assert np.linalg.norm(linear_after - linear) < 1e-12 * np.linalg.norm(linear)
    assert np.linalg.norm(angular_after - angular) < 1e-12 * np.linalg.norm(angular)
    assert jump < 1e-12
    assert np.abs(after["b"]["ball_velocity"] - after["a"]["ball_velocity"]).max() < 1e-12
    assert kinetic_after < kinetic - 0.1

    least_norm = u - matrix.T @ np.linalg.solve(matrix @ matrix.T, matrix @ u + bias)
    other = rigid_bodies(sim, q, least_norm)
    assert np.abs(other["b"]["ball_velocity"] - other["a"]["ball_velocity"]).max() < 1e-12
    print(f"least-norm instead: |dp|/|p| {np.linalg.norm(momenta(other)[0] - linear) / np.linalg.norm(linear):.2f}")
    assert np.linalg.norm(momenta(other)[0] - linear) > 0.1 * np.linalg.norm(linear)


def joined_drift(sim, seconds: float) -> float:
    """Largest relative change of linear momentum, angular momentum and kinetic energy over
    `seconds` of RK4 (no gravity, no loads: all three are constants of the joined motion)."""
    start = momenta(rigid_bodies(sim, sim.q, sim.u))
    drift = 0.0
    for _ in range(round(seconds / 0.1)):
        sim.advance(0.1)
        now = momenta(rigid_bodies(sim, sim.q, sim.u))
        drift = max(drift, *(np.linalg.norm(np.atleast_1d(n - s)) / np.linalg.norm(np.atleast_1d(s))
                             for n, s in zip(now, start)))
        assert sim.outputs().position_error < 1e-10
    return drift


def test_bodies_joined_in_flight_keep_momentum_and_energy(repo, cache_dir):
    """After the engagement above, 1 s of RK4 with the joint enforced: the constraint forces are
    internal and workless, so momentum, angular momentum and kinetic energy stay."""
    sim = Simulator(repo / "test/urdf/loop_two_bodies.urdf", cache_dir=cache_dir)
    fly_apart_and_meet(sim)
    sim.set_constraint_enabled("ball", True)
    drift = joined_drift(sim, 1.0)
    print(f"joined in flight, 1 s: momentum and energy drift {drift:.1e}")
    assert drift < 1e-9


def test_bodies_joined_from_the_start_keep_momentum_and_energy_for_five_seconds(repo, cache_dir):
    """Ball joint enforced from the zero configuration, twice the speeds above (projected onto the
    joint), 5 s of RK4: momentum, angular momentum and kinetic energy stay."""
    sim = Simulator(repo / "test/urdf/loop_two_bodies.urdf", cache_dir=cache_dir)
    sim.set_state(q=sim.q, u=[2 * SPEEDS[name] for name in sim.speed_names])
    assert joined_drift(sim, 5.0) < 1e-9
