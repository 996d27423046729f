"""The start inside the joint limits, and a joint stop that behaves the same at any step size (issue 23, item 2).

Seven robots of example-robot-data put a joint outside its position limits at q = 0 (kinova's joints 2,
3 and 5, panda's joint 4, the quadrupeds' knees...): started there, the stops threw the joints out,
harder the smaller the step, since the stop's stiffness grew as 1/dt^2.  The neutral state now puts
every joint at its nearest limit (the dependent joints of mimics and loops solved, or the independent
ones moved where a dependent one is outside), with one JointLimitWarning; a stop's stiffness is
bounded as dt shrinks.  The robots are loaded from the installed example-robot-data package.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim.sim import JointLimitWarning, Simulator
from pinocchio_reference import example_robot_data_dir
from test_assembly import four_bar_branches, wrapped

ROBOTS = example_robot_data_dir()
KINOVA = ROBOTS / "kinova_description/robots/kinova.urdf"
PANDA = ROBOTS / "panda_description/urdf/panda.urdf"
TEST_URDF = Path(__file__).resolve().parent / "urdf"
#: kinova.urdf's joints whose lower limit is above 0 [rad].
KINOVA_LOWER = {"j2s6s200_joint_2": 0.820304748437, "j2s6s200_joint_3": 0.331612557879,
                "j2s6s200_joint_5": 0.523598775598}
STEPS = (1e-3, 1e-4, 1e-5)

MIMIC = """<?xml version="1.0"?>
<robot name="mimic_pair">
  <link name="world"/>
  <link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
    <inertia ixx="1e-3" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="finger"><inertial><origin xyz="0.1 0 0"/><mass value="0.2"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="world"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
  <joint name="finger_joint" type="revolute"><parent link="arm"/><child link="finger"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 0 1"/><limit lower="0.4" upper="1.0" effort="10" velocity="5"/>
    <mimic joint="shoulder" multiplier="2" offset="0"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def cache_dir(model_cache) -> Path:
    return model_cache


def built(path: Path, cache_dir: Path, **options) -> tuple[Simulator, list[str]]:
    """The simulator, and the messages of its JointLimitWarnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator(path, cache_dir=cache_dir, **options)
    return sim, [str(w.message) for w in caught if issubclass(w.category, JointLimitWarning)]


def test_kinova_starts_at_its_nearest_limits_with_one_line_and_reset_returns_there(cache_dir):
    """Joints 2, 3 and 5 start at their lower limits (the nearest point), the others at 0; one line
    names the three with how far they moved; reset() after a run comes back to this state."""
    sim, messages = built(KINOVA, cache_dir)
    positions = sim.outputs(False).joint_positions
    for joint, value in positions.items():
        assert value == KINOVA_LOWER.get(joint, 0.0), joint
    assert sim.beyond_limits() == {}
    (message,) = messages
    assert message.startswith("robot 'kinova': joint limits: the URDF's zero configuration lies outside the position "
                              "limits: starting at the nearest limit, moving ")
    assert "j2s6s200_joint_2 by +0.8203, j2s6s200_joint_3 by +0.3316, j2s6s200_joint_5 by +0.5236" in message
    start = sim.q
    sim.advance(0.1)
    sim.reset()
    assert np.array_equal(sim.q, start) and not sim.u.any()


@pytest.mark.parametrize("dt", STEPS[:2])
def test_kinova_left_alone_gains_no_energy(cache_dir, dt):
    """With no input the arm rests on its stops or falls away from them: its energy (links and
    gravity) never rises above the start's (it rose by 142 J in 1 s at 0.1 ms, started in the stops)."""
    sim, _ = built(KINOVA, cache_dir, dt=dt)
    start = sim.outputs(False).energy
    highest = start
    for _ in range(6):
        sim.advance(0.05)
        highest = max(highest, sim.outputs(False).energy)
    assert highest <= start + 1e-9 * max(1.0, abs(start))


def test_panda_joint4_starts_at_its_upper_limit(cache_dir):
    """panda_joint4's limits are [-3.0718, -0.0698]: it starts at -0.0698; every other joint at 0."""
    sim, messages = built(PANDA, cache_dir)
    positions = sim.outputs(False).joint_positions
    assert positions["panda_joint4"] == -0.0698
    assert all(value == 0.0 for joint, value in positions.items() if joint != "panda_joint4")
    assert sim.beyond_limits() == {}
    (message,) = messages
    assert message.endswith("moving panda_joint4 by -0.0698 (rad or m)")


