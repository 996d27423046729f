"""Benchmark: objects in contact (coal's manifolds in mb_sim's contact slots) against MuJoCo on the
same scenes (test/object_scenes.py: same shapes, masses, friction 1, RK4 at 1 ms).

Scenes:

* ``tower``: five 0.1 m cubes stacked on the ground, measured standing after 0.5 s of settling;
* ``pair``: a cube resting on a cube (dropped 1 cm off centre, measured at rest after 2 s);
* ``grasp``: urdf/gripper_lift.urdf holding a 20 mm box 5 cm up, measured after the test's grip,
  lift and 5 s hold (MuJoCo: ``mujoco_gripper``, the loop pins as equality constraints, elliptic
  cones, impratio 10, noslip; see its comments).

Per scene: the first load (derive, generate, compile: a fresh cache), the cost of one step in
``Simulator.advance`` (N steps per call, the manifold's search and Python's overhead included,
as a user gets it) and in ``mujoco.mj_step`` (N per call), best and median of repeats interleaved;
where the scenes end (the top cube's height, the box's rise and slip in the grip, in both).
Nothing is asserted.

Run: ``.venv/bin/python bench/bench_objects.py [--quick] [--json PATH] [--markdown PATH]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import timeit
import warnings
from pathlib import Path

import mujoco

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "test"))

from bench_report import machine  # noqa: E402
from object_scenes import (CUBE, cube_heights, cube_scene, grip_and_lift, gripper_scene, mujoco_cubes,  # noqa: E402
                           mujoco_grip_and_lift, mujoco_gripper, mujoco_heights)

STEPS_PER_CALL, REPEATS, QUICK_REPEATS = 200, 15, 5


def _best_median(run, repeats: int) -> tuple[float, float]:
    """One step's cost [us]: best and median of `repeats` timings of STEPS_PER_CALL steps."""
    times = [timeit.timeit(run, number=1) / STEPS_PER_CALL * 1e6 for _ in range(repeats)]
    return min(times), statistics.median(times)


def cube_row(name: str, heights: list[float], xs: list[float], settle: float, cache: str, repeats: int) -> dict:
    """Load (cold), settle, then time mb_sim's and MuJoCo's steps on a scene of cubes."""
    start = time.perf_counter()
    sim = cube_scene(heights, cache, xs=xs)
    load = time.perf_counter() - start
    sim.advance(settle)
    model, data = mujoco_cubes(heights, xs=xs)
    mujoco.mj_step(model, data, round(settle / 1e-3))
    ours, theirs = [], []
    for _ in range(repeats):  # interleaved: A B A B
        ours.append(_best_median(lambda: sim.advance(STEPS_PER_CALL * 1e-3), 1)[0])
        theirs.append(_best_median(lambda: mujoco.mj_step(model, data, STEPS_PER_CALL), 1)[0])
    return {"scene": name, "load_s": load, "mb_sim_us": min(ours), "mb_sim_median_us": statistics.median(ours),
            "mujoco_us": min(theirs), "mujoco_median_us": statistics.median(theirs),
            "ratio": min(ours) / min(theirs), "top_mb_sim_m": float(cube_heights(sim)[-1]),
            "top_mujoco_m": float(mujoco_heights(model, data)[-1]), "slots_in_use": sim.manifolds.in_use}


def grasp_row(cache: str, repeats: int) -> dict:
    """Load (cold), grip, lift and hold the box in both (the test's commands), then time mb_sim's
    and MuJoCo's steps on the held grasp."""
    start = time.perf_counter()
    sim = gripper_scene(cache)
    load = time.perf_counter() - start
    result = grip_and_lift(sim)
    model, data = mujoco_gripper()
    mujoco_result = mujoco_grip_and_lift(model, data)
    ours, theirs = [], []
    for _ in range(repeats):  # interleaved: A B A B
        ours.append(_best_median(lambda: sim.advance(STEPS_PER_CALL * 1e-3), 1)[0])
        theirs.append(_best_median(lambda: mujoco.mj_step(model, data, STEPS_PER_CALL), 1)[0])
    return {"scene": "grasp", "load_s": load, "mb_sim_us": min(ours), "mb_sim_median_us": statistics.median(ours),
            "mujoco_us": min(theirs), "mujoco_median_us": statistics.median(theirs), "ratio": min(ours) / min(theirs),
            "rise_m": result["rise"], "slip_m": result["slip"], "rise_mujoco_m": mujoco_result["rise"],
            "slip_mujoco_m": mujoco_result["slip"], "slots_in_use": sim.manifolds.in_use}


def markdown(rows: list[dict], info: dict) -> str:
    lines = [f"Objects in contact, RK4 at 1 ms, per step ({info.get('cpu', '?')}; {info.get('cores', '?')} cores)", "",
             "| scene | first load | mb_sim step | MuJoCo RK4 step | mb_sim / MuJoCo | slots in use | ends |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        theirs = f"{r['mujoco_us']:.1f} us" if r["mujoco_us"] else "(no model)"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else ""
        ends = (f"top cube {r['top_mb_sim_m']:.5f} m (MuJoCo {r['top_mujoco_m']:.5f})" if "top_mb_sim_m" in r
                else f"box rose {r['rise_m'] * 1e3:.2f} mm, slipped {r['slip_m'] * 1e3:.6f} mm in 5 s "
                f"(MuJoCo {r['rise_mujoco_m'] * 1e3:.2f} mm, {r['slip_mujoco_m'] * 1e3:.6f} mm)")
        lines.append(f"| {r['scene']} | {r['load_s']:.1f} s | {r['mb_sim_us']:.1f} us (median {r['mb_sim_median_us']:.1f}) "
                     f"| {theirs} | {ratio} | {r['slots_in_use']} | {ends} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_REPEATS} repeats instead of {REPEATS}")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    repeats = QUICK_REPEATS if args.quick else REPEATS
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="mb_sim_bench_objects_") as cache:
        rows = [cube_row("tower", [CUBE / 2 + CUBE * k for k in range(5)], [0.0] * 5, 0.5, cache, repeats),
                cube_row("pair", [CUBE / 2, 0.25], [0.0, 0.01], 2.0, cache, repeats),
                grasp_row(cache, repeats)]
    info = machine()
    text = markdown(rows, info)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=2))
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
