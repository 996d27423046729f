"""Benchmark: a robot's first load (empty model cache, a fresh process to its first step): how long
deriving, generating and compiling take, robot by robot, with MuJoCo's load of the same URDF beside it.

Robots: n-link chains (bench_dynamics.chain_urdf: 0.3 m links, axes alternating y and z) of 8 to 64
links, and humanoids: Unitree G1 and Talos full (example-robot-data, floating base) and JVRC-1
(jvrc_description from PyPI, floating base) and iCub (icub-models from PyPI, iCubGazeboV2_7: 38 speeds,
214 joints of which 175 fixed, six force-torque sensors).  Each mb_sim load runs in a process of its own with an
empty cache; its stages come from the progress lines (derive: the equations; generate: the C; compile:
the C compiler's wall time; total: the process's wall time, imports and the first step included).
A first load compiles the C unoptimized and runs on it while the optimized build is made in the
background (mb_sim.codegen.tiers): *compile* and *total* are the quick build's, *optimized* the
process's wall time when its calls run the optimized build; *O2 first* the total when the first load
waits for the optimized build instead ($MB_SIM_FIRST_BUILD=optimized, as before the quick builds).
MuJoCo: ``MjModel.from_xml_string`` of the URDF with its visual and collision elements removed (its
mesh paths are package:// URIs MuJoCo does not resolve), best of 3, in this process.

Run: ``.venv/bin/python -W ignore bench/bench_cold.py [--quick] [--markdown PATH]`` (``make bench``
writes bench/results/cold.md; --quick: chains of 8 to 32 and G1).  Prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_dynamics import chain_urdf
from bench_report import machine, machine_line

CHILD = r'''
import json, sys, time, warnings
started = time.perf_counter()
warnings.simplefilter("ignore")
from mb_sim.sim import Simulator
lines = []
path, options = sys.argv[1], json.loads(sys.argv[2])
sim = Simulator(path, progress=lambda line: lines.append((time.perf_counter() - started, line)), **options)
sim.advance(sim.dt)
total = time.perf_counter() - started
sim.model.wait_until_optimized()
print(json.dumps({"total": total, "optimized": time.perf_counter() - started, "lines": lines,
                  "dof": len(sim.speed_names)}))
'''
COLUMNS = ("robot", "DoF", "derive [s]", "generate [s]", "compile [s]", "total [s]", "optimized [s]", "O2 first [s]",
           "C [MB]", "MuJoCo load [ms]")


def humanoids() -> list[tuple[str, str, dict]]:
    """(name, URDF path, Simulator options) of the humanoids found installed."""
    found = []
    try:
        from pinocchio_reference import example_robot_data_dir

        erd = example_robot_data_dir()
        found += [("G1", str(erd / "g1_description/urdf/g1_29dof_rev_1_0.urdf"), {"floating_base": True}),
                  ("Talos full", str(erd / "talos_data/robots/talos_full_v2.urdf"), {"floating_base": True})]
    except ImportError:
        pass
    try:
        import jvrc_description

        found.append(("JVRC-1", str(Path(jvrc_description.__path__[0]) / "urdf" / "jvrc1.urdf"), {"floating_base": True}))
    except ImportError:
        pass
    try:
        import icub_models

        found.append(("iCub", str(icub_models.get_model_file("iCubGazeboV2_7")), {"floating_base": True}))
    except ImportError:
        pass
    return [(name, path, options) for name, path, options in found if Path(path).exists()]


def stages(lines: list[tuple[float, str]]) -> dict[str, float]:
    """Derive, generate and compile seconds and the C's size from a load's progress lines."""
    at = lambda pattern: next((t for t, line in lines if re.search(pattern, line)), None)  # noqa: E731
    derived, generating, compiling = at(r": done$"), at(r"^generating C"), at(r"^compiling ")
    compiled = next((float(m[1]) for _, line in lines if (m := re.search(r"^compiled .* \(([\d.]+) s\)", line))), None)
    size = next((float(m[1]) for _, line in lines if (m := re.search(r"\(([\d.]+) MB of C", line))), None)
    first = lines[0][0] if lines else 0.0
    return {"derive": derived - first if derived else None,
            "generate": compiling - generating if compiling and generating else None,
            "compile": compiled, "c_mb": size}


def mujoco_load(path: str) -> float | None:
    """Best of 3 wall seconds of MuJoCo compiling the URDF without its visuals and collisions."""
    try:
        import mujoco
    except ImportError:
        return None
    text = re.sub(r"<(visual|collision)\b.*?</\1\s*>", "", Path(path).read_text(), flags=re.S)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        mujoco.MjModel.from_xml_string(text)
        times.append(time.perf_counter() - t)
    return min(times)


def child(path: str, options: dict, first_build: str) -> dict | str:
    """The child's result with an empty cache, or the last line of its error."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "MB_SIM_CACHE_DIR": cache, "MB_SIM_FIRST_BUILD": first_build}
        done = subprocess.run([sys.executable, "-c", CHILD, path, json.dumps(options)], env=env,
                              capture_output=True, text=True)
    if done.returncode != 0:
        return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:80]
    return json.loads(done.stdout.strip().splitlines()[-1])


def cold_load(name: str, path: str, options: dict) -> list[str]:
    """One robot's row (a fresh process and an empty cache for each of the two first builds)."""
    result, waited = child(path, options, "quick"), child(path, options, "optimized")
    if isinstance(result, str):
        return [name, "-", result, *[""] * (len(COLUMNS) - 3)]
    s = stages(result["lines"])
    mj = mujoco_load(path)
    fmt = lambda v, f="{:.1f}": "-" if v is None else f.format(v)  # noqa: E731
    return [name, str(result["dof"]), fmt(s["derive"]), fmt(s["generate"]), fmt(s["compile"]),
            fmt(result["total"]), fmt(result["optimized"]), waited if isinstance(waited, str) else fmt(waited["total"]),
            fmt(s["c_mb"], "{:.2f}"), fmt(None if mj is None else mj * 1e3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="chains of 8 to 32 links and G1")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args()
    started, report = time.monotonic(), {"machine": machine()}
    sizes = (8, 16, 24, 32) if args.quick else (8, 12, 16, 24, 32, 48, 64)
    with tempfile.TemporaryDirectory() as scratch:
        robots = []
        for n in sizes:
            chain = Path(scratch) / f"chain{n}.urdf"
            chain.write_text(chain_urdf(n))
            robots.append((f"chain{n}", str(chain), {}))
        robots += humanoids()[:1 if args.quick else None]
        print("| " + " | ".join(COLUMNS) + " |", flush=True)
        rows = []
        for name, path, options in robots:
            rows.append(cold_load(name, path, options))
            print("| " + " | ".join(rows[-1]) + " |", flush=True)
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report["wall_seconds"] = time.monotonic() - started
    lines = [machine_line(report), "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
             *("| " + " | ".join(row) + " |" for row in rows)]
    print(lines[0])
    if args.markdown:
        args.markdown.write_text("# Cold start: a robot's first load\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
