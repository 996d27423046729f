"""Assembly (as Karana's constraint kinematics solver does it when a model is built): a closed
configuration from values that may be far from one.

The values are the URDF's zero configuration with the user's initial positions written in. The held
coordinates stay; the others are solved, first only the dependent ones (so independent joints keep
their values), then, if no closed configuration exists with those fixed, every coordinate not held.
Each stage tries Gauss-Newton from the start (least-norm steps with a line search), then the Newton
homotopy ``H(q, s) = Phi(q) - (1 - s) Phi(q0)`` (``s`` stepped from 0 to 1 with a Gauss-Newton
corrector, the step halved where the corrector fails: it follows the closed-up path from the start
instead of jumping), then :data:`ASSEMBLY_STARTS` seeded starts of the free coordinates (angles
drawn over a full turn; tried in any case, as Gauss-Newton from the start may land on a farther
branch). Of the closed configurations found, the one nearest the values held is taken (a value that
over-determined the constraints, given with those that determine it, counts as a guess of the
branch), ties going to the one nearest the whole start; angles are compared modulo 2 pi and given
back as the value nearest their start. Where the values held leave a continuum of closed
configurations (an input freed too), it is then moved along them towards the start while that
brings it nearer. The work is bounded (iterations with a line search that stops where the residual
no longer drops, homotopy steps, starts), so a request no closed configuration meets is refused
quickly, with the smallest residual seen and its constraint row.
"""
from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from mb_sim.codegen.projection import PROJECTION_TOLERANCE
from mb_sim.sim.constraint_kinematics import ConstraintKinematics
from mb_sim.sim.errors import AssemblyError

__all__ = ["ASSEMBLY_ITERATIONS", "ASSEMBLY_STARTS", "Assembly", "HOMOTOPY_STEP", "assemble"]

#: Gauss-Newton iterations of one assembly attempt (from the start, from a seeded start, at the
#: homotopy's last step); each iteration halves its step at most LINE_SEARCH_HALVINGS times
#: looking for a smaller residual, and the attempt stops where none is found (stagnation).
ASSEMBLY_ITERATIONS = 40
LINE_SEARCH_HALVINGS = 6
#: Seeded starts of the free coordinates, tried after Gauss-Newton (and the homotopy) from the
#: start (seed fixed: the same model and values assemble the same way every time).
ASSEMBLY_STARTS = 12
ASSEMBLY_SEED = 22
#: The Newton homotopy: first and largest step of s, the smallest before it gives up, corrector
#: iterations per step, corrector tolerance before the last step (relative to |Phi(q0)|), and
#: the most corrector runs in all.
HOMOTOPY_STEP, HOMOTOPY_MIN_STEP, HOMOTOPY_CORRECTOR = 0.125, 1.0 / 256, 8
HOMOTOPY_TOLERANCE, HOMOTOPY_RUNS = 1e-8, 48
#: Closed configurations whose coordinates differ by less than this (angles modulo 2 pi) are one.
SAME_CONFIGURATION = 1e-6
#: Moves along the closed configurations towards the start, where the values held leave a
#: continuum of them (see ConstraintKinematics._approach).
APPROACH_ITERATIONS = 30



@dataclass(frozen=True)
class Assembly:
    """A closed configuration found by :func:`assemble`.

    Attributes
    ----------
    q
        The coordinates.
    method
        What found it: ``"Gauss-Newton"`` (from the start), ``"homotopy"`` or ``"seeded starts"``
        (``"none"`` without position constraints).
    closed
        Distinct closed configurations found (the nearest was taken): 1 where the values held
        leave no choice of branch.
    evaluations
        Evaluations of the model spent.
    """

    q: np.ndarray
    method: str
    closed: int
    evaluations: int



def assemble(kinematics: ConstraintKinematics, q_start: np.ndarray, held: set[int], t: float,
             angles: Collection[int] = ()) -> Assembly:
    """A configuration closing the enabled rows of Phi of `kinematics`' model, the `held`
    coordinates kept at their values in `q_start`, nearest `q_start` among those found (see the
    module docstring and :meth:`Assembler.assemble`)."""
    return Assembler(kinematics).assemble(q_start, held, t, angles)


