"""Quadrupeds standing on the compliant ground contact under joint position servos (plain PD).

Go1 (example-robot-data, floating base, ``ground=True``) starts 2 cm above the ground in its
standing joint angles, drops, and is held there by the simulator's joint servos at 1 ms RK4.
After it settles its base height must be steady, its feet must not creep, nothing may run away,
and the resting contact must agree with references derived here from the URDF text alone
(ElementTree, no mb_sim): the normal forces carry the robot's total weight, each foot's penetration
is its normal force over the contact stiffness (Hunt-Crossley at rest), and each foot's contact
point lies where the joint angles and base pose put the foot sphere (forward kinematics written
out from the URDF's joint origins and axes).

Two settings differ from the defaults, both needed for a legged robot at 1 ms: the servos run
without their computed-torque feed-forward (it cancels the joints' share of the contact forces:
Go1 then slides and turns, 0.3 m in 5 s), and the ground's damping and stick velocity are set for
feet that weigh 60 g (the defaults are sized for the whole robot on one point, which makes the
light feet's contact too stiff for RK4 at 1 ms: Go1 creeps forward at 3-5 cm/s, still at 0.25 ms).

Also: 60 s of standing and Solo12 (mesh feet), both ``slow``; Go1 on a 10 degree slope, feet-only
ground: held by ``stiction`` (feet still), creeping at the regularized law's speed without it; Go1 through ``mb_sim_node``, its
stance held by a topic-based ``<ros2_control>`` element, /odom equal to the library's trajectory.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from pinocchio_reference import example_robot_data_dir
from test_node import node_env, nodes, peer, shared_peer, stamp_of  # noqa: F401

#: Go1 and Solo12 compile with the ground in a minute each, cold: make test-slow
pytestmark = pytest.mark.slow

GO1 = example_robot_data_dir() / "go1_description" / "urdf" / "go1.urdf"
GRAVITY = 9.81
DT = 1e-3
#: Settling time after the drop [s]; everything after it is judged.
SETTLE = 2.0
#: Ground parameters beyond the defaults (none: the defaults keep light feet stable at 1 ms).
GROUND: dict[str, float] = {}
#: Judged figures: base height spread, horizontal foot drift, final speeds, force balance.
HEIGHT_STD, FOOT_DRIFT, REST_SPEED, WEIGHT_TOLERANCE = 5e-4, 1e-3, 1e-3, 2e-3


@dataclass(frozen=True)
class Quadruped:
    """A quadruped and how it stands: joint angles, servo gains, its foot links and their radius."""

    path: Path
    stance: dict[str, float]
    feet: tuple[str, ...]
    foot_radius: float
    kp: float
    kd: float
    start_height: float
    height_range: tuple[float, float]
    ground: dict[str, float] = field(default_factory=lambda: dict(GROUND))


def go1() -> Quadruped:
    """Go1 with hips at 0, thighs at 0.85 rad, calves at -1.7 rad (feet under the hips, base near 0.29 m),
    servo gains as Go1 controllers use them (kp 100 N m/rad, kd 2 N m s/rad)."""
    stance = {f"{leg}_{part}_joint": angle for leg in ("FR", "FL", "RR", "RL")
              for part, angle in (("hip", 0.0), ("thigh", 0.85), ("calf", -1.7))}
    return Quadruped(GO1, stance, ("FR_foot", "FL_foot", "RR_foot", "RL_foot"), 0.02, 100.0, 2.0,
                     0.32, (0.28, 0.32))


def solo12() -> Quadruped:
    """Solo12 in its SRDF "standing" stance (knees bent inwards), kp 10 N m/rad, kd 0.2 N m s/rad; STL
    mesh feet (contact at their hull points)."""
    stance = {f"{leg}_{joint}": angle for leg, sign, side in (("FL", 1, 1), ("FR", 1, -1), ("HL", -1, 1),
                                                              ("HR", -1, -1))
              for joint, angle in (("HAA", 0.1 * side), ("HFE", 0.8 * sign), ("KFE", -1.6 * sign))}
    return Quadruped(example_robot_data_dir() / "solo_description" / "robots" / "solo12.urdf", stance,
                     ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), 0.0, 10.0, 0.2, 0.26, (0.20, 0.24))


# -- references from the URDF text -------------------------------------------------------------
def total_mass(path: Path) -> float:
    """Sum of the links' ``<inertial><mass>`` [kg]."""
    return sum(float(m.get("value")) for m in ET.parse(path).getroot().iter("mass"))  # (inside <link><inertial> only)


