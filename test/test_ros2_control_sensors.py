"""Sensors declared the ros2_control way (``<ros2_control><sensor>`` with the state interfaces of
ros2_control's IMUSensor and ForceTorqueSensor and ``<param name="frame_id">``), read as IMUs and
force-torque sensors; references derived here from the URDF's numbers:

* an IMU on a link at rest reads +g up (specific force), zero rate, the link's orientation;
* a force-torque sensor on a hanging tool reads, child_to_parent in the tool's axes, the tool's
  weight pulling down (-m g z) and its moment about the joint (r x (-m g z));
* a sensor also declared as a Gazebo ``<sensor>`` of the same name is that one (not two);
* what is not read is warned about, naming the element: unknown interfaces, no frame_id, a
  frame_id that is no link, a force-torque sensor on the root link.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFWarning

G = 9.81
TOOL_MASS, TOOL_COM = 0.7, np.array([0.03, -0.02, -0.1])


def arm(sensors: str, gazebo: str = "") -> str:
    """A one-joint arm (pan about z) carrying a tool on a fixed joint, plus `sensors` in a
    ``<ros2_control>`` with a mock hardware (mb_sim serves none, it only reads the declarations)."""
    return f"""<robot name="sensor_arm">
  <link name="base"/>
  <joint name="pan" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.2"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="5"/></joint>
  <link name="arm"><inertial><origin xyz="0.1 0 0"/><mass value="1.0"/>
    <inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="flange" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0.3 0 0"/></joint>
  <link name="tool"><inertial><origin xyz="{' '.join(map(str, TOOL_COM))}"/><mass value="{TOOL_MASS}"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <ros2_control name="arm_hw" type="system">
    <hardware><plugin>mock_components/GenericSystem</plugin></hardware>
    <joint name="pan"><command_interface name="position"/><state_interface name="position"/></joint>
    {sensors}
  </ros2_control>
  {gazebo}
</robot>"""


IMU = """<sensor name="arm_imu">
      <state_interface name="orientation.x"/><state_interface name="orientation.y"/>
      <state_interface name="orientation.z"/><state_interface name="orientation.w"/>
      <state_interface name="angular_velocity.x"/><state_interface name="angular_velocity.y"/>
      <state_interface name="angular_velocity.z"/><state_interface name="linear_acceleration.x"/>
      <state_interface name="linear_acceleration.y"/><state_interface name="linear_acceleration.z"/>
      <param name="frame_id">arm</param></sensor>"""
FT = """<sensor name="tcp_fts_sensor">
      <state_interface name="force.x"/><state_interface name="force.y"/><state_interface name="force.z"/>
      <state_interface name="torque.x"/><state_interface name="torque.y"/><state_interface name="torque.z"/>
      <param name="frame_id">tool</param><param name="min_force">-100</param></sensor>"""


def test_ros2_control_imu_and_force_torque_are_simulated():
    robot = load_urdf(arm(IMU + FT))
    assert [imu.name for imu in robot.imus] == ["arm_imu"]
    assert [(s.name, s.joint, s.frame, s.measure_direction) for s in robot.force_torques] == [
        ("tcp_fts_sensor", "flange", "child", "child_to_parent")]
    sim = Simulator(robot)
    sim.set_state({"pan": 0.6})
    reading = sim.imu("arm_imu")
    np.testing.assert_allclose(reading.linear_acceleration, [0, 0, G], atol=1e-9)
    np.testing.assert_allclose(reading.angular_velocity, 0, atol=1e-12)
    np.testing.assert_allclose(reading.orientation, [0, 0, np.sin(0.3), np.cos(0.3)], atol=1e-12)
    force, torque = sim.force_torque("tcp_fts_sensor")
    weight = np.array([0, 0, -TOOL_MASS * G])  # the tool pulls on the flange: child_to_parent
    np.testing.assert_allclose(force, weight, atol=1e-9)  # tool axes: rotated about z only, z stays
    pan = np.array([[np.cos(0.6), np.sin(0.6), 0], [-np.sin(0.6), np.cos(0.6), 0], [0, 0, 1]])  # world -> tool
    np.testing.assert_allclose(torque, np.cross(TOOL_COM, pan @ weight), atol=1e-9)


def test_a_gazebo_sensor_of_the_same_name_is_that_sensor():
    gazebo = '<gazebo reference="arm"><sensor type="imu" name="arm_imu"><pose>0 0 0.05 0 0 0</pose></sensor></gazebo>'
    robot = load_urdf(arm(IMU, gazebo))
    assert [(imu.name, imu.declared_in, float(imu.xyz[2])) for imu in robot.imus] == [("arm_imu", "gazebo sensor", 0.05)]


@pytest.mark.parametrize("sensor, says", [
    ('<sensor name="thermo"><state_interface name="temperature"/><param name="frame_id">arm</param></sensor>',
     '<sensor name="thermo">: not simulated: mb_sim reads IMUs'),
    ('<sensor name="wrist_ft"><state_interface name="force.z"/></sensor>',
     '<sensor name="wrist_ft">: not simulated: no <param name="frame_id">'),
    ('<sensor name="imu2"><state_interface name="orientation.x"/><param name="frame_id">nowhere</param></sensor>',
     "frame_id 'nowhere' is no link of the robot"),
    ('<sensor name="base_ft"><state_interface name="torque.x"/><param name="frame_id">base</param></sensor>',
     "frame_id 'base' is the root link"),
])
def test_sensors_not_read_are_warned_about(sensor, says):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = load_urdf(arm(sensor))
    messages = [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]
    assert any(says in m and '<ros2_control name="arm_hw">' in m for m in messages), messages
    assert not robot.imus and not robot.force_torques


def test_an_imu_named_after_its_link_needs_no_frame_id():
    sensor = '<sensor name="tool"><state_interface name="angular_velocity.z"/></sensor>'
    assert [(imu.name, imu.link) for imu in load_urdf(arm(sensor)).imus] == [("tool", "tool")]
