"""Spring-damper markers for RViz (``~/springs``, ``visualization_msgs/MarkerArray``), without rclpy.

Each spring-damper is one ``LINE_STRIP`` marker from its marker 0 to its marker 1 (world
positions, so the marker's frame is the node's ``world_frame``), in namespace ``springs`` with id
= the spring's index in ``Robot.spring_dampers`` order, :data:`LINE_WIDTH` wide.  Its colour shows
the scalar force f (tension positive): grey at f = 0, blending linearly to red in tension and
to blue in compression, fully red or blue from ``|f| >= scale`` on (the node's
``spring_force_scale`` parameter), opaque.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

__all__ = ["NAMESPACE", "LINE_WIDTH", "NEUTRAL", "TENSION", "COMPRESSION", "spring_color", "spring_markers"]

#: Namespace of the spring markers.
NAMESPACE = "springs"
#: Line width of a spring marker [m].
LINE_WIDTH = 0.02
#: RGB at zero force, at full tension and at full compression.
NEUTRAL = (0.6, 0.6, 0.6)
TENSION = (1.0, 0.0, 0.0)
COMPRESSION = (0.0, 0.0, 1.0)


def spring_color(force: float, scale: float) -> tuple[float, float, float, float]:
    """RGBA of a spring carrying `force` [N] (tension positive): NEUTRAL blended towards TENSION or
    COMPRESSION by ``min(|force| / scale, 1)``; NaN shows as NEUTRAL."""
    if not scale > 0:
        raise ValueError(f"the force scale must be positive, got {scale}")
    if math.isnan(force):
        return (*NEUTRAL, 1.0)
    weight = min(abs(force) / scale, 1.0)
    target = TENSION if force > 0 else COMPRESSION
    return (*((1.0 - weight) * n + weight * t for n, t in zip(NEUTRAL, target)), 1.0)


def spring_markers(springs: Mapping, frame: str, time: Time, scale: float) -> MarkerArray:
    """A ``visualization_msgs/MarkerArray`` with one LINE_STRIP per spring-damper.

    `springs` maps names to :class:`~mb_sim.sim.outputs.SpringState` (``SimulationOutputs.springs``,
    whose markers are world positions, so `frame` is the world frame); ids follow its order.
    """
    markers = []
    for index, state in enumerate(springs.values()):
        marker = Marker(ns=NAMESPACE, id=index, type=Marker.LINE_STRIP, action=Marker.ADD)
        marker.header.frame_id, marker.header.stamp = frame, time
        marker.pose.orientation.w = 1.0
        marker.scale.x = LINE_WIDTH
        r, g, b, a = spring_color(state.force, scale)
        marker.color = ColorRGBA(r=r, g=g, b=b, a=a)
        marker.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in state.markers]
        markers.append(marker)
    return MarkerArray(markers=markers)
