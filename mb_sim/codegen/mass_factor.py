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

__all__ = ["MAX_UNROLLED_OPERATIONS", "factor_operations", "is_unrolled", "unrolled_mass_functions"]

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


def _factor(parents: list[int]) -> list[str]:
    """mb_mass_factor: from the last speed up, each row scaled by its pivot's root, then its
    chain entries' products subtracted from the rows above (no fill-in)."""
    n = len(parents)
    lines = ["MB_INTERNAL int mb_mass_factor(double *h)", "{"]
    if any(parent >= 0 for parent in parents):
        lines.append("    double d;  /* a pivot's inverse */")
    for k in reversed(range(n)):
        chain, kk = _chain(parents, k), k * n + k
        lines += [f"    if (!(h[{kk}] > 0.0))", "        return 1;", f"    h[{kk}] = sqrt(h[{kk}]);"]
        if chain:
            lines.append(f"    d = 1.0 / h[{kk}];")
            lines += [f"    h[{k * n + a}] *= d;" for a in chain]
            lines += [f"    h[{a * n + b}] -= h[{k * n + a}] * h[{k * n + b}];"
                      for i, a in enumerate(chain) for b in chain[i:]]
    return lines + ["    return 0;", "}"]


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
