"""Batched rollouts in C: many independent states of one compiled robot advanced by one foreign
call, which releases the GIL, so threads run batches side by side (as ``mujoco.rollout`` does).

Each state has its own inputs (held, or one row per step) and, optionally, its own parameters;
the servo table and the constraint switches of the simulator are shared.  The RK4 steps are the
simulator's (``mb_integrate``: projection, stiff dissipation, stiction anchors after each step),
so a state rolled out here ends where a :class:`~mb_sim.sim.Simulator` from it ends, bit for bit.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

__all__ = ["RolloutResult", "rollout"]



@dataclass
class RolloutResult:
    """Final states (n x (n_q + n_u + n_z)), a status per state (0, or the failing step's code:
    :data:`mb_sim.codegen.FACTORIZATION_FAILURES`), the time each state reached, and the states
    after every step (n x steps x state size) when recorded."""

    states: np.ndarray
    status: np.ndarray
    times: np.ndarray
    trajectory: np.ndarray | None = None


def rollout(sim, states: np.ndarray, steps: int, inputs: np.ndarray | None = None,
            params: np.ndarray | None = None, record: bool = False, threads: int = 1,
            t0: float | None = None) -> RolloutResult:
    """Advance each row of `states` (``[q, u, z]``, the simulator's order) `steps` RK4 steps of
    ``sim.dt`` from time `t0` (default ``sim.time``).

    Parameters
    ----------
    sim
        A :class:`~mb_sim.sim.Simulator` with the C backend (its state is not touched).
    inputs
        Efforts then voltages: one row per state (held), or ``(n, steps, n_inputs)`` (one row per
        step); default the simulator's current inputs for every state.
    params
        One row per state, or one row for all; default the simulator's parameters.
    record
        Also return every state after every step.
    threads
        Threads sharing the batch (the foreign call releases the GIL).
    """
    model = sim.model
    function = getattr(model, "rollout_function", None)
    if function is None:
        raise ValueError("rollout needs a compiled model (backend='c')")
    width = model.n_q + model.n_u + model.n_z
    states = np.array(states, dtype=float, order="C", ndmin=2)
    if states.shape[1] != width:
        raise ValueError(f"states must have {width} columns (q, u, z), got shape {states.shape}")
    n = len(states)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 0 <= steps < 2**31:
        raise ValueError(f"steps must be a whole number from 0, got {steps!r}")
    b = model.buffers
    inputs = np.tile(b.inputs, (n, 1)) if inputs is None else np.array(inputs, dtype=float, order="C")
    per_step = inputs.ndim == 3
    expected = (n, steps, model.n_inputs) if per_step else (n, model.n_inputs)
    if inputs.shape != expected:
        raise ValueError(f"inputs must have shape {expected}, got {inputs.shape}")
    params = b.params.copy() if params is None else np.array(params, dtype=float, order="C")
    per_state = params.ndim == 2
    if params.shape != ((n, model.n_params) if per_state else (model.n_params,)):
        raise ValueError(f"params must have {model.n_params} columns, one row or one per state, got {params.shape}")
    for name, array in (("states", states), ("inputs", inputs), ("params", params)):
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite")
    status, times = np.zeros(n, dtype=np.intc), np.zeros(n)
    trajectory = np.zeros((n, steps, width)) if record else None
    start = sim.time if t0 is None else float(t0)
    if hasattr(sim, "servos") and sim.servos.active:
        sim.servos.refresh(start)

    def run(lo: int, hi: int) -> None:
        if lo == hi:
            return
        function(states[lo:].ctypes.data, inputs[lo:].ctypes.data, int(per_step),
                 params[lo:].ctypes.data if per_state else params.ctypes.data, int(per_state),
                 start, sim.dt, int(steps), hi - lo, b.enabled.ctypes.data, b.servo.ctypes.data,
                 status[lo:].ctypes.data, times[lo:].ctypes.data, trajectory[lo:].ctypes.data if record else None)

    bounds = np.linspace(0, n, max(1, min(int(threads), n)) + 1).astype(int)
    if len(bounds) <= 2:
        run(0, n)
    else:
        with ThreadPoolExecutor(len(bounds) - 1) as pool:
            list(pool.map(run, bounds[:-1], bounds[1:]))
    return RolloutResult(states, status, times, trajectory)
