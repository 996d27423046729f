"""Outputs of a model as a straight-line program: local assignments in order, then the outputs.

Temporaries (and, where asked, the common subexpressions found by one ``sympy.cse`` over the
temporaries' right-hand sides and all requested outputs) become locals, so e.g. sin/cos of a
coordinate are computed once per call for all outputs.  The C backend does without ``cse``: the
derivation's temporaries already share what the recursion shares, and the C compiler finds the
rest, while ``cse`` takes seconds on a humanoid (measured: no slower per call on arm6 to G1).  Every symbol is renamed to a program symbol with a safe
name (arguments ``q_0``, ``params_2``, ``t``; locals are Dummies), so printers never see the
model's own names, which need not be identifiers.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from sympy import Dummy, Expr, Function, Piecewise, Symbol, cse, numbered_symbols, sympify
from sympy.core.parameters import evaluate

from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report
from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["ARGUMENTS", "StraightLineProgram", "straight_line_program"]

ARGUMENTS = ("q", "u", "z", "inputs", "params", "t")


@dataclass(frozen=True)
class StraightLineProgram:
    """Assignments to locals in evaluation order, then one expression per output element."""

    arguments: dict[str, list[Symbol]]
    assignments: list[tuple[Symbol, Expr]]
    outputs: list[Expr]


def straight_line_program(
    eom: EquationsOfMotion, names: tuple[str, ...], progress: Progress = None, eliminate: bool = True,
) -> StraightLineProgram:
    """The elements of outputs `names` (row-major, in order) as a straight-line program.

    Temporaries no requested output depends on are left out; `eliminate` runs ``sympy.cse``.

    Raises
    ------
    CodegenError
        A symbol is both, e.g., a coordinate and a parameter; or an expression uses a symbol
        that is neither an argument nor an earlier temporary.
    """
    originals = {"q": eom.q, "u": eom.u, "z": eom.z, "inputs": eom.inputs, "params": eom.parameters,
                 "t": [eom.time]}
    arguments = {key: [Symbol(f"{key}_{i}", **s.assumptions0) for i, s in enumerate(originals[key])]
                 for key in ARGUMENTS[:-1]}
    arguments["t"] = [Symbol("t", **eom.time.assumptions0)]
    rename = {s: a for key in ARGUMENTS for s, a in zip(originals[key], arguments[key])}
    if len(rename) != sum(len(v) for v in originals.values()):
        raise CodegenError(f"model {eom.name!r}: a symbol appears twice among q, u, z, inputs, "
                           "parameters and time")
    outputs = [sympify(e) for name in names for e in eom.outputs[name]]
    temporaries = _needed_temporaries(eom, outputs, set(rename))
    if eliminate:
        report(progress, f"{eom.name}: eliminating common subexpressions of {len(temporaries)} "
                         f"temporaries and {len(outputs)} output elements...")
    start = time.perf_counter()
    locals_ = [Dummy(f"tmp{i}", **s.assumptions0) for i, (s, _) in enumerate(temporaries)]
    rename.update(zip((s for s, _ in temporaries), locals_))
    with evaluate(False):  # renaming symbols simplifies nothing: the terms are rebuilt as they are
        expressions = [sympify(e).xreplace(rename) for _, e in temporaries]
        expressions += [e.xreplace(rename) for e in outputs]
    replacements, reduced = (cse(expressions, symbols=numbered_symbols("cse", cls=Dummy), order="none")
                             if eliminate else _hoist_calls(expressions))
    n = len(temporaries)
    assignments = _in_dependency_order(replacements, list(zip(locals_, reduced[:n])), reduced[n:])
    report(progress, f"{eom.name}: {len(assignments)} local assignments "
                     f"({time.perf_counter() - start:.1f} s)")
    return StraightLineProgram(arguments, assignments, reduced[n:])


def _hoist_calls(expressions: list[Expr]) -> tuple[list[tuple[Symbol, Expr]], list[Expr]]:
    """Each distinct function call (sin, cos, ...) as one local, inner calls first, like ``cse``'s
    result: C compilers may not merge calls to functions that can set errno.

    An expression that is a Piecewise as a whole (a guarded quantity, e.g. a contact's, computed
    only where its condition holds) is left whole: nothing in it is computed ahead of its test.
    """
    calls = sorted({call for e in expressions if not isinstance(e, Piecewise) for call in e.atoms(Function)},
                   key=lambda c: (c.count_ops(), str(c)))
    locals_ = numbered_symbols("call", cls=Dummy)
    replacements: list[tuple[Symbol, Expr]] = []
    rename: dict[Expr, Symbol] = {}
    for call in calls:
        symbol = next(locals_)
        replacements.append((symbol, call.xreplace(rename)))
        rename[call] = symbol
    return replacements, [e.xreplace(rename) for e in expressions]


def _needed_temporaries(
    eom: EquationsOfMotion, outputs: list[Expr], arguments: set[Symbol],
) -> list[tuple[Symbol, Expr]]:
    """The temporaries `outputs` depend on, in order, after checking every symbol is defined."""
    defined = set(arguments)
    for symbol, rhs in eom.temporaries:
        if symbol in defined:
            raise CodegenError(f"model {eom.name!r}: temporary {symbol} is defined twice "
                               "(or is also an argument)")
        _check_defined(eom, f"temporary {symbol}", sympify(rhs), defined)
        defined.add(symbol)
    needed = set()
    for expression in outputs:
        _check_defined(eom, "an output", expression, defined)
        needed |= expression.free_symbols
    kept = []
    for symbol, rhs in reversed(eom.temporaries):
        if symbol in needed:
            kept.append((symbol, rhs))
            needed |= sympify(rhs).free_symbols
    return kept[::-1]


def _check_defined(eom: EquationsOfMotion, what: str, expression: Expr, defined: set) -> None:
    """Raise CodegenError if `expression` uses a symbol not in `defined`."""
    unknown = expression.free_symbols - defined
    if unknown:
        names = ", ".join(sorted(map(str, unknown)))
        raise CodegenError(f"model {eom.name!r}: {what} uses {names}, which is not an argument "
                           "or an earlier temporary")


def _in_dependency_order(
    replacements: list[tuple[Symbol, Expr]], temporaries: list[tuple[Symbol, Expr]],
    outputs: list[Expr],
) -> list[tuple[Symbol, Expr]]:
    """Interleave CSE replacements with the temporaries so each local follows what it uses.

    ``cse`` hoists all replacements to the front, but a replacement may use a temporary; so each
    replacement is emitted just before the first temporary or output that needs it.
    """
    definition = dict(replacements)
    rank = {s: i for i, (s, _) in enumerate(replacements)}
    emitted: set[Symbol] = set()
    assignments: list[tuple[Symbol, Expr]] = []

    def emit_dependencies(expression: Expr) -> None:
        pending, found = [expression], set()
        while pending:
            for s in pending.pop().free_symbols:
                if s in rank and s not in emitted and s not in found:
                    found.add(s)
                    pending.append(definition[s])
        assignments.extend((s, definition[s]) for s in sorted(found, key=rank.__getitem__))
        emitted.update(found)

    for symbol, rhs in temporaries:
        emit_dependencies(rhs)
        assignments.append((symbol, rhs))
    for expression in outputs:
        emit_dependencies(expression)
    return assignments
