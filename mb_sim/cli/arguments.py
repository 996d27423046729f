"""What the ``mb-sim`` sub-commands share: the one-line error, the robot argument and its loading,
argument types that check numbers and paths while the command line is read (never ``eval``)."""
from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from mb_sim.model import Robot

__all__ = ["CommandError", "Parser", "add_backend", "add_robot", "assignment", "count", "culprit", "load_robot", "note",
           "number", "output_path", "positive", "state_assignment", "user_errors", "xacro_arg", "xacro_arguments"]


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 1."""


@contextmanager
def culprit(name: str | None = None) -> Iterator[None]:
    """Turn the library's errors about bad input into a CommandError naming `name`."""
    from mb_sim.codegen import CodegenError
    from mb_sim.sim import SimulationError
    from mb_sim.urdf import URDFError

    try:
        yield
    except (URDFError, SimulationError, CodegenError, ValueError, OSError) as err:
        raise CommandError(f"{name}: {err}" if name else str(err)) from None


def user_errors(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`command` with the library's errors about bad input reported as CommandErrors."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        with culprit():
            return command(args)
    return run


def note(line: str) -> None:
    """A progress line on stderr, so stdout keeps only the results."""
    print(line, file=sys.stderr, flush=True)


def robot_from_args(args: argparse.Namespace) -> Robot:
    """The robot the options of :func:`add_robot` name (see :func:`load_robot`)."""
    return load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground, args.objects,
                      args.wrench_links)


def load_robot(robot: str, strict: bool = False, floating_base: bool = False,
                xacro_args: list[tuple[str, str]] | None = None, ground: bool = False,
                objects: list[str] | None = None, wrench_links: list[str] | None = None) -> Robot:
    """The robot model of a URDF (or xacro, expanded with `xacro_args`) path or shipped robot name, or
    CommandError.  Repairs the loader made are summed up in one line on stderr (``info`` lists
    them); `strict` refuses them.  `ground` adds the plane z = 0 where the file has no ``<ground>``;
    `objects` (``--object`` texts: :func:`mb_sim.urdf.scene.parse_object`) make it a scene;
    `wrench_links` take pushes (their wrench components are inputs)."""
    from mb_sim.model import load_urdf
    from mb_sim.resources import robot_path
    from mb_sim.urdf import RepairWarning, URDFError
    from mb_sim.urdf.scene import compose_scene, parse_object

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RepairWarning)  # listed by robot.repairs instead
            source = robot_path(robot)
            if objects:
                source = compose_scene(source, [parse_object(text) for text in objects], floating_base)
                floating_base = False
            model = load_urdf(source, strict=strict, floating_base=floating_base,
                              xacro_args=xacro_arguments(xacro_args), ground=ground, wrench_links=wrench_links or ())
    except (URDFError, FileNotFoundError) as err:
        raise CommandError(str(err)) from None
    if model.repairs:
        note(f"mb-sim: {model.name}: {len(model.repairs)} repair(s) made while loading "
              f"(listed by 'mb-sim info'; --strict refuses them)")
    return model


def number(text: str) -> float:
    """A finite number (``float()``, never ``eval``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def positive(text: str) -> float:
    """A positive finite number (durations, time steps)."""
    value = number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def count(text: str) -> int:
    """A whole number of at least one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def assignment(text: str) -> tuple[str, float]:
    """``JOINT=VALUE`` as (name, number)."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected JOINT=VALUE, got {text!r}")
    try:
        return name.strip(), number(value)
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{name.strip()}: {err}") from None


def state_assignment(text: str) -> tuple[str, float]:
    """``JOINT=VALUE`` for a position or speed: a number no robot has (beyond the simulator's
    STATE_MAGNITUDE) is refused while the arguments are read, before the model is built."""
    from mb_sim.sim.state import STATE_MAGNITUDE

    name, value = assignment(text)
    if abs(value) > STATE_MAGNITUDE:
        raise argparse.ArgumentTypeError(f"{name}: {value:g} is beyond {STATE_MAGNITUDE:g} (rad or m, rad/s or m/s): "
                                         "no robot's")
    return name, value


def output_path(text: str) -> Path:
    """A file to write, checked before the run: not a directory, in an existing writable directory."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: it is a directory")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: no directory {str(path.parent)!r}")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: permission denied")
    return path


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line ``mb-sim: ...`` (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mb-sim: {message} (see '{self.prog} --help')\n")


def xacro_arg(text: str) -> tuple[str, str]:
    """``NAME:=VALUE`` of --xacro-arg, as xacro's command line takes it (the value as it is)."""
    from mb_sim.urdf.xacro_expansion import is_argument_name

    name, separator, value = text.partition(":=")
    if not separator or not is_argument_name(name):
        raise argparse.ArgumentTypeError(f"--xacro-arg {text!r} is not NAME:=VALUE (e.g. prefix:=left_)")
    return name, value


def xacro_arguments(pairs: list[tuple[str, str]] | None) -> dict[str, str]:
    """The --xacro-arg pairs as a mapping; a name given twice is refused."""
    arguments: dict[str, str] = {}
    for name, value in pairs or []:
        if name in arguments:
            raise CommandError(f"--xacro-arg: {name!r} is given twice")
        arguments[name] = value
    return arguments


def add_robot(parser: argparse.ArgumentParser) -> None:
    """The positional ROBOT argument, --xacro-arg, --strict, --floating-base, --ground, --wrench-link
    and --object."""
    parser.add_argument("robot", metavar="ROBOT",
                        help="URDF or xacro file, or the name of a URDF shipped with mb_sim (e.g. arm6)")
    parser.add_argument("--xacro-arg", dest="xacro_args", type=xacro_arg, action="append", metavar="NAME:=VALUE",
                        help="a xacro argument of a .xacro ROBOT, as xacro's NAME:=VALUE (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse what the loader would repair (inertias, a mimic on a fixed joint) instead")
    parser.add_argument("--floating-base", action="store_true",
                        help="join the root link to the world by a floating joint (6 DoF) instead of fixing it "
                             "(a root link named 'world' is the world itself)")
    parser.add_argument("--ground", action="store_true",
                        help="add the ground plane z = 0 (default contact parameters) where the URDF has no "
                             "<mb_sim><ground>: the moving links' <collision> shapes touch it")
    parser.add_argument("--wrench-link", dest="wrench_links", action="append", metavar="LINK",
                        help="a link that takes pushes (repeatable): its force and torque components become inputs "
                             "(<mb_sim><external_wrench link>), e.g. for linearize --inputs wrench")
    parser.add_argument("--object", dest="objects", action="append", metavar="KEY=VALUE ...",
                        help="an object beside the robot (repeatable), e.g. 'name=cube shape=box size=0.1,0.1,0.1 "
                             "mass=1 xyz=0.5,0,0.05' or 'name=cup urdf=cup.urdf xyz=0.4,0,0.8' (keys: name shape "
                             "size mass xyz rpy urdf fixed friction rgba); it touches the robot, the others and "
                             "the ground")


def add_backend(parser: argparse.ArgumentParser) -> None:
    """The --backend option."""
    parser.add_argument("--backend", choices=("c", "numpy"), default="c",
                        help="compiled C (default; cached) or NumPy (no compiler needed)")
