"""Read the links' ``<collision>`` elements: the shapes contacts are made of.

Read only for a robot that has something to touch (a ``<ground>``): a robot simulated without
contact never opens its meshes.  Shapes: ``<sphere radius>``, ``<box size>``, ``<cylinder radius
length>``, ``<capsule radius length>`` (pybullet's, which URDF lacks) and ``<mesh filename
scale>`` (its hull's support points, :mod:`mb_sim.urdf.meshes`).  A size that is zero, negative or
not a number, a mesh that cannot be found or read or has no volume is a URDFError naming the link
and the element; a ``<collision>`` without a geometry is skipped and listed with the reason.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from mb_sim.urdf.description import COLLISION_SHAPES, CollisionDescription, SkippedCollision
from mb_sim.urdf.contact_geometry import contact_features
from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.meshes import MeshError, read_mesh_vertices, resolve_mesh, support_points
from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = ["read_collisions"]

#: Sizes above this (m) are no robot's.
_MAX_SIZE = 1e4


def read_collisions(root: ET.Element, source: str, urdf_path: str | None,
                    links: set[str]) -> tuple[list[CollisionDescription], list[SkippedCollision]]:
    """Every ``<collision>`` of the links in `links`, in document order, and those skipped."""
    used, skipped = [], []
    for link in root.findall("link"):
        name = link.get("name", "")
        if name not in links:
            continue
        for index, element in enumerate(link.findall("collision")):
            shape = _collision(element, name, index, source, urdf_path)
            if isinstance(shape, SkippedCollision):
                skipped.append(shape)
            else:
                used.append(shape)
    return used, skipped


def _collision(element: ET.Element, link: str, index: int, source: str,
               urdf_path: str | None) -> CollisionDescription | SkippedCollision:
    named = f" '{element.get('name')}'" if element.get("name") else ""
    label = f"link '{link}' <collision {index}{named}>"
    geometry = element.find("geometry")
    shapes = [child for child in (geometry if geometry is not None else []) if isinstance(child.tag, str)]
    if not shapes:
        return SkippedCollision(link, index, "no <geometry> shape")
    if len(shapes) > 1 or shapes[0].tag not in COLLISION_SHAPES:
        found = ", ".join(f"<{c.tag}>" for c in shapes)
        raise URDFError(source, label, f"<geometry> holds {found}; give one of "
                                       f"{', '.join(f'<{s}>' for s in COLLISION_SHAPES)}")
    shape = shapes[0]
    origin = element.find("origin")
    xyz = _numbers(origin, "xyz", 3, (0.0, 0.0, 0.0), source, f"{label} <origin>") if origin is not None else np.zeros(3)
    rpy = _numbers(origin, "rpy", 3, (0.0, 0.0, 0.0), source, f"{label} <origin>") if origin is not None else np.zeros(3)
    where = f"{label} <{shape.tag}>"
    kind = shape.tag
    filename, points = "", None
    if kind == "sphere":
        size = (_size(shape, "radius", source, where),)
    elif kind == "box":
        size = tuple(_numbers(shape, "size", 3, None, source, where, positive=True))
    elif kind in ("cylinder", "capsule"):
        size = (_size(shape, "radius", source, where), _size(shape, "length", source, where))
    else:
        filename = (shape.get("filename") or "").strip()
        if not filename:
            raise URDFError(source, where, "needs a 'filename' attribute")
        scale = _numbers(shape, "scale", 3, (1.0, 1.0, 1.0), source, where, positive=True)
        size = tuple(scale)
        try:
            points = support_points(read_mesh_vertices(resolve_mesh(filename, urdf_path)), scale)
        except MeshError as err:
            raise URDFError(source, f"{where} filename=\"{filename}\"", str(err)) from None
        if float(np.abs(points).max()) > _MAX_SIZE:
            raise URDFError(source, f"{where} filename=\"{filename}\"", f"the mesh reaches {np.abs(points).max():g} m "
                                                                      f"from its origin, above {_MAX_SIZE:g}: no robot's "
                                                                      "(wrong units or scale?)")
    return CollisionDescription(link, index, element.get("name") or "", kind, size, xyz, rpy_to_matrix(rpy),
                                filename, points)


def _size(element: ET.Element, attribute: str, source: str, where: str) -> float:
    return _numbers(element, attribute, 1, None, source, where, positive=True)[0]


def _numbers(element: ET.Element, attribute: str, count: int, default, source: str, where: str,
             positive: bool = False) -> np.ndarray:
    """`count` finite numbers from `attribute` (positive ones with `positive`), else URDFError."""
    raw = element.get(attribute)
    if raw is None:
        if default is None:
            raise URDFError(source, where, f"needs a '{attribute}' attribute")
        return np.array(default, dtype=float)
    label = f"{where} {attribute}=\"{raw}\""
    try:
        values = [float(v) for v in raw.replace(",", " ").split()]
    except ValueError:
        raise URDFError(source, label, "not a number") from None
    if len(values) != count:
        raise URDFError(source, label, f"expected {count} number(s), got {len(values)}")
    if not all(math.isfinite(v) for v in values):
        raise URDFError(source, label, "NaN or infinite value")
    if max(abs(v) for v in values) > _MAX_SIZE:
        raise URDFError(source, label, f"magnitude above {_MAX_SIZE:g}: no robot's")
    if positive and not all(v > 0.0 for v in values):
        raise URDFError(source, label, f"{attribute} must be positive (a collision shape with a zero or negative "
                                       "size touches nothing)")
    return np.array(values, dtype=float)


def enclosed_shapes(shapes: list[CollisionDescription], joints: list) -> dict[int, CollisionDescription]:
    """The shapes (by position in `shapes`) lying wholly inside another shape of the same rigid
    body (links joined by fixed joints): they can never touch anything first (a sensor's 1 mm
    placeholder box inside a trunk), so contacts leave them out.  Containers: spheres, boxes,
    capsules, cylinders; each shape's contact points (with their radii) must all be inside."""
    poses = _body_poses(joints)
    placed = [_in_body(shape, poses) for shape in shapes]
    enclosed: dict[int, CollisionDescription] = {}
    for i, (body, points) in enumerate(placed):
        for j, (other_body, _) in enumerate(placed):
            if i != j and body == other_body and j not in enclosed and _contains(shapes[j], poses, points):
                enclosed[i] = shapes[j]
                break
    return enclosed


