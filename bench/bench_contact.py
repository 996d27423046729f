"""Benchmark: the cost of ground contact in mb_sim's RK4 step, and MuJoCo's step on the same scene.

Per quadruped (Go1, Solo12: example-robot-data, floating base), at 1 ms with RK4 and the joints
held at a standing stance by position servos (mb_sim: plain-PD joint servos; MuJoCo: position
actuators with the same kp, kv):

* ``ground``: mb_sim's model with the ground plane (``load_urdf(..., ground=True)``), the robot
  standing on it after 2 s of settling, four feet in contact;
* ``ground_air``: the same model and stance with the robot 1 m up (every shape's bounding-sphere
  test fails: what a contact model costs while nothing touches);
* ``no_ground``: the model compiled without the ground, same stance, 1 m up;
* ``mj_rk4``: MuJoCo's ``mj_step`` with its RK4 integrator, contacts on (the links' collision
  geometry against a plane, no self-collision, as mb_sim), standing after 2 s of settling.

Mid-air runs have gravity off, so the robot stays where it is for the whole measurement (a step
costs the same whatever g is).  Each figure is one step's cost in ``Simulator.advance`` (mb_sim:
N steps per call, Python overhead included, as a user gets it) and ``mj_step(m, d, N)`` (MuJoCo),
best and median of repeats interleaved A B C D, A B C D.  Nothing is asserted.

Run: ``.venv/bin/python bench/bench_contact.py [--quick] [--json PATH] [--markdown PATH]``.
"""
from __future__ import annotations

import argparse
import json
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
def mb_simulator(robot: Quadruped, ground: bool, cache: str) -> Simulator:
    """The robot on a floating base (with the ground or not), plain-PD servos holding the stance."""
    sim = Simulator(load_urdf(robot.path, floating_base=True, ground=ground), dt=DT, cache_dir=cache,
                    servo_feed_forward=False)
    if ground:
        sim.set_parameters(GROUND)
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
    place(ground, robot, robot.height, True)
    ground.advance(SETTLE)
    standing_height, feet = float(ground.q[2]), touching(ground)
    place(bare, robot, AIR, False)
    m, d = mujoco_standing(robot)
    mj_height, mj_contacts = float(d.qpos[2]), int(d.ncon)
    span = STEPS_PER_CALL * DT
    functions = {"ground": lambda: ground.advance(span), "no_ground": lambda: bare.advance(span),
                 "mj_rk4": lambda: mujoco.mj_step(m, d, STEPS_PER_CALL)}
    result = timed_together(functions, repeats, STEPS_PER_CALL)
    place(ground, robot, AIR, False)
    result.update(timed_together({"ground_air": lambda: ground.advance(span)}, repeats, STEPS_PER_CALL))
    return {"name": robot.name, "dof": len(ground.speed_names), "contact_features": len(ground.model.contact_names),
            "standing_height": standing_height, "touching": feet, "mj_height": mj_height,
            "mj_contacts": mj_contacts, **result}


# -- report -------------------------------------------------------------------------------------
def markdown(results: list[dict]) -> str:
    """One table row per robot: step costs [us] and the ratios."""
    us = lambda r, key: f"{r[key]['best'] * 1e6:.1f}"  # noqa: E731
    ratio = lambda r, a, b: f"{r[a]['best'] / r[b]['best']:.2f}"  # noqa: E731
    m = machine()
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, load average (1 min) {m['load_average_at_start'][0]:.1f}", "",
             "| robot | DoF | features | height (mb / mj) [m] | ground [us] | ground, in the air [us] | no ground [us] "
             "| MuJoCo RK4 [us] | ground / no ground | ground / MuJoCo |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['name']} | {r['dof']} | {r['contact_features']} | {r['standing_height']:.3f} / "
                     f"{r['mj_height']:.3f} | {us(r, 'ground')} | {us(r, 'ground_air')} | {us(r, 'no_ground')} | "
                     f"{us(r, 'mj_rk4')} | {ratio(r, 'ground', 'no_ground')} | {ratio(r, 'ground', 'mj_rk4')} |")
    lines += ["", "Best of the repeats, one RK4 step at 1 ms (mb_sim: Simulator.advance with plain-PD servos, N steps "
              "per call; MuJoCo: mj_step with mjINT_RK4 and position actuators); standing: 2 s after a drop, feet on "
              "the plane; in the air / no ground: 1 m up, gravity off."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Go1 only, fewer repeats")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
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
    table = markdown(results)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(table + "\n")


if __name__ == "__main__":
    main()
