"""The ``mb-sim`` command line: inspect, derive and simulate robots without ROS running."""
from __future__ import annotations

import argparse
import functools
import importlib
import math
import os
import platform
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from mb_sim import __version__

if TYPE_CHECKING:
    from mb_sim.model import Robot
    from mb_sim.sim import Simulator, Trajectory

__all__ = ["main", "build_parser", "CommandError"]

def _doctor(_args: argparse.Namespace) -> int:
    """Report what this installation can do: ROS 2 messages, C compiler, Python, recordings, plots."""
    checks = {
        "python": (True, platform.python_version()),
        "C compiler": (shutil.which("cc") is not None, shutil.which("cc") or "not found"),
    }
    for module in ("rclpy", "tf2_msgs.msg", "sensor_msgs.msg", "sympy", "numpy", "scipy", "urdf_parser_py.urdf",
                   "mcap_ros2.writer", "matplotlib"):
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


@contextmanager
def _culprit(name: str | None = None) -> Iterator[None]:
    """Turn the library's errors about bad input into a CommandError naming `name`."""
    from mb_sim.codegen import CodegenError
    from mb_sim.sim import SimulationError
    from mb_sim.urdf import URDFError

    try:
        yield
    except (URDFError, SimulationError, CodegenError, ValueError, OSError) as err:
        raise CommandError(f"{name}: {err}" if name else str(err)) from None


def _user_errors(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`command` with the library's errors about bad input reported as CommandErrors."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        with _culprit():
            return command(args)
    return run


def _note(line: str) -> None:
    """A progress line on stderr, so stdout keeps only the results."""
    print(line, file=sys.stderr, flush=True)


def _load_robot(robot: str, strict: bool = False, floating_base: bool = False,
                xacro_args: list[tuple[str, str]] | None = None, ground: bool = False) -> Robot:
    """The robot model of a URDF (or xacro, expanded with `xacro_args`) path or shipped robot name, or
    CommandError.  Repairs the loader made are summed up in one line on stderr (``info`` lists
    them); `strict` refuses them.  `ground` adds the plane z = 0 where the file has no ``<ground>``."""
    from mb_sim.model import load_urdf
    from mb_sim.resources import robot_path
    from mb_sim.urdf import RepairWarning, URDFError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RepairWarning)  # listed by robot.repairs instead
            model = load_urdf(robot_path(robot), strict=strict, floating_base=floating_base,
                              xacro_args=_xacro_args(xacro_args), ground=ground)
    except (URDFError, FileNotFoundError) as err:
        raise CommandError(str(err)) from None
    if model.repairs:
        _note(f"mb-sim: {model.name}: {len(model.repairs)} repair(s) made while loading "
              f"(listed by 'mb-sim info'; --strict refuses them)")
    return model


@_user_errors
def _describe(args: argparse.Namespace) -> int:
    """Print the component tree of a robot with every symbol's description and value."""
    print(_load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground).describe())
    return 0


@_user_errors
def _eom(args: argparse.Namespace) -> int:
    """Derive and print the equations of motion: a summary with M and F entry by entry (default),
    in terms of the temporaries (--temporaries), or every output in full (--full); text or LaTeX."""
    from mb_sim.symbolic import derive_equations
    from mb_sim.symbolic.printing import format_equations, format_summary

    progress = (lambda line: print(line, file=sys.stderr)) if not args.quiet else None
    eom = derive_equations(_load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground),
                           progress=progress)
    if args.full:
        print(format_equations(eom, style=args.format))
    else:
        print(format_summary(eom, style=args.format, temporaries=args.temporaries, progress=progress))
    return 0