def _origin(joint: ET.Element) -> np.ndarray:
    """The joint's ``<origin>`` as a 4x4 transform (URDF rpy: fixed axes x, y, z)."""
    origin = joint.find("origin")
    T = np.eye(4)
    if origin is not None:
        T[:3, :3] = Rotation.from_euler("xyz", [float(v) for v in origin.get("rpy", "0 0 0").split()]).as_matrix()
        T[:3, 3] = [float(v) for v in origin.get("xyz", "0 0 0").split()]
    return T


def foot_in_base(path: Path, foot: str, angles: dict[str, float]) -> np.ndarray:
    """The origin of link `foot` in the root link's frame at joint `angles`: the product of the
    joints' origins and rotations from the root down, read from the URDF text."""
    joints = {j.find("child").get("link"): j for j in ET.parse(path).getroot().findall("joint")}
    chain, link = [], foot
    while link in joints:
        chain.append(joints[link])
        link = joints[link].find("parent").get("link")
    T = np.eye(4)
    for joint in reversed(chain):
        T = T @ _origin(joint)
        if joint.get("type") in ("revolute", "continuous"):
            axis = np.array([float(v) for v in joint.find("axis").get("xyz").split()])
            turn = np.eye(4)
            turn[:3, :3] = Rotation.from_rotvec(axis / np.linalg.norm(axis) * angles[joint.get("name")]).as_matrix()
            T = T @ turn
    return T[:3, 3]


# -- the simulation -----------------------------------------------------------------------------
def standing_simulator(robot: Quadruped, cache: Path) -> Simulator:
    """A simulator of `robot` with the ground, plain-PD servos holding its stance, dropped from
    ``start_height`` (base level, at rest)."""
    sim = Simulator(load_urdf(robot.path, floating_base=True, ground=True), dt=DT, cache_dir=cache,
                    servo_feed_forward=False)
    return restart(sim, robot)


def restart(sim: Simulator, robot: Quadruped) -> Simulator:
    """Back to the drop: time 0, stance, base at ``start_height``, servos holding the stance."""
    sim.reset()
    sim.set_parameters(robot.ground)
    sim.set_state(positions={**robot.stance, "root_joint_x": 0.0, "root_joint_y": 0.0,
                             "root_joint_z": robot.start_height, "root_joint_qw": 1.0, "root_joint_qx": 0.0,
                             "root_joint_qy": 0.0, "root_joint_qz": 0.0},
                  velocities={name: 0.0 for name in sim.speed_names})
    for joint, angle in robot.stance.items():
        sim.servos.set_gains(joint, robot.kp, robot.kd)
        sim.servos.hold_position(joint, angle, now=sim.time)
    return sim


@dataclass
class Standing:
    """Samples every 0.1 s after settling: base heights, horizontal foot positions [sample, foot, xy]."""

    heights: np.ndarray
    feet: np.ndarray


def stand(sim: Simulator, robot: Quadruped, duration: float) -> Standing:
    """Run `duration` seconds from the drop; sample after SETTLE."""
    heights, feet = [], []
    sim.advance(SETTLE)
    while sim.time < duration - 1e-9:
        sim.advance(0.1)
        poses = sim.outputs(dynamics=False).link_poses
        heights.append(sim.q[sim.coordinate_names.index("root_joint_z")])
        feet.append([poses[foot][:2, 3] for foot in robot.feet])
    return Standing(np.array(heights), np.array(feet))


def contact_rows(sim: Simulator) -> dict[str, np.ndarray]:
    """``contact_states`` rows by contact name at the current state."""
    sim.model.evaluate_into(sim.time)
    rows = sim.model.layout.view(sim.model.buffers.out, "contact_states")
    return dict(zip(sim.model.contact_names, np.array(rows)))


