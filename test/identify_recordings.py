"""Recordings with known parameters for the identification tests and benchmark.

- :func:`inverse_dynamics_recording`: a Fourier-series motion sampled exactly, its efforts from the
  compiled model's own ``M(q) u' - F(q, u)`` (noise-free up to rounding: no integration involved);
- :func:`simulated_recording`: the robot run forward tracking a designed excitation
  (:func:`mb_sim.identify.rehearsal.rehearse`: what a real robot's recording is like, with the
  simulator as the robot).
Both write mb_sim's own MCAP recording (sensor_msgs/JointState on /joint_states).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mb_sim.identify.excitation import ExcitationTrajectory, design_excitation
from mb_sim.identify.identification import structural_base
from mb_sim.identify.parameters import prior_parameters
from mb_sim.identify.regressor import NumericRegressor
from mb_sim.identify.rehearsal import rehearse, write_joint_states
from mb_sim.model import load_urdf
from mb_sim.sim import Simulator


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
    return write_joint_states(path, times, joints, q, u, efforts)


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
                        command_topic: str | None = None) -> Path:
    """The robot of `urdf` run forward tracking an excitation designed on it (module docstring)."""
    robot = load_urdf(urdf)
    regressor = NumericRegressor(robot)
    base = structural_base(regressor, robot, np.random.default_rng(0))
    trajectory = design_excitation(robot, regressor, base, prior_parameters(robot, regressor.symbolic),
                                   duration=duration)
    return rehearse(urdf, trajectory, path, dt, command_topic=command_topic)

