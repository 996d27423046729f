"""Whether publishers have subscribers, kept up to date by the middleware's *matched* events.

A topic nobody subscribes to is neither computed nor published, which is what lets a headless run
go fast; but ``Publisher.get_subscription_count`` costs microseconds per call, and a node asks it
of some twenty publishers per publish period (at 100 Hz and 80 times real time, 8,000 periods per
wall second).  A publisher made by :func:`counted_publisher` instead keeps its subscriber count
from the publisher-matched events (rclpy's ``PublisherEventCallbacks(matched=...)``), which the
executor delivers between the node's ticks (at most a tick, 20 ms of wall time, after the
middleware matched a subscriber): asking costs a dictionary look-up, and no message a subscriber
could receive is withheld while an answer is stale for long (a wall-time cache of the count
would skip, in a fast run, seconds of simulated time after a client subscribed and unpaused).
Publishers made otherwise, or where the middleware has no matched event, are asked each time.
"""
from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

__all__ = ["SubscriberGroup", "counted_publisher", "listened"]

#: Subscriber counts of the publishers made by counted_publisher (a one-item list each, which
#: the matched callback updates), forgotten with the publisher.
_COUNTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def counted_publisher(node, message_type, topic: str, qos) -> Any:
    """``node.create_publisher(message_type, topic, qos)`` whose subscriber count follows the
    matched events (see the module docstring); a plain publisher where the middleware has none."""
    from rclpy.event_handler import PublisherEventCallbacks, UnsupportedEventTypeError

    count = [0]

    def matched(info) -> None:
        count[0] = info.current_count

    try:
        publisher = node.create_publisher(message_type, topic, qos,
                                          event_callbacks=PublisherEventCallbacks(matched=matched))
    except UnsupportedEventTypeError:
        return node.create_publisher(message_type, topic, qos)
    _COUNTS[publisher] = count
    return publisher


def listened(publisher) -> bool:
    """Whether `publisher` (None: False) has a subscriber: from its matched events, else asked."""
    if publisher is None:
        return False
    count = _COUNTS.get(publisher)
    return count[0] > 0 if count is not None else publisher.get_subscription_count() > 0


class SubscriberGroup:
    """A fixed set of publishers of one kind (a robot's IMUs, its contact wrenches) asked together."""

    def __init__(self, publishers: Iterable) -> None:
        self._publishers = list(publishers)

    def flags(self) -> tuple[bool, ...]:
        """Per publisher (construction order): whether it has a subscriber."""
        return tuple(listened(p) for p in self._publishers)

    def any(self) -> bool:
        """Whether one of the publishers has a subscriber."""
        return any(listened(p) for p in self._publishers)
