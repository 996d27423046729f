"""The constraint kinematics solver (after Karana's ConstraintKinematicsSolver): consistent states.

Given some coordinates (the *held* ones: what a user set), the others are solved so the enabled
constraints hold: positions first (``Phi(q) = 0``), then speeds (``A u + b = 0``), then, if asked,
accelerations (``A u' + c = 0``). The coordinates solved for are the model's dependent ones that
were not given; where the given ones include dependent coordinates (a user sets a rocker angle
instead of the crank's), independent ones that were not given are freed too, last joints first,
until the free columns of dPhi/dq have full row rank. Where the given values over-determine the
constraints, the solver frees given ones as well: the caller keeps the request if they did not move
(consistent values) and refuses it, naming the one that moved, if they did. Positions are reached
by continuation: the held coordinates move from their current values to the requested ones in steps
of at most :data:`CONTINUATION_STEP`, each followed by Gauss-Newton on the free coordinates, so the
mechanism stays on its assembly branch (a four-bar does not flip to its crossed configuration). A
request that cannot be met is refused with the residual and the constraint row that does not close.

Assembly from values far from a closed configuration is :mod:`mb_sim.sim.assembly`'s.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from mb_sim.codegen import NumericModel
from mb_sim.codegen.projection import PROJECTION_TOLERANCE
from mb_sim.symbolic.rank import independent_rows

__all__ = ["ConstraintKinematics", "CONTINUATION_STEP", "SOLVER_ITERATIONS"]

#: Largest change of a held coordinate per continuation step [rad or m].
CONTINUATION_STEP = 0.05
#: Gauss-Newton iterations per continuation step (and for the final tolerance).
SOLVER_ITERATIONS = 50
class ConstraintKinematics:
    """Solves dependent coordinates and speeds of a model's state (see the module docstring).

    `row_labels` describe the constraint rows for messages (one per row of A; the first
    ``n_holonomic`` are also the rows of Phi).
    """

    def __init__(self, model: NumericModel, row_labels: list[str]) -> None:
        self.model = model
        self.row_labels = row_labels
        self.n_holonomic = model.layout.blocks["phi"].shape[0]

    # -- evaluation ---------------------------------------------------------------------------
    def outputs(self, q: np.ndarray, u: np.ndarray, t: float) -> dict[str, np.ndarray]:
        b = self.model.buffers
        return self.model.evaluate(q, u, b.inputs, b.params, t)

    def enabled_rows(self, n: int) -> np.ndarray:
        """Indices of the enabled rows among the first `n`."""
        return np.flatnonzero(self.model.buffers.enabled[:n] != 0.0)

    def normalize(self, q: np.ndarray) -> None:
        for start in self.model.projection.quaternion_starts:
            norm = np.linalg.norm(q[start:start + 4])
            if not (math.isfinite(norm) and norm > 0.0):
                raise ValueError(f"the quaternion starting at coordinate {start} is zero or not finite")
            q[start:start + 4] /= norm

    # -- free variables -----------------------------------------------------------------------
    def free_columns(self, matrix: np.ndarray, dependent: Iterable[int], held: set[int]) -> list[int]:
        """Columns to solve for: `dependent` ones not held, then others from the last, until they
        reach the rank of the rows (rows redundant here add none).  If the held ones leave too
        few, held ones are freed too (dependent ones first): the caller then finds whether the
        values given were consistent (kept) or not (moved)."""
        if matrix.shape[0] == 0:
            return []
        candidates = list(dict.fromkeys([*dependent, *range(matrix.shape[1] - 1, -1, -1)]))
        free = independent_rows(matrix.T, [k for k in candidates if k not in held])
        if len(free) < len(independent_rows(matrix, range(matrix.shape[0]))):
            free = independent_rows(matrix.T, candidates)
        return free  # rank-deficient constraints: least squares does what it can

    # -- positions ----------------------------------------------------------------------------
    def solve_positions(self, q_start: np.ndarray, q_target: np.ndarray, held: set[int], t: float) -> np.ndarray:
        """Coordinates satisfying the enabled rows of Phi = 0 with the `held` ones at their
        values in `q_target`, reached from `q_start` (held ones change, the others follow).

        Raises ValueError with the residual when that is impossible.
        """
        q = np.array(q_start, dtype=float)
        self.normalize(q)
        target = np.array(q_target, dtype=float)
        rows = self.enabled_rows(self.n_holonomic)
        if not len(rows):
            q[list(held)] = target[list(held)]
            self.normalize(q)
            return q
        held_list = sorted(held)
        change = float(np.abs(target[held_list] - q[held_list]).max()) if held_list else 0.0
        steps = max(1, math.ceil(change / CONTINUATION_STEP))
        start = q[held_list].copy()
        for step in range(1, steps + 1):
            q[held_list] = target[held_list] if step == steps else start + (target[held_list] - start) * step / steps
            self.normalize(q)
            self._newton(q, rows, held, t)
        return q

    def _newton(self, q: np.ndarray, rows: np.ndarray, held: set[int], t: float) -> None:
        """Gauss-Newton along free speeds, ``q += N(q) du`` (see mb_sim.codegen.projection)."""
        u = np.zeros(self.model.n_u)
        free = None
        for _ in range(SOLVER_ITERATIONS):
            out = self.outputs(q, u, t)
            phi = out["phi"][rows, 0]
            if not np.isfinite(phi).all():
                break
            if np.abs(phi).max() <= PROJECTION_TOLERANCE:
                return
            matrix, kinematic_map = out["constraint_matrix"][rows], out["kinematic_map"]
            if free is None:  # speeds moving a held coordinate are held too
                held_speeds = {k for k in range(self.model.n_u) if np.any(kinematic_map[list(held), k] != 0)}
                free = self.free_columns(matrix, self.model.projection.position_speeds, held_speeds)
            step = np.zeros(self.model.n_u)
            step[free] = -np.linalg.lstsq(matrix[:, free], phi, rcond=None)[0]
            q += kinematic_map @ step
            self.normalize(q)
        phi = self.outputs(q, u, t)["phi"][rows, 0]
        worst = int(np.nanargmax(np.abs(phi))) if np.isfinite(phi).any() else 0
        raise ValueError(f"the constraints cannot be satisfied there: residual {abs(phi[worst]):.3g} in "
                         f"{self.row_labels[rows[worst]]}")

    # -- speeds and accelerations -------------------------------------------------------------
    def solve_speeds(self, q: np.ndarray, u: np.ndarray, held: set[int], t: float) -> np.ndarray:
        """Speeds satisfying the enabled rows of A u + b = 0 at `q`, the `held` ones kept."""
        return self._solve_linear(q, u, u, held, t, "constraint_bias")

    def solve_accelerations(self, q: np.ndarray, u: np.ndarray, udot: np.ndarray, held: set[int],
                            t: float) -> np.ndarray:
        """Accelerations satisfying the enabled rows of A u' + c = 0, the `held` ones kept."""
        return self._solve_linear(q, u, udot, held, t, "acceleration_bias")

    def _solve_linear(self, q: np.ndarray, u: np.ndarray, values: np.ndarray, held: set[int], t: float,
                      bias: str) -> np.ndarray:
        """`values` (speeds or accelerations) moved so that ``A values + bias = 0`` over the
        enabled rows, by least squares over the free ones (the dependent speeds not held)."""
        values = np.array(values, dtype=float)
        rows = self.enabled_rows(self.model.n_constraints)
        if not len(rows):
            return values
        out = self.outputs(q, u, t)
        matrix, offset = out["constraint_matrix"][rows], out[bias][rows, 0]
        free = self.free_columns(matrix, self.model.projection.speeds, held)
        values[free] -= np.linalg.lstsq(matrix[:, free], matrix @ values + offset, rcond=None)[0]
        return values
