"""Simulator: integrates the generated equations with constraints kept (plain Python, no ROS)."""
from mb_sim.sim.errors import AssemblyError, AssemblyWarning, EffortLimitWarning, JointLimitWarning, SimulationError
from mb_sim.sim.outputs import SimulationOutputs, Trajectory
from mb_sim.sim.simulator import INTEGRATORS, MAX_STEPS_PER_CALL, Simulator

__all__ = ["AssemblyError", "AssemblyWarning", "EffortLimitWarning", "JointLimitWarning", "INTEGRATORS",
           "MAX_STEPS_PER_CALL", "SimulationError", "SimulationOutputs", "Simulator", "Trajectory"]
