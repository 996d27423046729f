"""``mb-sim doctor``, ``describe``, ``info``, ``eom`` and ``derive``: what a robot is, before simulating it."""
from __future__ import annotations

import argparse
import importlib
import platform
import shutil
import sys
import time
from typing import TYPE_CHECKING

from mb_sim.cli.arguments import add_backend, add_robot, robot_from_args, note, user_errors

if TYPE_CHECKING:
    from mb_sim.model import Robot

__all__ = ["add_inspection"]


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


@user_errors
def _describe(args: argparse.Namespace) -> int:
    """Print the component tree of a robot with every symbol's description and value."""
    print(robot_from_args(args).describe())
    return 0


@user_errors
def _eom(args: argparse.Namespace) -> int:
    """Derive and print the equations of motion: a summary with M and F entry by entry (default),
    in terms of the temporaries (--temporaries), or every output in full (--full); text or LaTeX."""
    from mb_sim.symbolic import derive_equations
    from mb_sim.symbolic.printing import format_equations, format_summary

    progress = (lambda line: print(line, file=sys.stderr)) if not args.quiet else None
    eom = derive_equations(robot_from_args(args),
                           progress=progress)
    if args.full:
        print(format_equations(eom, style=args.format))
    else:
        print(format_summary(eom, style=args.format, temporaries=args.temporaries, progress=progress))
    return 0


@user_errors
def _info(args: argparse.Namespace) -> int:
    """Print the component tree, the coordinates and speeds, the constraint analysis and the DoF."""
    from mb_sim.model import symbol_name
    from mb_sim.ros.constraint_services import constraint_service_names
    from mb_sim.symbolic import analyse_constraints
    from mb_sim.symbolic.derive import electrical_states

    robot = robot_from_args(args)
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
            given, remark = defaults.get(symbol_name(symbol)[len(name) + 1:], (0.0, ""))
            origin = remark if given is None else ""
            lines.append(f"  {symbol_name(symbol)} = {value:g}{origin}: {ground.descriptions.get(symbol, '')}")
        friction = "stiction (a sticking point per contact point)" if ground.anchors else \
            "regularized (stiction=\"false\")"
        lines.append(f"  Friction: {friction}")
        for link, notes in ground.link_notes.items():
            lines.append(f"  Link '{link}': " + "; ".join(notes))
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


@user_errors
def _derive(args: argparse.Namespace) -> int:
    """Derive, generate and compile a robot's model into the cache; print timings and the library."""
    from mb_sim.codegen import load_numeric_model

    start = time.perf_counter()
    robot = robot_from_args(args)
    loaded = time.perf_counter()
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        note(line)

    model = load_numeric_model(robot, args.backend, progress=progress)
    done = time.perf_counter()
    cached = " (from the cache)" if any("from the cache" in line for line in lines) else ""
    print(f"load: {loaded - start:.2f} s")
    print(f"derive + codegen + compile: {done - loaded:.2f} s{cached}")
    library = getattr(model, "library_path", None)
    print(f"library: {library}" if library is not None else "library: none (NumPy backend)")
    return 0


def add_inspection(commands: argparse._SubParsersAction) -> None:
    """The ``doctor``, ``describe``, ``info``, ``eom`` and ``derive`` sub-commands."""
    doctor = commands.add_parser("doctor", help="check what this installation can do")
    doctor.set_defaults(run=_doctor)
    describe = commands.add_parser("describe", help="print a robot's component tree and symbols")
    add_robot(describe)
    describe.set_defaults(run=_describe)
    info = commands.add_parser("info", help="component tree, coordinates, constraints and degrees of freedom")
    add_robot(info)
    info.set_defaults(run=_info)
    eom = commands.add_parser("eom", help="derive and print a robot's equations of motion")
    add_robot(eom)
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
    add_robot(derive)
    add_backend(derive)
    derive.set_defaults(run=_derive)
