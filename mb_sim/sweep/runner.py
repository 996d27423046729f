"""Run a sweep's samples in parallel: on this machine's cores (a pool of spawned processes, the
default) or on a Dask cluster (``backend="dask"``: a LocalCluster started here, or the scheduler
at ``address``).  The same call, one argument different; the same rows.

Before any sample runs, the robot is loaded here (compiled if it never was) and the description
checked against it: an unknown parameter, joint, motor or constraint, a count or duration that is
not a positive number, an unreachable scheduler are one line each (:class:`SweepError`).  Workers
get the compiled robot as a :class:`~mb_sim.sim.robot_cache.RobotBundle` (its facts, header and
C source): from their cache where it holds the library, compiled there from the C where it does
not, never derived.  Samples go out in chunks, a few per worker at a time, so a sweep of any size
holds only its rows in the parent; trajectories stream to an MCAP file as samples end.
"""
from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from mb_sim.sweep.results import SweepResults, TrajectoryWriter
from mb_sim.sweep.spec import Sample, SweepError, SweepSpec
from mb_sim.sweep.worker import SampleResult, run_chunk, run_sample

__all__ = ["BACKENDS", "replay_sample", "run_sweep"]

BACKENDS = ("local", "dask")
#: Samples per task sent to a worker (fewer for short sweeps: every worker gets some).
CHUNK = 8
#: Tasks in flight per worker.
IN_FLIGHT = 3
#: Seconds to reach a Dask scheduler before the sweep gives up.
CONNECT_TIMEOUT = 10.0


def run_sweep(spec: SweepSpec, backend: str = "local", workers: int | None = None, address: str | None = None,
              trajectories: str | os.PathLike | None = None, progress: bool | Callable[[str], None] = True,
              cache_dir: str | os.PathLike | None = None) -> SweepResults:
    """Run every sample of `spec`; one row per sample, in sample order (:class:`SweepResults`).

    Parameters
    ----------
    backend
        ``"local"``: `workers` worker processes (default: one per core; 1: in this process),
        which import nothing of the caller (a script needs no ``if __name__ == "__main__"``); ``"dask"``: Dask's distributed scheduler at `address` (``tcp://host:8786``), or
        a LocalCluster of `workers` processes started for the sweep when `address` is None.
    trajectories
        An MCAP file for the recorded trajectories (``spec.record_every`` > 0).
    progress
        Print progress to standard error (True), call a function with each progress line, or not.
    cache_dir
        The model cache (default ``$MB_SIM_CACHE_DIR`` or ``~/.cache/mb_sim``); workers use theirs.
    """
    if backend not in BACKENDS:
        raise SweepError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SweepError(f"workers must be a positive whole number, got {workers!r}")
    if address is not None and backend != "dask":
        raise SweepError("address is the Dask scheduler's: give it with backend='dask'")
    if trajectories is not None and not spec.record_every:
        raise SweepError("trajectories need record_every > 0 (steps between recorded states)")
    say = _progress_printer(progress)
    bundle, names = _prepare(spec, cache_dir, say)
    writer = TrajectoryWriter(trajectories, *names) if trajectories is not None else None
    workers = workers or os.cpu_count() or 1
    started = time.perf_counter()
    rows: dict[int, dict[str, Any]] = {}
    meter = _Meter(spec.size, say)
    try:
        if backend == "dask":
            results = _dask(spec, bundle, workers, address, cache_dir)
        elif workers == 1:
            results = (run_sample(spec, i, bundle, cache_dir) for i in range(spec.size))
        else:
            results = _pool(spec, bundle, workers, cache_dir)
        for result in results:
            rows[result.row["sample"]] = result.row
            if writer is not None and result.trajectory is not None:
                writer.write(result.row["sample"], result.trajectory)
            meter.done(result.row)
    finally:
        if writer is not None:
            writer.close()
    meter.finish()
    return SweepResults([rows[i] for i in sorted(rows)], time.perf_counter() - started)


def replay_sample(spec: SweepSpec, index: int, cache_dir: str | os.PathLike | None = None) -> SampleResult:
    """Sample `index` of `spec`, run alone in this process: the row the sweep gave it (from its
    recorded seed), bit for bit but for ``wall_time``."""
    bundle, _ = _prepare(spec, cache_dir, lambda line: None)
    return run_sample(spec, index, bundle, cache_dir)


# -- before running ------------------------------------------------------------------------------------
def _prepare(spec: SweepSpec, cache_dir, say: Callable[[str], None]) -> tuple[Any, tuple[list[str], list[str]]]:
    """Load (compile) the robot here, check the description against it; the robot's bundle and
    its coordinate and speed names."""
    from mb_sim.sim import Simulator

    say(f"sweep: loading the robot ({spec.size} samples)")
    try:
        sim = Simulator(spec.robot, dt=spec.dt, integrator=spec.integrator, floating_base=spec.floating_base,
                        ground=spec.ground, xacro_args=spec.xacro_args, cache_dir=cache_dir,
                        progress=lambda line: say(f"sweep: {line}"))
    except (OSError, ValueError) as err:
        raise SweepError(f"robot {str(spec.robot)[:200]!r}: {err}") from None
    check_names(spec, sim)
    return sim.bundle(), (sim.coordinate_names, sim.speed_names)


