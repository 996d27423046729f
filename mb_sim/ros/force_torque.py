"""Force-torque sensors on ROS topics (robots with ``<mb_sim><force_torque>`` or Gazebo
``<sensor type="force_torque">``).

``~/force_torque/<name>`` (``geometry_msgs/WrenchStamped``), one per sensor, every publish period
while subscribed: the wrench through the sensor's joint (:mod:`mb_sim.sim.force_torque`: the
parent side's on the child side for measure_direction parent_to_child, its negative for
child_to_parent), torque about the joint origin, ``frame_id`` the child link's TF frame (``frame``
child; the joint origin is that frame's origin) or the parent link's (``frame`` parent: the
parent's axes, the torque still about the joint origin, as SDFormat defines it).
"""
from __future__ import annotations

from collections.abc import Mapping

from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped

from mb_sim.ros.constraint_services import token_names
from mb_sim.ros.subscribers import SubscriberGroup, counted_publisher

__all__ = ["FORCE_TORQUE_TOPIC", "ForceTorqueTopics", "wrench_message"]

#: The topic of force-torque sensor token ``{}``, relative to the node.
FORCE_TORQUE_TOPIC = "~/force_torque/{}"


def wrench_message(reading, frame: str, time: Time) -> WrenchStamped:
    """A geometry_msgs/WrenchStamped of `reading` (:class:`~mb_sim.sim.force_torque.Wrench`)."""
    message = WrenchStamped()
    message.header.frame_id, message.header.stamp = frame, time
    for target, values in ((message.wrench.force, reading.force), (message.wrench.torque, reading.torque)):
        target.x, target.y, target.z = (float(v) for v in values)
    return message


class ForceTorqueTopics:
    """The force-torque publishers of one node: `sensors` the robot's sensor descriptions,
    `joints` the robot's joints by name (for their links), `frames` the TF frame of each link."""

    def __init__(self, node, sensors: list, joints: Mapping, frames: Mapping[str, str]) -> None:
        self.topics = token_names([s.name for s in sensors], FORCE_TORQUE_TOPIC, "force-torque sensors", "topic")
        self.frames = {}
        for sensor in sensors:
            joint = joints[sensor.joint].joint_description
            self.frames[sensor.name] = frames[joint.child if sensor.frame == "child" else joint.parent]
        self._pubs = {name: counted_publisher(node, WrenchStamped, topic, 10) for name, topic in self.topics.items()}
        self._subscribers = SubscriberGroup(self._pubs.values())

    def listened(self) -> bool:
        """Whether anybody subscribes to a force-torque topic (matched events:
        :mod:`mb_sim.ros.subscribers`)."""
        return self._subscribers.any()

    def publish(self, readings: Mapping, time: Time) -> None:
        """Publish `readings` (:meth:`mb_sim.sim.Simulator.force_torques`)."""
        for name, pub in self._pubs.items():
            pub.publish(wrench_message(readings[name], self.frames[name], time))

    def description(self) -> str:
        """One log line: the topics."""
        return (f"force-torque sensors on {', '.join(self.topics.values())} (geometry_msgs/WrenchStamped, torque "
                "about the joint origin)")
