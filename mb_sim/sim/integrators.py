"""The integrators a :class:`~mb_sim.sim.Simulator` advances with: one stepper per method, chosen
in one place (:func:`stepper`).

- ``rk4``: fixed-step classic Runge-Kutta in the generated C (ETDRK4 for motor currents, stiff
  joint damping and friction taken implicitly, the constraint projection after every step: see
  ``mb_integrate`` in ``mb_sim/codegen/c``), called in chunks of at most
  :data:`MAX_STEPS_PER_CALL` steps so Python handles signals and judges runaways between them;
- ``RK45``, ``DOP853``, ``Radau``, ``BDF``: SciPy's adaptive ``solve_ivp`` on the forward
  dynamics, the state projected onto the constraints at the end of each ``advance``.

A stepper advances a run (a :class:`Steppable`: the simulator) and raises
:class:`~mb_sim.sim.errors.SimulationError` (through ``run.failure``) on divergence, leaving the
last good state.
"""
from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from mb_sim.codegen.errors import FactorizationError
from mb_sim.sim.errors import SimulationError
from mb_sim.sim.manifolds import ContactManifolds
from mb_sim.sim.robot_model import RobotModel
from mb_sim.sim.runaway import RunawayWatch
from mb_sim.sim.singularity import SingularityWatch
from mb_sim.sim.servos import JointServos
from mb_sim.sim.stiction_anchors import move_anchors
from mb_sim.sim.wrenches import ExternalWrenches

__all__ = ["INTEGRATORS", "MAX_STEPS_PER_CALL", "FixedStepRK4", "AdaptiveSciPy", "Steppable", "stepper"]

#: The integrators by name, with what each is.
INTEGRATORS = {
    "rk4": "fixed-step classic Runge-Kutta in generated C (real-time default)",
    "RK45": "adaptive explicit Runge-Kutta 4(5) (scipy solve_ivp)",
    "DOP853": "adaptive explicit Runge-Kutta 8(5,3) (scipy solve_ivp)",
    "Radau": "adaptive implicit Radau IIA, for stiff models (scipy solve_ivp)",
    "BDF": "adaptive implicit backward differentiation, for stiff models (scipy solve_ivp)",
}
#: Most RK4 steps in one call of the generated code: between calls Python handles signals
#: (Ctrl-C) and judges runaways, so a long ``advance`` stays interruptible and a runaway is found
#: within this many steps.
MAX_STEPS_PER_CALL = 1000
#: The implicit methods, which take the Jacobian of the rates (forward_difference_jacobian).
IMPLICIT = ("Radau", "BDF")
#: A forward difference's relative step: the square root of the double's epsilon.
JACOBIAN_STEP = float(np.sqrt(np.finfo(float).eps))


class Steppable(Protocol):
    """What a stepper advances: a run's numeric model (its buffers hold the state), time, step and
    tolerances, its runaway watch and servos, and how it names a failure and projects its state."""

    robot_model: RobotModel
    model: object
    time: float
    dt: float
    rtol: float
    atol: float
    runaway: RunawayWatch
    singularities: SingularityWatch
    servos: JointServos
    manifolds: ContactManifolds
    wrenches: ExternalWrenches

    def failure(self, code: int, at: float | None = None, detail: str = "") -> SimulationError:
        """The error for failure `code` of the numeric model at the (restored) current state."""

    def project(self) -> None:
        """Project the state onto the constraints (SimulationError where that fails)."""


class FixedStepRK4:
    """RK4 in the generated C, ``dt`` per step."""

    fixed_step = True

    def advance(self, sim: Steppable, duration: float) -> None:
        """`duration` (a multiple of ``dt``) in calls of at most MAX_STEPS_PER_CALL steps."""
        steps = round(duration / sim.dt)
        if abs(steps * sim.dt - duration) > 1e-9 * max(1.0, duration):
            raise ValueError(f"duration {duration} is not a multiple of dt {sim.dt}")
        self.steps(sim, steps)

    @staticmethod
    def steps(sim: Steppable, steps: int) -> None:
        """`steps` steps, each call followed by the runaway checks.  Every call starts from
        ``start + done * dt``, so the time reached is the one a single call would reach (the C
        code times its steps the same way)."""
        if steps == 0:
            return
        model, dt, start, done, watch = sim.model, sim.dt, sim.time, 0, sim.runaway
        manifolds = sim.manifolds if sim.manifolds.active else None
        watch.begin(start)
        sim.singularities.begin(start)
        try:
            while done < steps:
                chunk = steps - done if steps - done < MAX_STEPS_PER_CALL else MAX_STEPS_PER_CALL
                if manifolds is not None:  # coal finds the contacts before every step
                    manifolds.refresh(start + done * dt)
                    chunk = 1
                chunk = min(chunk, sim.singularities.steps_to_next())  # its samples of the constraint rows
                if sim.wrenches.active:  # a push's inputs: held while they stay the same
                    chunk = min(chunk, sim.wrenches.write_step(start + done * dt, dt))
                if sim.servos.active:  # a trajectory's next segment starts with the first step after it
                    upcoming = sim.servos.refresh(start + done * dt)
                    if upcoming < math.inf:
                        chunk = min(chunk, max(1, math.ceil((upcoming - (start + done * dt)) / dt - 1e-9)))
                model.rk4_into(dt, chunk, start + done * dt)
                done += chunk
                sim.time = time = start + done * dt
                watch.check(time, chunk)
                sim.singularities.check(time, chunk)
        except FactorizationError as err:
            sim.time = err.t
            raise sim.failure(err.code) from None
        except KeyboardInterrupt:  # the state is that of the last completed step: so is the time
            reached = round((model.rk4_time - (start + done * dt)) / dt) if done < steps else 0
            sim.time = start + (done + min(max(reached, 0), steps - done)) * dt
            raise


