"""Benchmark: mb_sim's forward dynamics and RK4 steps against Pinocchio and MuJoCo on the same URDFs.

Per robot: cold (derive + generate + compile, empty cache) and warm (from the cache) loads, the
warm one also as a fresh process (``mb-sim derive``: interpreter start, imports, load);
forward dynamics per call from Python (mb_sim's packed call and its NumPy-in/NumPy-out call,
Pinocchio's ``aba``, MuJoCo's ``mj_forward``); one physics step (mb_sim's RK4 inside its N-step
C entry point, MuJoCo's ``mj_step`` with its RK4 integrator and with its default Euler, also N
steps per call) and the largest real-time factor each allows at 1 ms.  Before anything is timed
the three models are compared at random states: mass matrix and u' at zero inputs (MuJoCo's
model is refused, and not timed, when it disagrees).  Then the closed-loop and spring mechanisms
(no peer: neither ``aba`` nor MuJoCo's equality constraints solve them exactly).

MuJoCo's model is its own URDF import (``mujoco.MjModel.from_xml_string``) of the same URDF
text, visuals and collision geometry removed; a floating base is the URDF's ``floating`` joint
(``world`` -> base link), which MuJoCo imports as a free joint.  Contacts, joint limits and
friction loss are disabled, damping, armature and joint stiffness zeroed, gravity set to ours;
mb_sim's damping, friction and joint stops are zeroed the same way (run-time parameters).
Mimic joints are MuJoCo equality constraints (soft, its constraint solver iterates): on while
timed, off when comparing (u' is then compared with the constrained solution of MuJoCo's M and
unconstrained forces with our constraint rows).

Run: ``make bench`` (installs bench/requirements.txt first) or
``.venv/bin/python bench/bench_dynamics.py [--quick] [--humanoids] [--plots]``.  Prints one row per
robot and writes bench/results/latest.json (every figure: best and median of the repeats,
library versions, CPU, date) and latest.md; ``--plots`` adds the n-link chain sweep and its PNGs.
Nothing is asserted (machines are noisy): figures that miss the targets are listed at the end.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np
import pinocchio as pin

try:
    import mujoco
except ImportError:  # pragma: no cover - a message, not a test
    sys.exit("bench_dynamics needs MuJoCo: `make bench` installs it "
             "(or .venv/bin/python -m pip install -r bench/requirements.txt)")

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
#: The distributions whose versions the report records.
VERSIONS = ("mb_sim", "sympy", "numpy", "pin", "mujoco", "example-robot-data", "matplotlib")
sys.path.insert(0, str(REPO / "test"))

from mb_sim import load_urdf  # noqa: E402
from mb_sim.codegen import load_numeric_model  # noqa: E402
from mb_sim.model.loads import Gravity  # noqa: E402
from bench_report import machine, machine_line, versions  # noqa: E402
from pinocchio_reference import (  # noqa: E402
    coordinates_inside_limits, example_robot_data_dir, pinocchio_configuration, velocity_map,
    with_floating_base,
)

#: Issue 13's targets, checked at the end of a run.
TARGETS = ("per call <= Pinocchio aba and <= MuJoCo mj_forward up to 40 DoF; RK4 step <= MuJoCo's RK4 step / 4; "
           "cold <= 10 s at 12 DoF (chain12), <= 60 s for a humanoid; warm <= 0.1 s")
#: Largest relative difference (to the largest entry) of M and u' for a peer to count as agreeing.
AGREEMENT = 1e-8
#: Repeats of every per-call and per-step timing, each lasting about REPEAT_SECONDS (the number of calls,
#: or of steps per C call, is calibrated per robot on the slowest peer): many short repeats, so that on a
#: shared 2-core machine some fall between other processes' time slices.  Step size of the timed steps.
REPEATS, STEP_REPEATS, REPEAT_SECONDS, STEP_DT = 61, 41, 1e-3, 1e-4
#: Chain lengths of the scaling plots (--plots).
SWEEP = (2, 4, 6, 8, 12, 16, 24, 32)
MUJOCO_MODEL = ("MuJoCo's own URDF import (MjModel.from_xml_string) of the same URDF text without visuals and "
                "collision geometry; a floating base is the URDF's floating joint, imported as a free joint")
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
    """(name, URDF text) of every benchmarked robot (the open-tree robots of urdf/, UR5, Panda, Solo12, chains;
    --quick: arm6, Panda, Solo12, chains of 2, 6, 12)."""
    erd = example_robot_data_dir()
    shipped = ("arm6",) if quick else ("pendulum", "double_pendulum", "free_body", "arm6", "cart_pole")
    out = [(name, (REPO / "urdf" / f"{name}.urdf").read_text()) for name in shipped]
    if not quick:
        out.append(("ur5", (erd / "ur_description" / "urdf" / "ur5_robot.urdf").read_text()))
    out += [("panda", (erd / "panda_description" / "urdf" / "panda.urdf").read_text()),
            ("solo12", with_floating_base((erd / "solo_description" / "robots" / "solo12.urdf").read_text(),
                                          "base_link"))]
    sizes = (2, 6, 12) if quick else range(2, 13)
    return out + [(f"chain{n}", chain_urdf(n)) for n in sizes]


# ---------------------------------------------------------------------------------------------
# timing


def timed(function, number: int, repeat: int = REPEATS) -> dict:
    """Seconds per call of `function`: best and median of `repeat` repeats of `number` calls."""
    times = [t / number for t in timeit.repeat(function, number=number, repeat=repeat)]
    return {"best": min(times), "median": statistics.median(times), "repeats": repeat}


def timed_together(functions: dict, number: int, repeat: int = REPEATS, per: dict | None = None) -> dict:
    """`timed` for several functions, their repeats interleaved (A B C, A B C, ...) so that a burst
    of load on a shared machine hits every peer alike; seconds per call divided by ``per[key]``
    (e.g. the steps one call takes)."""
    times = {key: [] for key in functions}
    for _ in range(repeat):
        for key, function in functions.items():
            times[key].append(timeit.timeit(function, number=number) / number / (per or {}).get(key, 1))
    return {key: {"best": min(t), "median": statistics.median(t), "repeats": repeat} for key, t in times.items()}


def calibrated(functions: dict, low: int, high: int) -> int:
    """How many calls of the slowest of `functions` take about REPEAT_SECONDS, within [low, high]."""
    for function in functions.values():  # first calls are slow (caches, ctypes, MuJoCo's first forward)
        timeit.timeit(function, number=20)
    slowest = max(min(timeit.repeat(f, number=20, repeat=3)) / 20 for f in functions.values())
    return int(min(max(REPEAT_SECONDS / slowest, low), high))


def once(seconds: float) -> dict:
    """A figure measured once (a cold load: the spread is not measured)."""
    return {"best": seconds, "median": seconds, "repeats": 1}


# ---------------------------------------------------------------------------------------------
# the peers' models


def zeroed_parameters(robot, model) -> np.ndarray:
    """Our run-time parameters with joint damping, friction and stops switched off (the peers'
    models have none of them here)."""
    return np.array([0.0 if str(s).endswith(("_damping", "_friction", "_limit_stiffness", "_limit_damping")) else v
                     for s, v in zip(robot.parameters, model.parameter_values)])


def mujoco_urdf(xml: str) -> str:
    """The URDF text without visuals and collision geometry (meshes MuJoCo would load; contacts are off)."""
    return re.sub(r"<(visual|collision)\b[^>]*/>|<(visual|collision)\b.*?</\2\s*>", "", xml, flags=re.S)


class MujocoPeer:
    """MuJoCo's model of a robot, with index maps from our coordinates and speeds to qpos and qvel.

    Our free joint's speeds are MuJoCo's (linear velocity in world axes, angular in the body
    frame; quaternion w, x, y, z), so the maps are permutations.
    """

    def __init__(self, robot, xml: str):
        self.model = mujoco.MjModel.from_xml_string(mujoco_urdf(xml))
        m = self.model
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT) \
            | int(mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
        m.dof_damping[:], m.dof_armature[:], m.dof_frictionloss[:], m.jnt_stiffness[:] = 0.0, 0.0, 0.0, 0.0
        gravity = [g for g in robot.load_groups if isinstance(g, Gravity)]
        m.opt.gravity[:] = gravity[0].vector if gravity else (0.0, 0.0, 0.0)
        m.opt.timestep = STEP_DT
        self.data = mujoco.MjData(m)
        qpos, dof = {}, {}
        for joint in robot.joints.values():
            if not len(joint.q):
                continue
            mj = m.joint(joint.name)  # KeyError: the importer dropped or renamed it
            qpos.update({s: int(mj.qposadr[0]) + k for k, s in enumerate(joint.q)})
            dof.update({s: int(mj.dofadr[0]) + k for k, s in enumerate(joint.u)})
        self.q_index = np.array([qpos[s] for s in robot.system.q], dtype=int)
        self.u_index = np.array([dof[s] for s in robot.system.u], dtype=int)
        if sorted(self.q_index) != list(range(m.nq)) or sorted(self.u_index) != list(range(m.nv)):
            raise ValueError(f"coordinates do not map one to one (ours {len(self.q_index)}/{len(self.u_index)}, "
                             f"MuJoCo nq {m.nq}, nv {m.nv})")
        self.equality = m.neq > 0

    def set_state(self, q: np.ndarray, u: np.ndarray) -> None:
        d = self.data
        d.qpos[self.q_index], d.qvel[self.u_index] = q, u
        d.qacc_warmstart[:] = 0.0
        d.time = 0.0

    def mass_and_forces(self, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, unconstrained generalized forces, u') in our order, equality constraints off."""
        m, d = self.model, self.data
        saved = m.opt.disableflags
        m.opt.disableflags = saved | int(mujoco.mjtDisableBit.mjDSBL_EQUALITY)
        try:
            self.set_state(q, u)
            mujoco.mj_forward(m, d)
            full = np.zeros((m.nv, m.nv))
            mujoco.mj_fullM(m, d, full)
            i = self.u_index
            return full[np.ix_(i, i)], d.qfrc_smooth[i].copy(), d.qacc[i].copy()
        finally:
            m.opt.disableflags = saved


def relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Largest difference relative to the largest entry of `theirs`."""
    return float(np.abs(ours - theirs).max() / max(np.abs(theirs).max(), 1e-300))


def constrained(M: np.ndarray, F: np.ndarray, model, out: dict) -> np.ndarray:
    """u' of M u' = F + A^T lambda, A u' + c = 0 with our enabled constraint rows (none: M^-1 F)."""
    if not model.n_constraints:
        return np.linalg.solve(M, F)
    enabled = model.buffers.enabled > 0
    A, c = out["constraint_matrix"][enabled], out["acceleration_bias"].ravel()[enabled]
    n = len(A)
    kkt = np.block([[M, A.T], [A, np.zeros((n, n))]])
    return np.linalg.solve(kkt, np.concatenate([F, -c]))[:len(F)]


def agreement(robot, model, params, pin_model, peer: MujocoPeer | None, states: int = 5) -> dict:
    """Largest relative differences of M and u' (zero inputs) from Pinocchio's and MuJoCo's at
    `states` random states inside the limits (mimic robots: the constrained u' of the peer's M
    and forces with our constraint rows)."""
    data = pin_model.createData()
    rng = np.random.default_rng(1)
    worst = {"pinocchio_M": 0.0, "pinocchio_udot": 0.0}
    if peer is not None:
        worst.update(mujoco_M=0.0, mujoco_udot=0.0)
    zero = np.zeros(model.n_inputs)
    for _ in range(states):
        q = coordinates_inside_limits(robot, rng)
        v = rng.normal(size=pin_model.nv)
        q_pin = pinocchio_configuration(robot, pin_model, q)
        G, G_dot = velocity_map(robot, pin_model, q, v)
        u = G @ v
        out = model.evaluate(q, u, zero, params)
        _, udot = model.forward_dynamics(q, u, zero, params)
        M_pin = pin.crba(pin_model, data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        M_expected = G @ M_pin @ G.T
        F_expected = G @ (-pin.nle(pin_model, data, q_pin, v) - M_pin @ G_dot.T @ u)
        worst["pinocchio_M"] = max(worst["pinocchio_M"], relative(out["mass_matrix"], M_expected))
        worst["pinocchio_udot"] = max(worst["pinocchio_udot"],
                                      relative(udot, constrained(M_expected, F_expected, model, out)))
        if peer is not None:
            M_mj, F_mj, udot_mj = peer.mass_and_forces(q, u)
            expected = constrained(M_mj, F_mj, model, out) if model.n_constraints else udot_mj
            worst["mujoco_M"] = max(worst["mujoco_M"], relative(out["mass_matrix"], M_mj))
            worst["mujoco_udot"] = max(worst["mujoco_udot"], relative(udot, expected))
    return worst


# ---------------------------------------------------------------------------------------------
# one robot


def fresh_process_load(xml: str, cache: str) -> dict:
    """``mb-sim derive`` of `xml` from the warm cache `cache`, as a fresh process [s]."""
    path = Path(cache) / "robot.urdf"
    path.write_text(xml)
    command = [str(Path(sys.executable).parent / "mb-sim"), "derive", str(path)]
    env = {**os.environ, "MB_SIM_CACHE_DIR": cache}
    return timed(lambda: subprocess.run(command, env=env, check=True, capture_output=True), 1, 2)


def measure(name: str, xml: str) -> dict:
    """Every figure of one robot (see the module's docstring)."""
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        robot = load_urdf(xml)
        model = load_numeric_model(robot, cache_dir=cache)
        cold = time.perf_counter() - start
        warm = timed(lambda: load_numeric_model(load_urdf(xml), cache_dir=cache), 1, 3)
        fresh = fresh_process_load(xml, cache)
    r = {"name": name, "dof": model.n_u, "constraints": int(model.buffers.enabled.sum()),
         "cold": once(cold), "warm": warm, "warm_fresh_process": fresh,
         "pinocchio_load": timed(lambda: pin.buildModelFromXML(xml), 1, 3)}
    pin_model = pin.buildModelFromXML(xml)
    params = zeroed_parameters(robot, model)
    peer, refused = None, None
    try:
        r["mujoco_load"] = timed(lambda: mujoco.MjModel.from_xml_string(mujoco_urdf(xml)), 1, 3)
        peer = MujocoPeer(robot, xml)
    except Exception as err:  # noqa: BLE001 (MuJoCo's import refusing the URDF is a finding)
        refused = f"MuJoCo's URDF import failed: {err}".replace("\n", " ")
    r["agreement"] = agreement(robot, model, params, pin_model, peer)
    if peer is not None:
        off = {k: v for k, v in r["agreement"].items() if k.startswith("mujoco") and not v <= AGREEMENT}
        if off:
            refused = "MuJoCo's model disagrees: " + ", ".join(f"{k[7:]} {v:.1e}" for k, v in off.items())
            peer = None
    r["mujoco_refused"] = refused
    r["mujoco_equality"] = bool(peer is not None and peer.equality)

    # the timed state: inside the limits, small speeds, zero inputs
    data = pin_model.createData()
    rng = np.random.default_rng(0)
    q = coordinates_inside_limits(robot, rng)
    q_pin = pinocchio_configuration(robot, pin_model, q)
    v = rng.normal(size=pin_model.nv) * 0.1
    tau = np.zeros(pin_model.nv)
    G, _ = velocity_map(robot, pin_model, q, v)
    u = G @ v
    b = model.buffers
    b.q[:], b.u[:], b.inputs[:], b.params[:] = q, u, 0.0, params
    zero = np.zeros(model.n_inputs)
    calls = {"fd": model.forward_dynamics_into, "fd_numpy": lambda: model.forward_dynamics(q, u, zero, params),
             "aba": lambda: pin.aba(pin_model, data, q_pin, v, tau)}

    def rk4(n: int) -> None:
        b.q[:], b.u[:] = q, u
        model.rk4_into(STEP_DT, n)

    steps = {"rk4": rk4}
    if peer is not None:
        m, d = peer.model, peer.data
        peer.set_state(q, u)
        start_state = d.qpos.copy(), d.qvel.copy()
        calls["mj_forward"] = lambda: mujoco.mj_forward(m, d)  # the state stays: forward does not integrate
        for key, integrator in (("mj_rk4", mujoco.mjtIntegrator.mjINT_RK4),
                                ("mj_euler", mujoco.mjtIntegrator.mjINT_EULER)):
            stepped = copy.copy(m)  # the integrator is an option of the model
            stepped.opt.integrator = int(integrator)
            stepped_data = mujoco.MjData(stepped)

            def step(n: int, model_=stepped, data_=stepped_data) -> None:
                data_.qpos[:], data_.qvel[:] = start_state
                data_.qacc_warmstart[:], data_.time = 0.0, 0.0
                mujoco.mj_step(model_, data_, n)

            steps[key] = step
    number = calibrated(calls, 20, 5000)
    r.update(timed_together(calls, number))
    # steps per C call: each peer's own, so that every repeat lasts about REPEAT_SECONDS
    per = {key: calibrated({key: lambda f=f: f(10)}, 1, 100) * 10 for key, f in steps.items()}
    r.update(timed_together({key: lambda f=f, n=per[key]: f(n) for key, f in steps.items()}, 1, STEP_REPEATS, per))
    b.q[:], b.u[:] = q, u
    r["calls_per_repeat"], r["steps_per_call"] = number, per
    return r


# ---------------------------------------------------------------------------------------------
# mechanisms (no peer)


def measure_mechanism(path: str, speeds: dict[str, float], conservative: bool) -> dict:
    """Cold/warm load, RK4 step at 1 ms, and 10 s of motion from the zero configuration with
    `speeds` (gravity, no input); the energy drift where the motion is `conservative`."""
    from mb_sim.sim import Simulator

    xml = (REPO / path).read_text()
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        sim = Simulator(load_urdf(xml), cache_dir=cache)
        cold = time.perf_counter() - start
        warm = timed(lambda: Simulator(load_urdf(xml), cache_dir=cache), 1, 3)
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
    step = timed_together({"rk4": lambda: sim.advance(0.2)}, 1, STEP_REPEATS, {"rk4": 200})["rk4"]
    return {"name": Path(path).stem, "dof": sim.degrees_of_freedom(),
            "cold": once(cold), "warm": warm, "rk4": step, "error": worst, "real_time_factor_10s": 10.0 / wall,
            "drift": abs(out.energy - energy) / kinetic if conservative else None}


def force_law_cost() -> dict:
    """RK4 step [s] of spring_mass with the linear law and with the same law registered in Python."""
    from mb_sim.model import register_force_law
    from mb_sim.sim import Simulator

    register_force_law("bench_linear", lambda t, name, u, v, k, d, f: k * u + d * v + f)
    xml = (REPO / "urdf" / "spring_mass.urdf").read_text()
    out = {}
    for key, text in (("builtin", xml),
                      ("python", xml.replace('reference_length="1"', 'reference_length="1" law="bench_linear"'))):
        sim = Simulator(load_urdf(text))
        out[key] = timed_together({key: lambda: sim.advance(0.2)}, 1, STEP_REPEATS, {key: 200})[key]
    return out


# ---------------------------------------------------------------------------------------------
# output


def us(figure: dict | None, digits: int = 2) -> str:
    return "-" if figure is None else f"{figure['best'] * 1e6:.{digits}f}"


def ratio(a: dict | None, b: dict | None) -> str:
    return "-" if a is None or b is None else f"{a['best'] / b['best']:.2f}"


def factor(step: dict | None) -> str:
    """The largest real-time factor at 1 ms: 1 ms of simulated time per step's cost."""
    return "-" if step is None else f"{1e-3 / step['best']:.0f}"


COLUMNS = ("robot", "dof", "cold [s]", "warm [s]", "warm, new process [s]", "fd [us]", "fd NumPy [us]", "aba [us]", "mj_forward [us]",
           "fd/aba", "fd/mj", "RK4 step [us]", "mj RK4 [us]", "mj Euler [us]", "RK4/mj RK4", "x real time at 1 ms "
           "(RK4 / mj RK4 / mj Euler)", "M, u' vs Pinocchio", "M, u' vs MuJoCo")


def row(r: dict) -> list[str]:
    a = r["agreement"]
    mj = f"{a['mujoco_M']:.0e}, {a['mujoco_udot']:.0e}" if "mujoco_M" in a else "import failed"
    mj += " (refused)" if r["mujoco_refused"] and "mujoco_M" in a else ""
    name = r["name"] + (" (mj eq)" if r["mujoco_equality"] else "")
    return [name, str(r["dof"]), f"{r['cold']['best']:.2f}", f"{r['warm']['best']:.3f}",
            f"{r['warm_fresh_process']['best']:.2f}" if "warm_fresh_process" in r else "", us(r["fd"]),
            us(r["fd_numpy"]), us(r["aba"]), us(r.get("mj_forward")), ratio(r["fd"], r["aba"]),
            ratio(r["fd"], r.get("mj_forward")), us(r["rk4"]), us(r.get("mj_rk4")), us(r.get("mj_euler")),
            ratio(r["rk4"], r.get("mj_rk4")),
            f"{factor(r['rk4'])} / {factor(r.get('mj_rk4'))} / {factor(r.get('mj_euler'))}",
            f"{a['pinocchio_M']:.0e}, {a['pinocchio_udot']:.0e}", mj]


WIDTHS = (22, 4, 8, 8, 8, 8, 8, 8, 8, 6, 6, 8, 8, 8, 6, 20, 15, 15)
SHORT = ("robot", "dof", "cold[s]", "warm[s]", "proc[s]", "fd[us]", "fdnp[us]", "aba[us]", "mjfwd", "fd/aba", "fd/mj",
         "RK4[us]", "mjRK4", "mjEuler", "/mjRK4", "xRT: RK4/mjRK4/mjEu", "M,u' vs pin", "M,u' vs mj")


def console_row(cells: list[str]) -> str:
    return " ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, WIDTHS)))


def missed(results: list[dict]) -> list[str]:
    """Issue 13's targets each robot misses, one line each."""
    out = []
    for r in results:
        n, dof = r["name"], r["dof"]
        if dof <= 40 and r["fd"]["best"] > r["aba"]["best"]:
            out.append(f"{n}: fd/aba {r['fd']['best'] / r['aba']['best']:.2f} > 1")
        if dof <= 40 and "mj_forward" in r and r["fd"]["best"] > r["mj_forward"]["best"]:
            out.append(f"{n}: fd/mj_forward {r['fd']['best'] / r['mj_forward']['best']:.2f} > 1")
        if "mj_rk4" in r and r["rk4"]["best"] > r["mj_rk4"]["best"] / 4:
            out.append(f"{n}: RK4 step / MuJoCo's RK4 step {r['rk4']['best'] / r['mj_rk4']['best']:.2f} > 0.25")
        if n == "chain12" and r["cold"]["best"] > 10:
            out.append(f"{n}: cold {r['cold']['best']:.1f} s > 10 s")
        if n in dict((h[0], h) for h in HUMANOIDS) and r["cold"]["best"] > 60:
            out.append(f"{n}: cold {r['cold']['best']:.1f} s > 60 s")
        if r["warm"]["best"] > 0.1:
            out.append(f"{n}: warm {r['warm']['best']:.3f} s > 0.1 s")
        if r["mujoco_refused"]:
            out.append(f"{n}: no MuJoCo figures ({r['mujoco_refused']})")
    return out


def markdown(report: dict) -> str:
    v = report["versions"]
    lines = [f"# bench_dynamics: {report['date']}", "", machine_line(report),
             f"Versions: mb_sim {v['mb_sim']}, SymPy {v['sympy']}, NumPy {v['numpy']}, Pinocchio {v['pin']}, "
             f"MuJoCo {v['mujoco']}. Arguments: {' '.join(report['arguments']) or '(none)'}.", "",
             f"Best of {REPEATS} repeats (per call) and of {STEP_REPEATS} (per step: one C call of N steps of "
             f"{STEP_DT:g} s), each about {REPEAT_SECONDS * 1e3:g} ms long, interleaved across the peers; medians in "
             "latest.json. MuJoCo model: " + report["mujoco_model"] + ". "
             "'(mj eq)': mimic joints as MuJoCo equality constraints (soft, iterated) in the timed runs. "
             "Agreement: largest relative difference of M and of u' at 5 random states.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row(r)) + " |" for r in report["robots"]]
    if report["chains"]:
        lines += ["", "n-link chain sweep (scaling plots):", "",
                  "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(row(r)) + " |" for r in report["chains"]]
    if report["mechanisms"]:
        lines += ["", "Mechanisms (RK4 at 1 ms; error: largest constraint residual over 10 s; drift: energy change / "
                  "largest kinetic energy where nothing dissipates):", "",
                  "| mechanism | DoF | cold [s] | warm [s] | RK4 step [us] | error | drift | x real time (10 s) |",
                  "|---|---|---|---|---|---|---|---|"]
    for r in report["mechanisms"]:
        drift = "n/a" if r["drift"] is None else f"{r['drift']:.1e}"
        lines.append(f"| {r['name']} | {r['dof']} | {r['cold']['best']:.2f} | {r['warm']['best']:.3f} | "
                     f"{us(r['rk4'])} | {r['error']:.1e} | {drift} | {r['real_time_factor_10s']:.0f} |")
    if report.get("force_law"):
        f = report["force_law"]
        lines += ["", f"User force law: spring_mass RK4 step {us(f['builtin'])} us built in, {us(f['python'])} us "
                      "with the same law in Python."]
    lines += ["", f"Targets: {TARGETS}.", "", "Missed:", ""] + [f"- {line}" for line in report["missed"] or ["none"]]
    return "\n".join(lines) + "\n"


def plots(chains: list[dict], directory: Path) -> list[Path]:
    """Scaling plots over the n-link chain (log scales, peers on the same axes)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["dof"] for r in chains]

    def series(key: str) -> list[float]:
        return [r[key]["best"] * 1e6 if key in r else np.nan for r in chains]

    figures = {
        "scaling_forward_dynamics.png": ("forward dynamics per call from Python", "us per call",
                                         [("mb_sim fd (packed call)", "fd", "o-"),
                                          ("mb_sim fd (NumPy in/out)", "fd_numpy", "o--"),
                                          ("Pinocchio aba", "aba", "s-"), ("MuJoCo mj_forward", "mj_forward", "^-")]),
        "scaling_step.png": ("one physics step (N steps per C call)", "us per step",
                             [("mb_sim RK4", "rk4", "o-"), ("MuJoCo RK4", "mj_rk4", "^-"),
                              ("MuJoCo Euler (1 evaluation per step)", "mj_euler", "v--")]),
    }
    written = []
    for file, (title, unit, lines) in figures.items():
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for label, key, style in lines:
            ax.plot(n, series(key), style, label=label)
        ax.set(xscale="log", yscale="log", xlabel="chain links (DoF)", ylabel=unit, title=f"n-link chain: {title}")
        ax.set_xticks(n, [str(k) for k in n])
        ax.minorticks_off()
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        fig.tight_layout()
        fig.savefig(directory / file, dpi=110)
        plt.close(fig)
        written.append(directory / file)
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.plot(n, [r["cold"]["best"] for r in chains], "o-", label="mb_sim cold (derive, generate, compile)")
    ax.plot(n, [r["warm"]["best"] for r in chains], "o--", label="mb_sim warm (from the cache)")
    ax.plot(n, [r["pinocchio_load"]["best"] for r in chains], "s-", label="Pinocchio buildModelFromXML")
    ax.plot(n, [r["mujoco_load"]["best"] if "mujoco_load" in r else np.nan for r in chains], "^-",
            label="MuJoCo MjModel.from_xml_string")
    ax.set(xscale="log", yscale="log", xlabel="chain links (DoF)", ylabel="s", title="n-link chain: model load")
    ax.set_xticks(n, [str(k) for k in n])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    fig.savefig(directory / "scaling_load.png", dpi=110)
    plt.close(fig)
    written.append(directory / "scaling_load.png")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="arm6, Panda, Solo12 and chains of 2, 6, 12 only")
    parser.add_argument("--humanoids", action="store_true",
                        help="also G1 (35 DoF), Talos reduced (38) and Talos full (50, mimic grippers), floating")
    parser.add_argument("--plots", action="store_true",
                        help=f"also the n-link chain sweep (n = {', '.join(map(str, SWEEP))}) and its scaling plots")
    parser.add_argument("--replot", action="store_true",
                        help="only draw the scaling plots again from the chain sweep in OUT/latest.json")
    parser.add_argument("--no-mechanisms", action="store_true", help="skip the closed-loop and spring mechanisms")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where latest.json, latest.md and the plots go")
    args = parser.parse_args()
    if args.replot:
        chains = json.loads((args.out / "latest.json").read_text())["chains"]
        if not chains:
            sys.exit(f"{args.out / 'latest.json'} has no chain sweep: run with --plots")
        print("wrote " + ", ".join(str(p) for p in plots(chains, args.out)))
        return
    started = time.perf_counter()
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "arguments": sys.argv[1:], "machine": machine(compiler=True), "versions": versions(VERSIONS),
              "settings": {"repeats": REPEATS, "step_repeats": STEP_REPEATS, "repeat_seconds": REPEAT_SECONDS,
                           "step_dt": STEP_DT,
                           "agreement_tolerance": AGREEMENT, "unit": "seconds (per call or per step)"},
              "mujoco_model": MUJOCO_MODEL, "targets": TARGETS, "robots": [], "chains": [], "mechanisms": []}
    v = report["versions"]
    print(f"mb_sim dynamics benchmark ({report['machine']['cpu']}, {report['machine']['cores']} cores; "
          f"Pinocchio {v['pin']}, MuJoCo {v['mujoco']}); best of {REPEATS} (per call) and {STEP_REPEATS} (per step) "
          "interleaved repeats")
    print(f"MuJoCo model: {MUJOCO_MODEL}; contacts, limits and friction loss off, damping and armature zeroed, "
          "same gravity; ours with damping, friction and stops zeroed; MuJoCo Euler: 1 evaluation per step "
          "(semi-implicit), RK4: 4")
    print(f"targets: {TARGETS}")
    print(console_row(list(SHORT)))
    measured = {}

    def run(name: str, xml: str) -> dict:
        if name not in measured:
            measured[name] = measure(name, xml)
            r = measured[name]
            print(console_row(row(r)), flush=True)
            if r["mujoco_refused"]:
                print(f"  {name}: MuJoCo not timed: {r['mujoco_refused']}", flush=True)
        return measured[name]

    for name, xml in robots(args.quick) + (humanoids() if args.humanoids else []):
        report["robots"].append(run(name, xml))
    if args.plots:
        print(f"n-link chain sweep: n = {', '.join(map(str, SWEEP))}")
        report["chains"] = [run(f"chain{n}", chain_urdf(n)) for n in SWEEP]
    if not args.no_mechanisms:
        print("\nclosed loops, springs and motors (RK4 at 1 ms; error: largest constraint residual over 10 s; "
              "drift: energy change / largest kinetic energy, where nothing dissipates)")
        print(f"{'mechanism':16s} {'dof':>4s} {'cold [s]':>9s} {'warm [s]':>9s} {'RK4 step [us]':>14s} "
              f"{'error':>9s} {'drift':>9s} {'x real time':>12s}")
        for path, speeds, conservative in MECHANISMS:
            r = measure_mechanism(path, speeds, conservative)
            report["mechanisms"].append(r)
            drift = "n/a" if r["drift"] is None else f"{r['drift']:.1e}"
            print(f"{r['name']:16s} {r['dof']:4d} {r['cold']['best']:9.2f} {r['warm']['best']:9.3f} "
                  f"{r['rk4']['best'] * 1e6:14.2f} {r['error']:9.1e} {drift:>9s} "
                  f"{r['real_time_factor_10s']:12.0f}", flush=True)
        f = report["force_law"] = force_law_cost()
        linear, user = f["builtin"]["best"], f["python"]["best"]
        print(f"user force law: RK4 step {linear * 1e6:.2f} us with the built-in law, {user * 1e6:.2f} us with the "
              f"same law in Python ({(user - linear) / 4 * 1e6:.2f} us per call back, 4 per step)")
    report["missed"] = missed(report["robots"] + [r for r in report["chains"] if r not in report["robots"]])
    report["wall_seconds"] = time.perf_counter() - started
    report["machine"]["load_average_at_end"] = os.getloadavg()
    print("\nmissed targets:" + "".join(f"\n  {line}" for line in report["missed"]) if report["missed"]
          else "\nmissed targets: none")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "latest.md").write_text(markdown(report))
    written = [args.out / "latest.json", args.out / "latest.md"]
    if args.plots:
        written += plots(report["chains"], args.out)
    print(f"wrote {', '.join(str(p.relative_to(REPO) if p.is_relative_to(REPO) else p) for p in written)} "
          f"({report['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
