"""Benchmark: the cost of ground contact in mb_sim's RK4 step, and MuJoCo's step on the same scene.

Per quadruped (Go1, Solo12: example-robot-data, floating base), at 1 ms with RK4 and the joints
held at a standing stance by position servos (mb_sim: plain-PD joint servos; MuJoCo: position
actuators with the same kp, kv):

* ``ground``: mb_sim's model with the ground plane (``load_urdf(..., ground=True)``: the default,
  Coulomb friction with a sticking point per contact feature), the robot standing on it after 2 s
  of settling, four feet in contact;
* ``ground_regularized``: the same with ``<ground stiction="false">`` (the regularized law: no
  anchor states, viscous below its stick velocity);
* ``ground_air``: the same model and stance with the robot 1 m up (every shape's bounding-sphere
  test fails: what a contact model costs while nothing touches);
* ``no_ground``: the model compiled without the ground, same stance, 1 m up;
* ``mj_rk4``: MuJoCo's ``mj_step`` with its RK4 integrator, contacts on (the links' collision
  geometry against a plane, no self-collision, as mb_sim), standing after 2 s of settling.

And the node as users run it (``mb_sim_node``, Solo12 standing, ``real_time_factor: 0``: as fast
as possible, /joint_states, /tf, /odom and /clock at 100 Hz of sim time, nothing subscribed but
/diagnostics): its achieved real-time factor, robot-seconds per wall second, from /diagnostics.

Mid-air runs have gravity off, so the robot stays where it is for the whole measurement (a step
costs the same whatever g is).  Each figure is one step's cost in ``Simulator.advance`` (mb_sim:
N steps per call, Python overhead included, as a user gets it) and ``mj_step(m, d, N)`` (MuJoCo),
best and median of repeats interleaved A B C D, A B C D.  Nothing is asserted.

Run: ``.venv/bin/python bench/bench_contact.py [--quick] [--json PATH] [--markdown PATH]``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import timeit
from dataclasses import dataclass
from pathlib import Path

try:
    import mujoco
except ImportError:  # pragma: no cover - a message, not a test
    sys.exit("bench_contact needs MuJoCo: `make bench` installs it "
             "(or .venv/bin/python -m pip install -r bench/requirements.txt)")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "test"))

from mb_sim import load_urdf  # noqa: E402
from mb_sim.sim import Simulator  # noqa: E402
from bench_report import machine  # noqa: E402
from pinocchio_reference import example_robot_data_dir, with_floating_base  # noqa: E402

DT, SETTLE, AIR = 1e-3, 2.0, 1.0
#: Ground parameters that let light feet stand at 1 ms (see test/test_quadruped_standing.py).
GROUND = {"ground_damping": 1.0, "ground_stick_velocity": 0.1}
REPEATS, QUICK_REPEATS, STEPS_PER_CALL = 21, 7, 200
#: The node's publish period [s of sim time] (publish_rate 100 Hz): its steps per advance call.
PERIOD = 0.01
#: Robots whose node is measured (the issue's target: Solo12 standing, >= 100 times real time).
NODE_ROBOTS = ("solo12",)


@dataclass(frozen=True)
class Quadruped:
    """A benchmarked robot: URDF, root link, standing stance and drop height, servo gains."""

    name: str
    path: Path
    base: str
    stance: dict[str, float]
    height: float
    kp: float
    kd: float
    #: Text edits MuJoCo's importer needs: (old, new).
    mujoco_edits: tuple[tuple[str, str], ...] = ()


def quadrupeds() -> list[Quadruped]:
    """Go1 (primitive collision shapes) and Solo12 (STL meshes)."""
    erd = example_robot_data_dir()
    go1 = {f"{leg}_{part}_joint": a for leg in ("FR", "FL", "RR", "RL")
           for part, a in (("hip", 0.0), ("thigh", 0.85), ("calf", -1.7))}
    solo = {f"{leg}_{j}": a for leg, sign, side in (("FL", 1, 1), ("FR", 1, -1), ("HL", -1, 1), ("HR", -1, -1))
            for j, a in (("HAA", 0.1 * side), ("HFE", 0.8 * sign), ("KFE", -1.6 * sign))}
    # Go1's massless root link ("base", 1e-6 kg) has a singular inertia (all entries 1e-6), which MuJoCo
    # refuses before fusing it with the trunk: its products of inertia are zeroed (1e-6 kg m^2 on 0.017).
    singular = 'ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"'
    return [Quadruped("go1", erd / "go1_description/urdf/go1.urdf", "base", go1, 0.32, 100.0, 2.0,
                      mujoco_edits=((singular, 'ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"'),)),
            Quadruped("solo12", erd / "solo_description/robots/solo12.urdf", "base_link", solo, 0.26, 10.0, 0.2)]


# -- mb_sim -------------------------------------------------------------------------------------
def mb_simulator(robot: Quadruped, ground: bool, cache: str, stiction: bool = True) -> Simulator:
    """The robot on a floating base (with the ground, by default with stiction, or not), plain-PD
    servos holding the stance."""
    if ground and not stiction:  # the regularized law: <ground stiction="false"/>
        xml = robot.path.read_text()
        end = xml.rindex("</robot>")
        model = load_urdf(xml[:end] + '<mb_sim><ground stiction="false"/></mb_sim>' + xml[end:], floating_base=True)
    else:
        model = load_urdf(robot.path, floating_base=True, ground=ground)
    sim = Simulator(model, dt=DT, cache_dir=cache, servo_feed_forward=False)
    if ground:
        sim.set_parameters({key: value for key, value in GROUND.items() if key in sim.parameter_names})
    for joint, angle in robot.stance.items():
        sim.servos.set_gains(joint, robot.kp, robot.kd)
        sim.servos.hold_position(joint, angle)
    return sim


def place(sim: Simulator, robot: Quadruped, height: float, gravity: bool) -> None:
    """Base level at `height`, at rest, in the stance; gravity on or off."""
    sim.set_parameters({"gravity_g": 9.81 if gravity else 0.0})
    level = {"root_joint_x": 0.0, "root_joint_y": 0.0, "root_joint_z": height, "root_joint_qw": 1.0,
             "root_joint_qx": 0.0, "root_joint_qy": 0.0, "root_joint_qz": 0.0}
    sim.set_state(positions={**robot.stance, **level},
                  velocities={name: 0.0 for name in sim.speed_names})


def touching(sim: Simulator) -> list[str]:
    """The links with a contact feature pressing on the ground."""
    sim.model.evaluate_into(sim.time)
    rows = sim.model.layout.view(sim.model.buffers.out, "contact_states")
    return sorted({name.split("/")[1] for name, row in zip(sim.model.contact_names, rows) if row[8] > 0})


# -- MuJoCo -------------------------------------------------------------------------------------
def mujoco_model(robot: Quadruped) -> mujoco.MjModel:
    """MuJoCo's URDF import of the robot (visuals dropped, floating base as a free joint), a
    ground plane touching every robot geom (robot geoms not each other), position actuators on the
    stance joints, RK4 at 1 ms."""
    xml = with_floating_base(robot.path.read_text(), robot.base)
    xml = re.sub(r"<visual\b.*?</visual\s*>", "", xml, flags=re.S)
    # package://example-robot-data/robots/... -> absolute paths (MuJoCo resolves no packages)
    xml = xml.replace("package://example-robot-data/robots/", f"{example_robot_data_dir()}/")
    for old, new in robot.mujoco_edits:
        xml = xml.replace(old, new)
    start = xml.index(">", xml.index("<robot")) + 1
    xml = xml[:start] + '<mujoco><compiler discardvisual="true"/></mujoco>' + xml[start:]
    spec = mujoco.MjSpec.from_string(xml)
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = 1, 0
    plane = spec.worldbody.add_geom()
    plane.type, plane.size, plane.contype, plane.conaffinity = mujoco.mjtGeom.mjGEOM_PLANE, [0, 0, 1], 0, 1
    for joint in robot.stance:
        actuator = spec.add_actuator()
        actuator.target, actuator.trntype = joint, mujoco.mjtTrn.mjTRN_JOINT
        actuator.set_to_position(kp=robot.kp, kv=robot.kd)
    spec.option.integrator, spec.option.timestep = mujoco.mjtIntegrator.mjINT_RK4, DT
    return spec.compile()


def mujoco_standing(robot: Quadruped) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """MuJoCo's model dropped in the stance from the same height and settled SETTLE seconds."""
    m = mujoco_model(robot)
    d = mujoco.MjData(m)
    d.qpos[2], d.qpos[3:7] = robot.height, (1, 0, 0, 0)
    for k, (joint, angle) in enumerate(robot.stance.items()):
        d.qpos[m.joint(joint).qposadr[0]] = angle
        d.ctrl[m.actuator(k).id] = angle
    mujoco.mj_step(m, d, int(round(SETTLE / DT)))
    return m, d


