"""The ``mb-sim`` command line: inspect robots and the installation without ROS running."""
from __future__ import annotations

import argparse
import importlib
import platform
import shutil
import sys

from mb_sim import __version__

__all__ = ["main"]


def _doctor(_args: argparse.Namespace) -> int:
    """Report what this installation can do: ROS 2 messages, C compiler, Python."""
    checks = {
        "python": (True, platform.python_version()),
        "C compiler": (shutil.which("cc") is not None, shutil.which("cc") or "not found"),
    }
    for module in ("rclpy", "tf2_msgs.msg", "sensor_msgs.msg", "sympy", "numpy", "scipy", "urdf_parser_py.urdf"):
        try:
            mod = importlib.import_module(module)
            checks[module] = (True, getattr(mod, "__version__", "ok"))
        except ImportError as err:
            checks[module] = (False, str(err))
    for name, (ok, detail) in checks.items():
        print(f"{'ok ' if ok else 'MISSING'} {name:22s} {detail}")
    return 0 if all(ok for ok, _ in checks.values()) else 1


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 1."""


def _load_robot(robot: str):
    """The robot model of a URDF path or shipped robot name, or CommandError."""
    from mb_sim.model import load_urdf
    from mb_sim.resources import robot_path
    from mb_sim.urdf import URDFError

    try:
        return load_urdf(robot_path(robot))
    except (URDFError, FileNotFoundError) as err:
        raise CommandError(str(err)) from None


def _describe(args: argparse.Namespace) -> int:
    """Print the component tree of a robot with every symbol's description and value."""
    print(_load_robot(args.robot).describe())
    return 0


def _eom(args: argparse.Namespace) -> int:
    """Derive and print the equations of motion (pretty text or LaTeX)."""
    from mb_sim.symbolic import derive_equations
    from mb_sim.symbolic.printing import format_equations

    progress = (lambda line: print(line, file=sys.stderr)) if not args.quiet else None
    eom = derive_equations(_load_robot(args.robot), progress=progress)
    print(format_equations(eom, style=args.format))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per task."""
    parser = argparse.ArgumentParser(prog="mb-sim", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mb-sim {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = commands.add_parser("doctor", help="check what this installation can do")
    doctor.set_defaults(run=_doctor)
    describe = commands.add_parser("describe", help="print a robot's component tree and symbols")
    describe.add_argument("robot", help="URDF file, or the name of a URDF shipped with mb_sim (e.g. arm6)")
    describe.set_defaults(run=_describe)
    eom = commands.add_parser("eom", help="derive and print a robot's equations of motion")
    eom.add_argument("robot", help="URDF file, or the name of a URDF shipped with mb_sim")
    eom.add_argument("--format", choices=("pretty", "latex"), default="pretty", help="output style")
    eom.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    eom.set_defaults(run=_eom)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mb-sim``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except CommandError as err:
        print(f"mb-sim: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
