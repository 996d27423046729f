"""A humanoid standing with its feet flat on the compliant ground under joint PD, RK4 at 1 ms.

Unitree G1 (example-robot-data, 29 joints, 33.3 kg) gets a floating base and the ground plane
touched by its feet only (``ground=[left_ankle_roll_link, right_ankle_roll_link]``, as
``<ground links="...">``: with all 36 collision shapes, 30 of them meshes of ~24 hull points,
the generated C is 2.2 MB, over the compiler's limit).  It starts in its zero pose with the soles
just touching (the base height from the feet's collision spheres by forward kinematics written
out here from the URDF text), the simulator's joint servos (plain PD: no feed-forward with
contacts) holding the pose.  Everything else is the defaults a user gets: 1 ms RK4, the ground's
default stiffness, damping and stick velocity.

Judged over 10 s after a 4 s settle, against references derived here: the base height steady
(spread < 0.05 mm, mean within 3 mm below the touching height), the base tilt < 2 deg, the feet
still (< 1 mm), the contact normal forces summing to m g (0.5 %, m from the URDF's masses), each
contact at rest at f_n = k d, the mean penetration m g / (n k), each contact point where the URDF's
kinematics put its foot sphere, no runaway.  Showing the checks bite: the same robot without the
ground falls freely (centre of mass z0 - g t^2 / 2), and a ground of half the stiffness sinks by
the extra mean penetration m g / (n k) and fails the standing check.

PD gains: stiff enough for the robot not to topple as an inverted pendulum on its ankles (each
ankle's kp above m g h / 2 = 115 N m/rad, h = 0.70 m the centre of mass above the soles), dampers
light enough for the light ankle links at 1 ms (ankle roll: I = 2.7e-4 kg m^2, kd dt / I < 2.8).
The simulator's default gains (10 Hz about each joint's smallest effective inertia: ankle pitch
kp 7 N m/rad) let it topple within 1.5 s.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from pinocchio_reference import example_robot_data_dir

G1 = example_robot_data_dir() / "g1_description" / "urdf" / "g1_29dof_rev_1_0.urdf"
FEET = ("left_ankle_roll_link", "right_ankle_roll_link")
GRAVITY = 9.81
DT = 1e-3
#: Settling (the feet slide up to 2 mm while the joints' sag and the contacts' tangential loads
#: relax, done by 4 s), then 10 s judged.
SETTLE, DURATION = 4.0, 14.0
#: (kp [N m/rad], kd [N m s/rad]) by joint-name part, first match; other joints (arms): the
#: simulator's default gains.
GAINS = (("ankle_roll", (300.0, 0.6)), ("ankle_pitch", (900.0, 4.5)), ("knee", (900.0, 9.0)),
         ("hip", (900.0, 9.0)), ("waist", (900.0, 9.0)))
#: Judged figures: height spread and sag below touching, tilt, foot drift, force balance, rest speed.
HEIGHT_STD, HEIGHT_SAG, TILT_DEG, FOOT_DRIFT, WEIGHT_TOLERANCE, REST_SPEED = 5e-5, 3e-3, 2.0, 1e-3, 5e-3, 1e-3


# -- references from the URDF text -------------------------------------------------------------
def urdf_root() -> ET.Element:
    return ET.parse(G1).getroot()


def total_mass() -> float:
    """Sum of the links' ``<inertial><mass>`` [kg]."""
    return sum(float(m.get("value")) for m in urdf_root().iter("mass"))


def _transform(rpy: str, xyz: str) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("xyz", [float(v) for v in rpy.split()]).as_matrix()
    T[:3, 3] = [float(v) for v in xyz.split()]
    return T


def link_in_base(link: str, angles: dict[str, float]) -> np.ndarray:
    """The 4x4 pose of `link` in the root link's frame at joint `angles` (0 where not given): the
    product of the joints' origins and axis rotations from the root down."""
    joints = {j.find("child").get("link"): j for j in urdf_root().findall("joint")}
    chain = []
    while link in joints:
        chain.append(joints[link])
        link = joints[link].find("parent").get("link")
    T = np.eye(4)
    for joint in reversed(chain):
        origin = joint.find("origin")
        T = T @ _transform(origin.get("rpy", "0 0 0"), origin.get("xyz", "0 0 0"))
        if joint.get("type") in ("revolute", "continuous"):
            axis = np.array([float(v) for v in joint.find("axis").get("xyz").split()])
            turn = np.eye(4)
            turn[:3, :3] = Rotation.from_rotvec(axis / np.linalg.norm(axis) * angles.get(joint.get("name"), 0.0)
                                                ).as_matrix()
            T = T @ turn
    return T


