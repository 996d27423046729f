"""Outputs of a model as a straight-line program: local assignments in order, then the outputs.

Temporaries (and, where asked, the common subexpressions found by one ``sympy.cse`` over the
temporaries' right-hand sides and all requested outputs) become locals, so e.g. sin/cos of a
coordinate are computed once per call for all outputs.  The C backend does without ``cse``: the
derivation's temporaries already share what the recursion shares, and the C compiler finds the
rest, while ``cse`` takes seconds on a humanoid (measured: no slower per call on arm6 to G1).
Every symbol is renamed to a program symbol with a safe name (arguments ``q_0``, ``params_2``,
``t``; locals are Dummies), so printers never see the model's own names, which need not be
identifiers; the C printer, which names every symbol through a table, takes them unrenamed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from sympy import Dummy, Expr, Function, Piecewise, Symbol, cse, numbered_symbols, sympify
from sympy.core.parameters import evaluate

from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report
from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["ARGUMENTS", "ProgramSource", "StraightLineProgram", "straight_line_program"]

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
    Several programs of one model share their work through one :class:`ProgramSource`.

    Raises
    ------
    CodegenError
        A symbol is both, e.g., a coordinate and a parameter; or an expression uses a symbol
        that is neither an argument nor an earlier temporary.
    """
    return ProgramSource(eom).program(names, progress, eliminate)


