"""Named intermediate quantities: keep expressions near-linear in the number of bodies."""
from __future__ import annotations

from sympy import Expr, Matrix, Symbol

__all__ = ["Temporaries"]


def _is_trivial(expr: Expr) -> bool:
    """Numbers, symbols and their negatives are used as they are (zeros then propagate)."""
    if expr.is_Number or expr.is_Symbol:
        return True
    return expr.is_Mul and len(expr.args) == 2 and expr.args[0] == -1 and expr.args[1].is_Symbol


class Temporaries:
    """An ordered list of assignments ``symbol = expression``.

    Each new temporary's expression may use only input symbols and earlier temporaries, so the
    list can be evaluated top to bottom (and printed as straight-line code).
    """

    def __init__(self, prefix: str = "_tmp") -> None:
        self.prefix = prefix
        self.assignments: list[tuple[Symbol, Expr]] = []
        self.meanings: dict[Symbol, str] = {}
        self._by_expression: dict[Expr, Symbol] = {}

    def scalar(self, expr: Expr, meaning: str = "") -> Expr:
        """A temporary standing for `expr` (`expr` itself if trivial; the same one for a repeat)."""
        if _is_trivial(expr):
            return expr
        if expr in self._by_expression:
            return self._by_expression[expr]
        symbol = Symbol(f"{self.prefix}{len(self.assignments)}", real=True)
        self.assignments.append((symbol, expr))
        self._by_expression[expr] = symbol
        if meaning:
            self.meanings[symbol] = meaning
        return symbol

    def matrix(self, matrix: Matrix, meaning: str = "") -> Matrix:
        """Element-wise :meth:`scalar`."""
        return matrix.applyfunc(lambda e: self.scalar(e, meaning))

    def __len__(self) -> int:
        return len(self.assignments)