def foot_spheres() -> list[tuple[str, int, np.ndarray, float]]:
    """Each foot collision sphere: link, collision index, centre in the link frame, radius."""
    spheres = []
    for link in urdf_root().findall("link"):
        if link.get("name") in FEET:
            for index, collision in enumerate(link.findall("collision")):
                sphere = collision.find("geometry/sphere")
                xyz = collision.find("origin").get("xyz", "0 0 0") if collision.find("origin") is not None else "0 0 0"
                spheres.append((link.get("name"), index, np.array([float(v) for v in xyz.split()]),
                                float(sphere.get("radius"))))
    return spheres


def touching_height() -> float:
    """The base height at which the lowest sole sphere just touches z = 0, base level, zero pose."""
    lowest = min((link_in_base(link, {}) @ np.append(centre, 1.0))[2] - radius
                 for link, _, centre, radius in foot_spheres())
    return -lowest


# -- the simulation -----------------------------------------------------------------------------
def humanoid(cache: Path, ground: bool | tuple[str, ...] = FEET) -> Simulator:
    """G1 at 1 ms with the ground under its feet (or none), the defaults otherwise but the
    regularized friction law (``stiction="false"``: the module docstring's figures; the default,
    stiction, is tested below, where the body's sway takes STICTION_SETTLE longer to die out)."""
    if ground != FEET:
        return Simulator(load_urdf(G1, floating_base=True, ground=ground), dt=DT, cache_dir=cache)
    xml = G1.read_text()
    end = xml.rindex("</robot>")
    extension = f'<mb_sim><ground links="{" ".join(FEET)}" stiction="false"/></mb_sim>'
    return Simulator(load_urdf(xml[:end] + extension + xml[end:], floating_base=True), dt=DT, cache_dir=cache)


def restart(sim: Simulator, height: float) -> None:
    """Time 0, zero pose, base level at `height`, at rest, the servos holding the pose."""
    sim.reset()
    sim.set_state(positions={"root_joint_x": 0.0, "root_joint_y": 0.0, "root_joint_z": height, "root_joint_qw": 1.0,
                             "root_joint_qx": 0.0, "root_joint_qy": 0.0, "root_joint_qz": 0.0},
                  velocities={name: 0.0 for name in sim.speed_names})
    for joint in sim.servos.joints:
        gains = next((g for part, g in GAINS if part in joint), None)
        if gains is not None:
            sim.servos.set_gains(joint, *gains)
        sim.servos.hold_position(joint, 0.0, now=sim.time)


def tilt_deg(sim: Simulator) -> float:
    """Angle between the base's z axis and the world's [deg]."""
    q = dict(zip(sim.coordinate_names, sim.q))
    R = Rotation.from_quat([q[f"root_joint_{c}"] for c in ("qx", "qy", "qz", "qw")]).as_matrix()
    return float(np.degrees(np.arccos(np.clip(R[2, 2], -1.0, 1.0))))


def stand(sim: Simulator, duration: float) -> dict[str, np.ndarray]:
    """Run to `duration`; every 0.1 s after SETTLE: base height, tilt, feet's horizontal positions."""
    samples: dict[str, list] = {"height": [], "tilt": [], "feet": []}
    sim.advance(SETTLE)
    while sim.time < duration - 1e-9:
        sim.advance(0.1)
        poses = sim.outputs(dynamics=False).link_poses
        samples["height"].append(sim.q[sim.coordinate_names.index("root_joint_z")])
        samples["tilt"].append(tilt_deg(sim))
        samples["feet"].append([poses[foot][:3, 3] for foot in FEET])
    return {key: np.array(value) for key, value in samples.items()}


def contact_rows(sim: Simulator) -> dict[str, np.ndarray]:
    """``contact_states`` rows by contact name at the current state."""
    sim.model.evaluate_into(sim.time)
    return dict(zip(sim.model.contact_names, np.array(sim.model.layout.view(sim.model.buffers.out, "contact_states"))))


