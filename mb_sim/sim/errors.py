"""Simulation failures, with the time and the coordinate at fault, and the simulator's warnings."""
from __future__ import annotations

__all__ = ["EffortLimitWarning", "SimulationError"]


class EffortLimitWarning(UserWarning):
    """Actuated joints have no effort limit in the URDF (so commanded efforts are not clamped,
    unless the simulator's ``default_effort_limit`` is set); the message lists them."""


class SimulationError(RuntimeError):
    """The simulation cannot continue; the simulator keeps its last good state.

    Attributes
    ----------
    time : float
        Simulation time at the start of the failing step.
    coordinate : str | None
        The generalized coordinate or speed that went bad, where one can be named.
    """

    def __init__(self, message: str, time: float, coordinate: str | None = None) -> None:
        self.time, self.coordinate = time, coordinate
        where = f" ({coordinate})" if coordinate else ""
        super().__init__(f"t = {time:.6g} s{where}: {message}")
