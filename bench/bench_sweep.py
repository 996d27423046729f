"""Benchmark: many simulations, and the start-up that makes them cheap.

* **Sweep**: 64 runs of arm6 for 10 s at 1 ms (RK4), each from its own initial pose, in robot-seconds
  per wall second: ``mb_sim.sweep.run_sweep`` with a new Simulator per sample, in one process
  (``workers=1``) and on both cores (``workers=2``, spawned processes, start-up included);
  ``mb_sim.sweep.rollout`` (the 64 states in one batched C call, 1 and 2 threads); MuJoCo's
  ``mujoco.rollout`` on the same robot (its URDF import, RK4 at 1 ms, no contacts), 1 and 2 threads,
  in the same run.  mb_sim's runs have joint damping and stops as the URDF says; MuJoCo's the same
  damping and no limits (arm6 stays within them), so both integrate the same equations.
* **Start-up** with a warm cache: a Simulator of a robot compiled before, in process (arm6, Panda,
  Talos's arm, G1), and a fresh process to its first step (``python -c`` importing mb_sim.sim, loading
  arm6, one step), beside a fresh process importing MuJoCo, loading arm6 and stepping once.
* **Cold**: G1 from its URDF to a compiled model with an empty cache (derivation, code generation,
  compilation in parallel translation units).

Run: ``.venv/bin/python bench/bench_sweep.py [--quick] [--json PATH] [--markdown PATH]``.
Nothing is asserted; figures go to standard output and the files.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "test"))

from bench_report import machine  # noqa: E402

ARM6 = REPO / "urdf" / "arm6.urdf"
RUNS, DURATION, DT = 64, 10.0, 1e-3


def sweep_spec(duration: float = DURATION, runs: int = RUNS):
    """The 64 arm6 runs: each from a pose drawn around the arm's zero (its own seed)."""
    from mb_sim.sweep.spec import Normal, SweepSpec

    joints = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
              "wrist_3_joint")
    return SweepSpec(robot=str(ARM6), duration=duration, samples=runs, seed=2026,
                     initial_positions={j: Normal(0.0, 0.5) for j in joints}, outputs=("state",))


def measure_sweeps(cache: str, repeats: int, duration: float) -> dict:
    """Robot-seconds per wall second of the sweep on each backend (best of `repeats`)."""
    from mb_sim.sweep import run_sweep

    spec = sweep_spec(duration)
    run_sweep(spec, workers=1, progress=False, cache_dir=cache)  # compile once, outside the timing
    figures = {}
    for label, workers in (("sweep_1_process", 1), ("sweep_2_processes", 2)):
        rates = []
        for _ in range(repeats):
            results = run_sweep(spec, workers=workers, progress=False, cache_dir=cache)
            assert not results.failed, results.failed[:1]
            rates.append(results.robot_seconds_per_second)
        figures[label] = {"best": max(rates), "median": statistics.median(rates)}
        print(f"  {label}: {max(rates):.0f} robot-s per s")
    return figures


def measure_rollouts(cache: str, repeats: int, duration: float) -> dict:
    """mb_sim's batched C rollout and MuJoCo's rollout of the same 64 states (best of `repeats`)."""
    from mb_sim.sim import Simulator
    from mb_sim.sweep import rollout

    spec = sweep_spec(duration)
    sim = Simulator(str(ARM6), cache_dir=cache)
    starts = []
    for i in range(RUNS):
        sim.reset()
        sim.set_state(spec.sample(i).initial_positions)
        starts.append(np.concatenate([sim.q, sim.u, sim.z]))
    starts = np.array(starts)
    steps = int(round(duration / DT))
    figures = {}
    for threads in (1, 2):
        rates = []
        for _ in range(repeats):
            t = time.perf_counter()
            result = rollout(sim, starts, steps, threads=threads)
            rates.append(RUNS * duration / (time.perf_counter() - t))
            assert not result.status.any()
        figures[f"rollout_{threads}_thread"] = {"best": max(rates), "median": statistics.median(rates)}
        print(f"  mb_sim rollout, {threads} thread(s): {max(rates):.0f} robot-s per s")
    figures.update(mujoco_rollouts(sim, starts, steps, repeats, duration))
    return figures


def mujoco_model():
    """arm6 in MuJoCo: its URDF import, RK4 at 1 ms, contacts and limits off, the URDF's damping."""
    import mujoco
    from bench_dynamics import mujoco_urdf

    model = mujoco.MjModel.from_xml_string(mujoco_urdf(ARM6.read_text()))
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    model.opt.integrator, model.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, DT
    return model