def check_standing(sim: Simulator, samples: dict[str, np.ndarray], stiffness: float) -> None:
    """The figures the module docstring lists, `stiffness` the reference's ground stiffness."""
    weight = total_mass() * GRAVITY
    heights, top = samples["height"], touching_height()
    assert heights.std() < HEIGHT_STD, f"base height spread {heights.std():.2e} m"
    assert top - HEIGHT_SAG <= heights.mean() <= top, f"base height {heights.mean():.5f} m, touching at {top:.5f} m"
    assert samples["tilt"].max() < TILT_DEG, f"base tilted {samples['tilt'].max():.3f} deg"
    drift = np.linalg.norm(samples["feet"][-1, :, :2] - samples["feet"][0, :, :2], axis=1)
    assert drift.max() < FOOT_DRIFT, f"feet drifted {np.round(drift * 1e3, 4)} mm"
    assert np.abs(sim.u).max() < REST_SPEED, f"not at rest: speeds up to {np.abs(sim.u).max():.2e}"
    rows = contact_rows(sim)
    assert abs(sum(row[11] for row in rows.values()) - weight) < WEIGHT_TOLERANCE * weight
    assert abs(sum(row[8] for row in rows.values()) - weight) < WEIGHT_TOLERANCE * weight
    touching = [row for row in rows.values() if row[8] > 0]
    assert len(touching) == len(foot_spheres()), f"{len(touching)} of {len(foot_spheres())} sole spheres touch"
    mean_penetration = np.mean([row[6] for row in touching])
    assert mean_penetration == pytest.approx(weight / (len(touching) * stiffness), rel=WEIGHT_TOLERANCE), \
        f"mean penetration {mean_penetration:.4e} m, m g / (n k) = {weight / (len(touching) * stiffness):.4e} m"


def check_contact_kinematics(sim: Simulator) -> None:
    """Each sole sphere's contact point is its centre (URDF kinematics at the simulated joint
    angles and base pose) minus its radius along z, penetrating z = 0 by -z, at rest f_n = k d."""
    q = dict(zip(sim.coordinate_names, sim.q))
    angles = {name[:-2]: value for name, value in q.items() if name.endswith("_q")}
    base = np.eye(4)
    base[:3, :3] = Rotation.from_quat([q[f"root_joint_{c}"] for c in ("qx", "qy", "qz", "qw")]).as_matrix()
    base[:3, 3] = [q[f"root_joint_{c}"] for c in "xyz"]
    rows = contact_rows(sim)
    stiffness = sim.parameter("ground_stiffness")
    for link, index, centre, radius in foot_spheres():
        row = rows[f"ground/{link}/{index}/sphere"]
        point = (base @ link_in_base(link, angles) @ np.append(centre, 1.0))[:3] - [0.0, 0.0, radius]
        np.testing.assert_allclose(row[:3], point, atol=1e-9, err_msg=f"{link} {index}")
        assert row[6] == pytest.approx(-point[2], abs=1e-9)
        assert row[8] == pytest.approx(stiffness * row[6], rel=1e-3)


# -- tests --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cache(model_cache) -> Path:
    return model_cache


@pytest.fixture(scope="module")
def g1(cache: Path) -> Simulator:
    """G1 with the ground under its feet, compiled once for the module."""
    return humanoid(cache)


def test_start_height_from_the_soles():
    """The zero pose's soles are level and 0.79 m below the base (a check on the reference itself)."""
    bottoms = [(link_in_base(link, {}) @ np.append(centre, 1.0))[2] - radius
               for link, _, centre, radius in foot_spheres()]
    assert len(bottoms) == 8 and np.ptp(bottoms) < 1e-6
    assert 0.7 < touching_height() < 0.9


@pytest.mark.slow
def test_g1_stands_10s(g1: Simulator):
    """From touching, G1 settles within 4 s and stands 10 s: the figures of the module docstring."""
    restart(g1, touching_height())
    samples = stand(g1, DURATION)
    check_standing(g1, samples, g1.parameter("ground_stiffness"))
    check_contact_kinematics(g1)


@pytest.mark.slow
def test_g1_only_feet_touch(g1: Simulator):
    """``ground=FEET`` keeps the feet's 8 spheres and lists the other 28 shapes as skipped."""
    assert sorted({name.split("/")[1] for name in g1.model.contact_names}) == sorted(FEET)
    assert len(g1.model.contact_names) == 8
    assert len(g1.robot.skipped_collisions) == 28


