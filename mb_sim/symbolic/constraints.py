"""Constraints at position, velocity and acceleration level, with redundant ones detected
(seed 004: a loop closure or mimic set can hold more equations than independent ones).

Every row is enforced.  Which rows are independent depends on where the robot is (an umbrella's
two loops are independent on its own branch while one is redundant on the fold where the runner
sits at the hub; a four-bar at a dead point; two wheels on one axle always share their sideways
condition), so the generated forward dynamics and projection judge it at every evaluation: their
Cholesky factorization gives a row that depends on the rows before it there a zero multiplier
and leaves it to them (``mb_cholesky``, :func:`mb_sim.codegen.projection.solve_gram`), and the
projection still checks every row's residual.  A row is therefore never masked at a
configuration where it is needed, and a row that stops holding fails loudly.

This module's judgement is the report: seed 004's table (open-tree DoF, independent constraints,
DoF) and the rows redundant with the others, judged *where the robot is*: at the assembled
configuration (the URDF's zero configuration, or the nearest one closing the constraints) and at
seeded configurations near it on its branch (it may be a singular one itself), the most
independent rows among them.  Seeded configurations drawn over the whole configuration space and
projected onto Phi(q) = 0 (angles in [-pi, pi], floating-base quaternions normalized) are judged
too: the report says when another branch has another rank, and they are the fallback when no
closed configuration is found near zero.  A row whose row of A is zero at every sample is reported
as already satisfied and dropped.  A holonomic row that does not depend on the coordinates at all
is either satisfied by the geometry (dropped and reported) or can never hold: then
:class:`ConstraintError` names it.

The position speeds (the dependent speeds the constraint kinematics solver prefers to solve
positions for) are chosen at the judged sample, greedily by rank over the columns of the
holonomic rows of A (= dPhi/dq N): first the speeds of coordinates the components declare
dependent (mimic joints), then from the last speed backwards, so joints near the root (a crank, a
driven joint) stay independent.  The projection after each step moves the coordinates along
*every* speed that enters the holonomic rows (``projection_speeds``: the least-norm correction over
all of them works wherever the rows are independent, whichever those are).  Working in speeds, a
floating body's orientation has its three rotation directions, not the four quaternion components
(whose norm is not a degree of freedom).  The dependent speeds (for velocity constraints) likewise
over the columns of all rows, starting with the position speeds; the dependent coordinates are
those the position speeds move.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sympy import Matrix, lambdify, zeros

from mb_sim.model import Robot
from mb_sim.symbolic.plain import PlainSymbols, robot_inputs
from mb_sim.symbolic.rank import RANK_TOLERANCE, independent_rows

__all__ = ["ConstraintAnalysis", "ConstraintEquations", "ConstraintError", "analyse_constraints", "derive_constraints",
           "independent_rows", "GENERIC_SAMPLES", "RANK_TOLERANCE"]

GENERIC_SAMPLES = 3
GENERIC_SEED = 4004
#: Standard deviation of the seeded moves [rad or m] from the assembled configuration to the
#: samples near it on its branch.
BRANCH_STEP = 0.2
#: Gauss-Newton iterations (and the residual reached) when projecting a sample onto Phi = 0.
SAMPLE_ITERATIONS, SAMPLE_TOLERANCE = 50, 1e-11


class ConstraintError(ValueError):
    """A constraint that can never hold (e.g. a loop joint whose frames can never meet)."""


@dataclass
class ConstraintAnalysis:
    """The counts of seed 004's table: open-tree degrees of freedom (speeds), scalar conditions
    stated (identically satisfied ones included), independent ones kept, and what is left."""

    open_loop_dof: int
    conditions: int
    kept: int

    @property
    def closed_loop_dof(self) -> int:
        return self.open_loop_dof - self.kept


@dataclass
class ConstraintEquations:
    """Independent constraints: Phi(q) = 0 with its Jacobian dPhi/dq, A(q) u + b = 0, A u' + c = 0.

    ``names`` names, per kept row of A, the component that added it (the first rows are those of
    Phi); ``labels`` says what each kept row is; ``redundant`` the components with rows dropped
    as redundant with the others;
    ``wrenches`` (n_c x 6) the unit wrench on a loop joint's child each row's multiplier scales
    (zero rows for constraints between coordinates); ``dependent_coordinates`` and
    ``dependent_speeds`` are indices into q and u (see the module docstring);
    ``independent`` is False for the rows redundant with the others where the rank was judged
    (they are enforced all the same: see the module docstring), ``generic_configurations`` the
    samples it was judged at (the assembled one first), ``projection_speeds`` the speeds the
    projection moves the coordinates along.
    """

    phi: Matrix
    phi_jacobian: Matrix
    matrix: Matrix
    bias: Matrix
    acceleration_bias: Matrix
    names: list[str]
    report: list[str] = field(default_factory=list)
    redundant: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    wrenches: Matrix = field(default_factory=lambda: zeros(0, 6))
    dependent_coordinates: list[int] = field(default_factory=list)
    dependent_speeds: list[int] = field(default_factory=list)
    analysis: ConstraintAnalysis | None = None
    independent: list[bool] = field(default_factory=list)
    generic_configurations: list[list[float]] = field(default_factory=list)
    position_speeds: list[int] = field(default_factory=list)
    projection_speeds: list[int] = field(default_factory=list)


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


def _row_label(owner, expression) -> str:
    row = owner.constraint_rows.get(expression)
    return row.description if row is not None else f"{type(owner).__name__} '{owner.name}'"


def _row_wrench(owner, expression, plain: PlainSymbols) -> Matrix:
    row = owner.constraint_rows.get(expression)
    if row is None or row.wrench is None:
        return zeros(1, 6)
    return plain.convert_matrix(row.wrench).T


def _stated_conditions(robot: Robot, n_rows: int) -> int:
    """Rows of the system plus the identically satisfied conditions components left out."""
    return n_rows + sum(len(getattr(component, "satisfied", ())) for component in robot.walk())


def derive_constraints(robot: Robot, plain: PlainSymbols) -> ConstraintEquations:
    """Constraint equations of `robot`, zero rows removed and redundant ones reported (see the
    module docstring).

    Raises
    ------
    ConstraintError
        A holonomic constraint independent of the coordinates does not hold.
    """
    # Columns even when empty (a robot without joints): Matrix([]) is 0 x 0, not a column.
    system, q, u = robot.system, Matrix(len(plain.q), 1, plain.q), Matrix(len(plain.u), 1, plain.u)
    stated = [*system.holonomic_constraints, *system.nonholonomic_constraints]
    phi = plain.convert_matrix(Matrix(system.holonomic_constraints)) if system.holonomic_constraints else zeros(0, 1)
    nonholonomic = (plain.convert_matrix(Matrix(system.nonholonomic_constraints))
                    if system.nonholonomic_constraints else zeros(0, 1))
    jacobian = phi.jacobian(q)
    velocity = (jacobian * plain.qdot + phi.diff(plain.time)).col_join(nonholonomic)
    analysis = ConstraintAnalysis(len(u), _stated_conditions(robot, len(stated)), 0)
    if velocity.shape[0] == 0:
        empty = zeros(0, 1)
        return ConstraintEquations(empty, jacobian, zeros(0, len(u)), empty, empty, [], analysis=analysis)
    matrix = velocity.jacobian(u)
    bias = velocity.xreplace({x: 0 for x in u})
    owners = _constraint_owners(robot)
    labels = [_row_label(owner, expression) for owner, expression in zip(owners, stated)]
    _check_coordinate_free_rows(robot, phi, {*q, plain.time}, labels)
    keep, independent, report, redundant, sample, configurations = _independent_rows(
        robot, plain, phi, jacobian, matrix, labels)
    report = [f"{label} holds identically (whatever the coordinates); left out"
              for component in robot.walk() for label in getattr(component, "satisfied", ())] + report
    n_h = phi.shape[0]
    columns_q, columns_u = list(range(len(q))), list(range(len(u)))
    position, speeds, coordinates = _dependent(robot, plain, matrix.extract([k for k in independent if k < n_h],
                                                                            columns_u),
                                               matrix.extract(independent, columns_u), sample)
    matrix, bias = matrix.extract(keep, columns_u), bias.extract(keep, [0])
    acceleration_bias = (matrix * u + bias).jacobian(q) * plain.qdot + (matrix * u + bias).diff(plain.time)
    holonomic = [k for k in keep if k < n_h]
    phi, jacobian = phi.extract(holonomic, [0]), jacobian.extract(holonomic, columns_q)
    moved = [k for k in columns_u if any(matrix[row, k] != 0 for row in range(len(holonomic)))]
    wrenches = Matrix.vstack(zeros(0, 6), *[_row_wrench(owners[k], stated[k], plain) for k in keep])
    analysis.kept = len(independent)
    return ConstraintEquations(phi, jacobian, matrix, bias, acceleration_bias, [owners[k].name for k in keep], report,
                               list(dict.fromkeys(owners[k].name for k in redundant)), [labels[k] for k in keep],
                               wrenches, coordinates, speeds, analysis, [k in independent for k in keep],
                               [[float(v) for v in c] for c in configurations], position, moved)


def analyse_constraints(robot: Robot) -> ConstraintEquations:
    """The constraint analysis of `robot` alone (no Kane's equations): what is kept, dropped and
    why, the dependent coordinates, and the degrees of freedom (``.analysis``)."""
    system = robot.system
    return derive_constraints(robot, PlainSymbols(list(system.q), list(system.u), robot_inputs(robot),
                                                  list(system.kdes)))


def _check_coordinate_free_rows(robot: Robot, phi: Matrix, variables: set, labels: list[str]) -> None:
    """Raise ConstraintError for a holonomic row free of the coordinates and time that does not hold."""
    for row, expression in enumerate(phi):
        if expression.free_symbols & variables:
            continue
        value = float(expression.xreplace(robot.parameters).evalf())
        if abs(value) > 1e-9:
            raise ConstraintError(f"{labels[row]} is {value:.6g} whatever the coordinates: it can never hold "
                                  "(check the loop joint's origin against the links it joins)")


def _dependent(robot: Robot, plain: PlainSymbols, holonomic: Matrix, matrix: Matrix,
               sample: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """Position speeds, dependent speeds and dependent coordinates at the generic `sample` (see
    the module docstring); `holonomic` and `matrix` are the independent holonomic rows of A and
    all independent rows."""
    system = robot.system
    q_list, u_list = list(system.q), list(system.u)

    def at_sample(expressions: Matrix) -> np.ndarray:
        function = lambdify([plain.q], expressions.xreplace(robot.parameters), "numpy")
        return np.atleast_2d(np.asarray(function(sample), dtype=float))

    declared = [u_list.index(s) for joint in robot.joints.values() for c, s in zip(joint.q, joint.u)
                if c in system.q_dep]
    backwards = list(range(len(u_list)))[::-1]
    position = independent_rows(at_sample(holonomic).T, list(dict.fromkeys(declared + backwards))) \
        if holonomic.shape[0] else []
    preferred = position + [u_list.index(s) for s in system.u_dep] + backwards
    speeds = independent_rows(at_sample(matrix).T, list(dict.fromkeys(preferred)))
    moved = at_sample(plain.qdot.jacobian(Matrix(len(plain.u), 1, plain.u)))[:, position] if position else np.zeros((len(q_list), 0))
    coordinates = [i for i in range(len(q_list)) if np.abs(moved[i]).max(initial=0.0) > 0.0]
    return sorted(position), sorted(speeds), coordinates


def _project_sample(q: np.ndarray, phi_num, jac_num, quaternions: list[list[int]]) -> np.ndarray | None:
    """`q` moved onto Phi = 0 by Gauss-Newton (least-norm steps, so it stays near its start); None
    if it does not get there."""
    q = np.array(q, dtype=float)
    for _ in range(SAMPLE_ITERATIONS):
        for rotation in quaternions:
            q[rotation] /= np.linalg.norm(q[rotation])
        error = np.asarray(phi_num(q), dtype=float).ravel()
        if not np.all(np.isfinite(error)):
            return None
        if np.abs(error).max(initial=0.0) < SAMPLE_TOLERANCE:
            return q
        q = q - np.linalg.lstsq(np.atleast_2d(np.asarray(jac_num(q), dtype=float)), error, rcond=None)[0]
    return None


def _sample_configurations(robot: Robot, plain: PlainSymbols, phi: Matrix,
                           jacobian: Matrix) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Configurations on Phi(q) = 0: the assembled one (from the URDF's zero configuration) and
    seeded ones near it on its branch; and seeded ones drawn over the whole configuration space."""
    rng = np.random.default_rng(GENERIC_SEED)
    index = {dynamic: i for i, dynamic in enumerate(robot.system.q)}
    quaternions = [[index[c] for c in joint.q[joint.quaternion_offset:joint.quaternion_offset + 4]]
                   for joint in robot.joints.values() if joint.quaternion_offset is not None]
    parameters = robot.parameters
    phi_num = lambdify([plain.q], phi.xreplace(parameters), "numpy")
    jac_num = lambdify([plain.q], jacobian.xreplace(parameters), "numpy")
    zero = np.zeros(len(plain.q))
    for rotation in quaternions:
        zero[rotation[0]] = 1.0
    if phi.shape[0]:
        def project(q):
            return _project_sample(q, phi_num, jac_num, quaternions)
    else:
        def project(q):
            for rotation in quaternions:
                q[rotation] /= np.linalg.norm(q[rotation])
            return q
    branch = []
    assembled = project(zero)
    if assembled is not None:
        nearby = [project(assembled + rng.normal(0.0, BRANCH_STEP, len(zero))) for _ in range(GENERIC_SAMPLES)]
        branch = [assembled, *(q for q in nearby if q is not None)]
    anywhere = [project(rng.uniform(-np.pi, np.pi, len(zero))) for _ in range(GENERIC_SAMPLES)]
    return branch, [q for q in anywhere if q is not None]


def _independent_rows(robot: Robot, plain: PlainSymbols, phi: Matrix, jacobian: Matrix, matrix: Matrix,
                      names: list[str]) -> tuple[list[int], list[int], list[str], list[int], np.ndarray, list]:
    """The rows kept (all but zero ones), the independent ones among them (greedy by rank, in
    order, at the sample of the assembled branch giving the most; at the samples drawn anywhere if
    none was found), a report on the others, the redundant rows, that sample, and all samples."""
    numeric = lambdify([plain.q], matrix.xreplace(robot.parameters), "numpy")
    branch, anywhere = _sample_configurations(robot, plain, phi, jacobian)
    configurations = [*branch, *anywhere] or [np.zeros(len(plain.q))]
    samples = [np.atleast_2d(np.asarray(numeric(q), dtype=float)) for q in configurations]
    judged = samples[:len(branch)] or samples
    ranks = [independent_rows(A, range(A.shape[0])) for A in samples]
    best_index = max(range(len(judged)), key=lambda k: len(ranks[k]))
    best_keep, best = ranks[best_index], configurations[best_index]
    report, redundant, kept = [], [], []
    if not branch and phi.shape[0]:
        report.append("no configuration closing the constraints was found from the URDF's zero configuration: "
                      "redundancy judged at configurations drawn anywhere")
    elsewhere = sorted({len(keep) for keep in ranks[len(branch):]} - {len(best_keep)}) if branch else []
    if elsewhere:
        report.append(f"{len(best_keep)} independent constraints where the robot is assembled, "
                      f"{' or '.join(map(str, elsewhere))} on another branch of closed configurations (the "
                      "dynamics judge them wherever the robot is)")
    for row in range(matrix.shape[0]):
        if row in best_keep:
            kept.append(row)
        elif all(np.abs(A[row]).max() == 0.0 for A in samples):
            report.append(f"constraint {row} ({names[row]}) is already satisfied (zero row); dropped")
        else:
            report.append(f"constraint {row} ({names[row]}) is redundant with the others where the robot is "
                          "assembled; enforced with them (the dynamics keep the independent rows wherever "
                          "the robot is)")
            redundant.append(row)
            kept.append(row)
    return kept, best_keep, report, redundant, best, configurations