# -- timing -------------------------------------------------------------------------------------
def timed_together(functions: dict, repeats: int, steps: int) -> dict:
    """Seconds per step of each function (one call: `steps` steps), repeats interleaved."""
    times = {key: [] for key in functions}
    for function in functions.values():
        function()  # warm up
    for _ in range(repeats):
        for key, function in functions.items():
            times[key].append(timeit.timeit(function, number=1) / steps)
    return {key: {"best": min(t), "median": statistics.median(t)} for key, t in times.items()}


def measure(robot: Quadruped, repeats: int, cache: str) -> dict:
    """Per-step costs of the four configurations (one compiled ground model serves both ground
    runs) and what stands on the ground."""
    ground, bare = mb_simulator(robot, True, cache), mb_simulator(robot, False, cache)
    regularized = mb_simulator(robot, True, cache, stiction=False)
    for sim in (ground, regularized):
        place(sim, robot, robot.height, True)
        sim.advance(SETTLE)
    standing_height, feet = float(ground.q[2]), touching(ground)
    place(bare, robot, AIR, False)
    m, d = mujoco_standing(robot)
    mj_height, mj_contacts = float(d.qpos[2]), int(d.ncon)
    span = STEPS_PER_CALL * DT
    functions = {"ground": lambda: ground.advance(span), "ground_regularized": lambda: regularized.advance(span),
                 "no_ground": lambda: bare.advance(span), "mj_rk4": lambda: mujoco.mj_step(m, d, STEPS_PER_CALL)}
    result = timed_together(functions, repeats, STEPS_PER_CALL)
    period_steps = int(round(PERIOD / DT))  # what the node advances per call, Python around it included
    result.update(timed_together({"ground_period": lambda: ground.advance(PERIOD)}, 10 * repeats, period_steps))
    place(ground, robot, AIR, False)
    result.update(timed_together({"ground_air": lambda: ground.advance(span)}, repeats, STEPS_PER_CALL))
    return {"name": robot.name, "dof": len(ground.speed_names), "contact_features": len(ground.model.contact_names),
            "anchor_states": len(ground.electrical_state_names), "standing_height": standing_height,
            "regularized_height": float(regularized.q[2]), "touching": feet, "mj_height": mj_height,
            "mj_contacts": mj_contacts, **result}


