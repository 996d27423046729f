"""The ``mb_sim`` node's command topics (``~/effort_commands``, ``~/joint_commands``,
``~/voltage_commands``, ``~/voltage_joint_commands``, ``~/joint_trajectory``, and
``~/apply_wrench/<link>`` for the links taking pushes): each message is
applied whole through the session or rejected with a throttled warning naming the topic and the
problem; applied ones are recorded, and in lockstep each advances one publish period."""
from __future__ import annotations

from collections.abc import Callable, Mapping

import rclpy.logging
from rclpy.serialization import serialize_message
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from mb_sim.ros.constraint_services import token_names
from mb_sim.session import Session
from mb_sim.session.command_router import COMMAND_TOPICS, WRENCH_COMMAND, command_type
from mb_sim.session.commands import CommandError

__all__ = ["CommandTopics", "WARNING_THROTTLE"]

#: Seconds between two warnings about the same bad input.
WARNING_THROTTLE = 2.0
#: The push topic of link token ``{}``, relative to the node.
PUSH_TOPIC = "~/apply_wrench/{}"
#: The message type of each command topic.
MESSAGE_TYPES = {"effort_commands": Float64MultiArray, "joint_commands": JointState,
                 "voltage_commands": Float64MultiArray, "voltage_joint_commands": JointState,
                 "joint_trajectory": JointTrajectory}


class CommandTopics:
    """Subscriptions to the command topics of `node`, applied to `session`; `applied` runs after
    each command taken (the node's lockstep advance)."""

    def __init__(self, node, session: Session, applied: Callable[[], None], world_frame: str = "world",
                 link_frames: Mapping[str, str] | None = None) -> None:
        self._node, self._session, self._applied = node, session, applied
        self._throttled: dict = {}  # (topic, kind of problem) -> logger
        self.subscriptions = {topic: node.create_subscription(
            MESSAGE_TYPES[topic], f"~/{topic}",
            lambda message, topic=topic: self.receive(topic, self.subscriptions[topic].topic_name,
                                                      COMMAND_TOPICS[topic], message), 10)
            for topic in COMMAND_TOPICS}
        self._push_topics(world_frame, link_frames or {})

    def _push_topics(self, world_frame: str, link_frames: Mapping[str, str]) -> None:
        """``~/apply_wrench/<link>`` per link taking pushes; a push's frame_id is the world frame
        (or empty) or the link's TF frame (`link_frames`)."""
        links = self._session.sim.wrench_links
        router = self._session.router
        router.wrench_frames.update({world_frame: "world", **{link_frames.get(link, link): link for link in links}})
        self.push_topics = token_names(links, PUSH_TOPIC, "links taking pushes", "topic")
        for link, topic in self.push_topics.items():
            kind = f"{WRENCH_COMMAND}{link}"
            self.subscriptions[kind] = self._node.create_subscription(
                WrenchStamped, topic, lambda message, kind=kind: self.receive(
                    kind, self.subscriptions[kind].topic_name, command_type(kind), message), 10)

    def topics(self) -> dict[str, str]:
        """Resolved topic name -> command topic, for a recording's settings."""
        return {sub.topic_name: topic for topic, sub in self.subscriptions.items()}

    def receive(self, kind: str, topic: str, type_name: str, message) -> None:
        """A command of `kind` (a command topic, or ros2_control's) on resolved `topic`: applied
        whole, or rejected with a warning; recorded; then ``applied``."""
        try:
            self._session.command(kind, message)
        except CommandError as err:
            self._reject(topic, err)
            return
        if self._session.recording is not None:
            self._session.write(topic, type_name, serialize_message(message))
        self._applied()

    def _reject(self, topic: str, error: CommandError) -> None:
        """A throttled warning per topic and kind of problem."""
        key = (topic, error.kind)
        if key not in self._throttled:
            self._throttled[key] = rclpy.logging.get_logger(self._node.get_logger().name)
        self._throttled[key].warning(f"{topic}: command rejected: {error}", throttle_duration_sec=WARNING_THROTTLE)
