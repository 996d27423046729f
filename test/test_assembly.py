"""Assembly (issue 22): a model whose loops do not close at zero joint angles is built from the
initial positions given, closed on the branch nearest them, and refused, in one line, only where no
closed configuration is near them; ``mb-sim simulate --rtol/--atol``; passive joints of a linkage
left out of the effort-limit warning.

The mechanism is Norton's Example 4-1 four-bar (test/urdf/loop_crank_rocker_open.urdf), drawn with
every link along its parent's x axis so the loop is open at q = 0, and its non-Grashof variant
(loop_triple_rocker_open.urdf).  The references are the four-bar's closed form (law of cosines,
written out here), Norton's published angles, and a scan of the closed configurations.
"""
from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sensor_msgs.msg import JointState

from mb_sim.resources import robot_path
from mb_sim.sim import AssemblyError, AssemblyWarning, EffortLimitWarning, Simulator
from mb_sim.sim.assembly import assemble
from mb_sim.sim.constraint_kinematics import ConstraintKinematics
from test_node import nodes, node_env, peer, reset, shared_peer, stamp_of  # noqa: F401

MB_SIM = Path(sys.executable).parent / "mb-sim"
TEST_URDF = Path(__file__).resolve().parent / "urdf"
OPEN = TEST_URDF / "loop_crank_rocker_open.urdf"
TRIPLE = TEST_URDF / "loop_triple_rocker_open.urdf"
#: Norton's Example 4-1 in units of 0.1 m: ground d, crank a, coupler b, rocker c [m].
D, A, B, C = 0.6, 0.2, 0.7, 0.9
#: The non-Grashof variant's input link [m].
A_TRIPLE = 0.45
JOINTS = ("crank_joint", "coupler_joint", "rocker_joint")


def wrapped(angle):
    """Angles in [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def four_bar_branches(theta2: float, a: float = A) -> dict[str, np.ndarray] | None:
    """Joint angles (crank, coupler, rocker) of the open and the crossed assembly at crank angle
    `theta2`, by the law of cosines in triangle B C O4 (None where the loop cannot close).

    Norton's absolute angles: theta3 of the coupler (B to C), theta4 of the rocker (O4 to C); the
    URDF's rocker frame runs from C to O4, so rocker_joint = theta4 + pi - theta3."""
    pin_b = a * np.array([np.cos(theta2), np.sin(theta2)])
    to_o4 = np.array([D, 0.0]) - pin_b
    f = np.linalg.norm(to_o4)
    cosine = (B**2 + f**2 - C**2) / (2 * B * f)  # the angle at B between B->O4 and B->C
    if abs(cosine) > 1:
        return None
    delta, gamma = np.arctan2(to_o4[1], to_o4[0]), np.arccos(cosine)
    branches = {}
    for name, theta3 in (("open", delta + gamma), ("crossed", delta - gamma)):
        pin_c = pin_b + B * np.array([np.cos(theta3), np.sin(theta3)])
        theta4 = np.arctan2(pin_c[1], pin_c[0] - D)
        branches[name] = wrapped([theta2, theta3 - theta2, theta4 + np.pi - theta3])
    return branches


def joint_angles(sim: Simulator) -> np.ndarray:
    positions = sim.outputs(dynamics=False).joint_positions
    return np.array([positions[j] for j in JOINTS])


def nearest(branches: dict[str, np.ndarray], start: np.ndarray) -> str:
    return min(branches, key=lambda name: np.linalg.norm(wrapped(branches[name] - start)))


