"""User force laws for spring-dampers: Python callables registered by name, never text from a file.

A URDF ``<spring_damper law="NAME">`` refers to a law registered with :func:`register_force_law`;
the equations then hold an opaque :class:`SpringForceLaw` call where the linear law's force would
be, and the generated code calls back into Python for it at every evaluation.  The arguments are
Exudyn's ``springForceUserFunction``'s (without ``mbs``): ``law(t, name, deltaL, deltaL_t,
stiffness, damping, force) -> scalar force`` (tension positive), ``deltaL = L - L0`` and
``deltaL_t = L' - L0'``.
"""
from __future__ import annotations

from collections.abc import Callable

from sympy import Function

__all__ = ["ForceLaw", "SpringForceLaw", "force_law", "register_force_law", "registered_force_laws"]

#: law(t, name, deltaL, deltaL_t, stiffness, damping, force) -> scalar spring force [N].
ForceLaw = Callable[[float, str, float, float, float, float, float], float]

_LAWS: dict[str, ForceLaw] = {}


def register_force_law(name: str, law: ForceLaw) -> None:
    """Make `law` available to ``<spring_damper law="name">`` (replacing an earlier one)."""
    if not callable(law):
        raise TypeError(f"force law {name!r} must be callable, got {type(law).__name__}")
    _LAWS[name] = law


def registered_force_laws() -> list[str]:
    """Names of the registered force laws."""
    return sorted(_LAWS)


def force_law(name: str) -> ForceLaw:
    """The law registered as `name`; KeyError listing the registered ones if there is none."""
    try:
        return _LAWS[name]
    except KeyError:
        known = ", ".join(registered_force_laws()) or "none"
        raise KeyError(f"no force law registered as {name!r} (registered: {known}); register it with "
                       "mb_sim.model.register_force_law before creating the simulator") from None


class SpringForceLaw(Function):
    """``SpringForceLaw(index, t, deltaL, deltaL_t, stiffness, damping, force, active)``: the scalar
    force of user-law spring number `index`, evaluated numerically by a registered law (zero when
    ``active`` is 0, without calling the law, as Exudyn does)."""

    nargs = 8
    is_real = True
