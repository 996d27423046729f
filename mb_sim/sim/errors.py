"""Simulation failures, with the time and the coordinate at fault, and the simulator's warnings."""
from __future__ import annotations

__all__ = ["AssemblyError", "AssemblyWarning", "EffortLimitWarning", "JointLimitWarning", "SimulationError"]


class EffortLimitWarning(UserWarning):
    """Actuated joints have no effort limit in the URDF (so commanded efforts are not clamped,
    unless the simulator's ``default_effort_limit`` is set); the message lists them."""


class AssemblyWarning(UserWarning):
    """Assembly moved coordinates a user may expect to stay: the URDF's zero configuration does
    not close a loop (nothing was given), an initial position the others determine chose an
    assembly branch, or a joint not given had to move for the loop to close; the message lists
    them with how far they moved."""


class JointLimitWarning(UserWarning):
    """The initial state is not where the URDF's zero configuration or the initial positions put
    it because of the position limits: joints whose zero lies outside their limits start at the
    nearest limit (a robot started in its stops is thrown out of them); or an initial position
    given lies beyond a limit and is kept (that joint starts in its stop).  The message names the
    joints and by how much (rad or m)."""


class AssemblyError(ValueError):
    """No configuration closing the constraints was found near the initial positions (or the
    URDF's zero configuration), or an initial position contradicts the others.

    Attributes
    ----------
    residual : float | None
        The smallest largest constraint residual seen, when nothing closed.
    row : str | None
        The constraint row with that residual (its label).
    """

    def __init__(self, message: str, residual: float | None = None, row: str | None = None) -> None:
        self.residual, self.row = residual, row
        super().__init__(message)


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