@_user_errors
def _info(args: argparse.Namespace) -> int:
    """Print the component tree, the coordinates and speeds, the constraint analysis and the DoF."""
    from mb_sim.model import symbol_name
    from mb_sim.ros.constraint_services import constraint_service_names
    from mb_sim.symbolic import analyse_constraints
    from mb_sim.symbolic.derive import electrical_states

    robot = _load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground)
    print(robot.describe())
    if robot.repairs:
        print(f"\nRepairs made while loading ({len(robot.repairs)}; --strict refuses them):")
        for repair in robot.repairs:
            print(f"  {repair}")
    system, descriptions = robot.system, robot.descriptions
    states = [state for state, _, _ in electrical_states(robot)]
    for title, symbols in (("Coordinates", system.q), ("Speeds", system.u), ("Electrical states", states)):
        if not symbols:
            continue
        print(f"\n{title}:")
        for symbol in symbols:
            print(f"  {symbol_name(symbol)}: {descriptions.get(symbol, '')}")
    # The constraint analysis alone (no Kane's equations): what it keeps, drops and names.
    constraints = analyse_constraints(robot)
    analysis = constraints.analysis
    print(f"\nConstraints: {analysis.kept} of {analysis.conditions} kept")
    for line in constraints.report:
        print(f"  {line}")
    for name, service in constraint_service_names(list(dict.fromkeys(constraints.names))).items():
        flags = [on for n, on in zip(constraints.names, constraints.independent) if n == name]
        rows, redundant = sum(flags), len(flags) - sum(flags)
        extra = f" (+{redundant} redundant where assembled)" if redundant else ""
        print(f"  {name}: {rows} equation{'s' if rows != 1 else ''}{extra}; switch with --disable {name} or {service}")
    print(f"Degrees of freedom: {analysis.closed_loop_dof} ({analysis.open_loop_dof} speeds of the open tree - "
          f"{analysis.kept} independent constraints)")
    if constraints.dependent_coordinates:
        names = [symbol_name(system.q[k]) for k in constraints.dependent_coordinates]
        print(f"Dependent coordinates (solved from the others): {', '.join(names)}")
    for line in _contact_report(robot):
        print(line)
    return 0


def _contact_report(robot: Robot) -> list[str]:
    """For a robot with a ground: the plane and its contact parameters with their values, every
    ``<collision>`` a contact uses (link, index, shape, size, contact points) and every one skipped
    with the reason (so a foot that never touches the ground can be told from one not read)."""
    from mb_sim.model import symbol_name

    lines: list[str] = []
    for name, ground in robot.grounds.items():
        plane = ground.ground_description
        normal = " ".join(f"{v:g}" for v in plane.normal)
        lines.append(f"\nGround '{name}': the plane n . x = {name}_height, n = ({normal}) (world axes)")
        defaults = {"stiffness": (plane.stiffness, " (default, from the robot's mass)"),
                    "damping": (plane.damping, " (default, from the robot's mass)"),
                    "stick_velocity": (plane.stick_velocity, " (default)")}
        for symbol, value in ground.parameter_values.items():
            given, note = defaults.get(symbol_name(symbol)[len(name) + 1:], (0.0, ""))
            origin = note if given is None else ""
            lines.append(f"  {symbol_name(symbol)} = {value:g}{origin}: {ground.descriptions.get(symbol, '')}")
        shapes = ground.shape_features()
        lines.append(f"  Collision shapes used ({len(shapes)}, {len(ground.features)} contact points):")
        for shape, features in shapes:
            lines.append(f"    {shape.label}: {_shape_size(shape)}: {len(features)} contact point(s)")
    if robot.grounds:
        skipped = robot.skipped_collisions
        lines.append(f"  Collision shapes skipped ({len(skipped)}){':' if skipped else ''}")
        lines += [f"    link '{s.link}' <collision {s.index}>: {s.reason}" for s in skipped]
    return lines


def _shape_size(shape) -> str:
    """A collision shape's kind and size in words (SI units)."""
    size = shape.size
    if shape.shape == "sphere":
        return f"sphere radius {size[0]:g} m"
    if shape.shape == "box":
        return f"box {size[0]:g} x {size[1]:g} x {size[2]:g} m"
    if shape.shape in ("cylinder", "capsule"):
        return f"{shape.shape} radius {size[0]:g} m length {size[1]:g} m"
    return f"mesh {shape.filename} scale {size[0]:g} {size[1]:g} {size[2]:g}"


