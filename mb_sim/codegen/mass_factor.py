"""The tree-sparse factorization ``M = L^T L`` of the mass matrix and its solve, printed as
straight-line C for one model's sparsity.

The runtime's loops (``mb_mass_factor``, ``mb_mass_solve`` in ``c/mb_linalg.c``) walk the chain
tables at every call; for a given tree every index is known when the model is generated, so the
same operations, in the same order (bit for bit the same results), can be printed with constant
indices: no table reads, no loop control, and the compiler schedules the whole factorization.
A quadruped's 18 speeds: about a fifth of the instructions.  Printed only where the operation
count stays small (:data:`MAX_UNROLLED_OPERATIONS`: a dense 100-speed chain would be 170,000 lines).
"""
from __future__ import annotations

__all__ = ["FACTOR_PART_LINES", "MAX_UNROLLED_OPERATIONS", "factor_operations", "is_unrolled", "unrolled_mass_functions"]

#: Most multiply-subtracts of the factorization printed unrolled; beyond it the runtime's loops run.
MAX_UNROLLED_OPERATIONS = 6000


def _chain(parents: list[int], k: int) -> list[int]:
    """Speed k's chain of parents: its parent, the parent's parent, ... (as mb_chain lists it)."""
    chain, l = [], parents[k]
    while l >= 0:
        chain.append(l)
        l = parents[l]
    return chain


def factor_operations(parents: list[int]) -> int:
    """The factorization's multiply-subtracts for the tree `parents` (each speed's chain squared / 2)."""
    return sum(len(c) * (len(c) + 1) // 2 for c in (_chain(parents, k) for k in range(len(parents))))


def is_unrolled(parents: list[int]) -> bool:
    """Whether the model of tree `parents` gets the unrolled functions (the header then defines
    ``MB_UNROLLED_MASS``, which leaves the runtime's loops out)."""
    return factor_operations(parents) <= MAX_UNROLLED_OPERATIONS


def unrolled_mass_functions(parents: list[int]) -> str:
    """C defining ``mb_mass_factor`` and ``mb_mass_solve`` for the tree `parents` (see
    :func:`~mb_sim.codegen.c_source.speed_parents`), or "" when the factorization has more than
    MAX_UNROLLED_OPERATIONS operations (the runtime's loops then serve)."""
    if not is_unrolled(parents):
        return ""
    return "\n".join(["/* M = L^T L along the chains and its solve, unrolled for this model's tree: the",
                      " * operations of the loops in mb_linalg.c, in their order. */",
                      *_factor(parents), "", *_solve(parents), ""])


#: Statements of the unrolled factorization per part: gcc's time on one long function grows faster
#: than its length (chain32's 6,000 lines took 26 s alone), so a long factorization is printed as
#: parts called in order (``MB_PART``: never inlined back), each a run of speeds, working on h in
#: memory as the whole did: the same operations in the same order.
FACTOR_PART_LINES = 400


def _factor(parents: list[int]) -> list[str]:
    """mb_mass_factor: from the last speed up, each row scaled by its pivot's root, then its
    chain entries' products subtracted from the rows above (no fill-in); a long one in parts."""
    n = len(parents)
    runs: list[list[str]] = [[]]
    for k in reversed(range(n)):
        chain, kk = _chain(parents, k), k * n + k
        lines = [f"    if (!(h[{kk}] > 0.0))", "        return 1;", f"    h[{kk}] = sqrt(h[{kk}]);"]
        if chain:
            lines.append(f"    d = 1.0 / h[{kk}];")
            lines += [f"    h[{k * n + a}] *= d;" for a in chain]
            lines += [f"    h[{a * n + b}] -= h[{k * n + a}] * h[{k * n + b}];"
                      for i, a in enumerate(chain) for b in chain[i:]]
        if runs[-1] and len(runs[-1]) + len(lines) > FACTOR_PART_LINES:
            runs.append([])
        runs[-1] += lines
    declare = ["    double d;  /* a pivot's inverse */"] if any(parent >= 0 for parent in parents) else []
    if len(runs) == 1:
        return ["MB_INTERNAL int mb_mass_factor(double *h)", "{", *declare, *runs[0], "    return 0;", "}"]
    lines = []
    for i, run in enumerate(runs):
        lines += [f"MB_PART int mb_mass_factor_part{i}(double *restrict h)", "{",
                  *(declare if any(line.startswith("    d = ") for line in run) else []), *run, "    return 0;", "}", ""]
    calls = [f"    if (mb_mass_factor_part{i}(h))\n        return 1;" for i in range(len(runs))]
    return lines + ["MB_INTERNAL int mb_mass_factor(double *h)", "{", *calls, "    return 0;", "}"]


def _solve(parents: list[int]) -> list[str]:
    """mb_mass_solve: L^T y = b from the last speed up, then L x = y from the first down."""
    n = len(parents)
    lines = ["MB_INTERNAL void mb_mass_solve(const double *l, double *b)", "{"]
    for i in reversed(range(n)):
        lines.append(f"    b[{i}] /= l[{i * n + i}];")
        lines += [f"    b[{a}] -= l[{i * n + a}] * b[{i}];" for a in _chain(parents, i)]
    for i in range(n):
        chain = _chain(parents, i)
        terms = "".join(f" - l[{i * n + a}] * b[{a}]" for a in chain)
        lines.append(f"    b[{i}] = (b[{i}]{terms}) / l[{i * n + i}];" if chain else f"    b[{i}] /= l[{i * n + i}];")
    return lines + ["}"]
