"""The contact features of a collision shape: the point-like parts that touch (numbers only).

A sphere is one feature, a capsule its two end spheres, a box its 8 corners and a mesh its hull's
support points (spheres of radius 0), a cylinder the rims of its two ends (centre, axis, radius):
what :mod:`mb_sim.model.contact` writes the forces of, and what ``mb-sim info`` counts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mb_sim.urdf.description import CollisionDescription

__all__ = ["ContactFeature", "bounding_sphere", "contact_features"]


@dataclass(frozen=True)
class ContactFeature:
    """One point-like part of a shape, in its link's frame: a sphere (``axis`` None; radius 0 for a
    corner) or a cylinder end's rim (centre, unit axis, radius, and ``tread``: from the rim's
    centre to the cylinder's middle, where its friction acts while it rolls on its tread)."""

    name: str
    centre: tuple[float, float, float]
    radius: float
    axis: tuple[float, float, float] | None = None
    tread: tuple[float, float, float] | None = None


def contact_features(shape: CollisionDescription) -> list[ContactFeature]:
    """The features of one collision shape (link-frame numbers)."""
    R, o = np.asarray(shape.rotation, float), np.asarray(shape.xyz, float)
    base = f"{shape.link}/{shape.index}"

    def at(local, radius, name, axis=None):
        centre = tuple(float(v) for v in o + R @ np.asarray(local, float))
        if axis is None:
            return ContactFeature(f"{base}/{name}", centre, float(radius))
        return ContactFeature(f"{base}/{name}", centre, float(radius), tuple(float(v) for v in R @ np.asarray(axis)),
                              tuple(float(v) for v in R @ -np.asarray(local, float)))

    if shape.shape == "sphere":
        return [at((0, 0, 0), shape.size[0], "sphere")]
    if shape.shape == "capsule":
        r, half = shape.size[0], shape.size[1] / 2
        return [at((0, 0, -half), r, "end0"), at((0, 0, half), r, "end1")]
    if shape.shape == "cylinder":
        r, half = shape.size[0], shape.size[1] / 2
        return [at((0, 0, -half), r, "rim0", (0, 0, 1)), at((0, 0, half), r, "rim1", (0, 0, 1))]
    if shape.shape == "box":
        hx, hy, hz = (s / 2 for s in shape.size)
        corners = [(sx * hx, sy * hy, sz * hz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        return [at(c, 0.0, f"corner{i}") for i, c in enumerate(corners)]
    return [at(p, 0.0, f"point{i}") for i, p in enumerate(np.asarray(shape.points, float))]


def bounding_sphere(features: list[ContactFeature]) -> tuple[np.ndarray, float]:
    """A sphere (link frame) holding every feature of a shape: centre and radius."""
    centres = np.array([f.centre for f in features])
    centre = (centres.min(axis=0) + centres.max(axis=0)) / 2
    radius = max(float(np.linalg.norm(np.array(f.centre) - centre)) + f.radius for f in features)
    return centre, radius
