"""The state of one run (MuJoCo's ``MjData``): sim time, and in the numeric model's work buffers
the coordinates ``q``, speeds ``u``, electrical states ``z``, inputs, parameters and constraint
rows enabled; the state :meth:`~mb_sim.sim.Simulator.reset` returns to; the constraints the user
released.  Also the checks of values written into it by name.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mb_sim.codegen.numeric_model import Buffers

__all__ = ["STATE_MAGNITUDE", "SimulationState", "assign_named", "check_kept", "kept", "moved_given", "vector"]

#: Positions and speeds given by name (initial positions, set_state) above this magnitude are
#: refused: no robot's (rad or m, rad/s or m/s; a wheel's angle after 100 km stays below).
STATE_MAGNITUDE = 1e6


@dataclass(eq=False)
class SimulationState:
    """Time and buffers of one run, the initial state ``(q, u, z, time)`` and the released
    constraints (switches configure the model: they survive a reset)."""

    buffers: Buffers
    time: float = 0.0
    initial: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None
    released: set[str] = field(default_factory=set)

    def mark_initial(self) -> None:
        """What a reset returns to: the state now."""
        b = self.buffers
        self.initial = (b.q.copy(), b.u.copy(), b.z.copy(), self.time)

    def reset(self) -> None:
        """Back to the initial state, inputs zero."""
        q, u, z, t = self.initial
        b = self.buffers
        b.q[:], b.u[:], b.z[:], b.inputs[:] = q, u, z, 0.0
        self.time = t


@contextmanager
def kept(buffers: Buffers) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``q`` and ``u`` as they were on entry, put back on exit: evaluations at other states inside
    (the model's public methods load their arguments into the buffers) leave the run's state alone."""
    state = buffers.q.copy(), buffers.u.copy()
    try:
        yield state
    finally:
        buffers.q[:], buffers.u[:] = state


def vector(values: Sequence[float], n: int, what: str) -> np.ndarray:
    """`values` as a new array of `n` finite numbers (ValueError naming `what` otherwise)."""
    array = np.asarray(values, dtype=float)
    if array.shape != (n,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be {n} finite numbers, got {values!r}")
    return array.copy()


def assign_named(target: np.ndarray, values: Mapping[str, float], names: Sequence[str],
                 one_dof: Mapping[str, tuple[int, int]], which: int, what: str) -> dict[int, float]:
    """Write `values` by one-DoF joint (index `which` of its pair in `one_dof`) or by name in
    `names` into `target`; the indices written, with their values.  ValueError naming an unknown
    name, a value not finite or one no robot has (STATE_MAGNITUDE)."""
    given = {}
    for name, value in values.items():
        if name in one_dof:
            index = one_dof[name][which]
        elif name in names:
            index = list(names).index(name)
        else:
            raise ValueError(f"unknown joint or coordinate {name!r} for the {what}; "
                             f"known: {', '.join([*one_dof, *names])}")
        value = float(value)
        if not np.isfinite(value):
            raise ValueError(f"{what} of {name!r} is not finite: {value}")
        if abs(value) > STATE_MAGNITUDE:
            raise ValueError(f"{what} of {name!r} is {value:g}, beyond {STATE_MAGNITUDE:g} (rad or m, "
                             "rad/s or m/s): no robot's")
        target[index] = given[index] = value
    return given


def moved_given(given: Mapping[int, float], actual: np.ndarray) -> list[int]:
    """The indices of `given` whose values `actual` does not keep (to 1e-9 relative)."""
    return [k for k, value in given.items() if abs(actual[k] - value) > 1e-9 * max(1.0, abs(value))]


def check_kept(given: Mapping[int, float], actual: np.ndarray, names: Sequence[str], what: str) -> None:
    """ValueError naming the first value of `given` that `actual` does not keep."""
    for index in moved_given(given, actual):
        raise ValueError(f"{what} {given[index]} of {names[index]!r} contradicts the constraints "
                         f"(consistent value {actual[index]:.12g}); leave it out to have it solved")