def mujoco_rollouts(sim, starts: np.ndarray, steps: int, repeats: int, duration: float) -> dict:
    import mujoco
    from mujoco import rollout as mj_rollout

    model = mujoco_model()
    state_size = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    data = mujoco.MjData(model)
    initial = np.zeros((len(starts), state_size))
    for k, x in enumerate(starts):
        mujoco.mj_resetData(model, data)
        for name, (i, j) in sim.joint_indices.items():
            data.qpos[model.joint(name).qposadr[0]] = x[i]
        mujoco.mj_getState(model, data, initial[k], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    figures = {}
    for threads in (1, 2):
        datas = [mujoco.MjData(model) for _ in range(threads)]
        rates = []
        for _ in range(repeats):
            t = time.perf_counter()
            mj_rollout.rollout(model, datas if threads > 1 else datas[0], initial, nstep=steps)
            rates.append(len(starts) * duration / (time.perf_counter() - t))
        figures[f"mujoco_rollout_{threads}_thread"] = {"best": max(rates), "median": statistics.median(rates)}
        print(f"  mujoco.rollout, {threads} thread(s): {max(rates):.0f} robot-s per s")
    return figures


# -- start-up -------------------------------------------------------------------------------------
def startup_robots() -> list[tuple[str, str, dict]]:
    from pinocchio_reference import example_robot_data_dir

    erd = example_robot_data_dir()
    return [("arm6", str(ARM6), {}), ("panda", str(erd / "panda_description/urdf/panda.urdf"), {}),
            ("g1", str(erd / "g1_description/urdf/g1_29dof_rev_1_0.urdf"), {"floating_base": True})]


def measure_startup(cache: str, repeats: int, quick: bool) -> dict:
    """A Simulator of a robot compiled before (in process), and a fresh process to its first step."""
    import warnings

    from mb_sim.sim import Simulator

    figures = {}
    for name, path, options in startup_robots()[: 1 if quick else None]:
        if not Path(path).exists():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Simulator(path, cache_dir=cache, **options)  # compile (cold) outside the timing
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                Simulator(path, cache_dir=cache, **options)
                times.append(time.perf_counter() - t)
        figures[f"warm_load_{name}"] = {"best": min(times), "median": statistics.median(times)}
        print(f"  warm load {name}: {min(times) * 1e3:.1f} ms")
    fresh = ("import time; t = time.perf_counter(); from mb_sim.sim import Simulator; "
             f"s = Simulator({str(ARM6)!r}); s.advance(0.001); import sys; "
             "print(sorted({'sympy', 'scipy', 'rclpy'} & set(sys.modules)))")
    # as a user runs it: Python writes the modules' bytecode on the first run and reads it after
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"MB_SIM_CACHE_DIR": cache}
    _process_time([sys.executable, "-c", fresh], env, 1)
    figures["fresh_process_arm6"] = _process_time([sys.executable, "-c", fresh], env, repeats)
    mj = ("import mujoco, re; from pathlib import Path; "
          f"m = mujoco.MjModel.from_xml_string(re.sub(r'<(visual|collision)\\b.*?</\\1\\s*>', '', "
          f"Path({str(ARM6)!r}).read_text(), flags=re.S)); d = mujoco.MjData(m); mujoco.mj_step(m, d)")
    figures["fresh_process_mujoco_arm6"] = _process_time([sys.executable, "-c", mj], env, repeats)
    figures["python_alone"] = _process_time([sys.executable, "-c", "pass"], env, repeats)
    print(f"  fresh process to the first step: mb_sim {figures['fresh_process_arm6']['best']:.3f} s, "
          f"MuJoCo {figures['fresh_process_mujoco_arm6']['best']:.3f} s (python alone "
          f"{figures['python_alone']['best']:.3f} s)")
    return figures


