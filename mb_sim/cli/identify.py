"""``mb-sim identify ROBOT RECORDING``: identify inertial and friction parameters from a recording
and write the corrected URDF; ``mb-sim excite ROBOT``: design an excitation trajectory to record."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from mb_sim.cli.arguments import CommandError, count, load_robot, note, output_path, positive, user_errors

__all__ = ["add_identify", "add_excite"]


def add_identify(commands: argparse._SubParsersAction) -> None:
    """The ``identify`` sub-command."""
    parser = commands.add_parser(
        "identify", help="identify masses, inertias and joint friction from a recording; write a corrected URDF",
        description="Fit the robot's inertial parameters and joint damping and Coulomb friction to the joint "
                    "positions, velocities and efforts of an MCAP recording (sensor_msgs/JointState), report "
                    "the base parameters with their standard deviations, and write the URDF with only <inertial> "
                    "and <dynamics> changed.  See docs/identify.md.")
    parser.add_argument("robot", metavar="ROBOT", help="the URDF (the starting guess) or a shipped robot's name")
    parser.add_argument("recording", type=Path, metavar="RECORDING", help="an MCAP file (mb-sim simulate --mcap, "
                        "the node's recorder, ros2 bag record -s mcap)")
    parser.add_argument("--topic", default="/joint_states", help="the JointState topic (default /joint_states)")
    parser.add_argument("--effort-topic", metavar="TOPIC",
                        help="take the efforts from a controller's command topic (std_msgs/Float64MultiArray or "
                             "sensor_msgs/JointState), each held until the next, instead of the JointStates' effort")
    parser.add_argument("--effort-joints", metavar="J1,J2,...", type=lambda text: [j for j in text.split(",") if j],
                        help="the joints of --effort-topic's Float64MultiArray values, in order")
    parser.add_argument("--window", type=positive, default=None, metavar="S",
                        help="smoothing and differentiation window [s] (default 0.02)")
    parser.add_argument("--output", "-o", type=output_path, metavar="FILE.urdf", help="write the corrected URDF")
    parser.add_argument("--validate", action="store_true",
                        help="replay the recorded efforts on the URDF and on the corrected URDF and compare")
    parser.add_argument("--horizon", type=positive, default=1.0, metavar="S",
                        help="length of each replayed segment [s] (default 1)")
    parser.add_argument("--plot", type=output_path, metavar="FILE.png",
                        help="plot the recorded positions against the replays (with --validate)")
    parser.add_argument("--json", type=output_path, metavar="FILE.json", help="write the results as JSON")
    parser.set_defaults(run=user_errors(run_identify))


def run_identify(args: argparse.Namespace) -> int:
    from mb_sim.identify.identification import DEFAULT_WINDOW, identify
    from mb_sim.resources import robot_path

    if args.plot and not args.validate:
        raise CommandError("--plot needs --validate (it plots the replays)")
    urdf = Path(robot_path(args.robot))
    result = identify(urdf, args.recording, topic=args.topic, window=args.window or DEFAULT_WINDOW,
                      effort_topic=args.effort_topic, effort_joints=args.effort_joints,
                      progress=lambda line: note(f"mb-sim identify: {line}"))
    print(result.report())
    print(f"{len(result.changes)} change(s) to the URDF:")
    for line in result.changes:
        print(f"  {line}")
    if args.output:
        args.output.write_text(result.urdf_text)
        note(f"mb-sim identify: wrote {args.output}")
    summary = {"base_parameters": [{"combination": c, "value": v, "std": s, "urdf": p}
                                   for c, v, s, p in result.base_table()],
               "condition_number": result.fit.condition_number, "changes": result.changes}
    if args.validate:
        summary["replay"] = _validate(args, urdf, result)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


def _validate(args: argparse.Namespace, urdf: Path, result) -> dict:
    """Replay on the URDF and on the corrected one; print and return the errors."""
    import tempfile

    from mb_sim.identify.validation import replay_error

    signals = result.signals  # the samples the fit used (finite, evenly spaced)
    with tempfile.TemporaryDirectory() as directory:
        corrected = Path(directory) / urdf.name
        corrected.write_text(result.urdf_text)
        note("mb-sim identify: replaying the recorded efforts on the URDF")
        before = replay_error(urdf, signals, args.horizon)
        note("mb-sim identify: replaying them on the corrected URDF")
        after = replay_error(corrected, signals, args.horizon)
    ratio = before.total / max(after.total, 1e-300)
    verdict = f"{ratio:.3g}x closer" if ratio >= 1 else f"{1 / ratio:.3g}x farther: the corrected URDF replays worse"
    print(f"replay error (RMS of joint positions, {args.horizon:g} s segments): "
          f"URDF {before.total:.4g}, corrected {after.total:.4g} ({verdict})")
    for label, comparison in (("URDF", before), ("corrected URDF", after)):
        if comparison.failed_samples:
            print(f"  the replay on the {label} failed in segments covering {comparison.failed_samples} samples "
                  "(left out of its error)")
    if args.plot:
        from mb_sim.identify.plotting import plot_replays

        plot_replays(args.plot, signals, before, after)
        note(f"mb-sim identify: wrote {args.plot}")
    return {"urdf": before.total, "corrected": after.total, "per_joint_urdf": before.rms.tolist(),
            "per_joint_corrected": after.rms.tolist()}


def add_excite(commands: argparse._SubParsersAction) -> None:
    """The ``excite`` sub-command."""
    parser = commands.add_parser(
        "excite", help="design an excitation trajectory for identification (a JointTrajectory to send the node)",
        description="Design a finite Fourier series motion of every joint, within the URDF's position, speed and "
                    "effort limits, that makes the identification regressor well conditioned; write it as a "
                    "trajectory_msgs/JointTrajectory (YAML for 'ros2 topic pub', or JSON).")
    parser.add_argument("robot", metavar="ROBOT", help="the URDF or a shipped robot's name")
    parser.add_argument("--duration", type=positive, default=20.0, metavar="S", help="length [s] (default 20)")
    parser.add_argument("--period", type=positive, default=10.0, metavar="S",
                        help="period of the Fourier series' fundamental [s] (default 10)")
    parser.add_argument("--harmonics", type=count, default=5, metavar="N", help="harmonics per joint (default 5)")
    parser.add_argument("--rate", type=positive, default=50.0, metavar="HZ", help="waypoints per second (default 50)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the optimizer's random starts")
    parser.add_argument("--budget", type=positive, default=60.0, metavar="S",
                        help="seconds the optimizer may take; its best so far is kept (default 60)")
    parser.add_argument("--output", "-o", type=output_path, required=True, metavar="FILE.yaml",
                        help="the JointTrajectory message (.yaml or .json)")
    parser.add_argument("--record", type=output_path, metavar="FILE.mcap",
                        help="rehearse it: run the URDF's robot through it in the simulator and record "
                             "/joint_states as the real robot's run would be (to identify from)")
    parser.add_argument("--dt", type=positive, default=1e-3, metavar="S",
                        help="the rehearsal's step and sample interval [s] (default 0.001)")
    parser.set_defaults(run=user_errors(run_excite))


def run_excite(args: argparse.Namespace) -> int:
    import numpy as np

    from mb_sim.identify.excitation import design_excitation, trajectory_message
    from mb_sim.identify.identification import structural_base
    from mb_sim.identify.parameters import prior_parameters
    from mb_sim.identify.regressor import NumericRegressor
    from mb_sim.resources import robot_path

    robot = load_robot(args.robot)
    note(f"mb-sim excite: deriving the regressor of {robot.name}")
    regressor = NumericRegressor(robot)
    base = structural_base(regressor, robot, np.random.default_rng(0))
    note(f"mb-sim excite: optimizing {len(regressor.speed_of)} joints' Fourier coefficients "
         f"for {len(base.independent)} base parameters")
    trajectory = design_excitation(robot, regressor, base, prior_parameters(robot, regressor.symbolic),
                                   duration=args.duration, period=args.period, harmonics=args.harmonics, seed=args.seed,
                                   progress=lambda line: note(f"mb-sim excite: {line}"), budget=args.budget)
    message = trajectory_message(trajectory, args.rate)
    text = json.dumps(message) if args.output.suffix == ".json" else _yaml(message)
    args.output.write_text(text)
    print(f"condition number {trajectory.condition_number:.3g}; {len(message['points'])} waypoints over "
          f"{args.duration:g} s written to {args.output}")
    if args.record:
        from mb_sim.identify.rehearsal import rehearse

        note(f"mb-sim excite: rehearsing it on {robot.name} in the simulator")
        rehearse(robot_path(args.robot), trajectory, args.record, args.dt)
        print(f"rehearsal recorded in {args.record}")
    return 0


def _yaml(message: dict) -> str:
    """Flow-style YAML (JSON is YAML), one point per line, as ``ros2 topic pub`` reads it."""
    points = ",\n  ".join(json.dumps(p) for p in message["points"])
    return f"{{joint_names: {json.dumps(message['joint_names'])},\n points: [\n  {points}]}}\n"