@_user_errors
def _derive(args: argparse.Namespace) -> int:
    """Derive, generate and compile a robot's model into the cache; print timings and the library."""
    from mb_sim.codegen import load_numeric_model

    start = time.perf_counter()
    robot = _load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground)
    loaded = time.perf_counter()
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        _note(line)

    model = load_numeric_model(robot, args.backend, progress=progress)
    done = time.perf_counter()
    cached = " (from the cache)" if any("from the cache" in line for line in lines) else ""
    print(f"load: {loaded - start:.2f} s")
    print(f"derive + codegen + compile: {done - loaded:.2f} s{cached}")
    library = getattr(model, "library_path", None)
    print(f"library: {library}" if library is not None else "library: none (NumPy backend)")
    return 0


class _ProgressBar:
    """Simulation progress on stderr: one line redrawn in place on a terminal, else a line per quarter."""

    WIDTH = 30
    #: Minimum wall time between redraws on a terminal [s].
    REDRAW = 0.1

    def __init__(self, duration: float, stream: TextIO | None = None) -> None:
        self.duration, self.stream = duration, stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.start = time.perf_counter()
        self.drawn, self.quarters, self.open = 0.0, 0, False

    def update(self, fraction: float, sim_time: float) -> None:
        """Show that `fraction` of the run is done, at simulation time `sim_time`."""
        elapsed = time.perf_counter() - self.start
        if self.terminal:
            if fraction < 1.0 and elapsed - self.drawn < self.REDRAW:
                return
            self.drawn, self.open = elapsed, fraction < 1.0
            self.stream.write(f"\r{self._line(fraction, sim_time, elapsed)}" + ("" if self.open else "\n"))
        elif math.floor(4 * fraction) > self.quarters:
            self.quarters = math.floor(4 * fraction)
            self.stream.write(f"{self._line(fraction, sim_time, elapsed)}\n")
        self.stream.flush()

    def close(self) -> None:
        """End an unfinished terminal line, so what follows starts on its own line."""
        if self.open:
            self.stream.write("\n")
            self.open = False

    def _line(self, fraction: float, sim_time: float, elapsed: float) -> str:
        """The bar, the percentage, the simulation time and the wall time."""
        bar = "#" * round(self.WIDTH * fraction)
        return (f"simulating [{bar:<{self.WIDTH}}] {100 * fraction:5.1f} %  "
                f"t = {sim_time:.3f} / {self.duration:g} s  wall {elapsed:.1f} s")


def _check_names(robot: Robot, inputs: dict[str, float], initial: dict[str, float],
                 voltages: dict[str, float]) -> None:
    """Reject unknown joints in --input and --initial and unknown motors in --voltage before any
    code is generated."""
    from mb_sim.model import symbol_name

    actuated = [i.name for i in robot.collect_inputs("effort")]
    motors = {i.name: i.joint for i in robot.collect_inputs("voltage")}
    for name in inputs:
        if name not in actuated:
            problem = ("is driven by a motor: give its voltage with --voltage" if name in motors.values()
                       else "takes no effort" if name in robot.joints else "is unknown")
            raise CommandError(f"--input: joint {name!r} {problem} (actuated joints: {', '.join(actuated) or 'none'})")
    for name in voltages:
        if name not in motors:
            raise CommandError(f"--voltage: no motor {name!r} (motors: {', '.join(motors) or 'none'})")
    settable = [j.name for j in robot.joints.values() if len(j.q) == 1] + [symbol_name(q) for q in robot.system.q]
    for name in initial:
        if name not in settable:
            raise CommandError(f"--initial: unknown joint or coordinate {name!r} (known: {', '.join(settable)})")


