"""Scenes: a robot and the objects around it (boxes, spheres, cylinders, a table, other URDFs).

A scene is one URDF: the robot's, with a ``world`` link at its root (a root link of another
name is fixed to it, or floats with `floating_base`), every object hanging from the world by a
``floating`` joint ``<object>_joint`` (``fixed`` for a static one: a table) at its pose, and a
``<contact_pair>`` between each object's links and every other object's and robot's link with a
collision shape (shapes of two round kinds touch in closed form, the others through coal:
:mod:`mb_sim.model.manifold`).  An object's links and joints keep their names behind its name
(``cup_body``); a built-in object is one link named as the object.  Relative and ``package://``
mesh paths become absolute, so the scene reads the same files.  Objects are described by
:class:`SceneObject`; bad values are refused in one line naming the object.
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from mb_sim.urdf.errors import URDFError

__all__ = ["SHAPES", "SceneObject", "compose_scene", "parse_object"]

#: Built-in object shapes and the sizes they take.
SHAPES = {"box": "size: x y z extents [m]", "sphere": "size: radius [m]",
          "cylinder": "size: radius length [m]", "capsule": "size: radius length [m]"}
_SIZES = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2}


@dataclass(frozen=True)
class SceneObject:
    """An object of a scene: a built-in `shape` of `size` and `mass` (uniform density), or the
    robot description `urdf` (a path or XML text), placed at `xyz` [m] and `rpy` [rad] in the
    world; `fixed` objects never move (a table); `friction` (None: the pair's default) applies to
    its contacts with everything else; `rgba` its colour in RViz; `touches` the robot's links it
    can touch (None: every one with a collision shape; fewer pairs derive and compile faster)."""

    name: str
    shape: str = "box"
    size: tuple[float, ...] = (0.1, 0.1, 0.1)
    mass: float = 1.0
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    urdf: str | None = None
    fixed: bool = False
    friction: float | None = None
    rgba: tuple[float, float, float, float] = (0.8, 0.5, 0.2, 1.0)
    touches: tuple[str, ...] | None = None

    def check(self) -> None:
        """URDFError naming the object where a value cannot be simulated."""
        where = f"object '{self.name}'"
        if not self.name or any(c.isspace() for c in self.name) or "/" in self.name:
            raise URDFError("scene", where, "a name must be non-empty, without spaces or '/'")
        numbers = [("xyz", self.xyz, 3), ("rpy", self.rpy, 3)]
        if self.urdf is None:
            if self.shape not in SHAPES:
                raise URDFError("scene", where, f"unknown shape {self.shape!r}; choose one of {', '.join(SHAPES)}")
            numbers.append(("size", self.size, _SIZES[self.shape]))
        for label, values, count in numbers:
            if len(values) != count or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                raise URDFError("scene", where, f"{label} must be {count} finite numbers, got {tuple(values)!r}")
        if self.urdf is None and not all(v > 0 for v in self.size):
            raise URDFError("scene", where, f"size must be positive, got {tuple(self.size)!r}")
        if self.urdf is None and not self.fixed and not (math.isfinite(self.mass) and self.mass > 0):
            raise URDFError("scene", where, f"mass must be a positive finite number, got {self.mass!r}")
        if self.friction is not None and not (math.isfinite(self.friction) and self.friction >= 0):
            raise URDFError("scene", where, f"friction must be a finite number >= 0, got {self.friction!r}")


#: The keys of an object's text form (:func:`parse_object`), the numbers each takes.
_KEYS = {"name": 0, "shape": 0, "size": -1, "mass": 1, "xyz": 3, "rpy": 3, "urdf": 0, "fixed": 0, "friction": 1,
         "rgba": 4, "touches": 0}


def parse_object(text: str) -> SceneObject:
    """A :class:`SceneObject` from its text form (the CLI's ``--object``, the node's ``objects``):
    white-space separated ``key=value`` pairs, numbers separated by commas, ``fixed`` alone or
    ``fixed=true``: ``name=cube shape=box size=0.1,0.1,0.1 mass=1 xyz=0.5,0,0.05 rpy=0,0,0.3``
    or ``name=cup urdf=/path/cup.urdf xyz=0.4,0,0.8``.  URDFError naming the text where a key is
    unknown, missing or not a number (values are read as numbers, never evaluated)."""
    where = f"object {text!r}"
    values: dict[str, object] = {}
    for item in text.split():
        key, _, value = item.partition("=")
        if key not in _KEYS:
            raise URDFError("scene", where, f"unknown key {key!r}; keys: {', '.join(_KEYS)}")
        if key in values:
            raise URDFError("scene", where, f"{key!r} is given twice")
        if key == "fixed":
            if value not in ("", "true", "false", "1", "0"):
                raise URDFError("scene", where, f"fixed takes true or false, got {value!r}")
            values[key] = value in ("", "true", "1")
        elif key == "touches":
            values[key] = tuple(name for name in value.split(",") if name)
        elif _KEYS[key] == 0:
            values[key] = value
        else:
            values[key] = _floats(value, _KEYS[key], key, where)
    if not values.get("name"):
        raise URDFError("scene", where, "needs name=...")
    for key in ("mass", "friction"):
        if key in values:
            values[key] = values[key][0]
    item = SceneObject(**values)
    item.check()
    return item


def _floats(value: str, count: int, key: str, where: str) -> tuple[float, ...]:
    try:
        numbers = tuple(float(v) for v in value.split(","))
    except ValueError:
        raise URDFError("scene", where, f"{key} must be numbers separated by commas, got {value!r}") from None
    if count > 0 and len(numbers) != count:
        raise URDFError("scene", where, f"{key} takes {count} number(s), got {len(numbers)}")
    return numbers


def compose_scene(robot: str | os.PathLike, objects: list[SceneObject], floating_base: bool = False) -> str:
    """The URDF text of `robot` (a path or XML text) with `objects` (see the module docstring)."""
    for item in objects:
        item.check()
    names = [item.name for item in objects]
    for name in names:
        if names.count(name) > 1:
            raise URDFError("scene", f"object '{name}'", "the name is taken by another object")
    root, base = _read(robot)
    links = {link.get("name") for link in root.findall("link")}
    children = {joint.find("child").get("link") for joint in root.findall("joint") if joint.find("child") is not None}
    roots = [name for name in links if name not in children]
    _absolute_meshes(root, base)
    if roots and roots[0] != "world":
        if "world" in links:
            raise URDFError("scene", "link 'world'", "the robot has a link named 'world' that is not its root")
        root.insert(0, ET.Element("link", name="world"))
        joint = ET.SubElement(root, "joint", name="root_joint" if floating_base else "world_joint",
                              type="floating" if floating_base else "fixed")
        ET.SubElement(joint, "parent", link="world")
        ET.SubElement(joint, "child", link=roots[0])
    robot_links = [link.get("name") for link in root.findall("link")
                   if link.find("collision") is not None and link.get("name") != "world"]
    extension = root.find("mb_sim")
    if extension is None:
        extension = ET.SubElement(root, "mb_sim")
    object_links: list[list[str]] = []
    taken = {link.get("name") for link in root.findall("link")} | {j.get("name") for j in root.findall("joint")}
    for item in objects:
        added = _add_object(root, item, taken)
        taken |= set(added)
        object_links.append([name for name in added if name in {link.get("name") for link in root.findall("link")}])
    _ground_links(extension, object_links, objects)
    for item in objects:
        unknown = [name for name in item.touches or () if name not in robot_links]
        if unknown:
            raise URDFError("scene", f"object '{item.name}'", f"touches '{unknown[0]}': not a link of the robot with a "
                            f"<collision> shape (those are: {', '.join(robot_links) or 'none'})")
    _pairs(root, extension, objects, object_links, robot_links)
    return ET.tostring(root, encoding="unicode")


def _read(robot: str | os.PathLike) -> tuple[ET.Element, Path | None]:
    """The robot's XML root and the directory its relative paths are relative to."""
    text, base = str(robot), None
    if isinstance(robot, os.PathLike) or not text.lstrip().startswith("<"):
        path = Path(robot)
        if not path.is_file():
            raise URDFError(str(path), "file", "not found")
        text, base = path.read_text(), path.resolve().parent
    try:
        return ET.fromstring(text), base
    except ET.ParseError as err:
        raise URDFError(str(robot) if base else "scene", "XML", f"does not parse: {err}") from None


def _absolute_meshes(root: ET.Element, base: Path | None) -> None:
    """Every relative or ``package://`` mesh path made absolute where the file is found."""
    from mb_sim.urdf.meshes import MeshError, resolve_mesh

    for mesh in root.iter("mesh"):
        filename = mesh.get("filename", "")
        if not filename or os.path.isabs(filename):
            continue
        try:
            mesh.set("filename", str(resolve_mesh(filename, str(base / "robot.urdf") if base else None)))
        except MeshError:
            continue  # the loader names it, with where it looked


def _add_object(root: ET.Element, item: SceneObject, taken: set[str]) -> list[str]:
    """Add `item`'s links and joints to `root`; returns their names."""
    if item.urdf is None:
        elements = [_builtin_link(item)]
        top = item.name
    else:
        elements, top = _object_urdf(item)
    names = [e.get("name") for e in elements]
    clash = [n for n in [*names, f"{item.name}_joint"] if n in taken]
    if clash:
        raise URDFError("scene", f"object '{item.name}'", f"'{clash[0]}' is already a link or joint of the scene")
    root.extend(elements)
    joint = ET.SubElement(root, "joint", name=f"{item.name}_joint", type="fixed" if item.fixed else "floating")
    ET.SubElement(joint, "origin", xyz=_text(item.xyz), rpy=_text(item.rpy))
    ET.SubElement(joint, "parent", link="world")
    ET.SubElement(joint, "child", link=top)
    return [*names, f"{item.name}_joint"]


def _builtin_link(item: SceneObject) -> ET.Element:
    """One link: the shape as collision and visual, its uniform-density inertia."""
    link = ET.Element("link", name=item.name)
    if not item.fixed:
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value=repr(float(item.mass)))
        ixx, iyy, izz = _inertia(item.shape, item.size, item.mass)
        ET.SubElement(inertial, "inertia", ixx=repr(ixx), iyy=repr(iyy), izz=repr(izz), ixy="0", ixz="0", iyz="0")
    for tag in ("visual", "collision"):
        element = ET.SubElement(link, tag)
        geometry = ET.SubElement(element, "geometry")
        ET.SubElement(geometry, item.shape, **_shape_attributes(item.shape, item.size))
        if tag == "visual":
            material = ET.SubElement(element, "material", name=f"{item.name}_colour")
            ET.SubElement(material, "color", rgba=_text(item.rgba))
    return link