# -- the node ------------------------------------------------------------------------------------
#: /diagnostics reports (1 s each) the node's factor is taken over, after NODE_WARM_UP.
NODE_REPORTS, NODE_WARM_UP, NODE_START_TIMEOUT = 6, 3, 300.0


def standing_urdf(robot: Quadruped, directory: Path) -> Path:
    """The robot's URDF on a floating joint at its drop height, with the ground (GROUND's damping
    and stick velocity) and a topic-based <ros2_control> position interface per stance joint
    starting at the stance (the node's servos hold it), as launch/quadruped.launch.py builds Go1's."""
    xml = robot.path.read_text()
    floating = (f'<link name="world"/><joint name="root_joint" type="floating"><origin xyz="0 0 {robot.height!r}"/>'
                f'<parent link="world"/><child link="{robot.base}"/></joint>')
    ground = (f'<mb_sim><ground damping="{GROUND["ground_damping"]!r}" '
              f'stick_velocity="{GROUND["ground_stick_velocity"]!r}"/></mb_sim>')
    joints = "".join(f'<joint name="{joint}"><command_interface name="position"/><state_interface name="position">'
                     f'<param name="initial_value">{angle!r}</param></state_interface></joint>'
                     for joint, angle in robot.stance.items())
    control = ('<ros2_control name="stance" type="system"><hardware><plugin>joint_state_topic_hardware_interface/'
               f'JointStateTopicSystem</plugin></hardware>{joints}</ros2_control>')
    start, end = xml.index(">", xml.index("<robot")) + 1, xml.rindex("</robot>")
    path = directory / f"{robot.name}_standing.urdf"
    path.write_text(xml[:start] + floating + xml[start:end] + ground + control + xml[end:])
    return path


