"""A model evaluated with NumPy (``sympy.lambdify``): no C compiler needed, ~100x slower a call."""
from __future__ import annotations

from typing import Callable

import numpy as np
from sympy import lambdify

from mb_sim.codegen.errors import SPRING_MIN_LENGTH, FactorizationError
from mb_sim.codegen.layout import DYNAMICS_OUTPUTS, PROJECTION_OUTPUTS
from mb_sim.codegen.numeric_model import NumericModel
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.program import StraightLineProgram, straight_line_program
from mb_sim.codegen.projection import project_state
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

__all__ = ["NumpyModel"]


class NumpyModel(NumericModel):
    """The same interface as :class:`~mb_sim.codegen.compiled.CompiledModel`, in NumPy.

    Outputs come from the same straight-line programs (temporaries and CSE) as the C code; the
    linear algebra is ``np.linalg.solve`` with the same Schur-complement formulation, so a
    FactorizationError here means a singular matrix (C also rejects indefinite ones).  The
    projection and the per-step checks of RK4 follow the C code step by step.
    """

    def __init__(self, eom: EquationsOfMotion, progress: Progress = None):
        super().__init__(eom)
        report(progress, f"generating NumPy code for {eom.name}...")
        namespace = {"SpringForceLaw": self._call_force_law}
        self._evaluate = _lambdify(straight_line_program(eom, OUTPUT_NAMES, progress), namespace)
        self._dynamics = _lambdify(straight_line_program(eom, DYNAMICS_OUTPUTS, progress), namespace)
        self._dynamics_index = self.layout.indices(DYNAMICS_OUTPUTS)
        self._constraints = _lambdify(straight_line_program(eom, PROJECTION_OUTPUTS, progress), namespace)
        self._constraints_index = self.layout.indices(PROJECTION_OUTPUTS)
        self._constraints_out = np.zeros(self.layout.size)

    def evaluate_into(self, t: float = 0.0) -> None:
        b = self.buffers
        b.out[:] = self._evaluate(b.q, b.u, b.inputs, b.params, t)

    def forward_dynamics_into(self, t: float = 0.0) -> None:
        b = self.buffers
        status = self._forward_dynamics(b.q, b.u, t, b.qdot, b.udot, b.lam)
        if status:
            raise FactorizationError(self.name, status, t)

    def project_into(self, t: float = 0.0) -> None:
        b = self.buffers
        q, u = b.q.copy(), b.u.copy()
        status = self._project(q, u, t)
        if status:
            raise FactorizationError(self.name, status, t)
        b.q[:], b.u[:] = q, u

    def rk4_into(self, dt: float, n_steps: int, t: float = 0.0) -> float:
        b = self.buffers
        x, t0 = np.concatenate([b.q, b.u]), t
        try:
            for step in range(n_steps):
                status, x_end = self._rk4_step(x, t0 + step * dt, dt, t0 + (step + 1) * dt)
                if status:  # reported at the start of the failing step, as in C
                    raise FactorizationError(self.name, status, t0 + step * dt)
                x = x_end
        finally:
            b.q[:], b.u[:] = x[:self.n_q], x[self.n_q:]
        return t0 + n_steps * dt

    def _rk4_step(self, x: np.ndarray, t: float, dt: float,
                  t_end: float) -> tuple[int, np.ndarray | None]:
        """One RK4 step from `x` at `t`, checked and projected at `t_end`: ``(status, x')``."""
        k: list[np.ndarray] = []
        for fraction in (0.0, 0.5, 0.5, 1.0):  # stage i at x + fraction * dt * k[i - 1]
            stage = x + fraction * dt * k[-1] if k else x
            status, xdot = self._state_derivative(stage, t + fraction * dt)
            if status:
                return status, None
            k.append(xdot)
        x_end = x + dt / 6.0 * (k[0] + 2.0 * (k[1] + k[2]) + k[3])
        return self._finish_step(x_end, t_end), x_end

    def _state_derivative(self, x: np.ndarray, t: float) -> tuple[int, np.ndarray]:
        """``(status, [q'; u'])`` at the state `x` = [q; u]."""
        n_q, xdot = self.n_q, np.empty_like(x)
        status = self._forward_dynamics(x[:n_q], x[n_q:], t, xdot[:n_q], xdot[n_q:],
                                        np.empty(self.n_constraints))
        return status, xdot

    def _finish_step(self, x: np.ndarray, t: float) -> int:
        """Check and project, in place, the state `x` = [q; u] at the end of a step; 0, 3 or 4.

        As ``mb_finish_step`` in C: finite before and after the projection.
        """
        if not np.isfinite(x).all():
            return 3
        status = self._project(x[:self.n_q], x[self.n_q:], t)
        return status or (0 if np.isfinite(x).all() else 3)

    def _project(self, q: np.ndarray, u: np.ndarray, t: float) -> int:
        """Project `q`, `u` in place (see :func:`~mb_sim.codegen.projection.project_state`)."""
        b, view, out = self.buffers, self.layout.view, self._constraints_out

        def constraints(coordinates: np.ndarray) -> tuple[np.ndarray, ...]:
            out[self._constraints_index] = self._constraints(coordinates, u, b.inputs, b.params, t)
            return (view(out, "phi")[:, 0], view(out, "phi_jacobian"), view(out, "mass_matrix"),
                    view(out, "constraint_matrix"), view(out, "constraint_bias")[:, 0])

        return project_state(self.projection, q, u, constraints, b.enabled)

    def _forward_dynamics(self, q, u, t: float, qdot: np.ndarray, udot: np.ndarray,
                          lam: np.ndarray) -> int:
        """q', u' into `qdot`, `udot`, the multipliers into `lam`; 0, or the C failure code."""
        b, view = self.buffers, self.layout.view
        b.out[self._dynamics_index] = self._dynamics(q, u, b.inputs, b.params, t)
        if not np.all(view(b.out, "spring_lengths") > SPRING_MIN_LENGTH):
            return 5
        qdot[:] = view(b.out, "qdot")[:, 0]
        m, a = view(b.out, "mass_matrix"), view(b.out, "constraint_matrix")
        try:
            solution = np.linalg.solve(m, np.column_stack([view(b.out, "forcing"), a.T]))
        except np.linalg.LinAlgError:
            return 1
        udot_free, y = solution[:, 0], solution[:, 1:]
        if self.n_constraints:
            on = b.enabled != 0.0  # disabled rows: zero multipliers, as in C
            lam[:] = 0.0
            try:
                lam[on] = np.linalg.solve(
                    a[on] @ y[:, on], a[on] @ udot_free + view(b.out, "acceleration_bias")[on, 0])
            except np.linalg.LinAlgError:
                return 2
            udot_free = udot_free - y[:, on] @ lam[on]
        udot[:] = udot_free
        return 0


def _lambdify(program: StraightLineProgram, namespace: dict) -> Callable:
    """``f(q, u, inputs, params, t) -> list`` of `program`'s output elements, in NumPy;
    `namespace` supplies functions NumPy lacks (the user force laws)."""
    a = program.arguments
    return lambdify([a["q"], a["u"], a["inputs"], a["params"], a["t"][0]], program.outputs,
                    modules=[namespace, "numpy"], cse=lambda _: (program.assignments, program.outputs),
                    docstring_limit=0)