def _shape_attributes(shape: str, size) -> dict[str, str]:
    if shape == "box":
        return {"size": _text(size)}
    if shape == "sphere":
        return {"radius": repr(float(size[0]))}
    return {"radius": repr(float(size[0])), "length": repr(float(size[1]))}


def _inertia(shape: str, size, mass: float) -> tuple[float, float, float]:
    """Principal moments [kg m^2] of a uniform solid (a capsule's as its cylinder's plus hemispheres' mass
    spread: the cylinder of the whole length, a fair bound)."""
    if shape == "box":
        x, y, z = size
        return mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12
    if shape == "sphere":
        moment = 0.4 * mass * size[0] ** 2
        return moment, moment, moment
    radius, length = size
    if shape == "capsule":
        length = length + 2 * radius
    side = mass * (3 * radius * radius + length * length) / 12
    return side, side, mass * radius * radius / 2


def _object_urdf(item: SceneObject) -> tuple[list[ET.Element], str]:
    """The links and joints of an object's URDF, renamed behind the object's name, and its root link."""
    try:
        root, base = _read(item.urdf)
    except URDFError as err:
        raise URDFError("scene", f"object '{item.name}'", f"its URDF: {err}") from None
    _absolute_meshes(root, base)
    links, joints = root.findall("link"), root.findall("joint")
    if not links:
        raise URDFError("scene", f"object '{item.name}'", "its URDF has no link")
    rename = {link.get("name"): f"{item.name}_{link.get('name')}" for link in links}
    children = set()
    for joint in joints:
        joint.set("name", f"{item.name}_{joint.get('name')}")
        for tag in ("parent", "child"):
            element = joint.find(tag)
            if element is None or element.get("link") not in rename:
                raise URDFError("scene", f"object '{item.name}'", f"joint '{joint.get('name')}' names no link of it")
            element.set("link", rename[element.get("link")])
        children.add(joint.find("child").get("link"))
    for link in links:
        link.set("name", rename[link.get("name")])
    roots = [link.get("name") for link in links if link.get("name") not in children]
    if len(roots) != 1:
        raise URDFError("scene", f"object '{item.name}'", f"its URDF has {len(roots)} root links; one is needed")
    return [*links, *joints], roots[0]


