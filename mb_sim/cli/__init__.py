"""The ``mb-sim`` command line: inspect, derive and simulate robots without ROS running.

One module per group of sub-commands (:mod:`~mb_sim.cli.inspection`, :mod:`~mb_sim.cli.simulate`,
:mod:`~mb_sim.cli.linear`, :mod:`~mb_sim.cli.sweep`) over what they share
(:mod:`~mb_sim.cli.arguments`); this module builds the parser and runs a command.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import TextIO

from mb_sim import __version__
from mb_sim.cli.arguments import CommandError, Parser
from mb_sim.cli.identify import add_excite, add_identify
from mb_sim.cli.inspection import add_inspection
from mb_sim.cli.linear import add_export_c, add_linear
from mb_sim.cli.simulate import ProgressBar, add_replay, add_simulate
from mb_sim.cli.sweep import add_sweep

__all__ = ["main", "build_parser", "CommandError", "ProgressBar"]

#: The progress bar under its former name (tests and scripts imported it from here).
_ProgressBar = ProgressBar


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per task."""
    parser = Parser(prog="mb-sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"mb-sim {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_inspection(commands)
    add_simulate(commands)
    add_replay(commands)
    add_linear(commands)
    add_export_c(commands)
    add_sweep(commands)
    add_identify(commands)
    add_excite(commands)
    return parser


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """A warning as one line ``mb-sim: warning: ...`` on stderr (no source file and line)."""
    print(f"mb-sim: warning: {message}", file=file or sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mb-sim``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    with warnings.catch_warnings():  # the library's warnings (cache, URDF, effort limits) as one line each
        warnings.showwarning = _show_warning
        try:
            return args.run(args)
        except CommandError as err:
            print(f"mb-sim: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("mb-sim: interrupted", file=sys.stderr)
            return 130