@pytest.mark.slow
def test_a_softer_ground_sinks_by_the_formula(g1: Simulator):
    """Half the stiffness, the same joint loads: every sole sphere's penetration doubles (f_i = k
    d_i with f_i unchanged), the mean rises by m g / (n k), the base (rigid feet) sinks by an
    interpolation of the spheres' extra penetrations, and the check against the nominal stiffness
    fails."""
    k = g1.parameter("ground_stiffness")
    runs = []
    try:
        for stiffness in (k, k / 2):
            g1.set_parameters({"ground_stiffness": stiffness})
            restart(g1, touching_height())
            samples = stand(g1, SETTLE + 2.0)
            rows = contact_rows(g1)
            runs.append((samples, np.array([rows[f"ground/{link}/{i}/sphere"][6] for link, i, _, _ in foot_spheres()])))
        (nominal, depth), (soft, soft_depth) = runs
        np.testing.assert_allclose(soft_depth, 2 * depth, rtol=0.02)
        extra = total_mass() * GRAVITY / (len(foot_spheres()) * k)
        assert soft_depth.mean() - depth.mean() == pytest.approx(extra, rel=WEIGHT_TOLERANCE)
        sink = nominal["height"].mean() - soft["height"].mean()
        assert (soft_depth - depth).min() * 0.99 <= sink <= (soft_depth - depth).max() * 1.01
        with pytest.raises(AssertionError, match="mean penetration"):
            check_standing(g1, soft, k)
    finally:
        g1.set_parameters({"ground_stiffness": k})


