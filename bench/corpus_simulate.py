"""Survey: do third-party URDFs that load also simulate?  Each runs 10 s at the defaults, gravity only.

Sources: example-robot-data (the installed wheel), pybullet's ``pybullet_data`` and robotics-
toolbox's ``rtbdata`` (unzipped wheels; ``.xacro`` files are not expanded, ``random_urdfs/`` --
1000 generated one-link objects -- is left out unless ``--random-urdfs``).  Every URDF is loaded
as a user would (``Simulator(path)``: default dt, integrator, runaway checks; a root that is not
``world`` stays fixed), in its own process under a time limit, with a shared compile cache.  It
then runs ``duration`` s with zero inputs and nothing but gravity, in 0.1 s calls, and records:

* loads?  (the one-line error if not), runs 10 s?  (the SimulationError line if not);
* the energy balance: ``E`` of :meth:`RunawayWatch.energy` (kinetic, gravity, springs, joint
  stops' stored energy, motors) at the end minus at the start, against its scale (the larger of
  ``|E0|`` and the largest kinetic energy seen): more than 1e-3 of it is an energy gain;
* wall times of the load (parse, derive, compile) and of the run.

More folders come with ``--urdfs NAME=DIR``: rtb-data's robots are mostly ``.xacro``, which the
``xacro`` package (PyPI, in a throwaway venv) expands once ``$(find pkg)`` is replaced by the
package's folder inside ``rtbdata/xacro``.

Prints a markdown table and ``N of M that load run 10 s`` (``--json FILE`` writes the rows).
Run: ``.venv/bin/python bench/corpus_simulate.py --pybullet-data DIR --rtb-data DIR [--jobs 2]``
(DIR: the folder holding ``pybullet_data`` / ``rtbdata``, or that folder itself).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENERGY_TOLERANCE = 1e-3
JOINT_DOF = {"revolute": 1, "continuous": 1, "prismatic": 1, "planar": 3, "floating": 6}


def first_line(error: BaseException) -> str:
    """The error's first line, prefixed by its type."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def xml_dof(path: Path) -> int | None:
    """DoF counted from the XML (no SymPy), None when the XML does not parse."""
    try:
        root = ET.fromstring(path.read_text(errors="replace").lstrip())
    except ET.ParseError:
        return None
    return sum(JOINT_DOF.get(joint.get("type"), 0) for joint in root.iter("joint"))


def simulate_one(path: str, cache_dir: str, duration: float) -> dict:
    """Load `path` and run it `duration` s at the defaults (in this process); the survey row."""
    from mb_sim.sim import SimulationError, Simulator

    row: dict = {"warnings": []}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sim = Simulator(path, cache_dir=cache_dir)
        except Exception as err:  # noqa: BLE001 -- the survey records every refusal
            return row | {"loads": False, "error": first_line(err), "load_s": time.perf_counter() - start,
                          "warnings": sorted({first_line(w.message)[:160] for w in caught})}
        row["load_s"] = time.perf_counter() - start
        row.update(loads=True, dof=len(sim.u))
        energy0, kinetic_peak = sim.runaway.energy(sim.time)
        row["energy0"] = energy0
        row["stored0"] = energy0 - sim.outputs(False).energy  # in the joint stops: q(0) beyond the limits
        start = time.perf_counter()
        try:
            while sim.time < duration - 1e-9:
                sim.advance(0.1)
                energy, kinetic = sim.runaway.energy(sim.time)
                kinetic_peak = max(kinetic_peak, kinetic)
            row["runs"] = True
        except SimulationError as err:
            row.update(runs=False, error=first_line(err))
        except Exception as err:  # noqa: BLE001 -- anything else is a crash worth a row
            row.update(runs=False, error="CRASH " + first_line(err))
        row["run_s"] = time.perf_counter() - start
        row["time"] = sim.time
        energy, _ = sim.runaway.energy(sim.time)
        scale = max(abs(energy0), kinetic_peak)
        row.update(energy=energy, gain=energy - energy0, scale=scale,
                   energy_gain=energy - energy0 > ENERGY_TOLERANCE * scale + 1e-9)
        row["warnings"] = sorted({first_line(w.message)[:160] for w in caught})
    return row


def run_isolated(path: Path, cache_dir: str, duration: float, timeout: float) -> dict:
    """`simulate_one` in a fresh interpreter under `timeout` s (cold compiles can take minutes)."""
    command = [sys.executable, __file__, "--one", str(path), "--cache", cache_dir, "--duration", str(duration)]
    began = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"loads": None, "error": f"timeout after {timeout:.0f} s", "load_s": time.perf_counter() - began}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"loads": None, "error": f"process died ({done.returncode}): {tail[:200]}"}
    return json.loads(lines[-1])