def node_factor(robot: Quadruped, cache: str) -> dict:
    """The node's achieved real-time factor (median and range of NODE_REPORTS /diagnostics
    reports) with the robot standing, as fast as possible, nothing subscribed but /diagnostics;
    then /odom once, for the base height it stands at."""
    import rclpy  # noqa: PLC0415 (the step costs above need no ROS)
    from diagnostic_msgs.msg import DiagnosticArray  # noqa: PLC0415
    from nav_msgs.msg import Odometry  # noqa: PLC0415
    from bench_node import running, spin_until  # noqa: PLC0415

    env = {**os.environ, "MB_SIM_CACHE_DIR": cache}
    env.setdefault("ROS_DOMAIN_ID", "63")
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
    gains = [f"gains.{joint}.{key}:={value!r}" for joint in robot.stance for key, value in (("p", robot.kp),
                                                                                           ("d", robot.kd))]
    reports: list[tuple[str, float, float]] = []  # state, sim time, achieved factor
    heights: list[float] = []

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            if "sim time [s]" in values:
                factor = values.get("achieved real-time factor", "n/a")
                reports.append((values.get("state", "?"), float(values["sim time [s]"]),
                                float("nan") if factor == "n/a" else float(factor)))

    rclpy.init()
    node = rclpy.create_node("mb_sim_bench_contact")
    try:
        with tempfile.TemporaryDirectory() as scratch, \
                running(standing_urdf(robot, Path(scratch)), env, "real_time_factor:=0.0", "publish_rate:=100.0",
                        *gains) as proc:
            diagnostics = node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
            spin_until(node, lambda: len(reports) >= NODE_WARM_UP + NODE_REPORTS or proc.poll() is not None
                       or any(r[0] == "diverged" for r in reports), NODE_START_TIMEOUT)
            node.destroy_subscription(diagnostics)
            odom = node.create_subscription(Odometry, "/odom", lambda m: heights.append(m.pose.pose.position.z), 10)
            spin_until(node, lambda: bool(heights) or proc.poll() is not None, 10.0)
            node.destroy_subscription(odom)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    factors = [r[2] for r in reports[NODE_WARM_UP:] if r[2] == r[2]]
    return {"node_factor": statistics.median(factors) if factors else None,
            "node_factor_range": [min(factors), max(factors)] if factors else None,
            "node_reports": len(factors), "node_states": sorted({r[0] for r in reports}),
            "node_sim_time": reports[-1][1] if reports else None, "node_height": heights[-1] if heights else None}


