"""Numbers to ROS messages: stamps, 4x4 poses to transforms, odometry, joint states, wrenches.

No rclpy here (only message packages), so unit tests build messages without a ROS context.
Quaternions: ``transforms3d.quaternions.mat2quat`` gives (w, x, y, z); ROS messages hold x, y, z, w.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Pose, Quaternion, Transform, TransformStamped, Twist, Vector3, Wrench, WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from transforms3d.quaternions import mat2quat, quat2mat

__all__ = ["stamp", "duration", "seconds", "quaternion", "transform", "transform_stamped", "pose_matrix",
           "transform_matrix", "odometry", "joint_state", "vector3", "wrench_stamped"]


def stamp(t: float) -> Time:
    """``builtin_interfaces/Time`` of `t` seconds (rounded to the nanosecond)."""
    nanoseconds = round(t * 1e9)
    return Time(sec=nanoseconds // 10**9, nanosec=nanoseconds % 10**9)


def duration(t: float) -> Duration:
    """``builtin_interfaces/Duration`` of `t` seconds (rounded to the nanosecond)."""
    nanoseconds = round(t * 1e9)
    return Duration(sec=nanoseconds // 10**9, nanosec=nanoseconds % 10**9)


def seconds(time: Time) -> float:
    """Seconds of a ``builtin_interfaces/Time``."""
    return time.sec + time.nanosec * 1e-9


def quaternion(rotation: np.ndarray) -> Quaternion:
    """Unit quaternion of a 3x3 rotation matrix (scalar part kept non-negative)."""
    w, x, y, z = mat2quat(np.asarray(rotation, dtype=float))
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    return Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))


def transform(pose: np.ndarray) -> Transform:
    """``geometry_msgs/Transform`` of a 4x4 homogeneous pose."""
    x, y, z = (float(v) for v in pose[:3, 3])
    return Transform(translation=Vector3(x=x, y=y, z=z), rotation=quaternion(pose[:3, :3]))


def transform_stamped(parent: str, child: str, pose: np.ndarray, time: Time) -> TransformStamped:
    """The transform `parent` -> `child`: `pose` is the child frame's pose in the parent frame."""
    message = TransformStamped(transform=transform(pose))
    message.header.frame_id, message.header.stamp, message.child_frame_id = parent, time, child
    return message


def _matrix(translation, rotation) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = quat2mat([rotation.w, rotation.x, rotation.y, rotation.z])
    pose[:3, 3] = [translation.x, translation.y, translation.z]
    return pose


def transform_matrix(message: Transform) -> np.ndarray:
    """4x4 pose of a ``geometry_msgs/Transform`` (the inverse of :func:`transform`)."""
    return _matrix(message.translation, message.rotation)


def pose_matrix(message: Pose) -> np.ndarray:
    """4x4 pose of a ``geometry_msgs/Pose``."""
    return _matrix(message.position, message.orientation)


def odometry(frame: str, child: str, pose: np.ndarray, linear: Sequence[float], angular: Sequence[float],
             time: Time) -> Odometry:
    """``nav_msgs/Odometry``: `pose` of `child` in `frame`; the twist in `child` axes, as ROS
    specifies (covariances left zero: the simulation knows the state exactly)."""
    message = Odometry()
    message.header.frame_id, message.header.stamp, message.child_frame_id = frame, time, child
    x, y, z = (float(v) for v in pose[:3, 3])
    message.pose.pose.position.x, message.pose.pose.position.y, message.pose.pose.position.z = x, y, z
    message.pose.pose.orientation = quaternion(pose[:3, :3])
    vx, vy, vz = (float(v) for v in linear)
    wx, wy, wz = (float(v) for v in angular)
    message.twist.twist = Twist(linear=Vector3(x=vx, y=vy, z=vz), angular=Vector3(x=wx, y=wy, z=wz))
    return message


def joint_state(names: Sequence[str], positions: Sequence[float], velocities: Sequence[float],
                efforts: Sequence[float], time: Time) -> JointState:
    """``sensor_msgs/JointState`` stamped `time`."""
    message = JointState(name=list(names), position=[float(v) for v in positions],
                         velocity=[float(v) for v in velocities], effort=[float(v) for v in efforts])
    message.header.stamp = time
    return message


def vector3(values: Sequence[float]) -> Vector3:
    """``geometry_msgs/Vector3`` of three numbers."""
    x, y, z = (float(v) for v in values)
    return Vector3(x=x, y=y, z=z)


def wrench_stamped(frame: str, force: Sequence[float], torque: Sequence[float], time: Time) -> WrenchStamped:
    """``geometry_msgs/WrenchStamped`` in `frame` (force and torque in its axes, the torque about
    its origin, as RViz draws it), stamped `time`."""
    message = WrenchStamped(wrench=Wrench(force=vector3(force), torque=vector3(torque)))
    message.header.frame_id, message.header.stamp = frame, time
    return message