def centre_of_mass(sim: Simulator) -> np.ndarray:
    """The robot's centre of mass (world) from the simulated link poses and the URDF's inertials."""
    poses = sim.outputs(dynamics=False).link_poses
    total, moment = 0.0, np.zeros(3)
    for link in urdf_root().findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        mass = float(inertial.find("mass").get("value"))
        origin = inertial.find("origin")
        com = [float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
        moment += mass * (poses[link.get("name")] @ np.append(com, 1.0))[:3]
        total += mass
    return moment / total


@pytest.mark.slow
def test_g1_without_ground_falls_freely(cache: Path):
    """No ground: the centre of mass falls as z0 - g t^2 / 2 whatever the servos do (0.3 s: 0.44 m),
    horizontally still, and there is no contact to report."""
    sim = humanoid(cache, ground=False)
    restart(sim, touching_height())
    start = centre_of_mass(sim)
    sim.advance(0.3)
    assert not sim.model.contact_names
    np.testing.assert_allclose(centre_of_mass(sim), start - [0.0, 0.0, GRAVITY * 0.3 ** 2 / 2], atol=1e-6)


def test_ground_links_attribute():
    """``<ground links="...">`` in the file selects the same 8 sole spheres, unread meshes skipped."""
    from mb_sim.urdf import parse_urdf
    text = G1.read_text().replace("</robot>", f'<mb_sim><ground links="{" ".join(FEET)}"/></mb_sim></robot>')
    description = parse_urdf(text, floating_base=True)
    assert [(c.link, c.index) for c in description.collisions] == [(link, i) for link, i, _, _ in foot_spheres()]
    assert len(description.skipped_collisions) == 28


def test_unknown_ground_link_is_named():
    """A misspelt link in ``ground=[...]`` is one URDFError naming it and the closest names."""
    from mb_sim.urdf import URDFError
    with pytest.raises(URDFError, match="no link named 'left_ankle_rol_link'.*left_ankle_roll_link"):
        load_urdf(G1, floating_base=True, ground=["left_ankle_rol_link"])


def test_talos_mirrored_meshes_are_read():
    """Talos' right arm uses the left arm's meshes with ``scale="1 -1 1"`` (a mirror, valid URDF):
    read, its hull points span the left ones' box mirrored in y; a zero factor stays an error."""
    from mb_sim.urdf import URDFError, parse_urdf
    talos = example_robot_data_dir() / "talos_data" / "robots" / "talos_reduced.urdf"
    shapes = {(c.link, c.index): c for c in parse_urdf(talos, floating_base=True, ground=True).collisions}
    left, right = shapes[("arm_left_1_link", 0)], shapes[("arm_right_1_link", 0)]
    mirrored = right.points * [1.0, -1.0, 1.0]
    np.testing.assert_allclose(mirrored.min(axis=0), left.points.min(axis=0), atol=1e-12)
    np.testing.assert_allclose(mirrored.max(axis=0), left.points.max(axis=0), atol=1e-12)
    flat = talos.read_text().replace('scale="1 -1 1"', 'scale="1 0 1"')
    with pytest.raises(URDFError, match="scale must be nonzero"):
        parse_urdf(flat, floating_base=True, ground=True)


# -- with stiction -------------------------------------------------------------------------------
#: Extra settling with stiction [s]: the ground no longer damps the body's sway viscously (the
#: regularized law's slope mu f_n / v_s does), so the arms' sway on their soft default servos
#: decays with about 3 s (joint speeds 1e-2 rad/s at 14 s, 9e-5 at 30 s).
STICTION_SETTLE = 16.0
#: The slope G1 holds on its zero pose under the test's gains, gravity ramped over RAMP seconds
#: (tilted at once the step topples it forward onto its toes; at 10 degrees it falls with either
#: friction law: the servos' balance, not friction) [deg], [s].
HUMANOID_SLOPE_DEG, RAMP = 5.0, 2.0


def humanoid_with_stiction(cache: Path) -> Simulator:
    """G1 with ``<ground links="<feet>" stiction="true">`` (24 anchor states) and gravity a vector
    of magnitude 9.81 (parameters ``gravity_g_x``, ``gravity_g_z``: a slope is a parameter change)."""
    slope = np.radians(HUMANOID_SLOPE_DEG)
    xml = G1.read_text()
    end = xml.rindex("</robot>")
    extension = (f'<mb_sim><gravity xyz="{float(GRAVITY * np.sin(slope))!r} 0 {float(-GRAVITY * np.cos(slope))!r}"/>'
                 f'<ground links="{" ".join(FEET)}" stiction="true"/></mb_sim>')
    return Simulator(load_urdf(xml[:end] + extension + xml[end:], floating_base=True), dt=DT, cache_dir=cache)


def set_slope(sim: Simulator, degrees: float) -> None:
    """Gravity tilted by `degrees` about the world y axis (a slope rising backwards: the robot faces downhill)."""
    slope = np.radians(degrees)
    sim.set_parameters({"gravity_g_x": GRAVITY * np.sin(slope), "gravity_g_z": -GRAVITY * np.cos(slope)})


@pytest.mark.slow
def test_g1_stands_with_stiction(cache: Path):
    """With stiction on its feet G1 stands 10 s to the same figures as on the regularized ground
    (after STICTION_SETTLE more settling), and on a 5 degree slope (tan a = 0.087 < mu = 1) its feet
    hold (< 1 mm in 5 s; the regularized ground slides there at v_s tan(a) / sqrt(mu^2 - tan(a)^2)
    = 0.094 m/s, measured 0.0937 m/s)."""
    sim = humanoid_with_stiction(cache)
    assert sim.z.size == 3 * len(foot_spheres())
    restart(sim, touching_height())
    set_slope(sim, 0.0)
    sim.advance(STICTION_SETTLE)
    samples = stand(sim, STICTION_SETTLE + DURATION)
    check_standing(sim, samples, sim.parameter("ground_stiffness"))
    check_contact_kinematics(sim)
    restart(sim, touching_height())
    set_slope(sim, 0.0)
    sim.advance(SETTLE)
    steps = round(RAMP / 0.01)
    for step in range(1, steps + 1):
        set_slope(sim, HUMANOID_SLOPE_DEG * step / steps)
        sim.advance(0.01)
    sim.advance(1.0)
    start = np.array([sim.outputs(dynamics=False).link_poses[foot][:2, 3] for foot in FEET])
    sim.advance(5.0)
    end = np.array([sim.outputs(dynamics=False).link_poses[foot][:2, 3] for foot in FEET])
    drift = np.linalg.norm(end - start, axis=1)
    assert drift.max() < FOOT_DRIFT, f"feet moved {np.round(drift * 1e3, 4)} mm on the slope"
    assert tilt_deg(sim) < HUMANOID_SLOPE_DEG + TILT_DEG
