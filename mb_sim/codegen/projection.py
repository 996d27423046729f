"""Projection of a state back onto its constraints after an integration step.

Fixed-step integration drifts off the constraints: unit quaternions lose their norm, holonomic
constraints ``Phi(q) = 0`` and velocity constraints ``A u + b = 0`` stop holding.  The projection
(the same in C, ``mb_project``, and in NumPy, :func:`project_state`):

1. renormalizes each quaternion block ``q[s:s + 4]`` to unit norm;
2. if there are holonomic constraints, moves the coordinates onto ``Phi = 0`` by Gauss-Newton
   along the correction speeds ``S`` (every speed entering the holonomic rows): until ``max |Phi| <= PROJECTION_TOLERANCE`` (at most
   ``PROJECTION_ITERATIONS`` corrections), with ``A_h`` the holonomic rows of ``A``
   (``= dPhi/dq N(q)``, N the kinematic map ``dq'/du``), the least-norm ``du_S`` with
   ``A_h[:, S] du_S = -Phi`` (Cholesky of ``A_hS A_hS^T``) moves ``q += N(q) du``.  Working in
   speeds rather than coordinates, a unit quaternion moves only in its three rotation
   directions, never along its norm (which the renormalization would undo);
3. if there are velocity constraints, applies the mass-weighted impulse to all speeds:
   ``r = A u + b``, ``u -= M^-1 A^T (A M^-1 A^T)^-1 r``, with M, A, b at the projected q.  Of all
   corrections onto ``A u + b = 0`` it is the smallest in the kinetic-energy norm, and it changes
   the momentum the constraints do not act on not at all: projecting after a step removes only the drift, and
   enabling a constraint is an inelastic engagement (two bodies being joined keep their total
   momentum).  (Before, the correction was the least-norm one on the dependent speeds; that
   conserves nothing in particular.)

Each quaternion is renormalized again after every Gauss-Newton correction.  The dependent speeds
are not used here: they are what the constraint kinematics solver (``mb_sim.sim``) solves for
when a user sets a state.

Only the enabled constraint rows take part (``enabled``, one flag per velocity constraint row;
the first ``n_h`` also flag the rows of Phi): a disabled row is as if it had not been derived.
Among them, a row that depends on the rows before it at the current configuration (its pivot in
the Cholesky factorization of ``A_hS A_hS^T`` or ``A M^-1 A^T`` at most :data:`DEPENDENT_PIVOT`
of its diagonal) is left to them (:func:`solve_gram`), but its residual is checked with the
others: a redundant row that stops holding makes the projection fail, never a silent opening.

It fails (status 4) on a zero or non-finite quaternion, a singular ``J J^T`` or ``A_S A_S^T``, or
when Gauss-Newton does not reach the tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from mb_sim.codegen.errors import CodegenError

if TYPE_CHECKING:  # or a ModelHeader (mb_sim.codegen.header), which has what is read here
    from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["DEPENDENT_PIVOT", "PROJECTION_ITERATIONS", "PROJECTION_TOLERANCE", "Projection", "project_state",
           "solve_gram"]

PROJECTION_TOLERANCE = 1e-12
PROJECTION_ITERATIONS = 20
#: A constraint row whose Cholesky pivot in a Gram matrix (``A_S A_S^T``, ``A M^-1 A^T``) is at most
#: this fraction of its diagonal entry depends on the rows before it at that configuration: it gets
#: a zero multiplier and the rows it depends on carry its share (C: ``mb_cholesky``); so does a row
#: whose diagonal entry is at most this fraction of the largest (a row vanishing there).
DEPENDENT_PIVOT = 1e-10

# Phi (n_h), N (n_q x n_u), M (n_u x n_u), A (n_c x n_u) and b (n_c) at the coordinates q.
ConstraintFunction = Callable[[np.ndarray], tuple[np.ndarray, ...]]


@dataclass(frozen=True)
class Projection:
    """What the projection of one model corrects.

    Attributes
    ----------
    quaternion_starts
        Index in q of the scalar part of each unit quaternion block.
    position_speeds
        The dependent speeds the constraint kinematics solver prefers to move the coordinates
        along onto Phi = 0 (every speed if the model names none); empty without holonomic
        constraints.
    correction_speeds
        The speeds along which the projection moves the coordinates onto Phi = 0: every speed
        entering the holonomic rows (every speed if the model names none), so the least-norm
        correction works wherever the rows are independent; empty without holonomic constraints.
    speeds
        The dependent speeds (every speed if the model names none); empty without velocity
        constraints.  Projection corrects every speed; these are the ones the constraint
        kinematics solver solves for.
    """

    quaternion_starts: tuple[int, ...]
    position_speeds: tuple[int, ...]
    speeds: tuple[int, ...]
    correction_speeds: tuple[int, ...] = ()

    @classmethod
    def from_equations(cls, eom: EquationsOfMotion) -> Projection:
        """The projection of `eom`, after checking its index lists.

        Raises
        ------
        CodegenError
            An index is out of range or repeated, quaternion blocks overlap, or fewer position
            (dependent) speeds are named than there are independent holonomic (velocity)
            constraints.
        """
        enforced = eom.constraint_independent or [True] * eom.n_constraints
        n_h, n_c = sum(enforced[:eom.n_holonomic]), sum(enforced)
        starts = _indices(eom, "quaternion_starts", eom.quaternion_starts, eom.n_q - 3)
        covered = [s + k for s in starts for k in range(4)]
        if len(set(covered)) != len(covered):
            raise CodegenError(f"model {eom.name!r}: quaternion blocks overlap")
        _indices(eom, "dependent_coordinates", eom.dependent_coordinates, eom.n_q)
        position = _dependent(eom, "position_speeds", eom.position_speeds, eom.n_u, n_h)
        speeds = _dependent(eom, "dependent_speeds", eom.dependent_speeds, eom.n_u, n_c)
        correction = _dependent(eom, "projection_speeds", eom.projection_speeds or eom.position_speeds, eom.n_u, n_h)
        return cls(starts, position, speeds, correction)

    @property
    def needed(self) -> bool:
        """Whether there is anything to project (else projection leaves every state as is)."""
        return bool(self.quaternion_starts or self.position_speeds or self.speeds)


def _indices(eom: EquationsOfMotion, what: str, indices: list[int], end: int) -> tuple[int, ...]:
    """`indices` as a tuple, after checking they are distinct and in ``range(end)``."""
    if len(set(indices)) != len(indices) or any(not 0 <= i < end for i in indices):
        raise CodegenError(f"model {eom.name!r}: {what} {list(indices)} must be distinct "
                           f"indices in 0..{end - 1}")
    return tuple(int(i) for i in indices)


def _dependent(
    eom: EquationsOfMotion, what: str, indices: list[int], size: int, n_constraints: int,
) -> tuple[int, ...]:
    """The indices to correct for `n_constraints` constraints: `indices`, or all of
    ``range(size)`` if it is empty; none if there are no constraints."""
    chosen = _indices(eom, what, indices, size) or tuple(range(size))
    if n_constraints == 0:
        return ()
    if len(chosen) < n_constraints:
        raise CodegenError(f"model {eom.name!r}: {len(chosen)} {what} for {n_constraints} "
                           "constraints")
    return chosen


def project_state(
    projection: Projection, q: np.ndarray, u: np.ndarray, constraints: ConstraintFunction,
    enabled: np.ndarray | None = None,
) -> int:
    """Project `q`, `u` in place onto the enabled constraints (see the module docstring).

    `enabled` holds one flag per velocity constraint row (None: all enabled).  Returns 0, or 4 on
    failure, when `q` and `u` may be partly corrected.
    """
    if not _normalize_quaternions(projection.quaternion_starts, q):
        return 4
    if not (projection.position_speeds or projection.speeds):
        return 0
    try:
        outputs = _project_coordinates(projection, q, constraints, enabled)
        if outputs is None:
            return 4
        if projection.speeds:
            rows = _enabled_rows(enabled, outputs[3].shape[0])
            _project_speeds(u, outputs[2], outputs[3][rows], outputs[4][rows])
    except np.linalg.LinAlgError:
        return 4
    return 0


def _normalize_quaternions(starts: tuple[int, ...], q: np.ndarray) -> bool:
    """Each quaternion block of `q` scaled to unit norm, in place; False at a zero or non-finite one."""
    for start in starts:
        block = q[start:start + 4]
        norm = np.sqrt(block @ block)
        if not (np.isfinite(norm) and norm > 0.0):
            return False
        block /= norm
    return True


def _enabled_rows(enabled: np.ndarray | None, n: int) -> np.ndarray:
    """Boolean mask of the first `n` constraint rows that are enabled."""
    return np.ones(n, dtype=bool) if enabled is None else np.asarray(enabled[:n]) != 0.0


def _project_coordinates(
    projection: Projection, q: np.ndarray, constraints: ConstraintFunction, enabled: np.ndarray | None,
) -> tuple[np.ndarray, ...] | None:
    """Gauss-Newton onto the enabled rows of ``Phi(q) = 0`` along the position speeds, in place,
    renormalizing quaternions after each correction (see the module docstring).

    Returns the constraint outputs at the projected q (the last evaluation, which also serves the
    speed projection), or None if the tolerance is not reached.
    """
    selected = list(projection.correction_speeds or projection.position_speeds)
    for iteration in range(PROJECTION_ITERATIONS + 1):
        outputs = constraints(q)
        n_h = outputs[0].shape[0]
        rows = _enabled_rows(enabled, n_h)
        phi, jacobian = outputs[0][rows], outputs[3][:n_h][np.ix_(rows, selected)]
        if np.all(np.abs(phi) <= PROJECTION_TOLERANCE):
            return outputs
        if iteration < PROJECTION_ITERATIONS:
            step = np.zeros(outputs[1].shape[1])
            step[selected] = -jacobian.T @ solve_gram(jacobian @ jacobian.T, phi)
            q += outputs[1] @ step
            if not _normalize_quaternions(projection.quaternion_starts, q):
                return None
    return None


def _project_speeds(u: np.ndarray, mass: np.ndarray, matrix: np.ndarray, bias: np.ndarray) -> None:
    """The mass-weighted impulse onto ``A u + b = 0`` (enabled rows given), in place."""
    if matrix.shape[0] == 0:
        return
    y = _solve_positive_definite(mass, matrix.T)  # M^-1 A^T
    u -= y @ solve_gram(matrix @ y, matrix @ u + bias)


def _solve_positive_definite(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``matrix^-1 rhs`` by Cholesky, as in C; LinAlgError if `matrix` is not positive definite."""
    lower = np.linalg.cholesky(matrix)
    return np.linalg.solve(lower.T, np.linalg.solve(lower, rhs))


