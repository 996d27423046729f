"""Benchmark: identifying arm6 from a 60 s recording at 1 kHz (issue 40's goal: under 10 s on 2 cores).

The recording is made first (not timed): arm6 run forward with RK4 at 1 ms, tracking an excitation
designed for it under a computed-torque plus PD controller, every applied effort recorded
(test/identify_recordings.py).  Then ``mb-sim identify`` runs in a fresh process, three times, and
its wall time is reported with the stages from its progress lines (imports and loading, the
symbolic regressor, reading the MCAP, filtering and the regressor at every sample, the fits).
Beside it, Pinocchio's ``computeJointTorqueRegressor`` at the same 60,000 samples (one call per
sample from Python, as a user of Pinocchio would write the loop), so the regressor's cost has a peer.

Run: ``.venv/bin/python -W ignore bench/bench_identify.py [--markdown PATH]`` (``make bench`` writes
bench/results/identify.md).  Prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_report import machine, machine_line

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "test"))
ARM6 = REPO / "urdf" / "arm6.urdf"
MB_SIM = Path(sys.executable).parent / "mb-sim"


def timed_run(recording: Path) -> tuple[float, list[tuple[float, str]], str]:
    """Wall time of ``mb-sim identify`` in a fresh process, its progress lines with arrival times, its stdout."""
    start = time.perf_counter()
    process = subprocess.Popen([str(MB_SIM), "identify", str(ARM6), str(recording)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines = [(time.perf_counter() - start, line.strip()) for line in process.stderr]
    out = process.stdout.read()
    process.wait()
    return time.perf_counter() - start, lines, out


def pinocchio_regressor_time(recording: Path) -> tuple[float, float]:
    """Seconds for Pinocchio's regressor at every sample, and mb_sim's vectorized one (same process)."""
    import pinocchio as pin

    from mb_sim.identify.regressor import NumericRegressor
    from mb_sim.identify.signals import differentiate, read_joint_states
    from mb_sim.model import load_urdf

    model = pin.buildModelFromUrdf(str(ARM6))
    data = model.createData()
    regressor = NumericRegressor(load_urdf(ARM6))
    signals = read_joint_states(recording)
    filtered = differentiate(signals.select(sorted(regressor.speed_of, key=regressor.speed_of.get)), 0.02)
    q, u, a = filtered.positions, filtered.velocities, filtered.accelerations
    start = time.perf_counter()
    for k in range(len(q)):
        pin.computeJointTorqueRegressor(model, data, q[k], u[k], a[k])
    peer = time.perf_counter() - start
    start = time.perf_counter()
    regressor(q, u, a)
    return peer, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args()
    from identify_recordings import simulated_recording

    report = {"machine": machine()}
    bench_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        recording = Path(directory) / "arm6_60s.mcap"
        started = time.perf_counter()
        simulated_recording(ARM6, recording, duration=60.0)
        print(f"recording made in {time.perf_counter() - started:.1f} s (not timed below)", flush=True)
        runs = [timed_run(recording) for _ in range(3)]
        peer, ours = pinocchio_regressor_time(recording)
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report["wall_seconds"] = time.perf_counter() - bench_start
    walls = [wall for wall, _, _ in runs]
    best = runs[int(np.argmin(walls))]
    stages, previous = [], 0.0
    for at, line in best[1]:
        stages.append((at - previous, line))
        previous = at
    rows = [f"| mb-sim identify, arm6, 60 s at 1 kHz (fresh process) | {min(walls):.2f} s (runs: "
            + ", ".join(f"{w:.2f}" for w in walls) + ") |",
            f"| regressor at 60,000 samples: mb_sim (vectorized) | {ours:.3f} s |",
            f"| regressor at 60,000 samples: Pinocchio computeJointTorqueRegressor, a loop in Python | {peer:.3f} s |"]
    table = "\n".join(["| what | time |", "|---|---|", *rows])
    stage_lines = "\n".join(f"- {seconds:6.2f} s until: {line}" for seconds, line in stages)
    text = (f"# Identification: arm6 from a 60 s recording at 1 kHz\n\n{machine_line(report)}\n\n{table}\n\n"
            f"Stages of the fastest run (time since the previous progress line):\n\n{stage_lines}\n\n"
            f"First lines of its report:\n\n```text\n" + "\n".join(best[2].splitlines()[:3]) + "\n```\n")
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