@_user_errors
def _simulate(args: argparse.Namespace) -> int:
    """Simulate a robot under constant efforts and voltages, write what was asked and print a summary."""
    from mb_sim.sim import INTEGRATORS, AssemblyError, Simulator

    if args.integrator not in INTEGRATORS:
        raise CommandError(f"--integrator: unknown {args.integrator!r}; choose one of {', '.join(INTEGRATORS)}")
    robot = _load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground)
    inputs, initial, voltages = dict(args.input), dict(args.initial), dict(args.voltage)
    _check_names(robot, inputs, initial, voltages)
    # --initial is where the model is assembled from; with --disable the constraints released no
    # longer tie those values, so they are set once the constraints are (set_state keeps them)
    assembled = {} if args.disable else initial
    tolerances = {name: value for name, value in (("rtol", args.rtol), ("atol", args.atol)) if value is not None}
    try:
        sim = Simulator(robot, dt=args.dt, integrator=args.integrator, backend=args.backend, progress=_note,
                        default_effort_limit=args.default_effort_limit, initial_positions=assembled, **tolerances)
    except AssemblyError as err:
        raise CommandError(f"--initial: {err}" if assembled else str(err)) from None
    with _culprit("--disable"):
        for name in args.disable:
            sim.set_constraint_enabled(name, False)
    if args.disable:
        with _culprit("--initial"):
            sim.set_state(positions=initial)
    with _culprit("--input"):
        sim.set_efforts(inputs)
    with _culprit("--voltage"):
        sim.set_voltages(voltages)
    bar = _ProgressBar(args.duration)
    start = time.perf_counter()
    try:
        with _culprit("simulation failed"):
            trajectory = sim.simulate(args.duration, args.sample_every, progress=lambda f: bar.update(f, sim.time))
    finally:
        bar.close()
    wall = max(time.perf_counter() - start, 1e-9)
    energy = sim.outputs().energy
    _write_outputs(args, sim, trajectory)
    print(f"{robot.name}: simulated {sim.time:g} s in {wall:.3g} s wall time ({sim.time / wall:.3g}x real time), "
          f"final energy {energy:.6g} J")
    return 0


def _write_outputs(args: argparse.Namespace, sim: Simulator, trajectory: Trajectory) -> None:
    """Write the CSV, MCAP and plot files asked for, naming the option of a file that fails."""
    from mb_sim.sim.plotting import plot_trajectory
    from mb_sim.sim.recording import recording_of, write_csv, write_mcap

    title = f"{sim.robot.name}: {args.integrator} integrator, dt = {args.dt:g} s"
    writers = (("--csv", args.csv, lambda path: write_csv(path, trajectory)),
               ("--mcap", args.mcap, lambda path: write_mcap(path, recording_of(sim, trajectory))),
               ("--plot", args.plot, lambda path: plot_trajectory(path, trajectory, title, robot=sim.robot)))
    for option, path, write in writers:
        if path is not None:
            with _culprit(option):
                write(path)
            _note(f"wrote {path}")


def _number(text: str) -> float:
    """A finite number (``float()``, never ``eval``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def _positive(text: str) -> float:
    """A positive finite number (durations, time steps)."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _count(text: str) -> int:
    """A whole number of at least one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _assignment(text: str) -> tuple[str, float]:
    """``JOINT=VALUE`` as (name, number)."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected JOINT=VALUE, got {text!r}")
    try:
        return name.strip(), _number(value)
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{name.strip()}: {err}") from None


def _state_assignment(text: str) -> tuple[str, float]:
    """``JOINT=VALUE`` for a position or speed: a number no robot has (beyond the simulator's
    STATE_MAGNITUDE) is refused while the arguments are read, before the model is built."""
    from mb_sim.sim.simulator import STATE_MAGNITUDE

    name, value = _assignment(text)
    if abs(value) > STATE_MAGNITUDE:
        raise argparse.ArgumentTypeError(f"{name}: {value:g} is beyond {STATE_MAGNITUDE:g} (rad or m, rad/s or m/s): "
                                         "no robot's")
    return name, value


