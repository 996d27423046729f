"""IMU readings (mb_sim/sim/imu.py, outputs imu_jacobians and imu_states of mb_sim/symbolic/imu.py)
against references derived here, never from the simulator's model:

* at rest (a hanging pendulum, a ball resting on the ground at its static penetration): the
  accelerometer reads +g along world up, the gyroscope zero;
* a pendulum swinging: the angular rate is the joint speed, the specific force at distance r is
  the tangential ``r theta''`` and centripetal ``r theta'^2`` acceleration (theta'' from the
  pendulum equation ``I_O theta'' = -m g l sin(theta)``) minus gravity;
* a free body spinning about a principal axis without gravity: constant rate, ``r w^2`` toward the
  axis;
* the numerical derivative of the sensor point's world velocity (itself the central difference of
  the point's position from link poses along the kinematic ODE) along a trajectory of a floating
  arm, to 1e-6;
* the ``<imu>`` and Gazebo ``<sensor type="imu">`` declarations, their errors, seeded noise.

Every reading is compared in sensor axes with the mounting rotation computed here (URDF rpy:
``Rz(yaw) Ry(pitch) Rx(roll)``).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.sim.imu import ImuNoise
from mb_sim.urdf import URDFError

G = 9.81
MASS, COM, IYY = 2.0, 0.5, 0.03  # pendulum: mass, centre of mass below the hinge, inertia about it
TIP, TIP_RPY = 0.8, (0.3, -0.2, 1.1)  # the mb_sim <imu> on the pendulum: distance, mounting
GZ = 0.4  # the Gazebo sensor on the pendulum: distance (no rotation)


def rotation_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF roll-pitch-yaw as a matrix, written out here (fixed axes x, y, z)."""
    cx, sx, cy, sy = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    cz, sz = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def quaternion_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """Rotation matrix of a unit quaternion (x, y, z, w)."""
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / f"{name}.urdf"
    path.write_text(text)
    return path


PENDULUM = f"""<robot name="imu_pendulum">
  <link name="base"/>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <link name="arm">
    <inertial><origin xyz="0 0 -{COM}"/><mass value="{MASS}"/>
      <inertia ixx="0.02" iyy="{IYY}" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <mb_sim><imu name="tip_imu" link="arm"><origin xyz="0 0 -{TIP}" rpy="{' '.join(map(str, TIP_RPY))}"/></imu></mb_sim>
  <gazebo reference="arm"><sensor type="imu" name="gz_imu"><always_on>1</always_on>
    <pose>0 0 -{GZ} 0 0 0</pose></sensor></gazebo>
  <gazebo><plugin name="other" filename="libother.so"/></gazebo>
</robot>
"""

SPINNER = """<robot name="imu_spinner">
  <link name="world"/>
  <joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>
  <link name="body">
    <inertial><mass value="3"/><inertia ixx="0.05" iyy="0.05" izz="0.08" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <mb_sim><gravity xyz="0 0 0"/>
    <imu name="rim" link="body"><origin xyz="0.3 0 0.1" rpy="0.4 0.5 -0.6"/></imu></mb_sim>
</robot>
"""

BALL = """<robot name="imu_ball">
  <link name="world"/>
  <joint name="free" type="floating"><parent link="world"/><child link="ball"/></joint>
  <link name="ball">
    <inertial><mass value="2"/><inertia ixx="0.008" iyy="0.008" izz="0.008" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <mb_sim><ground stiffness="20000" damping="0.5" friction="0.5"/>
    <imu name="inside" link="ball"><origin xyz="0.05 -0.02 0.03" rpy="0.2 0.1 0.7"/></imu></mb_sim>
</robot>
"""

