"""Guarded quantities in the generated C: runs under one ``if``, and sums accumulated where they arise.

A guarded quantity is ``Piecewise((e, condition), (0, True))`` (a contact's: computed only where a
shape is near the ground, or a point touches).  Consecutive ones sharing a condition print as one
``if`` block; the values read after it are declared outside and zeroed in its ``else``.

A guarded *sum* of such quantities, ``s = t1 + ... + tn`` (or ``- ti``) (a link's contact force: the sum of its
points' forces), is accumulated instead: ``s`` starts at zero and each ``ti`` is added inside its
own block, where it is computed (or subtracted).  A point that does not touch then costs its test and nothing more
(no zeros stored for it, none loaded to be added), and the sum adds the same non-zero values in the
order of the blocks.  Only a term read by nothing but its sum (outside its own block) is taken:
other readers still see it.  Where the sum's own condition fails it is set to zero, as before.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy
from sympy import Symbol

__all__ = ["Accumulations", "accumulations", "guard", "guarded_lines", "guarded_runs"]


def guard(expr) -> object:
    """The condition of a guarded quantity ``Piecewise((e, condition), (0, True))``, else None."""
    if isinstance(expr, sympy.Piecewise) and len(expr.args) == 2 and expr.args[1].cond == sympy.true \
            and expr.args[1].expr == 0:
        return expr.args[0].cond
    return None


def guarded_runs(assignments: list) -> list[list]:
    """The assignments in runs: consecutive guarded quantities sharing one condition together
    (printed as one ``if``: a contact shape far from the ground costs one test), others alone."""
    runs: list[list] = []
    for symbol, expr in assignments:
        condition = guard(expr)
        if condition is not None and runs and guard(runs[-1][-1][1]) == condition:
            runs[-1].append((symbol, expr))
        else:
            runs.append([(symbol, expr)])
    return runs


@dataclass(frozen=True)
class Accumulations:
    """Guarded sums accumulated in their terms' blocks: sum -> terms, term -> its sum, and per run
    index the sums to declare (zeroed) before it."""

    terms: dict[Symbol, dict[Symbol, int]]
    sum_of: dict[Symbol, tuple[Symbol, int]]
    declared_before: dict[int, list[Symbol]]


def accumulations(runs: list[list], outputs: list) -> Accumulations:
    """The guarded sums of `runs` whose every term is computed in an earlier ``if`` block and read
    by nothing else outside it (nor by an output)."""
    run_of = {s: i for i, run in enumerate(runs) for s, _ in run}
    readers: dict[Symbol, set] = {}
    for i, run in enumerate(runs):
        for s, e in run:
            for used in e.free_symbols:
                if used in run_of and run_of[used] != i:
                    readers.setdefault(used, set()).add(s)
    in_outputs = set().union(*(e.free_symbols for e in outputs)) if outputs else set()
    terms, sum_of, declared_before = {}, {}, {}
    for i, run in enumerate(runs):
        for s, e in run:
            summands = _summands(e)
            if summands and all(t not in terms and _accumulable(t, s, i, runs, run_of, readers, in_outputs)
                                for t in summands):
                terms[s] = summands
                sum_of.update((t, (s, sign)) for t, sign in summands.items())
                declared_before.setdefault(min(run_of[t] for t in summands), []).append(s)
    return Accumulations(terms, sum_of, declared_before)


def _summands(expr) -> dict[Symbol, int]:
    """The terms of a guarded sum of two or more symbols, each with its sign (+1, or -1 for a
    term subtracted), else {}."""
    if guard(expr) is None or not isinstance(expr.args[0].expr, sympy.Add):
        return {}
    signs = {}
    for a in expr.args[0].expr.args:
        if isinstance(a, Symbol):
            signs[a] = 1
        elif a.is_Mul and len(a.args) == 2 and a.args[0] == -1 and isinstance(a.args[1], Symbol):
            signs[a.args[1]] = -1
        else:
            return {}
    return signs


def _accumulable(term, total, index: int, runs: list[list], run_of: dict, readers: dict, in_outputs: set) -> bool:
    """Whether `term` can be added into `total` (assigned in run `index`) inside its own block."""
    where = run_of.get(term)
    return (where is not None and where < index and len(runs[where]) > 1 and guard(runs[where][0][1]) is not None
            and readers.get(term) == {total} and term not in in_outputs)


def guarded_lines(run: list, names: dict, printer, after: set, sums: Accumulations) -> list[str]:
    """C lines for one run of :func:`guarded_runs`; `after` holds the symbols read after the run
    (sums' terms excluded): only those are declared outside its ``if`` (and zeroed where the guard
    fails), the others are the block's own.  A sum's terms are added to it where computed."""
    condition = guard(run[0][1])
    if condition is None:
        return [f"    const double {names[s]} = {printer.doprint(e)};" for s, e in run]
    if len(run) == 1 and run[0][0] not in sums.terms:
        return [f"    const double {names[run[0][0]]} = {printer.doprint(run[0][1])};"]
    test = printer.doprint(condition)
    kept = [s for s, _ in run if s in after]
    inside = []
    for s, e in run:
        if s in sums.terms:
            continue
        declare = "" if s in after else "const double "
        inside.append(f"        {declare}{names[s]} = {printer.doprint(e.args[0].expr)};")
        if s in sums.sum_of:
            total, sign = sums.sum_of[s]
            inside.append(f"        {names[total]} {'+' if sign > 0 else '-'}= {names[s]};")
    lines = []
    fresh = [s for s in kept if s not in sums.terms]
    if fresh:
        lines.append(f"    double {', '.join(names[s] for s in fresh)};")
    zeros = " ".join(f"{names[s]} = 0;" for s in kept)
    if inside:
        lines += [f"    if ({test}) {{", *inside, f"    }} else {{ {zeros} }}" if kept else "    }"]
    elif kept:
        lines.append(f"    if (!({test})) {{ {zeros} }}")
    return lines
