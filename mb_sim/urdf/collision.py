"""Read the links' ``<collision>`` elements: the shapes contacts are made of.

Read only for a robot that has something to touch (a ``<ground>``): a robot simulated without
contact never opens its meshes.  Shapes: ``<sphere radius>``, ``<box size>``, ``<cylinder radius
length>``, ``<capsule radius length>`` (pybullet's, which URDF lacks) and ``<mesh filename
scale>`` (its hull's support points, :mod:`mb_sim.urdf.meshes`).  A size that is zero, negative or
not a number, a mesh that cannot be found or read or has no volume is a URDFError naming the link
and the element; a ``<collision>`` without a geometry is skipped and listed with the reason.
"""
from __future__ import annotations

import difflib
import xml.etree.ElementTree as ET
from typing import Iterable, NoReturn

import numpy as np

from mb_sim.urdf.description import COLLISION_SHAPES, CollisionDescription, GroundDescription, SkippedCollision
from mb_sim.urdf.contact_geometry import contact_features
from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.meshes import MeshError, hull_points, read_mesh_vertices, resolve_mesh, support_points
from mb_sim.urdf.numbers import read_numbers
from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = ["contact_effective_mass", "ground_excluded", "read_collisions"]

#: Sizes above this (m) are no robot's.
_MAX_SIZE = 1e4


def read_collisions(root: ET.Element, source: str, urdf_path: str | None, links: set[str],
                    excluded: dict[str, str] | None = None) -> tuple[list[CollisionDescription],
                                                                     list[SkippedCollision]]:
    """Every ``<collision>`` of the links in `links`, in document order, and those skipped; the
    shapes of a link in `excluded` are skipped unread, for the reason it maps to."""
    used, skipped = [], []
    excluded = excluded or {}
    for link in root.findall("link"):
        name = link.get("name", "")
        if name not in links:
            continue
        for index, element in enumerate(link.findall("collision")):
            if name in excluded:
                skipped.append(SkippedCollision(name, index, excluded[name]))
                continue
            shape = _collision(element, name, index, source, urdf_path)
            if isinstance(shape, SkippedCollision):
                skipped.append(shape)
            else:
                used.append(shape)
    return used, skipped


def ground_excluded(ground: GroundDescription | None, links: Iterable[str], paired: set[str],
                    source: str) -> dict[str, str]:
    """The links whose shapes contacts leave out, each with the reason: with ``<ground links>``,
    every link it does not list and no ``<contact_pair>`` names.  A listed link the robot does not
    have is a URDFError naming it (and the closest names)."""
    if ground is None or ground.links is None:
        return {}
    links = list(links)
    for name in ground.links:
        if name not in links:
            close = difflib.get_close_matches(name, links, n=3)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            raise URDFError(source, f"mb_sim ground '{ground.name}' links", f"no link named {name!r}{hint}")
    reason = f"not in the links of ground '{ground.name}' and in no contact_pair"
    return {name: reason for name in links if name not in ground.links and name not in paired}


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
    hull = None
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
        scale = _numbers(shape, "scale", 3, (1.0, 1.0, 1.0), source, where)
        if not np.all(scale != 0.0):  # a negative factor mirrors the mesh (Talos' right arm: "1 -1 1")
            raise URDFError(source, f"{where} scale=\"{shape.get('scale')}\"", "scale must be nonzero (a zero "
                                                                              "factor flattens the mesh)")
        size = tuple(scale)
        try:
            hull = hull_points(read_mesh_vertices(resolve_mesh(filename, urdf_path)), scale)
            points = support_points(None, scale, hull=hull)
        except MeshError as err:
            raise URDFError(source, f"{where} filename=\"{filename}\"", str(err)) from None
        if float(np.abs(points).max()) > _MAX_SIZE:
            raise URDFError(source, f"{where} filename=\"{filename}\"", f"the mesh reaches {np.abs(points).max():g} m "
                                                                      f"from its origin, above {_MAX_SIZE:g}: no robot's "
                                                                      "(wrong units or scale?)")
    return CollisionDescription(link, index, element.get("name") or "", kind, size, xyz, rpy_to_matrix(rpy),
                                filename, points, hull if kind == "mesh" else None)


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

    def fail(problem: str) -> NoReturn:
        raise URDFError(source, label, problem)

    values = read_numbers(raw, count, fail, _MAX_SIZE, commas=True)
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


def contact_effective_mass(shapes: list[CollisionDescription], links: dict, joints: list) -> float | None:
    """The smallest effective mass [kg] at a contact point of `shapes`: at a point r from its rigid
    body's centre of mass (links joined by fixed joints merged, the body free), a force along e
    accelerates the point as a mass ``1 / (1/m + (r x e) . I^-1 (r x e))`` would; the least over
    all e.  A flat foot touching at its toe and heel is far lighter there than its mass (G1's
    608 g ankle link: about 70 g), and contact damping and friction slopes act on that mass, so
    the default contact parameters are sized by it (:func:`mb_sim.model.contact.default_parameters`).
    None if no shape's body has mass."""
    poses, bodies = _body_poses(joints), _merged_bodies(links, joints)
    least = None
    for shape in shapes:
        body, R, p = _pose(shape.link, poses)
        if body not in bodies:
            continue
        mass, com, inverse = bodies[body]
        for feature in contact_features(shape):
            centre = p + R @ np.asarray(feature.centre, float)
            for offset in [np.zeros(3), *(s * feature.radius * e for e in np.eye(3) for s in (1.0, -1.0))]:
                r = centre + offset - com
                cross = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
                mobility = np.eye(3) / mass + cross.T @ inverse @ cross
                effective = 1.0 / float(np.linalg.eigvalsh(mobility)[-1])
                least = effective if least is None else min(least, effective)
    return least