# A floating base carrying a hinged arm through a fixed bracket: the IMU's Jacobian gathers the
# floating joint's six speeds and the hinge's, through a fixed joint.
FLOATING_ARM = """<robot name="imu_floating_arm">
  <link name="world"/>
  <joint name="free" type="floating"><parent link="world"/><child link="base"/></joint>
  <link name="base">
    <inertial><mass value="4"/><inertia ixx="0.1" iyy="0.2" izz="0.15" ixy="0.01" ixz="0" iyz="0.02"/></inertial>
  </link>
  <joint name="bracket_joint" type="fixed"><parent link="base"/><child link="bracket"/>
    <origin xyz="0.2 0.1 0" rpy="0 0.3 0"/></joint>
  <link name="bracket"/>
  <joint name="elbow" type="continuous"><parent link="bracket"/><child link="forearm"/>
    <origin xyz="0.1 0 0"/><axis xyz="0.3 1 0.2"/></joint>
  <link name="forearm">
    <inertial><origin xyz="0.25 0 0"/><mass value="1"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="sensor_joint" type="fixed"><parent link="forearm"/><child link="sensor_board"/>
    <origin xyz="0.4 0.05 -0.02" rpy="0.1 0 0.2"/></joint>
  <link name="sensor_board"/>
  <mb_sim><imu name="board" link="sensor_board"><origin xyz="0.01 0.02 0.03" rpy="-0.3 0.2 0.5"/></imu></mb_sim>
</robot>
"""


@pytest.fixture(scope="module")
def cache(model_cache) -> Path:
    return model_cache


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory, cache) -> Simulator:
    path = write(tmp_path_factory.mktemp("pendulum"), "pendulum", PENDULUM)
    with pytest.warns(Warning):  # the hinge has no effort limit
        return Simulator(path, cache_dir=cache, dt=1e-3)


