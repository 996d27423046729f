"""The symbolic regressor (:mod:`mb_sim.symbolic.regressor`) evaluated with NumPy over many samples."""
from __future__ import annotations

from typing import Callable

import numpy as np
from sympy import Symbol, lambdify

from mb_sim.model import Robot
from mb_sim.symbolic.regressor import Regressor, derive_regressor

__all__ = ["NumericRegressor", "needed_assignments"]


class NumericRegressor:
    """``Y(q, u, u')`` of a robot as arrays: one call evaluates every sample at once.

    The straight-line program (the derivation's temporaries, then the nonzero entries) is
    vectorized by NumPy over the samples; symbols are renamed to safe argument names first, so a
    link or joint name never reaches the printer.  Parameters other than the identified ones
    (lengths, joint origins, gravity) are held at the robot's values.
    """

    def __init__(self, robot: Robot) -> None:
        self.symbolic: Regressor = derive_regressor(robot)
        self.robot_name = robot.name
        self.columns = self.symbolic.columns
        self.n_u, self.n_q = len(self.symbolic.u), len(self.symbolic.q)
        self.speed_of = self.symbolic.joints  # one-DoF joint -> its speed index
        self._function, self._entries = _compile(self.symbolic)
        self._parameter_values = np.array(list(self.symbolic.parameters.values()), dtype=float)

    def arrange(self, joints: list[str], q: np.ndarray, u: np.ndarray, accelerations: np.ndarray,
                efforts: np.ndarray) -> tuple[np.ndarray, ...]:
        """Columns given in `joints` order put in the regressor's coordinate and speed order."""
        q_out, rest = np.empty_like(q), [np.empty_like(x) for x in (u, accelerations, efforts)]
        for column, joint in enumerate(joints):
            q_out[:, self.symbolic.coordinates[joint]] = q[:, column]
            for out, x in zip(rest, (u, accelerations, efforts)):
                out[:, self.speed_of[joint]] = x[:, column]
        return (q_out, *rest)

    def __call__(self, q: np.ndarray, u: np.ndarray, accelerations: np.ndarray) -> np.ndarray:
        """The regressor at N samples: `q` (N, n_q), `u` and `accelerations` (N, n_u) -> (N, n_u, n_pi)."""
        q, u, a = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, u, accelerations))
        n = q.shape[0]
        values = self._function(q.T, u.T, a.T, self._parameter_values)
        out = np.zeros((n, self.n_u, len(self.columns)))
        for (k, j), value in zip(self._entries, values):
            out[:, k, j] = value
        return out


def _compile(reg: Regressor) -> tuple[Callable, list[tuple[int, int]]]:
    """A NumPy function of (q, u, u', params) giving the regressor's nonzero entries, and their places."""
    entries = [(k, j) for k in range(reg.matrix.rows) for j in range(reg.matrix.cols) if reg.matrix[k, j] != 0]
    outputs = [reg.matrix[k, j] for k, j in entries]
    assignments = needed_assignments(reg.temporaries, outputs)
    groups = {"q": reg.q, "u": reg.u, "a": reg.accelerations, "p": list(reg.parameters)}
    rename = {s: Symbol(f"{g}_{i}") for g, symbols in groups.items() for i, s in enumerate(symbols)}
    rename.update({s: Symbol(f"t_{i}") for i, (s, _) in enumerate(assignments)})
    assignments = [(rename[s], e.xreplace(rename)) for s, e in assignments]
    outputs = [e.xreplace(rename) for e in outputs]
    arguments = [[rename[s] for s in groups[g]] for g in ("q", "u", "a", "p")]
    function = lambdify(arguments, outputs, modules="numpy", cse=lambda _: (assignments, outputs), docstring_limit=0)
    return function, entries


def needed_assignments(assignments: list, outputs: list) -> list:
    """The assignments the outputs depend on (directly or through others), in order."""
    wanted = set().union(*(e.free_symbols for e in outputs)) if outputs else set()
    kept = []
    for symbol, expr in reversed(assignments):
        if symbol in wanted:
            kept.append((symbol, expr))
            wanted |= expr.free_symbols
    return kept[::-1]