def _body_poses(joints: list) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Per child of a fixed joint: its rigid body's first link and its pose there (R, p)."""
    poses: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    for joint in joints:  # parents before children
        if joint.type != "fixed":
            continue
        body, R, p = poses.get(joint.parent, (joint.parent, np.eye(3), np.zeros(3)))
        poses[joint.child] = (body, R @ rpy_to_matrix(joint.origin_rpy), p + R @ np.asarray(joint.origin_xyz, float))
    return poses


def _pose(link: str, poses: dict) -> tuple[str, np.ndarray, np.ndarray]:
    return poses.get(link, (link, np.eye(3), np.zeros(3)))


def _in_body(shape: CollisionDescription, poses: dict) -> tuple[str, list[tuple[np.ndarray, float]]]:
    """The shape's body and its contact points' spheres (centre in the body frame, radius)."""
    body, R, p = _pose(shape.link, poses)
    return body, [(p + R @ np.asarray(f.centre), f.radius) for f in contact_features(shape)]


def _contains(container: CollisionDescription, poses: dict, points: list[tuple[np.ndarray, float]]) -> bool:
    """Whether every sphere of `points` (body frame) lies inside `container`."""
    if container.shape == "mesh":
        return False
    _, R, p = _pose(container.link, poses)
    rotation = R @ np.asarray(container.rotation, float)
    centre = p + R @ np.asarray(container.xyz, float)
    size = container.size
    for point, radius in points:
        x = rotation.T @ (point - centre)
        if container.shape == "sphere":
            inside = np.linalg.norm(x) + radius <= size[0]
        elif container.shape == "box":
            inside = bool(np.all(np.abs(x) + radius <= np.asarray(size) / 2))
        elif container.shape == "capsule":
            axial = np.array([0.0, 0.0, np.clip(x[2], -size[1] / 2, size[1] / 2)])
            inside = np.linalg.norm(x - axial) + radius <= size[0]
        else:  # cylinder
            inside = np.hypot(x[0], x[1]) + radius <= size[0] and abs(x[2]) + radius <= size[1] / 2
        if not inside:
            return False
    return True
