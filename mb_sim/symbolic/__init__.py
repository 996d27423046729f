"""Symbolic core: constrained equations of motion by Kane's method, with named temporaries."""
from mb_sim.symbolic.constraints import ConstraintEquations, derive_constraints
from mb_sim.symbolic.derive import derive_equations, joint_efforts
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

__all__ = ["ConstraintEquations", "EquationsOfMotion", "OUTPUT_NAMES", "derive_constraints",
           "derive_equations", "joint_efforts"]
