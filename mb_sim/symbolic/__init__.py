"""Symbolic core: constrained equations of motion by Kane's method, with named temporaries."""
from __future__ import annotations

from mb_sim._lazy import lazy_exports

#: Each public name and the module it is imported from on first use (light to import: see mb_sim._lazy).
_EXPORTS = {
    "ConstraintAnalysis": "mb_sim.symbolic.constraints",
    "ConstraintEquations": "mb_sim.symbolic.constraints",
    "ConstraintError": "mb_sim.symbolic.constraints",
    "EquationsOfMotion": "mb_sim.symbolic.equations",
    "OUTPUT_NAMES": "mb_sim.symbolic.equations",
    "analyse_constraints": "mb_sim.symbolic.constraints",
    "derive_constraints": "mb_sim.symbolic.constraints",
    "derive_equations": "mb_sim.symbolic.derive",
    "joint_efforts": "mb_sim.symbolic.derive",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
