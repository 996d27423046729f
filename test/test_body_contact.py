"""Contact between two links' collision shapes (``<contact_pair>``), against conservation laws and
the linear spring's closed form."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError

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
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("body_contact_cache")


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
    """A box's corners are features: a 0.2 cube placed so one corner lies on the line of motion
    hits the ball head on with that corner (a point), as a sphere of radius 0 would: velocities
    exchange and the deepest penetration is the linear spring's."""
    sim = Simulator(load_urdf(_pair_urdf('<box size="0.2 0.2 0.2"/>', xyz_b="0.1 -0.1 -0.1")), cache_dir=cache)
    assert len(sim.model.contact_names) == 8  # the box's corners against the ball; the ball against no box
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