def _merged_bodies(links: dict, joints: list) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
    """Per rigid body (keyed by its first link): mass, centre of mass and inverse inertia about it
    (body frame), its links' inertials merged; bodies without mass or rotational inertia left out."""
    poses = _body_poses(joints)
    parts: dict[str, list[tuple[float, np.ndarray, np.ndarray]]] = {}
    for name, link in links.items():
        if link.inertial is None or link.inertial.mass <= 0:
            continue
        body, R, p = _pose(name, poses)
        parts.setdefault(body, []).append((float(link.inertial.mass), p + R @ np.asarray(link.inertial.com, float),
                                           R @ np.asarray(link.inertial.inertia, float) @ R.T))
    bodies = {}
    for body, items in parts.items():
        mass = sum(m for m, _, _ in items)
        com = sum(m * c for m, c, _ in items) / mass
        inertia = sum(J + m * (np.dot(c - com, c - com) * np.eye(3) - np.outer(c - com, c - com)) for m, c, J in items)
        if np.linalg.eigvalsh(inertia)[0] > 0:
            bodies[body] = (mass, com, np.linalg.inv(inertia))
    return bodies


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


#: Shapes whose point features touch another link's shapes (a cylinder's rims do not), and the
#: shapes they touch (:mod:`mb_sim.model.body_contact`).
PAIR_FEATURE_SHAPES = ("sphere", "capsule", "box", "mesh")
PAIR_TARGET_SHAPES = ("sphere", "capsule")


def self_collision_pairs(spec, description, shapes: list[CollisionDescription]) -> tuple[
        list[tuple[str, str]], list[tuple[str, str, str]]]:
    """The link pairs ``<self_collision>`` makes (`spec`, a SelfCollisionDescription) for the robot
    `description` with contact shapes `shapes`, and the pairs skipped with the reason.

    A pair: two moving links with shapes, in `spec.links` (all when None), neither in one rigid
    body (links joined by fixed joints) nor joined by a joint or a loop joint (adjacent), not in
    `spec.exclude`, and with no ``<contact_pair>`` of its own.  A pair whose shapes cannot touch
    (no sphere or capsule on one side facing a point feature on the other) is skipped with the
    reason, as is a pair that has its own ``<contact_pair>``.  Unknown link names are a URDFError."""
    label = f"mb_sim self_collision '{spec.name}'"
    for name in [*(spec.links or ()), *(n for pair in spec.exclude for n in pair)]:
        if name not in description.links:
            role = "links" if spec.links and name in spec.links else "exclude"
            raise URDFError(description.source, label, f"{role}: link '{name}' does not exist")
    fixed = description.fixed_to_world()
    body = _rigid_bodies(description.joints)
    adjacent = {frozenset((body.get(j.parent, j.parent), body.get(j.child, j.child)))
                for j in [*description.joints, *description.extensions.loop_joints]}
    excluded = {frozenset(pair) for pair in spec.exclude}
    explicit = {frozenset((p.link1, p.link2)): p.name for p in description.extensions.contact_pairs}
    by_link: dict[str, list[str]] = {}
    for shape in shapes:
        if shape.link not in fixed and (spec.links is None or shape.link in spec.links):
            by_link.setdefault(shape.link, []).append(shape.shape)
    links = list(by_link)
    pairs, skipped = [], []
    for i, a in enumerate(links):
        for b in links[i + 1:]:
            key, bodies = frozenset((a, b)), frozenset((body.get(a, a), body.get(b, b)))
            if len(bodies) == 1 or bodies in adjacent or key in excluded:
                continue
            if key in explicit:
                skipped.append((a, b, f"has its own <contact_pair '{explicit[key]}'>"))
            elif not _can_touch(by_link[a], by_link[b]):
                skipped.append((a, b, f"shapes cannot touch: {_kinds(by_link[a])} against {_kinds(by_link[b])} "
                                      "(only spheres and capsules are touched, by points of any shape but a cylinder)"))
            else:
                pairs.append((a, b))
    return pairs, skipped


def _rigid_bodies(joints: list) -> dict[str, str]:
    """Per link joined to its parent by a fixed joint: the first link of its rigid body."""
    body: dict[str, str] = {}
    for joint in joints:  # parents before children
        if joint.type == "fixed":
            body[joint.child] = body.get(joint.parent, joint.parent)
    return body


def _can_touch(first: list[str], second: list[str]) -> bool:
    """Whether some point feature of one side's shapes touches a sphere or capsule of the other's."""
    def faces(own: list[str], other: list[str]) -> bool:
        return any(s in PAIR_TARGET_SHAPES for s in own) and any(s in PAIR_FEATURE_SHAPES for s in other)
    return faces(first, second) or faces(second, first)


def _kinds(shapes: list[str]) -> str:
    return "/".join(sorted(set(shapes)))
