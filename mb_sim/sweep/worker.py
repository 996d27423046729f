"""One sample of a sweep, run where a worker runs it: a new simulator of the compiled robot, the
sample's values set, the schedule played, the row of results (and the trajectory, if recorded).

Everything a row holds comes from the sample (its values, its seed) and the robot: a sample run
alone (:func:`mb_sim.sweep.replay_sample`) gives the same row, bit for bit, but for its wall time.
"""
from __future__ import annotations


import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from mb_sim.sweep.spec import Sample, SweepSpec

__all__ = ["SampleResult", "run_chunk", "run_sample"]

#: Loaded robots of this process, by bundle key: a worker builds one simulator per sample from it.
_ROBOTS: dict[str, Any] = {}


@dataclass
class SampleResult:
    """A sample's row, and its trajectory (times, q, u) when recorded."""

    row: dict[str, Any]
    trajectory: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def run_sample(spec: SweepSpec, sample: Sample | int, robot=None, cache_dir=None) -> SampleResult:
    """Run `sample` (or sample number `sample`) of `spec`; `robot` is the compiled robot to use (a
    :class:`~mb_sim.sim.robot_cache.RobotBundle`; default ``spec.robot``).  A failure, whatever it
    is, is the row's ``status`` and ``error``, never an exception."""
    sample = spec.sample(sample) if isinstance(sample, (int, np.integer)) else sample
    started = time.perf_counter()
    row: dict[str, Any] = {"sample": sample.index, "seed": sample.seed}
    row.update({f"parameter.{k}": v for k, v in sample.parameters.items()})
    row.update({f"initial.{k}": v for k, v in sample.initial_positions.items()})
    row.update({f"initial_velocity.{k}": v for k, v in sample.initial_velocities.items()})
    sim, recorded = None, None
    try:
        sim = _simulator(spec, robot, cache_dir)
        sim.set_parameters(sample.parameters)
        sim.set_state(positions=sample.initial_positions or None, velocities=sample.initial_velocities or None)
        recorded = _play(spec, sample, sim)
        row["status"], row["error"] = "ok", ""
    except Exception as err:  # noqa: BLE001 (a sample's failure is its row, not the sweep's end)
        from mb_sim.sim.errors import SimulationError

        row["status"] = "diverged" if isinstance(err, SimulationError) else "failed"
        row["error"] = str(err) if isinstance(err, SimulationError) else f"{type(err).__name__}: {err}"
    row["sim_time"] = float(sim.time) if sim is not None else 0.0
    if sim is not None:
        row.update(_outputs(spec, sim))
    row["wall_time"] = time.perf_counter() - started
    return SampleResult(row, recorded)


def run_chunk(spec: SweepSpec, robot, indices: list[int], cache_dir=None) -> list[SampleResult]:
    """A worker's task: samples `indices` of `spec`, in order (:func:`run_sample` each)."""
    return [run_sample(spec, i, robot, cache_dir) for i in indices]


def _simulator(spec: SweepSpec, robot, cache_dir):
    """A new simulator of the compiled robot (loaded once per process)."""
    from mb_sim.sim import Simulator
    from mb_sim.sim.robot_cache import RobotBundle

    robot = spec.robot if robot is None else robot
    if isinstance(robot, RobotBundle):
        loaded = _ROBOTS.get(robot.key)
        if loaded is None:
            loaded = _ROBOTS.setdefault(robot.key, robot.install(cache_dir))
        robot = loaded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sweep's parent heard them when it loaded the robot
        return Simulator(robot, dt=spec.dt, integrator=spec.integrator, floating_base=spec.floating_base,
                         ground=spec.ground, xacro_args=spec.xacro_args, cache_dir=cache_dir)


def _events(spec: SweepSpec) -> list[tuple[int, int, Any]]:
    """(step, order, event) of the schedule: switches, then commands, then the controller's
    ticks at each step (so a controller sees what a command set at the same time)."""
    steps = lambda t: int(round(t / spec.dt))  # noqa: E731
    events = [(steps(s.time), 0, s) for s in spec.switches] + [(steps(c.time), 1, c) for c in spec.commands]
    if spec.controller is not None:
        period = max(1, int(round(spec.control_period / spec.dt)))
        events += [(k, 2, "control") for k in range(0, steps(spec.duration), period)]
    return sorted(events, key=lambda e: (e[0], e[1]))


def _play(spec: SweepSpec, sample: Sample, sim) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Advance through the schedule to the duration; the recorded trajectory (or None)."""
    from mb_sim.sweep.spec import Command, Switch

    end, done, rng = int(round(spec.duration / spec.dt)), 0, sample.rng()
    every = spec.record_every
    times, qs, us = ([], [], []) if every else (None, None, None)

    def advance_to(step: int) -> None:
        nonlocal done
        while done < step:
            chunk = step - done if not every else min(step - done, every - done % every)
            sim.advance(chunk * spec.dt)
            done += chunk
            if every and done % every == 0:
                times.append(sim.time)
                qs.append(sim.q)
                us.append(sim.u)

    if every:
        times.append(sim.time), qs.append(sim.q), us.append(sim.u)
    for step, _, event in _events(spec):
        advance_to(min(step, end))
        if isinstance(event, Switch):
            sim.set_constraint_enabled(event.constraint, event.enabled)
        elif isinstance(event, Command):
            _command(sim, event)
        else:
            spec.controller(sim, rng)
    advance_to(end)
    return (np.array(times), np.array(qs), np.array(us)) if every else None


def _command(sim, command) -> None:
    if command.efforts:
        sim.set_efforts(dict(command.efforts))
    if command.voltages:
        sim.set_voltages(dict(command.voltages))
    for joint, position in command.positions.items():
        sim.servos.hold_position(joint, float(position))


def _spring_outputs(springs: dict) -> dict[str, float]:
    """Each spring-damper's length [m], length rate [m/s] and force [N, tension positive]."""
    out = {}
    for name, state in springs.items():
        out.update({f"spring.{name}.length": state.distance, f"spring.{name}.length_rate": state.length_rate,
                    f"spring.{name}.force": state.force})
    return out


def _outputs(spec: SweepSpec, sim) -> dict[str, float]:
    """The row's outputs at the state reached (NaN where it cannot be evaluated)."""
    out: dict[str, float] = {}
    try:
        if "state" in spec.outputs:
            out.update({f"q.{n}": float(v) for n, v in zip(sim.coordinate_names, sim.q)})
            out.update({f"u.{n}": float(v) for n, v in zip(sim.speed_names, sim.u)})
        wanted = [o for o in spec.outputs if o in ("joints", "energy", "springs") or o.startswith("link:")]
        if wanted:
            outputs = sim.outputs(dynamics=False)
            if "joints" in spec.outputs:
                out.update({f"position.{j}": v for j, v in outputs.joint_positions.items()})
                out.update({f"velocity.{j}": v for j, v in outputs.joint_velocities.items()})
            if "energy" in spec.outputs:
                out["kinetic_energy"], out["potential_energy"] = outputs.kinetic_energy, outputs.potential_energy
            if "springs" in spec.outputs:
                out.update(_spring_outputs(outputs.springs))
            for output in spec.outputs:
                if output.startswith("link:"):
                    pose = outputs.link_poses[output[5:]]
                    out.update({f"{output}.{axis}": float(pose[k, 3]) for k, axis in enumerate("xyz")})
        if spec.metrics is not None:
            out.update({str(k): float(v) for k, v in spec.metrics(sim).items()})
    except Exception as err:  # noqa: BLE001 (a diverged state may not evaluate: the row says so)
        out["output_error"] = f"{type(err).__name__}: {err}"
    return out