def _output_path(text: str) -> Path:
    """A file to write, checked before the run: not a directory, in an existing writable directory."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: it is a directory")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: no directory {str(path.parent)!r}")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: permission denied")
    return path


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line ``mb-sim: ...`` (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mb-sim: {message} (see '{self.prog} --help')\n")


def _xacro_arg(text: str) -> tuple[str, str]:
    """``NAME:=VALUE`` of --xacro-arg, as xacro's command line takes it (the value as it is)."""
    from mb_sim.urdf.xacro_expansion import is_argument_name

    name, separator, value = text.partition(":=")
    if not separator or not is_argument_name(name):
        raise argparse.ArgumentTypeError(f"--xacro-arg {text!r} is not NAME:=VALUE (e.g. prefix:=left_)")
    return name, value


def _xacro_args(pairs: list[tuple[str, str]] | None) -> dict[str, str]:
    """The --xacro-arg pairs as a mapping; a name given twice is refused."""
    arguments: dict[str, str] = {}
    for name, value in pairs or []:
        if name in arguments:
            raise CommandError(f"--xacro-arg: {name!r} is given twice")
        arguments[name] = value
    return arguments


def _add_robot(parser: argparse.ArgumentParser) -> None:
    """The positional ROBOT argument, --xacro-arg, --strict, --floating-base and --ground."""
    parser.add_argument("robot", metavar="ROBOT",
                        help="URDF or xacro file, or the name of a URDF shipped with mb_sim (e.g. arm6)")
    parser.add_argument("--xacro-arg", dest="xacro_args", type=_xacro_arg, action="append", metavar="NAME:=VALUE",
                        help="a xacro argument of a .xacro ROBOT, as xacro's NAME:=VALUE (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse what the loader would repair (inertias, a mimic on a fixed joint) instead")
    parser.add_argument("--floating-base", action="store_true",
                        help="join the root link to the world by a floating joint (6 DoF) instead of fixing it "
                             "(a root link named 'world' is the world itself)")
    parser.add_argument("--ground", action="store_true",
                        help="add the ground plane z = 0 (default contact parameters) where the URDF has no "
                             "<mb_sim><ground>: the moving links' <collision> shapes touch it")


def _add_backend(parser: argparse.ArgumentParser) -> None:
    """The --backend option."""
    parser.add_argument("--backend", choices=("c", "numpy"), default="c",
                        help="compiled C (default; cached) or NumPy (no compiler needed)")