def test_a_stop_started_in_throws_the_joint_out_alike_at_every_step_without_gaining_energy(cache_dir):
    """Kinova's joint 2 set 0.3 rad below its lower limit, at rest: until it leaves the stop the energy
    (links, gravity) stays below the start's plus the stop's spring energy k d^2 / 2, and the motion is
    the one the step size converges to: the stop's stiffness and the speed it leaves with are the same
    at 1 ms, 0.1 ms and 0.01 ms (they grew as 1/dt^2 and 1/dt: 24, 226 and 2,261 rad/s)."""
    joint, depth = "j2s6s200_joint_2", 0.3
    lower = KINOVA_LOWER[joint]
    leaving, stiffness = [], []
    for dt in STEPS:
        sim, _ = built(KINOVA, cache_dir, dt=dt)
        sim.set_state({**{j: 1.5 for j in KINOVA_LOWER}, joint: lower - depth})
        coordinate, speed = sim.joint_indices[joint]
        assert sim.q[coordinate] == lower - depth  # the user's state in the stop is kept
        k = sim.parameter(f"{joint}_limit_stiffness")
        start = sim.outputs(False).energy + 0.5 * k * depth**2
        highest = -math.inf
        for _ in range(round(0.1 / dt)):
            sim.step()
            highest = max(highest, sim.outputs(False).energy + 0.5 * k * max(0.0, lower - sim.q[coordinate]) ** 2)
            if sim.q[coordinate] >= lower:
                break
        assert sim.q[coordinate] >= lower, f"still in the stop after 0.1 s at dt {dt:g}"
        assert highest <= start, f"dt {dt:g}"
        leaving.append(sim.u[speed])
        stiffness.append(k)
    assert len(set(stiffness)) == 1, stiffness
    assert max(leaving) - min(leaving) < 0.02 * max(leaving), leaving


def test_a_mimic_joint_outside_its_limits_moves_the_joint_it_mimics(cache_dir, tmp_path):
    """finger_joint = 2 shoulder with limits [0.4, 1]: at zero it is outside; the start puts it at
    0.4 and solves shoulder = 0.2 (the constraint closed), and the line names both."""
    path = tmp_path / "mimic_pair.urdf"
    path.write_text(MIMIC)
    sim, messages = built(path, cache_dir)
    positions = sim.outputs(False).joint_positions
    assert positions["finger_joint"] == pytest.approx(0.4, abs=1e-12)
    assert positions["shoulder"] == pytest.approx(0.2, abs=1e-12)
    assert sim.outputs().position_error < 1e-12
    (message,) = messages
    assert message.endswith("moving shoulder by +0.2, finger_joint by +0.4 (rad or m)")


def test_initial_positions_beyond_a_limit_are_kept_and_named(cache_dir, tmp_path):
    """A user's initial position is kept even in a stop (their choice, as set_state's), with the
    line saying so; a dependent joint it pushes beyond its limits is named too."""
    path = tmp_path / "mimic_pair.urdf"
    path.write_text(MIMIC)
    sim, messages = built(path, cache_dir, initial_positions={"shoulder": 0.1})
    assert sim.outputs(False).joint_positions == {"shoulder": 0.1, "finger_joint": pytest.approx(0.2, abs=1e-12)}
    (message,) = messages
    assert "finger_joint cannot move inside its limits without moving an initial position given" in message
    sim, messages = built(KINOVA, cache_dir, initial_positions={"j2s6s200_joint_2": 0.5})
    assert sim.outputs(False).joint_positions["j2s6s200_joint_2"] == 0.5
    (message,) = messages
    assert ("initial position j2s6s200_joint_2 = 0.5 beyond its limits [0.820305, 5.46288]: kept as given, the joint "
            "starts in its stop") in message


def test_a_loop_whose_input_is_outside_its_limits_closes_at_the_nearest_limit(cache_dir, tmp_path):
    """Norton's crank-rocker with the crank limited to [0.5, 1]: the crank starts at 0.5 and the
    coupler and rocker close the loop there, on one of the four-bar's two assemblies."""
    urdf = (TEST_URDF / "loop_crank_rocker_open.urdf").read_text()
    urdf = urdf.replace('<joint name="crank_joint" type="continuous">', '<joint name="crank_joint" type="revolute">')
    urdf = urdf.replace('<limit effort="10" velocity="50"/>',
                        '<limit lower="0.5" upper="1.0" effort="10" velocity="50"/>')
    path = tmp_path / "crank_limited.urdf"
    path.write_text(urdf)
    sim, messages = built(path, cache_dir)  # (and an AssemblyWarning: the loop is drawn open)
    positions = sim.outputs(False).joint_positions
    q = np.array([positions[j] for j in ("crank_joint", "coupler_joint", "rocker_joint")])
    assert q[0] == 0.5 and sim.outputs().position_error < 1e-12
    assert min(np.abs(wrapped(q - branch)).max() for branch in four_bar_branches(0.5).values()) < 1e-9
    (message,) = messages
    assert "moving crank_joint by +0.5" in message


NECK = """<robot name="neck"><link name="base"/>
  <link name="yaw_link"/>
  <link name="head"><inertial><origin xyz="0 0.1 0"/><mass value="1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="yaw" type="continuous"><parent link="base"/><child link="yaw_link"/><axis xyz="0 0 1"/></joint>
  <joint name="roll" type="continuous"><parent link="yaw_link"/><child link="head"/><origin xyz="0 0 0.1"/>
    <axis xyz="1 0 0"/></joint></robot>"""


def test_a_start_where_the_mass_matrix_is_singular_is_one_line_naming_the_joints():
    # iCub's neck (example-robot-data): point-mass head links turned, at q = 0, about an axis
    # through their mass; the first step divided by zero.  Here the head's point mass lies on the
    # yaw axis once roll = pi/2: the yaw moves nothing there (at other angles it does, so the
    # load's generic check passes).
    from mb_sim.urdf import URDFError

    Simulator(NECK)  # roll = 0: the head 0.1 m off the yaw axis
    with pytest.raises(URDFError, match=r"singular where the robot starts: joint\(s\) 'yaw'.*rotational inertia"):
        Simulator(NECK, initial_positions={"roll": math.pi / 2})
