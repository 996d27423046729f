"""Contact between two links' collision shapes (``<contact_pair>``), against conservation laws and
the linear spring's closed form."""
from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError, URDFWarning

K = 1.0e4  # N/m
M = 1.0  # kg each

_LINK = """
  <joint name="{joint}" type="prismatic"><parent link="world"/><child link="{link}"/>
    <origin xyz="{x} 0 0"/><axis xyz="1 0 0"/><limit lower="-10" upper="10" effort="100" velocity="100"/></joint>
  <link name="{link}">
    <inertial><mass value="{m}"/><inertia ixx="0.004" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="{xyz}" rpy="{rpy}"/><geometry>{geometry}</geometry></collision>
  </link>"""


def _pair_urdf(geometry_b: str, rpy_b: str = "0 0 0", pair: str = 'stiffness="10000" damping="0" friction="0"',
               xyz_b: str = "0 0 0") -> str:
    """Ball `a` (radius 0.1) at x = 0 and shape `b` at x = 0.5, both sliding along x, no gravity."""
    return ("<robot name='pair'><link name='world'/>"
            + _LINK.format(joint="slide_a", link="a", x=0, m=M, xyz="0 0 0", rpy="0 0 0", geometry='<sphere radius="0.1"/>')
            + _LINK.format(joint="slide_b", link="b", x=0.5, m=M, xyz=xyz_b, rpy=rpy_b, geometry=geometry_b)
            + f'<mb_sim><gravity xyz="0 0 0"/><contact_pair link1="a" link2="b" {pair}/></mb_sim></robot>')


@pytest.fixture(scope="module")
def cache(model_cache):
    return model_cache


@pytest.mark.parametrize("geometry_b, rpy_b, contact_gap", [
    ('<sphere radius="0.1"/>', "0 0 0", 0.2),
    ('<capsule radius="0.05" length="0.2"/>', "0 1.5707963267948966 0", 0.25),  # axis along x: its end cap
    ('<capsule radius="0.05" length="0.2"/>', "0 0 0", 0.15),  # axis along z: its side
])
def test_head_on_collision_exchanges_velocities(cache, geometry_b, rpy_b, contact_gap):
    """Equal masses, elastic (no damping): velocities exchange, momentum is kept to rounding, and
    the deepest penetration is v sqrt(m_eff / k) (m_eff = m / 2), the linear spring's."""
    sim = Simulator(load_urdf(_pair_urdf(geometry_b, rpy_b)), cache_dir=cache)
    v0 = 1.0
    sim.set_state(velocities={"slide_a": v0})
    trajectory = sim.simulate(1.0)
    momentum = trajectory.u.sum(axis=1)
    assert np.max(np.abs(momentum - v0)) < 1e-12
    assert sim.u[0] == pytest.approx(0.0, abs=5e-4)
    assert sim.u[1] == pytest.approx(v0, abs=5e-4)
    gap = trajectory.q[:, 1] + 0.5 - trajectory.q[:, 0]
    deepest = contact_gap - gap.min()
    assert deepest == pytest.approx(v0 * math.sqrt(M / 2 / K), rel=2e-3)


def test_forces_are_equal_and_opposite(cache):
    """Pressed together by opposite efforts, the pair rests where k d = effort, and the contact
    states report the normal force on a along -x (from b towards a)."""
    sim = Simulator(load_urdf(_pair_urdf('<sphere radius="0.1"/>', pair='stiffness="10000" damping="50" friction="0"')),
                    cache_dir=cache)
    sim.set_state(positions={"slide_a": 0.2, "slide_b": -0.2})
    sim.set_efforts({"slide_a": 20.0, "slide_b": -20.0})
    sim.advance(3.0)
    gap = sim.q[1] + 0.5 - sim.q[0]
    assert 0.2 - gap == pytest.approx(20.0 / K, rel=1e-6)
    sim.model.evaluate_into(sim.time)
    row = sim.model.layout.view(sim.model.buffers.out, "contact_states")[0]
    assert row[8] == pytest.approx(20.0, rel=1e-6)  # normal force
    assert row[9:12] == pytest.approx([-20.0, 0.0, 0.0], abs=1e-6)  # on a, pushed back by b
    assert row[3:6] == pytest.approx([-1.0, 0.0, 0.0], abs=1e-9)  # normal from b to a


