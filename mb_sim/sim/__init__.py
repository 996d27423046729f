"""Simulator: integrates the generated equations with constraints kept (plain Python, no ROS)."""
from mb_sim.sim.errors import SimulationError
from mb_sim.sim.outputs import SimulationOutputs, Trajectory
from mb_sim.sim.simulator import INTEGRATORS, Simulator

__all__ = ["INTEGRATORS", "SimulationError", "SimulationOutputs", "Simulator", "Trajectory"]
