"""Constraint singularities passed along the motion: where the enforced constraint rows lose a rank.

At a constraint singularity (a delta robot's legs with coplanar constraint couples, a four-bar
folded flat) the rows of A in A u + b = 0 become dependent: the constraint forces there are
unbounded and the mechanism may branch (change its assembly mode), so the motion past it is
decided by the integrator's numerics, not by the physics.  The forward dynamics and the
projection pass such a point without failing (a row dependent at that state gets a zero
multiplier), so this watch says where it happened.

It samples the enforced rows A_k (a set independent where it was chosen) along the motion and
compares two samples: the sign of ``det(A_0 A_1^T)`` is, by Cauchy-Binet, that of the inner
product of the rows' exterior products ``a_1 ^ ... ^ a_m``, a vector that moves continuously with
the rows and goes through zero where they lose a rank.  A negative sign while the rows moved
little, ``||A_1 - A_0|| <= MOVED * ||A_0||`` (:data:`MOVED`), means the rows passed within that
distance of a rank loss (a flip needs A_0 within ``||A_1 - A_0||`` of a singular matrix), a
constraint singularity; rows that moved more (a mechanism turning its rows around between two
samples) are not judged, so a fast crank is never taken for one.  Samples are taken at the end of
the integrator's call that completes :attr:`SingularityWatch.interval` fixed steps (calls are cut
at twice that), the interval halved while the rows move more than :data:`MOVED` / 2 per sample
and doubled while they move less than a quarter of that (1 to :data:`LONGEST_INTERVAL` steps),
and after each call of an adaptive solver.  After a crossing the rows are chosen afresh.

Each crossing is kept in :attr:`SingularityWatch.crossings` (the simulator's ``singularities``);
the first since the state was last set gives a :class:`ConstraintSingularityWarning` naming the
constraints whose rows lost the rank.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from mb_sim.symbolic.rank import RANK_TOLERANCE

__all__ = ["ConstraintSingularityWarning", "LONGEST_INTERVAL", "MOVED", "SingularCrossing",
           "SingularityWatch"]

#: How far the rows may move between two samples, relative to their norm, for a flip to be judged.
MOVED = 0.3
#: The most fixed steps between two samples.
LONGEST_INTERVAL = 100
#: A row takes part in a lost rank when its weight in the smallest left singular vector is at
#: least this fraction of the largest weight.
_PART = 0.2


class ConstraintSingularityWarning(UserWarning):
    """The motion passed a configuration where the enforced constraint rows lost a rank."""


@dataclass(frozen=True)
class SingularCrossing:
    """A constraint singularity passed between simulation times `after` and `before` [s]; the
    constraints whose rows lost the rank (derivation order)."""

    after: float
    before: float
    constraints: list[str]


@dataclass
class _Sample:
    time: float
    rows: list[int]
    matrix: np.ndarray  # the sampled rows of A
    restarts: int
    enabled: list[int]  # the enabled rows the sampled ones were chosen among
    full: np.ndarray  # every enabled row


class SingularityWatch:
    """Samples a run's enforced constraint rows and reports the singularities it passes.

    `model` is the numeric model (its buffers hold the state, its outputs the rows), `restarts`
    a callable giving a count that changes whenever the state is set other than by integrating
    (the runaway watch's): samples across such a change are not compared.
    """

    def __init__(self, robot_name: str, model, restarts) -> None:
        self.robot_name, self._model, self._restarts = robot_name, model, restarts
        self._labels = list(model.constraint_names)
        self._last: _Sample | None = None
        self._pending = 0
        #: Fixed steps between two samples (adapted to how fast the rows move).
        self.interval = 1
        self._warned: int | None = None  # the restart count when a crossing was last said
        #: Every crossing found, in order.
        self.crossings: list[SingularCrossing] = []
        #: The warnings given (the first crossing since each time the state was set), in order.
        self.said: list[str] = []

    @property
    def active(self) -> bool:
        """Whether the robot has constraint rows to watch."""
        return bool(self._labels)

    def steps_to_next(self) -> int:
        """The most fixed steps the integrator's next call may take: samples are taken at the end
        of the first call that reaches the interval, and at most twice the interval apart."""
        return max(1, 2 * self.interval - self._pending) if self._labels else 1 << 30

    def check(self, time: float, steps: int) -> None:
        """After `steps` fixed steps ending at `time` (0: an adaptive solver's call, always judged)."""
        if not self._labels:
            return
        self._pending += steps
        if 0 < self._pending < self.interval:
            return
        self._pending = 0
        self._model.evaluate_into(time)
        b = self._model.buffers
        matrix = self._model.layout.view(b.out, "constraint_matrix")
        enabled = np.flatnonzero(b.enabled[:len(matrix)] != 0.0).tolist()
        if not np.all(np.isfinite(matrix[enabled])):  # (a diverging state: nothing to compare with)
            self._last = None
            return
        last, restarts = self._last, self._restarts()
        independent = True
        if last is not None and last.restarts == restarts and set(last.rows) <= set(enabled):
            now = matrix[last.rows]
            moved = float(np.linalg.norm(now - last.matrix) / np.linalg.norm(last.matrix))
            self._adapt(moved, steps)
            independent = not self._compare(last, time, now, moved, matrix[enabled])  # (flipped: choose again)
        rows = last.rows if independent and self._keeps(last, enabled, restarts) else _best_rows(matrix, enabled)
        self._last = _Sample(time, rows, matrix[rows].copy(), restarts, enabled, matrix[enabled].copy()) if rows \
            else None

    @staticmethod
    def _keeps(last: _Sample | None, enabled: list[int], restarts: int) -> bool:
        """Whether the last sample's rows serve again: chosen among the same enabled rows since the
        last restart."""
        return last is not None and last.restarts == restarts and last.enabled == enabled

    def _adapt(self, moved: float, steps: int) -> None:
        """The sample interval for rows that moved `moved` (relative) in the last one."""
        if steps == 0:
            return
        if moved > MOVED / 2:
            self.interval = max(1, self.interval // 2)
        elif moved < MOVED / 8:
            self.interval = min(LONGEST_INTERVAL, self.interval * 2)

    def _compare(self, last: _Sample, time: float, now: np.ndarray, moved: float, full: np.ndarray) -> bool:
        """Judge the rows sampled at `last` and `now` (the same rows; `full` every enabled row now)
        for a rank lost between them; True if they flipped (reported if the enabled rows as a
        whole came near losing that rank too: a redundant row may carry it through)."""
        if moved > MOVED or np.linalg.det(last.matrix @ now.T) > 0.0:
            return False
        rank = len(last.rows)
        if min(_margin(last.full, rank), _margin(full, rank)) > MOVED:
            return True  # only the rows chosen lost it: others keep the rank
        names = self._involved(last.rows, now if _volume(now) < _volume(last.matrix) else last.matrix)
        self.crossings.append(SingularCrossing(last.time, time, names))
        if self._warned == last.restarts:
            return True  # said once since the state was last set: the others are in `crossings`
        self._warned = last.restarts
        plural = "s" if len(names) > 1 else ""
        self.said.append(f"robot '{self.robot_name}': between t = {last.time:.6g} s and {time:.6g} s the motion passed "
                         f"a singular configuration of constraint{plural} {', '.join(repr(n) for n in names)} (their "
                         "rows lost a rank: the constraint forces there are unbounded and the mechanism can branch, "
                         "so the motion past it depends on the integrator; further crossings until the state is set "
                         "are listed in Simulator.singularities.crossings)")
        warnings.warn(self.said[-1], ConstraintSingularityWarning, stacklevel=6)  # (the caller of Simulator.advance)
        return True

    def _involved(self, rows: list[int], matrix: np.ndarray) -> list[str]:
        """The constraints whose rows carry the smallest left singular vector of `matrix`."""
        left = np.abs(np.linalg.svd(matrix)[0][:, -1])
        part = {self._labels[rows[k]] for k in np.flatnonzero(left >= _PART * left.max())}
        return [name for name in dict.fromkeys(self._labels) if name in part]


def _volume(matrix: np.ndarray) -> float:
    """The rows' normalized volume: det(A A^T) over the product of the squared row norms (1 for
    orthogonal rows, 0 for dependent ones)."""
    gram = matrix @ matrix.T
    scale = np.prod(np.diag(gram))
    return float(np.linalg.det(gram) / scale) if scale > 0 else 0.0


def _margin(matrix: np.ndarray, rank: int) -> float:
    """The `rank`-th singular value of `matrix` over its largest."""
    values = np.linalg.svd(matrix, compute_uv=False)
    return float(values[rank - 1] / values[0]) if len(values) >= rank and values[0] > 0 else 0.0


def _best_rows(matrix: np.ndarray, rows: list[int]) -> list[int]:
    """A largest independent set of `rows` of `matrix`, the best conditioned greedily (Gram-Schmidt
    taking the row of largest remainder first; rank at RANK_TOLERANCE of the largest norm), in order."""
    remainder = np.array(matrix[rows], dtype=float)
    norms = np.linalg.norm(remainder, axis=1)
    tolerance = RANK_TOLERANCE * max(float(norms.max(initial=0.0)), 1.0)
    chosen: list[int] = []
    for _ in range(len(rows)):
        k = int(np.argmax(norms))
        if not norms[k] > tolerance:
            break
        chosen.append(k)
        direction = remainder[k] / norms[k]
        remainder -= np.outer(remainder @ direction, direction)
        norms = np.linalg.norm(remainder, axis=1)
        norms[chosen] = 0.0
    return sorted(rows[k] for k in chosen)
