"""Benchmark: derivation + code generation + compilation, warm loads, forward dynamics per call
against Pinocchio's ``aba`` (measured here, in the same run), and RK4 steps inside C; then the
closed-loop and spring mechanisms (no peer here: Pinocchio's aba has no loops): cold and warm
loads, the RK4 step at 1 ms, the constraint error and energy drift over 10 s, and what a
user force law's call back into Python costs per step.

Run: ``.venv/bin/python bench/bench_dynamics.py [--quick]`` (``make bench``).  Prints one row per
robot; nothing is asserted (machines are noisy): compare against the targets printed below.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np
import pinocchio as pin

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "test"))

from mb_sim import load_urdf  # noqa: E402
from mb_sim.codegen import load_numeric_model  # noqa: E402
from pinocchio_reference import (  # noqa: E402
    example_robot_data_dir, pinocchio_configuration, random_coordinates, velocity_map, with_floating_base,
)

TARGETS = """targets: arm6 cold <= 10 s, warm <= 0.3 s, fd ratio <= 1.0, RK4 step <= 8 us;
         Solo12 and 12-link chain: cold <= 120 s, fd ratio <= 2.0; humanoids cold <= 60 s, fd ratio <= 1.0;
         four_bar and slider_crank: cold <= 10 s"""
#: Mechanisms with loop joints or springs, from urdf/ and test/urdf/: initial joint speeds, and
#: whether the motion keeps its energy (no damping, no joint stops reached).
MECHANISMS = (("urdf/four_bar.urdf", {}, True), ("urdf/slider_crank.urdf", {"crank_joint": 3.0}, True),
              ("urdf/parallel_gripper.urdf", {}, False), ("urdf/spring_mass.urdf", {}, False),
              ("test/urdf/loop_umbrella.urdf", {}, True), ("urdf/diff_drive.urdf", {}, False))
#: Motor voltages of the mechanisms that have motors (seed 002's turning circle).
VOLTAGES = {"urdf/diff_drive.urdf": {"right_motor": 24.0, "left_motor": 20.0}}


def chain_urdf(n: int) -> str:
    """An n-link spatial chain: 0.3 m links, axes alternating y and z, offset centres of mass."""
    links = ['<link name="base"/>']
    joints = []
    for i in range(n):
        links.append(
            f'<link name="l{i}"><inertial><origin xyz="0.02 0.01 0.15"/><mass value="{1.0 + 0.1 * i}"/>'
            '<inertia ixx="0.0075" ixy="0" ixz="0" iyy="0.0075" iyz="0" izz="0.0005"/></inertial></link>')
        parent, z = ("base", 0.0) if i == 0 else (f"l{i - 1}", 0.3)
        axis = "0 1 0" if i % 2 == 0 else "0 0 1"
        joints.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
                      f'<origin xyz="0 0 {z}"/><axis xyz="{axis}"/>'
                      '<limit lower="-3" upper="3" effort="100" velocity="5"/></joint>')
    return f'<robot name="chain{n}">' + "".join(links + joints) + "</robot>"


#: Humanoids on a floating base (example-robot-data path, base link), for --humanoids.
HUMANOIDS = (("g1", "g1_description/urdf/g1_29dof_rev_1_0.urdf", "pelvis"),
             ("talos_reduced", "talos_data/robots/talos_reduced.urdf", "base_link"),
             ("talos_full", "talos_data/robots/talos_full_v2.urdf", "base_link"))


def humanoids() -> list[tuple[str, str]]:
    """(name, URDF text with a floating base) of the humanoids."""
    erd = example_robot_data_dir()
    return [(name, with_floating_base((erd / path).read_text(), base)) for name, path, base in HUMANOIDS]


def robots(quick: bool) -> list[tuple[str, str]]:
    """(name, URDF text) of every benchmarked robot."""
    erd = example_robot_data_dir()
    out = [("arm6", (REPO / "urdf" / "arm6.urdf").read_text()),
           ("panda", (erd / "panda_description" / "urdf" / "panda.urdf").read_text()),
           ("solo12", with_floating_base((erd / "solo_description" / "robots" / "solo12.urdf").read_text(),
                                         "base_link"))]
    sizes = (2, 6, 12) if quick else range(2, 13)
    return out + [(f"chain{n}", chain_urdf(n)) for n in sizes]


def inside_limits(robot, q: np.ndarray) -> np.ndarray:
    """`q` with every limited one-DoF joint clipped into its limits (the RK4 run then starts
    clear of the stops, which a state far beyond them would fire at once)."""
    q = q.copy()
    names = list(robot.system.q)
    for joint in robot.joints.values():
        limit = joint.joint_description.limit
        if len(joint.q) == 1 and joint.joint_description.mimic is None:
            i = names.index(joint.q[0])
            q[i] = np.clip(q[i], -np.inf if limit.lower is None else limit.lower,
                           np.inf if limit.upper is None else limit.upper)
    for joint in robot.joints.values():  # mimic joints follow their (clipped) reference
        mimic = joint.joint_description.mimic
        if mimic is not None and len(joint.q) == 1:
            q[names.index(joint.q[0])] = mimic.multiplier * q[names.index(joint.mimicked.q[0])] + mimic.offset
    return q


def best_time(function, number: int) -> float:
    """Best of 5 repeats, per call, in seconds."""
    return min(timeit.repeat(function, number=number, repeat=5)) / number


def measure(name: str, xml: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        robot = load_urdf(xml)
        model = load_numeric_model(robot, cache_dir=cache)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        model = load_numeric_model(load_urdf(xml), cache_dir=cache)
        warm = time.perf_counter() - start
    pin_model = pin.buildModelFromXML(xml)
    data = pin_model.createData()
    rng = np.random.default_rng(0)
    q = inside_limits(robot, random_coordinates(robot, rng))
    q_pin = pinocchio_configuration(robot, pin_model, q)
    v = rng.normal(size=pin_model.nv) * 0.1
    tau = np.zeros(pin_model.nv)
    G, _ = velocity_map(robot, pin_model, q, v)
    b = model.buffers
    b.q[:], b.u[:], b.inputs[:] = q, G @ v, 0.0
    ours = best_time(model.forward_dynamics_into, 20000)
    theirs = best_time(lambda: pin.aba(pin_model, data, q_pin, v, tau), 20000)
    steps = 1000
    q0, u0 = b.q.copy(), b.u.copy()

    def rk4() -> None:
        b.q[:], b.u[:] = q0, u0
        model.rk4_into(1e-4, steps)

    rk4_step = best_time(rk4, 3) / steps
    return {"name": name, "dof": model.n_u, "cold": cold, "warm": warm, "fd": ours, "pin": theirs,
            "rk4": rk4_step}


def measure_mechanism(path: str, speeds: dict[str, float], conservative: bool) -> dict:
    """Cold/warm load, RK4 step at 1 ms, and 10 s of motion from the zero configuration with
    `speeds` (gravity, no input); the energy drift where the motion is `conservative`."""
    from mb_sim.sim import Simulator

    xml = (REPO / path).read_text()
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        sim = Simulator(load_urdf(xml), cache_dir=cache)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        Simulator(load_urdf(xml), cache_dir=cache)
        warm = time.perf_counter() - start
    sim.set_state(velocities=speeds)
    sim.set_voltages(VOLTAGES.get(path, {}))
    energy, kinetic, worst = sim.outputs().energy, 0.0, 0.0
    start = time.perf_counter()
    for _ in range(100):
        sim.advance(0.1)
        out = sim.outputs()
        kinetic, worst = max(kinetic, out.kinetic_energy), max(worst, out.position_error, out.velocity_error)
    wall = time.perf_counter() - start
    sim.reset()
    sim.set_voltages(VOLTAGES.get(path, {}))
    step = best_time(lambda: sim.advance(1.0), 3) / 1000
    return {"name": Path(path).stem, "dof": sim.model.n_u - int(sim.model.buffers.enabled.sum()), "cold": cold,
            "warm": warm,
            "rk4": step, "error": worst, "factor": 10.0 / wall,
            "drift": f"{abs(out.energy - energy) / kinetic:9.1e}" if conservative else "      n/a"}


def force_law_cost() -> tuple[float, float]:
    """RK4 step [s] of spring_mass with the linear law and with the same law registered in Python."""
    from mb_sim.model import register_force_law
    from mb_sim.sim import Simulator

    register_force_law("bench_linear", lambda t, name, u, v, k, d, f: k * u + d * v + f)
    xml = (REPO / "urdf" / "spring_mass.urdf").read_text()
    times = []
    for text in (xml, xml.replace('reference_length="1"', 'reference_length="1" law="bench_linear"')):
        sim = Simulator(load_urdf(text))
        times.append(best_time(lambda: sim.advance(1.0), 3) / 1000)
    return times[0], times[1]


def mechanisms() -> None:
    print("\nclosed loops, springs and motors (RK4 at 1 ms; error: largest constraint residual over 10 s; drift: energy "
          "change / largest kinetic energy, where nothing dissipates)")
    print(f"{'mechanism':16s} {'dof':>4s} {'cold [s]':>9s} {'warm [s]':>9s} {'RK4 step [us]':>14s} "
          f"{'error':>9s} {'drift':>9s} {'x real time':>12s}")
    for path, speeds, conservative in MECHANISMS:
        r = measure_mechanism(path, speeds, conservative)
        print(f"{r['name']:16s} {r['dof']:4d} {r['cold']:9.2f} {r['warm']:9.3f} {r['rk4'] * 1e6:14.2f} "
              f"{r['error']:9.1e} {r['drift']} {r['factor']:12.0f}", flush=True)
    linear, user = force_law_cost()
    print(f"user force law: RK4 step {linear * 1e6:.2f} us with the built-in law, {user * 1e6:.2f} us with the same "
          f"law in Python ({(user - linear) / 4 * 1e6:.2f} us per call back, 4 per step)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="arm6, Panda, Solo12 and chains of 2, 6, 12 only")
    parser.add_argument("--humanoids", action="store_true",
                        help="also G1 (35 DoF), Talos reduced (38) and Talos full (50, mimic grippers), floating")
    args = parser.parse_args()
    print(f"mb_sim dynamics benchmark (pinocchio {pin.__version__}); {TARGETS}")
    header = f"{'robot':14s} {'dof':>4s} {'cold [s]':>9s} {'warm [s]':>9s} {'fd [us]':>8s} " \
             f"{'aba [us]':>9s} {'ratio':>6s} {'RK4 step [us]':>14s}"
    print(header)
    for name, xml in robots(args.quick) + (humanoids() if args.humanoids else []):
        r = measure(name, xml)
        print(f"{r['name']:14s} {r['dof']:4d} {r['cold']:9.2f} {r['warm']:9.3f} {r['fd'] * 1e6:8.2f} "
              f"{r['pin'] * 1e6:9.2f} {r['fd'] / r['pin']:6.2f} {r['rk4'] * 1e6:14.2f}", flush=True)
    mechanisms()


if __name__ == "__main__":
    main()
