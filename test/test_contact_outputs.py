"""``SimulationOutputs.contacts`` and ``contact_wrenches`` of robots on the ground plane.

Real URDF files (written per test), real compiled C.  Each robot is placed at its static rest
height, derived here from the contact law f_n = k d (exponent 1, no damping): the expected
contact forces are then its weight m g shared by its contact points, and the wrench about the
link origin is what balances gravity acting at the centre of mass.
"""
from __future__ import annotations

import numpy as np
import pytest

from mb_sim.sim import Simulator
from mb_sim.sim.outputs import ContactState, ContactWrench

BALL_MASS, BALL_RADIUS, BALL_K, BALL_MU = 2.0, 0.1, 20000.0, 0.5
BOX_MASS, BOX_SIZE, BOX_K = 3.0, (0.4, 0.2, 0.1), 30000.0
#: The box's centre (its collision and its centre of mass) in its link's frame: off the origin,
#: so the torque about the origin is not zero.
BOX_CENTRE = np.array([0.05, 0.0, 0.0])
#: Where the links stand (x, y) and their yaw [rad]: not the world origin, not the world axes.
SPOT, YAW = (0.3, -0.2), 0.5


def _ball_urdf(height: float) -> str:
    return f"""<robot name="ball">
  <link name="world"/>
  <joint name="free" type="floating">
    <origin xyz="{SPOT[0]} {SPOT[1]} {float(height)!r}" rpy="0 0 {YAW}"/><parent link="world"/><child link="ball"/>
  </joint>
  <link name="ball">
    <inertial><mass value="{BALL_MASS}"/><inertia ixx="0.008" iyy="0.008" izz="0.008" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="{BALL_RADIUS}"/></geometry></collision>
  </link>
  <mb_sim><ground stiffness="{BALL_K}" damping="0" exponent="1" friction="{BALL_MU}"/></mb_sim>
</robot>
"""


def _box_urdf(height: float) -> str:
    centre = " ".join(str(v) for v in BOX_CENTRE)
    return f"""<robot name="box">
  <link name="world"/>
  <joint name="free" type="floating">
    <origin xyz="{SPOT[0]} {SPOT[1]} {float(height)!r}" rpy="0 0 {YAW}"/><parent link="world"/><child link="box"/>
  </joint>
  <link name="box">
    <inertial><origin xyz="{centre}"/><mass value="{BOX_MASS}"/>
      <inertia ixx="0.0125" iyy="0.0425" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="{centre}"/><geometry><box size="{' '.join(map(str, BOX_SIZE))}"/></geometry></collision>
  </link>
  <mb_sim><ground stiffness="{BOX_K}" damping="0" exponent="1" friction="0.8"/></mb_sim>
</robot>
"""


@pytest.fixture(scope="module")
def cache(model_cache):
    return model_cache


def _simulator(tmp_path, cache, name: str, text: str) -> Simulator:
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    return Simulator(path, cache_dir=cache)


def _gravity(sim: Simulator) -> float:
    return sim.parameter("gravity_g")


def _yaw() -> np.ndarray:
    c, s = np.cos(YAW), np.sin(YAW)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@pytest.fixture(scope="module")
def ball_rest(tmp_path_factory, cache):
    """A ball at its rest penetration d = m g / k (g as the model has it: 9.81)."""
    penetration = BALL_MASS * 9.81 / BALL_K
    sim = _simulator(tmp_path_factory.mktemp("ball"), cache, "ball", _ball_urdf(BALL_RADIUS - penetration))
    assert _gravity(sim) == 9.81
    return sim, penetration