def _add_simulate(commands: argparse._SubParsersAction) -> None:
    """The ``simulate`` sub-command and its options."""
    simulate = commands.add_parser(
        "simulate", help="simulate a robot offline; write CSV, MCAP, a plot",
        description="Simulate a robot under constant joint efforts and motor voltages from an initial state, "
                    "with a progress bar on stderr and a one-line summary on stdout.")
    _add_robot(simulate)
    simulate.add_argument("--duration", type=_positive, required=True, metavar="T", help="simulated time [s]")
    simulate.add_argument("--dt", type=_positive, default=1e-3, help="physics time step [s] (default 0.001)")
    simulate.add_argument("--integrator", default="rk4", metavar="NAME",
                          help="rk4 (default: fixed step, in C), or adaptive RK45, DOP853, Radau, BDF")
    for option, what in (("--rtol", "relative"), ("--atol", "absolute")):
        simulate.add_argument(option, type=_positive, metavar="TOL",
                              help=f"{what} tolerance of the adaptive integrators (RK45, DOP853, Radau, BDF; "
                                   "default 1e-10; rk4 takes none)")
    for option, what in (("--input", "constant effort of an actuated joint [N m or N]"),
                         ("--voltage", "constant voltage of a DC motor, by motor name [V]"),
                         ("--initial", "initial position of a joint or coordinate [rad or m]; the model is "
                                       "assembled from them: the loops closed with these values held and "
                                       "the others solved, on the branch nearest them")):
        simulate.add_argument(option, type=_state_assignment if option == "--initial" else _assignment, nargs="+",
                              action="extend", default=[],
                              metavar="MOTOR=VALUE" if option == "--voltage" else "JOINT=VALUE",
                              help=f"{what} (repeatable)")
    simulate.add_argument("--default-effort-limit", type=_positive, metavar="N",
                          help="effort limit [N m or N] of actuated joints whose URDF gives none (default: "
                               "their efforts are not clamped)")
    simulate.add_argument("--disable", nargs="+", action="extend", default=[], metavar="CONSTRAINT",
                          help="simulate with these named constraints (mimic joints...) released (repeatable)")
    simulate.add_argument("--sample-every", type=_count, default=10, metavar="N",
                          help="record every N-th step of dt (default 10)")
    for option, what in (("--csv", "the trajectory as CSV (time, coordinates, speeds)"),
                         ("--mcap", "/joint_states and /tf as a ROS 2 MCAP bag"),
                         ("--plot", "a PNG plot of coordinates and speeds against time (and the x-y path "
                                    "of a mobile base)")):
        simulate.add_argument(option, type=_output_path, metavar="FILE", help=f"write {what}")
    _add_backend(simulate)
    simulate.set_defaults(run=_simulate)


def _replay(args: argparse.Namespace) -> int:
    """Re-run a node's recording offline and report the largest differences from its states."""
    from mb_sim.session.replay import MAX_STEPS, ReplayError, replay

    if not args.file.exists():
        raise CommandError(f"{args.file}: no such file")
    with _culprit(str(args.file)):  # the robot's URDF, its compilation
        try:
            report = replay(args.file, progress=None if args.quiet else _note, max_steps=args.max_steps or MAX_STEPS)
        except ReplayError as err:  # names the file already
            raise CommandError(str(err)) from None
    print(report.summary())
    if report.ended is not None:
        print(f"mb-sim: note: {report.ended}", file=sys.stderr)
    if args.tolerance is not None and not report.largest <= args.tolerance:
        print(f"mb-sim: the replay differs from the recording by {report.largest:.3g} > --tolerance "
              f"{args.tolerance:g}", file=sys.stderr)
        return 1
    return 0


def _add_replay(commands: argparse._SubParsersAction) -> None:
    """The ``replay`` sub-command."""
    replay = commands.add_parser(
        "replay", help="re-run a node's recording (record_file, ~/record) and compare with its states",
        description="Rebuild the simulation a recording started from, apply its commands at the sim times "
                    "they took effect, and print the largest differences from the recorded joint states "
                    "(zero to rounding in lockstep).")
    replay.add_argument("file", type=Path, metavar="FILE.mcap", help="a recording of mb_sim_node")
    replay.add_argument("--tolerance", type=_positive, metavar="TOL",
                        help="exit with status 1 if a difference exceeds TOL")
    replay.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    replay.add_argument("--max-steps", type=_count, metavar="N",
                        help="replay at most N physics steps (default 10^8): a damaged or hostile file "
                             "cannot make the replay run for hours")
    replay.set_defaults(run=_replay)


def _operating_point(args: argparse.Namespace):
    """The robot's simulator and the joint values of --at/--fix, checked by name."""
    from mb_sim.sim import Simulator

    robot = _load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground)
    with _culprit():
        sim = Simulator(robot, backend="c", progress=None if args.quiet else _note)
    values = dict(args.at)
    known = {*sim.joint_indices, *sim.coordinate_names}
    unknown = [name for name in values if name not in known]
    if unknown:
        raise CommandError(f"{unknown[0]!r} is not a one-DoF joint or coordinate of {robot.name}; "
                           f"joints: {', '.join(sim.joint_indices) or 'none'}")
    return sim, values


