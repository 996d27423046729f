"""Robustness of the simulator: long advances cut into bounded calls of the generated code (and
interruptible between them), runaways (speeds beyond their bounds, an energy rising with no power
put in) stopped while the state is finite, and joints without an effort limit reported."""
from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim.codegen import NumericModel
from mb_sim.codegen.numeric_model import MAX_RK4_STEPS
from mb_sim.resources import robot_path
from mb_sim.sim import MAX_STEPS_PER_CALL, EffortLimitWarning, SimulationError, Simulator
from mb_sim.urdf.description import STANDARD_GRAVITY
from mb_sim.sim.runaway import ENERGY_CHECK_STEPS, ENERGY_TOLERANCE, MAX_TURN_PER_STEP

REPO = Path(__file__).resolve().parent.parent
MB_SIM = Path(sys.executable).parent / "mb-sim"
SHIPPED = sorted([*REPO.glob("urdf/*.urdf"), *REPO.glob("test/urdf/*.urdf")])
#: Shipped robots whose 10 s take long (20-30 s cold): make test-slow.
HEAVY_SHIPPED = {"self_collision_arm6", "loop_two_bodies", "delta_robot"}
pytestmark = pytest.mark.filterwarnings("ignore::mb_sim.sim.EffortLimitWarning")


@pytest.fixture(scope="module")
def cache_dir() -> None:
    """The user's compiled-model cache ($MB_SIM_CACHE_DIR or ~/.cache/mb_sim): the robots here
    compile once per machine, so each test stays well under 5 s after a first run."""
    return None


def light_chain(links: int = 4, mass: float = 1e-6) -> str:
    """The issue's robot: a planar chain of very light links on continuous joints without limits."""
    inertial = (f'<inertial><origin xyz="0.05 0 0"/><mass value="{mass}"/>'
                '<inertia ixx="1e-10" ixy="0" ixz="0" iyy="1e-9" iyz="0" izz="1e-9"/></inertial>')
    body = "".join(f'<link name="link{k}">{inertial}</link>' for k in range(1, links + 1))
    parent = lambda k: f"link{k - 1}" if k > 1 else "base"  # noqa: E731
    body += "".join(f'<joint name="link{k}_joint" type="continuous"><parent link="{parent(k)}"/>'
                    f'<child link="link{k}"/><origin xyz="{0.1 if k > 1 else 0} 0 0"/><axis xyz="0 0 1"/></joint>'
                    for k in range(1, links + 1))
    return f'<robot name="light_chain"><link name="base"/>{body}</robot>'


def limited_pendulum(lower: float = -0.5, upper: float = 0.5) -> str:
    """urdf/pendulum.urdf's 1 kg at 1 m on a revolute joint with position limits (stops)."""
    return f"""<robot name="limited_pendulum"><link name="base"/>
      <link name="arm"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
        <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
      <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
        <limit lower="{lower}" upper="{upper}" effort="10" velocity="5"/></joint></robot>"""


