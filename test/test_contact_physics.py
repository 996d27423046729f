"""Physics of the compliant ground contact (mb_sim/model/contact.py) against independent references.

Each check derives its expected numbers here, from the contact law written in the module
docstring of mb_sim/model/contact.py (``f_n = k d^p max(1 + c d', 0)``, friction
``mu f_n v_t / sqrt(|v_t|^2 + v_s^2)``) and textbook mechanics, never from the simulator's model:

* statics: a ball rests at ``d = (m g / k)^(1/p)``;
* impact: apex heights after each bounce against a scipy ``solve_ivp`` integration of the 1-D
  Hunt-Crossley ODE, and the first-order restitution ``e^2 = 1 - (4/3) c v``;
* friction: the stopping distance of a sliding box in closed form for the regularized law, the
  acceleration ``g (sin a - mu cos a)`` on a slope, the creep speed ``v_s r / sqrt(1 - r^2)`` below
  the friction angle;
* rolling: a sphere (cylinder, capsule) launched sliding ends rolling at 5/7 (2/3, 1/(1 + I/(m r^2)))
  of its speed, by conservation of angular momentum about the contact line;
* MuJoCo: the same scenes in MJCF, compared within both models' stated compliance.

The robots are written here as URDF (a ball, a box, a cylinder and a capsule on floating joints, a
box on a tilted ground plane); compiled models are cached per module.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mb_sim.sim import Simulator

G = 9.81  # the URDF reader's default gravity [m/s^2] (checked against each model in `simulator`)

BALL_MASS, BALL_RADIUS, BALL_STIFFNESS = 2.0, 0.1, 20000.0
BOX_MASS, BOX_SIZE, BOX_STIFFNESS = 1.0, (0.2, 0.2, 0.1), 1e5
CYLINDER_MASS, CYLINDER_RADIUS, CYLINDER_LENGTH, CYLINDER_STIFFNESS = 1.0, 0.05, 0.2, 1e5
CAPSULE_MASS, CAPSULE_RADIUS, CAPSULE_LENGTH, CAPSULE_AXIAL_INERTIA = 1.0, 0.04, 0.2, 1e-3
SLOPE = math.radians(20.0)  # the tilted ground's angle to the horizontal


# -- robots ---------------------------------------------------------------------------------------
def floating_urdf(name: str, geometry: str, mass: float, inertia: tuple[float, float, float], ground: str) -> str:
    """A one-link robot on a floating joint: `geometry` its collision shape, `ground` the
    attributes of its ``<ground>``."""
    ixx, iyy, izz = inertia
    return f"""<robot name="{name}">
  <link name="world"/>
  <joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>
  <link name="body">
    <inertial><mass value="{mass}"/>
      <inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry>{geometry}</geometry></collision>
  </link>
  <mb_sim><ground {ground}/></mb_sim>
</robot>
"""


def box_inertia(mass: float, size: tuple[float, float, float]) -> tuple[float, float, float]:
    """Principal moments of a solid box about its centre."""
    a, b, c = size
    return mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12


def critical_damping(stiffness: float, mass: float, points: int, exponent: float = 1.0, ratio: float = 1.0) -> float:
    """Hunt-Crossley c that damps the vertical bounce of `mass` on `points` equal contacts at its
    rest penetration at damping `ratio`: ``points k d0^p c = 2 ratio sqrt(points p k d0^(p-1) mass)``.

    The box and the cylinder use ratio 0.5: at ratio 1 their rocking modes are overdamped with a
    fast eigenvalue near -2.7 / dt at dt = 1 ms, RK4's stability edge (-2.785 / dt), and a box at
    rest then sits in a spurious RK4 limit cycle, creeping at ~1 mm/s."""
    d0 = (mass * G / (points * stiffness)) ** (1 / exponent)
    return (2 * ratio * math.sqrt(points * exponent * stiffness * d0 ** (exponent - 1) * mass)
            / (points * stiffness * d0**exponent))


@pytest.fixture(scope="module")
def cache_dir(model_cache) -> Path:
    return model_cache


@pytest.fixture(scope="module")
def urdf_dir(tmp_path_factory) -> Path:
    """The test robots as URDF files."""
    folder = tmp_path_factory.mktemp("contact_urdf")
    r = BALL_RADIUS
    (folder / "ball.urdf").write_text(floating_urdf(
        "ball", f'<sphere radius="{r}"/>', BALL_MASS, (0.4 * BALL_MASS * r * r,) * 3,
        f'stiffness="{BALL_STIFFNESS}" damping="0" friction="0.5" stick_velocity="0.01" stiction="false"'))
    box_damping = critical_damping(BOX_STIFFNESS, BOX_MASS, 4, ratio=0.5)
    box_ground = f'stiffness="{BOX_STIFFNESS}" damping="{box_damping:.6g}" friction="0.5" stick_velocity="0.01"'
    regularized = ' stiction="false"'  # the law the closed forms below are of (stiction is the default)
    size = " ".join(str(s) for s in BOX_SIZE)
    (folder / "box.urdf").write_text(floating_urdf(
        "box", f'<box size="{size}"/>', BOX_MASS, box_inertia(BOX_MASS, BOX_SIZE), box_ground + regularized))
    normal = f"{-math.sin(SLOPE):.15g} 0 {math.cos(SLOPE):.15g}"
    (folder / "slope.urdf").write_text(floating_urdf(
        "slope", f'<box size="{size}"/>', BOX_MASS, box_inertia(BOX_MASS, BOX_SIZE),
        f'normal="{normal}" ' + box_ground + regularized))
    for name, ground in (("box", box_ground), ("slope", f'normal="{normal}" ' + box_ground)):  # the stiction option
        (folder / f"{name}_stiction.urdf").write_text(floating_urdf(
            f"{name}_stiction", f'<box size="{size}"/>', BOX_MASS, box_inertia(BOX_MASS, BOX_SIZE),
            ground + ' stiction="true"'))
    (folder / "ball_stiction.urdf").write_text(floating_urdf(
        "ball_stiction", f'<sphere radius="{r}"/>', BALL_MASS, (0.4 * BALL_MASS * r * r,) * 3,
        f'stiffness="{BALL_STIFFNESS}" damping="0" friction="0.5" stiction="true"'))
    m, cr, cl = CYLINDER_MASS, CYLINDER_RADIUS, CYLINDER_LENGTH
    side = m * (3 * cr * cr + cl * cl) / 12
    (folder / "cylinder.urdf").write_text(floating_urdf(
        "cylinder", f'<cylinder radius="{cr}" length="{cl}"/>', m, (side, side, m * cr * cr / 2),
        f'stiffness="{CYLINDER_STIFFNESS}" damping="{critical_damping(CYLINDER_STIFFNESS, m, 2, ratio=0.5):.6g}" '
        'friction="0.5" stick_velocity="0.01" stiction="false"'))
    cr, cl, side = CAPSULE_RADIUS, CAPSULE_LENGTH, 0.005  # rolling needs only the axial moment
    (folder / "capsule.urdf").write_text(floating_urdf(
        "capsule", f'<capsule radius="{cr}" length="{cl}"/>', CAPSULE_MASS, (side, side, CAPSULE_AXIAL_INERTIA),
        f'stiffness="{CYLINDER_STIFFNESS}" '
        f'damping="{critical_damping(CYLINDER_STIFFNESS, CAPSULE_MASS, 2, ratio=0.5):.6g}" '
        'friction="0.5" stick_velocity="0.01" stiction="false"'))
    return folder


def simulator(urdf_dir: Path, cache_dir: Path, robot: str, dt: float = 1e-3, **parameters: float) -> Simulator:
    """A fresh simulator of `robot` (compiled once, then from the cache) with ground parameters
    ``ground_<name>`` set from `parameters`."""
    sim = Simulator(urdf_dir / f"{robot}.urdf", dt=dt, cache_dir=cache_dir)
    assert sim.parameter("gravity_g") == pytest.approx(G)
    sim.set_parameters({f"ground_{key}": value for key, value in parameters.items()})
    return sim


def contact_rows(sim: Simulator) -> np.ndarray:
    """The ``contact_states`` output at the current state (one row per feature)."""
    sim.model.evaluate_into(sim.time)
    return np.array(sim.model.layout.view(sim.model.buffers.out, "contact_states"))


def rotation(quaternion) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = np.asarray(quaternion, float) / np.linalg.norm(quaternion)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def world_angular_velocity(sim: Simulator) -> np.ndarray:
    """The floating body's angular velocity in world axes (the joint's speeds are in the body's)."""
    return rotation(sim.q[3:7]) @ sim.u[3:6]


