"""URDF joint damping and friction too stiff for RK4 at the step (issue 23: pybullet's xarm6 and
xarm7, link6 izz 8e-5 kg m^2 with damping 1 and friction 1, diverged within 14 ms at 1 ms).  Such
joints put up, through each RK4 step, the resistance a backward Euler step gives
(mb_sim.codegen.dissipation); the references here are independent: the resistance law's own root
(terminal speeds), SciPy's Radau on the full equations, and the energy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from mb_sim.resources import robot_path
from mb_sim.sim import SimulationError, Simulator
from mb_sim.codegen.dissipation import STIFF_RATE_DT

pytestmark = pytest.mark.filterwarnings("ignore::mb_sim.sim.EffortLimitWarning")

FRICTION_SPEED = 0.01  # mb_sim.model.loads.FRICTION_SPEED: the smooth friction's speed scale


def light_wrist_arm(damping: float = 1.0, friction: float = 1.0, izz: float = 8e-5) -> str:
    """A 2 kg upper arm on a damped shoulder carrying an xarm-like hand: 50 g, izz 8e-5 kg m^2,
    on a wrist with URDF damping and friction (pybullet's xarm6 link6 values)."""
    return f"""<robot name="light_wrist"><link name="base"/>
      <link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
      <link name="hand"><inertial><origin xyz="0 0 0"/><mass value="0.05"/>
        <inertia ixx="{izz}" ixy="0" ixz="0" iyy="{izz}" iyz="0" izz="{izz}"/></inertial></link>
      <joint name="shoulder" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
        <dynamics damping="0.1"/></joint>
      <joint name="wrist" type="continuous"><parent link="arm"/><child link="hand"/><origin xyz="0.4 0 0"/>
        <axis xyz="0 0 1"/><limit effort="10" velocity="3"/><dynamics damping="{damping}" friction="{friction}"/>
      </joint></robot>"""


def lone_wrist(offset: float = 0.0, axis: str = "0 0 1") -> str:
    """The hand alone on its wrist (centre of mass `offset` m from the axis), damping and friction 1."""
    return f"""<robot name="lone_wrist"><link name="base"/>
      <link name="hand"><inertial><origin xyz="{offset} 0 0"/><mass value="0.05"/>
        <inertia ixx="8e-5" ixy="0" ixz="0" iyy="8e-5" iyz="0" izz="8e-5"/></inertial></link>
      <joint name="wrist" type="continuous"><parent link="base"/><child link="hand"/><axis xyz="{axis}"/>
        <limit effort="10" velocity="3"/><dynamics damping="1" friction="1"/></joint></robot>"""


def terminal_speed(effort: float, damping: float = 1.0, friction: float = 1.0) -> float:
    """The speed at which the resistance d u + f tanh(u / v_s) balances `effort`."""
    return brentq(lambda u: damping * u + friction * math.tanh(u / FRICTION_SPEED) - effort, -100.0, 100.0)


def start(sim: Simulator) -> None:
    sim.set_state({"shoulder": 0.3, "wrist": 0.0}, {"shoulder": 0.0, "wrist": 5.0})


def test_the_light_wrist_runs_10_s_at_1_ms():
    # Explicit RK4 diverged here within milliseconds (a runaway or a non-finite state).
    sim = Simulator(light_wrist_arm(), dt=1e-3)
    rate_dt = (1.0 + 1.0 / FRICTION_SPEED) / 8e-5 * 1e-3  # (d + f / v_s) / I dt: 1262, RK4's limit is 2.8
    assert sim.stiff_joints() == {"wrist": pytest.approx(rate_dt, rel=1e-9)}
    start(sim)
    sim.advance(10.0)  # the energy watch (on) would stop a gain
    assert np.all(np.isfinite(sim.u)) and sim.time == pytest.approx(10.0)


@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_the_light_wrist_follows_radau_on_the_full_equations(dt):
    # The wrist starts at 5 rad/s and stops within a fraction of a millisecond: the first step
    # moves it by about u0 dt / 2 before the resistance holds it (the scheme is first order in
    # the stiff joint); the shoulder, which RK4 resolves, stays fourth order.
    reference = Simulator(light_wrist_arm(), integrator="Radau", rtol=1e-10, atol=1e-12)
    start(reference)
    reference.advance(1.0)
    sim = Simulator(light_wrist_arm(), dt=dt)
    start(sim)
    sim.advance(1.0)
    shoulder, wrist = (sim.joint_indices[j][0] for j in ("shoulder", "wrist"))
    assert abs(sim.q[shoulder] - reference.q[shoulder]) < 1e-6
    assert abs(sim.q[wrist] - reference.q[wrist]) < 5.0 * dt / 2 * 1.01
    assert sim.u == pytest.approx(reference.u, abs=1e-6)


@pytest.mark.parametrize("backend", ["c", "numpy"])
@pytest.mark.parametrize("effort", [0.5, 2.0])
def test_a_driven_light_wrist_turns_at_the_speed_its_resistance_allows(backend, effort):
    # Below the friction (0.5 N m) the wrist creeps at 5.4 mrad/s, above it (2 N m) turns at
    # 1 rad/s: the root of d u + f tanh(u / v_s) = effort, with no oscillation.
    sim = Simulator(lone_wrist(), backend=backend)
    sim.set_efforts({"wrist": effort})
    sim.advance(0.2)
    before = sim.q[0]
    sim.advance(1.0)
    expected = terminal_speed(effort)
    assert sim.u[0] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert sim.q[0] - before == pytest.approx(expected * 1.0, rel=1e-6)


def test_friction_holds_the_light_wrist_against_gravity():
    # A horizontal wrist axis with the hand's centre of mass 5 cm off it: gravity's 0.0245 N m is
    # below the 1 N m friction, so the hand creeps at the resistance's root, 0.24 mrad/s.
    sim = Simulator(lone_wrist(offset=0.05, axis="0 1 0"))
    sim.advance(1.0)
    gravity_torque = 0.05 * 9.81 * 0.05
    assert sim.u[0] == pytest.approx(terminal_speed(gravity_torque), rel=1e-6)
    assert abs(sim.q[0]) < 1e-3


def test_a_stiffly_damped_linkage_stays_closed_and_loses_energy():
    # urdf/four_bar.urdf with damping 5000 N m s/rad on its crank (a decay rate beyond RK4 at
    # 1 ms): the loop stays closed, the energy only falls, and the motion is Radau's on the full
    # equations to the scheme's first order.
    xml = robot_path("four_bar").read_text().replace(
        '<limit effort="100" velocity="20"/>', '<limit effort="100" velocity="20"/><dynamics damping="5000"/>')
    sim = Simulator(xml)
    assert list(sim.stiff_joints()) == ["crank_joint"] and sim.stiff_joints()["crank_joint"] > 3
    reference = Simulator(xml, integrator="Radau", rtol=1e-10, atol=1e-12)
    energies = []
    for s in (sim, reference):
        s.set_state({}, {"crank_joint": 3.0})
    for _ in range(20):
        sim.advance(0.05)
        reference.advance(0.05)
        energies.append(sim.outputs(False).energy)
        assert max(abs(e.position).max() for e in sim.constraint_errors().values()) < 1e-9
    assert all(b <= a + 1e-12 for a, b in zip(energies, energies[1:]))
    assert sim.q == pytest.approx(reference.q, abs=2e-3)


def test_the_stiff_joints_follow_the_parameters_and_the_integrator():
    sim = Simulator(light_wrist_arm())
    sim.set_parameters({"wrist_damping": 0.0, "wrist_friction": 0.0})
    assert sim.stiff_joints() == {}
    sim.set_parameters({"wrist_damping": 0.5 * 8e-5 / 1e-3})  # rate x dt 0.5: RK4 resolves it
    assert sim.stiff_joints() == {}
    sim.set_parameters({"wrist_damping": 1.0})
    assert set(sim.stiff_joints()) == {"wrist"}
    assert STIFF_RATE_DT < 2.78  # below RK4's stability limit on a decay
    assert Simulator(light_wrist_arm(), integrator="Radau").stiff_joints() == {}  # it takes them whole


def test_joints_that_are_not_stiff_are_classic_rk4_bit_for_bit():
    # arm6's joints move fast enough here that friction's slope vanishes and damping is mild:
    # the same motion as the same robot without the implicit rows' help, i.e. as a model whose
    # dissipation sits in F, integrated by RK4 by hand from the forward dynamics.
    sim = Simulator(robot_path("arm6"))
    sim.set_state(dict(zip(sim.actuated_joints, [0.3, -0.5, 0.4, 0.2, -0.3, 0.1])),
                  dict(zip(sim.actuated_joints, [1.0, -1.2, 0.8, 2.0, -1.5, 3.0])))
    q, u = sim.q.copy(), sim.u.copy()
    model, dt = sim.model, sim.dt
    b = model.buffers

    def f(q, u):
        qdot, udot = model.forward_dynamics(q, u, b.inputs.copy(), b.params.copy())[:2]
        return qdot, udot

    k1 = f(q, u)
    k2 = f(q + dt / 2 * k1[0], u + dt / 2 * k1[1])
    k3 = f(q + dt / 2 * k2[0], u + dt / 2 * k2[1])
    k4 = f(q + dt * k3[0], u + dt * k3[1])
    expected = u + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    sim.set_state(dict(zip(sim.actuated_joints, [0.3, -0.5, 0.4, 0.2, -0.3, 0.1])),
                  dict(zip(sim.actuated_joints, [1.0, -1.2, 0.8, 2.0, -1.5, 3.0])))
    sim.advance(dt)
    assert sim.u == pytest.approx(expected, rel=1e-12, abs=1e-12)

