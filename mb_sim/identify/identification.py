"""From a recording and a URDF to identified parameters: the steps of ``mb-sim identify``."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from mb_sim.identify.base import BaseParameters, base_parameters
from mb_sim.identify.fit import BaseFit, consistent_parameters, weighted_fit
from mb_sim.identify.parameters import fixed_parts, merged_links, prior_parameters, split_body
from mb_sim.identify.regressor import NumericRegressor
from mb_sim.identify.signals import JointSignals, RecordingError, differentiate, read_joint_states
from mb_sim.identify.urdf_update import corrected_urdf
from mb_sim.model import Robot, load_urdf

__all__ = ["Identification", "identify", "identify_signals", "DEFAULT_WINDOW", "EXCITATION_LIMIT"]

DEFAULT_WINDOW = 0.02
"""Savitzky-Golay window [s]: a fifth-order fit over 20 ms passes motion up to ~20 Hz."""
EXCITATION_LIMIT = 1e6
"""A base parameter whose scaled column the data separate worse than this is not identifiable."""


@dataclass
class Identification:
    """What :func:`identify` found: base and standard parameters, their quality, the new URDF."""

    base: BaseParameters
    fit: BaseFit
    prior: np.ndarray  # the URDF's standard parameters
    parameters: np.ndarray  # identified, physically consistent
    agreement: float  # largest |base(parameters) - fit| in standard deviations
    samples: int  # filtered samples the fit used (one per window)
    joint_names: list[str] = field(default_factory=list)  # the joints identified from, in the recording's order
    signals: JointSignals | None = None  # the samples used (finite, evenly spaced), before filtering
    urdf_text: str = ""
    changes: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        return self.base.names

    def base_table(self) -> list[tuple[str, float, float, float]]:
        """(description, fitted value, standard deviation, URDF's value) per base parameter."""
        prior = self.base.of(self.prior)
        return [(self.base.describe(i), float(v), float(s), float(p))
                for i, (v, s, p) in enumerate(zip(self.fit.values, self.fit.deviations, prior))]

    def report(self) -> str:
        lines = [f"{self.samples} filtered samples, {len(self.fit.values)} base parameters of {len(self.columns)}; "
                 f"condition number {self.fit.condition_number:.3g}",
                 "residual per joint [N m or N]: " + ", ".join(f"{v:.3g}" for v in self.fit.joint_deviations),
                 f"{'base parameter':<60} {'identified':>14} {'std dev':>11} {'URDF':>14}"]
        for text, value, deviation, prior in self.base_table():
            lines.append(f"{text[:60]:<60} {value:>14.6g} {deviation:>11.3g} {prior:>14.6g}")
        lines.append(f"physically consistent parameters: their base parameters within {self.agreement:.2g} "
                     "standard deviations of the fit")
        if self.agreement > 3:
            lines.append("warning: no physically consistent set reproduces the fit within 3 standard deviations: "
                         "the recording disagrees with a rigid-body model (unmodelled loads, bad efforts or time stamps?), "
                         "or a link fixed to a body, which keeps its URDF values, is wrong")
        return "\n".join(lines)


def identify(urdf: str | Path, recording: str | Path, *, topic: str = "/joint_states", window: float = DEFAULT_WINDOW,
             effort_topic: str | None = None, effort_joints: list[str] | None = None,
             progress: Callable[[str], None] | None = None) -> Identification:
    """Identify the inertial and friction parameters of `urdf`'s robot from an MCAP `recording`
    (efforts from `topic`'s JointStates, or commanded on `effort_topic`: :func:`read_joint_states`)."""
    say = progress or (lambda _: None)
    robot = load_urdf(urdf)
    say(f"deriving the regressor of {robot.name}")
    regressor = NumericRegressor(robot)
    signals = read_joint_states(recording, topic, effort_topic, effort_joints)
    result = identify_signals(robot, regressor, signals, window=window, progress=say)
    say("writing the corrected URDF")
    inertials, dissipation = _urdf_values(robot, regressor, result.parameters)
    result.urdf_text, result.changes = corrected_urdf(Path(urdf), inertials, dissipation)
    return result


def identify_signals(robot: Robot, regressor: NumericRegressor, signals: JointSignals, *,
                     window: float = DEFAULT_WINDOW, progress: Callable[[str], None] | None = None,
                     rng: np.random.Generator | None = None) -> Identification:
    """The steps after reading: filter, regress, fit, make consistent."""
    say = progress or (lambda _: None)
    joints = _check_joints(robot, regressor, signals)
    usable = signals.select(joints).finite()
    if len(usable.times) < len(signals.times):
        say(f"kept the longest stretch of samples where every value is a number: {len(usable.times)} of "
            f"{len(signals.times)} ({usable.times[0]:.3f} s to {usable.times[-1]:.3f} s)")
    usable, note = usable.uniform()
    if note:
        say(note)
    filtered = differentiate(usable.check_efforts(), window)
    q, u, a, tau = regressor.arrange(joints, filtered.positions, filtered.velocities, filtered.accelerations,
                                     filtered.efforts)
    say(f"regressor at {len(q)} samples")
    base = structural_base(regressor, robot, rng or np.random.default_rng(0))
    W = filtered.parallel(regressor(q, u, a)[:, :, base.independent])
    tau = filtered.parallel(tau)
    _check_excitation(signals.source, W, base)
    say(f"weighted least squares on {len(base.independent)} base parameters")
    fit = weighted_fit(W, tau)
    prior = prior_parameters(robot, regressor.symbolic)
    say("physically consistent parameters")
    parameters, agreement = consistent_parameters(fit, base, prior, len(regressor.symbolic.bodies),
                                                  fixed=fixed_parts(robot, regressor.symbolic))
    return Identification(base, fit, prior, parameters, agreement, len(tau), joints, usable)


def structural_base(regressor: NumericRegressor, robot: Robot, rng: np.random.Generator) -> BaseParameters:
    """Base parameters of the robot's structure: the regressor at random states."""
    count = max(20, 4 * len(regressor.columns) // max(regressor.n_u, 1))
    q = rng.uniform(-np.pi, np.pi, (count, regressor.n_q))
    u, a = rng.normal(size=(count, regressor.n_u)), rng.normal(size=(count, regressor.n_u))
    stacked = regressor(q, u, a).reshape(count * regressor.n_u, -1)
    return base_parameters(stacked, regressor.columns)


def _check_joints(robot: Robot, regressor: NumericRegressor, signals: JointSignals) -> list[str]:
    source = signals.source
    joints = list(regressor.speed_of)
    unknown = [j for j in signals.joint_names if j not in robot.joints]
    if unknown:
        raise RecordingError(f"{source}: joints not in the URDF of '{robot.name}': {', '.join(unknown)}")
    missing = [j for j in joints if j not in signals.joint_names]
    if missing:
        raise RecordingError(f"{source}: no positions and efforts of joints {', '.join(missing)} in the recording")
    if len(joints) != regressor.n_u or regressor.n_q != regressor.n_u:
        raise RecordingError(f"robot '{robot.name}' has speeds that are not one-DoF joints (a floating base?): "
                             "identification handles fixed-base robots")
    return joints


def _check_excitation(source: str, W: np.ndarray, base: BaseParameters) -> None:
    """Refuse data that cannot separate the base parameters, naming those it cannot."""
    from scipy.linalg import qr

    flat = W.reshape(-1, W.shape[2])
    scale = np.linalg.norm(flat, axis=0)
    if not flat.size or not np.any(scale):
        raise RecordingError(f"{source}: the motion excites no parameter (does the robot move?)")
    _, R, order = qr(flat / np.where(scale > 0, scale, 1.0), mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(R))
    weak = [i for k, i in enumerate(order) if diagonal[k] < diagonal[0] / EXCITATION_LIMIT]
    if weak:
        names = "; ".join(base.describe(i) for i in sorted(weak))
        raise RecordingError(f"{source}: the motion is not exciting enough (too short or too slow): "
                             f"{len(weak)} base parameters cannot be identified: {names}")


def _urdf_values(robot: Robot, regressor: NumericRegressor, pi: np.ndarray):
    """New link inertials (the changed link of each body) and joint damping and friction."""
    inertials = {}
    for b, (carrier, links) in enumerate(merged_links(robot, regressor.symbolic).items()):
        name, inertial = split_body(robot, links, pi[10 * b:10 * b + 10])
        inertials[name] = inertial
    n_body = 10 * len(regressor.symbolic.bodies)
    dissipation = {joint: (float(pi[n_body + 2 * k]), float(pi[n_body + 2 * k + 1]))
                   for k, joint in enumerate(regressor.symbolic.friction_joints)}
    return inertials, dissipation
