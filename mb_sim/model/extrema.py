"""Max and Min that stay as written when an expression is rebuilt.

SymPy evaluates a ``Max`` whenever it is constructed, also when ``xreplace`` rebuilds an expression
(functions of time made plain symbols, symbols renamed for the C printer): comparing its arguments
asks the assumptions system about long expressions, 30 ms per joint stop and rebuild, 3 s of a
24-link chain's first load.  These keep their arguments (in SymPy's canonical order, as an
unevaluated Max does), so the generated code is the one the evaluated form gave."""
from __future__ import annotations

from sympy import Max, Min

__all__ = ["KeptMax", "KeptMin"]


class KeptMax(Max):
    """``Max(*args)``, never evaluated (printed and lambdified as Max)."""

    def __new__(cls, *args, **options):
        return super().__new__(cls, *args, **{**options, "evaluate": False})


class KeptMin(Min):
    """``Min(*args)``, never evaluated (printed and lambdified as Min)."""

    def __new__(cls, *args, **options):
        return super().__new__(cls, *args, **{**options, "evaluate": False})
