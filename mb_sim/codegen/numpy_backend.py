"""A model evaluated with NumPy (``sympy.lambdify``): no C compiler needed, ~100x slower a call."""
from __future__ import annotations

from typing import Callable

import numpy as np
from sympy import lambdify

from mb_sim.codegen.errors import SPRING_MIN_LENGTH, FactorizationError
from mb_sim.codegen.c_source import STATE_UPDATES
from mb_sim.codegen.layout import DYNAMICS_OUTPUTS, PROJECTION_OUTPUTS
from mb_sim.codegen.numeric_model import NumericModel, check_step_count
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.program import ProgramSource, StraightLineProgram
from mb_sim.codegen.projection import project_state, solve_gram
from mb_sim.codegen.dissipation import resistance, resistance_estimate, stiff_rows
from mb_sim.codegen.servo import apply_servos
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
        namespace, source = {"SpringForceLaw": self._call_force_law}, ProgramSource(eom)
        self._evaluate = _lambdify(source.program(OUTPUT_NAMES, progress), namespace)
        self._dynamics = _lambdify(source.program(DYNAMICS_OUTPUTS, progress), namespace)
        self._dynamics_index = self.layout.indices(DYNAMICS_OUTPUTS)
        self._constraints = _lambdify(source.program(PROJECTION_OUTPUTS, progress), namespace)
        self._constraints_index = self.layout.indices(PROJECTION_OUTPUTS)
        self._constraints_out = np.zeros(self.layout.size)
        self._decay = (_lambdify(source.program(("electrical_decay",), progress), namespace)
                       if self.n_z else None)
        self._state_updates = (_lambdify(source.program((STATE_UPDATES,), progress), namespace)
                               if STATE_UPDATES in eom.outputs else None)  # a ground's stiction anchors
        self._rk4_time = 0.0

    def outputs_at(self, q, u, z, inputs, params, t: float = 0.0) -> np.ndarray:
        """Every output as a flat vector at the given arguments, which may be complex: the
        programs are analytic, so a complex step gives exact derivatives (linearization)."""
        values = self._evaluate(q, u, z, inputs, params, t)
        dtype = complex if any(np.iscomplexobj(a) for a in (q, u, z, inputs, params)) else float
        return np.array([complex(v) if dtype is complex else float(v) for v in values], dtype=dtype)

    def evaluate_into(self, t: float = 0.0) -> None:
        b = self.buffers
        b.out[:] = self._evaluate(b.q, b.u, b.z, b.inputs, b.params, t)

    def forward_dynamics_into(self, t: float = 0.0) -> None:
        b = self.buffers
        status = self._forward_dynamics(b.q, b.u, b.z, t, b.qdot, b.udot, b.zdot, b.lam, b.applied)
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
        check_step_count(n_steps)
        b = self.buffers
        x, t0 = np.concatenate([b.q, b.u, b.z]), t
        self._rk4_time = t0
        decay = np.zeros(len(x))  # lambda: zero for q and u, -R/L for motor currents
        if self.n_z:
            decay[-self.n_z:] = self._decay(b.q, b.u, b.z, b.inputs, b.params, t)
        coefficients = etd_coefficients(decay, dt)
        try:
            for step in range(n_steps):
                status, x_end = self._rk4_step(x, t0 + step * dt, dt, t0 + (step + 1) * dt, decay, coefficients)
                if status:  # reported at the start of the failing step, as in C
                    raise FactorizationError(self.name, status, t0 + step * dt)
                x, self._rk4_time = x_end, t0 + (step + 1) * dt
        finally:  # also on KeyboardInterrupt: the last completed step, with its time
            n = self.n_q + self.n_u
            b.q[:], b.u[:], b.z[:] = x[:self.n_q], x[self.n_q:n], x[n:]
        return t0 + n_steps * dt

    @property
    def rk4_time(self) -> float:
        return self._rk4_time

    def _rk4_step(self, x: np.ndarray, t: float, dt: float, t_end: float, decay: np.ndarray,
                  coefficients: tuple[np.ndarray, ...]) -> tuple[int, np.ndarray | None]:
        """One step from `x` at `t` (ETDRK4 with decay rates `decay`: classic RK4 where they are
        zero, as in C), checked and projected at `t_end`: ``(status, x')``."""
        e, e2, half, f1, f2, f3 = coefficients
        stiff = None  # the dissipation rows stiff at this step and their resistances (a non-finite x: k1 says so)
        if len(self.dissipation_rows) and np.isfinite(x).all():
            stiff = self._resistance_estimate(x, t, dt)
            if stiff is None:
                return 1, None
        stage, rates = x, []
        for k, fraction in enumerate((0.0, 0.5, 0.5, 1.0)):
            status, xdot = self._state_derivative(stage, t + fraction * dt, stiff)
            if status:
                return status, None
            rates.append(xdot - decay * stage)  # the rates without their linear part
            if k == 0:
                stage = e2 * x + half * rates[0]
            elif k == 1:
                stage = e2 * x + half * rates[1]
            elif k == 2:
                stage = e2 * (e2 * x + half * rates[0]) + half * (2.0 * rates[2] - rates[0])
        x_end = e * x + f1 * rates[0] + 2.0 * f2 * (rates[1] + rates[2]) + f3 * rates[3]
        return self._finish_step(x_end, t_end), x_end

    def _resistance_estimate(self, x: np.ndarray, t: float, dt: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The dissipation rows stiff at the step from `x` and their resistances over it (as
        ``mb_first_stage``); None if ``M + h K`` is singular."""
        b, view = self.buffers, self.layout.view
        n_q, n = self.n_q, self.n_q + self.n_u
        self._forces(x[:n_q], x[n_q:n], x[n:], t)
        try:
            rows = self.dissipation_rows[stiff_rows(self.dissipation_rows, b.params, x[n_q:n], dt,
                                                    view(b.out, "mass_matrix"))]
        except np.linalg.LinAlgError:
            return None
        if not len(rows):
            return rows, np.zeros(0)
        self._forces(x[:n_q], x[n_q:n], x[n:], t, stiff=(rows, np.zeros(len(rows))))
        rstar = resistance_estimate(rows, b.params, x[n_q:n], dt, view(b.out, "mass_matrix").copy(),
                                    view(b.out, "forcing")[:, 0].copy(), view(b.out, "constraint_matrix").copy(),
                                    b.enabled)
        return None if rstar is None else (rows, rstar)

    def _state_derivative(self, x: np.ndarray, t: float,
                          stiff: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[int, np.ndarray]:
        """``(status, [q'; u'; z'])`` at the state `x` = [q; u; z] (`stiff` dissipation rows putting up their r*)."""
        n_q, n = self.n_q, self.n_q + self.n_u
        xdot = np.empty_like(x)
        if not np.isfinite(x).all():
            return 3, xdot
        status = self._forward_dynamics(x[:n_q], x[n_q:n], x[n:], t, xdot[:n_q], xdot[n_q:n], xdot[n:],
                                        np.empty(self.n_constraints), stiff=stiff)
        return status, xdot

    def _finish_step(self, x: np.ndarray, t: float) -> int:
        """Check and project, in place, the state `x` = [q; u] at the end of a step; 0, 3 or 4.

        As ``mb_finish_step`` in C: finite before and after the projection, after which a
        ground's stiction anchors move (the generated ``state_updates``).
        """
        if not np.isfinite(x).all():
            return 3
        n = self.n_q + self.n_u
        status = self._project(x[:self.n_q], x[self.n_q:n], t)
        if not status and self._state_updates is not None:
            x[n:] = self._state_updates(x[:self.n_q], x[self.n_q:n], x[n:], self.buffers.inputs, self.buffers.params, t)
        return status or (0 if np.isfinite(x).all() else 3)

    def _project(self, q: np.ndarray, u: np.ndarray, t: float) -> int:
        """Project `q`, `u` in place (see :func:`~mb_sim.codegen.projection.project_state`)."""
        b, view, out = self.buffers, self.layout.view, self._constraints_out

        def constraints(coordinates: np.ndarray) -> tuple[np.ndarray, ...]:
            out[self._constraints_index] = self._constraints(coordinates, u, np.zeros(self.n_z), b.inputs, b.params, t)
            return (view(out, "phi")[:, 0], view(out, "kinematic_map"), view(out, "mass_matrix"),
                    view(out, "constraint_matrix"), view(out, "constraint_bias")[:, 0])

        return project_state(self.projection, q, u, constraints, b.enabled)

    def _forces(self, q, u, z, t: float, applied: np.ndarray | None = None,
                stiff: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """The dynamics outputs into ``buffers.out`` with F as the integrator takes it (as the C
        runtime): `stiff` = (rows, r*) put up r* in place of their damping and friction; then the
        servos' efforts."""
        b, view = self.buffers, self.layout.view
        b.out[self._dynamics_index] = self._dynamics(q, u, z, b.inputs, b.params, t)
        if stiff is not None and len(stiff[0]):  # F holds -r(u)
            speeds, r, _, _ = resistance(stiff[0], b.params, u)
            np.add.at(view(b.out, "forcing")[:, 0], speeds, r - stiff[1])
        if applied is not None:
            applied[:] = b.inputs
        if b.servo[0] > 0:
            apply_servos(b.servo, q, u, b.inputs, t, view(b.out, "mass_matrix"), view(b.out, "forcing")[:, 0], applied)

    def _forward_dynamics(self, q, u, z, t: float, qdot: np.ndarray, udot: np.ndarray, zdot: np.ndarray,
                          lam: np.ndarray, applied: np.ndarray | None = None,
                          stiff: tuple[np.ndarray, np.ndarray] | None = None) -> int:
        """q', u', z' into `qdot`, `udot`, `zdot`, the multipliers into `lam` (the servos' efforts
        applied, into `applied` if given; with `stiff` = (rows, r*), those dissipation rows
        putting up r*, as in RK4's stages); 0, or the C failure code."""
        b, view = self.buffers, self.layout.view
        self._forces(q, u, z, t, applied, stiff)
        if not np.all(view(b.out, "spring_lengths") > SPRING_MIN_LENGTH):
            return 5
        qdot[:] = view(b.out, "qdot")[:, 0]
        zdot[:] = view(b.out, "electrical_rates")[:, 0]
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
                lam[on] = solve_gram(a[on] @ y[:, on], a[on] @ udot_free + view(b.out, "acceleration_bias")[on, 0])
            except np.linalg.LinAlgError:
                return 2
            udot_free = udot_free - y[:, on] @ lam[on]
        udot[:] = udot_free
        return 0


def etd_coefficients(decay: np.ndarray, dt: float) -> tuple[np.ndarray, ...]:
    """ETDRK4's ``e, e2, half, f1, f2, f3`` per component for decay rates `decay` and step `dt`
    (for a zero rate: 1, 1, dt/2, dt/6, dt/6, dt/6, classic RK4), as ``mb_etd_coefficients``."""
    p1, p2, p3 = _phi(decay * dt)
    h1, _, _ = _phi(0.5 * decay * dt)
    return (np.exp(decay * dt), np.exp(0.5 * decay * dt), 0.5 * dt * h1, dt * (p1 - 3 * p2 + 4 * p3),
            dt * (p2 - 2 * p3), dt * (4 * p3 - p2))


def _phi(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """phi_1..3 of the exponential integrator, series for |x| < 1 and closed forms elsewhere."""
    series = np.abs(x) < 1.0
    xs = np.where(series, x, 0.0)
    term, sums = np.ones_like(x), [np.zeros_like(x) for _ in range(3)]
    for j in range(24):
        sums[0] += term / (j + 1)
        sums[1] += term / ((j + 1.0) * (j + 2.0))
        sums[2] += term / ((j + 1.0) * (j + 2.0) * (j + 3.0))
        term = term * xs / (j + 1)
    xc = np.where(series, 1.0, x)
    e = np.exp(xc)
    closed = ((e - 1) / xc, (e - 1 - xc) / xc**2, (e - 1 - xc - 0.5 * xc**2) / xc**3)
    return tuple(np.where(series, s, c) for s, c in zip(sums, closed))


def _lambdify(program: StraightLineProgram, namespace: dict) -> Callable:
    """``f(q, u, z, inputs, params, t) -> list`` of `program`'s output elements, in NumPy;
    `namespace` supplies functions NumPy lacks (the user force laws)."""
    a = program.arguments
    return lambdify([a["q"], a["u"], a["z"], a["inputs"], a["params"], a["t"][0]], program.outputs,
                    modules=[namespace, "numpy"], cse=lambda _: (program.assignments, program.outputs),
                    docstring_limit=0)