def check_standing(sim: Simulator, robot: Quadruped, standing: Standing) -> None:
    """Steady height in range, no creeping feet, at rest, the weight carried, the contact at rest
    where the URDF's kinematics and Hunt-Crossley put it."""
    low, high = robot.height_range
    assert low <= standing.heights.mean() <= high, f"base height {standing.heights.mean():.4f} m"
    assert standing.heights.std() < HEIGHT_STD, f"base height std {standing.heights.std():.2e} m"
    drift = np.linalg.norm(standing.feet[-1] - standing.feet[0], axis=1)
    assert drift.max() < FOOT_DRIFT, f"feet drifted {np.round(drift * 1e3, 3)} mm"
    assert np.abs(sim.u).max() < REST_SPEED, f"not at rest: speeds up to {np.abs(sim.u).max():.2e}"
    rows = contact_rows(sim)
    weight = total_mass(robot.path) * GRAVITY
    fz = sum(row[11] for row in rows.values())
    assert abs(fz - weight) < WEIGHT_TOLERANCE * weight, f"contact forces carry {fz:.3f} N of {weight:.3f} N"
    parameters = dict(zip(sim.parameter_names, sim.model.buffers.params))
    stiffness = parameters["ground_stiffness"]
    for name, row in rows.items():
        if row[8] > 0:  # at rest: f_n = k d (p = 1, d' ~ 0)
            assert row[8] == pytest.approx(stiffness * row[6], rel=1e-3), name


def check_foot_kinematics(sim: Simulator, robot: Quadruped) -> None:
    """Each foot sphere's contact point is its centre (URDF forward kinematics from the joint angles
    and the base pose) minus its radius along z, and penetrates the plane z = 0 by -z."""
    angles = dict(zip(sim.coordinate_names, sim.q))
    joint_angles = {joint: angles[f"{joint}_q"] for joint in robot.stance}
    base = np.array([angles[f"root_joint_{c}"] for c in "xyz"])
    rotation = Rotation.from_quat([angles[f"root_joint_{c}"] for c in ("qx", "qy", "qz", "qw")]).as_matrix()
    rows = contact_rows(sim)
    for foot in robot.feet:
        centre = base + rotation @ foot_in_base(robot.path, foot, joint_angles)
        row = rows[f"ground/{foot}/0/sphere"]
        np.testing.assert_allclose(row[:3], centre - [0.0, 0.0, robot.foot_radius], atol=1e-9, err_msg=foot)
        assert row[6] == pytest.approx(robot.foot_radius - centre[2], abs=1e-9), foot


# -- tests --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def go1_sim(model_cache) -> Simulator:
    """Go1 with the ground, compiled once for the module."""
    return standing_simulator(go1(), model_cache)


def test_go1_stands_10s(go1_sim: Simulator):
    """Dropped from 2 cm, Go1 settles and stands 8 s: height steady, feet still, weight carried."""
    robot = go1()
    standing = stand(restart(go1_sim, robot), robot, 10.0)
    print(f"Go1 10 s: base height {standing.heights.mean():.5f} +- {standing.heights.std():.1e} m, foot drift "
          f"{np.linalg.norm(standing.feet[-1] - standing.feet[0], axis=1).max() * 1e3:.4f} mm")
    check_standing(go1_sim, robot, standing)
    check_foot_kinematics(go1_sim, robot)


def test_go1_feet_all_in_contact(go1_sim: Simulator):
    """Standing, exactly the four foot spheres touch the ground; the trunk, hips and legs do not."""
    robot = go1()
    stand(restart(go1_sim, robot), robot, SETTLE + 0.5)
    touching = sorted(name for name, row in contact_rows(go1_sim).items() if row[8] > 0)
    assert touching == sorted(f"ground/{foot}/0/sphere" for foot in robot.feet)


@pytest.mark.slow
def test_go1_stands_60s(go1_sim: Simulator):
    """The same for 60 s: no slow creep, no late runaway."""
    robot = go1()
    standing = stand(restart(go1_sim, robot), robot, 60.0)
    print(f"Go1 60 s: base height {standing.heights.mean():.5f} +- {standing.heights.std():.1e} m, foot drift "
          f"{np.linalg.norm(standing.feet[-1] - standing.feet[0], axis=1).max() * 1e3:.4f} mm")
    check_standing(go1_sim, robot, standing)
    check_foot_kinematics(go1_sim, robot)


@pytest.mark.slow
def test_solo12_stands_10s(model_cache):
    """Solo12 (mesh feet; a minute to compile) dropped from 2 cm stands as Go1 does."""
    robot = solo12()
    sim = standing_simulator(robot, model_cache)
    standing = stand(sim, robot, 10.0)
    print(f"Solo12 10 s: base height {standing.heights.mean():.5f} +- {standing.heights.std():.1e} m, foot drift "
          f"{np.linalg.norm(standing.feet[-1] - standing.feet[0], axis=1).max() * 1e3:.4f} mm")
    check_standing(sim, robot, standing)


