"""Many simulations of one robot: parameter studies, Monte Carlo robustness tests, controller
tuning.

A :class:`SweepSpec` says what varies (parameters, initial positions and velocities, command
schedules, constraint switches; values fixed, drawn from distributions with a seed per sample, or
on a grid) and what each run reports; :func:`run_sweep` runs the samples in parallel, on the cores
of this machine (a process pool) or on a Dask cluster (``backend="dask"``), and returns one row
per sample.  Every sample records its seed: :func:`replay_sample` runs one alone and gets its row
bit for bit.  Workers load the compiled robot once (from the shared cache, or from the bundle the
sweep sends them) and build a new simulator per sample; nothing is derived per sample.
"""
from __future__ import annotations

from mb_sim._lazy import lazy_exports

#: Each public name and the module it is imported from on first use (light to import: see mb_sim._lazy).
_EXPORTS = {
    "Sample": "mb_sim.sweep.spec",
    "SweepSpec": "mb_sim.sweep.spec",
    "SweepError": "mb_sim.sweep.spec",
    "load_sweep": "mb_sim.sweep.spec",
    "SweepResults": "mb_sim.sweep.results",
    "run_sweep": "mb_sim.sweep.runner",
    "replay_sample": "mb_sim.sweep.runner",
    "run_sample": "mb_sim.sweep.worker",
    "rollout": "mb_sim.sweep.rollout",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
