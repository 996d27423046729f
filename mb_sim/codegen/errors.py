"""Errors raised by the code-generation stage."""
from __future__ import annotations

__all__ = ["CodegenError", "FactorizationError", "FACTORIZATION_FAILURES", "SPRING_MIN_LENGTH"]

# Nonzero status codes of mb_forward_dynamics (1, 2, 5), mb_project (4) and mb_rk4 (any); the NumPy
# backend uses the same codes.
FACTORIZATION_FAILURES = {
    1: "the mass matrix is not positive definite",
    2: "the constraints' Schur complement A M^-1 A^T is not finite",
    3: "the state is not finite (NaN or inf)",
    4: "projection onto the constraints failed",
    5: "a spring-damper's length reached zero (its direction is undefined)",
}
#: A spring-damper shorter than this [m] stops the dynamics with status 5.
SPRING_MIN_LENGTH = 1e-9


class CodegenError(RuntimeError):
    """Generating, compiling or loading the code of a model failed."""


class FactorizationError(ArithmeticError):
    """Forward dynamics, projection or integration failed at this state.

    One exception type for every status code, so callers catch one thing and branch on ``code``
    if they need to (keys of ``FACTORIZATION_FAILURES``: 1, 2 a factorization in the forward
    dynamics, 3 a non-finite state after an integration step, 4 projection onto the
    constraints, 5 a spring-damper of zero length).  ``t`` is the time of the failing call, or for integration the start of the
    failing step.
    """

    def __init__(self, model: str, code: int, t: float):
        reason = FACTORIZATION_FAILURES.get(code, f"status {code}")
        super().__init__(f"model {model!r} failed at t={t:.9g}: {reason}")
        self.code = code
        self.t = t
