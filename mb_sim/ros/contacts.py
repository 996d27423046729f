"""Contacts on ROS topics (robots with ``<ground>`` or ``<contact_pair>`` only), without rclpy.

``~/contacts/<link>`` (``geometry_msgs/WrenchStamped``), one per link with contact features
(``<link>`` the link name as a ROS name token, see
:func:`~mb_sim.ros.constraint_services.name_token`): the total contact force on the link (ground
and contact pairs) and its torque about the link's origin, both in the link's axes (``frame_id``
= its TF frame), as RViz's Wrench display draws it; zero while the link does not touch.

``~/contact_markers`` (``visualization_msgs/MarkerArray``): a DELETEALL (namespace
``contacts``), then one ARROW per contact feature touching, in ``world_frame``, from
its contact point along the force on the link, ``|f| / scale`` metres long (:data:`FORCE_SCALE`
newtons per metre); its id is the feature's index in ``model.contact_names``.

The simulator reports contacts in world axes (:class:`~mb_sim.sim.outputs.SimulationOutputs`
``contacts`` and ``contact_wrenches``); this module only rotates and packs them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, WrenchStamped
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from mb_sim.ros.constraint_services import token_names
from mb_sim.ros.conversions import wrench_stamped
from mb_sim.ros.subscribers import SubscriberGroup, counted_publisher

__all__ = ["CONTACT_WRENCH_TOPIC", "CONTACT_MARKERS_TOPIC", "NAMESPACE", "FORCE_SCALE", "ContactTopics",
           "contact_markers", "contact_wrench_topics", "wrench_in_link_frame"]

#: The contact wrench topic of link token ``{}``, relative to the node.
CONTACT_WRENCH_TOPIC = "~/contacts/{}"
#: The contact arrows, relative to the node.
CONTACT_MARKERS_TOPIC = "~/contact_markers"
#: Namespace of the contact markers.
NAMESPACE = "contacts"
#: Newtons per metre of arrow.
FORCE_SCALE = 100.0
#: Arrow shaft and head diameters [m].
SHAFT_DIAMETER, HEAD_DIAMETER = 0.01, 0.02
#: RGBA of the arrows.
COLOR = (1.0, 0.5, 0.0, 1.0)


def contact_wrench_topics(links: Iterable[str]) -> dict[str, str]:
    """The wrench topic of each contact link, by link name; ValueError when two links map to one
    topic (names differing only in characters ROS does not allow)."""
    return token_names(links, CONTACT_WRENCH_TOPIC, "links", "contact topic")


def wrench_in_link_frame(force: np.ndarray, torque: np.ndarray, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A force and a torque about the link's origin, world axes -> the link's axes (`pose` its 4x4
    world pose): ``R^T f``, ``R^T tau`` (the point they refer to does not move)."""
    rotation = np.asarray(pose, dtype=float)[:3, :3]
    return rotation.T @ np.asarray(force, dtype=float), rotation.T @ np.asarray(torque, dtype=float)


def _point(values: np.ndarray) -> Point:
    x, y, z = (float(v) for v in values)
    return Point(x=x, y=y, z=z)


def contact_markers(contacts: Mapping, ids: Mapping[str, int], frame: str, time: Time,
                    scale: float = FORCE_SCALE) -> MarkerArray:
    """A DELETEALL (so arrows of contacts that ended vanish) and one ARROW per contact.

    `contacts` maps feature names to :class:`~mb_sim.sim.outputs.ContactState` (world axes, so
    `frame` is the world frame); `ids` maps feature names to marker ids; each arrow goes from the
    contact point to ``point + force / scale``.
    """
    if not scale > 0:
        raise ValueError(f"the contact force scale must be positive, got {scale}")
    clear = Marker(ns=NAMESPACE, action=Marker.DELETEALL)
    clear.header.frame_id, clear.header.stamp = frame, time
    markers = [clear]
    for name, contact in contacts.items():
        marker = Marker(ns=NAMESPACE, id=ids[name], type=Marker.ARROW, action=Marker.ADD)
        marker.header.frame_id, marker.header.stamp = frame, time
        marker.pose.orientation.w = 1.0
        marker.scale.x, marker.scale.y = SHAFT_DIAMETER, HEAD_DIAMETER
        r, g, b, a = COLOR
        marker.color = ColorRGBA(r=r, g=g, b=b, a=a)
        marker.points = [_point(contact.point), _point(contact.point + contact.force / scale)]
        markers.append(marker)
    return MarkerArray(markers=markers)


class ContactTopics:
    """The contact publishers of one node: a WrenchStamped per contact link and the markers.

    `links` are the contact links (``SimulationOutputs.contact_wrenches`` keys), `frames` their TF
    frame ids, `contact_names` the features (``model.contact_names``, marker ids by index).
    Subscriber counts follow the middleware's matched events (:mod:`mb_sim.ros.subscribers`).
    """

    def __init__(self, node, links: Iterable[str], frames: Mapping[str, str], world_frame: str,
                 contact_names: list[str], scale: float = FORCE_SCALE) -> None:
        self.topics = contact_wrench_topics(links)
        self.frames = {link: frames[link] for link in self.topics}
        self.world_frame, self.scale = world_frame, scale
        self.ids = {name: index for index, name in enumerate(contact_names)}
        self._wrench_pubs = {link: counted_publisher(node, WrenchStamped, topic, 10)
                             for link, topic in self.topics.items()}
        self._markers_pub = counted_publisher(node, MarkerArray, CONTACT_MARKERS_TOPIC, 10)
        self._subscribers = SubscriberGroup([*self._wrench_pubs.values(), self._markers_pub])

    def listened(self) -> bool:
        """Whether anybody subscribes to one of the topics (as last asked: see the class)."""
        return self._subscribers.any()

    def publish(self, out, time: Time) -> None:
        """The wrenches and markers of `out` (:class:`~mb_sim.sim.outputs.SimulationOutputs`),
        stamped `time`; topics nobody subscribes to are skipped."""
        *wrenches_listened, markers_listened = self._subscribers.flags()
        for (link, publisher), listened in zip(self._wrench_pubs.items(), wrenches_listened):
            if listened:
                wrench = out.contact_wrenches[link]
                force, torque = wrench_in_link_frame(wrench.force, wrench.torque, out.link_poses[link])
                publisher.publish(wrench_stamped(self.frames[link], force, torque, time))
        if markers_listened:
            self._markers_pub.publish(contact_markers(out.contacts, self.ids, self.world_frame, time, self.scale))

    def description(self) -> str:
        """One log line naming the topics."""
        links = ", ".join(f"{link} on {topic}" for link, topic in self.topics.items())
        return (f"ground contacts: wrenches (geometry_msgs/WrenchStamped in the link's frame, about its origin) of "
                f"[{links}]; arrows on {CONTACT_MARKERS_TOPIC} (visualization_msgs/MarkerArray, frame "
                f"{self.world_frame}, {self.scale:g} N per metre)")

