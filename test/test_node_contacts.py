"""``mb_sim_node`` with ground contact, as a real process over DDS (the helpers and fixtures of
:mod:`test_node`): ``~/contacts/<link>`` (geometry_msgs/WrenchStamped) and ``~/contact_markers``
(visualization_msgs/MarkerArray) of two balls resting on the ground.

The balls start at their static rest heights, derived here from the contact law f_n = k d
(exponent 1, no damping): each presses with its weight m g at the point below its centre.  One
ball's frame is only yawed (the force in its axes is (0, 0, m g)); the other's is tilted, so its
force in its own axes is R^T (0, 0, m g).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import Imu
from visualization_msgs.msg import Marker, MarkerArray

from mb_sim.ros.contacts import FORCE_SCALE
from mb_sim.urdf.rotations import rpy_to_matrix
from test_node import node_env, nodes, peer, shared_peer, stamp_of, wait_for_output  # noqa: F401

RADIUS, K, G = 0.1, 20000.0, 9.81
#: name -> (mass [kg], where it stands (x, y), rpy of its frame)
BALLS = {"ball": (2.0, (0.3, -0.2), (0.0, 0.0, 0.5)),
         "tilted_ball": (3.0, (-0.4, 0.6), (0.3, -0.2, 0.5))}


def _ball(name: str, mass: float, spot: tuple[float, float], rpy: tuple[float, float, float]) -> str:
    height = RADIUS - mass * G / K  # at rest: k d = m g
    inertia = 0.4 * mass * RADIUS**2
    return f"""  <joint name="{name}_free" type="floating">
    <origin xyz="{spot[0]} {spot[1]} {height!r}" rpy="{' '.join(map(str, rpy))}"/>
    <parent link="world"/><child link="{name}"/>
  </joint>
  <link name="{name}">
    <inertial><mass value="{mass}"/><inertia ixx="{inertia}" iyy="{inertia}" izz="{inertia}" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="{RADIUS}"/></geometry></collision>
  </link>
"""


@pytest.fixture(scope="module")
def balls_urdf(tmp_path_factory):
    body = "".join(_ball(name, *spec) for name, spec in BALLS.items())
    path = tmp_path_factory.mktemp("contacts") / "balls.urdf"
    path.write_text(f"""<robot name="balls">
  <link name="world"/>
{body}  <mb_sim><ground stiffness="{K}" damping="0" exponent="1" friction="0.5"/>
    <imu name="ball_imu" link="tilted_ball"><origin xyz="0.05 0 0" rpy="0 0 1.5707963267948966"/></imu></mb_sim>
</robot>
""")
    return path


@pytest.fixture
def balls(nodes, balls_urdf):
    return nodes.get("-p", f"urdf_file:={balls_urdf}")


def _vector(v) -> np.ndarray:
    return np.array([v.x, v.y, v.z])


def test_resting_balls_publish_their_weight_on_their_contact_topics(balls, peer):
    assert wait_for_output(peer, balls, re.escape("ball on ~/contacts/ball, tilted_ball on ~/contacts/tilted_ball")), \
        balls.output
    received = {name: peer.collect(WrenchStamped, f"/mb_sim/contacts/{name}") for name in BALLS}
    assert peer.spin_until(lambda: all(len(messages) >= 20 for messages in received.values()), 30), \
        {name: len(messages) for name, messages in received.items()}
    for name, (mass, _, rpy) in BALLS.items():
        expected = rpy_to_matrix(np.array(rpy)).T @ [0.0, 0.0, mass * G]  # the weight, in the ball's axes
        for message in received[name]:
            assert message.header.frame_id == name
            force, torque = _vector(message.wrench.force), _vector(message.wrench.torque)
            np.testing.assert_allclose(force, expected, rtol=0, atol=1e-6 * mass * G)
            np.testing.assert_allclose(torque, 0.0, atol=1e-9)  # through the centre, the link's origin
        stamps = [stamp_of(m) for m in received[name]]
        assert all(b > a for a, b in zip(stamps, stamps[1:])) and stamps[-1] > 0.0  # sim time goes on
    # the yawed ball: force z is m g in its own axes too
    assert received["ball"][-1].wrench.force.z == pytest.approx(BALLS["ball"][0] * G, rel=1e-6)


def test_contact_markers_are_arrows_from_the_contact_points_along_the_forces(balls, peer):
    arrays = peer.collect(MarkerArray, "/mb_sim/contact_markers")
    assert peer.spin_until(lambda: len(arrays) >= 5, 30), len(arrays)
    for array in arrays:
        clear, *arrows = array.markers
        assert clear.action == Marker.DELETEALL and clear.ns == "contacts"
        assert [m.id for m in arrows] == [0, 1]  # the features, in model.contact_names order
        for marker, (mass, spot, _) in zip(arrows, BALLS.values()):
            assert marker.type == Marker.ARROW and marker.header.frame_id == "world"
            start, end = (np.array([p.x, p.y, p.z]) for p in marker.points)
            penetration = mass * G / K
            np.testing.assert_allclose(start, [spot[0], spot[1], -penetration], atol=1e-9)
            np.testing.assert_allclose(end - start, [0.0, 0.0, mass * G / FORCE_SCALE], atol=1e-7)


def test_imu_on_a_resting_ball_reads_gravity_up_in_its_link_frame(balls, peer):
    """``~/imu/<name>`` (sensor_msgs/Imu): at rest the specific force is +g up, expressed in the
    IMU's link axes (R^T (0, 0, g), the sensor's own mounting rotation undone), the orientation the
    link's, no rotation rate; frame_id the link."""
    assert wait_for_output(peer, balls, re.escape("IMUs on ~/imu/ball_imu")), balls.output
    received = peer.collect(Imu, "/mb_sim/imu/ball_imu")
    assert peer.spin_until(lambda: len(received) >= 10, 30), len(received)
    rotation = rpy_to_matrix(np.array(BALLS["tilted_ball"][2]))
    for message in received:
        assert message.header.frame_id == "tilted_ball"
        np.testing.assert_allclose(_vector(message.linear_acceleration), rotation.T @ [0.0, 0.0, G], atol=1e-6)
        np.testing.assert_allclose(_vector(message.angular_velocity), 0.0, atol=1e-9)
        q = message.orientation
        x, y, z, w = q.x, q.y, q.z, q.w
        from_quaternion = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                                    [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                                    [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        np.testing.assert_allclose(from_quaternion, rotation, atol=1e-9)