def test_box_corner_hits_sphere(cache):
    """A 0.2 cube placed so one corner lies on the line of motion hits the ball head on with that
    corner (coal's witness points in one contact slot) as a sphere of radius 0 would: velocities
    exchange and the deepest penetration is the linear spring's."""
    sim = Simulator(load_urdf(_pair_urdf('<box size="0.2 0.2 0.2"/>', xyz_b="0.1 -0.1 -0.1")), cache_dir=cache)
    assert sim.model.contact_names == [f"contact_a_b/a@b/slot{k}" for k in range(4)]  # a box: slots coal fills
    v0 = 1.0
    sim.set_state(velocities={"slide_a": v0})
    trajectory = sim.simulate(1.0)
    assert np.max(np.abs(trajectory.u.sum(axis=1) - v0)) < 1e-12
    assert sim.u == pytest.approx([0.0, v0], abs=5e-4)
    gap = trajectory.q[:, 1] + 0.5 - trajectory.q[:, 0]  # the corner at x_b + 0.5, the ball's surface at x_a + 0.1
    assert 0.1 - gap.min() == pytest.approx(v0 * math.sqrt(M / 2 / K), rel=2e-3)


def test_contact_pair_errors_name_the_element():
    with pytest.raises(URDFError, match="contact_pair.*link2 link 'nowhere' does not exist"):
        load_urdf(_pair_urdf('<sphere radius="0.1"/>').replace('link2="b"', 'link2="nowhere"'))
    with pytest.raises(URDFError, match="a link cannot touch itself"):
        load_urdf(_pair_urdf('<sphere radius="0.1"/>').replace('link2="b"', 'link2="a"'))
    with pytest.raises(URDFError, match="stiffness must be positive"):
        load_urdf(_pair_urdf('<sphere radius="0.1"/>', pair='stiffness="-1"'))


# ---------------------------------------------------------------------------------------------
# <self_collision>: every non-adjacent pair of moving links (test/urdf/self_collision_chain.urdf)
# ---------------------------------------------------------------------------------------------

URDF_DIR = Path(__file__).parent / "urdf"
CHAIN = URDF_DIR / "self_collision_chain.urdf"
ROBOTS = Path(np.__file__).parents[1] / "cmeel.prefix" / "share" / "example-robot-data" / "robots"


def _chain(self_collision: str = '<self_collision stiffness="10000" exponent="1.5" damping="3" friction="0"/>',
           extra: str = "") -> str:
    """The chain URDF's text with its <mb_sim> content replaced."""
    text = CHAIN.read_text()
    start, end = text.index("<mb_sim>"), text.index("</mb_sim>")
    return text[:start] + f"<mb_sim>{self_collision}{extra}" + text[end:]


def _self_collision(robot):
    return robot.contact_pairs["self_collision"]


def test_adjacent_links_and_links_across_a_fixed_joint_get_no_pair():
    """bar-carriage and carriage-slider are joined by joints; tip is fixed to slider (one rigid
    body), so slider-tip never collide and carriage-tip are adjacent through the fixed joint.
    What is left: bar against the ball (slider) and against tip."""
    contact = _self_collision(load_urdf(CHAIN))
    assert contact.pairs == [("bar", "slider"), ("bar", "tip")]
    assert {t.link for _, _, t in contact.checks} | {s.link for s, _, _ in contact.checks} == {"bar", "slider", "tip"}
    assert contact.pair_description.skipped == ()


def test_ball_rests_on_a_non_adjacent_link_at_the_law_penetration(cache):
    """The ball (slider) rests on the bar carrying carriage, slider and tip (the carriage slides
    freely along z on the bar): m g = k d^p, so d = (m g / k)^(1/p) with p = 1.5."""
    sim = Simulator(CHAIN, cache_dir=cache)
    sim.set_state(positions={"lift": 0.16})
    sim.advance(3.0)
    weight = (1.0 + 1.0 + 0.5) * 9.81
    expected = (weight / 1.0e4) ** (1 / 1.5)
    assert 0.15 - sim.q[1] == pytest.approx(expected, rel=1e-6)
    sim.model.evaluate_into(sim.time)
    rows = sim.model.layout.view(sim.model.buffers.out, "contact_states")
    ball = sim.model.contact_names.index("self_collision/slider/0/sphere@bar/0")
    assert rows[ball][8] == pytest.approx(weight, rel=1e-6)


def test_exclude_removes_a_pair_and_links_restricts():
    assert _self_collision(load_urdf(_chain('<self_collision exclude="tip:bar"/>'))).pairs == [("bar", "slider")]
    assert _self_collision(load_urdf(_chain('<self_collision links="bar tip carriage"/>'))).pairs == [("bar", "tip")]


