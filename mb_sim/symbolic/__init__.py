"""Symbolic core: constrained equations of motion by Kane's method, with named temporaries."""
from mb_sim.symbolic.constraints import (
    ConstraintAnalysis, ConstraintEquations, ConstraintError, analyse_constraints, derive_constraints,
)
from mb_sim.symbolic.derive import derive_equations, joint_efforts
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

__all__ = ["ConstraintAnalysis", "ConstraintEquations", "ConstraintError", "EquationsOfMotion", "OUTPUT_NAMES",
           "analyse_constraints", "derive_constraints",
           "derive_equations", "joint_efforts"]