def solve_gram(gram: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``gram^-1 rhs`` for the Gram matrix of constraint rows, by the rank-revealing Cholesky of
    the C runtime (``mb_cholesky``): a row dependent on the rows before it here (pivot at most
    DEPENDENT_PIVOT of its diagonal), or vanishing here (diagonal at most DEPENDENT_PIVOT of the
    largest), gets 0.  LinAlgError if `gram` is not finite."""
    n = gram.shape[0]
    if not np.all(np.isfinite(gram)):
        raise np.linalg.LinAlgError("the constraints' Gram matrix is not finite")
    lower, x = np.zeros((n, n)), np.array(rhs, dtype=float)
    largest = max(0.0, float(np.diag(gram).max(initial=0.0)))
    for j in range(n):
        pivot = gram[j, j] - lower[j, :j] @ lower[j, :j]
        if not (pivot > DEPENDENT_PIVOT * gram[j, j] and gram[j, j] > DEPENDENT_PIVOT * largest):  # dependent
            lower[j, :j], lower[j, j], x[j] = 0.0, 1.0, 0.0
            continue
        lower[j, j] = np.sqrt(pivot)
        lower[j + 1:, j] = (gram[j + 1:, j] - lower[j + 1:, :j] @ lower[j, :j]) / lower[j, j]
    return np.linalg.solve(lower.T, np.linalg.solve(lower, x))