def test_explicit_contact_pair_wins_over_the_filter(cache):
    """A <contact_pair> of bar and slider (its own stiffness) leaves the filter bar-tip only: one
    pair each, and the ball rests at the explicit pair's penetration."""
    robot = load_urdf(_chain(extra='<contact_pair name="ball_on_bar" link1="slider" link2="bar" stiffness="20000" '
                                   'damping="3" friction="0"/>'))
    assert _self_collision(robot).pairs == [("bar", "tip")]
    assert _self_collision(robot).pair_description.skipped == (("bar", "slider", "has its own <contact_pair 'ball_on_bar'>"),)
    sim = Simulator(robot, cache_dir=cache)
    assert sum(name.endswith("slider/0/sphere@bar/0") for name in sim.model.contact_names) == 1
    sim.set_state(positions={"lift": 0.16})
    sim.advance(3.0)
    assert 0.15 - sim.q[1] == pytest.approx(2.5 * 9.81 / 2.0e4, rel=1e-6)  # exponent 1 (the pair's default)


def test_shapes_that_cannot_touch_are_listed_not_dropped():
    """bar and the ball as boxes: a box touches no box; the pair is skipped with the reason and
    a warning, the bar-tip pair (tip a capsule) stays."""
    text = _chain('<self_collision/>').replace('<capsule radius="0.05" length="1.0"/>', '<box size="0.1 0.1 1.0"/>')
    text = text.replace('<sphere radius="0.1"/>', '<box size="0.2 0.2 0.2"/>')
    with pytest.warns(URDFWarning, match="1 link pair.*cannot touch.*bar:slider"):
        contact = _self_collision(load_urdf(text))
    assert contact.pairs == [("bar", "tip")]
    assert contact.pair_description.skipped == (("bar", "slider", "shapes cannot touch: box against box (only spheres "
                                                 "and capsules are touched, by points of any shape but a cylinder)"),)


@pytest.mark.parametrize("attributes, message", [
    ('links="bar nowhere"', "self_collision 'self_collision'.*links: link 'nowhere' does not exist"),
    ('exclude="bar:nowhere"', "self_collision 'self_collision'.*exclude: link 'nowhere' does not exist"),
    ('exclude="bar-tip"', "exclude entry 'bar-tip' is not a pair 'linkA:linkB'"),
    ('stiffness="0"', "stiffness must be positive"),
])
def test_self_collision_errors_name_the_element(attributes, message):
    with pytest.raises(URDFError, match=message):
        load_urdf(_chain(f"<self_collision {attributes}/>"))


def test_too_many_checks_fail_in_one_line_naming_the_model(tmp_path):
    """Unitree G1 (mesh shapes against spheres): thousands of checks; refused at load time with
    what to restrict, not after minutes of derivation."""
    urdf = ROBOTS / "g1_description" / "urdf" / "g1_29dof_rev_1_0.urdf"
    path = tmp_path / "g1.urdf"
    path.write_text(urdf.read_text().replace("</robot>", "<mb_sim><self_collision/></mb_sim></robot>"))
    with pytest.raises(URDFError) as error, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load_urdf(path, floating_base=True)
    message = str(error.value)
    assert "\n" not in message
    assert re.search(r"robot 'g1_29dof_rev_1_0': \d+ point-shape checks.*links=.*exclude=", message)
    with warnings.catch_warnings():  # restricted to the arms: it fits
        warnings.simplefilter("ignore")
        arms = "left_elbow_link left_wrist_yaw_link right_elbow_link right_wrist_yaw_link"
        path.write_text(urdf.read_text().replace("</robot>", f'<mb_sim><self_collision links="{arms}"/></mb_sim></robot>'))
        load_urdf(path, floating_base=True)