# -- bounded calls of the generated code ------------------------------------------------------------
def test_a_long_advance_is_cut_into_calls_of_at_most_max_steps_reaching_the_state_of_one_call(cache_dir):
    """2500 steps: calls of 1000, 1000 and 500 steps end bit for bit where one call of 2500 does,
    at the same time (the C code times its steps from the call's start: ``t0 + k dt``)."""
    chunked = Simulator(robot_path("double_pendulum"), cache_dir=cache_dir)
    single = Simulator(robot_path("double_pendulum"), cache_dir=cache_dir)
    for sim in (chunked, single):
        sim.set_state({"shoulder": 2.0, "elbow": -1.0}, {"elbow": 3.0}, time=0.1)
    calls = []
    real = chunked.model.rk4_into

    def recording(dt: float, n_steps: int, t: float = 0.0) -> float:  # the real C call, counted
        calls.append(n_steps)
        return real(dt, n_steps, t)

    chunked.model.rk4_into = recording
    steps = 2 * MAX_STEPS_PER_CALL + MAX_STEPS_PER_CALL // 2
    chunked.advance(steps * 1e-3)
    time_of_one_call = single.model.rk4_into(1e-3, steps, 0.1)
    assert calls == [MAX_STEPS_PER_CALL, MAX_STEPS_PER_CALL, MAX_STEPS_PER_CALL // 2]
    assert np.array_equal(chunked.q, single.q) and np.array_equal(chunked.u, single.u)
    assert chunked.time == pytest.approx(time_of_one_call, rel=1e-15, abs=0)
    assert abs(chunked.time - (0.1 + steps * 1e-3)) < 1e-15 * chunked.time


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_rk4_refuses_step_counts_a_c_int_cannot_hold(cache_dir, backend):
    model: NumericModel = Simulator(robot_path("pendulum"), backend=backend, cache_dir=cache_dir).model
    before = model.buffers.q.copy(), model.buffers.u.copy()
    for count in (MAX_RK4_STEPS + 1, 2**32 + 5, -1):
        with pytest.raises(ValueError, match=rf"n_steps must be in \[0, {MAX_RK4_STEPS}\].*got {count}"):
            model.rk4_into(1e-3, count, 0.0)
    assert np.array_equal(model.buffers.q, before[0]) and np.array_equal(model.buffers.u, before[1])
    assert model.rk4_into(1e-3, 0, 0.5) == 0.5


@pytest.mark.parametrize("backend, duration", [("c", 1e5), ("numpy", 1e3)])
def test_ctrl_c_stops_a_long_advance_within_a_call_leaving_a_consistent_state(cache_dir, backend, duration):
    """A real SIGINT 0.2 s into an advance of hours: KeyboardInterrupt within a call of the
    generated code, with the time of the steps done; the same number of steps from the same start
    reaches the same state bit for bit."""
    start = {"shoulder": 1.0, "elbow": -0.5}
    sim = Simulator(robot_path("double_pendulum"), backend=backend, cache_dir=cache_dir)
    sim.set_state(start)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    began = time.perf_counter()
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            sim.advance(duration)
        stopped = time.perf_counter() - began
    finally:
        timer.join()
        signal.signal(signal.SIGINT, previous)
    assert stopped < 1.5, f"the interrupt took {stopped:.2f} s to be handled"
    steps = round(sim.time / sim.dt)
    assert 0 < steps < duration / sim.dt and sim.time == steps * sim.dt
    again = Simulator(robot_path("double_pendulum"), backend=backend, cache_dir=cache_dir)
    again.set_state(start)
    again.advance(steps * again.dt)
    assert np.array_equal(sim.q, again.q) and np.array_equal(sim.u, again.u) and sim.time == again.time
    sim.advance(0.01)  # and it goes on from there
    assert sim.time == pytest.approx((steps + 10) * sim.dt, rel=1e-14)


# -- speed bounds -------------------------------------------------------------------------------------
def slider(velocity: float = 0.07) -> str:
    """A 2 kg block on a vertical prismatic joint 1.3 m above the root, its centre of mass 0.4 m
    above the joint (the robot's size: 1.7 m), limits far away, a URDF velocity limit of
    `velocity` m/s (tiago's torso lift has 0.07)."""
    return f"""<robot name="slider"><link name="base"/>
      <link name="block"><inertial><origin xyz="0 0 0.4"/><mass value="2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
      <joint name="lift" type="prismatic"><parent link="base"/><child link="block"/><origin xyz="0 0 1.3"/>
        <axis xyz="0 0 1"/><limit lower="-1000" upper="1000" effort="100" velocity="{velocity}"/></joint></robot>"""


def test_speed_bounds_are_what_the_step_resolves_not_the_urdf_velocity_limits(cache_dir):
    # 1 rad per step for angular rates (1000 rad/s at 1 ms), times the robot's size (at least 1 m)
    # for linear ones.
    arm = Simulator(robot_path("arm6"), cache_dir=cache_dir)
    assert set(arm.speed_bounds.values()) == {1000.0}  # whatever the URDF limits (3.15 rad/s...)
    assert Simulator(slider(), cache_dir=cache_dir).speed_bounds == {"lift_u": pytest.approx(1700.0)}
    assert Simulator(slider(), cache_dir=cache_dir, dt=2e-3).speed_bounds == {"lift_u": pytest.approx(850.0)}
    pendulum = Simulator(robot_path("pendulum").read_text().replace('type="continuous"', 'type="prismatic"').replace(
        '<axis xyz="0 1 0"/>', '<axis xyz="0 0 1"/><limit lower="-1e3" upper="1e3" effort="1" velocity="1"/>'),
        cache_dir=cache_dir)
    assert pendulum.speed_bounds == {"hinge_u": pytest.approx(1000.0)}  # its bob 1 m below the joint
    zoo = Simulator(REPO / "test" / "urdf" / "kinematic_zoo.urdf", cache_dir=cache_dir)
    assert {zoo.speed_bounds[s] for s in ("base_plane_w", "shoulder_u", "wheel_spin_u")} == {1000.0}
    assert zoo.speed_bounds["base_plane_vx"] == zoo.speed_bounds["lift_u"] > 100.0
    # A robot whose URDF limits are physical can ask for them (the smaller bound wins).
    tight = Simulator(robot_path("arm6"), cache_dir=cache_dir, speed_limit_factor=3)
    assert tight.speed_bounds["shoulder_pan_joint_u"] == pytest.approx(9.45)  # 3 x velocity="3.15"
    body = Simulator(robot_path("free_body"), cache_dir=cache_dir, default_speed_bounds=(50.0, 20.0))
    assert body.speed_bounds == {"base_joint_vx": 20.0, "base_joint_vy": 20.0, "base_joint_vz": 20.0,
                                 "base_joint_wx": 50.0, "base_joint_wy": 50.0, "base_joint_wz": 50.0}
    assert Simulator(robot_path("pendulum"), cache_dir=cache_dir, speed_limit_factor=0).speed_bounds == {}
    for options, culprit in (({"speed_limit_factor": -1.0}, "speed_limit_factor"),
                             ({"speed_limit_factor": float("nan")}, "speed_limit_factor"),
                             ({"default_speed_bounds": (1e3, 0.0)}, "default_speed_bounds"),
                             ({"default_speed_bounds": (1e3,)}, "default_speed_bounds")):
        with pytest.raises(ValueError, match=culprit):
            Simulator(robot_path("pendulum"), cache_dir=cache_dir, **options)


def test_a_lift_in_free_fall_is_physics_not_a_runaway(cache_dir):
    # Issue 23: tiago's torso lift falling freely was stopped at 9.81 m/s (100 x its 0.07 m/s
    # limit after a second).  The speed after t seconds is g t (RK4 is exact for a constant
    # acceleration, whatever the mass); 3 s: 29.4 m/s, 420 times the URDF limit.
    sim = Simulator(slider(), cache_dir=cache_dir)
    sim.advance(3.0)
    assert sim.u[0] == pytest.approx(-STANDARD_GRAVITY * 3.0, rel=1e-12)


def test_a_pendulum_swinging_far_beyond_its_urdf_velocity_limit_is_no_runaway(cache_dir):
    # The shipped pendulum (1 kg at 1 m, izz 0.001) with a velocity limit of 0.01 rad/s, released
    # horizontal: at the bottom omega = sqrt(2 m g l / (m l^2 + I)) (energy), 313 times the limit.
    xml = robot_path("pendulum").read_text()
    limited = xml.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><limit effort="10" velocity="0.01"/>')
    assert limited != xml
    sim = Simulator(limited, cache_dir=cache_dir, dt=1e-4)
    (joint,) = sim.actuated_joints
    sim.set_state({joint: math.pi / 2})
    peak = 0.0
    for _ in range(200):  # 2 s: past the bottom
        sim.advance(0.01)
        peak = max(peak, abs(sim.u[0]))
    expected = math.sqrt(2 * STANDARD_GRAVITY / (1.0 + 0.001))
    assert peak == pytest.approx(expected, rel=1e-3) and peak > 300 * 0.01


def test_a_chain_of_very_light_links_under_1_n_m_is_stopped_as_a_runaway(cache_dir):
    """The issue's case: 1e-6 kg links, 1 N m on the first joint; without the check the run goes
    on at 1e9 rad/s until the mass matrix fails."""
    sim = Simulator(light_chain(), cache_dir=cache_dir)
    sim.set_efforts({"link1_joint": 1.0})
    with pytest.raises(SimulationError) as raised:
        sim.simulate(1.0)
    error = raised.value
    culprit = error.coordinate.removesuffix("_u")
    speed = abs(sim.outputs(False).velocities[error.coordinate])
    assert speed > MAX_TURN_PER_STEP / sim.dt and np.all(np.isfinite(sim.u)) and np.all(np.isfinite(sim.q))
    assert error.time == sim.time and sim.time <= 0.01
    shown = re.escape(f"{speed:.3g}")
    assert re.search(rf"runaway: joint '{culprit}' speed {shown} rad/s exceeds its bound 1e\+03 rad/s "
                     r"\(1 rad per step: beyond what the integration resolves\)", str(error)), error
    unchecked = Simulator(light_chain(), cache_dir=cache_dir, speed_limit_factor=0)
    unchecked.set_efforts({"link1_joint": 1.0})
    with pytest.raises(SimulationError, match="not positive definite|not finite"):  # nonsense, then failure
        unchecked.simulate(1.0)


def test_arm6_driven_by_the_demo_controller_is_no_runaway(cache_dir):
    """A normal arm doing normal things: ``make sim``'s joint-space PD (config/demo_controller.yaml:
    its gains, 0.5 rad sines at 0.25 Hz) at 50 Hz, efforts clamped to the URDF limits, 5 s; the
    fastest joint (wrist_2, 16 rad/s) reaches 5 times its URDF velocity limit, 1.6 % of its bound."""
    sim = Simulator(robot_path("arm6"), cache_dir=cache_dir)
    joints = sim.actuated_joints
    coordinates, speeds = ([sim.joint_indices[j][k] for j in joints] for k in (0, 1))
    kp, kd = np.array([100.0, 200.0, 100.0, 10.0, 5.0, 2.0]), np.array([10.0, 20.0, 5.0, 0.2, 0.05, 0.0])
    phases, omega = 2 * np.pi * np.arange(6) / 6, 2 * np.pi * 0.25
    bounds = np.array([sim.speed_bounds[f"{j}_u"] for j in joints])
    fastest = 0.0
    for _ in range(250):
        target, rate = 0.5 * np.sin(omega * sim.time + phases), 0.5 * omega * np.cos(omega * sim.time + phases)
        sim.set_efforts(kp * (target - sim.q[coordinates]) + kd * (rate - sim.u[speeds]))
        sim.advance(0.02)
        fastest = max(fastest, float(np.max(np.abs(sim.u[speeds]) / bounds)))
    assert sim.time == pytest.approx(5.0) and 0.01 < fastest < 0.03


def test_arm6_falling_freely_whips_its_wrist_beyond_ten_times_its_velocity_limit_and_is_no_runaway(cache_dir):
    """Why the factor is not 10: from this state (one of 2000 random ones) the falling arm drives
    wrist_1 to 61.6 rad/s, 19 times its URDF limit of 3.2 rad/s, and a quarter of the time step
    gives the same 61.6 rad/s: the model's own motion (no rotor or gear inertia slows its wrist)."""
    peaks = []
    for dt in (1e-3, 2.5e-4):
        sim = Simulator(robot_path("arm6"), cache_dir=cache_dir, dt=dt)
        sim.set_state(dict(zip(sim.actuated_joints, [-0.72, -1.48, -0.26, 0.94, -2.39, -0.72])),
                      dict(zip(sim.actuated_joints, [-0.73, 0.32, 0.66, -0.25, -0.26, 0.08])))
        peak = 0.0
        for _ in range(100):
            sim.advance(0.01)
            peak = max(peak, abs(sim.outputs(False).joint_velocities["wrist_1_joint"]))
        peaks.append(peak)
    assert peaks[0] > 10 * 3.2 * 1.9 and peaks[0] == pytest.approx(peaks[1], rel=1e-3)


# -- energy without input power -----------------------------------------------------------------------
def rk4_energy_growth(omega_dt: float) -> float:
    """|R(i omega dt)|^2: the factor RK4 multiplies an undamped oscillator's energy by per step."""
    z = 1j * omega_dt
    return abs(1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24) ** 2


@pytest.mark.parametrize("omega_dt", [2.75, 2.85])
def test_an_oscillator_beyond_rk4_stability_is_a_runaway_found_before_any_nan(cache_dir, omega_dt):
    """spring_mass undamped with its stiffness raised so that omega dt crosses RK4's stability
    limit 2 sqrt(2) on the imaginary axis: at 2.75 its energy decays (10 s, no error), at 2.85 it
    grows by |R(i omega dt)|^2 = 1.11 per step and the watch stops it at its first look, 100 steps
    in (energy x 4e4, speed 6 m/s: within the speed bound of 1000 m/s), with the figures."""
    sim = Simulator(robot_path("spring_mass"), cache_dir=cache_dir)
    stiffness = (omega_dt / sim.dt) ** 2  # N/m on 1 kg
    sim.set_parameters({"spring_stiffness": stiffness, "spring_damping": 0.0})
    sim.set_state({"slide": -0.05 + 1e-5})  # 10 um from rest: 3 cm/s at most
    start = sim.outputs(False).energy
    assert start == pytest.approx(0.5 * stiffness * 1e-10)
    if omega_dt < 2 * np.sqrt(2):
        sim.simulate(10.0, sample_every=10)
        assert sim.outputs(False).energy < start
        return
    with pytest.raises(SimulationError, match=r"runaway: the energy rose from") as raised:
        sim.simulate(10.0, sample_every=10)
    message = str(raised.value)
    assert raised.value.time == sim.time == pytest.approx(ENERGY_CHECK_STEPS * sim.dt)
    assert raised.value.coordinate == "slide_u" and "slide_u" in message
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.u))
    before, after = map(float, re.search(r"rose from (\S+) J to (\S+) J", message).groups())
    assert before == pytest.approx(start, rel=1e-12)
    assert after / before == pytest.approx(rk4_energy_growth(omega_dt) ** ENERGY_CHECK_STEPS, rel=1e-6)
    assert np.abs(sim.u).max() < 10.0  # far within the speed bound: the energy criterion found it


