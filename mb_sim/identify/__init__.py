"""Identification of a robot's inertial and friction parameters from a recording (``mb-sim identify``).

The inverse dynamics of a tree is linear in each body's mass, first moment and inertia and in
the joints' viscous and Coulomb friction; :mod:`mb_sim.symbolic.regressor` derives that
regressor from the robot's equations, and this package fits it to recorded motion: base
parameters (:mod:`~mb_sim.identify.base`), filtering (:mod:`~mb_sim.identify.signals`), weighted
least squares and physical consistency (:mod:`~mb_sim.identify.fit`), the corrected URDF
(:mod:`~mb_sim.identify.urdf_update`), validation by replay (:mod:`~mb_sim.identify.validation`)
and excitation trajectories (:mod:`~mb_sim.identify.excitation`).  See docs/identify.md.
"""
from mb_sim._lazy import lazy_exports

_EXPORTS = {
    "Identification": "mb_sim.identify.identification",
    "identify": "mb_sim.identify.identification",
    "identify_signals": "mb_sim.identify.identification",
    "NumericRegressor": "mb_sim.identify.regressor",
    "RecordingError": "mb_sim.identify.signals",
    "JointSignals": "mb_sim.identify.signals",
    "read_joint_states": "mb_sim.identify.signals",
    "ExcitationTrajectory": "mb_sim.identify.excitation",
    "design_excitation": "mb_sim.identify.excitation",
    "replay_error": "mb_sim.identify.validation",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
