"""Linearization in minimal coordinates and equilibria, against independent references: the
cart-pole's textbook linearization written out here, a finite-difference linearization of the
simulator for the four-bar, Pinocchio's inverse dynamics for gravity compensation, and the
diff-drive's controllability worked out by hand; plus the command line."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from mb_sim.sim import Simulator
from mb_sim.sim.linearize import LinearizationError, equilibrium, linearize
from mb_sim.sim.lqr import lqr_policy

MB_SIM = Path(sys.executable).parent / "mb-sim"


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


def simulator(repo, cache_dir, name: str) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulator(repo / "urdf" / f"{name}.urdf", cache_dir=cache_dir)


def test_the_cart_pole_matches_the_textbook_linearization(repo, cache_dir):
    lin = linearize(simulator(repo, cache_dir, "cart_pole"))
    # Cart M, pole m with its centre of mass l above the hinge and inertia I about it; angle from
    # upright, positive tipping toward +x.  Lagrange: [[M+m, m l], [m l, I + m l^2]] [x'', th''] =
    # [F, tau + m g l th] about th = 0.
    M, m, l, inertia, g = 1.0, 0.2, 0.5, 0.016676, 9.81
    mass = np.array([[M + m, m * l], [m * l, inertia + m * l * l]])
    stiffness = np.array([[0.0, 0.0], [0.0, m * g * l]])
    a = np.block([[np.zeros((2, 2)), np.eye(2)], [np.linalg.solve(mass, stiffness), np.zeros((2, 2))]])
    b = np.vstack([np.zeros((2, 2)), np.linalg.inv(mass)])
    assert lin.states == ["cart_joint_q", "pole_joint_q", "cart_joint_u", "pole_joint_u"]
    assert np.abs(lin.A - a).max() < 1e-9 and np.abs(lin.B - b).max() < 1e-9
    assert lin.controllability_rank == 4


def _crank_acceleration(sim: Simulator, crank: str, angle: float, speed: float) -> float:
    sim.set_state(positions={crank: angle}, velocities={crank: speed}, as_initial=False)
    return sim.outputs().accelerations[sim.speed_names[sim.joint_indices[crank][1]]]


def test_the_four_bar_has_one_dof_and_the_eigenvalues_of_a_finite_difference_linearization(repo, cache_dir):
    sim = simulator(repo, cache_dir, "four_bar")
    crank = sim.independent_joints[0]
    lin = linearize(sim, {crank: 0.7}, {crank: 0.3})
    assert lin.A.shape == (2, 2) and lin.independent_coordinates == [f"{crank}_q"]
    assert len(lin.dependent_coordinates) == 2
    h = 1e-5
    d_angle = (_crank_acceleration(sim, crank, 0.7 + h, 0.3) - _crank_acceleration(sim, crank, 0.7 - h, 0.3)) / (2 * h)
    d_speed = (_crank_acceleration(sim, crank, 0.7, 0.3 + h) - _crank_acceleration(sim, crank, 0.7, 0.3 - h)) / (2 * h)
    finite = np.array([[0.0, 1.0], [d_angle, d_speed]])
    assert np.sort_complex(lin.eigenvalues) == pytest.approx(np.sort_complex(np.linalg.eigvals(finite)), abs=1e-5)


def _rocker_angle(sim: Simulator, crank: float) -> float:
    sim.set_state(positions={"crank_joint": crank}, as_initial=False)
    return sim.q[sim.joint_indices["rocker_joint"][0]]


def test_outputs_of_dependent_joints_and_links_follow_the_constraints(repo, cache_dir):
    sim = simulator(repo, cache_dir, "four_bar")
    lin = linearize(sim, {"crank_joint": 0.7}, {"crank_joint": 0.3}, outputs=["rocker_joint", "rocker_joint_u", "crank.x"])
    h = 1e-6
    ratio = (_rocker_angle(sim, 0.7 + h) - _rocker_angle(sim, 0.7 - h)) / (2 * h)
    assert lin.C[0] == pytest.approx([ratio, 0.0], abs=1e-8)  # d rocker = ratio d crank
    assert lin.C[1][1] == pytest.approx(ratio, abs=1e-8)  # and so are their speeds
    assert lin.C[2] == pytest.approx([0.0, 0.0], abs=1e-12) and not lin.D.any()  # the crank frame's origin is its pivot


def test_gravity_compensation_equals_pinocchios_inverse_dynamics(repo, cache_dir):
    sim = simulator(repo, cache_dir, "arm6")
    pose = dict(zip(sim.actuated_joints, [0.3, -1.1, 0.9, -0.6, 0.5, 0.2]))
    held = equilibrium(sim, pose)
    model = pin.buildModelFromUrdf(str(repo / "urdf" / "arm6.urdf"))
    q = np.array([pose[model.names[k]] for k in range(1, model.njoints)])
    tau = pin.rnea(model, model.createData(), q, np.zeros(model.nv), np.zeros(model.nv))
    assert held.residual < 1e-9
    assert [held.inputs[j] for j in sim.actuated_joints] == pytest.approx(tau.tolist(), abs=1e-9)


def test_diff_drive_is_controllable_in_seven_of_nine_directions_when_driving_straight(repo, cache_dir):
    sim = simulator(repo, cache_dir, "diff_drive")
    straight = linearize(sim, velocities={"right_wheel_joint": 5.0, "left_wheel_joint": 5.0}, input_kind="voltage")
    at_rest = linearize(sim, input_kind="voltage")
    assert len(straight.states) == 9 and straight.dependent_speeds == ["base_joint_vx", "base_joint_vy", "base_joint_w"]
    # Linearized, x and the heading are fixed combinations of the wheel angles (two uncontrollable
    # directions); the lateral offset y is reached through the heading only while driving.
    assert straight.controllability_rank == 7 and at_rest.controllability_rank == 6


WRENCH = [f"body.{c}" for c in ("force_x", "force_y", "force_z", "torque_x", "torque_y", "torque_z")]


def pushed_body(repo, cache_dir) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulator(repo / "urdf" / "free_body.urdf", cache_dir=cache_dir, wrench_links=["body"])


def quaternion_product_matrix(p: np.ndarray) -> np.ndarray:
    """L(p) with p * r = L(p) r, quaternions (w, x, y, z)."""
    w, x, y, z = p
    return np.array([[w, -x, -y, -z], [x, w, -z, y], [y, z, w, -x], [z, -y, x, w]])


def test_a_floating_body_linearizes_in_its_tangent_chart_as_finite_differences_say(repo, cache_dir):
    """A turned, spinning, drifting free body pushed by its wrench inputs: A and B against central
    differences of the simulator's own rates, the orientation moved as Q0 * exp(r / 2) and its
    rate read as 2 vec(Q0* * Q') (equal to the chart's rate to first order), written out here."""
    sim = pushed_body(repo, cache_dir)
    angle, axis = 0.7, np.array([1.0, 2.0, -1.0]) / math.sqrt(6.0)
    q0 = sim.q.copy()
    q0[:3], q0[3:7] = [0.3, -0.2, 1.1], np.r_[math.cos(angle / 2), math.sin(angle / 2) * axis]
    u0 = np.array([0.1, -0.3, 0.2, 1.5, -0.7, 2.0])
    sim.set_state(q=q0, u=u0)
    lin = linearize(sim, inputs={"body.force_z": 5.0}, input_kind="wrench")
    assert lin.states[3:6] == ["base_joint_rx", "base_joint_ry", "base_joint_rz"] and lin.inputs == WRENCH
    r0 = np.zeros(6)
    r0[2] = 5.0
    turn = quaternion_product_matrix(q0[3:7])
    back = quaternion_product_matrix(q0[3:7] * np.array([1, -1, -1, -1]))

    def rates(x: np.ndarray, r: np.ndarray) -> np.ndarray:
        q, u = q0.copy(), u0 + x[6:]
        q[:3] += x[:3]
        half = np.linalg.norm(x[3:6]) / 2
        q[3:7] = turn @ (np.r_[math.cos(half), math.sin(half) * x[3:6] / (2 * half)] if half else np.r_[1.0, 0, 0, 0])
        qdot, udot = sim.model.forward_dynamics(q, u, r, sim.model.buffers.params.copy(), 0.0)[:2]
        return np.r_[qdot[:3], (2 * back @ qdot[3:7])[1:], udot]

    h = 1e-6
    a = np.array([(rates(h * e, r0) - rates(-h * e, r0)) / (2 * h) for e in np.eye(12)]).T
    b = np.array([(rates(np.zeros(12), r0 + h * e) - rates(np.zeros(12), r0 - h * e)) / (2 * h) for e in np.eye(6)]).T
    assert np.max(np.abs(lin.A - a)) < 1e-7 * np.max(np.abs(a))
    assert np.max(np.abs(lin.B - b)) < 1e-7 * np.max(np.abs(b))
    assert np.allclose(lin.deviation(q0, u0), 0.0, atol=1e-15)


def test_an_lqr_on_a_floating_body_s_wrench_holds_it_where_it_should_hover(repo, cache_dir):
    """The body hovers at z = 1 m on an LQR of its wrench (hover thrust 2 kg g, the torque its
    centre of mass 1 cm off the origin asks); from 0.5 rad turned, 0.2 m away and moving it comes
    back, the wrench recomputed every 10 ms from the full state.  Without it the body falls."""
    sim = pushed_body(repo, cache_dir)
    policy = lqr_policy(sim, {"base_joint_z": 1.0}, WRENCH, [10.0] * 6 + [1.0] * 6, [1.0] * 3 + [100.0] * 3)
    assert policy.positions[3:] == ["base_joint_rx", "base_joint_ry", "base_joint_rz"]
    assert np.allclose(policy.equilibrium, [0, 0, 2.0 * 9.81, 0, -0.01 * 2.0 * 9.81, 0], atol=1e-12)
    assert np.max(policy.closed_loop_eigenvalues.real) < -0.5
    angle, axis = 0.5, np.array([1.0, -2.0, 1.0]) / math.sqrt(6.0)
    start = sim.q.copy()
    start[:3], start[3:7] = [0.2, -0.1, 1.15], np.r_[math.cos(angle / 2), math.sin(angle / 2) * axis]
    sim.set_state(q=start, u=[0.1, 0.2, -0.3, 0.5, -0.4, 0.3])
    for _ in range(800):
        wrench = policy.command_state(sim.q, sim.u)
        sim.clear_wrenches("body")
        sim.apply_wrench("body", [wrench[n] for n in WRENCH[:3]], [wrench[n] for n in WRENCH[3:]])
        sim.advance(0.01)
    assert np.linalg.norm(sim.q[:3] - [0.0, 0.0, 1.0]) < 1e-3
    assert np.linalg.norm(sim.q[4:7]) < 1e-4 and np.linalg.norm(sim.u) < 1e-3
    sim.clear_wrenches()
    sim.advance(1.0)
    assert sim.q[2] < 1.0 - 0.5 * 9.81 * 0.9**2


def test_the_lqr_of_the_cart_pole_is_stable_and_balances_it(repo, cache_dir):
    sim = simulator(repo, cache_dir, "cart_pole")
    policy = lqr_policy(sim, {}, ["cart_joint"], [1, 10, 1, 1], [0.1])
    assert (policy.closed_loop_eigenvalues.real < 0).all()
    sim.set_state(positions={"pole_joint": 0.1})
    for _ in range(500):
        positions = {j: sim.q[i] for j, (i, _) in sim.joint_indices.items()}
        velocities = {j: sim.u[k] for j, (_, k) in sim.joint_indices.items()}
        sim.set_efforts(policy.command(positions, velocities))
        sim.advance(0.01)
    assert abs(sim.q[sim.joint_indices["pole_joint"][0]]) < 0.01


def test_the_command_line_prints_and_writes_the_linearization(repo, tmp_path):
    out = tmp_path / "lin.json"
    result = subprocess.run([str(MB_SIM), "linearize", "cart_pole", "--inputs", "effort", "--out", str(out), "--quiet"],
                            text=True, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "controllability rank: 4 of 4" in result.stdout and "eigenvalues: 0, 0, 4.10054, -4.10054" in result.stdout
    saved = json.loads(out.read_text())
    assert saved["states"][1] == "pole_joint_q" and math.isclose(saved["A"][3][1], 16.814453, rel_tol=1e-6)
    balance = subprocess.run([str(MB_SIM), "equilibrium", "double_pendulum", "--fix", "shoulder=0.5", "elbow=0", "--quiet"],
                             text=True, capture_output=True, timeout=300)
    assert balance.returncode == 0, balance.stderr
    # Both rods hang from the shoulder: (1 kg * 0.5 m + 0.5 kg * 1.5 m) g sin(0.5), the elbow's 0.5 * 0.5 g sin(0.5).
    efforts = dict(line.split(" = ") for line in balance.stdout.splitlines())
    assert abs(float(efforts["shoulder"].split()[0])) == pytest.approx(1.25 * 9.81 * math.sin(0.5), rel=1e-9)
    assert abs(float(efforts["elbow"].split()[0])) == pytest.approx(0.25 * 9.81 * math.sin(0.5), rel=1e-9)


def test_the_command_line_takes_wrench_links_for_a_floating_body(tmp_path):
    """mb-sim linearize/equilibrium --wrench-link: B has the body's six wrench columns (12 states,
    fully controllable); the hover wrench is 2 kg g up and the torque of the 1 cm offset centre of
    mass; an unknown link is one line naming the links."""
    out = tmp_path / "lin.json"
    result = subprocess.run([str(MB_SIM), "linearize", "free_body", "--wrench-link", "body", "--inputs", "wrench",
                             "--out", str(out), "--quiet"], text=True, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "controllability rank: 12 of 12" in result.stdout
    saved = json.loads(out.read_text())
    assert saved["inputs"] == WRENCH and saved["states"][3:6] == ["base_joint_rx", "base_joint_ry", "base_joint_rz"]
    balance = subprocess.run([str(MB_SIM), "equilibrium", "free_body", "--wrench-link", "body", "--inputs", "wrench",
                              "--quiet"], text=True, capture_output=True, timeout=300)
    assert balance.returncode == 0, balance.stderr
    wrench = {name: float(value.split()[0]) for name, value in (line.split(" = ") for line in balance.stdout.splitlines())}
    assert wrench["body.force_z"] == pytest.approx(2.0 * 9.81, rel=1e-12)
    assert wrench["body.torque_y"] == pytest.approx(-0.01 * 2.0 * 9.81, rel=1e-12)
    bad = subprocess.run([str(MB_SIM), "linearize", "free_body", "--wrench-link", "nope", "--quiet"],
                         text=True, capture_output=True, timeout=300)
    assert bad.returncode != 0 and bad.stderr.strip().count("\n") == 0
    assert "wrench_links 'nope': no such link (links: world, body, camera_mount)" in bad.stderr