def test_go1_reference_kinematics_match_link_poses(go1_sim: Simulator):
    """The test's own forward kinematics (URDF text) agree with the simulator's link poses at the
    stance, so the foot checks above compare like with like."""
    robot = go1()
    restart(go1_sim, robot)
    poses = go1_sim.outputs(dynamics=False).link_poses
    for foot in robot.feet:
        expected = foot_in_base(robot.path, foot, robot.stance) + [0.0, 0.0, robot.start_height]
        np.testing.assert_allclose(poses[foot][:3, 3], expected, atol=1e-12, err_msg=foot)


# -- the same through the node ------------------------------------------------------------------
NODE_SECONDS = 4.0


def standing_description(robot: Quadruped) -> str:
    """`robot`'s URDF made to stand in the node without a controller: a floating joint ``root_joint``
    whose origin is the drop height, this module's ``<ground>`` parameters, and a topic-based
    ``<ros2_control>`` element giving every stance joint a position interface starting (and so
    held) at its stance angle."""
    xml = robot.path.read_text()
    root = ET.parse(robot.path).getroot()
    children = {j.find("child").get("link") for j in root.findall("joint")}
    base = next(link.get("name") for link in root.findall("link") if link.get("name") not in children)
    floating = (f'<link name="world"/><joint name="root_joint" type="floating"><origin xyz="0 0 '
                f'{robot.start_height!r}"/><parent link="world"/><child link="{base}"/></joint>')
    joints = "".join(f'<joint name="{joint}"><command_interface name="position"/><state_interface name="position">'
                     f'<param name="initial_value">{angle!r}</param></state_interface></joint>'
                     for joint, angle in robot.stance.items())
    settings = " ".join(f'{key.removeprefix("ground_")}="{value!r}"' for key, value in robot.ground.items())
    extras = (f'<mb_sim><ground {settings}/></mb_sim>'
              '<ros2_control name="stance" type="system"><hardware><plugin>joint_state_topic_hardware_interface/'
              f'JointStateTopicSystem</plugin></hardware>{joints}</ros2_control>')
    start, end = xml.index(">", xml.index("<robot")) + 1, xml.rindex("</robot>")
    return xml[:start] + floating + xml[start:end] + extras + xml[end:]


def library_heights(sim: Simulator, robot: Quadruped, times: list[float]) -> list[float]:
    """The plain simulator's base height at each of `times` (increasing), from the drop."""
    restart(sim, robot)
    heights = []
    for t in times:
        sim.advance(round((t - sim.time) / DT) * DT)
        heights.append(float(sim.q[sim.coordinate_names.index("root_joint_z")]))
    return heights


def test_go1_stands_through_the_node(go1_sim: Simulator, nodes, peer, tmp_path):  # noqa: F811
    """mb_sim_node with Go1, its joints position-servoed by a topic-based <ros2_control> element
    (they hold their start: no controller needed), plain PD (servo_feed_forward false, gains as
    parameters): /odom's base pose stands as in the plain-Python test, and its height at every
    0.1 s of sim time equals the library simulator's from the same drop (1e-9 m)."""
    from nav_msgs.msg import Odometry
    from std_srvs.srv import SetBool

    robot = go1()
    urdf = tmp_path / "go1_standing.urdf"
    urdf.write_text(standing_description(robot))
    gains = [a for joint in robot.stance for a in ("-p", f"gains.{joint}.p:={robot.kp!r}", "-p",
                                                     f"gains.{joint}.d:={robot.kd!r}")]
    nodes.get("-p", f"urdf_file:={urdf}", "-p", "servo_feed_forward:=false", "-p", "start_paused:=true",
              "-p", "real_time_factor:=0.0", *gains)
    odometry = peer.collect(Odometry, "/odom")
    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False)).success
    assert peer.spin_until(lambda: odometry and stamp_of(odometry[-1]) >= NODE_SECONDS, 120), "no /odom to 4 s"
    nodes.close()
    by_time = {round(stamp_of(m) * 10): m.pose.pose.position for m in odometry  # every 0.1 s of sim time
               if stamp_of(m) <= NODE_SECONDS + 1e-9 and round(stamp_of(m) * 1000) % 100 == 0}
    tenths = sorted(k for k in by_time if k >= 1)  # (0.0 may have been published before the subscription)
    assert len(tenths) >= 10 * NODE_SECONDS - 1, f"/odom at {tenths}"
    expected = library_heights(go1_sim, robot, [k / 10 for k in tenths])
    np.testing.assert_allclose([by_time[k].z for k in tenths], expected, atol=1e-9)
    settled = [by_time[k] for k in tenths if k >= 10 * SETTLE]
    heights = np.array([p.z for p in settled])
    low, high = robot.height_range
    assert low <= heights.mean() <= high and heights.std() < HEIGHT_STD
    drift = math.hypot(settled[-1].x - settled[0].x, settled[-1].y - settled[0].y)
    assert drift < FOOT_DRIFT, f"base drifted {drift * 1e3:.3f} mm"


