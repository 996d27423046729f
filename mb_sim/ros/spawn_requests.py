"""What a simulation_interfaces ``SpawnEntity`` request asks for, as a scene object
(:class:`~mb_sim.urdf.scene.SceneObject`), or the Result that refuses it, one line naming the field.

A request gives the object by ``uri`` (a URDF file: a path, ``file://`` or ``package://``) or by
``resource_string``: URDF text, or mb_sim's object text form without name and pose
(``shape=box size=0.05,0.05,0.05 mass=0.2 friction=0.8``, see :func:`~mb_sim.urdf.scene.parse_object`).
The name comes from ``name`` (else the URDF's ``<robot name>``; ``allow_renaming`` makes a taken or
missing one unique), the pose from ``initial_pose`` in the world frame.  A URDF whose root link has
no mass is a static object, fixed where it is put (pybullet's convention: its plane and tray).  Objects have no ROS
interfaces of their own, so ``entity_namespace`` is accepted and has nothing to apply to.
"""
from __future__ import annotations

import math
from dataclasses import replace
import xml.etree.ElementTree as ET
from pathlib import Path

from simulation_interfaces.msg import Result
from simulation_interfaces.srv import SpawnEntity
from transforms3d.euler import quat2euler

from mb_sim.sim.state import STATE_MAGNITUDE
from mb_sim.urdf import URDFError
from mb_sim.urdf.meshes import MeshError, resolve_mesh
from mb_sim.urdf.scene import SceneObject, parse_object

__all__ = ["SPAWN_FORMATS", "SpawnRefused", "spawn_object"]

#: What GetSimulatorFeatures lists in ``spawn_formats``.
SPAWN_FORMATS = ["urdf", "mb_sim_object"]
#: Keys of the object text form a request gives in its own fields.
_REQUEST_KEYS = ("name", "xyz", "rpy")
R = SpawnEntity.Response


