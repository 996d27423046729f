"""Recordings with known parameters for the identification tests and benchmark.

- :func:`inverse_dynamics_recording`: a Fourier-series motion sampled exactly, its efforts from the
  compiled model's own ``M(q) u' - F(q, u)`` (noise-free up to rounding: no integration involved);
- :func:`simulated_recording`: the robot run forward with RK4 under a computed-torque plus PD
  controller tracking a designed excitation, every applied effort recorded (what a real robot's
  recording is like, with the simulator as the robot).
Both write mb_sim's own MCAP recording (sensor_msgs/JointState on /joint_states).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mb_sim.identify.excitation import ExcitationTrajectory, design_excitation
from mb_sim.identify.identification import structural_base
from mb_sim.identify.parameters import prior_parameters
from mb_sim.identify.regressor import NumericRegressor
from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.sim.recording import Recording, write_mcap


def fourier_motion(joints: list[str], duration: float, rate: float, seed: int = 3, amplitude: float = 0.8,
                   harmonics: int = 4, period: float = 5.0) -> tuple[np.ndarray, ExcitationTrajectory]:
    """Sample times and a random (not optimized) Fourier-series motion of `joints`."""
    rng = np.random.default_rng(seed)
    n = len(joints)
    scale = amplitude / harmonics
    trajectory = ExcitationTrajectory(list(joints), np.zeros(n), rng.normal(size=(n, harmonics)) * scale,
                                      rng.normal(size=(n, harmonics)) * scale, period, duration)
    return np.arange(0.0, duration, 1.0 / rate), trajectory


def write(path: Path, times, joints, q, u, efforts) -> Path:
    write_mcap(path, Recording(np.asarray(times), list(joints), q, u, efforts, [], np.zeros((len(times), 0, 4, 4)), []))
    return path


def inverse_dynamics_recording(urdf: str | Path, path: Path, duration: float = 10.0, rate: float = 1000.0,
                               noise: float = 0.0, seed: int = 3) -> Path:
    """Exact motion and its efforts by the compiled model (see the module docstring); `noise` adds
    Gaussian noise of that fraction of each signal's standard deviation to positions, velocities and efforts."""
    sim = Simulator(urdf)
    joints = [j for j in sim.actuated_joints]
    times, trajectory = fourier_motion(joints, duration, rate, seed)
    q, u, a = trajectory.sample(times)
    n = len(sim.u)
    qi, ui = [sim.joint_indices[j][0] for j in joints], [sim.joint_indices[j][1] for j in joints]
    efforts = np.zeros_like(q)
    Q, U, A = np.zeros((len(times), len(sim.q))), np.zeros((len(times), n)), np.zeros((len(times), n))
    Q[:, qi], U[:, ui], A[:, ui] = q, u, a
    zero = np.zeros(len(sim.efforts))
    for k in range(len(times)):
        e = sim.model.evaluate(Q[k], U[k], zero)
        efforts[k] = (e["mass_matrix"].reshape(n, n) @ A[k] - e["forcing"].ravel())[ui]
    if noise:
        rng = np.random.default_rng(seed + 1)
        q, u, efforts = (x + noise * x.std(axis=0) * rng.normal(size=x.shape) for x in (q, u, efforts))
    return write(path, times, joints, q, u, efforts)


def simulated_recording(urdf: str | Path, path: Path, duration: float = 20.0, dt: float = 1e-3,
                        bandwidth: float = 20.0) -> Path:
    """The robot of `urdf` run forward tracking an excitation designed on it (module docstring)."""
    robot = load_urdf(urdf)
    regressor = NumericRegressor(robot)
    base = structural_base(regressor, robot, np.random.default_rng(0))
    prior = prior_parameters(robot, regressor.symbolic)
    trajectory = design_excitation(robot, regressor, base, prior, duration=duration)
    joints = trajectory.joint_names
    times = np.arange(0.0, duration, dt)
    q_ref, u_ref, a_ref = trajectory.sample(times)
    feed_forward = np.einsum("skp,p->sk", regressor(q_ref, u_ref, a_ref), prior)
    sim = Simulator(urdf, dt=dt)
    qi, ui = [sim.joint_indices[j][0] for j in joints], [sim.joint_indices[j][1] for j in joints]
    sim.set_state(dict(zip(joints, q_ref[0])), dict(zip(joints, u_ref[0])))
    n = len(sim.u)
    mass = sim.model.evaluate(sim.q, sim.u, np.zeros(len(sim.efforts)))["mass_matrix"].reshape(n, n)
    inertia = np.diag(mass)[ui]  # gains per joint: a stable discrete PD whatever the link's size
    kp, kd = bandwidth ** 2 * inertia, 1.4 * bandwidth * inertia
    Q, U, T = (np.zeros_like(q_ref) for _ in range(3))
    for k in range(len(times)):
        Q[k], U[k] = sim.q[qi], sim.u[ui]
        sim.set_efforts(dict(zip(joints, feed_forward[k] + kp * (q_ref[k] - Q[k]) + kd * (u_ref[k] - U[k]))))
        applied = dict(zip(sim.actuated_joints, sim.efforts))  # after the effort limits' clamp
        T[k] = [applied[j] for j in joints]
        sim.step()
    return write(path, times, joints, Q, U, T)