def _ground_links(extension: ET.Element, object_links: list[list[str]], objects: list[SceneObject]) -> None:
    """A ground restricted to some links (``<ground links>``) takes the moving objects' links too."""
    ground = extension.find("ground")
    if ground is not None and ground.get("links"):
        moving = [name for item, names in zip(objects, object_links) if not item.fixed for name in names]
        ground.set("links", " ".join([*ground.get("links").split(), *moving]))


def _pairs(root: ET.Element, extension: ET.Element, objects: list[SceneObject], object_links: list[list[str]],
           robot_links: list[str]) -> None:
    """A contact pair between each object link with shapes and every other object's and the robot's."""
    shaped = {link.get("name") for link in root.findall("link") if link.find("collision") is not None}
    for k, (item, names) in enumerate(zip(objects, object_links)):
        mine = [n for n in names if n in shaped]
        others = [(n, other) for j, (other, links) in enumerate(zip(objects, object_links)) if j > k
                  for n in links if n in shaped and not (item.fixed and other.fixed)]
        others += [(n, None) for n in robot_links if not item.fixed and (item.touches is None or n in item.touches)]
        for link in mine:
            for other, partner in others:
                pair = ET.SubElement(extension, "contact_pair", link1=link, link2=other)
                frictions = [f for f in (item.friction, partner.friction if partner else None) if f is not None]
                if frictions:
                    pair.set("friction", repr(min(frictions)))


def _text(values) -> str:
    return " ".join(repr(float(v)) for v in values)