# A planar arm in the horizontal plane (no gravity): shoulder, elbow and wrist about z; the
# forearm's ball swings back onto the upper arm's capsule (non-adjacent links).
_ARM = """<robot name="folding_arm"><link name="world"/>
  <joint name="shoulder" type="continuous"><parent link="world"/><child link="upper"/><axis xyz="0 0 1"/><limit effort="10" velocity="100"/></joint>
  <link name="upper"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
      <inertia ixx="0.01" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.3 0 0" rpy="0 1.5707963267948966 0"/><geometry><capsule radius="0.04" length="0.6"/></geometry></collision></link>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="middle"/><origin xyz="0.6 0 0"/><axis xyz="0 0 1"/><limit effort="10" velocity="100"/></joint>
  <link name="middle"><inertial><origin xyz="0.15 0 0"/><mass value="1"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="wrist" type="continuous"><parent link="middle"/><child link="fore"/><origin xyz="0.3 0 0"/><axis xyz="0 0 1"/><limit effort="10" velocity="100"/></joint>
  <link name="fore"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
      <inertia ixx="0.005" iyy="0.005" izz="0.005" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.2 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <mb_sim><gravity xyz="0 0 0"/><self_collision stiffness="20000" damping="0" friction="0"/></mb_sim>
</robot>"""
#: Per link: distance from its joint to the next joint, to its centre of mass, mass, izz.
_ARM_LINKS = ((0.6, 0.3, 1.0, 0.03), (0.3, 0.15, 1.0, 0.01), (0.0, 0.1, 0.5, 0.005))


def _arm_energy_and_momentum(q: np.ndarray, u: np.ndarray) -> tuple[float, float]:
    """Kinetic energy and angular momentum about the shoulder's z axis of the planar arm, from its
    geometry (independent of the model): each link's centre at angle sum(q[:i+1])."""
    energy = momentum = 0.0
    joint, joint_velocity = np.zeros(2), np.zeros(2)
    for i, (length, com, mass, izz) in enumerate(_ARM_LINKS):
        angle, rate = q[:i + 1].sum(), u[:i + 1].sum()
        along = np.array([math.cos(angle), math.sin(angle)])
        across = np.array([-along[1], along[0]])
        centre, velocity = joint + com * along, joint_velocity + com * rate * across
        energy += 0.5 * mass * velocity @ velocity + 0.5 * izz * rate ** 2
        momentum += mass * (centre[0] * velocity[1] - centre[1] * velocity[0]) + izz * rate
        joint, joint_velocity = joint + length * along, joint_velocity + length * rate * across
    return energy, momentum


def _ball_to_upper_arm(q: np.ndarray) -> float:
    """Distance of the ball's centre from the upper arm's axis segment (its frame's x in [0, 0.6])."""
    a1, a2, a3 = q[0], q[0] + q[1], q[0] + q[1] + q[2]
    ball = (0.6 * np.array([math.cos(a1), math.sin(a1)]) + 0.3 * np.array([math.cos(a2), math.sin(a2)])
            + 0.2 * np.array([math.cos(a3), math.sin(a3)]))
    local = np.array([[math.cos(a1), math.sin(a1)], [-math.sin(a1), math.cos(a1)]]) @ ball
    return float(np.hypot(local[0] - np.clip(local[0], 0.0, 0.6), local[1]))


def test_folding_arm_bounces_off_itself_keeping_energy_and_momentum(cache):
    """The wrist swings the ball onto the upper arm (elastic, frictionless): it bounces off
    without passing through, and the arm's kinetic energy and angular momentum about the shoulder
    (no external torque) after the bounce equal those before, by the arm's own geometry."""
    robot = load_urdf(_ARM)
    assert _self_collision(robot).pairs == [("upper", "fore")]
    sim = Simulator(robot, dt=2.5e-4, cache_dir=cache)  # the contact lasts about 10 ms
    sim.set_state(positions={"elbow": math.radians(150)}, velocities={"wrist": 3.0})
    start = _arm_energy_and_momentum(sim.q, sim.u)
    trajectory = sim.simulate(1.0, sample_every=4)
    gaps = np.array([_ball_to_upper_arm(q) for q in trajectory.q]) - 0.09
    assert gaps[0] > 0.1 and gaps.min() < -1e-3  # it reached the upper arm
    assert gaps.min() > -0.02  # and did not pass through
    touching = np.flatnonzero(gaps < 0)
    assert gaps[touching[-1] + 1:].min() > 0 and touching[-1] + 1 < len(gaps) - 10  # and left it
    end = _arm_energy_and_momentum(sim.q, sim.u)
    assert end[0] == pytest.approx(start[0], rel=2e-5)  # RK4 across the contact's onset: 4e-6 at this step
    assert end[1] == pytest.approx(start[1], rel=1e-8)


def test_ground_links_still_restrict_the_ground_with_self_collision():
    """<ground links="tip">: only tip touches the ground although self_collision reads every
    moving link's shapes."""
    robot = load_urdf(_chain(extra='<ground links="tip"/>'))
    assert [shape.link for ground in robot.grounds.values() for shape in ground.shapes] == ["tip"]
    assert _self_collision(robot).pairs == [("bar", "slider"), ("bar", "tip")]
