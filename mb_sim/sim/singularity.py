"""Constraint singularities passed along the motion: where the enforced constraint rows lose a rank.

At a constraint singularity (a delta robot's legs with coplanar constraint couples, a four-bar
folded flat) the rows of A in A u + b = 0 become dependent: the constraint forces there are
unbounded and the mechanism can branch (change its assembly mode), so the motion past it is
decided by the integrator's numerics, not by the physics.  The forward dynamics and the
projection pass such a point without failing (a row dependent at that state gets a zero
multiplier), so this watch says where it happened.

It samples the enforced rows A_k (an independent set, the best conditioned first, chosen afresh
after a restart or a flip and every :data:`RECHOOSE_EVERY` samples where some are left out) along
the motion and compares two samples of the same rows: the sign of
``det(A_0 A_1^T)`` is, by Cauchy-Binet, that of the inner product of the rows' exterior products
``a_1 ^ ... ^ a_m``, a vector that moves continuously with the rows and goes through zero where
they lose a rank.  A negative sign while every row moved by at most :data:`MOVED` of its size
(sizes taken at least :data:`SIZE_FLOOR` of the largest) means the rows passed near a rank loss (a
flip needs A_0 within ``||A_1 - A_0||`` of a singular matrix), a constraint singularity; a row
that moved more (a crank turning a row around between two samples) is not judged, whatever its
size beside the others, down to a tenth of the largest.  It is not reported where every enabled
row together provably kept the rank (their rank-th singular value at both samples above the
change: a redundant row carries the rank where the chosen ones lose it).

Samples are taken at the end of the integrator's call that completes
:attr:`SingularityWatch.interval` fixed steps (calls are cut at twice that), the interval halved
while the rows move more than :data:`MOVED` / 2 per sample and doubled while they move less than
half of that (1 to :data:`LONGEST_INTERVAL` steps), and back to every step with a sample at
the start after the state is set; an adaptive solver's run is sampled the same way from its dense
output.

Each crossing is kept in :attr:`SingularityWatch.crossings` (the simulator's ``singularities``);
the first since the state was last set gives a :class:`ConstraintSingularityWarning` naming the
constraints whose rows lost the rank.
"""
from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mb_sim.symbolic.rank import RANK_TOLERANCE

_PACKAGE = str(Path(__file__).resolve().parents[1])  # mb_sim/

__all__ = ["ConstraintSingularityWarning", "LONGEST_INTERVAL", "MOVED", "SingularCrossing",
           "SingularityWatch"]