def _process_time(command: list[str], env: dict, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return {"best": min(times), "median": statistics.median(times)}


def measure_cold() -> dict:
    """G1 from its URDF to a compiled model in an empty cache (wall and the compiler's share)."""
    import warnings

    from mb_sim.sim import Simulator

    name, path, options = startup_robots()[2]
    if not Path(path).exists():
        return {}
    lines: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        Simulator(path, cache_dir=cache, progress=lambda line: lines.append((time.perf_counter(), line)), **options)
        total = time.perf_counter() - t
    compiled = [line for _, line in lines if line.startswith("compiled")]
    print(f"  cold G1: {total:.1f} s ({'; '.join(compiled)})")
    return {"cold_g1": total, "cold_g1_compile_lines": compiled}


def measure_memory(cache: str) -> dict:
    """A 10,000-sample sweep of summaries (the pendulum, one step each, both cores) in a process of
    its own: its peak resident memory (the parent holds the rows; samples stream back)."""
    # VmHWM, not ru_maxrss: that keeps the high-water mark of the forked copy of this (large)
    # process the child was before it exec'd Python (it read 447 MB after G1 was loaded here)
    script = ("import json; from mb_sim.sweep import SweepSpec, run_sweep; "
              "from mb_sim.sweep.spec import Uniform; "
              f"spec = SweepSpec(robot={str(REPO / 'urdf' / 'pendulum.urdf')!r}, duration=0.001, samples=10000, "
              "parameters={'rod_m': Uniform(0.5, 2.0)}, outputs=('state', 'energy')); "
              "r = run_sweep(spec, workers=2, progress=False); "
              "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')); "
              "print(json.dumps({'rows': len(r), 'failed': len(r.failed), 'wall': r.wall_time, "
              "'peak_rss_mb': peak / 1024}))")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "MB_SIM_CACHE_DIR": cache},
                          capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  10,000 samples: {figures['wall']:.1f} s, parent peak RSS {figures['peak_rss_mb']:.0f} MB")
    return {"memory_10000": figures}


def markdown(report: dict) -> str:
    f = report["figures"]
    rate = lambda key: f"{f[key]['best']:.0f}" if key in f else "n/a"  # noqa: E731
    m = report["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, load average (1 min) {m['load_average_at_start'][0]:.1f}", "",
             f"{RUNS} runs of arm6, {report['duration']:g} s each at 1 ms (RK4), robot-seconds per wall second "
             "(best of the repeats):", "",
             "| | 1 core | 2 cores |", "|---|---|---|",
             f"| mb_sim sweep, a new Simulator per sample (processes) | {rate('sweep_1_process')} | "
             f"{rate('sweep_2_processes')} |",
             f"| mb_sim batched rollout in C (threads) | {rate('rollout_1_thread')} | {rate('rollout_2_thread')} |",
             f"| MuJoCo `rollout` (RK4, threads) | {rate('mujoco_rollout_1_thread')} | "
             f"{rate('mujoco_rollout_2_thread')} |"]
    if "sweep_2_processes" in f and "mujoco_rollout_2_thread" in f:
        lines += ["", f"Sweep on both cores / MuJoCo rollout on both cores: "
                      f"{f['sweep_2_processes']['best'] / f['mujoco_rollout_2_thread']['best']:.2f}"]
    lines += ["", "| start-up (warm cache) | best | median |", "|---|---|---|"]
    for key, value in f.items():
        if key.startswith(("warm_load", "fresh_process", "python_alone")):
            lines.append(f"| {key} | {value['best'] * 1e3:.1f} ms | {value['median'] * 1e3:.1f} ms |")
    if "memory_10000" in f:
        memory = f["memory_10000"]
        lines += ["", f"A 10,000-sample sweep of summaries (pendulum, one step each, 2 workers): {memory['wall']:.1f} s, "
                      f"{memory['failed']} failed, the parent's peak resident memory {memory['peak_rss_mb']:.0f} MB"]
    if "cold_g1" in f:
        lines += ["", f"G1 cold (empty cache, derivation + generation + compilation): {f['cold_g1']:.1f} s; "
                      + "; ".join(f["cold_g1_compile_lines"])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 s runs, fewer repeats, arm6 only")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--no-cold", action="store_true", help="skip G1's cold compilation")
    args = parser.parse_args()
    duration, repeats = (1.0, 2) if args.quick else (DURATION, 3)
    report = {"machine": machine(), "duration": duration, "figures": {}}
    with tempfile.TemporaryDirectory() as cache:
        print("sweeps ...", flush=True)
        report["figures"].update(measure_sweeps(cache, repeats, duration))
        report["figures"].update(measure_rollouts(cache, repeats, duration))
        print("start-up ...", flush=True)
        report["figures"].update(measure_startup(cache, 5, args.quick))
        if not args.quick:
            print("memory ...", flush=True)
            report["figures"].update(measure_memory(cache))
    if not args.quick and not args.no_cold:
        print("cold ...", flush=True)
        report["figures"].update(measure_cold())
    text = markdown(report)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