def assembled(path: Path, cache_dir: Path, **initial: float) -> tuple[Simulator, list[str]]:
    """The simulator built from `initial`, and its assembly warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator(path, cache_dir=cache_dir, initial_positions=initial or None)
    return sim, [str(w.message) for w in caught if issubclass(w.category, AssemblyWarning)]


@pytest.fixture(scope="module")
def cache_dir(model_cache) -> Path:
    return model_cache


# -- (a) nothing given -----------------------------------------------------------------------------
def test_with_nothing_given_the_dependent_joints_close_the_loop_and_a_warning_says_what_moved(cache_dir):
    """The crank-rocker closes at every crank angle: the crank (independent) stays at its URDF zero,
    coupler and rocker take one of the two assemblies there (mirror images, equally near zero)."""
    sim, messages = assembled(OPEN, cache_dir)
    q = joint_angles(sim)
    assert q[0] == 0.0 and sim.outputs().position_error < 1e-12
    branches = four_bar_branches(0.0)
    assert min(np.abs(wrapped(q - b)).max() for b in branches.values()) < 1e-10
    (message,) = messages
    gap = A + B + C - D  # the rocker's far end from O4 with every link along x
    assert message.startswith(f"robot 'crank_rocker_open': assembly: the URDF's zero configuration does not close "
                              f"loop joint 'rocker_pin' (residual {gap:.3g})")
    assert f"coupler_joint by {q[1]:+.4g}, rocker_joint by {q[2]:+.4g}" in message and "crank_joint" not in message


def test_with_nothing_given_a_non_grashof_input_moves_to_the_nearest_closed_configuration(cache_dir):
    """The triple rocker cannot close with its input at zero (|theta2| >= 14.62 degrees): assembly
    frees it too and takes the closed configuration nearest zero, as a scan of both branches over
    the input's range finds it."""
    sim, messages = assembled(TRIPLE, cache_dir)
    q = joint_angles(sim)
    limit = math.acos((A_TRIPLE**2 + D**2 - (C - B) ** 2) / (2 * A_TRIPLE * D))
    assert abs(q[0]) >= limit - 1e-12 and sim.outputs().position_error < 1e-12
    scan = [branch for theta2 in np.linspace(-np.pi, np.pi, 20001)
            if (branches := four_bar_branches(theta2, A_TRIPLE)) for branch in branches.values()]
    distances = np.linalg.norm(wrapped(np.array(scan)), axis=1)
    assert np.linalg.norm(q) <= distances.min() + 1e-9
    assert np.linalg.norm(q) >= distances.min() - 1e-4  # the scan's grid: 3e-4 rad
    (message,) = messages
    assert f"moving crank_joint by {q[0]:+.4g}, coupler_joint by {q[1]:+.4g}, rocker_joint by {q[2]:+.4g}" in message


# -- (b) from initial positions -----------------------------------------------------------------
def nortons_angles(q: np.ndarray) -> np.ndarray:
    """Norton's theta3 and theta4 [degrees] of joint angles (crank, coupler, rocker)."""
    theta3 = q[0] + q[1]
    return np.degrees([theta3, wrapped(theta3 + q[2] - np.pi)])


def test_an_initial_crank_angle_is_held_and_the_nearest_branch_solved(cache_dir):
    """Against the closed form, itself checked against Norton's published open assembly at
    theta2 = 30 degrees: theta3 = 88.84, theta4 = 117.29 degrees."""
    assert nortons_angles(four_bar_branches(math.radians(30.0))["open"]) == pytest.approx([88.84, 117.29], abs=0.005)
    sim, messages = assembled(OPEN, cache_dir, crank_joint=0.7)
    q = joint_angles(sim)
    assert q[0] == 0.7 and sim.outputs().position_error < 1e-12 and messages == []
    branches = four_bar_branches(0.7)
    choice = nearest(branches, np.array([0.7, 0.0, 0.0]))  # the URDF's zeros for the others
    assert choice == "open"
    np.testing.assert_allclose(wrapped(q - branches[choice]), 0.0, atol=1e-10)
    norton, _ = assembled(OPEN, cache_dir, crank_joint=math.radians(30.0))
    assert nortons_angles(joint_angles(norton)) == pytest.approx([88.84, 117.29], abs=0.005)


def test_a_rough_rocker_guess_selects_the_other_branch_and_is_reported(cache_dir):
    """Given with the crank, the rocker angle over-determines the loop: it is a guess, and the
    branch whose rocker is nearest it is taken (the crossed one); the warning gives the value
    solved.  The crank stays exactly as given."""
    guess = 2.0
    sim, messages = assembled(OPEN, cache_dir, crank_joint=0.7, rocker_joint=guess)
    q = joint_angles(sim)
    branches = four_bar_branches(0.7)
    choice = min(branches, key=lambda name: abs(wrapped(branches[name][2] - guess)))
    assert choice == "crossed"
    assert q[0] == 0.7 and sim.outputs().position_error < 1e-12
    np.testing.assert_allclose(wrapped(q - branches[choice]), 0.0, atol=1e-10)
    (message,) = messages
    assert (f"initial position rocker_joint = {guess:g} is determined by the other values given: it chose the "
            f"assembly branch, on which it is {q[2]:.6g}") in message


