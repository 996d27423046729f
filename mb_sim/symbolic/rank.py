"""Which rows of a numeric matrix are independent: how redundancy is judged (seed 004), by the
derivation and by the simulator's constraint kinematics; NumPy only."""
from __future__ import annotations

import numpy as np

__all__ = ["RANK_TOLERANCE", "independent_rows"]

RANK_TOLERANCE = 1e-9


def independent_rows(matrix: np.ndarray, rows) -> list[int]:
    """`rows` of `matrix`, taken in order, each kept if it raises the rank (RANK_TOLERANCE)."""
    tolerance = RANK_TOLERANCE * max(1.0, np.abs(matrix).max()) if matrix.size else 0.0
    keep: list[int] = []
    for row in rows:
        if np.linalg.matrix_rank(matrix[keep + [row]], tol=tolerance) == len(keep) + 1:
            keep.append(row)
    return keep
