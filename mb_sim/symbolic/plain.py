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
        coefficients, rhs = linear_eq_to_matrix(list(kdes), qdots)
        solved = coefficients.LUsolve(rhs)
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
