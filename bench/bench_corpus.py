"""Benchmark: every example-robot-data URDF, cold (derive + generate + compile into an empty cache),
and forward dynamics per call against Pinocchio's ``aba`` in the same process.

Each robot runs in its own process (a fresh interpreter, an empty temporary cache) under a time
limit; a robot over the limit is recorded as ``timeout``.  Robots are loaded as the corpus test
compares them (``test/test_robot_corpus.py``: a floating base for mobile robots).  Prints a markdown
table: robot | DoF | floating | loads/refused (reason) | repairs (count) | cold s | fd us | aba us | ratio;
progress (URDF load time, compiler memory) goes to stderr.  Nothing is asserted.

Run: ``nice .venv/bin/python bench/bench_corpus.py [--timeout 300] [--max-dof N] [--quick]``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import timeit
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "test"))
os.environ.setdefault("MB_SIM_FIRST_BUILD", "optimized")  # cold: the optimized build, as timed before

from pinocchio_reference import coordinates_inside_limits, pinocchio_configuration, velocity_map  # noqa: E402
from test_robot_corpus import (  # noqa: E402
    DEFAULT_MAX_DOF, FILES, REFUSED, corpus_dof, corpus_xml, is_mobile, load_corpus_robot,
    pinocchio_model,
)

HEADER = ("| robot | DoF | floating | loads/refused (reason) | repairs (count) | cold s | fd us | aba us | ratio |\n"
          "|---|---:|---|---|---:|---:|---:|---:|---:|")


def best_time(function, number: int) -> float:
    """Best of 5 repeats, per call, in seconds."""
    return min(timeit.repeat(function, number=number, repeat=5)) / number


def measure(path: str, calls: int) -> dict:
    """One robot, in this process: load, cold derive + compile, per-call fd and aba times."""
    import numpy as np
    import pinocchio as pin

    from mb_sim import URDFError
    from mb_sim.codegen import load_numeric_model

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            robot = load_corpus_robot(path)
        except URDFError as err:
            return {"refused": str(err).split(": ", 1)[-1]}
    loaded = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        compiled = load_numeric_model(robot, cache_dir=cache)
        cold = time.perf_counter() - start
    model = pinocchio_model(corpus_xml(path))
    data = model.createData()
    rng = np.random.default_rng(0)
    q = coordinates_inside_limits(robot, rng)
    q_pin = pinocchio_configuration(robot, model, q)
    v = rng.normal(size=model.nv) * 0.1
    tau = np.zeros(model.nv)
    G, _ = velocity_map(robot, model, q, v)
    b = compiled.buffers
    b.q[:], b.u[:], b.inputs[:] = q, G @ v, 0.0
    fd = best_time(compiled.forward_dynamics_into, calls)
    aba = best_time(lambda: pin.aba(model, data, q_pin, v, tau), calls)
    compiler_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"dof": compiled.n_u, "repairs": len(robot.repairs), "load": loaded, "cold": cold, "fd": fd, "aba": aba,
            "compiler_mb": compiler_mb}


def run_isolated(path: str, timeout: float, calls: int) -> dict:
    """`measure` in a child process (own session, so the compiler dies with it on timeout)."""
    command = [sys.executable, __file__, "--child", path, "--calls", str(calls)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return {"timeout": timeout}
    if child.returncode != 0:
        return {"error": f"exit status {child.returncode}"}
    return json.loads(out.strip().splitlines()[-1])


def row(path: str, result: dict) -> str:
    """One markdown row of `result`."""
    dof, floating = corpus_dof(path), "yes" if is_mobile(path) else "no"
    if "refused" in result:
        reason = REFUSED[path][0] if path in REFUSED else f"NOT LISTED in the test: {result['refused']}"
        return f"| {path} | {dof} | {floating} | refused ({reason}) | | | | | |"
    if "skipped" in result:
        return f"| {path} | {dof} | {floating} | not run | | {result['skipped']} | | | |"
    if "dof" not in result:
        status = f"timeout ({result['timeout']:.0f} s)" if "timeout" in result else result["error"]
        return f"| {path} | {dof} | {floating} | loads | | {status} | | | |"
    r = result
    return (f"| {path} | {r['dof']} | {floating} | loads | {r['repairs']} | {r['cold']:.1f} | {r['fd'] * 1e6:.2f} "
            f"| {r['aba'] * 1e6:.2f} | {r['fd'] / r['aba']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per robot (default 300)")
    parser.add_argument("--max-dof", type=int, default=None, help="only robots with at most this many DoF")
    parser.add_argument("--quick", action="store_true",
                        help=f"the corpus test's default set only (DoF <= {DEFAULT_MAX_DOF}), short timing loops")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=20000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.calls)))
        return
    max_dof = args.max_dof if args.max_dof is not None else DEFAULT_MAX_DOF if args.quick else None
    calls = 2000 if args.quick else args.calls
    print(HEADER, flush=True)
    for path in FILES:
        if max_dof is not None and corpus_dof(path) > max_dof:
            result = {"skipped": f"skipped (DoF > {max_dof})"}
        else:
            result = run_isolated(path, args.timeout, calls)
        print(row(path, result), flush=True)
        details = {k: f"{v * 1e6:.2f} us" if k in ("fd", "aba") else round(v, 2) if isinstance(v, float) else v
                   for k, v in result.items()}
        print(f"{path}: {details}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