# -- on a slope: stiction holds, regularized friction creeps -------------------------------------
#: The slope [deg] (gravity tilted about the x axis: a sideways slope), its duration judged [s].
SLOPE_DEG, SLOPE_SECONDS = 10.0, 5.0
#: How close the regularized creep speed must come to the law's prediction (measured: 1e-4).
CREEP_TOLERANCE = 0.3


def feet_only_go1(cache: Path, stiction: bool) -> Simulator:
    """Go1 with only its four foot spheres touching (``<ground links>``), with or without
    ``stiction``, and gravity given as a vector (parameters ``gravity_g_y``, ``gravity_g_z``: a
    slope is a parameter change; its magnitude 9.81, so the ground's defaults are the upright ones)."""
    robot = go1()
    xml = robot.path.read_text()
    slope = math.radians(SLOPE_DEG)
    extension = (f'<mb_sim><gravity xyz="0 {GRAVITY * math.sin(slope)!r} {-GRAVITY * math.cos(slope)!r}"/>'
                 f'<ground links="{" ".join(robot.feet)}" stiction="{str(stiction).lower()}"/></mb_sim>')
    end = xml.rindex("</robot>")
    return Simulator(load_urdf(xml[:end] + extension + xml[end:], floating_base=True), dt=DT, cache_dir=cache,
                     servo_feed_forward=False)


def tilt_gravity(sim: Simulator, degrees: float) -> np.ndarray:
    """Gravity tilted by `degrees` about the world x axis (the robot stands on a sideways slope of
    that angle: the plane's normal is the world z axis); returns the gravity vector."""
    slope = math.radians(degrees)
    g = np.array([0.0, GRAVITY * math.sin(slope), -GRAVITY * math.cos(slope)])
    sim.set_parameters({"gravity_g_y": g[1], "gravity_g_z": g[2]})
    return g


@dataclass
class OnSlope:
    """After settling on the slope, every 0.1 s for SLOPE_SECONDS: times [s], foot positions
    [sample, foot, xy]; the contact rows at the end."""

    times: np.ndarray
    feet: np.ndarray
    rows: dict[str, np.ndarray]


def stand_on_slope(sim: Simulator, degrees: float) -> OnSlope:
    """Go1 dropped in its stance onto the slope (gravity tilted from the start), settled SETTLE s,
    then sampled SLOPE_SECONDS s."""
    robot = go1()
    restart(sim, robot)
    tilt_gravity(sim, degrees)
    sim.advance(SETTLE)
    times, feet = [], []
    for _ in range(round(SLOPE_SECONDS / 0.1) + 1):
        poses = sim.outputs(dynamics=False).link_poses
        times.append(sim.time)
        feet.append([poses[foot][:2, 3] for foot in robot.feet])
        sim.advance(0.1)
    return OnSlope(np.array(times), np.array(feet), contact_rows(sim))


def regularized_creep_speed(stick_velocity: float, friction: float, degrees: float) -> float:
    """The speed at which a body slides steadily down a slope of `degrees` under the regularized
    law: friction balances gravity's along-slope part, ``mu f_n v / sqrt(v^2 + v_s^2) = f_n r``
    with ``r = tan(a)``, so ``v = v_s r / sqrt(mu^2 - r^2)`` (the same for every foot whatever its
    load, so for the whole robot sliding as one)."""
    r = math.tan(math.radians(degrees))
    return stick_velocity * r / math.sqrt(friction ** 2 - r ** 2)