def test_a_value_the_constraints_fix_contradicts_them(repo, cache_dir):
    """A mimic joint has one position for its reference's: a different one is refused, naming
    both values (as set_state refuses it)."""
    with pytest.raises(AssemblyError, match=r"position 0.7 of 'finger_joint_q' contradicts the constraints "
                                            r"\(consistent value -0.05\)"):
        Simulator(repo / "test" / "urdf" / "kinematic_zoo.urdf", cache_dir=cache_dir,
                  initial_positions={"shoulder": 0.3, "finger_joint": 0.7})


def test_no_closed_configuration_near_the_values_is_refused_quickly_in_one_line(cache_dir):
    """The triple rocker's input at 0.1 rad, inside the angle it cannot reach."""
    start = time.perf_counter()
    with pytest.raises(AssemblyError) as refused:
        Simulator(TRIPLE, cache_dir=cache_dir, initial_positions={"crank_joint": 0.1})
    elapsed = time.perf_counter() - start
    message = str(refused.value)
    assert "\n" not in message and elapsed < 1.0, elapsed
    assert message.startswith("no configuration closing the constraints found near the initial positions "
                              "crank_joint = 0.1: smallest residual ")
    assert "in loop joint 'rocker_pin'" in message and "--initial" in message and "initial_positions" in message
    assert refused.value.residual > 0.01


def test_where_gauss_newton_stalls_the_homotopy_closes_the_loop(cache_dir):
    """From this start (crank held, coupler and rocker where Gauss-Newton's least-squares steps
    stop lowering the residual) the Newton homotopy follows Phi(q) = (1 - s) Phi(q0) to a closed
    configuration: on the four-bar's nearer branch at that crank angle."""
    sim, _ = assembled(OPEN, cache_dir, crank_joint=0.7)
    kinematics = ConstraintKinematics(sim.model, sim.model.constraint_labels)
    start = np.array([0.49, 0.96, -0.56])
    assembly = assemble(kinematics, start, {0}, 0.0, angles=[0, 1, 2])
    assert assembly.method == "homotopy" and assembly.closed == 2 and assembly.evaluations < 1000
    branches = four_bar_branches(0.49)
    assert assembly.q[0] == 0.49
    np.testing.assert_allclose(wrapped(assembly.q - branches[nearest(branches, start)]), 0.0, atol=1e-10)


# -- (e) the assembled state simulates on its constraints -------------------------------------------
def test_the_assembled_four_bar_moves_on_its_constraints(cache_dir):
    sim, _ = assembled(OPEN, cache_dir, crank_joint=0.7)
    start = sim.q
    for _ in range(10):
        sim.advance(0.1)
        assert sim.outputs().position_error < 1e-10
    assert abs(sim.q[0] - start[0]) > 0.1  # gravity swung it
    sim.reset()
    np.testing.assert_array_equal(sim.q, start)


# -- (c) the command line -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mb_sim(cache_dir):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(MB_SIM), *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "MB_SIM_CACHE_DIR": str(cache_dir)})
    return run


def test_simulate_assembles_from_initial(mb_sim, tmp_path):
    result = mb_sim("simulate", str(OPEN), "--initial", "crank_joint=0.7", "--duration", "0.2",
                    "--csv", str(tmp_path / "run.csv"))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "run.csv") as table:
        first = next(csv.DictReader(table))
    q = np.array([float(first[f"{joint}_q"]) for joint in JOINTS])
    assert q[0] == 0.7
    np.testing.assert_allclose(wrapped(q - four_bar_branches(0.7)["open"]), 0.0, atol=1e-10)


def test_simulate_refuses_initial_values_no_closed_configuration_meets_in_one_line(mb_sim):
    result = mb_sim("simulate", str(TRIPLE), "--initial", "crank_joint=0.1", "--duration", "0.2")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines()
              if line.startswith("mb-sim: ") and not line.startswith("mb-sim: warning:")]
    assert errors == [result.stderr.strip().splitlines()[-1]]
    assert errors[0].startswith("mb-sim: --initial: no configuration closing the constraints found near the "
                                "initial positions crank_joint = 0.1: smallest residual ")


