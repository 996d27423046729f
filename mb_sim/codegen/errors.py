"""Errors raised by the code-generation stage."""
from __future__ import annotations

__all__ = ["CodegenError", "FactorizationError", "FACTORIZATION_FAILURES"]

# Nonzero status codes of mb_forward_dynamics / mb_rk4 (both backends use them).
FACTORIZATION_FAILURES = {
    1: "the mass matrix M is not positive definite",
    2: "A M^-1 A^T is not positive definite (are the constraints independent?)",
}


class CodegenError(RuntimeError):
    """Generating, compiling or loading the code of a model failed."""


class FactorizationError(ArithmeticError):
    """Forward dynamics failed: a matrix to factorize is singular or indefinite at this state."""

    def __init__(self, model: str, code: int, t: float):
        reason = FACTORIZATION_FAILURES.get(code, f"status {code}")
        super().__init__(f"forward dynamics of {model!r} failed at t={t:.9g}: {reason}")
        self.code = code
        self.t = t
