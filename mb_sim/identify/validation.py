"""Validation by replay: the recorded efforts run open loop on a model, against the recorded motion.

An open-loop replay of a long recording drifts away from it however good the model (a robot
under effort control is not stable on its own), so the recording is cut into segments of
`horizon` seconds: each starts from the recorded positions and velocities and runs the recorded
efforts with RK4, at the recording's step when it is 1 ms or shorter, else at about 1 ms; each
step takes the effort interpolated linearly to its middle (the recorded efforts are samples of an
effort that changes in between; a held one is recorded as the mean about each switch, which this
turns back into the held value to second order).  The error is the
joint positions' RMS difference over every sample of every segment.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mb_sim.identify.signals import JointSignals, RecordingError
from mb_sim.sim import SimulationError, Simulator

__all__ = ["ReplayComparison", "replay_error"]

DEFAULT_HORIZON = 1.0
FINEST_STEP = 1e-3
"""Replay step [s] for recordings slower than 1 kHz (their efforts interpolated in between)."""


@dataclass
class ReplayComparison:
    """RMS and largest joint position error [rad or m] of a replay, per joint and in all."""

    joint_names: list[str]
    rms: np.ndarray
    largest: np.ndarray
    times: np.ndarray
    simulated: np.ndarray  # (samples, joints) positions the model gave (NaN where a segment failed)
    failed_samples: int = 0  # samples of segments whose simulation failed (left out of the errors)

    @property
    def total(self) -> float:
        return float(np.sqrt(np.mean(self.rms ** 2)))


def replay_error(urdf: str | Path, signals: JointSignals, horizon: float = DEFAULT_HORIZON) -> ReplayComparison:
    """Replay `signals`' efforts on the model of `urdf` in segments of `horizon` seconds."""
    dt = float(np.median(np.diff(signals.times)))
    substeps = max(1, int(round(dt / FINEST_STEP)))
    sim = Simulator(urdf, dt=dt / substeps)
    missing = [j for j in signals.joint_names if j not in sim.actuated_joints]
    if missing:
        raise RecordingError(f"{signals.source}: joints {', '.join(missing)} take no effort in the model of {urdf}")
    steps = max(1, int(round(horizon / dt)))
    simulated = np.full_like(signals.positions, np.nan)
    velocities = signals.velocities if signals.velocities is not None else np.gradient(signals.positions, dt, axis=0)
    for start in range(0, len(signals.times) - 1, steps):
        _segment(sim, signals, velocities, start, min(start + steps, len(signals.times) - 1), simulated, substeps)
    error = simulated - signals.positions
    done = ~np.isnan(error).any(axis=1)
    if not done[1:].any():
        raise RecordingError(f"{signals.source}: the replay on {urdf} failed in every segment (the simulation "
                             "diverged): no replay error to report")
    error = error[done]
    return ReplayComparison(list(signals.joint_names), np.sqrt(np.mean(error ** 2, axis=0)), np.abs(error).max(axis=0),
                            signals.times, simulated, int(np.sum(~done)))


def _segment(sim: Simulator, signals: JointSignals, velocities: np.ndarray, start: int, end: int,
             simulated: np.ndarray, substeps: int) -> None:
    names = signals.joint_names
    sim.set_state(dict(zip(names, signals.positions[start])), dict(zip(names, velocities[start])),
                  time=float(signals.times[start]))
    simulated[start] = signals.positions[start]
    index = [sim.joint_indices[j][0] for j in names]
    try:
        for k in range(start, end):
            for j in range(substeps):
                share = (j + 0.5) / substeps  # the effort at the step's middle, interpolated
                efforts = (1 - share) * signals.efforts[k] + share * signals.efforts[k + 1]
                sim.set_efforts(dict(zip(names, efforts)))
                sim.step()
            simulated[k + 1] = sim.q[index]
    except SimulationError:
        simulated[start:end + 1] = np.nan