# -- (f) tolerances and the effort-limit warning --------------------------------------------------------
def test_rtol_and_atol_reach_the_adaptive_integrator(mb_sim, cache_dir, tmp_path):
    runs = {}
    for tolerance in ("1e-3", "1e-11"):
        path = tmp_path / f"{tolerance}.csv"
        result = mb_sim("simulate", "pendulum", "--integrator", "DOP853", "--rtol", tolerance, "--atol", tolerance,
                        "--initial", "hinge=1.2", "--duration", "2", "--sample-every", "500", "--csv", str(path))
        assert result.returncode == 0, result.stderr
        runs[tolerance] = np.loadtxt(path, delimiter=",", skiprows=1)
    loose = Simulator(robot_path("pendulum"), integrator="DOP853", rtol=1e-3, atol=1e-3, cache_dir=cache_dir,
                      initial_positions={"hinge": 1.2})
    trajectory = loose.simulate(2.0, 500)  # as mb-sim samples it: one solve_ivp call per sample
    np.testing.assert_allclose(runs["1e-3"][:, 1], trajectory.q[:, 0], rtol=0, atol=1e-12)
    assert abs(runs["1e-3"][-1, 1] - runs["1e-11"][-1, 1]) > 1e-9  # the tolerances made a difference


@pytest.mark.parametrize("option, value, problem", [
    ("--rtol", "0", "must be positive, got '0'"), ("--atol=-1e-6", None, "must be positive, got '-1e-6'"),
    ("--rtol", "nan", "not a finite number: 'nan'"), ("--atol", "inf", "not a finite number: 'inf'")])
def test_bad_tolerances_are_one_line_naming_the_flag(mb_sim, option, value, problem):
    result = mb_sim("simulate", "pendulum", "--integrator", "RK45", "--duration", "0.1",
                    *([option] if value is None else [option, value]))  # (a negative value: --atol=-1e-6)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"mb-sim: argument {option.split('=')[0]}: {problem}")


def test_the_simulator_refuses_bad_tolerances(cache_dir):
    for name in ("rtol", "atol"):
        for bad in (0.0, -1.0, math.inf, math.nan):
            with pytest.raises(ValueError, match=f"{name} must be a positive finite number"):
                Simulator(robot_path("pendulum"), cache_dir=cache_dir, **{name: bad})


def effort_warnings(path, cache_dir) -> tuple[Simulator, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator(path, cache_dir=cache_dir)
    return sim, [str(w.message) for w in caught if issubclass(w.category, EffortLimitWarning)]


def test_passive_joints_of_a_linkage_are_not_listed_without_an_effort_limit(cache_dir):
    """The coupler and rocker (and the slider-crank's rod) have no effort limit, but the loop
    drives them: their coordinates are the dependent ones.  The triple rocker's input has none
    either, and it is the one listed."""
    for name in ("four_bar", "slider_crank"):
        sim, messages = effort_warnings(robot_path(name), cache_dir)
        unlimited = [j for j, limit in zip(sim.actuated_joints, sim.effort_limits) if not math.isfinite(limit)]
        assert unlimited and all(f"{j}_q" in sim.dependent_coordinates for j in unlimited), name
        assert messages == [], name
    sim, messages = effort_warnings(TRIPLE, cache_dir)
    assert sim.dependent_coordinates == ["coupler_joint_q", "rocker_joint_q"]
    assert messages == ["robot 'triple_rocker_open': joint crank_joint has no effort limit in the URDF: efforts are "
                        "not clamped; set default_effort_limit (mb-sim: --default-effort-limit)"]


# -- (d) the node ------------------------------------------------------------------------------------
def test_the_node_assembles_from_its_initial_positions(nodes, peer):
    nodes.get("-p", f"urdf_file:={OPEN}", "-p", "initial_positions.crank_joint:=0.7")
    states = peer.collect(JointState, "/joint_states")
    reset(peer)  # publishes the initial state at sim time 0
    assert peer.spin_until(lambda: any(stamp_of(s) == 0.0 for s in states), 20)
    first = next(s for s in states if stamp_of(s) == 0.0)
    position = dict(zip(first.name, first.position))
    q = np.array([position[j] for j in JOINTS])
    assert q[0] == 0.7
    np.testing.assert_allclose(wrapped(q - four_bar_branches(0.7)["open"]), 0.0, atol=1e-10)