def _matrix(name: str, matrix, rows: list[str], columns: list[str]) -> str:
    """A labelled matrix for the terminal."""
    width = max([12, *map(len, columns)])
    lines = [f"{name} ({len(rows)} x {len(columns)}):", " " * 22 + "".join(f"{c[:width]:>{width + 1}}" for c in columns)]
    lines += [f"{r[:22]:22}" + "".join(f"{v:>{width + 1}.6g}" for v in row) for r, row in zip(rows, matrix)]
    return "\n".join(lines)


def _linearize(args: argparse.Namespace) -> int:
    """Linearize about a configuration (and speeds/inputs); print A, B, eigenvalues, controllability."""
    from mb_sim.sim.linearize import LinearizationError, linearize

    sim, positions = _operating_point(args)
    try:
        with _culprit():
            lin = linearize(sim, positions, dict(args.speed), dict(args.input), args.inputs, args.outputs)
    except LinearizationError as err:
        raise CommandError(str(err)) from None
    print(f"{sim.robot.name}: linearized in minimal coordinates; independent {', '.join(lin.independent_coordinates)}"
          + (f"; dependent (solved by the constraints) {', '.join(lin.dependent_coordinates + lin.dependent_speeds)}"
             if lin.dependent_coordinates or lin.dependent_speeds else ""))
    print(_matrix("A", lin.A, lin.states, lin.states))
    print(_matrix("B", lin.B, lin.states, lin.inputs))
    if lin.outputs:
        print(_matrix("C", lin.C, lin.outputs, lin.states))
        print(_matrix("D", lin.D, lin.outputs, lin.inputs))
    print("eigenvalues: " + ", ".join(f"{e.real:.6g}{e.imag:+.6g}j" if e.imag else f"{e.real:.6g}" for e in lin.eigenvalues))
    print(f"controllability rank: {lin.controllability_rank} of {len(lin.states)}")
    if args.out:
        with _culprit(str(args.out)):
            lin.save(args.out)
    return 0


def _equilibrium(args: argparse.Namespace) -> int:
    """The efforts or voltages that hold a configuration still (gravity compensation)."""
    from mb_sim.sim.linearize import LinearizationError, equilibrium

    sim, positions = _operating_point(args)
    try:
        with _culprit():
            result = equilibrium(sim, positions, args.inputs)
    except LinearizationError as err:
        raise CommandError(str(err)) from None
    unit = "V" if args.inputs == "voltage" else "N m or N"
    for name, value in result.inputs.items():
        print(f"{name} = {value:.10g}  [{unit}]")
    for name, value in result.electrical_states.items():
        print(f"{name} = {value:.10g}  [A]")
    if result.residual > 1e-9:
        print(f"mb-sim: no {args.inputs}s hold this configuration: the best leave a generalized force of "
              f"{result.residual:.3g} unbalanced", file=sys.stderr)
        return 1
    return 0


