"""A model evaluated with NumPy (``sympy.lambdify``): no C compiler needed, ~100x slower a call."""
from __future__ import annotations

from typing import Callable

import numpy as np
from sympy import lambdify

from mb_sim.codegen.errors import FactorizationError
from mb_sim.codegen.layout import DYNAMICS_OUTPUTS
from mb_sim.codegen.numeric_model import NumericModel
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.program import StraightLineProgram, straight_line_program
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

__all__ = ["NumpyModel"]


class NumpyModel(NumericModel):
    """The same interface as :class:`~mb_sim.codegen.compiled.CompiledModel`, in NumPy.

    Outputs come from the same straight-line programs (temporaries and CSE) as the C code; the
    linear algebra is ``np.linalg.solve`` with the same Schur-complement formulation, so a
    FactorizationError here means a singular matrix (C also rejects indefinite ones).
    """

    def __init__(self, eom: EquationsOfMotion, progress: Progress = None):
        super().__init__(eom)
        report(progress, f"generating NumPy code for {eom.name}...")
        self._evaluate = _lambdify(straight_line_program(eom, OUTPUT_NAMES, progress))
        self._dynamics = _lambdify(straight_line_program(eom, DYNAMICS_OUTPUTS, progress))
        self._dynamics_index = self.layout.indices(DYNAMICS_OUTPUTS)

    def evaluate_into(self, t: float = 0.0) -> None:
        b = self.buffers
        b.out[:] = self._evaluate(b.q, b.u, b.inputs, b.params, t)

    def forward_dynamics_into(self, t: float = 0.0) -> None:
        b = self.buffers
        status = self._forward_dynamics(b.q, b.u, t, b.qdot, b.udot)
        if status:
            raise FactorizationError(self.name, status, t)

    def rk4_into(self, dt: float, n_steps: int, t: float = 0.0) -> float:
        b = self.buffers
        x, xdot = np.concatenate([b.q, b.u]), np.empty(self.n_q + self.n_u)
        t0, n_q = t, self.n_q

        def derivative(state: np.ndarray, time: float) -> np.ndarray:
            status = self._forward_dynamics(state[:n_q], state[n_q:], time, xdot[:n_q],
                                            xdot[n_q:])
            if status:  # reported at the start of the failing step, as in C
                raise FactorizationError(self.name, status, t)
            return xdot.copy()

        try:
            for step in range(n_steps):
                t = t0 + step * dt
                k1 = derivative(x, t)
                k2 = derivative(x + 0.5 * dt * k1, t + 0.5 * dt)
                k3 = derivative(x + 0.5 * dt * k2, t + 0.5 * dt)
                k4 = derivative(x + dt * k3, t + dt)
                x = x + dt / 6.0 * (k1 + 2.0 * (k2 + k3) + k4)
        finally:
            b.q[:], b.u[:] = x[:n_q], x[n_q:]
        return t0 + n_steps * dt

    def _forward_dynamics(self, q, u, t: float, qdot: np.ndarray, udot: np.ndarray) -> int:
        """q', u' into `qdot`, `udot`; 0, or the failure code of the C entry point."""
        b, view = self.buffers, self.layout.view
        b.out[self._dynamics_index] = self._dynamics(q, u, b.inputs, b.params, t)
        qdot[:] = view(b.out, "qdot")[:, 0]
        m, a = view(b.out, "mass_matrix"), view(b.out, "constraint_matrix")
        try:
            solution = np.linalg.solve(m, np.column_stack([view(b.out, "forcing"), a.T]))
        except np.linalg.LinAlgError:
            return 1
        udot_free, y = solution[:, 0], solution[:, 1:]
        if self.n_constraints:
            try:
                lam = np.linalg.solve(a @ y, a @ udot_free + view(b.out, "acceleration_bias")[:, 0])
            except np.linalg.LinAlgError:
                return 2
            udot_free = udot_free - y @ lam
        udot[:] = udot_free
        return 0


def _lambdify(program: StraightLineProgram) -> Callable:
    """``f(q, u, inputs, params, t) -> list`` of `program`'s output elements, in NumPy."""
    a = program.arguments
    return lambdify([a["q"], a["u"], a["inputs"], a["params"], a["t"][0]], program.outputs,
                    modules="numpy", cse=lambda _: (program.assignments, program.outputs),
                    docstring_limit=0)