class SpawnRefused(Exception):
    """A request that cannot be spawned: the Result code and its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    def result(self) -> Result:
        return Result(result=self.code, error_message=str(self))


def spawn_object(request, world_frame: str, taken: set[str]) -> SceneObject:
    """The object `request` (a SpawnEntity service request, or one of SpawnEntities') asks for,
    named uniquely against `taken` (names of entities, links and joints in the scene), or
    :class:`SpawnRefused`."""
    xyz, rpy = _pose(request.initial_pose, world_frame)
    urdf, root, text = _resource(request)
    name = _name(request, root, taken)
    try:
        if urdf is not None:
            item = SceneObject(name, urdf=urdf, xyz=xyz, rpy=rpy, fixed=_massless_root(root))
        else:
            item = parse_object(f"name={name} {text}")
            item = replace(item, xyz=xyz, rpy=rpy)
        item.check()
    except URDFError as err:
        raise SpawnRefused(R.RESOURCE_PARSE_ERROR, f"{err.element}: {err.problem}") from None
    return item


def _pose(pose, world_frame: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(xyz, rpy) of ``initial_pose`` in the world frame; INVALID_POSE where it is not one."""
    frame = pose.header.frame_id
    if frame not in ("", world_frame):
        raise SpawnRefused(R.INVALID_POSE, f"initial_pose frame_id {frame!r}: poses are given in the world frame "
                                           f"({world_frame!r} or empty)")
    p, o = pose.pose.position, pose.pose.orientation
    xyz, quaternion = (p.x, p.y, p.z), (o.w, o.x, o.y, o.z)
    if not all(math.isfinite(v) for v in (*xyz, *quaternion)):
        raise SpawnRefused(R.INVALID_POSE, "initial_pose must be finite numbers")
    if any(abs(v) > STATE_MAGNITUDE for v in xyz):
        raise SpawnRefused(R.INVALID_POSE, f"initial_pose position {xyz} is beyond {STATE_MAGNITUDE:g} m")
    norm = math.sqrt(sum(v * v for v in quaternion))
    if abs(norm - 1.0) > 1e-3:
        raise SpawnRefused(R.INVALID_POSE, f"initial_pose orientation is not a unit quaternion (norm {norm:.6g})")
    roll, pitch, yaw = quat2euler([v / norm for v in quaternion], "sxyz")  # URDF's rpy: fixed axes x, y, z
    return tuple(map(float, xyz)), (float(roll), float(pitch), float(yaw))


def _resource(request) -> tuple[str | None, ET.Element | None, str]:
    """(URDF path or text, its parsed root; or None, None and the object text form) the request
    gives (a SpawnEntity service request has the uri and resource string, a SpawnEntities one its
    entity_resource)."""
    resource = getattr(request, "entity_resource", request)
    if resource.uri:
        return _file(resource.uri)
    text = resource.resource_string.strip()
    if not text:
        raise SpawnRefused(R.NO_RESOURCE, "uri and resource_string are both empty")
    if text.startswith("<"):
        return text, _parsed_urdf(text, "resource_string"), ""
    given = [key for key in _REQUEST_KEYS if any(item.partition("=")[0] == key for item in text.split())]
    if given:
        raise SpawnRefused(R.RESOURCE_PARSE_ERROR, f"resource_string: {given[0]}= is not taken there; the name goes "
                                                   "in the request's name, the pose in initial_pose")
    return None, None, text


def _file(uri: str) -> tuple[str, ET.Element, str]:
    """The URDF file `uri` names (a path, file:// or package://), parsed and checked to be URDF."""
    try:
        path = resolve_mesh(uri, None) if uri.startswith("package://") else Path(uri.removeprefix("file://"))
    except MeshError as err:
        raise SpawnRefused(Result.RESULT_NOT_FOUND, f"uri {uri!r}: {err}") from None
    if not path.is_file():
        raise SpawnRefused(Result.RESULT_NOT_FOUND, f"uri {uri!r}: no such file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise SpawnRefused(R.RESOURCE_PARSE_ERROR, f"uri {uri!r}: cannot be read: {err}") from None
    return str(path), _parsed_urdf(text, f"uri {uri!r}"), ""


def _parsed_urdf(text: str, where: str) -> ET.Element:
    """The root of `text`: RESOURCE_PARSE_ERROR unless it is XML, UNSUPPORTED_FORMAT unless the
    root is <robot>."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise SpawnRefused(R.RESOURCE_PARSE_ERROR, f"{where}: does not parse: {err}") from None
    if root.tag != "robot":
        raise SpawnRefused(R.UNSUPPORTED_FORMAT, f"{where}: a <{root.tag}> document; mb_sim spawns URDF (<robot>) "
                                                 "or its object text form (spawn_formats)")
    return root


def _name(request, root: ET.Element | None, taken: set[str]) -> str:
    """The entity's name: given, else the URDF's robot name; unique or renamed (allow_renaming)."""
    name = request.name or (root.get("name", "") if root is not None else "")
    if name and (any(c.isspace() for c in name) or "/" in name):
        raise SpawnRefused(R.NAME_INVALID, f"name {name!r}: names have no spaces or '/'")
    if name and name not in taken:
        return name
    if not request.allow_renaming:
        if not name:
            raise SpawnRefused(R.NAME_INVALID, "no name given (and the resource names none); give one or set "
                                               "allow_renaming")
        raise SpawnRefused(R.NAME_NOT_UNIQUE, f"name {name!r} is taken by an entity, link or joint of the scene")
    stem = name or "object"
    return next(f"{stem}_{k}" for k in range(1, len(taken) + 2) if f"{stem}_{k}" not in taken)


def _massless_root(root: ET.Element) -> bool:
    """Whether the URDF's root link has no mass: a static object (pybullet's convention for a base
    of mass 0, which its plane, tray and scene files use; a free body without mass could not move)."""
    children = {joint.find("child").get("link") for joint in root.findall("joint") if joint.find("child") is not None}
    roots = [link for link in root.findall("link") if link.get("name") not in children]
    if len(roots) != 1:
        return False  # (the scene names the problem)
    mass = roots[0].find("inertial/mass")
    try:
        return mass is None or not float(mass.get("value", "0")) > 0
    except ValueError:
        return False  # (the loader names it)
