"""``mb-sim linearize``, ``equilibrium`` and ``export-c``: the equations of motion used outside a simulation."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mb_sim.cli.arguments import (
    CommandError, add_robot, assignment, culprit, robot_from_args, note, output_path, state_assignment, user_errors,
)

__all__ = ["add_export_c", "add_linear"]


def _operating_point(args: argparse.Namespace):
    """The robot's simulator and the joint values of --at/--fix, checked by name."""
    from mb_sim.sim import Simulator

    robot = robot_from_args(args)
    with culprit():
        sim = Simulator(robot, backend="c", progress=None if args.quiet else note)
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
        with culprit():
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
        with culprit(str(args.out)):
            lin.save(args.out)
    return 0


def _equilibrium(args: argparse.Namespace) -> int:
    """The efforts or voltages that hold a configuration still (gravity compensation)."""
    from mb_sim.sim.linearize import LinearizationError, equilibrium

    sim, positions = _operating_point(args)
    try:
        with culprit():
            result = equilibrium(sim, positions, args.inputs)
    except LinearizationError as err:
        raise CommandError(str(err)) from None
    unit = {"voltage": "V", "wrench": "N or N m"}.get(args.inputs, "N m or N")
    for name, value in result.inputs.items():
        print(f"{name} = {value:.10g}  [{unit}]")
    for name, value in result.electrical_states.items():
        print(f"{name} = {value:.10g}  [A]")
    if result.residual > 1e-9:
        print(f"mb-sim: no {args.inputs}s hold this configuration: the best leave a generalized force of "
              f"{result.residual:.3g} unbalanced", file=sys.stderr)
        return 1
    return 0


def add_linear(commands: argparse._SubParsersAction) -> None:
    """The ``linearize`` and ``equilibrium`` sub-commands."""
    linear = commands.add_parser("linearize", help="A, B in minimal coordinates about an operating point",
                                 description="Linearize the constrained equations of motion about a configuration "
                                             "(dependent joints solved by the constraints), speeds and inputs; "
                                             "exact (complex-step derivatives of the generated equations).")
    balance = commands.add_parser("equilibrium", help="efforts or voltages that hold a configuration still",
                                  description="Solve for the efforts (or voltages) that hold the robot still at a "
                                              "configuration: gravity compensation.")
    for parser, option in ((linear, "--at"), (balance, "--fix")):
        add_robot(parser)
        parser.add_argument(option, dest="at", type=state_assignment, nargs="+", action="extend", default=[],
                            metavar="JOINT=VALUE", help="joint positions [rad or m] (others: 0; dependent ones solved)")
        parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    linear.add_argument("--speed", type=state_assignment, nargs="+", action="extend", default=[], metavar="JOINT=VALUE",
                        help="joint speeds of the operating point [rad/s or m/s] (default 0)")
    linear.add_argument("--input", type=assignment, nargs="+", action="extend", default=[], metavar="NAME=VALUE",
                        help="efforts (by joint) or voltages (by motor) at the operating point (default 0)")
    linear.add_argument("--inputs", choices=("effort", "voltage", "wrench", "all"), default="all",
                        help="columns of B (wrench: the force and torque components of the --wrench-link links)")
    linear.add_argument("--outputs", nargs="+", action="extend", default=[], metavar="NAME",
                        help="rows of C and D: joint, coordinate or speed names, or LINK.x/.y/.z (a link origin)")
    linear.add_argument("--out", type=output_path, metavar="FILE", help="write A, B and names (.npz or .json)")
    balance.add_argument("--inputs", choices=("effort", "voltage", "wrench"), default="effort", help="what to solve for")
    linear.set_defaults(run=_linearize)
    balance.set_defaults(run=_equilibrium)


@user_errors
def _export_c(args: argparse.Namespace) -> int:
    """Write a robot's standalone C library (source, header, example, CMakeLists.txt) to OUT_DIR."""
    from mb_sim.codegen.export import export_c

    robot = robot_from_args(args)
    files = export_c(robot, args.out_dir, progress=None if args.quiet else note)
    for path in (files.source, files.header, *files.runtime, files.example, files.cmake):
        print(path)
    return 0


def add_export_c(commands: argparse._SubParsersAction) -> None:
    """The ``export-c`` sub-command."""
    export = commands.add_parser(
        "export-c", help="write a standalone C library of a robot (no Python at run time)",
        description="Write the robot's equations of motion as a self-contained C99 library to OUT_DIR: "
                    "NAME.c (the model, including the runtime files copied beside it), NAME.h (dimensions, "
                    "the parameter struct with the URDF's values as defaults, forward dynamics, RK4 with "
                    "projection, evaluation, a numerical linearization), example.c and CMakeLists.txt.")
    add_robot(export)
    export.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="directory to write (created if missing)")
    export.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    export.set_defaults(run=_export_c)
