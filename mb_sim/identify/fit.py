"""Weighted least squares on the base parameters, then a physically consistent set of standard ones.

The fit is Gautier's: ordinary least squares first, then each joint's rows weighted by the
inverse of its residual standard deviation and solved again.  The covariance of the base
parameters is ``(W^T W)^-1`` of the weighted regressor (unit residual variance after weighting),
so each gets a standard deviation; the condition number is that of the weighted regressor with
its columns scaled to unit norm (how well the motion separates the parameters).

Consistency: standard parameters whose base combinations match the fit as closely as the data
allow and which describe real bodies: each body's pseudo-inertia positive definite (mass
positive, the inertia about the mass centre realizable: the LMI of Wensing, Kim and Slotine
2017), damping and friction not negative.  The LMI holds by construction in the log-Cholesky
parameterization of the pseudo-inertia (Rucker and Wensing 2022), so SciPy's least_squares
solves it as an unconstrained problem, without a semidefinite solver: residuals are the fit's
(whitened by the base parameters' information matrix) and, weighted by `prior_weight`, the
distance to the URDF's values, which alone settles what the data cannot reveal.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cholesky
from scipy.optimize import least_squares

from mb_sim.identify.base import BaseParameters
from mb_sim.identify.parameters import body_vector, pseudo_inertia

__all__ = ["BaseFit", "weighted_fit", "consistent_parameters"]

FRICTION_START = 1e-4
"""Damping and friction start here where the URDF has none (a square root's slope is zero at 0)."""


@dataclass
class BaseFit:
    """The fitted base parameters with their standard deviations and the regressor's condition."""

    values: np.ndarray
    deviations: np.ndarray
    condition_number: float
    joint_deviations: np.ndarray  # residual standard deviation per joint [N m or N]
    information: np.ndarray  # W^T W of the weighted regressor (inverse covariance)


def weighted_fit(W: np.ndarray, tau: np.ndarray) -> BaseFit:
    """Fit ``tau (N, n) = W (N, n, r) beta`` (rows per sample and joint)."""
    N, n, r = W.shape
    flat, target = W.reshape(N * n, r), tau.reshape(N * n)
    beta = np.linalg.lstsq(flat, target, rcond=None)[0]
    residual = (target - flat @ beta).reshape(N, n)
    dof = max(N * n - r, 1)
    sigma = np.sqrt((residual ** 2).sum(axis=0) / max(dof / n, 1.0))
    floor = 1e-12 * np.maximum(np.sqrt((tau ** 2).mean(axis=0)), 1e-300)
    sigma = np.maximum(sigma, floor)
    weights = np.tile(1.0 / sigma, N)
    weighted = flat * weights[:, None]
    beta = np.linalg.lstsq(weighted, target * weights, rcond=None)[0]
    residual = (target - flat @ beta).reshape(N, n)
    information = weighted.T @ weighted
    scale = np.linalg.norm(weighted, axis=0)
    scale[scale == 0] = 1.0
    covariance = np.linalg.pinv(information / np.outer(scale, scale)) / np.outer(scale, scale)  # scaled: no cutoff
    condition = float(np.linalg.cond(weighted / scale))
    joint = np.sqrt((residual ** 2).mean(axis=0))
    return BaseFit(beta, np.sqrt(np.abs(np.diag(covariance))), condition, joint, information)


def _factor(theta: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """U of the log-Cholesky numbers (alpha, d1..d3, s12, s23, s13, t1..t3) and dU/dtheta."""
    alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3 = theta
    clipped = np.abs([alpha, d1, d2, d3]) > LOG_BOUND
    alpha, d1, d2, d3 = np.clip([alpha, d1, d2, d3], -LOG_BOUND, LOG_BOUND)
    e = np.exp(alpha)
    U = e * np.array([[np.exp(d1), s12, s13, t1], [0, np.exp(d2), s23, t2], [0, 0, np.exp(d3), t3], [0, 0, 0, 1.0]])
    places = [None, (0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3)]
    derivatives = [U * (not clipped[0])]
    for k, (i, j) in enumerate(places[1:], start=1):
        dU = np.zeros((4, 4))
        dU[i, j] = (U[i, j] * (not clipped[k])) if k <= 3 else e  # exp(d) entries differentiate to themselves
        derivatives.append(dU)
    return U, derivatives


def _body_of_pseudo_inertia(P: np.ndarray) -> np.ndarray:
    """Ten standard parameters of a pseudo-inertia [[Sigma, h], [h^T, m]] (J = tr(Sigma) 1 - Sigma)."""
    sigma = P[:3, :3]
    return body_vector(P[3, 3], P[:3, 3], np.trace(sigma) * np.eye(3) - sigma)


def _body_from_cholesky(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ten standard parameters of a body from its log-Cholesky numbers, and their 10 x 10 Jacobian."""
    U, derivatives = _factor(theta)
    jacobian = np.column_stack([_body_of_pseudo_inertia(dU @ U.T + U @ dU.T) for dU in derivatives])
    return _body_of_pseudo_inertia(U @ U.T), jacobian


def _cholesky_from_body(pi: np.ndarray, floor: float) -> np.ndarray:
    """The log-Cholesky numbers of a body (its pseudo-inertia raised to `floor` where not positive)."""
    P = pseudo_inertia(pi)
    values, vectors = np.linalg.eigh(P)
    P = (vectors * np.maximum(values, floor)) @ vectors.T
    # P = U U^T with U upper triangular: flip, take the lower Cholesky factor, flip back
    flip = np.eye(4)[::-1]
    U = flip @ cholesky(flip @ P @ flip, lower=True) @ flip
    alpha = np.log(U[3, 3])
    U = U / U[3, 3]
    return np.array([alpha, np.log(U[0, 0]), np.log(U[1, 1]), np.log(U[2, 2]), U[0, 1], U[1, 2], U[0, 2],
                     U[0, 3], U[1, 3], U[2, 3]])


def _start(prior: np.ndarray, mixing: np.ndarray, values: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The prior moved the least (relative to `scale`) to give the fitted base parameters: where the
    optimizer starts (it may not be consistent; the factorization raises what is not)."""
    scaled = mixing * scale
    step = scaled.T @ np.linalg.lstsq(scaled @ scaled.T, values - mixing @ prior, rcond=None)[0]
    return prior + scale * step


LOG_BOUND = 60.0
"""Bound on the logarithms of the Cholesky factor (a flat direction may walk there; exp stays finite)."""
PRECISIONS = (1e-2, 1e-4, 1e-6)
"""Relative precisions of the fitted base parameters the consistent fit is solved to, in turn (each
start from the last): a direct solve at the data's own precision (1e-10 for a noise-free
recording) stalls in the narrow valley the whitening makes."""


def consistent_parameters(fit: BaseFit, base: BaseParameters, prior: np.ndarray, n_bodies: int,
                          prior_weight: float = 1e-6, fixed: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Standard parameters, physically consistent, closest to the fit (see the module docstring).

    Returns them and how far their base parameters are from the fitted ones: the largest
    difference in units of the fit's standard deviation (at least 1e-6 of the parameter's size).
    The first ``10 n_bodies`` entries are the bodies', then damping and friction per joint.
    `fixed` (10 per body) are the parts of each body that keep their values (links merged into it
    other than the one that changes): the changing part is what must be realizable.
    """
    fixed = np.zeros(10 * n_bodies) if fixed is None else fixed
    scale = np.maximum(np.abs(prior), 1e-3 * max(np.abs(prior).max(), 1e-9))
    n_body = 10 * n_bodies
    mixing = np.zeros((len(fit.values), len(prior)))  # base.of as a matrix
    mixing[np.arange(len(base.independent)), base.independent] = 1.0
    mixing[:, base.dependent] = base.mixing
    start = _start(prior, mixing, fit.values, scale)
    floor = 1e-9 * max(np.abs(prior[:n_body]).max(initial=0.0), 1e-6)
    theta = np.concatenate([*(_cholesky_from_body(start[10 * b:10 * b + 10] - fixed[10 * b:10 * b + 10], floor)
                              for b in range(n_bodies)),
                            np.sqrt(np.maximum(start[n_body:], FRICTION_START))])
    covariance = np.linalg.pinv(fit.information)
    size = np.maximum(np.abs(fit.values), 1e-3 * max(np.abs(fit.values).max(), 1e-12))
    for precision in PRECISIONS:
        information = np.linalg.inv(covariance + np.diag((precision * size) ** 2))
        theta = _solve(theta, information, mixing, fit.values, prior, scale, n_bodies, prior_weight, fixed)
    pi = _parameters(theta, n_bodies, len(prior), fixed)[0]
    return pi, float(np.max(np.abs(mixing @ pi - fit.values) / np.maximum(fit.deviations, PRECISIONS[-1] * size)))


def _parameters(theta: np.ndarray, n_bodies: int, count: int, fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard parameters of the optimizer's variables and their Jacobian."""
    n_body = 10 * n_bodies
    bodies = [_body_from_cholesky(theta[10 * b:10 * b + 10]) for b in range(n_bodies)]
    pi = np.concatenate([*(value for value, _ in bodies), theta[n_body:] ** 2])
    pi[:n_body] += fixed
    d_pi = np.zeros((count, len(theta)))
    for b, (_, jacobian) in enumerate(bodies):
        d_pi[10 * b:10 * b + 10, 10 * b:10 * b + 10] = jacobian
    d_pi[n_body:, n_body:] = np.diag(2 * theta[n_body:])
    return pi, d_pi


def _solve(theta0, information, mixing, values, prior, scale, n_bodies, prior_weight, fixed) -> np.ndarray:
    """One least-squares solve: the fit whitened by `information`, plus the prior's pull."""
    whiten = np.linalg.cholesky(information).T
    weight = np.sqrt(prior_weight * max(np.linalg.eigvalsh(information).min(), 0.0) / max(len(prior), 1))
    top, target = whiten @ mixing, whiten @ values

    def residuals(theta):
        pi, _ = _parameters(theta, n_bodies, len(prior), fixed)
        return np.concatenate([top @ pi - target, weight * (pi - prior) / scale])

    def jacobian(theta):
        _, d_pi = _parameters(theta, n_bodies, len(prior), fixed)
        return np.vstack([top @ d_pi, (weight / scale)[:, None] * d_pi])

    # the fit's part converges fast; what the prior alone decides may crawl along flat valleys, and
    # need not be exact: the iterations are bounded
    return least_squares(residuals, theta0, jac=jacobian, method="trf", x_scale="jac", xtol=1e-10, ftol=1e-8,
                         gtol=1e-10, max_nfev=20 * len(theta0)).x
