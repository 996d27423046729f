"""Constraints at position, velocity and acceleration level, with redundant ones detected and
dropped (seed 004: a loop closure or mimic set can hold more equations than independent ones).

Redundancy is judged by rank at *generic* configurations: coordinates drawn from a seeded
uniform distribution (angles in [-pi, pi], floating-base quaternions normalized), projected onto
the position constraints by Gauss-Newton so the samples are feasible (rank at infeasible points can
be higher than anywhere on the constraint manifold), at three such samples.  A constraint row that
adds no rank at any sample is reported and dropped; one whose row is zero at every sample is
reported as already satisfied.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sympy import Matrix, lambdify, zeros

from mb_sim.model import FloatingJoint, Robot
from mb_sim.symbolic.plain import PlainSymbols

__all__ = ["ConstraintEquations", "derive_constraints", "GENERIC_SAMPLES", "RANK_TOLERANCE"]

GENERIC_SAMPLES = 3
RANK_TOLERANCE = 1e-9
GENERIC_SEED = 4004


@dataclass
class ConstraintEquations:
    """Independent constraints: Phi(q) = 0 with its Jacobian dPhi/dq, A(q) u + b = 0, A u' + c = 0.

    ``names`` names, per kept row of A, the component that added it (the first rows are those of
    Phi); ``redundant`` the components with rows dropped as redundant with the others.
    """

    phi: Matrix
    phi_jacobian: Matrix
    matrix: Matrix
    bias: Matrix
    acceleration_bias: Matrix
    names: list[str]
    report: list[str] = field(default_factory=list)
    redundant: list[str] = field(default_factory=list)


def _constraint_owners(robot: Robot) -> list:
    """The component that added each constraint of the robot's system (holonomic ones first, then
    nonholonomic), found by the constraint's expression: the deepest component whose own system
    holds it (load groups add to their parent's)."""
    holonomic, nonholonomic = {}, {}
    for component in list(robot.walk())[1:]:  # depth first: a later owner is a deeper one
        own = getattr(component, "_system", None)
        if own is not None:
            holonomic.update((c, component) for c in own.holonomic_constraints)
            nonholonomic.update((c, component) for c in own.nonholonomic_constraints)
    system = robot.system
    return ([holonomic.get(c, robot) for c in system.holonomic_constraints]
            + [nonholonomic.get(c, robot) for c in system.nonholonomic_constraints])


def derive_constraints(robot: Robot, plain: PlainSymbols) -> ConstraintEquations:
    """Constraint equations of `robot` with redundant rows removed (see the module docstring)."""
    system, q, u = robot.system, Matrix(plain.q), Matrix(plain.u)
    phi = plain.convert_matrix(Matrix(system.holonomic_constraints)) if system.holonomic_constraints else zeros(0, 1)
    nonholonomic = (plain.convert_matrix(Matrix(system.nonholonomic_constraints))
                    if system.nonholonomic_constraints else zeros(0, 1))
    jacobian = phi.jacobian(q)
    velocity = (jacobian * plain.qdot + phi.diff(plain.time)).col_join(nonholonomic)
    if velocity.shape[0] == 0:
        empty = zeros(0, 1)
        return ConstraintEquations(empty, jacobian, zeros(0, len(u)), empty, empty, [])
    matrix = velocity.jacobian(u)
    bias = velocity.xreplace({x: 0 for x in u})
    owners = _constraint_owners(robot)
    labels = [f"{type(owner).__name__} '{owner.name}'" for owner in owners]
    keep, report, redundant = _independent_rows(robot, plain, phi, jacobian, matrix, labels)
    n_h = phi.shape[0]
    matrix, bias = matrix.extract(keep, list(range(len(u)))), bias.extract(keep, [0])
    acceleration_bias = (matrix * u + bias).jacobian(q) * plain.qdot + (matrix * u + bias).diff(plain.time)
    holonomic = [k for k in keep if k < n_h]
    phi, jacobian = phi.extract(holonomic, [0]), jacobian.extract(holonomic, list(range(len(q))))
    return ConstraintEquations(phi, jacobian, matrix, bias, acceleration_bias, [owners[k].name for k in keep], report,
                               list(dict.fromkeys(owners[k].name for k in redundant)))


def _generic_configurations(robot: Robot, plain: PlainSymbols, phi: Matrix, jacobian: Matrix) -> list[np.ndarray]:
    """Seeded random configurations, projected onto Phi(q) = 0."""
    rng = np.random.default_rng(GENERIC_SEED)
    index = {dynamic: i for i, dynamic in enumerate(robot.system.q)}
    parameters = robot.parameters
    phi_num = lambdify([plain.q], phi.xreplace(parameters), "numpy")
    jac_num = lambdify([plain.q], jacobian.xreplace(parameters), "numpy")
    samples = []
    for _ in range(GENERIC_SAMPLES):
        q = rng.uniform(-np.pi, np.pi, len(plain.q))
        for joint in robot.joints.values():
            if isinstance(joint, FloatingJoint):
                rotation = [index[c] for c in joint.q[3:]]
                q[rotation] /= np.linalg.norm(q[rotation])
        for _ in range(50 if phi.shape[0] else 0):
            error = np.asarray(phi_num(q), dtype=float).ravel()
            if np.linalg.norm(error) < 1e-12:
                break
            q = q - np.linalg.lstsq(np.asarray(jac_num(q), dtype=float), error, rcond=None)[0]
        samples.append(q)
    return samples


def _independent_rows(robot: Robot, plain: PlainSymbols, phi: Matrix, jacobian: Matrix, matrix: Matrix,
                      names: list[str]) -> tuple[list[int], list[str], list[int]]:
    """Rows of A kept (greedy by rank, in order), a report on the rest, and the rows dropped as
    redundant (not merely zero)."""
    numeric = lambdify([plain.q], matrix.xreplace(robot.parameters), "numpy")
    samples = [np.atleast_2d(np.asarray(numeric(q), dtype=float)) for q in _generic_configurations(robot, plain, phi, jacobian)]
    best_keep: list[int] = []
    for A in samples:
        keep: list[int] = []
        for row in range(A.shape[0]):
            trial = A[keep + [row]]
            tolerance = RANK_TOLERANCE * max(1.0, np.abs(A).max())
            if np.linalg.matrix_rank(trial, tol=tolerance) == len(keep) + 1:
                keep.append(row)
        if len(keep) > len(best_keep):
            best_keep = keep
    report, redundant = [], []
    for row in range(matrix.shape[0]):
        if row in best_keep:
            continue
        if all(np.abs(A[row]).max() == 0.0 for A in samples):
            report.append(f"constraint {row} ({names[row]}) is already satisfied (zero row); dropped")
        else:
            report.append(f"constraint {row} ({names[row]}) is redundant with the others; dropped")
            redundant.append(row)
    return best_keep, report, redundant
