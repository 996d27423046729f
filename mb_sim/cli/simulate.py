"""``mb-sim simulate`` (offline runs under constant inputs, with a progress bar) and ``mb-sim replay``
(a node's recording re-run and compared)."""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mb_sim.cli.arguments import (
    CommandError, add_backend, add_robot, assignment, count, culprit, robot_from_args, note, output_path, positive,
    state_assignment, user_errors,
)

if TYPE_CHECKING:
    from mb_sim.model import Robot
    from mb_sim.sim import Simulator, Trajectory

__all__ = ["ProgressBar", "add_replay", "add_simulate"]


class ProgressBar:
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


@user_errors
def _simulate(args: argparse.Namespace) -> int:
    """Simulate a robot under constant efforts and voltages, write what was asked and print a summary."""
    from mb_sim.sim import INTEGRATORS, AssemblyError, Simulator

    if args.integrator not in INTEGRATORS:
        raise CommandError(f"--integrator: unknown {args.integrator!r}; choose one of {', '.join(INTEGRATORS)}")
    robot = robot_from_args(args)
    inputs, initial, voltages = dict(args.input), dict(args.initial), dict(args.voltage)
    _check_names(robot, inputs, initial, voltages)
    # --initial is where the model is assembled from; with --disable the constraints released no
    # longer tie those values, so they are set once the constraints are (set_state keeps them)
    assembled = {} if args.disable else initial
    tolerances = {name: value for name, value in (("rtol", args.rtol), ("atol", args.atol)) if value is not None}
    try:
        sim = Simulator(robot, dt=args.dt, integrator=args.integrator, backend=args.backend, progress=note,
                        default_effort_limit=args.default_effort_limit, initial_positions=assembled, **tolerances)
    except AssemblyError as err:
        raise CommandError(f"--initial: {err}" if assembled else str(err)) from None
    with culprit("--disable"):
        for name in args.disable:
            sim.set_constraint_enabled(name, False)
    if args.disable:
        with culprit("--initial"):
            sim.set_state(positions=initial)
    with culprit("--input"):
        sim.set_efforts(inputs)
    with culprit("--voltage"):
        sim.set_voltages(voltages)
    bar = ProgressBar(args.duration)
    start = time.perf_counter()
    try:
        with culprit("simulation failed"):
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
    from mb_sim.sim.recording import recording_of, spring_columns, write_csv, write_mcap

    title = f"{sim.robot.name}: {args.integrator} integrator, dt = {args.dt:g} s"
    writers = (("--csv", args.csv, lambda path: write_csv(path, trajectory, spring_columns(sim.model, trajectory))),
               ("--mcap", args.mcap, lambda path: write_mcap(path, recording_of(sim, trajectory))),
               ("--plot", args.plot, lambda path: plot_trajectory(path, trajectory, title, robot=sim.robot)))
    for option, path, write in writers:
        if path is not None:
            with culprit(option):
                write(path)
            note(f"wrote {path}")


def add_simulate(commands: argparse._SubParsersAction) -> None:
    """The ``simulate`` sub-command and its options."""
    simulate = commands.add_parser(
        "simulate", help="simulate a robot offline; write CSV, MCAP, a plot",
        description="Simulate a robot under constant joint efforts and motor voltages from an initial state, "
                    "with a progress bar on stderr and a one-line summary on stdout.")
    add_robot(simulate)
    simulate.add_argument("--duration", type=positive, required=True, metavar="T", help="simulated time [s]")
    simulate.add_argument("--dt", type=positive, default=1e-3, help="physics time step [s] (default 0.001)")
    simulate.add_argument("--integrator", default="rk4", metavar="NAME",
                          help="rk4 (default: fixed step, in C), or adaptive RK45, DOP853, Radau, BDF")
    for option, what in (("--rtol", "relative"), ("--atol", "absolute")):
        simulate.add_argument(option, type=positive, metavar="TOL",
                              help=f"{what} tolerance of the adaptive integrators (RK45, DOP853, Radau, BDF; "
                                   "default 1e-10; rk4 takes none)")
    for option, what in (("--input", "constant effort of an actuated joint [N m or N]"),
                         ("--voltage", "constant voltage of a DC motor, by motor name [V]"),
                         ("--initial", "initial position of a joint or coordinate [rad or m]; the model is "
                                       "assembled from them: the loops closed with these values held and "
                                       "the others solved, on the branch nearest them")):
        simulate.add_argument(option, type=state_assignment if option == "--initial" else assignment, nargs="+",
                              action="extend", default=[],
                              metavar="MOTOR=VALUE" if option == "--voltage" else "JOINT=VALUE",
                              help=f"{what} (repeatable)")
    simulate.add_argument("--default-effort-limit", type=positive, metavar="N",
                          help="effort limit [N m or N] of actuated joints whose URDF gives none (default: "
                               "their efforts are not clamped)")
    simulate.add_argument("--disable", nargs="+", action="extend", default=[], metavar="CONSTRAINT",
                          help="simulate with these named constraints (mimic joints...) released (repeatable)")
    simulate.add_argument("--sample-every", type=count, default=10, metavar="N",
                          help="record every N-th step of dt (default 10)")
    for option, what in (("--csv", "the trajectory as CSV (time, coordinates, speeds)"),
                         ("--mcap", "/joint_states and /tf as a ROS 2 MCAP bag"),
                         ("--plot", "a PNG plot of coordinates and speeds against time (and the x-y path "
                                    "of a mobile base)")):
        simulate.add_argument(option, type=output_path, metavar="FILE", help=f"write {what}")
    add_backend(simulate)
    simulate.set_defaults(run=_simulate)


def _replay(args: argparse.Namespace) -> int:
    """Re-run a node's recording offline and report the largest differences from its states."""
    from mb_sim.session.replay import MAX_STEPS, ReplayError, replay

    if not args.file.exists():
        raise CommandError(f"{args.file}: no such file")
    with culprit(str(args.file)):  # the robot's URDF, its compilation
        try:
            report = replay(args.file, progress=None if args.quiet else note, max_steps=args.max_steps or MAX_STEPS)
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


def add_replay(commands: argparse._SubParsersAction) -> None:
    """The ``replay`` sub-command."""
    replay = commands.add_parser(
        "replay", help="re-run a node's recording (record_file, ~/record) and compare with its states",
        description="Rebuild the simulation a recording started from, apply its commands at the sim times "
                    "they took effect, and print the largest differences from the recorded joint states "
                    "(zero to rounding in lockstep).")
    replay.add_argument("file", type=Path, metavar="FILE.mcap", help="a recording of mb_sim_node")
    replay.add_argument("--tolerance", type=positive, metavar="TOL",
                        help="exit with status 1 if a difference exceeds TOL")
    replay.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    replay.add_argument("--max-steps", type=count, metavar="N",
                        help="replay at most N physics steps (default 10^8): a damaged or hostile file "
                             "cannot make the replay run for hours")
    replay.set_defaults(run=_replay)