def check_forces_balance_gravity(rows: dict[str, np.ndarray], g: np.ndarray) -> None:
    """At rest or sliding steadily the contact forces sum to ``-m g`` (the tilted gravity's
    opposite: friction carries its along-slope part)."""
    weight = total_mass(go1().path) * np.linalg.norm(g)
    total = sum(row[9:12] for row in rows.values())
    np.testing.assert_allclose(total, -total_mass(go1().path) * g, atol=WEIGHT_TOLERANCE * weight)


@pytest.fixture(scope="module")
def slope_cache(model_cache) -> Path:
    return model_cache


@pytest.fixture(scope="module")
def go1_stiction(slope_cache: Path) -> Simulator:
    """Feet-only Go1 on a ground with stiction (12 anchor states), compiled once (about 8 s)."""
    return feet_only_go1(slope_cache, stiction=True)


@pytest.fixture(scope="module")
def go1_regularized(slope_cache: Path) -> Simulator:
    """Feet-only Go1 on the default ground (regularized friction), compiled once (about 8 s)."""
    return feet_only_go1(slope_cache, stiction=False)


def test_go1_stands_10s_with_stiction(go1_stiction: Simulator):
    """With stiction (upright gravity) Go1 stands as on the regularized ground: the same checks
    (height, rest, weight, f_n = k d, contact points where the URDF's kinematics put them). It
    stands 1.7 mm higher than there: the feet keep the spots they landed on instead of sliding
    out as the legs take the load."""
    robot = go1()
    restart(go1_stiction, robot)
    tilt_gravity(go1_stiction, 0.0)
    standing = stand(go1_stiction, robot, 10.0)
    check_standing(go1_stiction, robot, standing)
    check_foot_kinematics(go1_stiction, robot)
    assert go1_stiction.z.size == 3 * len(robot.feet)  # an anchor per foot sphere


def test_go1_holds_on_a_slope_with_stiction(go1_stiction: Simulator):
    """On a 10 degree slope with mu = 1 (Coulomb: it holds while tan(a) < mu) the feet do not move
    (measured 0.0000 mm in 5 s; the regularized ground creeps 680 mm, next test), each foot's
    friction inside its cone, the contact forces carry the tilted weight."""
    on_slope = stand_on_slope(go1_stiction, SLOPE_DEG)
    drift = np.linalg.norm(on_slope.feet[-1] - on_slope.feet[0], axis=1)
    assert drift.max() < FOOT_DRIFT, f"feet drifted {np.round(drift * 1e3, 4)} mm on the slope"
    friction = go1_stiction.parameter("ground_friction")
    for name, row in on_slope.rows.items():
        assert row[8] > 0 and math.hypot(row[9], row[10]) < friction * row[8], name
    check_forces_balance_gravity(on_slope.rows, tilt_gravity(go1_stiction, SLOPE_DEG))


def test_go1_creeps_on_a_slope_with_regularized_friction(go1_regularized: Simulator):
    """The default (regularized) friction on the same slope: Go1 slides down it at the speed the
    law predicts, ``v_s tan(a) / sqrt(mu^2 - tan(a)^2)`` (0.136 m/s for Go1's feet-only default
    v_s = 0.758 m/s), within CREEP_TOLERANCE, and every foot's friction is tan(a) of its normal
    force: the contrast showing the stiction test above can fail."""
    on_slope = stand_on_slope(go1_regularized, SLOPE_DEG)
    lateral = on_slope.feet[:, :, 1].mean(axis=1)
    speed = np.polyfit(on_slope.times, lateral, 1)[0]
    expected = regularized_creep_speed(go1_regularized.parameter("ground_stick_velocity"),
                                       go1_regularized.parameter("ground_friction"), SLOPE_DEG)
    assert speed == pytest.approx(expected, rel=CREEP_TOLERANCE), f"creeps at {speed:.4f} m/s, law {expected:.4f} m/s"
    ratio = math.tan(math.radians(SLOPE_DEG))
    for name, row in on_slope.rows.items():
        assert math.hypot(row[9], row[10]) / row[8] == pytest.approx(ratio, rel=0.01), name
    check_forces_balance_gravity(on_slope.rows, tilt_gravity(go1_regularized, SLOPE_DEG))
