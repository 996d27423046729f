"""The C printer of the generated code: SymPy's C99 printer with the few node types the equations
are made of (sums, products, powers, symbols, numbers, sin and cos) printed directly.

SymPy's printer asks every node for its precedence and sorts or re-wraps terms; on a humanoid that
was most of generating the C (G1: about 3 s).  Here those nodes are printed in the order the
expressions hold them, every sum inside a product or power parenthesized, numbers as double
literals (no integer division can arise) and every other node (Piecewise, Max, Min, relations, a
user force law, rarer functions) by SymPy's printer, whose children come back here.
"""
from __future__ import annotations

import math

from sympy import Symbol, cos, sin
from sympy.printing.c import C99CodePrinter

__all__ = ["CPrinter"]


class CPrinter(C99CodePrinter):
    """C99 printer that prints symbols through a fixed table and constants as literals."""

    def __init__(self, names: dict[Symbol, str]):
        # terms in the order the expressions hold them: sorting them took 40 % of the printing
        super().__init__({"strict": True, "inline": True, "math_macros": {}, "order": "none"})
        self._names = names

    def doprint(self, expr, assign_to=None) -> str:
        """`expr` as one C expression; SymPy's whole doprint (assignments, constants such as pi
        declared) only where asked for or needed."""
        if assign_to is not None:
            return super().doprint(expr, assign_to)
        self._not_supported, self._number_symbols = set(), set()
        text = self._print(expr)
        return super().doprint(expr) if self._number_symbols or self._not_supported else text

    def _print(self, expr, **kwargs) -> str:
        """The common nodes directly, the others through SymPy's dispatch."""
        if expr.is_Symbol:
            return self._names[expr]
        if expr.is_Add:
            return self._sum(expr.args)
        if expr.is_Mul:
            return self._product(expr.args)
        if expr.is_Pow:
            return self._power(expr)
        if expr.is_Number:
            return self._number(expr)
        if isinstance(expr, (sin, cos)):
            return f"{type(expr).__name__}({self._print(expr.args[0])})"
        return super()._print(expr, **kwargs)

    def _sum(self, terms) -> str:
        first, *rest = (self._print(term) for term in terms)
        return first + "".join(f" - {text[1:]}" if text.startswith("-") else f" + {text}" for text in rest)

    def _product(self, factors) -> str:
        sign, texts = "", []
        for factor in factors:
            if factor.is_Number and factor.is_negative:
                sign = "" if sign else "-"
                if factor == -1:
                    continue
                factor = -factor
            texts.append(self._factor(factor))
        return sign + ("*".join(texts) or "1.0")

    def _factor(self, expr) -> str:
        """`expr` as a factor of a product or the base of a power: parenthesized unless atomic."""
        text = self._print(expr)
        if expr.is_Symbol or (expr.is_Number and not text.startswith("-")) or isinstance(expr, (sin, cos)):
            return text
        return f"({text})"

    def _power(self, expr) -> str:
        base, exponent = expr.args
        if exponent.is_Integer and 2 <= abs(int(exponent)) <= 4:
            product = "(" + "*".join([self._factor(base)] * abs(int(exponent))) + ")"
            return product if exponent > 0 else f"(1.0/{product})"
        if exponent == -1:
            return f"(1.0/{self._factor(base)})"
        if exponent.is_Rational and exponent.q == 2 and abs(exponent.p) == 1:
            root = f"sqrt({self._print(base)})"
            return root if exponent > 0 else f"(1.0/{root})"
        if exponent.is_Symbol:  # a contact law's exponent: mb_pow spares the call for 1 and 2
            return f"mb_pow({self._print(base)}, {self._print(exponent)})"
        return f"pow({self._print(base)}, {self._print(exponent)})"

    def _number(self, expr) -> str:
        if expr.is_Integer:
            return f"{int(expr)}.0"
        if expr.is_Rational:
            return f"({expr.p}.0/{expr.q}.0)"
        try:
            value = float(expr)
        except TypeError:  # complex infinity: SymPy's spelling
            return super()._print(expr)
        return repr(value) if math.isfinite(value) else super()._print(expr)

    def _print_Max(self, expr) -> str:
        """fmax's result, inline (mb_fmax: fmax is a library call without -ffinite-math-only)."""
        return self._nested("mb_fmax", expr.args)

    def _print_Min(self, expr) -> str:
        return self._nested("mb_fmin", expr.args)

    def _nested(self, function: str, args) -> str:
        first, *rest = args
        return self._print(first) if not rest else f"{function}({self._print(first)}, {self._nested(function, rest)})"

    def _print_SpringForceLaw(self, expr) -> str:
        """A user force law: a call back into the host (see mb_force_law in c/mb_dynamics.c)."""
        index, *arguments = expr.args
        return f"mb_force_law({int(index)}, {', '.join(self._print(a) for a in arguments)})"