def test_a_resting_ball_has_one_contact_carrying_its_weight(ball_rest):
    sim, penetration = ball_rest
    sim.reset()
    weight = BALL_MASS * _gravity(sim)
    out = sim.outputs()
    assert list(out.contacts) == ["ground/ball/0/sphere"] == sim.model.contact_names
    contact = out.contacts["ground/ball/0/sphere"]
    assert isinstance(contact, ContactState) and contact.link == "ball" and contact.name == "ground/ball/0/sphere"
    np.testing.assert_allclose(contact.point, [SPOT[0], SPOT[1], -penetration], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(contact.normal, [0.0, 0.0, 1.0])
    assert contact.penetration == pytest.approx(penetration, rel=1e-9)
    assert contact.penetration_rate == 0.0
    assert contact.normal_force == pytest.approx(weight, rel=1e-9)
    np.testing.assert_allclose(contact.force, [0.0, 0.0, weight], rtol=1e-9, atol=1e-12)
    wrench = out.contact_wrenches["ball"]
    assert isinstance(wrench, ContactWrench) and list(out.contact_wrenches) == ["ball"]
    np.testing.assert_allclose(wrench.force, [0.0, 0.0, weight], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(wrench.torque, 0.0, atol=1e-12)  # the force passes through the centre
    sim.advance(0.2)  # an equilibrium: it stays
    assert sim.outputs().contacts["ground/ball/0/sphere"].normal_force == pytest.approx(weight, rel=1e-6)


def test_a_sliding_ball_feels_friction_and_its_torque_about_the_centre(ball_rest):
    """Sliding at v along world x without spinning: f_t = -mu f_n (Coulomb) at the
    contact point, r below the centre, so the torque about the centre is (0, 0, -r) x f."""
    sim, penetration = ball_rest
    sim.reset()
    v = 0.7
    sim.set_state(velocities={"free_vx": v * np.cos(YAW), "free_vy": -v * np.sin(YAW)})  # child axes
    weight = BALL_MASS * _gravity(sim)
    out = sim.outputs()
    # stiction (the default): the spring-damper to the anchor (at the point) pulls c_t v, more than
    # the cone holds, so friction is Coulomb's mu f_n
    assert sim.parameter("ground_stiction_damping") * v > BALL_MU * weight
    friction = -BALL_MU * weight
    expected_force = np.array([friction, 0.0, weight])
    contact = out.contacts["ground/ball/0/sphere"]
    np.testing.assert_allclose(contact.force, expected_force, rtol=1e-9, atol=1e-9)
    wrench = out.contact_wrenches["ball"]
    np.testing.assert_allclose(wrench.force, expected_force, rtol=1e-9, atol=1e-9)
    lever = np.array([0.0, 0.0, -(BALL_RADIUS - penetration) - penetration])  # centre to contact point
    np.testing.assert_allclose(wrench.torque, np.cross(lever, expected_force), rtol=1e-9, atol=1e-9)
    assert abs(wrench.torque[1]) > 0.5  # the friction's lever arm counts


def test_an_airborne_ball_has_no_contacts(ball_rest):
    sim, _ = ball_rest
    sim.reset()
    sim.set_state(positions={"free_z": 0.5})
    out = sim.outputs()
    assert out.contacts == {}
    np.testing.assert_array_equal(out.contact_wrenches["ball"].force, 0.0)
    np.testing.assert_array_equal(out.contact_wrenches["ball"].torque, 0.0)


def test_a_box_resting_flat_stands_on_its_four_bottom_corners(tmp_path, cache):
    """Each bottom corner carries m g / 4 at d = m g / (4 k); the contact torque about the link
    origin, r_c x (m g e_z) with r_c the yawed offset of the centre, balances gravity's."""
    penetration = BOX_MASS * 9.81 / (4 * BOX_K)
    half = np.array(BOX_SIZE) / 2
    sim = _simulator(tmp_path, cache, "box", _box_urdf(half[2] - penetration))
    weight = BOX_MASS * _gravity(sim)
    out = sim.outputs()
    bottom = [f"ground/box/0/corner{i}" for i in (0, 2, 4, 6)]  # z = -h/2 (corners by x, y, z sign)
    assert sorted(out.contacts) == bottom
    origin = np.array([SPOT[0], SPOT[1], half[2] - penetration])
    corners = [origin + _yaw() @ (BOX_CENTRE + [sx * half[0], sy * half[1], -half[2]])
               for sx in (-1, 1) for sy in (-1, 1)]
    for name, corner in zip(bottom, corners):
        contact = out.contacts[name]
        assert contact.link == "box"
        np.testing.assert_allclose(contact.point, corner, rtol=0, atol=1e-12)
        assert contact.penetration == pytest.approx(penetration, rel=1e-9)
        assert contact.normal_force == pytest.approx(weight / 4, rel=1e-9)
    total = sum(c.force for c in out.contacts.values())
    np.testing.assert_allclose(total, [0.0, 0.0, weight], rtol=1e-9, atol=1e-9)
    wrench = out.contact_wrenches["box"]
    np.testing.assert_allclose(wrench.force, [0.0, 0.0, weight], rtol=1e-9, atol=1e-9)
    centre = _yaw() @ BOX_CENTRE  # the centre of mass from the link origin, world axes
    gravity_torque = np.cross(centre, [0.0, 0.0, -weight])
    np.testing.assert_allclose(wrench.torque + gravity_torque, 0.0, atol=1e-9)
    assert np.linalg.norm(wrench.torque) > 1.0  # not trivially zero
    sim.advance(0.2)  # an equilibrium: it stays
    np.testing.assert_allclose(sim.outputs().contact_wrenches["box"].force, [0.0, 0.0, weight], rtol=1e-6, atol=1e-6)


def test_a_contact_pair_pushes_both_links_apart(tmp_path, cache):
    """Two balls (radius r) on rails along x overlapping by d: the feature's link gets
    f = -k d e_x at the contact point, the other link +k d e_x (no gravity, no friction)."""
    k, r, overlap = 10000.0, 0.1, 0.01
    rail = """<joint name="slide_{0}" type="prismatic"><parent link="world"/><child link="{0}"/>
    <origin xyz="{1} 0 0"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="{0}"><inertial><mass value="1"/><inertia ixx="0.004" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/>
    </inertial><collision><geometry><sphere radius="{2}"/></geometry></collision></link>"""
    text = (f"<robot name='pair'><link name='world'/>{rail.format('a', 0.0, r)}{rail.format('b', 2 * r - overlap, r)}"
            f"<mb_sim><gravity xyz='0 0 0'/><contact_pair link1='a' link2='b' stiffness='{k}' damping='0' "
            "friction='0'/></mb_sim></robot>")
    sim = _simulator(tmp_path, cache, "pair", text)
    out = sim.outputs()
    assert [c.link for c in out.contacts.values()] == ["a"]
    (contact,) = out.contacts.values()
    np.testing.assert_allclose(contact.force, [-k * overlap, 0.0, 0.0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out.contact_wrenches["a"].force, [-k * overlap, 0.0, 0.0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out.contact_wrenches["b"].force, [k * overlap, 0.0, 0.0], rtol=1e-9, atol=1e-9)