class AdaptiveSciPy:
    """SciPy's ``solve_ivp`` with `method`, at the simulator's ``rtol`` and ``atol``."""

    fixed_step = False

    def __init__(self, method: str) -> None:
        self.method = method

    def advance(self, sim: Steppable, duration: float) -> None:
        """`duration` in one call of ``solve_ivp`` per interval over which the pushes (the wrench
        inputs) stay the same, each followed by the projection and the runaway checks."""
        end = sim.time + duration
        while sim.wrenches.active:
            change = sim.wrenches.write_at(sim.time)
            if change >= end:
                break
            self._advance(sim, change - sim.time)
            sim.time = change
        self._advance(sim, end - sim.time)
        sim.time = end

    def _advance(self, sim: Steppable, duration: float) -> None:
        """`duration` in one call of ``solve_ivp``, then the projection and the runaway checks."""
        from scipy.integrate import solve_ivp  # here: importing it costs 0.45 s, and most runs use rk4

        b = sim.model.buffers
        start, t0 = np.concatenate([b.q, b.u, b.z]), sim.time
        n_q, n = len(b.q), len(b.q) + len(b.u)

        def load(x: np.ndarray) -> None:
            b.q[:], b.u[:], b.z[:] = x[:n_q], x[n_q:n], x[n:]

        failures: list[FactorizationError] = []

        def derivative(t: float, x: np.ndarray) -> np.ndarray:
            load(x)
            try:
                sim.model.forward_dynamics_into(t)
            except FactorizationError as err:  # a trial stage of a step too long (a stiff stop):
                failures.append(err)           # an infinite rate makes the solver reject the step
                return np.full(len(x), np.inf)
            return np.concatenate([b.qdot, b.udot, b.zdot])

        def jacobian(t: float, x: np.ndarray) -> np.ndarray:
            return forward_difference_jacobian(derivative, t, x)

        implicit = {"jac": jacobian} if self.method in IMPLICIT else {}
        sim.runaway.begin(t0)
        sim.singularities.begin(t0)
        sim.manifolds.refresh(t0)  # the contacts found once per advance (rk4 finds them every step)
        try:  # a rejected trial (an infinite rate) is the solver's to handle, whatever the caller's error state
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                solution = solve_ivp(derivative, (t0, t0 + duration), start, method=self.method,
                                     rtol=sim.rtol, atol=sim.atol, dense_output=sim.singularities.active, **implicit)
        except KeyboardInterrupt:  # the buffers hold a trial stage: back to the start
            load(start)
            raise
        except (ValueError, np.linalg.LinAlgError) as err:  # SciPy's own, from a state it cannot go on from
            load(start)
            raise sim.failure(3, at=t0, detail=f"{self.method}: {err}") from None
        end = solution.y[:, -1]
        if not solution.success or not np.all(np.isfinite(end)):
            load(start)
            if failures:  # the solver could not step past a state where the dynamics fail
                raise sim.failure(failures[-1].code, at=failures[-1].t) from None
            raise sim.failure(3, at=float(solution.t[-1]), detail=solution.message)
        watch, t = sim.singularities, t0
        while watch.active and t + watch.due_in() * sim.dt < t0 + duration - 0.5 * sim.dt:
            steps = watch.due_in()  # the constraint rows sampled as the fixed-step path samples them
            t += steps * sim.dt
            load(solution.sol(t))
            watch.check(t, steps)
        load(end)
        sim.time += duration
        sim.project()
        move_anchors(sim.robot_model, sim.model, sim.time)  # rk4 moves them after every step, in C
        sim.runaway.check(sim.time, max(1, round(duration / sim.dt)))
        watch.check(sim.time, max(1, round((sim.time - t) / sim.dt)))  # (steps since its last sample)


def forward_difference_jacobian(rate, t: float, x: np.ndarray) -> np.ndarray:
    """d rate / dx at (t, x) by forward differences, column j stepped by JACOBIAN_STEP max(|x_j|, 1):
    what Radau and BDF get instead of SciPy's own estimate, which grows a column's step tenfold
    each time the column comes out zero (a wheel's angle, which nothing depends on) until it is
    infinite, and the solver stops with "array must not contain infs or NaNs" (the diff drive at
    rtol 1e-10).  Entries that are not finite (a trial state where the dynamics fail) are zero:
    the Jacobian only steers Newton's iterations, a step they do not converge on is rejected."""
    base = rate(t, x)
    columns = np.empty((len(x), len(x)))
    for j in range(len(x)):
        step = JACOBIAN_STEP * max(abs(x[j]), 1.0)
        shifted = x.copy()
        shifted[j] += step
        columns[:, j] = (rate(t, shifted) - base) / step
    rate(t, x)  # the buffers back at (t, x)
    return np.where(np.isfinite(columns), columns, 0.0)


def stepper(name: str) -> FixedStepRK4 | AdaptiveSciPy:
    """The stepper of integrator `name` (a key of :data:`INTEGRATORS`; ValueError otherwise)."""
    if name not in INTEGRATORS:
        raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATORS)}")
    return FixedStepRK4() if name == "rk4" else AdaptiveSciPy(name)
