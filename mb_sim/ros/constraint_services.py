"""Names of the per-constraint services (``~/constraints/<token>/enable``) and topics
(``~/constraints/<token>/wrench``), without rclpy.

A constraint is named after the URDF element that made it (a mimic joint, a loop-closure joint),
and URDF names may hold characters a ROS name may not: each character outside ``[A-Za-z0-9_]``
becomes ``_``, and a token that would start with a digit gets a leading ``_``.
"""
from __future__ import annotations

import re

__all__ = ["CONSTRAINT_SERVICE", "CONSTRAINT_WRENCH_TOPIC", "constraint_service_names", "constraint_wrench_topics",
           "name_token"]

#: The service of constraint token ``{}``, relative to the node (``~``).
CONSTRAINT_SERVICE = "~/constraints/{}/enable"
#: The reaction wrench topic of (loop-joint) constraint token ``{}``, relative to the node.
CONSTRAINT_WRENCH_TOPIC = "~/constraints/{}/wrench"


def name_token(name: str) -> str:
    """`name` as one valid ROS name token."""
    token = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return f"_{token}" if token[0].isdigit() else token


def constraint_service_names(constraints: list[str]) -> dict[str, str]:
    """The SetBool service name of each constraint, by constraint name.

    Raises ValueError when two constraints map to the same service (names differing only in
    characters ROS does not allow).
    """
    return token_names(constraints, CONSTRAINT_SERVICE, "constraints", "service")


def token_names(names, pattern: str, kind: str, what: str) -> dict[str, str]:
    """``pattern.format(name_token(name))`` for each of `names` (the ROS name of a topic or service
    per constraint, link, IMU...), by name; ValueError naming both when two map to one (names
    differing only in characters ROS does not allow)."""
    found: dict[str, str] = {}
    for name in names:
        ros_name = pattern.format(name_token(name))
        clash = next((other for other, taken in found.items() if taken == ros_name), None)
        if clash is not None:
            raise ValueError(f"{kind} {clash!r} and {name!r} would share the {what} {ros_name}; "
                             "rename one of them in the URDF")
        found[name] = ros_name
    return found


def constraint_wrench_topics(constraints: list[str]) -> dict[str, str]:
    """The wrench topic of each constraint, by constraint name (the same token as its service;
    :func:`constraint_service_names` of all constraints has ruled out clashes)."""
    return {name: CONSTRAINT_WRENCH_TOPIC.format(name_token(name)) for name in constraints}