def generic_state(sim: Simulator) -> None:
    """Every independent joint away from zero and moving; free bases turning and drifting where
    the constraints allow (smaller offsets where the linkage cannot reach the larger ones)."""
    joints = sim.independent_joints
    free = [s for s in sim.speed_names if s.rsplit("_", 1)[-1] in ("vx", "vy", "vz", "wx", "wy", "wz", "w")]
    for scale in (1.0, 0.1, 0.01):
        positions = {j: scale * (0.3 + 0.2 * k) for k, j in enumerate(joints)}
        velocities = {j: 0.5 - 0.3 * k for k, j in enumerate(joints)}
        for extra in (free, free[len(free) // 2:], []):  # what the constraints do not contradict
            try:
                sim.set_state(positions, velocities | {s: 0.4 + 0.1 * k for k, s in enumerate(extra)})
                return
            except ValueError:
                continue
    raise AssertionError(f"no generic state for {sim.robot.name}")


@pytest.mark.parametrize("urdf", [pytest.param(p, marks=pytest.mark.slow) if p.stem in HEAVY_SHIPPED else p
                                  for p in SHIPPED], ids=[p.stem for p in SHIPPED])
def test_no_shipped_robot_is_a_runaway_in_10_s_unforced(urdf, cache_dir):
    """Every robot of urdf/ and test/urdf/, 10 s at 1 ms from a generic moving state with no
    input: no runaway, and the energy was watched the whole time."""
    sim = Simulator(urdf, cache_dir=cache_dir)
    generic_state(sim)
    rigid = len(sim.model.projection.speeds) == sim.model.n_u  # every speed dependent: 0 DoF, it cannot move
    assert sim.runaway.energy_unwatched is None and (sim.outputs(False).kinetic_energy > 0 or rigid)
    energy, kinetic = sim.runaway.energy(sim.time)
    sim.simulate(10.0, sample_every=100)
    assert sim.time == pytest.approx(10.0)
    final, _ = sim.runaway.energy(sim.time)
    assert final <= energy + 1e-6 * max(abs(energy), kinetic, 1.0)  # nothing gained


@pytest.mark.parametrize("integrator", ["rk4", "DOP853", "Radau"])
def test_a_pendulum_swinging_into_its_stops_or_starting_in_one_is_no_runaway(cache_dir, integrator):
    """The stops store energy while a joint is beyond its limit (k d^2 / 2): counted at the start,
    so a pendulum released 0.1 rad inside its stop (312 J stored, 3 % of it left after the
    critically damped stop pushes it out) passes, as one swinging into its stops does."""
    sim = Simulator(limited_pendulum(), cache_dir=cache_dir, integrator=integrator, speed_limit_factor=100)
    for positions, velocities in (({"hinge": 0.3}, {"hinge": 4.0}), ({"hinge": 0.6}, {})):
        sim.set_state(positions, velocities)
        stored = 0.5 * sim.parameter("hinge_limit_stiffness") * max(0.0, positions["hinge"] - 0.5) ** 2
        mechanical = sim.outputs(False).energy
        energy, _ = sim.runaway.energy(sim.time)
        assert energy == pytest.approx(mechanical + stored)
        peak = mechanical
        for _ in range(20 if integrator == "rk4" else 5):
            sim.advance(0.1)
            peak = max(peak, sim.outputs(False).energy)
            assert abs(sim.q[0]) < 0.55
        if stored:  # what the stop stored came back as motion: more than the start held
            assert peak > mechanical + 100 * ENERGY_TOLERANCE * abs(mechanical)


GEARED_PENDULUM = """<robot name="geared_pendulum_{tag}"><link name="base"/>
  <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <mb_sim><dc_motor name="motor" joint="hinge" {motor} voltage_limit="24"/></mb_sim></robot>"""


@pytest.mark.parametrize("tag, motor, state, stored", [
    # a rotor of n^2 J = 0.2 kg m^2 (back-EMF damping (K n)^2 / R = 1e-6 N m s), released swinging
    ("rotor", 'torque_constant="0.0001" resistance="1" gear_ratio="10" rotor_inertia="0.002"',
     dict(positions={"hinge": 0.2}, velocities={"hinge": 2.0}), 0.5 * 0.2 * 2.0**2),
    # a nearly lossless coil (L = 10 mH, R = 10 mOhm, L/R = 1 s) with 4 A in it, the arm at rest
    ("coil", 'torque_constant="0.05" resistance="0.01" inductance="0.01" gear_ratio="10"',
     dict(positions={"hinge": 0.0}, z=[4.0]), 0.5 * 0.01 * 4.0**2),
])
def test_a_motors_rotor_and_coil_energy_count_in_the_energy_watched(cache_dir, tag, motor, state, stored):
    """A pendulum on a geared motor whose rotor or coil holds energy at the start: it hands the
    arm energy (the links' T + V rises by over 10 x the tolerance: judged on T + V alone this would
    be a runaway), which the energy counted at the start holds; the whole energy only decays."""
    sim = Simulator(GEARED_PENDULUM.format(tag=tag, motor=motor), cache_dir=cache_dir)
    sim.set_state(**state)
    links = sim.outputs(False).energy
    energy, _ = sim.runaway.energy(sim.time)
    assert energy == pytest.approx(links + stored)
    highest, whole = links, [energy]
    for _ in range(50):
        sim.advance(0.1)
        highest = max(highest, sim.outputs(False).energy)
        whole.append(sim.runaway.energy(sim.time)[0])
    assert highest > links + 10 * ENERGY_TOLERANCE * abs(energy)
    assert np.all(np.diff(whole) <= 1e-9) and whole[-1] < energy


def test_the_watch_starts_again_after_set_state_parameters_and_inputs(cache_dir):
    """Energy put in by the user (a faster state, weaker gravity under a hanging pendulum, an
    effort) is no runaway: the watch measures the energy again from there."""
    sim = Simulator(robot_path("pendulum"), cache_dir=cache_dir)
    sim.set_state({"hinge": 0.5})
    sim.advance(0.5)
    sim.set_state(velocities={"hinge": 3.0}, as_initial=False)  # + 4.5 J
    sim.advance(0.5)
    sim.set_parameters({"gravity_g": 2.0})  # V = -m g z rises by 7.8 J x cos(q)
    sim.advance(0.5)
    sim.set_efforts({"hinge": 5.0})
    assert sim.runaway.energy_unwatched == "inputs (efforts, voltages, wrenches) are not zero"
    sim.advance(0.5)
    sim.set_efforts({"hinge": 0.0})
    assert sim.runaway.energy_unwatched is None
    sim.advance(0.5)
    sim.reset()
    sim.advance(0.5)
    assert sim.time == pytest.approx(0.5)


def test_energy_fed_by_a_velocity_offset_is_not_judged(cache_dir):
    """A spring-damper with a velocity offset pushes with d (L' - L0'): power in, the energy is not
    judged (an unstable stiffness then shows as a speed runaway instead)."""
    urdf = robot_path("spring_mass").read_text().replace('reference_length="1"',
                                                         'reference_length="1" velocity_offset="0.5"')
    offset = Simulator(urdf, cache_dir=cache_dir)
    assert offset.runaway.energy_unwatched == "spring-damper 'spring' has a velocity offset"
    sim = Simulator(robot_path("spring_mass"), cache_dir=cache_dir)
    assert sim.runaway.energy_unwatched is None
    sim.set_parameters({"spring_velocity_offset": 0.5, "spring_stiffness": (2.9 / sim.dt) ** 2, "spring_damping": 0.0})
    assert sim.runaway.energy_unwatched == "spring-damper 'spring' has a velocity offset"
    with pytest.raises(SimulationError, match=r"runaway: joint 'slide' speed .* m/s exceeds its bound .* m/s"):
        sim.simulate(1.0)


# -- effort limits ------------------------------------------------------------------------------------
def effort_warnings(**options) -> tuple[Simulator, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator(**options)
    return sim, [str(w.message) for w in caught if issubclass(w.category, EffortLimitWarning)]


def test_joints_without_an_effort_limit_are_listed_in_one_warning_and_get_the_default(cache_dir):
    four_bar, messages = effort_warnings(robot=robot_path("four_bar"), cache_dir=cache_dir)
    assert messages == []  # coupler and rocker have none, but they are passive: the loop drives them
    four_bar.set_efforts({"rocker_joint": 1e9, "crank_joint": 1e9})
    assert four_bar.efforts.tolist() == [100.0, 0.0, 1e9]  # crank: its URDF limit; rocker: unclamped
    limited, messages = effort_warnings(robot=robot_path("four_bar"), cache_dir=cache_dir, default_effort_limit=20.0)
    assert messages == []
    limited.set_efforts({"rocker_joint": 1e9, "crank_joint": -1e9})
    assert limited.efforts.tolist() == [-100.0, 0.0, 20.0]
    _, messages = effort_warnings(robot=robot_path("pendulum"), cache_dir=cache_dir)
    assert messages == ["robot 'pendulum': joint hinge has no effort limit in the URDF: efforts are not clamped; "
                        "set default_effort_limit (mb-sim: --default-effort-limit)"]
    _, messages = effort_warnings(robot=robot_path("arm6"), cache_dir=cache_dir)
    assert messages == []
    for bad in (0.0, -5.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="default_effort_limit must be a positive finite number"):
            Simulator(robot_path("pendulum"), cache_dir=cache_dir, default_effort_limit=bad)


def test_the_default_effort_limit_bounds_what_the_pendulum_feels(cache_dir):
    """100 N m asked, 2 N m applied: from rest at the bottom, u = 2 / I t to first order."""
    sim = Simulator(robot_path("pendulum"), cache_dir=cache_dir, default_effort_limit=2.0)
    sim.set_efforts({"hinge": 100.0})
    sim.advance(0.01)
    assert sim.u[0] == pytest.approx(2.0 / 1.001 * 0.01, rel=1e-3)


# -- the command line ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mb_sim(cache_dir):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(MB_SIM), *args], capture_output=True, text=True, timeout=120)
    return run


def test_simulate_prints_the_effort_limit_warning_as_one_line_and_takes_a_default(mb_sim, tmp_path):
    plain = mb_sim("simulate", "pendulum", "--duration", "0.01", "--input", "hinge=100",
                   "--csv", str(tmp_path / "a.csv"))
    clamped = mb_sim("simulate", "pendulum", "--duration", "0.01", "--input", "hinge=100",
                     "--default-effort-limit", "2", "--csv", str(tmp_path / "b.csv"))
    for result in (plain, clamped):
        assert result.returncode == 0, result.stderr
        assert "Warning:" not in result.stderr and "warnings.warn" not in result.stderr
    (line,) = [line for line in plain.stderr.splitlines() if "effort limit" in line]
    assert line == ("mb-sim: warning: robot 'pendulum': joint hinge has no effort limit in the URDF: efforts are "
                    "not clamped; set default_effort_limit (mb-sim: --default-effort-limit)")
    assert "efforts are clamped to default_effort_limit 2 (N m or N)" in clamped.stderr
    final_speed = [float((tmp_path / f"{n}.csv").read_text().splitlines()[-1].split(",")[-1]) for n in "ab"]
    assert final_speed == pytest.approx([100.0 / 1.001 * 0.01, 2.0 / 1.001 * 0.01], rel=1e-3)
    refused = mb_sim("simulate", "pendulum", "--duration", "0.01", "--default-effort-limit", "-2")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith(
        "mb-sim: argument --default-effort-limit: must be positive, got '-2'")


def test_simulate_stops_a_runaway_with_a_one_line_error(mb_sim, tmp_path):
    urdf = tmp_path / "light_chain.urdf"
    urdf.write_text(light_chain())
    result = mb_sim("simulate", str(urdf), "--duration", "1", "--input", "link1_joint=1")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"mb-sim: simulation failed: t = 0\.00\d s \(link\d_joint_u\): runaway: joint 'link\d_joint' "
                        r"speed \S+ rad/s exceeds its bound 1e\+03 rad/s .*", last), last
    # (calls of 10 steps, one per sample: the state stops being finite in the second call; the
    # failure names the runaway that led to it)
    assert last.endswith("; then the state is not finite (NaN or inf)")
