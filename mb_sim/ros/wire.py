"""Messages of a fixed layout serialized once and then patched: the node's per-period messages.

Building a ``tf2_msgs/TFMessage`` of six transforms in Python and letting rclpy convert it costs
about 300 us, publishing the same message already serialized under 2 us.  Every message the node
publishes each period has a layout fixed at start-up (the joint names, the frames, the number of
values), so each is serialized once, with sentinel values where the numbers go, and each period
only the numbers and the stamp are written into a copy of those bytes (:class:`WireTemplate`),
which ``Publisher.publish`` sends as they are.  That is what lets the node run a hundred times
faster than real time while still publishing every period.

The layout is found, not assumed: the template is serialized by rclpy itself with unique
sentinel doubles and stamps, whose byte patterns are then located; a pattern found anywhere but
exactly where expected is an error at start-up, never a wrong message.  The tests check every
rendered message against the same message built field by field and serialized by rclpy.
No rclpy node here: :func:`rclpy.serialization.serialize_message` needs no context.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

__all__ = ["WireTemplate", "sentinel_doubles", "SENTINEL_STAMP", "joint_state_template", "tf_template",
           "clock_template", "odometry_template", "stamp_parts"]

#: The stamp written where the real stamp goes (a valid Time: nanosec < 1e9).
SENTINEL_STAMP = (0x6B5A4939, 0x1A2B3C4D)
#: builtin_interfaces/Time in CDR (little endian): int32 sec, uint32 nanosec.
_STAMP = struct.Struct("<iI")


def sentinel_doubles(n: int) -> np.ndarray:
    """`n` distinct doubles whose bytes are unlikely anywhere else in a message (tiny, odd mantissas)."""
    return (1.0 + np.arange(1, n + 1) * 2.0**-20 + 2.0**-45) * 2.0**-1000 * np.pi


def stamp_parts(t: float) -> tuple[int, int]:
    """``(sec, nanosec)`` of `t` seconds, rounded to the nanosecond (as conversions.stamp)."""
    nanoseconds = round(t * 1e9)
    return nanoseconds // 10**9, nanoseconds % 10**9


def _sentinel_time() -> Time:
    return Time(sec=SENTINEL_STAMP[0], nanosec=SENTINEL_STAMP[1])


def _occurrences(data: bytes, pattern: bytes) -> list[int]:
    found, start = [], data.find(pattern)
    while start >= 0:
        found.append(start)
        start = data.find(pattern, start + 1)
    return found


class WireTemplate:
    """A serialized message whose float64 slots and stamps are rewritten by :meth:`render`.

    `message` must hold ``sentinel_doubles(n_doubles)`` in the slots that change, in the order
    :meth:`render` receives values, and ``SENTINEL_STAMP`` in each of its `n_stamps` stamps.
    """

    def __init__(self, message, n_doubles: int, n_stamps: int) -> None:
        data = serialize_message(message)
        offsets = []
        for k, value in enumerate(sentinel_doubles(n_doubles)):
            found = _occurrences(data, np.float64(value).astype("<f8").tobytes())
            if len(found) != 1:
                raise RuntimeError(f"{type(message).__name__}: value slot {k} found {len(found)} times in its "
                                   "serialized form")
            offsets.append(found[0])
        stamps = _occurrences(data, _STAMP.pack(*SENTINEL_STAMP))
        if len(stamps) != n_stamps:
            raise RuntimeError(f"{type(message).__name__}: {n_stamps} stamps expected, {len(stamps)} found in its "
                               "serialized form")
        self.message_type = type(message)
        self._bytes = np.frombuffer(data, dtype=np.uint8).copy()
        self._double_index = (np.array(offsets, dtype=np.intp)[:, None] + np.arange(8)).ravel()
        self._stamp_index = np.array(stamps, dtype=np.intp)[:, None] + np.arange(8)  # (n_stamps, 8)
        self.n_doubles, self.n_stamps = n_doubles, n_stamps

    def render(self, values: np.ndarray | Sequence[float], stamp: tuple[int, int] = (0, 0)) -> bytes:
        """The serialized message with `values` (``n_doubles`` of them, in slot order) and `stamp`
        (``(sec, nanosec)``) written in."""
        if self.n_doubles:
            values = np.ascontiguousarray(values, dtype="<f8")
            if values.size != self.n_doubles:
                raise ValueError(f"{self.message_type.__name__}: {self.n_doubles} values expected, got {values.size}")
            self._bytes[self._double_index] = values.reshape(-1).view(np.uint8)
        if self.n_stamps:
            self._bytes[self._stamp_index] = np.frombuffer(_STAMP.pack(*stamp), dtype=np.uint8)
        return self._bytes.tobytes()


def joint_state_template(names: Sequence[str]) -> WireTemplate:
    """``sensor_msgs/JointState`` of `names`; values: positions, then velocities, then efforts."""
    n = len(names)
    values = sentinel_doubles(3 * n).tolist()
    message = JointState(name=list(names), position=values[:n], velocity=values[n:2 * n], effort=values[2 * n:])
    message.header.stamp = _sentinel_time()
    return WireTemplate(message, 3 * n, 1)


def tf_template(frames: Sequence[tuple[str, str]]) -> WireTemplate:
    """``tf2_msgs/TFMessage`` of the transforms parent -> child in `frames`, one stamp for all;
    values: per transform translation x, y, z and rotation x, y, z, w."""
    values = sentinel_doubles(7 * len(frames)).reshape(-1, 7).tolist()
    transforms = []
    for (parent, child), (x, y, z, qx, qy, qz, qw) in zip(frames, values):
        transform = TransformStamped(child_frame_id=child)
        transform.header.frame_id, transform.header.stamp = parent, _sentinel_time()
        transform.transform.translation.x, transform.transform.translation.y, transform.transform.translation.z = x, y, z
        rotation = transform.transform.rotation
        rotation.x, rotation.y, rotation.z, rotation.w = qx, qy, qz, qw
        transforms.append(transform)
    return WireTemplate(TFMessage(transforms=transforms), 7 * len(frames), len(frames))


def clock_template() -> WireTemplate:
    """``rosgraph_msgs/Clock``: the stamp only."""
    return WireTemplate(Clock(clock=_sentinel_time()), 0, 1)


def odometry_template(frame: str, child: str) -> WireTemplate:
    """``nav_msgs/Odometry`` of `child` in `frame` (covariances zero); values: position x, y, z,
    orientation x, y, z, w, linear velocity x, y, z, angular velocity x, y, z."""
    v = sentinel_doubles(13).tolist()
    message = Odometry(child_frame_id=child)
    message.header.frame_id, message.header.stamp = frame, _sentinel_time()
    pose, twist = message.pose.pose, message.twist.twist
    pose.position.x, pose.position.y, pose.position.z = v[0:3]
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = v[3:7]
    twist.linear.x, twist.linear.y, twist.linear.z = v[7:10]
    twist.angular.x, twist.angular.y, twist.angular.z = v[10:13]
    return WireTemplate(message, 13, 1)