def pendulum_expected(theta: float, rate: float, r: float, mounting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(angular velocity, specific force) in sensor axes of an IMU at distance r below the hinge,
    from the pendulum equation: link axes x (tangential, forward), z (along the arm, up)."""
    inertia_about_hinge = IYY + MASS * COM ** 2
    accel = -MASS * G * COM * math.sin(theta) / inertia_about_hinge
    # acceleration of the point (0, 0, -r) in link axes: alpha x p + w x (w x p), w = (0, rate, 0)
    acceleration = np.array([-r * accel, 0.0, r * rate ** 2])
    gravity_in_link = np.array([G * math.sin(theta), 0.0, -G * math.cos(theta)])  # Ry(theta)^T (0, 0, -g)
    return mounting.T @ np.array([0.0, rate, 0.0]), mounting.T @ (acceleration - gravity_in_link)


def test_pendulum_at_rest_reads_g_up(pendulum):
    """Hanging still: +g along world up in sensor axes, zero rates, orientation = mounting."""
    pendulum.set_state(positions={"hinge_q": 0.0}, velocities={"hinge_u": 0.0})
    readings = pendulum.imus()
    mounting = rotation_rpy(*TIP_RPY)
    tip = readings["tip_imu"]
    np.testing.assert_allclose(tip.linear_acceleration, mounting.T @ [0, 0, G], atol=1e-12)
    np.testing.assert_allclose(tip.angular_velocity, 0.0, atol=1e-14)
    np.testing.assert_allclose(quaternion_matrix(*tip.orientation), mounting, atol=1e-12)
    np.testing.assert_allclose(readings["gz_imu"].linear_acceleration, [0, 0, G], atol=1e-12)
    assert pendulum.model.imu_links == ["arm"]  # both IMUs read the arm's one row of outputs


@pytest.mark.parametrize("theta, rate", [(0.7, 1.3), (-2.5, -3.0), (math.pi / 2, 0.0), (3.0, 4.5)])
def test_pendulum_state_against_pendulum_equation(pendulum, theta, rate):
    pendulum.set_state(positions={"hinge_q": theta}, velocities={"hinge_u": rate})
    for name, r, mounting in (("tip_imu", TIP, rotation_rpy(*TIP_RPY)), ("gz_imu", GZ, np.eye(3))):
        reading = pendulum.imu(name)
        omega, specific = pendulum_expected(theta, rate, r, mounting)
        np.testing.assert_allclose(reading.angular_velocity, omega, atol=1e-12)
        np.testing.assert_allclose(reading.linear_acceleration, specific, atol=1e-11)
        hinge = np.array([[math.cos(theta), 0, math.sin(theta)], [0, 1, 0], [-math.sin(theta), 0, math.cos(theta)]])
        np.testing.assert_allclose(quaternion_matrix(*reading.orientation), hinge @ mounting, atol=1e-12)


def test_pendulum_swinging_along_trajectory(pendulum):
    """At each sampled state of a swing the reading matches the formula at that state; the
    centripetal part r w^2 along the arm and the tangential r w' are both exercised."""
    pendulum.set_state(positions={"hinge_q": 1.2}, velocities={"hinge_u": 0.5})
    largest_rate = 0.0
    for _ in range(20):
        pendulum.advance(0.05)
        theta, rate = float(pendulum.q[0]), float(pendulum.u[0])
        largest_rate = max(largest_rate, abs(rate))
        _, specific = pendulum_expected(theta, rate, GZ, np.eye(3))
        np.testing.assert_allclose(pendulum.imu("gz_imu").linear_acceleration, specific, atol=1e-11)
    assert largest_rate > 2.0  # the swing went through the bottom: the centripetal term mattered


def test_free_spin_constant_rate_and_centripetal(tmp_path, cache):
    """No gravity, spinning about the principal axis z (tilted in the world) while drifting:
    constant rate, r w^2 toward the axis, in sensor axes."""
    sim = Simulator(write(tmp_path, "spinner", SPINNER), cache_dir=cache, dt=1e-3)
    rate, radius = 7.0, 0.3
    tilt = rotation_rpy(0.5, -0.4, 0.2)
    w, x, y, z = _quaternion_wxyz(tilt)
    sim.set_state(positions={"free_qw": w, "free_qx": x, "free_qy": y, "free_qz": z},
                  velocities={"free_wz": rate, "free_vx": 0.4, "free_vy": -0.2})
    mounting = rotation_rpy(0.4, 0.5, -0.6)
    for _ in range(10):
        sim.advance(0.1)
        reading = sim.imu("rim")
        np.testing.assert_allclose(reading.angular_velocity, mounting.T @ [0, 0, rate], atol=1e-8)
        np.testing.assert_allclose(reading.linear_acceleration, mounting.T @ [-radius * rate ** 2, 0, 0], atol=1e-7)
        body = quaternion_matrix(*reading.orientation) @ mounting.T
        np.testing.assert_allclose(body[:, 2], tilt[:, 2], atol=1e-8)  # the spin axis stays put


def _quaternion_wxyz(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """(w, x, y, z) of a rotation matrix with w > 0 (Shepperd's trace branch; fine for small tilts)."""
    w = math.sqrt(1.0 + np.trace(rotation)) / 2
    return (w, (rotation[2, 1] - rotation[1, 2]) / (4 * w), (rotation[0, 2] - rotation[2, 0]) / (4 * w),
            (rotation[1, 0] - rotation[0, 1]) / (4 * w))


def test_ball_resting_on_ground_reads_g_up(tmp_path, cache):
    """A ball at its static penetration m g / k, turned: +g up in sensor axes, zero rates."""
    sim = Simulator(write(tmp_path, "ball", BALL), cache_dir=cache)
    turn = rotation_rpy(0.3, -0.7, 1.9)
    w, x, y, z = _quaternion_wxyz(turn)
    rest = 0.1 - 2.0 * G / 20000.0
    sim.set_state(positions={"free_z": rest, "free_qw": w, "free_qx": x, "free_qy": y, "free_qz": z})
    reading = sim.imu("inside")
    sensor = turn @ rotation_rpy(0.2, 0.1, 0.7)
    np.testing.assert_allclose(reading.linear_acceleration, sensor.T @ [0, 0, G], atol=1e-9)
    np.testing.assert_allclose(reading.angular_velocity, 0.0, atol=1e-14)
    np.testing.assert_allclose(quaternion_matrix(*reading.orientation), sensor, atol=1e-12)


def test_acceleration_is_derivative_of_sensor_velocity(tmp_path, cache):
    """Along a trajectory of a floating arm (gravity on), a = R f + g matches the central
    difference (v(t+h) - v(t-h)) / 2h of the sensor point's world velocity, where v itself is the
    central difference of the point's position (link poses) along the kinematic ODE q' = qdot."""
    h = 1e-4
    robot = load_urdf(write(tmp_path, "arm", FLOATING_ARM))
    with pytest.warns(Warning):
        sim = Simulator(robot, cache_dir=cache, dt=h)
    offset, mounting = np.array([0.01, 0.02, 0.03]), rotation_rpy(-0.3, 0.2, 0.5)
    row = sim.model.link_names.index("sensor_board")
    sim.set_state(velocities={"free_vx": 0.3, "free_vz": 1.0, "free_wx": 1.5, "free_wy": -2.0, "free_wz": 0.7,
                              "elbow_u": 3.0})
    sim.advance(0.05)
    checked = 0
    for _ in range(3):
        before = _point_velocity(sim, row, offset)
        sim.advance(h)
        reading, middle = sim.imu("board"), sim.q
        sim.advance(h)
        after = _point_velocity(sim, row, offset)
        sensor = quaternion_matrix(*reading.orientation)
        acceleration = sensor @ reading.linear_acceleration + np.array([0, 0, -G])
        numeric = (after - before) / (2 * h)
        assert np.linalg.norm(acceleration) > 1.0
        np.testing.assert_allclose(acceleration, numeric, atol=1e-6)
        np.testing.assert_allclose(sensor, _poses(sim, middle)[row][:3, :3] @ mounting, atol=1e-12)
        checked += 1
        sim.advance(0.05)
    assert checked == 3


def _poses(sim: Simulator, q: np.ndarray) -> list[np.ndarray]:
    """World poses of the links at coordinates q (speeds and time as in the simulator)."""
    b = sim.model.buffers
    rows = sim.model.evaluate(q, b.u.copy(), b.inputs.copy(), b.params.copy(), sim.time)["link_poses"]
    poses = []
    for r in rows:
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = r[:9].reshape(3, 3), r[9:]
        poses.append(pose)
    return poses


def _point_velocity(sim: Simulator, row: int, offset: np.ndarray) -> np.ndarray:
    """World velocity of the point at `offset` in link `row`: d/de x(q + e q') by central difference."""
    q, u = sim.q, sim.u
    b = sim.model.buffers
    qdot = sim.model.evaluate(q, u, b.inputs.copy(), b.params.copy(), sim.time)["qdot"][:, 0]
    e = 1e-4
    plus, minus = _poses(sim, q + e * qdot)[row], _poses(sim, q - e * qdot)[row]
    point = lambda pose: pose[:3, :3] @ offset + pose[:3, 3]  # noqa: E731
    velocity = (point(plus) - point(minus)) / (2 * e)
    sim.model.buffers.q[:], sim.model.buffers.u[:] = q, u  # evaluate() loaded other states
    return velocity


def test_noise_is_seeded_and_biased(pendulum):
    pendulum.set_state(positions={"hinge_q": 0.4}, velocities={"hinge_u": 0.2})
    exact = pendulum.imu("gz_imu")
    pendulum.set_imu_noise("gz_imu", ImuNoise(linear_acceleration_bias=(0.1, 0.2, -0.3),
                                              angular_velocity_bias=(0, 0, 0.01)))
    biased = pendulum.imu("gz_imu")
    np.testing.assert_allclose(biased.linear_acceleration - exact.linear_acceleration, [0.1, 0.2, -0.3], atol=1e-12)
    np.testing.assert_allclose(biased.angular_velocity - exact.angular_velocity, [0, 0, 0.01], atol=1e-12)
    noise = ImuNoise(angular_velocity_stddev=0.01, linear_acceleration_stddev=0.05, seed=7)
    pendulum.set_imu_noise("gz_imu", noise)
    first = np.array([pendulum.imu("gz_imu").linear_acceleration for _ in range(2000)])
    pendulum.set_imu_noise("gz_imu", noise)
    again = np.array([pendulum.imu("gz_imu").linear_acceleration for _ in range(2000)])
    np.testing.assert_array_equal(first, again)
    deviation = first - exact.linear_acceleration
    assert abs(deviation.std() - 0.05) < 0.005 and np.abs(deviation.mean(axis=0)).max() < 0.01
    pendulum.set_imu_noise("gz_imu", None)
    np.testing.assert_array_equal(pendulum.imu("gz_imu").linear_acceleration, exact.linear_acceleration)
    with pytest.raises(KeyError, match="tip_imu"):
        pendulum.imu("nope")
    with pytest.raises(ValueError, match="stddev"):
        ImuNoise(linear_acceleration_stddev=-1.0)


@pytest.mark.parametrize("snippet, message", [
    ('<mb_sim><imu name="a" link="nowhere"/></mb_sim>', "link 'nowhere' does not exist"),
    ('<mb_sim><imu name="a" link="arm"/><imu name="a" link="arm"/></mb_sim>', "another IMU has this name"),
    ('<mb_sim><imu name="a" link="arm" rate="100"/></mb_sim>', "unknown attribute"),
    ('<mb_sim><imu name="a" link="arm"><origin xyz="0 nan 0"/></imu></mb_sim>', "NaN"),
    ('<gazebo reference="arm"><sensor type="imu" name="g"><pose>0 0 1</pose></sensor></gazebo>',
     "expected 6 number"),
    ('<gazebo><sensor type="imu" name="g"/></gazebo>', "needs <gazebo reference"),
    ('<gazebo reference="nowhere"><sensor type="imu" name="g"/></gazebo>', "gazebo sensor 'g'"),
])
def test_declaration_errors(snippet, message):
    text = PENDULUM.split("<mb_sim>")[0] + snippet + "</robot>"
    with pytest.raises(URDFError, match=message) as raised:
        load_urdf(text)
    assert "\n" not in str(raised.value)


def test_declarations_read():
    robot = load_urdf(PENDULUM)
    assert [(i.name, i.link, i.declared_in) for i in robot.imus] == [
        ("tip_imu", "arm", "mb_sim imu"), ("gz_imu", "arm", "gazebo sensor")]
    np.testing.assert_allclose(robot.imus[1].xyz, [0, 0, -GZ])


HYQ = (Path(__file__).resolve().parent.parent / ".venv/lib/python3.11/site-packages/cmeel.prefix/share/"
       "example-robot-data/robots/hyq_description/robots/hyq_no_sensors.urdf")


@pytest.mark.slow
@pytest.mark.skipif(not HYQ.is_file(), reason="example-robot-data not installed")
def test_third_party_gazebo_imu_in_free_fall_reads_zero(cache):
    """HyQ's own <gazebo reference="trunk_imu"><sensor type="imu">, floating base, dropped at rest
    with no ground: every body falls at g, so the accelerometer reads zero (equivalence principle),
    the gyroscope zero; pinned in the world (fixed base) it reads +g up."""
    with pytest.warns(Warning):
        falling = Simulator(HYQ, floating_base=True, cache_dir=cache)
    assert falling.imu_names == ["trunk_imu"]
    reading = falling.imu("trunk_imu")
    np.testing.assert_allclose(reading.linear_acceleration, 0.0, atol=1e-12)
    np.testing.assert_allclose(reading.angular_velocity, 0.0, atol=1e-14)
    with pytest.warns(Warning):
        pinned = Simulator(HYQ, cache_dir=cache)
    reading = pinned.imu("trunk_imu")
    sensor = quaternion_matrix(*reading.orientation)
    np.testing.assert_allclose(sensor @ reading.linear_acceleration, [0, 0, G], atol=1e-12)