def place(sim: Simulator, position, quaternion=(1.0, 0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
          body_rate=(0.0, 0.0, 0.0)) -> None:
    """Set the floating body's pose and velocity (angular velocity in body axes)."""
    names = ("x", "y", "z", "qw", "qx", "qy", "qz")
    speeds = ("vx", "vy", "vz", "wx", "wy", "wz")
    sim.set_state(positions={f"free_{n}": float(v) for n, v in zip(names, (*position, *quaternion))},
                  velocities={f"free_{n}": float(v) for n, v in zip(speeds, (*velocity, *body_rate))})


# -- 1. statics -----------------------------------------------------------------------------------
@pytest.mark.parametrize("exponent", [1.0, 1.5])
def test_ball_rests_at_its_weight_over_the_stiffness(urdf_dir, cache_dir, exponent):
    """``k d^p = m g`` at rest: d = (m g / k)^(1/p) to 1e-6 m, the reported normal force m g."""
    m, k = BALL_MASS, BALL_STIFFNESS
    expected = (m * G / k) ** (1 / exponent)
    sim = simulator(urdf_dir, cache_dir, "ball", exponent=exponent,
                    damping=critical_damping(k, m, 1, exponent))
    place(sim, (0, 0, BALL_RADIUS))
    sim.advance(2.0)
    penetration = BALL_RADIUS - sim.q[2]
    row = contact_rows(sim)[0]
    print(f"exponent {exponent}: rest penetration {penetration:.9f} m, expected {expected:.9f} m")
    assert penetration == pytest.approx(expected, abs=1e-6)
    assert row[6] == pytest.approx(penetration, abs=1e-12)
    assert row[8] == pytest.approx(m * G, rel=1e-6)
    assert np.allclose(row[9:12], [0, 0, m * G], atol=1e-6 * m * G)


# -- 2. impact ------------------------------------------------------------------------------------
def hunt_crossley(d: float, rate: float, k: float, c: float, p: float) -> float:
    """The normal force law of the module docstring, written out again: ``k d^p max(1 + c d', 0)``."""
    return k * d**p * max(1 + c * rate, 0.0) if d > 0 else 0.0


def reference_apexes(z0: float, k: float, c: float, p: float, count: int, m: float = BALL_MASS,
                     r: float = BALL_RADIUS) -> np.ndarray:
    """Heights of the ball's centre at its first `count` apexes after release at rest from `z0`
    (the release point first), by scipy of ``m z'' = -m g + f_n(r - z, -z')``."""
    def rates(_t, y):
        return [y[1], -G + hunt_crossley(r - y[0], -y[1], k, c, p) / m]

    def apex(_t, y):
        return y[1]
    apex.direction = -1.0
    fall = math.sqrt(2 * (z0 - r) / G)
    period = 2 * math.sqrt(2 * (z0 - r) / G) + 10 * math.sqrt(m / k)
    solution = solve_ivp(rates, (0.0, count * period), [z0, 0.0], method="DOP853", rtol=1e-10, atol=1e-13,
                         events=apex, max_step=min(fall, math.sqrt(m / k)) / 20)
    later = solution.t_events[0] > 1e-9  # not the release itself
    return np.concatenate([[z0], solution.y_events[0][later][:count - 1, 0]])


def simulated_apexes(times: np.ndarray, z: np.ndarray, w: np.ndarray, r: float = BALL_RADIUS) -> np.ndarray:
    """The apex height of each flight phase (z > r) of a sampled bounce: in flight ``z + w^2/(2g)``
    is constant (and RK4 integrates the quadratic flight exactly), so any flight sample gives it."""
    flying = z > r
    starts = np.flatnonzero(flying & ~np.r_[False, flying[:-1]])
    apexes = []
    for start in starts:
        end = start
        while end + 1 < len(z) and flying[end + 1]:
            end += 1
        heights = z[start:end + 1] + w[start:end + 1] ** 2 / (2 * G)
        if end - start >= 2:
            apexes.append(float(np.median(heights)))
    return np.array(apexes)


@pytest.mark.parametrize("dt", [1e-4, 1e-3])
def test_bounce_apexes_match_the_hunt_crossley_ode(urdf_dir, cache_dir, dt):
    """Without friction the ball is the 1-D ODE; its apexes after 3 impacts agree with scipy."""
    k, c, p, z0 = BALL_STIFFNESS, 0.1, 1.0, BALL_RADIUS + 0.05
    sim = simulator(urdf_dir, cache_dir, "ball", dt=dt, damping=c, friction=0.0)
    place(sim, (0, 0, z0))
    trajectory = sim.simulate(0.9)
    got = simulated_apexes(trajectory.times, trajectory.q[:, 2], trajectory.u[:, 2])[:4]
    expected = reference_apexes(z0, k, c, p, 4)
    omega_h = math.sqrt(k / BALL_MASS) * dt
    # RK4 integrates the smooth contact to O((omega h)^5); the error is where the force switches on
    # and off (a kink of slope k v / m in time): Simpson's rule on a kink errs by at most s h^2/24,
    # so each of the two kinks of an impact changes the energy by (omega h)^2 / 12 relatively.
    tolerance = np.arange(4) * omega_h**2 / 6 * (z0 - BALL_RADIUS)
    print(f"dt {dt}: apex heights above contact {got - BALL_RADIUS}, scipy {expected - BALL_RADIUS}, "
          f"error {got - expected}, tolerance {tolerance}")
    assert len(got) == 4
    assert np.all(np.abs(got - expected) <= tolerance + 1e-12)


@pytest.mark.parametrize("c_v", [0.01, 0.02])
def test_restitution_is_first_order_in_damping_times_speed(urdf_dir, cache_dir, c_v):
    """Weightless impact at speed v: e^2 = 1 - (4/3) c v + O((c v)^2).

    Energy lost = c k integral of d d'^2 over the undamped half-period d = (v/w) sin(w t):
    (2/3) c m v^3 out of m v^2 / 2.  The scipy ODE shows the next term is +(4/3)(c v)^2, so the
    first-order formula is held to 2 (c v)^2 (and the RK4 kink error, see above)."""
    v, dt = 1.0, 1e-4
    c = c_v / v
    sim = simulator(urdf_dir, cache_dir, "ball", dt=dt, damping=c, friction=0.0, exponent=1.0)
    sim.set_parameters({"gravity_g": 0.0})
    place(sim, (0, 0, BALL_RADIUS + 1e-3), velocity=(0, 0, -v))
    sim.advance(0.1)  # 1 ms of approach, pi sqrt(m / k) = 31 ms of contact
    assert sim.q[2] > BALL_RADIUS
    e2 = (sim.u[2] / v) ** 2
    omega_h = math.sqrt(BALL_STIFFNESS / BALL_MASS) * dt
    first_order = 1 - 4 / 3 * c_v
    print(f"c v {c_v}: e^2 {e2:.6f}, 1 - (4/3) c v {first_order:.6f}, difference {e2 - first_order:.2e}, "
          f"with (4/3)(c v)^2 {e2 - first_order - 4 / 3 * c_v**2:.2e}")
    assert abs(e2 - first_order) <= 2 * c_v**2 + omega_h**2 / 6
    assert abs(e2 - first_order - 4 / 3 * c_v**2) <= c_v**3 + omega_h**2 / 6


# -- 3. sliding -----------------------------------------------------------------------------------
def regularized_stopping_distance(v0: float, mu: float, v_s: float, g: float = G) -> float:
    """Distance to stop from v0 under ``m v' = -mu m g v / sqrt(v^2 + v_s^2)``:
    dx = v dt = sqrt(v^2 + v_s^2) dv / (mu g), integrated from 0 to v0."""
    return (v0 * math.sqrt(v0**2 + v_s**2) + v_s**2 * math.asinh(v0 / v_s)) / (2 * mu * g)


def box_rest_height(stiffness: float = BOX_STIFFNESS) -> float:
    """Height of the flat box's centre at rest, four corners each carrying a quarter of its weight."""
    return BOX_SIZE[2] / 2 - BOX_MASS * G / (4 * stiffness)


def slide_box(urdf_dir: Path, cache_dir: Path, v0: float, mu: float, v_s: float, dt: float) -> tuple[float, Simulator]:
    """Distance the flat box slides from speed v0 along x until it is at rest (and the simulator)."""
    sim = simulator(urdf_dir, cache_dir, "box", dt=dt, friction=mu, stick_velocity=v_s)
    place(sim, (0, 0, box_rest_height()), velocity=(v0, 0, 0))
    duration = v0 / (mu * G) + 40 * v_s / (mu * G) + 0.05  # then v < v0 e^-40 on the viscous tail
    sim.advance(round(duration / dt) * dt)
    return float(sim.q[0]), sim


@pytest.mark.parametrize("v_s", [0.1, 0.01])
def test_sliding_box_stops_at_the_regularized_distance(urdf_dir, cache_dir, v_s):
    """x = (v0 sqrt(v0^2 + v_s^2) + v_s^2 asinh(v0 / v_s)) / (2 mu g).  The box pitches forward
    by 6e-5 rad while sliding (friction acts below its centre), which shifts load between its
    corners but not the total; what is left is the vertical settling at the start and the pitch
    transients as it stops: measured 2e-5 relative, held to 2e-4."""
    v0, mu = 1.0, 0.5
    distance, sim = slide_box(urdf_dir, cache_dir, v0, mu, v_s, 1e-3)
    expected = regularized_stopping_distance(v0, mu, v_s)
    print(f"v_s {v_s}: slid {distance:.6f} m, regularized closed form {expected:.6f} m "
          f"(relative error {distance / expected - 1:.2e}), Coulomb v0^2/(2 mu g) {v0**2 / (2 * mu * G):.6f} m")
    assert distance == pytest.approx(expected, rel=2e-4)
    assert abs(sim.u[0]) < 1e-6 and abs(sim.q[1]) < 1e-9


def test_small_stick_velocity_approaches_coulomb(urdf_dir, cache_dir):
    """As v_s -> 0 the distance tends to Coulomb's v0^2 / (2 mu g) (dt 1e-4 keeps the viscous slope
    mu g / v_s = 4900 /s within RK4's stability)."""
    v0, mu, v_s = 1.0, 0.5, 1e-3
    distance, _ = slide_box(urdf_dir, cache_dir, v0, mu, v_s, 1e-4)
    coulomb = v0**2 / (2 * mu * G)
    print(f"v_s {v_s}: slid {distance:.6f} m, Coulomb {coulomb:.6f} m, relative {distance / coulomb - 1:.2e}, "
          f"regularized {regularized_stopping_distance(v0, mu, v_s):.6f} m")
    assert distance == pytest.approx(regularized_stopping_distance(v0, mu, v_s), rel=2e-4)
    assert distance == pytest.approx(coulomb, rel=2e-4)


# -- 4. slope -------------------------------------------------------------------------------------
def slope_directions(angle: float = SLOPE) -> tuple[np.ndarray, np.ndarray]:
    """The tilted ground's normal (as in the URDF) and its downhill direction (gravity is -z)."""
    normal = np.array([-math.sin(angle), 0.0, math.cos(angle)])
    downhill = -np.array([math.cos(angle), 0.0, math.sin(angle)])
    return normal, downhill


def released_on_slope(urdf_dir: Path, cache_dir: Path, mu: float, v_s: float = 0.01, robot: str = "slope") -> Simulator:
    """The box at rest on the tilted plane, its bottom face on it (its z axis along the normal)."""
    normal, _ = slope_directions()
    sim = simulator(urdf_dir, cache_dir, robot, friction=mu, stick_velocity=v_s)
    d0 = BOX_MASS * G * math.cos(SLOPE) / (4 * BOX_STIFFNESS)
    place(sim, normal * (BOX_SIZE[2] / 2 - d0), quaternion=(math.cos(-SLOPE / 2), 0.0, math.sin(-SLOPE / 2), 0.0))
    return sim


def slope_speed(v0: float, duration: float, mu: float, v_s: float) -> float:
    """Speed down the slope after `duration` by scipy of the 1-D law
    ``v' = g sin a - mu g cos a v / sqrt(v^2 + v_s^2)``."""
    def rate(_t, v):
        return [G * math.sin(SLOPE) - mu * G * math.cos(SLOPE) * v[0] / math.sqrt(v[0] ** 2 + v_s**2)]
    return float(solve_ivp(rate, (0.0, duration), [v0], method="DOP853", rtol=1e-10, atol=1e-13).y[0, -1])


def downhill_acceleration(sim, downhill: np.ndarray) -> float:
    """The mean downhill acceleration over 0.5 s to 1 s after the release (the speed's change)."""
    sim.advance(0.5)
    v1 = float(sim.u[:3] @ downhill)
    sim.advance(0.5)
    return (float(sim.u[:3] @ downhill) - v1) / 0.5


def test_box_slides_down_a_slope_steeper_than_the_friction_angle(urdf_dir, cache_dir):
    """tan a > mu: the box accelerates at g (sin a - mu cos a) once v >> v_s (the regularized
    law's factor v / sqrt(v^2 + v_s^2) is then 1 - v_s^2 / (2 v^2)); from rest its speed follows
    the 1-D ODE of the regularized law."""
    mu, v_s = 0.2, 0.01
    _, downhill = slope_directions()
    sim = released_on_slope(urdf_dir, cache_dir, mu, v_s)
    acceleration = downhill_acceleration(sim, downhill)
    v2 = float(sim.u[:3] @ downhill)
    expected = G * (math.sin(SLOPE) - mu * math.cos(SLOPE))
    reference = slope_speed(0.0, 1.0, mu, v_s)
    print(f"slope {math.degrees(SLOPE):.0f} deg, mu {mu}: acceleration {acceleration:.6f} m/s^2, "
          f"g (sin a - mu cos a) {expected:.6f}; speed at 1 s {v2:.6f}, ODE {reference:.6f}")
    assert acceleration == pytest.approx(expected, rel=1e-4)  # v_s^2 / (2 v^2) < 1e-4 for v > 0.7
    assert v2 == pytest.approx(reference, rel=1e-4)


def creep_speed(mu: float, v_s: float, angle: float = SLOPE) -> float:
    """Steady creep below the friction angle: mu g cos a v / sqrt(v^2 + v_s^2) = g sin a, so
    v = v_s r / sqrt(1 - r^2) with r = tan a / mu."""
    r = math.tan(angle) / mu
    return v_s * r / math.sqrt(1 - r * r)


def test_box_creeps_below_the_friction_angle_at_the_regularized_speed(urdf_dir, cache_dir):
    """tan a < mu: the regularized friction cannot hold the box; it creeps at v_s r / sqrt(1 - r^2)."""
    mu, v_s = 0.5, 0.01
    _, downhill = slope_directions()
    sim = released_on_slope(urdf_dir, cache_dir, mu, v_s)
    sim.advance(1.0)
    speed = float(sim.u[:3] @ downhill)
    expected = creep_speed(mu, v_s)
    print(f"slope {math.degrees(SLOPE):.0f} deg, mu {mu}, v_s {v_s}: creep {speed * 1e3:.4f} mm/s, "
          f"predicted {expected * 1e3:.4f} mm/s ({speed * 10 * 1e3:.1f} mm in 10 s)")
    assert speed == pytest.approx(expected, rel=1e-4)


# -- 4b. the stiction option (<ground stiction="true">: an anchor per contact point) --------------
def stiction_deflection(mu_f_n_total: float, stiffness: float = BOX_STIFFNESS, points: int = 4) -> float:
    """How far the box's springs to their anchors stretch carrying a tangential load: ``F / (4 k_t)``."""
    return mu_f_n_total / (points * stiffness)


def test_box_holds_on_a_slope_below_the_friction_angle(urdf_dir, cache_dir):
    """tan a < mu with stiction: the anchors hold the box; it moves only the springs' deflection
    under the downhill weight, m g sin a / (4 k_t) = 8.4e-6 m (plus the tilt the friction's moment
    gives it), less than 1 mm in 10 s.  Without stiction the same box creeps at
    v_s r / sqrt(1 - r^2) (10 mm/s): the contrast.  The defaults: k_t = k (p = 1), c_t at most
    critical for the whole box on one corner (it is sized on a corner's effective mass)."""
    mu = 0.5
    _, downhill = slope_directions()
    held, creeping = (released_on_slope(urdf_dir, cache_dir, mu, robot=robot) for robot in ("slope_stiction", "slope"))
    assert held.parameter("ground_stiction_stiffness") == pytest.approx(BOX_STIFFNESS)
    assert 0 < held.parameter("ground_stiction_damping") <= 2 * math.sqrt(BOX_STIFFNESS * BOX_MASS)
    moved = []
    for sim in (held, creeping):
        start = sim.q[:3].copy()
        sim.advance(10.0)
        moved.append(float((sim.q[:3] - start) @ downhill))
    deflection = stiction_deflection(BOX_MASS * G * math.sin(SLOPE))
    print(f"slope {math.degrees(SLOPE):.0f} deg, mu {mu}: moved {moved[0] * 1e3:.5f} mm in 10 s with stiction "
          f"(spring deflection {deflection * 1e3:.5f} mm), {moved[1] * 1e3:.1f} mm without "
          f"(creep {creep_speed(mu, 0.01) * 10 * 1e3:.1f} mm)")
    assert abs(moved[0]) < 1e-3
    assert abs(moved[0]) < 3 * deflection  # the springs' deflection, not a creep
    assert moved[1] == pytest.approx(creep_speed(mu, 0.01) * 10.0, rel=1e-2)


def test_box_with_stiction_slides_down_a_slope_steeper_than_the_friction_angle(urdf_dir, cache_dir):
    """tan a > mu with stiction: sliding friction is exactly mu f_n (the spring-damper clipped to
    the cone, no regularization), so the acceleration is g (sin a - mu cos a) at any speed:
    measured to 1e-14, held to 1e-6."""
    mu = 0.2
    _, downhill = slope_directions()
    sim = released_on_slope(urdf_dir, cache_dir, mu, robot="slope_stiction")
    acceleration = downhill_acceleration(sim, downhill)
    expected = G * (math.sin(SLOPE) - mu * math.cos(SLOPE))
    print(f"stiction, slope {math.degrees(SLOPE):.0f} deg, mu {mu}: acceleration {acceleration:.12f} m/s^2, "
          f"g (sin a - mu cos a) {expected:.12f} (relative {acceleration / expected - 1:.1e})")
    assert acceleration == pytest.approx(expected, rel=1e-6)


def test_box_with_stiction_stops_at_coulombs_distance(urdf_dir, cache_dir):
    """Launched at v0 on flat ground it stops after v0^2 / (2 mu g), then stays.  It stops with its
    springs stretched to the cone, mu m g / (4 k_t) = 1.2e-5 m, and settles back onto its anchors:
    measured -1.5e-5 m (1.5e-4 relative), held to twice that deflection, less than the
    regularized law's own error at v_s = 0.01 (+5.9e-5 m)."""
    v0, mu = 1.0, 0.5
    sim = simulator(urdf_dir, cache_dir, "box_stiction", friction=mu)
    place(sim, (0, 0, box_rest_height()), velocity=(v0, 0, 0))
    sim.advance(1.0)  # stops after v0 / (mu g) = 0.2 s
    stopped = float(sim.q[0])
    sim.advance(1.0)
    coulomb = v0**2 / (2 * mu * G)
    tolerance = 2 * stiction_deflection(mu * BOX_MASS * G)
    regularized_error = regularized_stopping_distance(v0, mu, 0.01) - coulomb
    print(f"stiction: slid {stopped:.7f} m, Coulomb {coulomb:.7f} m, error {stopped - coulomb:.2e} m "
          f"(tolerance {tolerance:.2e}, regularized law at v_s 0.01: {regularized_error:.2e}); "
          f"1 s later {sim.q[0] - stopped:.1e} m further, speed {np.linalg.norm(sim.u[:3]):.1e} m/s")
    assert abs(stopped - coulomb) <= tolerance < regularized_error
    assert abs(sim.q[0] - stopped) < 1e-9 and np.linalg.norm(sim.u) < 1e-9 and abs(sim.q[1]) < 1e-12


def energy(sim: Simulator) -> float:
    """Kinetic plus potential energy (gravity, the contact springs, the stiction springs) [J]."""
    sim.model.evaluate_into(sim.time)
    view = sim.model.layout.view
    return float(view(sim.model.buffers.out, "kinetic_energy")[0, 0] + view(sim.model.buffers.out,
                                                                           "potential_energy")[0, 0])


def test_sticking_box_at_rest_stays_at_rest_without_energy_drift(urdf_dir, cache_dir):
    """Held on the slope below the friction angle, once settled (1 s) the box does not move in the
    next 9 s (1e-9 m) and its energy, the stiction springs' included, stays constant (1e-9 J of
    m g h = 0.49 J); the anchors do not move either."""
    _, downhill = slope_directions()
    sim = released_on_slope(urdf_dir, cache_dir, 0.5, robot="slope_stiction")
    sim.advance(1.0)
    q, z, e = sim.q.copy(), sim.z.copy(), energy(sim)
    sim.advance(9.0)
    drift = float((sim.q[:3] - q[:3]) @ downhill)
    print(f"sticking box: drift {drift:.1e} m, energy change {energy(sim) - e:.1e} J, anchors moved "
          f"{np.abs(sim.z - z).max():.1e} m, speed {np.linalg.norm(sim.u):.1e}")
    assert np.abs(sim.q - q).max() < 1e-9 and np.linalg.norm(sim.u) < 1e-9
    assert abs(energy(sim) - e) < 1e-9
    assert np.abs(sim.z - z).max() < 1e-9


def test_ball_with_stiction_launched_sliding_ends_rolling_at_five_sevenths(urdf_dir, cache_dir):
    """The anchor of a rolling sphere moves with its contact point (its rate w x (c - x)), so
    stiction neither brakes rolling nor changes the 5/7 of the rolling test above."""
    v0, r, m, k = 1.0, BALL_RADIUS, BALL_MASS, BALL_STIFFNESS
    sim = simulator(urdf_dir, cache_dir, "ball_stiction", damping=critical_damping(k, m, 1, ratio=0.5))
    place(sim, (0, 0, r - m * G / k), velocity=(v0, 0, 0))
    sim.advance(1.0)
    v, omega = sim.u[0], world_angular_velocity(sim)
    sim.advance(1.0)
    print(f"stiction ball: v {v:.9f} m/s (5/7 v0 = {5 / 7 * v0:.9f}), omega r {omega[1] * r:.9f}, 1 s later "
          f"{sim.u[0]:.9f} m/s")
    assert v == pytest.approx(5 / 7 * v0, abs=1e-6)
    assert omega[1] * r == pytest.approx(v, abs=1e-6)
    assert sim.u[0] == pytest.approx(v, abs=1e-6)


def test_numpy_backend_moves_the_anchors_as_the_generated_c(urdf_dir, cache_dir):
    """The NumPy backend's finish-step applies the same anchor updates: the box launched at
    0.2 m/s stops (after 41 ms) and sticks within 100 steps, both backends agreeing to 1e-12."""
    states = []
    for backend in ("c", "numpy"):
        sim = Simulator(urdf_dir / "box_stiction.urdf", dt=1e-3, cache_dir=cache_dir, backend=backend)
        place(sim, (0, 0, box_rest_height()), velocity=(0.2, 0, 0))
        sim.advance(0.1)
        states.append(np.concatenate([sim.q, sim.u, sim.z]))
    print(f"C vs NumPy after 100 steps: {np.abs(states[0] - states[1]).max():.1e}")
    assert np.abs(states[0] - states[1]).max() < 1e-12
    assert abs(states[0][0] - 0.2**2 / (2 * 0.5 * G)) < 1e-4


@pytest.mark.parametrize("attribute, message", [('stiction="maybe"', "stiction must be true or false"),
                                                ('stiction="true" stiction_stiffness="-5"', "stiction_stiffness"),
                                                ('stiction="true" stiction_damping="x"', "stiction_damping")])
def test_bad_stiction_attributes_are_one_line_errors(tmp_path, attribute, message):
    """A wrong value is a URDFError naming the <ground> element and the attribute."""
    from mb_sim.model import load_urdf
    from mb_sim.urdf import URDFError
    path = tmp_path / "bad.urdf"
    path.write_text(floating_urdf("bad", '<sphere radius="0.1"/>', 1.0, (0.004,) * 3, attribute))
    with pytest.raises(URDFError) as error:
        load_urdf(path)
    text = str(error.value)
    print(text)
    assert "ground" in text and message in text and "\n" not in text


# -- 5., 6. rolling -------------------------------------------------------------------------------
def test_ball_launched_sliding_ends_rolling_at_five_sevenths(urdf_dir, cache_dir):
    """Angular momentum about the contact line is conserved (friction acts on it, the normal force
    and weight through the centre): m v0 r = m v r + (2/5) m r^2 (v / r), so v = 5/7 v0, and the
    regularized friction drives the slip v - omega r to zero."""
    v0, r, m, k = 1.0, BALL_RADIUS, BALL_MASS, BALL_STIFFNESS
    sim = simulator(urdf_dir, cache_dir, "ball", friction=0.5, stick_velocity=0.01,
                    damping=critical_damping(k, m, 1, ratio=0.5), exponent=1.0)
    place(sim, (0, 0, r - m * G / k), velocity=(v0, 0, 0))
    sim.advance(1.0)  # sliding ends after 2 v0 / (7 mu g) = 0.06 s
    v, omega = sim.u[0], world_angular_velocity(sim)
    print(f"ball: v {v:.7f} m/s (5/7 v0 = {5 / 7 * v0:.7f}), omega r {omega[1] * r:.7f} m/s, lateral {sim.q[1]:.1e} m")
    assert v == pytest.approx(5 / 7 * v0, abs=1e-4)
    assert omega[1] * r == pytest.approx(v, abs=1e-4)
    assert abs(sim.q[1]) < 1e-9 and abs(omega[0]) < 1e-9 and abs(omega[2]) < 1e-9


LYING = (math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0)  # +90 deg about x: the axis along -y


def test_cylinder_launched_sliding_ends_rolling_straight(urdf_dir, cache_dir):
    """A cylinder on its side (axis along y, its two rims' lowest points carry it): launched
    sliding along x it ends rolling at v0 / (1 + 1/2) = 2/3 v0 (I = m r^2 / 2, angular momentum
    about the contact line), then keeps v = omega r, its axis along y and its track on y = 0."""
    v0, r, m, k = 0.6, CYLINDER_RADIUS, CYLINDER_MASS, CYLINDER_STIFFNESS
    sim = simulator(urdf_dir, cache_dir, "cylinder")
    place(sim, (0, 0, r - m * G / (2 * k)), quaternion=LYING, velocity=(v0, 0, 0))
    sim.advance(0.5)
    v_rolling = sim.u[0]
    sim.advance(1.5)
    v, omega = sim.u[0], world_angular_velocity(sim)
    axis = rotation(sim.q[3:7]) @ np.array([0.0, 0.0, 1.0])
    print(f"cylinder: v {v:.7f} m/s after 0.5 s {v_rolling:.7f} (2/3 v0 = {2 / 3 * v0:.7f}), omega r "
          f"{omega[1] * r:.7f}, lateral drift {sim.q[1]:.1e} m, axis {axis}, rolled {sim.q[0]:.4f} m")
    assert v == pytest.approx(2 / 3 * v0, abs=1e-4) and v_rolling == pytest.approx(v, abs=1e-6)
    assert omega[1] * r == pytest.approx(v, abs=1e-4)
    assert abs(sim.q[1]) < 1e-4 and np.allclose(axis, [0, -1, 0], atol=1e-6)


def test_cylinder_standing_on_its_end_stays_upright_at_rest(urdf_dir, cache_dir):
    """Axis along the normal: the bottom rim's feature sits at the end face's centre (the rim
    regularization), carrying the whole weight: penetration m g / k; no drift over 2 s."""
    m, k, length = CYLINDER_MASS, CYLINDER_STIFFNESS, CYLINDER_LENGTH
    sim = simulator(urdf_dir, cache_dir, "cylinder",
                    damping=critical_damping(k, m, 1, ratio=0.5))  # one point carries it now
    place(sim, (0, 0, length / 2))
    sim.advance(2.0)
    axis = rotation(sim.q[3:7]) @ np.array([0.0, 0.0, 1.0])
    penetration = length / 2 - sim.q[2]
    print(f"standing cylinder: penetration {penetration:.9f} m (m g / k {m * G / k:.9f}), drift "
          f"{np.hypot(sim.q[0], sim.q[1]):.1e} m, tilt {math.acos(min(axis[2], 1.0)):.1e} rad")
    assert penetration == pytest.approx(m * G / k, abs=1e-6)
    assert np.hypot(sim.q[0], sim.q[1]) < 1e-4 and axis[2] > 1 - 1e-12
    assert np.abs(sim.u).max() < 1e-6



@pytest.mark.parametrize("dt", [1e-4, 1e-3])  # (a sharper rim point, sin(tilt) 1e-6, walked sideways at 1 ms)
def test_cylinder_released_slightly_tilted_on_its_end_settles_upright(urdf_dir, cache_dir, dt):
    """Released 1e-4 rad off upright the cylinder rocks onto its rims and settles upright,
    carrying its weight at the end face's centre (penetration m g / k), within 1e-4 m of where it
    was released."""
    m, k, length, tilt = CYLINDER_MASS, CYLINDER_STIFFNESS, CYLINDER_LENGTH, 1e-4
    sim = simulator(urdf_dir, cache_dir, "cylinder", dt=dt, damping=critical_damping(k, m, 1, ratio=0.5))
    place(sim, (0, 0, length / 2), quaternion=(math.cos(tilt / 2), math.sin(tilt / 2), 0.0, 0.0))
    tilts = []
    for _ in range(3):
        sim.advance(2.0)
        axis = rotation(sim.q[3:7]) @ np.array([0.0, 0.0, 1.0])
        tilts.append(float(np.hypot(axis[0], axis[1])))
    drift, penetration = float(np.hypot(sim.q[0], sim.q[1])), length / 2 - float(sim.q[2])
    print(f"tilted standing cylinder, dt {dt}: drift {drift:.2e} m, tilt at 2, 4, 6 s {tilts} rad, "
          f"penetration {penetration:.3e} m (m g / k {m * G / k:.3e}), largest speed {np.abs(sim.u).max():.1e}")
    # it rocks about its end's centre (the contact point within RIM_TILT of upright), the rocking dying out
    assert drift < 1e-4 and tilts[0] < tilt and tilts[2] < tilts[0] / 4
    assert penetration == pytest.approx(m * G / k, abs=1e-6)


def test_capsule_launched_sliding_ends_rolling_on_its_end_spheres(urdf_dir, cache_dir):
    """A capsule on its side touches at its two end spheres' lowest points (radius r below their
    centres); launched sliding it ends rolling at v0 / (1 + I / (m r^2)) (I its axial moment),
    with v = omega r, straight along x."""
    v0, r, m, k = 0.6, CAPSULE_RADIUS, CAPSULE_MASS, CYLINDER_STIFFNESS
    sim = simulator(urdf_dir, cache_dir, "capsule")
    place(sim, (0, 0, r - m * G / (2 * k)), quaternion=LYING, velocity=(v0, 0, 0))
    sim.advance(1.0)
    v, omega = sim.u[0], world_angular_velocity(sim)
    expected = v0 / (1 + CAPSULE_AXIAL_INERTIA / (m * r * r))
    print(f"capsule: v {v:.7f} m/s (v0 / (1 + I / (m r^2)) = {expected:.7f}), omega r {omega[1] * r:.7f}, "
          f"lateral drift {sim.q[1]:.1e} m")
    assert v == pytest.approx(expected, abs=1e-4) and omega[1] * r == pytest.approx(v, abs=1e-4)
    assert abs(sim.q[1]) < 1e-4

# -- 7. side by side with MuJoCo ------------------------------------------------------------------
def mujoco_settled(xml: str, seconds: float):
    """A MuJoCo model from `xml` and its data after `seconds` of simulation (1 ms steps)."""
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    for _ in range(round(seconds / model.opt.timestep)):
        mujoco.mj_step(model, data)
    return mujoco, model, data


def test_ball_rest_height_agrees_with_mujoco(urdf_dir, cache_dir):
    """The same ball on a plane: rest heights differ by no more than the two models' penetrations
    (mb_sim: m g / k; MuJoCo: its soft contact's, default solref, read from its contact)."""
    r, m = BALL_RADIUS, BALL_MASS
    xml = f"""<mujoco><option timestep="0.001" gravity="0 0 {-G}"/><worldbody>
      <geom type="plane" size="5 5 0.1"/>
      <body pos="0 0 {r + 0.01}"><freejoint/><geom type="sphere" size="{r}" mass="{m}"/></body>
    </worldbody></mujoco>"""
    _, _, data = mujoco_settled(xml, 3.0)
    mujoco_height, mujoco_penetration = float(data.qpos[2]), -float(data.contact[0].dist)
    sim = simulator(urdf_dir, cache_dir, "ball", damping=critical_damping(BALL_STIFFNESS, m, 1), exponent=1.0)
    place(sim, (0, 0, r + 0.01))
    sim.advance(3.0)
    height, penetration = float(sim.q[2]), r - float(sim.q[2])
    print(f"ball rest height: mb_sim {height:.6f} m (penetration {penetration * 1e3:.4f} mm), MuJoCo "
          f"{mujoco_height:.6f} m (penetration {mujoco_penetration * 1e3:.4f} mm), difference "
          f"{(height - mujoco_height) * 1e3:.4f} mm")
    assert 0 < mujoco_penetration < 0.01 and penetration == pytest.approx(m * G / BALL_STIFFNESS, abs=1e-6)
    assert abs(height - mujoco_height) <= penetration + mujoco_penetration


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_box_sliding_distance_agrees_with_mujoco(urdf_dir, cache_dir, cone):
    """The same box launched at v0 with friction mu: both slide Coulomb's v0^2 / (2 mu g) up to
    their regularizations (mb_sim: the closed form above, +0.06 % at v_s = 0.01; MuJoCo: its soft
    constraints, measured -0.2 % pyramidal, -0.3 % elliptic with MuJoCo 3.x defaults), so they
    agree within 2 %."""
    v0, mu = 1.0, 0.5
    hx, hy, hz = (s / 2 for s in BOX_SIZE)
    xml = f"""<mujoco><option timestep="0.001" cone="{cone}" gravity="0 0 {-G}"/><worldbody>
      <geom type="plane" size="5 5 0.1" friction="{mu} 0 0"/>
      <body pos="0 0 {hz}"><freejoint/>
        <geom type="box" size="{hx} {hy} {hz}" mass="{BOX_MASS}" friction="{mu} 0 0"/></body>
    </worldbody></mujoco>"""
    mujoco, model, data = mujoco_settled(xml, 0.3)
    start = float(data.qpos[0])
    data.qvel[0] = v0
    for _ in range(round(1.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    mujoco_distance = float(data.qpos[0]) - start
    distance, _ = slide_box(urdf_dir, cache_dir, v0, mu, 0.01, 1e-3)
    coulomb = v0**2 / (2 * mu * G)
    print(f"box slide ({cone}): mb_sim {distance:.6f} m, MuJoCo {mujoco_distance:.6f} m "
          f"({mujoco_distance / distance - 1:+.2%}), Coulomb {coulomb:.6f} m")
    assert abs(float(data.qvel[0])) < 1e-6
    assert mujoco_distance == pytest.approx(distance, rel=0.02)


@pytest.mark.parametrize("exponent", [1.0, 1.5])
def test_default_parameters_rest_the_robot_at_two_millimetres(tmp_path, cache_dir, exponent):
    """Without stiffness and damping the ground picks them from the robot: its weight on one point
    penetrates DEFAULT_PENETRATION (2 mm) whatever the exponent, and settling there is damped
    (the ball comes to rest within 3 s)."""
    from mb_sim.model.contact import DEFAULT_PENETRATION

    text = (Path(__file__).parent / "urdf" / "contact_ball.urdf").read_text().replace(
        'stiffness="20000"', f'exponent="{exponent}"')
    path = tmp_path / "default_ball.urdf"
    path.write_text(text)
    sim = Simulator(str(path), cache_dir=cache_dir)
    sim.set_state(positions={"free_z": 0.15})
    sim.advance(3.0)
    assert 0.1 - sim.q[2] == pytest.approx(DEFAULT_PENETRATION, rel=1e-6)
    assert abs(sim.u[2]) < 1e-6
