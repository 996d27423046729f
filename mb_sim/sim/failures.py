"""What a failed step is blamed on, for :class:`~mb_sim.sim.errors.SimulationError`: the
spring-damper or force law at fault, a speed beyond its runaway bound, a constraint that cannot be
held, else the first coordinate that stops being finite."""
from __future__ import annotations

import numpy as np

from mb_sim.codegen.errors import FACTORIZATION_FAILURES, FactorizationError
from mb_sim.sim.errors import SimulationError
from mb_sim.sim.robot_model import RobotModel
from mb_sim.sim.runaway import RunawayWatch
from mb_sim.sim.state import kept

__all__ = ["failure"]


def failure(robot: RobotModel, model, runaway: RunawayWatch, code: int, time: float, dt: float,
            at: float | None = None, detail: str = "") -> SimulationError:
    """The error for failure `code` (:data:`~mb_sim.codegen.errors.FACTORIZATION_FAILURES`) with the
    (restored) state in `model`'s buffers at `time`; `at` the time it failed, if another."""
    message = FACTORIZATION_FAILURES.get(code, f"failure code {code}") + (f" ({detail})" if detail else "")
    when = time if at is None else at
    if model.force_law_error is not None:
        index, error = model.force_law_error
        model.force_law_error = None
        spring, law = model.force_laws[index]
        return SimulationError(f"spring-damper {spring!r}: force law {law!r} failed: "
                               f"{type(error).__name__}: {error}", when)
    if code == 5:
        b = model.buffers
        lengths = model.evaluate(b.q, b.u, b.inputs, b.params, time)["spring_lengths"][:, 0]
        spring = model.spring_names[int(np.argmin(lengths))]
        return SimulationError(f"spring-damper {spring!r}: its length reached zero (its force direction is "
                               f"undefined; {lengths.min():.3g} m at the start of the step)", when)
    found = runaway.speed_runaway(when, then=message)  # a runaway that ended in a failure
    if found is None and code == 4 and (row := _constraint_not_held(model, time, dt)) is not None:
        return SimulationError(f"{message}: {row}", when)
    return found or SimulationError(message, when, _offending_coordinate(robot, model, time, dt))


def _constraint_not_held(model, time: float, dt: float) -> str | None:
    """The enforced constraint row farthest from holding after one RK4 step from the current
    state without projection (what a failing projection could not correct), for messages."""
    b = model.buffers
    n_q, n_h = len(b.q), model.layout.blocks["phi"].shape[0]

    def rate(x: np.ndarray, t: float) -> np.ndarray:
        return np.concatenate(model.forward_dynamics(x[:n_q], x[n_q:], b.inputs, b.params, t))

    with kept(b) as state:
        try:
            x = np.concatenate(state)
            k1 = rate(x, time)
            k2 = rate(x + 0.5 * dt * k1, time + 0.5 * dt)
            k3 = rate(x + 0.5 * dt * k2, time + 0.5 * dt)
            x = x + dt / 6 * (k1 + 2 * (k2 + k3) + rate(x + dt * k3, time + dt))
            out = model.evaluate(x[:n_q], x[n_q:], b.inputs, b.params, time + dt)
        except FactorizationError:
            return None
    velocity = out["constraint_matrix"] @ x[n_q:] + out["constraint_bias"][:, 0]
    residual = np.abs(np.concatenate([out["phi"][:, 0], velocity[n_h:]]))  # positions where stated
    residual[(b.enabled == 0.0) | ~np.isfinite(residual)] = 0.0
    if not residual.size or residual.max() <= 0.0:
        return None
    worst = int(np.argmax(residual))
    return (f"{model.constraint_labels[worst]} cannot be held (residual {residual[worst]:.3g} after one "
            "step: it contradicts the other constraints there)")


def _offending_coordinate(robot: RobotModel, model, time: float, dt: float) -> str | None:
    """The first coordinate or speed whose value or rate is not finite at, or one Euler step
    after, the current state."""
    b = model.buffers
    names = [*robot.coordinate_names, *robot.speed_names, *robot.electrical_state_names]
    state = np.concatenate([b.q, b.u, b.z])
    with kept(b):
        try:
            qdot, udot = model.forward_dynamics(b.q, b.u, b.inputs, b.params, time)
            rates = np.concatenate([qdot, udot, b.zdot])
        except FactorizationError:
            return None
    for candidate in (state, rates, state + dt * rates):
        bad = np.flatnonzero(~np.isfinite(candidate))
        if len(bad):
            return names[bad[0]]
    return None
