"""DC motors and rolling wheels (urdf/diff_drive.urdf, seed 002's differential drive) against
references that do not come from mb_sim.

The main reference is the robot reduced by hand: its kinetic energy summed link by link (the body,
and two wheels as solid cylinders whose inertias follow from their radius, width and mass) in the
body-frame speeds (forward v, sideways s, yaw rate w and the two wheel speeds), SymPy for the mass
matrix; the contact conditions written out (contact point velocity v +- b w - r omega along the
heading, s sideways); the armature circuit ``L i' = V - R i - K omega`` and the motor torque
``K i`` on the wheel speed.  Its electromechanical part is linear with constant coefficients and is
solved exactly (matrix exponential); the path ``x' = v cos theta, y' = v sin theta, theta' = w`` is
integrated by scipy (Radau on the whole model, or DOP853 on top of the exact speeds).  Other
references: the analytic steady state (wheel speeds V/K, circle radius b (V_R + V_L)/(V_R - V_L)),
the mirror symmetry of equal voltages, the analytic RL current rise, the energy balance of the
electrical power (electrical work = resistive loss + magnetic energy + kinetic energy),
Newton-Euler for the ground's friction forces, the free wheel's own spin equation, and the impulse
equations of a wheel gripping the ground again (the mass-weighted projection computed by hand).
Nothing is read back from mb_sim's model but the state, its rates and the reported outputs.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import simpson, solve_ivp
from scipy.linalg import expm

from mb_sim.sim import Simulator

# -- the robot, by hand (urdf/diff_drive.urdf's header comment: seed 002's values) ---------------
R_WHEEL, WIDTH, M_WHEEL = 0.15, 0.15, 2.0  # wheels: solid cylinders [m, m, kg]
HALF_TRACK = 0.6  # b: wheel centres at body y = -b (right) and +b (left) [m]
M_BODY, IZZ_BODY = 50.0, 5.0  # centre of mass on the axle midpoint
J_SPIN = M_WHEEL * R_WHEEL**2 / 2  # about the axle: 0.0225
J_ACROSS = M_WHEEL * (3 * R_WHEEL**2 + WIDTH**2) / 12  # about a diameter: 0.015
K_T, R_A, L_A = 1.0, 0.05, 1e-4  # motors: N m/A, ohm, H (gear 1, no rotor inertia or friction)
M_TOT = M_BODY + 2 * M_WHEEL  # 54 kg
I_TOT = IZZ_BODY + 2 * J_ACROSS + 2 * M_WHEEL * HALF_TRACK**2  # 6.47 kg m^2 about the vertical
RIGHT, LEFT = "right_motor", "left_motor"
CONTACTS = ("right_wheel_contact", "left_wheel_contact")

#: Body-frame speeds of the hand model: forward, sideways, yaw rate, right and left wheel speeds.
SPEEDS = sp.symbols("v s w omega_R omega_L")


def _kinetic_energy() -> sp.Expr:
    """Body plus wheels; a wheel at body y = side*b moves with v_body + w z x (side b y) and turns
    with (0, omega, w) in the body axes (its principal axes: J_ACROSS, J_SPIN, J_ACROSS)."""
    v, s, w, omega_r, omega_l = SPEEDS
    energy = M_BODY * (v**2 + s**2) / 2 + IZZ_BODY * w**2 / 2
    for side, omega in ((-1, omega_r), (1, omega_l)):
        centre = sp.Matrix([v, s, 0]) + sp.Matrix([0, 0, w]).cross(sp.Matrix([0, side * HALF_TRACK, 0]))
        energy += M_WHEEL * centre.dot(centre) / 2 + (J_SPIN * omega**2 + J_ACROSS * w**2) / 2
    return sp.expand(energy)


KINETIC = _kinetic_energy()
MASS = np.array(sp.hessian(KINETIC, SPEEDS), dtype=float)  # constant: the energy is quadratic
kinetic_energy = sp.lambdify(SPEEDS, KINETIC, "numpy")

#: Contact point velocities as rows on SPEEDS: the rim point below a wheel centre at body y = -+b
#: moves with the centre's (v +- b w, s) plus (0, omega, w) x (0, 0, -r) = (-r omega, 0): along the
#: heading and sideways, right wheel then left.
CONTACT_ROWS = np.array([
    [1.0, 0.0, HALF_TRACK, -R_WHEEL, 0.0],   # right: v + b w - r omega_R
    [0.0, 1.0, 0.0, 0.0, 0.0],               # right: s
    [1.0, 0.0, -HALF_TRACK, 0.0, -R_WHEEL],  # left:  v - b w - r omega_L
    [0.0, 1.0, 0.0, 0.0, 0.0],               # left:  s (the same condition: the masked row)
])
#: SPEEDS = map @ reduced speeds.  Both wheels rolling: (omega_R, omega_L).
ROLLING = np.array([[R_WHEEL / 2, R_WHEEL / 2], [0, 0], [R_WHEEL / (2 * HALF_TRACK), -R_WHEEL / (2 * HALF_TRACK)],
                    [1, 0], [0, 1]])
#: The left wheel slipping freely, the right one rolling: (omega_R, w, omega_L), v = r omega_R - b w.
LEFT_FREE = np.array([[R_WHEEL, -HALF_TRACK, 0], [0, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]])


class ReducedModel:
    """The robot reduced to `speeds_map`'s speeds, with motor voltages `voltages` held constant.

    Electromechanical state e = (reduced speeds, currents) (no currents for ``inductance=0``,
    where i = (V - K omega)/R): ``e' = A e + B``, linear; the mass matrix is ``G^T MASS G`` and a
    motor's torque K i acts on its wheel speed (power K i omega), so the generalized force is
    ``G^T E K i``.  The full state is (x, y, theta, e).
    """

    def __init__(self, speeds_map: np.ndarray, voltages, inductance: float = L_A) -> None:
        self.G, self.n, self.L = speeds_map, speeds_map.shape[1], inductance
        self.V = np.asarray(voltages, dtype=float)
        self.mass = speeds_map.T @ MASS @ speeds_map
        wheels = np.zeros((5, 2))
        wheels[3, 0] = wheels[4, 1] = 1.0
        self.drive = np.linalg.solve(self.mass, speeds_map.T @ wheels) * K_T  # reduced speeds' rates per ampere
        self.wheels = wheels.T @ speeds_map  # wheel speeds from the reduced speeds
        n = self.n
        if inductance > 0:
            self.A = np.block([[np.zeros((n, n)), self.drive],
                               [-K_T / inductance * self.wheels, -R_A / inductance * np.eye(2)]])
            self.B = np.concatenate([np.zeros(n), self.V / inductance])
        else:
            self.A = -self.drive @ self.wheels * K_T / R_A
            self.B = self.drive @ self.V / R_A
        m = len(self.B)
        self.augmented = np.zeros((m + 1, m + 1))
        self.augmented[:m, :m], self.augmented[:m, m] = self.A, self.B

    def currents(self, e: np.ndarray) -> np.ndarray:
        return e[self.n:] if self.L > 0 else (self.V - K_T * self.wheels @ e[:self.n]) / R_A

    def body_speeds(self, e: np.ndarray) -> np.ndarray:
        """(v, s, w, omega_R, omega_L)."""
        return self.G @ e[:self.n]

    def electromechanics(self, t: float, e0: np.ndarray) -> np.ndarray:
        """Exact: e(t) from e(0) = e0 (the voltages are constant)."""
        return (expm(self.augmented * t) @ np.append(e0, 1.0))[:-1]

    def rates(self, t: float, state: np.ndarray) -> np.ndarray:
        theta, e = state[2], state[3:]
        v, s, w = self.body_speeds(e)[:3]
        c, sn = np.cos(theta), np.sin(theta)
        return np.concatenate([[v * c - s * sn, v * sn + s * c, w], self.A @ e + self.B])

    def jacobian(self, t: float, state: np.ndarray) -> np.ndarray:
        theta, e = state[2], state[3:]
        v, s, _ = self.body_speeds(e)[:3]
        c, sn = np.cos(theta), np.sin(theta)
        jac = np.zeros((len(state), len(state)))
        jac[0, 2], jac[1, 2] = -v * sn - s * c, v * c - s * sn
        speeds = self.G[:3, :] @ np.eye(len(e))[:self.n]  # (v, s, w) from e
        jac[0, 3:] = c * speeds[0] - sn * speeds[1]
        jac[1, 3:] = sn * speeds[0] + c * speeds[1]
        jac[2, 3:] = speeds[2]
        jac[3:, 3:] = self.A
        return jac

    def solve_radau(self, duration: float, state0: np.ndarray, tol: float = 1e-12):
        """The whole model by Radau (analytic Jacobian); dense solution t -> state."""
        solution = solve_ivp(self.rates, (0.0, duration), state0, method="Radau", jac=self.jacobian, rtol=tol,
                             atol=tol, dense_output=True)
        assert solution.success, solution.message
        return solution.sol

    def solve_exact(self, duration: float, state0: np.ndarray):
        """The electromechanics exactly, the path by DOP853 on top of it; t -> state."""
        e0 = np.asarray(state0[3:], dtype=float)

        def pose_rates(t, pose):
            return self.rates(t, np.concatenate([pose, self.electromechanics(t, e0)]))[:3]

        path = solve_ivp(pose_rates, (0.0, duration), state0[:3], method="DOP853", rtol=1e-12, atol=1e-12,
                         dense_output=True)
        assert path.success, path.message
        return lambda t: np.concatenate([path.sol(t), self.electromechanics(t, e0)])


# -- reading the simulator -----------------------------------------------------------------------
def sim_state(sim: Simulator):
    """(x, y, theta), body-frame speeds (v, s, w, omega_R, omega_L), and the motor currents."""
    out = sim.outputs(dynamics=False)
    p, u = out.positions, out.velocities
    theta = p["base_joint_theta"]
    vx, vy = u["base_joint_vx"], u["base_joint_vy"]
    speeds = np.array([vx * np.cos(theta) + vy * np.sin(theta), -vx * np.sin(theta) + vy * np.cos(theta),
                       u["base_joint_w"], u["right_wheel_joint_u"], u["left_wheel_joint_u"]])
    currents = np.array([out.motors[RIGHT].current, out.motors[LEFT].current])
    return np.array([p["base_joint_x"], p["base_joint_y"], theta]), speeds, currents


def reduced_state(sim: Simulator, model: ReducedModel) -> np.ndarray:
    """The simulator's state as the reduced model's (x, y, theta, e) (its speeds must fit)."""
    pose, speeds, currents = sim_state(sim)
    reduced = np.linalg.lstsq(model.G, speeds, rcond=None)[0]
    assert np.allclose(model.G @ reduced, speeds, atol=1e-9), "the state does not satisfy the model's constraints"
    return np.concatenate([pose, reduced, currents if model.L > 0 else []])


def contact_velocities(sim: Simulator) -> dict[str, np.ndarray]:
    """Each wheel's contact point velocity along its rolling direction and its axle [m/s]: its rows'
    velocity residuals (slip velocities over the radius, mb_sim.model.wheels) times the radius."""
    return {name: errors.velocity * R_WHEEL for name, errors in sim.constraint_errors().items()}


def with_inductance(repo, inductance: str) -> str:
    text = (repo / "urdf/diff_drive.urdf").read_text()
    assert text.count('inductance="1e-4"') == 2
    return text.replace('inductance="1e-4"', f'inductance="{inductance}"')


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


@pytest.fixture(scope="module")
def robot(repo):
    return repo / "urdf/diff_drive.urdf"


def test_the_hand_model_is_consistent():
    """The reference checked on its own: the SymPy mass matrix is the closed form of the brief
    (m_tot, I_tot, J_w in the rolling speeds), and the reduced speed maps satisfy their contact
    conditions."""
    a, c = M_TOT * R_WHEEL**2 / 4, I_TOT * R_WHEEL**2 / (4 * HALF_TRACK**2)
    closed_form = np.array([[a + c + J_SPIN, a - c], [a - c, a + c + J_SPIN]])
    assert np.allclose(ROLLING.T @ MASS @ ROLLING, closed_form, rtol=1e-14, atol=0)
    assert (J_SPIN, J_ACROSS, I_TOT) == pytest.approx((0.0225, 0.015, 6.47), rel=1e-14)
    assert np.abs(CONTACT_ROWS @ ROLLING).max() == 0.0
    assert np.abs(CONTACT_ROWS[:2] @ LEFT_FREE).max() < 1e-15


def test_equal_voltages_drive_straight(robot, cache_dir):
    """20 V on both motors for 10 s (RK4, 1 ms): by mirror symmetry the robot keeps its heading
    and its line (|y| < 1e-9 m, |theta| < 1e-12), at the analytic steady speed r V/K = 3 m/s."""
    sim = Simulator(robot, cache_dir=cache_dir)
    assert sim.motors == [RIGHT, LEFT] and len(sim.electrical_state_names) == 2
    sim.set_voltages({RIGHT: 20.0, LEFT: 20.0})
    sim.advance(10.0)
    pose, speeds, _ = sim_state(sim)
    print(f"straight: y {pose[1]:.1e} m, theta {pose[2]:.1e}, x {pose[0]:.4f} m")
    assert abs(pose[1]) < 1e-9 and abs(pose[2]) < 1e-12
    assert speeds[0] == pytest.approx(R_WHEEL * 20.0 / K_T, rel=1e-12)
    assert pose[0] > 29.0  # it went: about 3 m/s for 10 s less the start-up


def test_unequal_voltages_settle_on_the_analytic_circle(robot, cache_dir):
    """24 V right, 20 V left: after the transients (t = 10 s) the wheels turn at V/K, the currents
    vanish (no load, no friction), and the robot runs on the circle of radius
    b (V_R + V_L)/(V_R - V_L) = 6.6 m around a fixed centre (the same seen at 5 s and 10 s)."""
    sim = Simulator(robot, cache_dir=cache_dir)
    sim.set_voltages({RIGHT: 24.0, LEFT: 20.0})
    centres = []
    for _ in range(2):
        sim.advance(5.0)
        pose, speeds, currents = sim_state(sim)
        radius = speeds[0] / speeds[2]
        centres.append(pose[:2] + radius * np.array([-np.sin(pose[2]), np.cos(pose[2])]))
    print(f"circle: radius - 6.6 = {radius - 6.6:.1e} m, wheel speeds - V/K {speeds[3:] - [24, 20]}, "
          f"currents {currents}, centre moved {np.linalg.norm(centres[1] - centres[0]):.1e} m")
    assert speeds[3:] == pytest.approx([24.0, 20.0], abs=1e-9)
    assert np.abs(currents).max() < 1e-9
    assert abs(radius - HALF_TRACK * 44.0 / 4.0) < 1e-6
    assert speeds[0] == pytest.approx(3.3, rel=1e-12) and speeds[2] == pytest.approx(0.5, rel=1e-12)
    assert abs(speeds[1]) < 1e-12
    assert np.linalg.norm(centres[1] - centres[0]) < 1e-6


def test_path_follows_the_hand_derived_reduced_model(robot, cache_dir):
    """Seven states (x, y, theta, omega_R, omega_L, i_R, i_L), Radau at rtol = atol = 1e-12: the
    simulator (RK4, 1 ms) is within 1e-6 m of its path after 10 s, the wheel speeds within 1e-4
    rad/s and the currents within 2e-3 A (of 480 A at stall) all along; halving dt divides the
    path error by about 2^4 = 16 (RK4's order: the remaining error is the integrator's, not a
    different model)."""
    model = ReducedModel(ROLLING, [24.0, 20.0])
    reference = model.solve_radau(10.0, np.zeros(7))
    exact = model.electromechanics(10.0, np.zeros(4))
    assert np.abs(reference(10.0)[3:] - exact).max() < 1e-9  # Radau agrees with the exact electromechanics
    errors = {}
    for dt in (1e-3, 5e-4):
        sim = Simulator(robot, dt=dt, cache_dir=cache_dir)
        sim.set_voltages({RIGHT: 24.0, LEFT: 20.0})
        speed_error = current_error = 0.0
        for _ in range(100):  # the first second, where the transients are
            sim.advance(0.01)
            _, speeds, currents = sim_state(sim)
            expected = reference(sim.time)
            speed_error = max(speed_error, np.abs(speeds[3:] - expected[3:5]).max())
            current_error = max(current_error, np.abs(currents - expected[5:]).max())
        sim.advance(9.0)
        pose, _, _ = sim_state(sim)
        errors[dt] = (np.abs(pose - reference(10.0)[:3]).max(), speed_error, current_error)
        print(f"reduced model, dt {dt}: path {errors[dt][0]:.1e} m, speeds {speed_error:.1e} rad/s, "
              f"currents {current_error:.1e} A")
    path, speed_error, current_error = errors[1e-3]
    assert path < 1e-6 and speed_error < 1e-4 and current_error < 2e-3
    assert 10.0 < path / errors[5e-4][0] < 25.0


def test_quasi_static_and_inductive_motors(repo, cache_dir):
    """The same robot with inductance 0 (no current state, i = (V - K omega)/R) and 1e-4 H, same
    voltages.  In the first milliseconds they differ: the inductive current rises as
    i = V/R (1 - exp(-t R/L)) less what the back EMF takes, between V/R (1 - e) - K omega/R (1 - e)
    and V/R (1 - e) (omega rising), and matches the exact linear solution; the quasi-static one
    starts near the stall current.  From 0.5 s on speeds agree to 1e-4 rad/s and currents to
    1e-4 A (absolute): that is the common steady state (the currents themselves are then below
    1e-4 A).  In between they do not: L/R = 2 ms is not small against the mechanical time constants
    (the reduced models' slow eigenvalues are -31.7 and -89 /s without inductance, -34 and -116 /s
    with it), so the currents differ by tens of amperes during the mechanical transient, as each
    simulator follows its own reduced model all along: speeds within 1e-4 rad/s, currents within
    2e-3 A (RK4 at 1 ms, as in the test above)."""
    quasi = Simulator(with_inductance(repo, "0"), cache_dir=cache_dir)
    inductive = Simulator(repo / "urdf/diff_drive.urdf", cache_dir=cache_dir)
    assert quasi.electrical_state_names == [] and len(inductive.electrical_state_names) == 2
    voltages = np.array([24.0, 20.0])
    models = {}
    for sim, inductance in ((quasi, 0.0), (inductive, L_A)):
        sim.set_voltages(dict(zip((RIGHT, LEFT), voltages)))
        models[inductance] = ReducedModel(ROLLING, voltages, inductance)
    speed_error = current_error = speed_gap = current_gap = transient_gap = 0.0

    def compare_with_reduced_models():
        nonlocal speed_error, current_error
        for sim, inductance in ((quasi, 0.0), (inductive, L_A)):
            model = models[inductance]
            _, speeds, currents = sim_state(sim)
            e = model.electromechanics(sim.time, np.zeros(len(model.B)))
            speed_error = max(speed_error, np.abs(speeds[3:] - model.body_speeds(e)[3:]).max())
            current_error = max(current_error, np.abs(currents - model.currents(e)).max())

    for _ in range(3):  # the first 3 ms
        for sim in (quasi, inductive):
            sim.advance(1e-3)
        compare_with_reduced_models()
        t = inductive.time
        _, speeds, currents = sim_state(inductive)
        rise = voltages / R_A * (1.0 - np.exp(-t * R_A / L_A))
        back_emf = K_T * speeds[3:] / R_A * (1.0 - np.exp(-t * R_A / L_A))
        assert np.all(rise - back_emf - 1e-9 <= currents) and np.all(currents <= rise + 1e-9), (t, currents, rise)
        _, _, quasi_currents = sim_state(quasi)
        assert np.all(quasi_currents > 1.1 * currents)  # 463 A against 188 A at 1 ms
        print(f"t = {t * 1e3:.0f} ms: inductive {currents} A, RL rise {rise} A, quasi-static {quasi_currents} A")
    for k in range(100):
        for sim in (quasi, inductive):
            sim.advance(0.01 if k else 0.007)
        compare_with_reduced_models()
        _, speeds_q, currents_q = sim_state(quasi)
        _, speeds_i, currents_i = sim_state(inductive)
        if inductive.time >= 0.5 - 1e-9:
            speed_gap = max(speed_gap, np.abs(speeds_q[3:] - speeds_i[3:]).max())
            current_gap = max(current_gap, np.abs(currents_q - currents_i).max())
        else:
            transient_gap = max(transient_gap, np.abs(currents_q - currents_i).max())
    print(f"from 0.5 s: speeds differ by {speed_gap:.1e} rad/s, currents by {current_gap:.1e} A (up to "
          f"{transient_gap:.1e} A between 10 ms and 0.5 s); vs reduced models: speeds {speed_error:.1e} rad/s, "
          f"currents {current_error:.1e} A")
    assert speed_gap < 1e-4 and current_gap < 1e-4
    assert transient_gap > 10.0
    assert speed_error < 1e-4 and current_error < 2e-3


# Why the currents need the exponential integrator: with R/L = 2e4 /s (L = 2.5e-6 H), plain RK4's
# amplification of the decay i' = -(R/L) i over dt = 1 ms is 1 + z + z^2/2 + z^3/6 + z^4/24 at
# z = -20, that is 5514 per step (unstable beyond |z| = 2.79); the seed's motor (z = -0.5) is
# inside RK4's region.
@pytest.mark.parametrize("inductance", ["2.5e-6", "1e-4"])
def test_stiff_motor_at_one_millisecond(repo, cache_dir, inductance):
    """L/R = 0.05 ms (and the seed's 2 ms) at the default dt = 1 ms with RK4: stable, on the
    analytic steady state after 1 s, and close to the exact solution of the reduced model (and to
    the same URDF run by Radau at rtol = atol = 1e-10, which matches it to ~1e-12).

    Tolerances.  With L/R << dt the current jumps to V/R within the first step; RK4's quadrature of
    the torque over that step (nodes i(0) = 0, i(dt/2) ~ i(dt) ~ V/R, weights 1/6, 4/6, 1/6)
    misses about dt/6 of it, so the wheel speeds lag by up to dt/6 M^-1 K V/R (0.15 and 0.09
    rad/s), an error that then dies out with the mechanical modes (slowest 32 /s): the path error
    is bounded by r times that over 32 /s (7e-4 m).  Measured: 0.09 and 0.06 rad/s at 1 ms,
    1.4e-4 m on the way, 2.4e-5 m at 1 s.  With L/R = 2 ms the current is resolved (dt R/L = 0.5):
    4e-7 m, 4e-5 rad/s, 8e-4 A."""
    L = float(inductance)
    voltages = np.array([24.0, 20.0])
    model = ReducedModel(ROLLING, voltages, L)
    reference = model.solve_exact(1.0, np.zeros(7))
    sim = Simulator(with_inductance(repo, inductance), cache_dir=cache_dir)
    sim.set_voltages(dict(zip((RIGHT, LEFT), voltages)))
    path_error = speed_error = current_error = 0.0
    first_step = None
    for _ in range(1000):
        sim.advance(1e-3)
        pose, speeds, currents = sim_state(sim)
        expected = reference(sim.time)
        assert np.all(np.isfinite(np.concatenate([pose, speeds, currents])))
        path_error = max(path_error, np.abs(pose - expected[:3]).max())
        speed_error = max(speed_error, np.abs(speeds[3:] - expected[3:5]).max())
        current_error = max(current_error, np.abs(currents - expected[5:]).max())
        if first_step is None:
            first_step = np.abs(speeds[3:] - expected[3:5])
    end_error = np.abs(pose - expected[:3]).max()
    print(f"L = {inductance}: first step speeds {first_step} rad/s, worst path {path_error:.1e} m, speeds "
          f"{speed_error:.1e} rad/s, currents {current_error:.1e} A, path at 1 s {end_error:.1e} m")
    assert speeds[3:] == pytest.approx(voltages / K_T, abs=1e-9) and np.abs(currents).max() < 1e-9
    radau = Simulator(with_inductance(repo, inductance), integrator="Radau", rtol=1e-10, atol=1e-10,
                      cache_dir=cache_dir)
    radau.set_voltages(dict(zip((RIGHT, LEFT), voltages)))
    radau.advance(1.0)
    radau_pose, radau_speeds, radau_currents = sim_state(radau)
    radau_error = max(np.abs(radau_pose - expected[:3]).max(), np.abs(radau_speeds[3:] - expected[3:5]).max(),
                      np.abs(radau_currents - expected[5:]).max() / 100)
    rk4_vs_radau = np.abs(np.concatenate([sim.q - radau.q, sim.u - radau.u])).max()
    print(f"L = {inductance}: Radau vs reference {radau_error:.1e}, RK4 vs Radau (q, u) {rk4_vs_radau:.1e}")
    assert radau_error < 1e-9
    if L < 1e-5:
        bound = 1e-3 / 6 * np.abs(model.drive @ voltages / R_A)  # dt/6 M^-1 K V/R
        assert np.all(first_step <= bound)
        assert speed_error <= bound.max()
        assert path_error < R_WHEEL * bound.max() / 31.0 and end_error < 1e-4
        assert rk4_vs_radau < 1e-3  # (wheel angles: the path error over r)
    else:
        assert path_error < 1e-6 and speed_error < 1e-4 and current_error < 2e-3
        assert rk4_vs_radau < 1e-5


def test_released_wheel_slips_spins_freely_and_grips_again(robot, cache_dir):
    """Straight at 20 V (steady, 3 m/s), then the left wheel's contact released and both motors at
    30 V for 0.5 s: the robot follows the hand model with the left wheel slipping (right wheel
    rolling, v = r omega_R - b w; the free left wheel's spin decoupled: J_w omega_L' = K i_L), so it
    turns (only the right wheel pushes) and the left wheel spins up to V/K = 30 rad/s although its
    centre does not move at r omega_L: its contact point slides, at the velocity the hand model
    gives.  Enabling the contact again is an inelastic engagement: the speeds jump to the
    mass-weighted projection onto the three contact conditions (computed here from the hand mass
    matrix), the kinetic energy drops by 1/2 du^T M du (Carnot), the currents and pose are kept,
    and the robot rolls on as the two-wheel model says, straight again at the end."""
    sim = Simulator(robot, cache_dir=cache_dir)
    sim.set_voltages({RIGHT: 20.0, LEFT: 20.0})
    sim.advance(1.0)
    sim.set_constraint_enabled("left_wheel_contact", False)
    assert not sim.constraint_enabled("left_wheel_contact") and sim.constraint_enabled("right_wheel_contact")
    sim.set_voltages({RIGHT: 30.0, LEFT: 30.0})
    free = ReducedModel(LEFT_FREE, [30.0, 30.0])
    start, t0 = reduced_state(sim, free), sim.time
    reference = free.solve_exact(0.5, start)
    path_error = slip_error = 0.0
    speed_error, current_error = np.zeros(5), np.zeros(2)
    for _ in range(500):
        sim.advance(1e-3)
        pose, speeds, currents = sim_state(sim)
        expected = reference(sim.time - t0)
        path_error = max(path_error, np.abs(pose - expected[:3]).max())
        speed_error = np.maximum(speed_error, np.abs(speeds - free.body_speeds(expected[3:])))
        current_error = np.maximum(current_error, np.abs(currents - expected[6:]))
        errors = contact_velocities(sim)
        slip = CONTACT_ROWS @ speeds  # contact point velocities along the heading and sideways, by hand
        slip_error = max(slip_error, abs(np.linalg.norm(errors["left_wheel_contact"]) - abs(slip[2])),
                         np.abs(errors["right_wheel_contact"]).max())
    print(f"left wheel slipping: path {path_error:.1e} m, speeds {speed_error} (v s w omega_R omega_L), currents "
          f"{current_error} A, contact velocities {slip_error:.1e}; theta {pose[2]:.3f}, left wheel {speeds[4]:.6f} "
          f"rad/s, left slip {slip[2]:.3f} m/s")
    assert path_error < 1e-6 and speed_error[:4].max() < 1e-4 and current_error[0] < 2e-3 and slip_error < 1e-9
    # The free wheel alone is a fast, lightly damped system: J_w omega' = K i, L i' = V - R i - K omega has
    # eigenvalues -250 +- 631j /s, |lambda dt| = 0.68 at 1 ms, where RK4's relative error per step is about
    # |lambda dt|^5 / 120 = 1.2e-3 of the 10 rad/s (200 A) step: measured 1.4e-2 rad/s and 0.26 A (and 16
    # times less at dt = 0.5 ms: the integrator's error, not the model's).
    assert speed_error[4] < 3e-2 and current_error[1] < 0.5
    assert pose[2] > 0.5 and abs(pose[1]) > 0.1  # turned left, off the straight line y = 0
    assert speeds[4] == pytest.approx(30.0, abs=1e-6)  # spun up freely to V/K
    assert abs(slip[2]) > 1.0  # its centre moves at v - b w, not r omega_L = 4.5 m/s

    before = sim.outputs()
    u_minus = speeds
    rows, inverse = CONTACT_ROWS[:3], np.linalg.inv(MASS)
    u_plus = u_minus - inverse @ rows.T @ np.linalg.solve(rows @ inverse @ rows.T, rows @ u_minus)
    sim.set_constraint_enabled("left_wheel_contact", True)
    pose_after, speeds_after, currents_after = sim_state(sim)
    after = sim.outputs()
    jump = u_plus - u_minus
    print(f"engagement: speeds {speeds_after} (hand {u_plus}), energy lost "
          f"{before.kinetic_energy - after.kinetic_energy:.6f} J (hand {0.5 * jump @ MASS @ jump:.6f} J)")
    assert np.abs(speeds_after - u_plus).max() < 1e-9
    assert np.array_equal(pose_after, pose) and np.array_equal(currents_after, currents)
    assert before.kinetic_energy - after.kinetic_energy == pytest.approx(0.5 * jump @ MASS @ jump, rel=1e-9)
    assert max(np.abs(v).max() for v in contact_velocities(sim).values()) < 1e-12

    rolling = ReducedModel(ROLLING, [30.0, 30.0])
    start, t0 = reduced_state(sim, rolling), sim.time
    reference = rolling.solve_exact(2.0, start)
    residual = path_error = speed_error = 0.0
    for _ in range(200):
        sim.advance(0.01)
        pose, speeds, _ = sim_state(sim)
        expected = reference(sim.time - t0)
        path_error = max(path_error, np.abs(pose - expected[:3]).max())
        speed_error = max(speed_error, np.abs(speeds[3:] - expected[3:5]).max())
        residual = max(residual, *(np.abs(v).max() for v in contact_velocities(sim).values()))
    print(f"rolling again: path {path_error:.1e} m, wheel speeds {speed_error:.1e} rad/s, contact velocities "
          f"{residual:.1e}, w {speeds[2]:.1e}")
    # The engagement leaves the left wheel 14 rad/s below its back-EMF equilibrium: a 280 A current
    # transient, RK4's error on it 1.6e-6 m (1.2e-7 m at dt = 0.5 ms: fourth order).
    assert path_error < 5e-6 and speed_error < 1e-4 and residual < 1e-12
    assert abs(speeds[2]) < 1e-9 and speeds[3:] == pytest.approx([30.0, 30.0], abs=1e-9)


def test_electrical_energy_balances_losses_magnetic_and_kinetic_energy(robot, cache_dir):
    """sum int V i dt = int R i^2 dt + [L i^2 / 2] + [kinetic energy] over 0.15 s at 24/20 V and
    0.15 s at -10/30 V (the right motor braking: it returns energy).  RK4 at dt = 0.1 ms, sampled
    every step, Simpson's rule per segment (the powers are smooth within one; their fastest
    scale is L/R = 2 ms, 20 samples: Simpson's error ~ (h/tau)^4/180 = 3.5e-8 relative).  The
    kinetic energy is the hand formula on the sampled speeds (the simulator's own output agrees
    with it).  Measured residual: 3e-8 of the 657 J delivered; asserted 1e-6."""
    dt = 1e-4
    sim = Simulator(robot, dt=dt, cache_dir=cache_dir)
    assert sim.electrical_state_names == ["right_motor_i", "left_motor_i"]
    delivered = lost = returned = 0.0
    energy_start = kinetic_energy(*sim_state(sim)[1])
    for voltages in ([24.0, 20.0], [-10.0, 30.0]):
        sim.set_voltages(dict(zip((RIGHT, LEFT), voltages)))
        trajectory = sim.simulate(0.15, 1)
        currents = trajectory.z
        power = currents @ np.array(voltages)
        delivered += simpson(power, x=trajectory.times)
        returned += simpson(np.minimum(power, 0.0), x=trajectory.times)
        lost += simpson(R_A * (currents**2).sum(axis=1), x=trajectory.times)
    magnetic = L_A * (currents[-1] ** 2).sum() / 2  # from zero current
    _, speeds, _ = sim_state(sim)
    kinetic = kinetic_energy(*speeds) - energy_start
    residual = delivered - lost - magnetic - kinetic
    print(f"energy: delivered {delivered:.6f} J (of which {returned:.3f} J returned), lost {lost:.6f} J, "
          f"magnetic {magnetic:.6f} J, kinetic {kinetic:.6f} J, residual {residual:.2e} J "
          f"({residual / delivered:.1e} relative)")
    assert sim.outputs().kinetic_energy == pytest.approx(kinetic_energy(*speeds), rel=1e-12)
    assert returned < -1.0 and kinetic > 100.0  # both kinds of power really flowed
    assert abs(residual) < 1e-6 * delivered


def test_wheel_friction_forces_obey_newton_euler(robot, cache_dir):
    """The ground's friction forces on the wheels (world axes, at the contact points), against the
    hand model evaluated at the simulator's state (accelerations from M omega' = K i): their sum is
    M_tot a of the centre of mass (m v' along the heading, m v w towards the centre of the turn),
    their moment about the vertical through the axle midpoint I_tot w', and each wheel's
    component along the heading (K i - J_w omega')/r (its spin equation).  The sideways split
    between the wheels is indeterminate (the masked redundant row) and not checked; the moment is
    (both contact points lie on the axle line, so sideways forces have no arm).  During the
    start-up (5 ms) and on the steady circle (10 s, 24/20 V), where the sum is the centripetal
    force 54 * 3.3 * 0.5 = 89.1 N towards the centre and the moment and the forces along the
    heading vanish."""
    sim = Simulator(robot, cache_dir=cache_dir)
    sim.set_voltages({RIGHT: 24.0, LEFT: 20.0})
    model = ReducedModel(ROLLING, [24.0, 20.0])
    for duration in (0.005, 9.995):
        sim.advance(duration)
        out = sim.outputs()
        pose, speeds, currents = sim_state(sim)
        theta = pose[2]
        to_body = np.array([[np.cos(theta), np.sin(theta), 0.0], [-np.sin(theta), np.cos(theta), 0.0], [0, 0, 1]])
        forces = [to_body @ out.reactions[name].force for name in CONTACTS]  # right, left
        wheel_rates = model.drive @ currents
        v, w = speeds[0], speeds[2]
        v_rate, w_rate = (model.G @ wheel_rates)[[0, 2]]
        expected_sum = np.array([M_TOT * v_rate, M_TOT * v * w, 0.0])
        moment = HALF_TRACK * forces[0][0] - HALF_TRACK * forces[1][0]  # contact points at body y = -b, +b
        along = (K_T * currents - J_SPIN * wheel_rates) / R_WHEEL
        scale = max(np.abs(expected_sum).max(), 1.0)
        error = max(np.abs(forces[0] + forces[1] - expected_sum).max(), abs(moment - I_TOT * w_rate),
                    np.abs([forces[0][0], forces[1][0]] - along).max()) / scale
        print(f"t = {sim.time:g} s: sum of friction forces (body axes) {forces[0] + forces[1]}, hand {expected_sum}, "
              f"moment {moment:.3e} (hand {I_TOT * w_rate:.3e}), relative error {error:.1e}")
        assert error < 1e-9
        for name, current in zip((RIGHT, LEFT), currents):
            assert out.motors[name].torque == pytest.approx(K_T * current, rel=1e-12, abs=1e-12)
    centre = np.array([-np.sin(theta), np.cos(theta)])
    total = sum(out.reactions[name].force for name in CONTACTS)
    assert total[:2] @ centre == pytest.approx(M_TOT * 3.3 * 0.5, rel=1e-9)
    assert abs(moment) < 1e-9 and np.abs(along).max() < 1e-9
