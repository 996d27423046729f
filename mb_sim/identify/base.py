"""Base parameters: the combinations of the standard parameters the efforts can reveal.

Found numerically as SymPyBotics and Gautier (1990) do: the regressor at random states, stacked,
is factorized by QR with column pivoting; its rank r picks r independent columns (the base
columns), and the others are combinations of them, ``W_d = W_b K``, so that

    W pi = W_b (pi_b + K pi_d) = W_b beta.

Each base parameter beta_i is its base column's parameter plus the dependent ones K mixes into
it; a column that is zero everywhere (a parameter no motion reveals) mixes into none.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import qr, solve_triangular

__all__ = ["BaseParameters", "base_parameters"]

RANK_TOLERANCE = 1e-8
"""A column counts as independent where its pivot exceeds this fraction of the largest."""
NOISE_COLUMN = 1e-10
"""A column whose norm is below this fraction of the largest column's is rounding noise (a
parameter the motion does not reveal: its exact value is zero), not a base parameter."""


@dataclass
class BaseParameters:
    """``beta = pi[independent] + mixing @ pi[dependent]`` with the columns' names."""

    independent: np.ndarray  # indices of the base columns
    dependent: np.ndarray
    mixing: np.ndarray  # (r, p - r)
    names: list[str]  # every column's name

    def of(self, pi: np.ndarray) -> np.ndarray:
        """The base parameters of standard parameters `pi` (any trailing axes ride along)."""
        return pi[self.independent] + self.mixing @ pi[self.dependent]

    def describe(self, i: int, threshold: float = 1e-10) -> str:
        """Base parameter `i` as text, e.g. ``upper_arm_link.hx + 0.425 forearm_link.m``."""
        terms = [self.names[self.independent[i]]]
        for j, factor in zip(self.dependent, self.mixing[i]):
            if abs(factor) > threshold:
                terms.append(f"{'-' if factor < 0 else '+'} {abs(factor):.6g} {self.names[j]}")
        return " ".join(terms)

    def unidentifiable(self) -> list[str]:
        """Standard parameters that enter no base parameter (no motion of the robot reveals them)."""
        return [self.names[j] for k, j in enumerate(self.dependent) if not np.any(np.abs(self.mixing[:, k]) > 1e-10)]


def base_parameters(stacked: np.ndarray, names: list[str]) -> BaseParameters:
    """Base parameters from a regressor stacked over many states (rows) with `names` per column."""
    scale = np.linalg.norm(stacked, axis=0)
    stacked = np.where(scale > NOISE_COLUMN * scale.max(initial=0.0), stacked, 0.0)  # rounding noise is zero
    scale[scale <= NOISE_COLUMN * scale.max(initial=0.0)] = 1.0
    _, R, order = qr(stacked / scale, mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > RANK_TOLERANCE * diagonal[0])) if diagonal.size and diagonal[0] > 0 else 0
    independent, dependent = order[:rank], order[rank:]
    mixing = solve_triangular(R[:rank, :rank], R[:rank, rank:]) if rank else np.zeros((0, len(dependent)))
    mixing = mixing * scale[dependent][None, :] / scale[independent][:, None]  # back to unscaled columns
    mixing[np.abs(mixing) < 1e-12] = 0.0
    independent, dependent, mixing = _sorted(independent, dependent, mixing)
    return BaseParameters(independent, dependent, mixing, list(names))


def _sorted(independent: np.ndarray, dependent: np.ndarray, mixing: np.ndarray):
    """Base columns and dependent columns in column order (a stable report)."""
    rows, cols = np.argsort(independent), np.argsort(dependent)
    return independent[rows], dependent[cols], mixing[np.ix_(rows, cols)]