def check_names(spec: SweepSpec, sim) -> None:
    """SweepError naming the first parameter, joint, motor or constraint `spec` names that `sim`'s
    robot does not have."""
    joints = set(sim.joint_indices) | set(sim.coordinate_names)
    speeds = set(sim.joint_indices) | set(sim.speed_names)
    servoed = {j for j in sim.actuated_joints if j in sim.joint_indices}
    checks = [("parameters", spec.parameters, set(sim.parameter_names), "parameter"),
              ("initial_positions", spec.initial_positions, joints, "joint or coordinate"),
              ("initial_velocities", spec.initial_velocities, speeds, "joint or speed")]
    for k, command in enumerate(spec.commands):
        checks += [(f"commands[{k}].efforts", command.efforts, set(sim.actuated_joints), "actuated joint"),
                   (f"commands[{k}].voltages", command.voltages, set(sim.motors), "motor"),
                   (f"commands[{k}].positions", command.positions, servoed, "joint with an effort input")]
    checks += [(f"switches[{k}]", {s.constraint: 0}, set(sim.constraints), "constraint")
               for k, s in enumerate(spec.switches)]
    for where, given, known, what in checks:
        unknown = sorted(set(given) - known)
        if unknown:
            listed = ", ".join(sorted(known)[:12]) + (" ..." if len(known) > 12 else "") or "none"
            raise SweepError(f"{where}: the robot has no {what} {unknown[0]!r} (it has: {listed})")


# -- backends ----------------------------------------------------------------------------------------------
def _chunks(size: int, workers: int) -> list[list[int]]:
    """The samples in tasks: CHUNK each, fewer where that would leave workers idle."""
    per = max(1, min(CHUNK, math.ceil(size / (workers * IN_FLIGHT))))
    return [list(range(start, min(start + per, size))) for start in range(0, size, per)]


def _pool(spec: SweepSpec, bundle, workers: int, cache_dir) -> Iterator[SampleResult]:
    """Samples on `workers` worker processes (:mod:`mb_sim.sweep.processes`), a chunk at a time
    each; a chunk whose worker died is a failed row per sample (a new worker takes the rest)."""
    from mb_sim.sweep.processes import WorkerPool, dumps

    pool = WorkerPool(workers, dumps((spec, bundle, cache_dir)))
    try:
        yield from pool.run(_chunks(spec.size, workers), lambda i: _died(spec, i, "its worker process died"))
    finally:
        pool.close()


def _died(spec: SweepSpec, index: int, why: str) -> SampleResult:
    sample = spec.sample(index)
    return SampleResult({"sample": index, "seed": sample.seed, "status": "failed", "error": why,
                         "sim_time": 0.0, "wall_time": 0.0})


def _dask(spec: SweepSpec, bundle, workers: int, address: str | None, cache_dir) -> Iterator[SampleResult]:
    """Samples as Dask tasks: the scheduler at `address`, or a LocalCluster of `workers` processes."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SweepError("backend 'dask' needs dask and distributed (pip install dask distributed)") from None
    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT)
        except Exception as err:  # noqa: BLE001 (OSError, TimeoutError, a malformed address)
            raise SweepError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    try:
        spec_future, bundle_future = client.scatter([spec, bundle], broadcast=True)
        chunks = _chunks(spec.size, max(1, len(client.scheduler_info().get("workers", {})) or workers))[::-1]
        running = as_completed()

        def submit() -> None:
            running.add(client.submit(run_chunk, spec_future, bundle_future, chunks.pop(), cache_dir, pure=False))

        for _ in range(min(workers * IN_FLIGHT, len(chunks))):
            submit()
        for future in running:
            results = future.result()
            future.release()
            yield from results
            if chunks:
                submit()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# -- progress --------------------------------------------------------------------------------------------
def _progress_printer(progress: bool | Callable[[str], None]) -> Callable[[str], None]:
    if callable(progress):
        return progress
    if not progress:
        return lambda line: None
    return lambda line: print(line, file=sys.stderr, flush=True)


class _Meter:
    """Progress lines: samples done, failed, time so far and left, at most one every 2 s."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.say, self.count, self.failed = total, say, 0, 0
        self.started = self.last = time.perf_counter()

    def done(self, row: dict[str, Any]) -> None:
        self.count += 1
        self.failed += row.get("status") != "ok"
        now = time.perf_counter()
        if now - self.last >= 2.0 and self.count < self.total:
            self.last = now
            left = (now - self.started) / self.count * (self.total - self.count)
            self.say(f"sweep: {self.count}/{self.total} samples ({self.failed} failed), "
                     f"{now - self.started:.1f} s, about {left:.0f} s left")

    def finish(self) -> None:
        self.say(f"sweep: {self.count}/{self.total} samples ({self.failed} failed) in "
                 f"{time.perf_counter() - self.started:.1f} s")