def _add_linear(commands: argparse._SubParsersAction) -> None:
    """The ``linearize`` and ``equilibrium`` sub-commands."""
    linear = commands.add_parser("linearize", help="A, B in minimal coordinates about an operating point",
                                 description="Linearize the constrained equations of motion about a configuration "
                                             "(dependent joints solved by the constraints), speeds and inputs; "
                                             "exact (complex-step derivatives of the generated equations).")
    balance = commands.add_parser("equilibrium", help="efforts or voltages that hold a configuration still",
                                  description="Solve for the efforts (or voltages) that hold the robot still at a "
                                              "configuration: gravity compensation.")
    for parser, option in ((linear, "--at"), (balance, "--fix")):
        _add_robot(parser)
        parser.add_argument(option, dest="at", type=_state_assignment, nargs="+", action="extend", default=[],
                            metavar="JOINT=VALUE", help="joint positions [rad or m] (others: 0; dependent ones solved)")
        parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    linear.add_argument("--speed", type=_state_assignment, nargs="+", action="extend", default=[], metavar="JOINT=VALUE",
                        help="joint speeds of the operating point [rad/s or m/s] (default 0)")
    linear.add_argument("--input", type=_assignment, nargs="+", action="extend", default=[], metavar="NAME=VALUE",
                        help="efforts (by joint) or voltages (by motor) at the operating point (default 0)")
    linear.add_argument("--inputs", choices=("effort", "voltage", "all"), default="all", help="columns of B")
    linear.add_argument("--outputs", nargs="+", action="extend", default=[], metavar="NAME",
                        help="rows of C and D: joint, coordinate or speed names, or LINK.x/.y/.z (a link origin)")
    linear.add_argument("--out", type=_output_path, metavar="FILE", help="write A, B and names (.npz or .json)")
    balance.add_argument("--inputs", choices=("effort", "voltage"), default="effort", help="what to solve for")
    linear.set_defaults(run=_linearize)
    balance.set_defaults(run=_equilibrium)


@_user_errors
def _export_c(args: argparse.Namespace) -> int:
    """Write a robot's standalone C library (source, header, example, CMakeLists.txt) to OUT_DIR."""
    from mb_sim.codegen.export import export_c

    robot = _load_robot(args.robot, args.strict, args.floating_base, args.xacro_args, args.ground)
    files = export_c(robot, args.out_dir, progress=None if args.quiet else _note)
    for path in (files.source, files.header, *files.runtime, files.example, files.cmake):
        print(path)
    return 0


def _add_export_c(commands: argparse._SubParsersAction) -> None:
    """The ``export-c`` sub-command."""
    export = commands.add_parser(
        "export-c", help="write a standalone C library of a robot (no Python at run time)",
        description="Write the robot's equations of motion as a self-contained C99 library to OUT_DIR: "
                    "NAME.c (the model, including the runtime files copied beside it), NAME.h (dimensions, "
                    "the parameter struct with the URDF's values as defaults, forward dynamics, RK4 with "
                    "projection, evaluation, a numerical linearization), example.c and CMakeLists.txt.")
    _add_robot(export)
    export.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="directory to write (created if missing)")
    export.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    export.set_defaults(run=_export_c)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per task."""
    parser = _Parser(prog="mb-sim", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mb-sim {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = commands.add_parser("doctor", help="check what this installation can do")
    doctor.set_defaults(run=_doctor)
    describe = commands.add_parser("describe", help="print a robot's component tree and symbols")
    _add_robot(describe)
    describe.set_defaults(run=_describe)
    info = commands.add_parser("info", help="component tree, coordinates, constraints and degrees of freedom")
    _add_robot(info)
    info.set_defaults(run=_info)
    eom = commands.add_parser("eom", help="derive and print a robot's equations of motion")
    _add_robot(eom)
    eom.add_argument("--format", choices=("pretty", "latex"), default="pretty",
                     help="plain text (default) or LaTeX (symbol names as q_{\\mathrm{joint}})")
    shown = eom.add_mutually_exclusive_group()
    shown.add_argument("--temporaries", action="store_true",
                       help="list the temporaries and give M and F in terms of them (default: a summary, M "
                            "and F with the temporaries substituted where small enough to read)")
    shown.add_argument("--full", action="store_true",
                       help="everything: all symbols, temporaries, and every output (M, F, q', constraints) "
                            "as matrices")
    eom.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    eom.set_defaults(run=_eom)
    derive = commands.add_parser("derive", help="derive, generate and compile a robot's model into the cache")
    _add_robot(derive)
    _add_backend(derive)
    derive.set_defaults(run=_derive)
    _add_simulate(commands)
    _add_replay(commands)
    _add_linear(commands)
    _add_export_c(commands)
    from mb_sim.sweep.cli import add_sweep

    add_sweep(commands, _output_path, _count)
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


if __name__ == "__main__":
    sys.exit(main())