class Assembler:
    """One assembly's search: the solver it evaluates through, the evaluations spent and the
    smallest residual seen (for the refusal)."""

    def __init__(self, kinematics: ConstraintKinematics) -> None:
        self.kinematics, self.model = kinematics, kinematics.model
        self._evaluations, self._best = 0, (math.inf, 0)

    def assemble(self, q_start: np.ndarray, held: set[int], t: float, angles: Collection[int] = ()) -> Assembly:
        """A configuration closing the enabled rows of Phi, the `held` coordinates kept at their
        values in `q_start`, nearest `q_start` among those found (see the module docstring).

        `angles` are the coordinates that are angles (of revolute and continuous joints): they
        are compared modulo 2 pi and seeded over a full turn.  Where the held values
        over-determine the constraints (a dependent coordinate given with the ones that determine
        it) the held ones the constraints need are freed, starting from their values: ``closed``
        then tells whether there was a choice (assembly branches) or not (the value contradicts
        the others).

        Raises AssemblyError with the smallest residual seen and its constraint row when no
        closed configuration is found.
        """
        q0 = np.array(q_start, dtype=float)
        self.kinematics.normalize(q0)
        self._evaluations, self._best = 0, (math.inf, 0)
        rows = self.kinematics.enabled_rows(self.kinematics.n_holonomic)
        if not len(rows):
            return Assembly(q0, "none", 1, 0)
        angle_list = sorted(angles)
        kinematic_map = self._at(q0, t)["kinematic_map"]
        held_speeds = {k for k in range(self.model.n_u) if np.any(kinematic_map[sorted(held), k] != 0)}
        dependent = self.kinematics.free_columns(self._generic_matrix(rows, q0, t),
                                                 self.model.projection.position_speeds, held_speeds)
        wider = sorted((set(range(self.model.n_u)) - held_speeds) | set(dependent))
        for free in ([dependent, wider] if set(wider) != set(dependent) else [dependent]):
            found = self._distinct(self._closed_near(q0, rows, free, t, angle_list), angle_list)
            if found:
                q, method = self._nearest(found, q0, held, angle_list)
                q = self._approach(q, q0, rows, free, t, angle_list)
                return Assembly(q, method, len(found), self._evaluations)
        residual, row = self._best
        raise AssemblyError(f"no configuration closing the constraints found: smallest residual {residual:.3g} in "
                            f"{self.kinematics.row_labels[row]}", residual, self.kinematics.row_labels[row])

    def _generic_matrix(self, rows: np.ndarray, q0: np.ndarray, t: float) -> np.ndarray:
        """The position rows of A at the derivation's first generic configuration (at `q0` without
        one): where to choose the free columns, since the start may be singular (links in line)."""
        configurations = self.model.generic_configurations
        return self._at(configurations[0] if configurations else q0, t)["constraint_matrix"][rows]

    def _at(self, q: np.ndarray, t: float) -> dict[str, np.ndarray]:
        """The outputs at `q` (zero speeds), counted in the evaluations of an assembly."""
        self._evaluations += 1
        return self.kinematics.outputs(q, np.zeros(self.model.n_u), t)

    def _closed_near(self, q0: np.ndarray, rows: np.ndarray, free: list[int], t: float,
                     angles: list[int]) -> list[tuple[np.ndarray, str]]:
        """Closed configurations moving the `free` speeds from `q0`, each with what found it:
        Gauss-Newton, else the homotopy, and the seeded starts in any case (Gauss-Newton from
        the start may land on a farther branch: a four-bar's crossed one)."""
        found = []
        q = q0.copy()
        if self._gauss_newton(q, rows, free, t):
            found.append((q, "Gauss-Newton"))
        elif (q := self._homotopy(q0, rows, free, t)) is not None:
            found.append((q, "homotopy"))
        found += [(q, "seeded starts") for q in self._seeded_starts(q0, rows, free, t, angles)]
        for q, _ in found:  # each angle as the value nearest its start
            q[angles] = q0[angles] + _wrapped(q[angles] - q0[angles])
        return found

    def _residual(self, q: np.ndarray, rows: np.ndarray, t: float,
                  target: np.ndarray | None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``Phi(q) - target`` over `rows`, and the outputs; the smallest true residual (target
        None) seen is kept for the refusal."""
        out = self._at(q, t)
        phi = out["phi"][rows, 0]
        if target is None and np.isfinite(phi).all() and np.abs(phi).max() < self._best[0]:
            self._best = (float(np.abs(phi).max()), int(rows[np.argmax(np.abs(phi))]))
        return (phi if target is None else phi - target), out

    def _gauss_newton(self, q: np.ndarray, rows: np.ndarray, free: list[int], t: float,
                      target: np.ndarray | None = None, iterations: int = ASSEMBLY_ITERATIONS,
                      tolerance: float = PROJECTION_TOLERANCE) -> bool:
        """Move `q` in place along the `free` speeds until ``max |Phi(q) - target| <= tolerance``
        (least-norm Gauss-Newton steps, each halved until the residual drops); whether it got
        there.  Stops early where no step lowers the residual (a singular start, no solution)."""
        residual, out = self._residual(q, rows, t, target)
        for _ in range(iterations):
            if not np.isfinite(residual).all():
                return False
            if np.abs(residual).max() <= tolerance:
                return True
            step = np.zeros(self.model.n_u)
            step[free] = -np.linalg.lstsq(out["constraint_matrix"][rows][:, free], residual, rcond=None)[0]
            merit, scale = np.linalg.norm(residual), 1.0
            for _ in range(LINE_SEARCH_HALVINGS + 1):
                trial = q + out["kinematic_map"] @ (scale * step)
                self.kinematics.normalize(trial)
                trial_residual, trial_out = self._residual(trial, rows, t, target)
                if np.isfinite(trial_residual).all() and np.linalg.norm(trial_residual) < (1 - 1e-4 * scale) * merit:
                    break
                scale /= 2
            else:
                return False
            q[:], residual, out = trial, trial_residual, trial_out
        return bool(np.isfinite(residual).all() and np.abs(residual).max() <= tolerance)

    def _homotopy(self, q0: np.ndarray, rows: np.ndarray, free: list[int], t: float) -> np.ndarray | None:
        """The Newton homotopy ``Phi(q) = (1 - s) Phi(q0)`` followed from s = 0 (`q0` itself) to 1
        with a Gauss-Newton corrector, the step of s halved where it fails; None if it stalls."""
        phi0, _ = self._residual(q0, rows, t, None)
        q, s, ds = q0.copy(), 0.0, HOMOTOPY_STEP
        tolerance = HOMOTOPY_TOLERANCE * max(1.0, float(np.abs(phi0).max()))
        for _ in range(HOMOTOPY_RUNS):
            last = s + ds >= 1.0
            reached = 1.0 if last else s + ds
            trial = q.copy()
            if self._gauss_newton(trial, rows, free, t, (1.0 - reached) * phi0 if not last else None,
                                  ASSEMBLY_ITERATIONS if last else HOMOTOPY_CORRECTOR,
                                  PROJECTION_TOLERANCE if last else tolerance):
                if last:
                    return trial
                q, s, ds = trial, reached, min(HOMOTOPY_STEP, 2.0 * ds)
            else:
                ds /= 2.0
                if ds < HOMOTOPY_MIN_STEP:
                    return None
        return None

    def _seeded_starts(self, q0: np.ndarray, rows: np.ndarray, free: list[int], t: float,
                       angles: list[int]) -> list[np.ndarray]:
        """Gauss-Newton from ASSEMBLY_STARTS seeded starts: the free coordinates' angles drawn over
        a full turn about their start, other free coordinates (but quaternions) within the
        start's residual; the closed configurations reached."""
        kinematic_map = self._at(q0, t)["kinematic_map"]
        moved = np.flatnonzero(np.abs(kinematic_map[:, free]).max(axis=1, initial=0.0) > 0.0)
        quaternions = {s + k for s in self.model.projection.quaternion_starts for k in range(4)}
        turned = [k for k in moved if k in set(angles)]
        shifted = [k for k in moved if k not in set(angles) and k not in quaternions]
        if not turned and not shifted:
            return []
        phi0, _ = self._residual(q0, rows, t, None)
        reach = max(float(np.abs(phi0).max()), 0.1)
        rng = np.random.default_rng(ASSEMBLY_SEED)
        found = []
        for _ in range(ASSEMBLY_STARTS):
            q = q0.copy()
            q[turned] += rng.uniform(-np.pi, np.pi, len(turned))
            q[shifted] += rng.uniform(-reach, reach, len(shifted))
            if self._gauss_newton(q, rows, free, t):
                found.append(q)
        return found

    def _nearest(self, found: list[tuple[np.ndarray, str]], q0: np.ndarray, held: set[int],
                 angles: list[int]) -> tuple[np.ndarray, str]:
        """The configuration of `found` nearest the values given (the `held` coordinates of `q0`,
        those freed because they over-determined the constraints being the ones that differ),
        ties (every held value kept) going to the one nearest the whole of `q0`; the first of
        equally near ones."""
        mask = np.zeros(len(q0), dtype=bool)
        mask[sorted(held)] = True

        def key(candidate: tuple[np.ndarray, str]) -> tuple[float, float]:
            q = candidate[0]
            return self._distance(np.where(mask, q, q0), q0, angles), self._distance(q, q0, angles)
        return min(found, key=key)

    def _approach(self, q: np.ndarray, q0: np.ndarray, rows: np.ndarray, free: list[int], t: float,
                  angles: list[int]) -> np.ndarray:
        """`q` moved along the closed configurations towards `q0` while that brings it nearer (the
        locally nearest one, where the values held leave a continuum of them: a linkage whose
        input was freed).  Each move is the difference to `q0` in the free speeds, less its part
        that opens the constraints (a least-squares projection onto the null space of their rows
        of A), re-closed by Gauss-Newton; it is halved while it does not bring `q` nearer."""
        distance = self._distance(q, q0, angles)
        for _ in range(APPROACH_ITERATIONS):
            out = self._at(q, t)
            matrix, kinematic_map = out["constraint_matrix"][rows][:, free], out["kinematic_map"][:, free]
            difference = q0 - q
            difference[angles] = _wrapped(difference[angles])
            step = np.linalg.lstsq(kinematic_map, difference, rcond=None)[0]
            step -= np.linalg.lstsq(matrix, matrix @ step, rcond=None)[0]
            if np.linalg.norm(step) <= SAME_CONFIGURATION * 1e-3:
                break
            for scale in (1.0, 0.5, 0.25, 0.125):
                trial = q + kinematic_map @ (scale * step)
                self.kinematics.normalize(trial)
                if self._gauss_newton(trial, rows, free, t) and self._distance(trial, q0, angles) < distance:
                    break
            else:
                break
            q, distance = trial, self._distance(trial, q0, angles)
        return q

    @staticmethod
    def _distance(q: np.ndarray, q0: np.ndarray, angles: list[int]) -> float:
        """Euclidean distance between configurations, angles modulo 2 pi."""
        difference = q - q0
        difference[angles] = _wrapped(difference[angles])
        return float(np.linalg.norm(difference))

    def _distinct(self, found: list[tuple[np.ndarray, str]], angles: list[int]) -> list[tuple[np.ndarray, str]]:
        """`found` without repeats (SAME_CONFIGURATION apart), first occurrences kept in order."""
        distinct: list[tuple[np.ndarray, str]] = []
        for q, method in found:
            if all(self._distance(q, other, angles) > SAME_CONFIGURATION for other, _ in distinct):
                distinct.append((q, method))
        return distinct


def _wrapped(angles: np.ndarray) -> np.ndarray:
    """Angles brought into [-pi, pi)."""
    return (angles + np.pi) % (2.0 * np.pi) - np.pi
