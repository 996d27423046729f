"""IMUs on ROS topics (robots with ``<mb_sim><imu>`` or Gazebo ``<sensor type="imu">``).

``~/imu/<name>`` (``sensor_msgs/Imu``), one per IMU, every publish period while subscribed: the
orientation of the IMU's link in the world, its angular velocity and the specific force at the
sensor point (gravity included: +9.81 up at rest), both in the link's axes, ``frame_id`` the
link's TF frame (REP 145 wants the data in the frame named; the sensor's own mounting rotation is
undone so no extra TF frame is needed).  Covariances are unknown (-1 in element 0) unless noise
is set on the simulator, then its variances.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import Imu

from mb_sim.ros.constraint_services import token_names
from mb_sim.ros.subscribers import SubscriberGroup, counted_publisher
from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = ["IMU_TOPIC", "ImuTopics", "imu_message"]

#: The topic of IMU token ``{}``, relative to the node.
IMU_TOPIC = "~/imu/{}"


def _quaternion_of(rotation: np.ndarray) -> np.ndarray:
    """(x, y, z, w) of a rotation matrix (Shepperd's method, w >= 0)."""
    m = rotation
    trace = np.trace(m)
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = ((m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4)
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, (m[k, j] - m[j, k]) / s]
        q[i], q[j], q[k] = s / 4, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
    q = np.array(q, dtype=float)
    return q if q[3] >= 0 else -q


def _matrix_of(quaternion: np.ndarray) -> np.ndarray:
    x, y, z, w = (float(v) for v in quaternion)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def imu_message(reading, mounting: np.ndarray, frame: str, time: Time) -> Imu:
    """A sensor_msgs/Imu of `reading` (:class:`~mb_sim.sim.imu.ImuReading`, sensor axes) in the
    link's axes: `mounting` is the sensor's rotation in its link (link <- sensor)."""
    message = Imu()
    message.header.frame_id, message.header.stamp = frame, time
    link_in_world = _matrix_of(reading.orientation) @ mounting.T
    x, y, z, w = _quaternion_of(link_in_world)
    message.orientation.x, message.orientation.y, message.orientation.z, message.orientation.w = x, y, z, w
    for target, values in ((message.angular_velocity, mounting @ reading.angular_velocity),
                           (message.linear_acceleration, mounting @ reading.linear_acceleration)):
        target.x, target.y, target.z = (float(v) for v in values)
    message.orientation_covariance[0] = 0.0  # exact
    message.angular_velocity_covariance[0] = message.linear_acceleration_covariance[0] = 0.0
    return message


class ImuTopics:
    """The IMU publishers of one node: `imus` the robot's IMU descriptions, `frames` the TF frame
    of each link."""

    def __init__(self, node, imus: list, frames: Mapping[str, str]) -> None:
        self.topics = token_names([imu.name for imu in imus], IMU_TOPIC, "IMUs", "topic")
        self.frames = {imu.name: frames[imu.link] for imu in imus}
        self.mountings = {imu.name: rpy_to_matrix(np.asarray(imu.rpy, dtype=float)) for imu in imus}
        self._pubs = {name: counted_publisher(node, Imu, topic, 10) for name, topic in self.topics.items()}
        self._subscribers = SubscriberGroup(self._pubs.values())

    def listened(self) -> bool:
        """Whether anybody subscribes to an IMU topic (matched events: :mod:`mb_sim.ros.subscribers`)."""
        return self._subscribers.any()

    def publish(self, readings: Mapping, time: Time) -> None:
        """Publish `readings` (:meth:`mb_sim.sim.Simulator.imus`)."""
        for name, pub in self._pubs.items():
            pub.publish(imu_message(readings[name], self.mountings[name], self.frames[name], time))

    def description(self) -> str:
        """One log line: the topics."""
        return f"IMUs on {', '.join(self.topics.values())} (sensor_msgs/Imu, in their links' frames)"
