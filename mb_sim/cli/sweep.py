"""``mb-sim sweep FILE``: run the sweep a YAML or JSON file describes (:func:`mb_sim.sweep.load_sweep`),
write its table, trajectories and a plot; ``--replay N`` runs one sample alone."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mb_sim.cli.arguments import CommandError, count, output_path

__all__ = ["add_sweep"]


def add_sweep(commands: argparse._SubParsersAction) -> None:
    """The ``sweep`` sub-command."""
    sweep = commands.add_parser(
        "sweep", help="run many simulations of a robot from a YAML or JSON description, in parallel",
        description="Run every sample a sweep description gives (parameters, initial states, commands, "
                    "constraint switches; fixed, drawn with a seed per sample, or on a grid) on this machine's "
                    "cores or a Dask cluster; one row per sample (values, status, error, times, outputs).")
    sweep.add_argument("file", type=Path, metavar="FILE", help="the sweep description (.yaml, .yml or .json)")
    sweep.add_argument("--backend", choices=("local", "dask"), default="local",
                       help="local: a pool of processes on this machine (default); dask: a Dask cluster")
    sweep.add_argument("--workers", type=count, metavar="N",
                       help="worker processes (default: one per core; 1: run in this process)")
    sweep.add_argument("--address", metavar="tcp://HOST:PORT",
                       help="the Dask scheduler to join (with --backend dask; default: start a local cluster)")
    sweep.add_argument("--csv", type=output_path, metavar="FILE", help="write the table as CSV")
    sweep.add_argument("--jsonl", type=output_path, metavar="FILE", help="write the table as JSON lines")
    sweep.add_argument("--trajectories", type=output_path, metavar="FILE.mcap",
                       help="write the recorded trajectories (record_every > 0) as MCAP")
    sweep.add_argument("--plot", nargs=3, metavar=("X", "Y", "FILE.png"),
                       help="plot column Y against column X of the table")
    sweep.add_argument("--replay", type=int, metavar="N",
                       help="run sample N alone (from its recorded seed) and print its row as JSON")
    sweep.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    sweep.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run, write, summarize; a description or backend that cannot run is one line (CommandError)."""
    from mb_sim.sweep import SweepError, load_sweep, replay_sample, run_sweep

    try:
        spec = load_sweep(args.file)
        if args.replay is not None:
            result = replay_sample(spec, args.replay)
            print(json.dumps(result.row))
            return 0 if result.row["status"] == "ok" else 1
        results = run_sweep(spec, backend=args.backend, workers=args.workers, address=args.address,
                            trajectories=args.trajectories, progress=not args.quiet)
    except SweepError as err:
        raise CommandError(str(err)) from None
    if args.csv:
        results.to_csv(args.csv)
    if args.jsonl:
        results.to_jsonl(args.jsonl)
    if args.plot:
        x, y, path = args.plot
        if x not in results.columns or y not in results.columns:
            raise CommandError(f"--plot: no column {x if x not in results.columns else y!r} "
                               f"(columns: {', '.join(results.columns)})")
        results.plot(x, y, path)
    failed = results.failed
    print(f"{len(results)} samples, {len(failed)} failed, {results.wall_time:.2f} s wall, "
          f"{results.robot_seconds_per_second:.0f} robot-seconds per second")
    for row in failed[:5]:
        print(f"  sample {row['sample']} (seed {row['seed']}): {row['status']}: {row['error']}", file=sys.stderr)
    return 0
