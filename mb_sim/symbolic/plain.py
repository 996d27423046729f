"""Replace functions of time (coordinates, speeds, inputs) by plain symbols for code generation,
and derivatives of coordinates by the solved kinematic differential equations."""
from __future__ import annotations

from sympy import Basic, Derivative, Matrix, S, Symbol, linear_eq_to_matrix
from sympy.core.function import AppliedUndef
from sympy.physics.mechanics import dynamicsymbols, msubs

from mb_sim.model import symbol_name

__all__ = ["PlainSymbols", "robot_inputs"]


def robot_inputs(robot) -> list:
    """Every input's symbol of `robot` (a :class:`mb_sim.model.Robot`), in the order of
    :meth:`Robot.inputs` (efforts, then voltages)."""
    return [i.symbol for i in robot.collect_inputs()]


def solve_by_blocks(coefficients: Matrix, rhs: Matrix) -> Matrix:
    """x of ``coefficients x = rhs``, one independent block at a time: the kinematic equations of a
    tree couple only each joint's own coordinates, and one LU of a humanoid's 51 x 51 took 2 s."""
    n = coefficients.rows
    if coefficients.cols != n:
        return coefficients.LUsolve(rhs)
    owner = list(range(n))  # union-find over the unknowns

    def root(k: int) -> int:
        while owner[k] != k:
            owner[k] = owner[owner[k]]
            k = owner[k]
        return k

    rows_of: dict[int, list[int]] = {}
    for i in range(n):
        columns = [j for j in range(n) if coefficients[i, j] != 0]
        for j in columns[1:]:
            owner[root(j)] = root(columns[0])
        rows_of.setdefault(columns[0] if columns else -1, []).append(i)
    if -1 in rows_of:  # an equation without unknowns: let LU say what is wrong
        return coefficients.LUsolve(rhs)
    blocks: dict[int, tuple[list[int], list[int]]] = {}
    for j in range(n):
        blocks.setdefault(root(j), ([], []))[1].append(j)
    for first, rows in rows_of.items():
        blocks[root(first)][0].extend(rows)
    solved = [S.Zero] * n
    for rows, columns in blocks.values():
        if len(rows) != len(columns):
            return coefficients.LUsolve(rhs)
        rows.sort()
        part = coefficients.extract(rows, columns).LUsolve(rhs.extract(rows, [0]))
        for j, value in zip(columns, part):
            solved[j] = value
    return Matrix(n, 1, solved)


class PlainSymbols:
    """Maps between a System's dynamic symbols and plain ``Symbol`` objects: coordinates,
    speeds, inputs and the electrical states (a motor's current)."""

    def __init__(self, q: list, u: list, inputs: list, kdes: list, states: list = (), auxiliary: list = ()) -> None:
        """`auxiliary`: the auxiliary speeds (noncontributing forces), zero in every equation."""
        self.time = dynamicsymbols._t
        self.q = [Symbol(symbol_name(x), real=True) for x in q]
        self.u = [Symbol(symbol_name(x), real=True) for x in u]
        self.inputs = [Symbol(symbol_name(x), real=True) for x in inputs]
        self.states = [Symbol(symbol_name(x), real=True) for x in states]
        self._to_plain = dict(zip([*q, *u, *inputs, *states], [*self.q, *self.u, *self.inputs, *self.states]))
        self._auxiliary = {**{speed.diff(self.time): S.Zero for speed in auxiliary},
                           **{speed: S.Zero for speed in auxiliary}}
        qdots = [x.diff(dynamicsymbols._t) for x in q]
        solved = solve_by_blocks(*linear_eq_to_matrix(list(kdes), qdots))
        self._qdot_map = dict(zip(qdots, solved))
        self.qdot = Matrix(len(solved), 1, [self.convert(e) for e in solved])  # a column even when empty

    def convert(self, expr: Basic) -> Basic:
        """`expr` with q' replaced by the kinematic equations and functions of t by plain symbols."""
        if expr.has(Derivative):
            expr = msubs(expr, self._qdot_map)
        if self._auxiliary:
            expr = expr.xreplace(self._auxiliary)
        expr = expr.xreplace(self._to_plain)
        leftover = expr.atoms(AppliedUndef, Derivative)
        if leftover:
            raise ValueError(f"unknown functions of time {sorted(map(str, leftover))} in the equations of motion")
        return expr

    def convert_matrix(self, matrix: Matrix) -> Matrix:
        """Element-wise :meth:`convert`."""
        return matrix.applyfunc(self.convert)

    def knows(self, dynamic: Basic) -> bool:
        """Whether `dynamic` is one of the coordinates, speeds, inputs or electrical states."""
        return dynamic in self._to_plain

    def plain(self, dynamic: Basic) -> Symbol:
        """The plain symbol of a coordinate, speed, input or electrical state."""
        return self._to_plain[dynamic]