#: How far the rows may move between two samples, relative to their norm, for a flip to be judged.
MOVED = 0.5
#: Row sizes below this fraction of the largest count as that fraction when judging movement.
SIZE_FLOOR = 0.1
#: The most fixed steps between two samples.
LONGEST_INTERVAL = 100
#: Samples between two choices of the rows where some enabled rows are left out (dependent where
#: they were chosen; a flip or a restart chooses them afresh too).
RECHOOSE_EVERY = 8
#: The most crossings kept (a node running for days keeps the latest).
KEPT_CROSSINGS = 1000
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
    sizes: np.ndarray  # the sampled rows' sizes (see _sizes)


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
        self._samples = 0
        #: Fixed steps between two samples (adapted to how fast the rows move).
        self.interval = 1
        self._warned: int | None = None  # the restart count when a crossing was last said
        #: The crossings found, in order (the last KEPT_CROSSINGS).
        self.crossings: list[SingularCrossing] = []
        #: The warnings given (the first crossing since each time the state was set), in order.
        self.said: list[str] = []
        #: How many crossings were found (``crossings`` keeps the last KEPT_CROSSINGS).
        self.count = 0

    @property
    def active(self) -> bool:
        """Whether the robot has constraint rows to watch."""
        return bool(self._labels)

    def steps_to_next(self) -> int:
        """The most fixed steps the integrator's next call may take: samples are taken at the end
        of the first call that reaches the interval, and at most twice the interval apart."""
        return max(1, 2 * self.interval - self._pending) if self._labels else 1 << 30

    def due_in(self) -> int:
        """Fixed steps until the next sample is due (an adaptive solver's run is sampled there)."""
        return max(1, self.interval - self._pending)

    def begin(self, time: float) -> None:
        """Before integrating from `time`: after a restart (the state set other than by
        integrating) the first sample is taken here, and sampling starts again at every step."""
        if self._labels and (self._last is None or self._last.restarts != self._restarts()):
            self.interval, self._pending = 1, 0
            self.check(time, 0)

    def check(self, time: float, steps: int) -> None:
        """After `steps` fixed steps ending at `time` (0: a sample whenever asked: an adaptive
        solver's step, a start)."""
        if not self._labels:
            return
        self._pending += steps
        if 0 < self._pending < self.interval:
            return
        self._pending = 0
        self._model.evaluate_into(time)
        matrix = self._model.layout.view(self._model.buffers.out, "constraint_matrix")
        last, restarts = self._last, self._restarts()
        enabled = last.enabled if last is not None and last.restarts == restarts else \
            np.flatnonzero(self._model.buffers.enabled[:len(matrix)] != 0.0).tolist()  # (switches restart)
        full = matrix[enabled]
        if not np.isfinite(full).all():  # (a diverging state: nothing to compare with)
            self._last = None
            return
        flipped = False
        if last is not None and last.restarts == restarts:
            now = matrix[last.rows]
            change = now - last.matrix
            moved = float((np.sqrt(np.einsum("ij,ij->i", change, change)) / last.sizes).max())
            self._adapt(moved, steps)
            flipped = self._compare(last, time, now, moved, full)
        self._samples += 1
        if flipped or last is None or last.restarts != restarts or \
                (len(last.rows) < len(enabled) and self._samples % RECHOOSE_EVERY == 0):
            rows = _best_rows(matrix, enabled)  # (afresh: a row dependent at one sample may not be later)
        else:
            rows = last.rows
        chosen = matrix[rows]
        self._last = _Sample(time, rows, chosen, restarts, enabled, full, _sizes(chosen)) if rows else None

    def _adapt(self, moved: float, steps: int) -> None:
        """The sample interval for rows that moved `moved` (relative) in the last one."""
        if steps == 0:
            return
        if moved > MOVED / 2:
            self.interval = max(1, self.interval // 2)
        elif moved < MOVED / 4:
            self.interval = min(LONGEST_INTERVAL, self.interval * 2)

    def _compare(self, last: _Sample, time: float, now: np.ndarray, moved: float, full: np.ndarray) -> bool:
        """Judge the rows sampled at `last` and `now` (the same rows; `full` every enabled row now)
        for a rank lost between them: reported unless the enabled rows as a whole provably kept
        that rank (a redundant row may carry it through where the chosen ones lose it); True if
        the chosen rows flipped."""
        if moved > MOVED or np.linalg.det(last.matrix @ now.T) > 0.0:
            return False
        if _kept_rank(last.full, full, len(last.rows)):
            return True
        names = self._involved(last.rows, now if _volume(now) < _volume(last.matrix) else last.matrix)
        self.crossings.append(SingularCrossing(last.time, time, names))
        del self.crossings[:-KEPT_CROSSINGS]
        self.count += 1
        if self._warned == last.restarts:
            return True  # said once since the state was last set: the others are in `crossings`
        self._warned = last.restarts
        which = f"constraints {', '.join(repr(n) for n in names)} (their" if len(names) > 1 else \
            f"constraint {names[0]!r} (its"
        self.said.append(f"robot '{self.robot_name}': between t = {last.time:.6g} s and {time:.6g} s the motion passed "
                         f"through or near a singular configuration of {which} rows lost a rank: the constraint "
                         "forces there can be unbounded and the mechanism can branch, so the motion past it depends "
                         "on the integrator; further crossings until the state is set are listed in "
                         "Simulator.singularities.crossings)")
        warnings.warn(self.said[-1], ConstraintSingularityWarning, stacklevel=_outside_mb_sim())
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


def _sizes(matrix: np.ndarray) -> np.ndarray:
    """The rows' sizes as movement is judged by: their norms, at least :data:`SIZE_FLOOR` of the
    largest (a row through zero is the rank loss looked for; a small row turned around is motion)."""
    sizes = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    return np.maximum(sizes, SIZE_FLOOR * sizes.max())


def _kept_rank(before: np.ndarray, after: np.ndarray, rank: int) -> bool:
    """Whether rows `before` and `after` (every enabled row at two samples) keep rank `rank` all
    along the straight path between them: their rank-th singular value at both ends above the
    change's Frobenius norm (never so where the rows are the chosen ones, all independent: their
    flip bounds that value by the change)."""
    if min(before.shape) < rank:
        return False
    change = float(np.linalg.norm(after - before))
    return all(np.linalg.svd(m, compute_uv=False)[rank - 1] > change for m in (before, after))


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


def _outside_mb_sim() -> int:
    """The warning's stack level of the first caller outside mb_sim (``advance``, ``simulate``,
    the session: whichever way the user came in), counted from the caller of this function."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