def example_robot_data() -> Path | None:
    """The robots folder of the installed example-robot-data wheel, None without it."""
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        return Path(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))
    except PackageNotFoundError:
        return None


def corpus(pybullet_data: str | None, rtb_data: str | None, random_urdfs: bool,
           extra: list[str] = ()) -> list[tuple[str, Path, Path]]:
    """``(source, root, path)`` of every URDF surveyed; `extra`: ``NAME=DIR`` folders of more URDFs."""
    sources = [tuple(item.split("=", 1)) for item in extra]
    if (root := example_robot_data()) is not None:
        sources.append(("erd", root))
    for name, given, sub in (("pybullet", pybullet_data, "pybullet_data"), ("rtb", rtb_data, "rtbdata")):
        if given:
            folder = Path(given)
            sources.append((name, folder / sub if (folder / sub).is_dir() else folder))
    files = []
    for name, root in sources:
        root = Path(root)
        for path in sorted(root.rglob("*.urdf")):
            if not random_urdfs and "random_urdfs" in path.relative_to(root).parts:
                continue
            files.append((name, root, path))
    return files


def outcome(row: dict) -> str:
    """One word for the table: refused, timeout, fails, energy-gain, ok, skipped (``ok*``: ran, but
    started beyond its joint limits with energy stored in the stops)."""
    if row.get("skipped"):
        return "skipped"
    if not row.get("loads"):
        return "timeout" if "timeout" in row.get("error", "") else "refused"
    if not row.get("runs"):
        return "fails"
    if row.get("energy_gain"):
        return "energy-gain"
    return "ok*" if row.get("stored0", 0.0) > 1e-9 else "ok"


def print_table(rows: list[dict]) -> None:
    """The markdown table and the summary lines."""
    print("| source | robot | DoF | outcome | load s | run s | E0 J | in stops J | dE J | scale J | error / note |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        e = lambda key: f"{r[key]:.3g}" if isinstance(r.get(key), (int, float)) else ""  # noqa: E731
        print(f"| {r['source']} | {r['robot']} | {r.get('dof', r.get('xml_dof', ''))} | {outcome(r)} | {e('load_s')} "
              f"| {e('run_s')} | {e('energy0')} | {e('stored0')} | {e('gain')} | {e('scale')} | {r.get('error', '')[:300]} |")
    print()
    for source in sorted({r["source"] for r in rows}) + ["all"]:
        part = [r for r in rows if source in ("all", r["source"])]
        counts = {k: sum(outcome(r) == k for r in part) for k in ("ok", "ok*", "energy-gain", "fails", "refused",
                                                                     "timeout", "skipped")}
        loaded = counts["ok"] + counts["ok*"] + counts["energy-gain"] + counts["fails"]
        print(f"{source}: {counts['ok'] + counts['ok*']} of {loaded} that load run 10 s with no energy gain, "
              f"{counts['ok*']} of them from beyond their joint limits "
              f"({len(part)} files: {', '.join(f'{k} {v}' for k, v in counts.items() if v)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pybullet-data"), parser.add_argument("--rtb-data")
    parser.add_argument("--random-urdfs", action="store_true", help="include pybullet_data/random_urdfs (1000 objects)")
    parser.add_argument("--urdfs", action="append", default=[], metavar="NAME=DIR",
                        help="more URDFs (e.g. rtb-data's .xacro files expanded by the xacro package)")
    parser.add_argument("--cache", default="/tmp/w/survey-cache", help="compile cache shared by the robots")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=600.0, help="per robot: load, compile and run [s]")
    parser.add_argument("--max-dof", type=int, default=40, help="skip robots above this many DoF (XML count)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", help="a substring of the paths to survey")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(simulate_one(args.one, args.cache, args.duration)))
        return
    files = [f for f in corpus(args.pybullet_data, args.rtb_data, args.random_urdfs, args.urdfs)
             if args.only is None or args.only in str(f[2])]

    def survey(item: tuple[str, Path, Path]) -> dict:
        source, root, path = item
        base = {"source": source, "robot": path.relative_to(root).as_posix(), "xml_dof": xml_dof(path)}
        if base["xml_dof"] is not None and base["xml_dof"] > args.max_dof:
            return base | {"skipped": True, "error": f"skipped: {base['xml_dof']} DoF > --max-dof {args.max_dof}"}
        row = base | run_isolated(path, args.cache, args.duration, args.timeout)
        print(f"{source} {base['robot']}: {outcome(row)} {row.get('error', '')[:200]}", file=sys.stderr, flush=True)
        return row

    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(survey, files))
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