class ProgramSource:
    """What every program of one model shares, done once: the temporaries checked, renamed to
    locals and their function calls hoisted (a humanoid's C functions share most of their
    4,000 temporaries; doing this per function took seconds).  One source serves programs of one
    kind: renamed (NumPy) or not (C), as its memos of hoisted calls are shared."""

    def __init__(self, eom: EquationsOfMotion) -> None:
        originals = {"q": eom.q, "u": eom.u, "z": eom.z, "inputs": eom.inputs, "params": eom.parameters,
                     "t": [eom.time]}
        self.eom, self.originals = eom, originals
        self.arguments = {key: [Symbol(f"{key}_{i}", **s.assumptions0) for i, s in enumerate(originals[key])]
                          for key in ARGUMENTS[:-1]}
        self.arguments["t"] = [Symbol("t", **eom.time.assumptions0)]
        self.rename = {s: a for key in ARGUMENTS for s, a in zip(originals[key], self.arguments[key])}
        if len(self.rename) != sum(len(v) for v in originals.values()):
            raise CodegenError(f"model {eom.name!r}: a symbol appears twice among q, u, z, inputs, "
                               "parameters and time")
        self.defined = set(self.rename)
        self.uses: dict[Symbol, set] = {}  # per temporary, the symbols its right-hand side reads
        for i, (symbol, rhs) in enumerate(eom.temporaries):
            if symbol in self.defined:
                raise CodegenError(f"model {eom.name!r}: temporary {symbol} is defined twice "
                                   "(or is also an argument)")
            self.uses[symbol] = _check_defined(eom, f"temporary {symbol}", sympify(rhs), self.defined)
            self.defined.add(symbol)
            self.rename[symbol] = Dummy(f"tmp{i}", **symbol.assumptions0)
        self._renamed: dict[Symbol, Expr] = {}
        self._calls: dict[Expr, set] = {}  # per renamed expression, the calls hoisting may take out
        self._call_locals: dict[Expr, tuple[Symbol, Expr]] = {}
        self._hoisted: dict[tuple, Expr] = {}

    def program(self, names: tuple[str, ...], progress: Progress = None, eliminate: bool = True,
                rename: bool = True) -> StraightLineProgram:
        """The straight-line program of outputs `names` (see :func:`straight_line_program`).

        ``rename=False`` keeps the model's own symbols (arguments and temporaries), for a printer
        that names every symbol through a table (the C printer): renaming a humanoid's
        temporaries rebuilds every term, most of a second."""
        eom = self.eom
        outputs = [sympify(e) for name in names for e in eom.outputs[name]]
        temporaries = self._needed(outputs)
        if eliminate:
            report(progress, f"{eom.name}: eliminating common subexpressions of {len(temporaries)} "
                             f"temporaries and {len(outputs)} output elements...")
        start = time.perf_counter()
        if rename:
            locals_ = [self.rename[s] for s, _ in temporaries]
            expressions = [self._rename(s, e) for s, e in temporaries]
            with evaluate(False):  # renaming symbols simplifies nothing: the terms are rebuilt as they are
                expressions += [e.xreplace(self.rename) for e in outputs]
        else:
            locals_ = [s for s, _ in temporaries]
            expressions = [sympify(e) for _, e in temporaries] + outputs
        replacements, reduced = (cse(expressions, symbols=numbered_symbols("cse", cls=Dummy), order="none")
                                 if eliminate else self._hoist_calls(expressions))
        n = len(temporaries)
        assignments = _in_dependency_order(replacements, list(zip(locals_, reduced[:n])), reduced[n:])
        report(progress, f"{eom.name}: {len(assignments)} local assignments "
                         f"({time.perf_counter() - start:.1f} s)")
        return StraightLineProgram(self.arguments if rename else self.originals, assignments, reduced[n:])

    def _needed(self, outputs: list[Expr]) -> list[tuple[Symbol, Expr]]:
        """The temporaries `outputs` depend on, in order, after checking every symbol is defined."""
        needed = set()
        for expression in outputs:
            needed |= _check_defined(self.eom, "an output", expression, self.defined)
        kept = []
        for symbol, rhs in reversed(self.eom.temporaries):
            if symbol in needed:
                kept.append((symbol, rhs))
                needed |= self.uses[symbol]
        return kept[::-1]

    def _rename(self, symbol: Symbol, rhs: Expr) -> Expr:
        """A temporary's right-hand side in program symbols (once per model)."""
        if symbol not in self._renamed:
            with evaluate(False):
                self._renamed[symbol] = sympify(rhs).xreplace(self.rename)
        return self._renamed[symbol]

    def _calls_in(self, expression: Expr) -> set:
        """The function calls in `expression`; none for a Piecewise as a whole (see _hoist_calls)."""
        if expression not in self._calls:
            self._calls[expression] = set() if isinstance(expression, Piecewise) else expression.atoms(Function)
        return self._calls[expression]

    def _hoist_calls(self, expressions: list[Expr]) -> tuple[list[tuple[Symbol, Expr]], list[Expr]]:
        """Each distinct function call (sin, cos, ...) as one local, inner calls first, like ``cse``'s
        result: C compilers may not merge calls to functions that can set errno.

        An expression that is a Piecewise as a whole (a guarded quantity, e.g. a contact's, computed
        only where its condition holds) is left whole: nothing in it is computed ahead of its test.
        """
        calls = sorted(set().union(*(self._calls_in(e) for e in expressions)),
                       key=lambda c: (c.count_ops(), str(c)))
        rename: dict[Expr, Symbol] = {}
        replacements: list[tuple[Symbol, Expr]] = []
        for call in calls:
            if call not in self._call_locals:
                self._call_locals[call] = (Dummy(f"call{len(self._call_locals)}"), call.xreplace(rename))
            symbol, rhs = self._call_locals[call]
            replacements.append((symbol, rhs))
            rename[call] = symbol
        return replacements, [self._without_calls(e, rename) for e in expressions]

    def _without_calls(self, expression: Expr, rename: dict[Expr, Symbol]) -> Expr:
        """`expression` with the calls of `rename` replaced by their locals (a non-Piecewise
        expression always the same way, so once per model)."""
        key = (expression, frozenset(c for c in expression.atoms(Function) if c in rename)
               if isinstance(expression, Piecewise) else None)
        if key not in self._hoisted:
            self._hoisted[key] = expression.xreplace(rename)
        return self._hoisted[key]


def _check_defined(eom: EquationsOfMotion, what: str, expression: Expr, defined: set) -> set:
    """The symbols `expression` uses; CodegenError if one is not in `defined`."""
    used = expression.free_symbols
    unknown = used - defined
    if unknown:
        names = ", ".join(sorted(map(str, unknown)))
        raise CodegenError(f"model {eom.name!r}: {what} uses {names}, which is not an argument "
                           "or an earlier temporary")
    return used


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
