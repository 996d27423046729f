"""Parameters that stay symbolic, and structural values that are exact.

A value that is exactly zero becomes SymPy's integer 0; an angle that is a multiple of pi/2 (to
1e-12 rad) becomes that exact multiple of pi; an axis along a coordinate axis becomes an exact unit
vector.  Everything else becomes a named parameter symbol whose value is recorded, so generated
code takes it at run time and users can change it (a payload mass, a link length).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sympy import Expr, Function, Integer, Rational, S, Symbol, pi
from sympy.physics.mechanics import dynamicsymbols

from mb_sim.urdf.rotations import quarter_turns

if TYPE_CHECKING:
    from mb_sim.model.base import ComponentBase

__all__ = ["parameter", "exact_angle", "exact_axis", "dynamic_symbol"]


def parameter(component: ComponentBase, name: str, value: float, description: str,
              descriptions: dict, keep_zero: bool = False) -> Expr:
    """Exact 0 for a zero value, otherwise a prefixed symbol recorded with its value.

    `keep_zero` makes a symbol of a zero value too: for values users tune at run time (a spring's
    damping, an on/off switch), which must stay in the equations.
    """
    if value == 0.0 and not keep_zero:
        return S.Zero
    # Symbol(), never symbols(): a URDF name may hold spaces, commas, colons or brackets, which
    # symbols() would parse as several symbols or a range.
    symbol = Symbol(component._add_prefix(name), real=True)
    component.symbols[name] = symbol
    component.parameter_values[symbol] = float(value)
    descriptions[symbol] = description
    return symbol


def dynamic_symbol(name: str) -> Expr:
    """A function of time named `name` exactly, as ``dynamicsymbols(name)`` makes for a plain name
    (which would split a name with spaces, commas or colons into several)."""
    return Function(name)(dynamicsymbols._t)


def exact_angle(component: ComponentBase, name: str, value: float, description: str,
                descriptions: dict) -> Expr:
    """An exact multiple of pi/2 where `value` is one, otherwise a parameter symbol."""
    k = quarter_turns(value)
    if k is not None:
        return Rational(k, 2) * pi
    return parameter(component, name, value, description, descriptions)


def exact_axis(axis: np.ndarray) -> tuple[Expr, Expr, Expr] | None:
    """An exact unit vector where `axis` lies along a coordinate axis, else None."""
    nonzero = np.flatnonzero(axis)
    if len(nonzero) != 1:
        return None
    exact = [Integer(0)] * 3
    exact[nonzero[0]] = Integer(int(np.sign(axis[nonzero[0]])))
    return tuple(exact)