# -- report -------------------------------------------------------------------------------------
def markdown(results: list[dict]) -> str:
    """One table row per robot: step costs [us] and the ratios."""
    us = lambda r, key: f"{r[key]['best'] * 1e6:.1f}"  # noqa: E731
    ratio = lambda r, a, b: f"{r[a]['best'] / r[b]['best']:.2f}"  # noqa: E731
    m = machine()
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, load average (1 min) {m['load_average_at_start'][0]:.1f}", "",
             "| robot | DoF | features | height (mb / mj) [m] | ground [us] | regularized [us] | ground, in the air [us] "
             "| no ground [us] | MuJoCo RK4 [us] | ground / no ground | ground / MuJoCo |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['name']} | {r['dof']} | {r['contact_features']} | {r['standing_height']:.3f} / "
                     f"{r['mj_height']:.3f} | {us(r, 'ground')} | {us(r, 'ground_regularized')} | {us(r, 'ground_air')} | "
                     f"{us(r, 'no_ground')} | {us(r, 'mj_rk4')} | {ratio(r, 'ground', 'no_ground')} | "
                     f"{ratio(r, 'ground', 'mj_rk4')} |")
    nodes = [r for r in results if r.get("node_factor") is not None]
    if nodes:
        lines += ["", "| robot | node: robot-seconds per wall second (median of 1 s reports; range) | node height [m] "
                      "| a publish period (10 steps) in one Simulator.advance [us/step] | real-time factor that cost allows |",
                  "|---|---|---|---|---|"]
        for r in nodes:
            low, high = r["node_factor_range"]
            lines.append(f"| {r['name']} | {r['node_factor']:.1f} ({low:.1f} .. {high:.1f}) | {r['node_height']:.3f} "
                         f"| {us(r, 'ground_period')} | {DT / r['ground_period']['best']:.0f} |")
        lines += ["", "Node: mb_sim_node with real_time_factor 0 (as fast as possible), publish_rate 100 Hz, the robot "
                  "standing (floating base, ground, stance held by the servos), nothing subscribed but /diagnostics; "
                  "the factor is its own /diagnostics figure over the last second. A publish period is 10 steps in one "
                  "Simulator.advance call: 1 ms / that cost bounds what any node can reach."]
    lines += ["", "Best of the repeats, one RK4 step at 1 ms (mb_sim: Simulator.advance with plain-PD servos, N steps "
              "per call; MuJoCo: mj_step with mjINT_RK4 and position actuators); standing: 2 s after a drop, feet on "
              "the plane; ground: the default, Coulomb friction with a sticking point (3 states) per contact "
              "feature; regularized: <ground stiction=\"false\">; in the air / no ground: 1 m up, gravity off."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Go1 only, fewer repeats")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument("--no-node", action="store_true", help="skip the node's real-time factor")
    parser.add_argument("--cache", help="model cache directory (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        run(args, args.cache or scratch)


def run(args: argparse.Namespace, cache: str) -> None:
    """Measure, print, write."""
    robots = quadrupeds()[:1] if args.quick else quadrupeds()
    results = []
    for robot in robots:
        print(f"{robot.name}: compiling (with and without the ground) and measuring ...", flush=True)
        try:
            results.append(measure(robot, QUICK_REPEATS if args.quick else REPEATS, cache))
        except Exception as err:  # a robot that does not load is reported, the others still run
            print(f"{robot.name}: skipped: {type(err).__name__}: {err}")
            continue
        r = results[-1]
        print(f"  standing on {', '.join(r['touching'])}; base {r['standing_height']:.3f} m (MuJoCo "
              f"{r['mj_height']:.3f} m, {r['mj_contacts']} contacts)")
        if robot.name in NODE_ROBOTS and not args.no_node:
            print(f"{robot.name}: the node standing, as fast as possible ...", flush=True)
            try:
                r.update(node_factor(robot, cache))
            except Exception as err:  # no ROS middleware, a node that does not start: the rest stands
                print(f"{robot.name}: node not measured: {type(err).__name__}: {err}")
            else:
                print(f"  node: {r['node_factor']} x real time, standing at {r['node_height']} m")
    table = markdown(results)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(table + "\n")


if __name__ == "__main__":
    main()
