"""Read the ``<mb_sim>`` extension element: what URDF cannot say (loops, springs, gravity).

Every child element and attribute is checked here, with the element named in the error
(``mb_sim spring_damper 'shock' <marker xyz="0 nan 0">: NaN or infinite value``); references to
links and joints are checked with the rest of the robot in :mod:`mb_sim.urdf.validation`.
Unknown elements and attributes are errors, not warnings: a misspelt ``stifness`` would otherwise
be silently zero.  Text is only ever converted with ``float()``, never evaluated.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import NoReturn

import numpy as np

from mb_sim.urdf.description import (
    LOOP_JOINT_TYPES, ContactPairDescription, CoordinateConstraintDescription, DCMotorDescription, Extensions, ForceTorqueDescription, GroundDescription, IMUDescription,
    JointSpringDescription,
    LinkContactDescription, LoopJointDescription, Marker, RollingWheelDescription, SelfCollisionDescription, SpringDamperDescription,
)
from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.numbers import read_numbers

__all__ = ["EXTENSION_TAG", "read_extensions", "read_gazebo_force_torques", "read_gazebo_imus"]

#: The top-level element mb_sim's extensions live in (as Gazebo's live in <gazebo>).
EXTENSION_TAG = "mb_sim"
#: Names of force laws and elements: identifiers, so they can name symbols and ROS topics.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-.]*$")
_TRUE, _FALSE = ("true", "1"), ("false", "0")
#: The largest magnitude of a number, by attribute: beyond it the number is no robot's (and
#: products of such numbers overflow).  Positions, lengths, angles and gravity 1e4 (m, rad,
#: m/s^2), ratios 1e6, anything else (stiffness, resistance, voltage...) 1e12.
_MAGNITUDE_BOUNDS = {"xyz": 1e4, "rpy": 1e4, "reference_length": 1e4, "radius": 1e4, "offset": 1e4,
                     "reference": 1e4, "ratio": 1e6, "gear_ratio": 1e6,
                     "height": 1e4, "friction": 1e3, "exponent": 10.0}
_ANY_MAGNITUDE = 1e12


class _Element:
    """One extension element with its label for messages, handing out checked attributes."""

    def __init__(self, element: ET.Element, source: str, allowed: tuple[str, ...]) -> None:
        self.element, self.source = element, source
        name = element.get("name")
        self.label = EXTENSION_TAG if element.tag == EXTENSION_TAG else (
            f"{EXTENSION_TAG} {element.tag}" + (f" '{name}'" if name else ""))
        unknown = sorted(set(element.attrib) - set(allowed))
        if unknown:
            self.fail(f"unknown attribute(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")

    def fail(self, problem: str, where: str = "") -> None:
        raise URDFError(self.source, f"{self.label}{where}", problem)

    def text(self, attribute: str, default: str | None = None) -> str:
        """A required (if no `default`) non-empty attribute."""
        value = self.element.get(attribute, default)
        if value is None or not value.strip():
            self.fail(f"needs a '{attribute}' attribute")
        return value.strip()

    def name(self, attribute: str = "name", default: str | None = None) -> str:
        value = self.text(attribute, default)
        if not _NAME.match(value):
            self.fail(f"{attribute} {value!r} must start with a letter or '_' and hold only letters, digits, "
                      "'_', '-' and '.'")
        return value

    def number(self, attribute: str, default: float | None = None, minimum: float | None = None,
               positive: bool = False, nonzero: bool = False) -> float:
        raw = self.element.get(attribute)
        if raw is None:
            if default is None:
                self.fail(f"needs a '{attribute}' attribute")
            return default
        value = _numbers(raw, 1, lambda p: self.fail(p, f" <{self.element.tag} {attribute}=\"{raw}\">"),
                         _MAGNITUDE_BOUNDS.get(attribute, _ANY_MAGNITUDE))[0]
        if minimum is not None and value < minimum:
            self.fail(f"{attribute} must not be below {minimum:g}, got {value:g}")
        if positive and not value > 0:
            self.fail(f"{attribute} must be positive, got {value:g}")
        if nonzero and value == 0:
            self.fail(f"{attribute} must not be zero")
        return value

    def flag(self, attribute: str, default: bool) -> bool:
        raw = self.element.get(attribute)
        if raw is None:
            return default
        if raw.strip().lower() not in _TRUE + _FALSE:
            self.fail(f"{attribute} must be true or false, got {raw!r}")
        return raw.strip().lower() in _TRUE

    def children(self, allowed: tuple[str, ...]) -> dict[str, list[ET.Element]]:
        """Child elements by tag; unknown tags are errors."""
        found: dict[str, list[ET.Element]] = {tag: [] for tag in allowed}
        for child in self.element:
            if not isinstance(child.tag, str):
                continue  # comments
            if child.tag not in found:
                self.fail(f"unknown element <{child.tag}> (allowed: {', '.join(f'<{t}>' for t in allowed) or 'none'})")
            found[child.tag].append(child)
        return found

    def vector(self, child: ET.Element, attribute: str, default: tuple[float, float, float]) -> np.ndarray:
        """A 3-vector attribute of a child element (``<origin xyz>``, ``<axis xyz>``...)."""
        unknown = sorted(set(child.attrib) - _CHILD_ATTRIBUTES[child.tag])
        if unknown:
            self.fail(f"unknown attribute(s) {', '.join(unknown)}", f" <{child.tag}>")
        raw = child.get(attribute)
        if raw is None:
            return np.array(default, dtype=float)
        where = f" <{child.tag} {attribute}=\"{raw}\">"
        bound = _MAGNITUDE_BOUNDS["ratio" if child.tag == "axis" else attribute]  # an axis: a direction
        return np.array(_numbers(raw, 3, lambda p: self.fail(p, where), bound))


_CHILD_ATTRIBUTES = {"origin": {"xyz", "rpy"}, "child_origin": {"xyz", "rpy"}, "axis": {"xyz"},
                     "marker": {"link", "xyz"}}


def _numbers(raw: str, count: int, fail: Callable[[str], NoReturn], bound: float = _ANY_MAGNITUDE) -> list[float]:
    """`count` finite numbers of magnitude at most `bound` read from `raw`, else `fail`."""
    return read_numbers(raw, count, fail, bound)


def _single(element: _Element, found: dict[str, list[ET.Element]], tag: str) -> ET.Element | None:
    if len(found[tag]) > 1:
        element.fail(f"has {len(found[tag])} <{tag}> elements; give one")
    return found[tag][0] if found[tag] else None


def _pose(element: _Element, child: ET.Element | None) -> tuple[np.ndarray, np.ndarray]:
    if child is None:
        return np.zeros(3), np.zeros(3)
    return element.vector(child, "xyz", (0, 0, 0)), element.vector(child, "rpy", (0, 0, 0))


def _loop_joint(raw: ET.Element, source: str) -> LoopJointDescription:
    e = _Element(raw, source, ("name", "type", "parent", "child"))
    name, kind = e.name(), e.text("type")
    if kind not in LOOP_JOINT_TYPES:
        e.fail(f"unsupported loop joint type '{kind}' (supported: {', '.join(LOOP_JOINT_TYPES)})")
    parent, child = e.text("parent"), e.text("child")
    if parent == child:
        e.fail(f"closes a loop between link '{parent}' and itself")
    found = e.children(("origin", "child_origin", "axis"))
    origin_xyz, origin_rpy = _pose(e, _single(e, found, "origin"))
    child_xyz, child_rpy = _pose(e, _single(e, found, "child_origin"))
    axis_element = _single(e, found, "axis")
    axis = e.vector(axis_element, "xyz", (1, 0, 0)) if axis_element is not None else np.array([1.0, 0, 0])
    norm = float(np.linalg.norm(axis))
    if kind in ("revolute", "continuous", "prismatic", "universal") and norm < 1e-12:
        e.fail("axis is zero", " <axis>")
    return LoopJointDescription(name, kind, parent, child, origin_xyz, origin_rpy, child_xyz, child_rpy,
                                axis / norm if norm >= 1e-12 else axis)


def _coordinate_constraint(raw: ET.Element, source: str) -> CoordinateConstraintDescription:
    e = _Element(raw, source, ("name", "joint", "reference", "ratio", "offset"))
    e.children(())
    joint, reference = e.text("joint"), e.text("reference")
    if joint == reference:
        e.fail(f"ties joint '{joint}' to itself")
    return CoordinateConstraintDescription(e.name(), joint, reference, e.number("ratio", 1.0), e.number("offset", 0.0))


def _spring_damper(raw: ET.Element, source: str) -> SpringDamperDescription:
    e = _Element(raw, source, ("name", "stiffness", "damping", "reference_length", "force", "velocity_offset",
                               "active", "law"))
    name = e.name()
    markers = []
    for marker in e.children(("marker",))["marker"]:
        link = marker.get("link")
        if not link or not link.strip():
            e.fail("needs a 'link' attribute", " <marker>")
        markers.append(Marker(link.strip(), e.vector(marker, "xyz", (0, 0, 0))))
    if len(markers) != 2:
        e.fail(f"needs exactly two <marker link=... xyz=...> elements, has {len(markers)}")
    if markers[0].link == markers[1].link:
        e.fail(f"both markers are on link '{markers[0].link}': the spring's length could never change")
    law = e.name("law") if raw.get("law") is not None else None
    return SpringDamperDescription(
        name, (markers[0], markers[1]), stiffness=e.number("stiffness", 0.0, minimum=0.0),
        damping=e.number("damping", 0.0, minimum=0.0),
        reference_length=e.number("reference_length", 0.0, minimum=0.0), force=e.number("force", 0.0),
        velocity_offset=e.number("velocity_offset", 0.0), active=e.flag("active", True), law=law)


def _joint_spring(raw: ET.Element, source: str) -> JointSpringDescription:
    e = _Element(raw, source, ("name", "joint", "stiffness", "reference", "damping"))
    e.children(())
    joint = e.text("joint")
    name = e.name("name", f"{joint}_spring")
    return JointSpringDescription(name, joint, stiffness=e.number("stiffness", 0.0, minimum=0.0),
                                  reference=e.number("reference", 0.0), damping=e.number("damping", 0.0, minimum=0.0))


def _dc_motor(raw: ET.Element, source: str) -> DCMotorDescription:
    e = _Element(raw, source, ("name", "joint", "torque_constant", "resistance", "inductance", "gear_ratio",
                               "rotor_inertia", "viscous_friction", "voltage_limit"))
    e.children(())
    return DCMotorDescription(
        e.name(), e.text("joint"), torque_constant=e.number("torque_constant", positive=True),
        resistance=e.number("resistance", positive=True), inductance=e.number("inductance", 0.0, minimum=0.0),
        gear_ratio=e.number("gear_ratio", 1.0, nonzero=True), rotor_inertia=e.number("rotor_inertia", 0.0, minimum=0.0),
        viscous_friction=e.number("viscous_friction", 0.0, minimum=0.0),
        voltage_limit=e.number("voltage_limit", float("inf"), positive=True))


def _external_wrench(raw: ET.Element, source: str) -> str:
    """``<external_wrench link="..."/>``: the link takes a wrench as inputs (mb_sim.model.wrench)."""
    return _Element(raw, source, ("link",)).text("link")


def _rolling_wheel(raw: ET.Element, source: str) -> RollingWheelDescription:
    e = _Element(raw, source, ("name", "link", "radius"))
    found = e.children(("axis",))
    axis_element = _single(e, found, "axis")
    axis = None
    if axis_element is not None:
        axis = e.vector(axis_element, "xyz", (0, 0, 0))
        norm = float(np.linalg.norm(axis))
        if norm < 1e-12:
            e.fail("axis is zero", " <axis>")
        axis = axis / norm
    return RollingWheelDescription(e.name(), e.text("link"), e.number("radius", positive=True), axis)


def _gravity(raw: ET.Element, source: str) -> np.ndarray:
    e = _Element(raw, source, ("xyz",))
    e.children(())
    if raw.get("xyz") is None:
        e.fail("needs an 'xyz' attribute (the gravitational acceleration in world axes, m/s^2)")
    return np.array(_numbers(raw.get("xyz"), 3, lambda p: e.fail(p, f" <gravity xyz=\"{raw.get('xyz')}\">"), 1e4))


def _ground(raw: ET.Element, source: str) -> GroundDescription:
    """``<ground name height normal friction stiffness damping exponent stick_velocity links>``
    (`links`: the links that can touch it, separated by white space; checked by the parser)."""
    e = _Element(raw, source, ("name", "height", "normal", "friction", "stiffness", "damping", "exponent",
                               "stick_velocity", "links", "stiction", "stiction_stiffness", "stiction_damping"))
    e.children(())
    normal = np.array([0.0, 0.0, 1.0])
    if raw.get("normal") is not None:
        normal = np.array(_numbers(raw.get("normal"), 3, lambda p: e.fail(p, f" <ground normal=\"{raw.get('normal')}\">"),
                                   1e6))
        if float(np.linalg.norm(normal)) < 1e-12:
            e.fail("normal is zero")
        normal = normal / np.linalg.norm(normal)
    optional = {key: (e.number(key, positive=True) if raw.get(key) is not None else None)
                for key in ("stiffness", "stick_velocity")}
    damping = e.number("damping", minimum=0.0) if raw.get("damping") is not None else None
    return GroundDescription(e.name(default="ground"), e.number("height", 0.0), normal,
                             e.number("friction", 1.0, minimum=0.0), optional["stiffness"], damping,
                             e.number("exponent", 1.0, minimum=1.0), optional["stick_velocity"],
                             links=_ground_links(e, raw.get("links")), stiction=e.flag("stiction", True),
                             stiction_stiffness=(e.number("stiction_stiffness", positive=True)
                                                 if raw.get("stiction_stiffness") is not None else None),
                             stiction_damping=(e.number("stiction_damping", minimum=0.0)
                                               if raw.get("stiction_damping") is not None else None))


def _ground_links(e: "_Element", raw: str | None) -> tuple[str, ...] | None:
    """The link names of ``<ground links>`` (None when absent); an empty list is an error."""
    if raw is None:
        return None
    names = tuple(dict.fromkeys(raw.replace(",", " ").split()))
    if not names:
        e.fail("links is empty: name the links that can touch the ground (e.g. the feet), or leave it out")
    return names


def _imu(raw: ET.Element, source: str) -> IMUDescription:
    """``<imu name link><origin xyz rpy/></imu>``: an IMU fixed in `link` at the origin."""
    e = _Element(raw, source, ("name", "link"))
    xyz, rpy = _pose(e, _single(e, e.children(("origin",)), "origin"))
    return IMUDescription(e.name(), e.text("link"), xyz, rpy)


def read_gazebo_imus(root: ET.Element, source: str) -> list[IMUDescription]:
    """The ``<sensor type="imu">`` elements of the top-level ``<gazebo reference="link">``
    elements: name, reference link and optional ``<pose>x y z roll pitch yaw</pose>`` (link
    frame); everything else a Gazebo sensor says (rates, noise, plugins) is not read."""
    imus = []
    for gazebo in root.findall("gazebo"):
        link = (gazebo.get("reference") or "").strip()
        for sensor in gazebo.findall("sensor"):
            if (sensor.get("type") or "").strip() != "imu":
                continue
            name = (sensor.get("name") or "").strip() or f"{link}_imu"
            label = f"gazebo reference '{link}' sensor '{name}'"
            if not link:
                raise URDFError(source, label, "an imu sensor needs <gazebo reference=\"link\"> naming its link")
            if not _NAME.match(name):
                raise URDFError(source, label, "name must start with a letter or '_' and hold only letters, digits, "
                                               "'_', '-' and '.'")
            pose = sensor.find("pose")
            values = [0.0] * 6
            if pose is not None and (pose.text or "").strip():
                values = _numbers(pose.text, 6, lambda p: _fail(source, f"{label} <pose>", p), 1e4)
            imus.append(IMUDescription(name, link, np.array(values[:3]), np.array(values[3:]), "gazebo sensor"))
    return imus


def _fail(source: str, label: str, problem: str) -> None:
    raise URDFError(source, label, problem)


#: What a force-torque sensor's ``frame`` may be (Gazebo's "sensor" frame of a joint sensor
#: without a pose is the child's joint frame) and its ``measure_direction``.
FORCE_TORQUE_FRAMES = {"child": "child", "sensor": "child", "parent": "parent"}
FORCE_TORQUE_DIRECTIONS = ("parent_to_child", "child_to_parent")


def _force_torque_choice(value: str, allowed, fail: Callable[[str], None], what: str) -> str:
    """`value` checked against `allowed` (one line naming them)."""
    value = value.strip()
    if value not in allowed:
        fail(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _force_torque(raw: ET.Element, source: str) -> ForceTorqueDescription:
    """``<force_torque name joint frame="child|parent" measure_direction="parent_to_child|child_to_parent"/>``."""
    e = _Element(raw, source, ("name", "joint", "frame", "measure_direction"))
    e.children(())
    joint = e.text("joint")
    frame = _force_torque_choice(raw.get("frame", "child"), FORCE_TORQUE_FRAMES, e.fail, "frame")
    direction = _force_torque_choice(raw.get("measure_direction", "parent_to_child"), FORCE_TORQUE_DIRECTIONS,
                                     e.fail, "measure_direction")
    return ForceTorqueDescription(e.name("name", f"{joint}_force_torque"), joint, FORCE_TORQUE_FRAMES[frame], direction)


def read_gazebo_force_torques(root: ET.Element, source: str) -> list[ForceTorqueDescription]:
    """The ``<sensor type="force_torque">`` elements of the top-level ``<gazebo reference="joint">``
    elements: name, joint, and ``<force_torque><frame>`` (child, parent; sensor = child) and
    ``<measure_direction>`` (SDFormat's default child_to_parent); rates, noise and plugins are not
    read."""
    sensors = []
    for gazebo in root.findall("gazebo"):
        joint = (gazebo.get("reference") or "").strip()
        for sensor in gazebo.findall("sensor"):
            if (sensor.get("type") or "").strip() != "force_torque":
                continue
            name = (sensor.get("name") or "").strip() or f"{joint}_force_torque"
            label = f"gazebo reference '{joint}' sensor '{name}'"
            fail = lambda problem, where="": _fail(source, f"{label}{where}", problem)  # noqa: E731
            if not joint:
                fail("a force_torque sensor needs <gazebo reference=\"joint\"> naming its joint")
            if not _NAME.match(name):
                fail("name must start with a letter or '_' and hold only letters, digits, '_', '-' and '.'")
            settings = sensor.find("force_torque")
            text = lambda tag, default: (settings.findtext(tag) if settings is not None else None) or default  # noqa: E731
            frame = _force_torque_choice(text("frame", "child"), FORCE_TORQUE_FRAMES,
                                         lambda p: fail(p, " <frame>"), "frame")
            direction = _force_torque_choice(text("measure_direction", "child_to_parent"), FORCE_TORQUE_DIRECTIONS,
                                             lambda p: fail(p, " <measure_direction>"), "measure_direction")
            sensors.append(ForceTorqueDescription(name, joint, FORCE_TORQUE_FRAMES[frame], direction, "gazebo sensor"))
    return sensors


def _contact_pair(raw: ET.Element, source: str) -> ContactPairDescription:
    """``<contact_pair name link1 link2 friction stiffness damping exponent stick_velocity stiction
    stiction_stiffness stiction_damping points>``."""
    e = _Element(raw, source, ("name", "link1", "link2", "friction", "stiffness", "damping", "exponent",
                               "stick_velocity", "stiction", "stiction_stiffness", "stiction_damping", "points"))
    e.children(())
    link1, link2 = e.text("link1"), e.text("link2")
    if link1 == link2:
        e.fail(f"link1 and link2 are both '{link1}': a link cannot touch itself")
    optional = {key: (e.number(key, positive=True) if raw.get(key) is not None else None)
                for key in ("stiffness", "stick_velocity", "stiction_stiffness")}
    damping, stiction_damping = (e.number(key, minimum=0.0) if raw.get(key) is not None else None
                                 for key in ("damping", "stiction_damping"))
    return ContactPairDescription(e.name(default=f"contact_{link1}_{link2}"), link1, link2,
                                  e.number("friction", 1.0, minimum=0.0), optional["stiffness"], damping,
                                  e.number("exponent", 1.0, minimum=1.0), optional["stick_velocity"],
                                  e.flag("stiction", True), optional["stiction_stiffness"], stiction_damping,
                                  _slot_count(e, raw))


def _slot_count(e, raw: ET.Element) -> int:
    """``points``: contact slots of a pair (1 to 16; a face on a face needs 4)."""
    if raw.get("points") is None:
        return 4
    value = e.number("points", minimum=1.0)
    if value != int(value) or value > 16:
        e.fail(f"points must be a whole number from 1 to 16, got {raw.get('points')!r}")
    return int(value)


def _contact(raw: ET.Element, source: str) -> LinkContactDescription:
    """``<contact link friction stiffness damping linear_damping rolling_friction spinning_friction>``:
    contact parameters of one link's shapes (the others' come from the ground or the pair)."""
    e = _Element(raw, source, ("link", *LinkContactDescription.PARAMETERS))
    e.children(())
    link = e.text("link")
    values = {key: e.number(key, positive=key == "stiffness", minimum=None if key == "stiffness" else 0.0)
              for key in LinkContactDescription.PARAMETERS if raw.get(key) is not None}
    if not values:
        e.fail(f"says nothing about link '{link}': give friction, stiffness, damping, linear_damping, "
               "rolling_friction or spinning_friction")
    read = tuple(f"{key.replace('_', ' ')} {value:g} from <{EXTENSION_TAG}><contact>" for key, value in values.items())
    return LinkContactDescription(link, **values, read=read)


def _self_collision(raw: ET.Element, source: str) -> SelfCollisionDescription:
    """``<self_collision name links exclude friction stiffness damping exponent stick_velocity>``:
    `links` the link names (white space separated), `exclude` pairs ``linkA:linkB``; the names are
    checked against the robot when its pairs are made (:func:`mb_sim.urdf.collision.self_collision_pairs`)."""
    e = _Element(raw, source, ("name", "links", "exclude", "friction", "stiffness", "damping", "exponent",
                               "stick_velocity"))
    e.children(())
    links = None
    if raw.get("links") is not None:
        links = tuple(dict.fromkeys(raw.get("links").replace(",", " ").split()))
        if not links:
            e.fail("links is empty: name the links that may touch one another, or leave it out")
    exclude = []
    for item in (raw.get("exclude") or "").replace(",", " ").split():
        names = item.split(":")
        if len(names) != 2 or not all(names):
            e.fail(f"exclude entry {item!r} is not a pair 'linkA:linkB'")
        exclude.append((names[0], names[1]))
    optional = {key: (e.number(key, positive=True) if raw.get(key) is not None else None)
                for key in ("stiffness", "stick_velocity")}
    damping = e.number("damping", minimum=0.0) if raw.get("damping") is not None else None
    return SelfCollisionDescription(e.name(default="self_collision"), links, tuple(exclude),
                                    e.number("friction", 1.0, minimum=0.0), optional["stiffness"], damping,
                                    e.number("exponent", 1.0, minimum=1.0), optional["stick_velocity"])


_READERS = {"loop_joint": _loop_joint, "coordinate_constraint": _coordinate_constraint,
            "spring_damper": _spring_damper, "joint_spring": _joint_spring, "dc_motor": _dc_motor,
            "rolling_wheel": _rolling_wheel, "contact_pair": _contact_pair, "imu": _imu,
            "self_collision": _self_collision, "force_torque": _force_torque, "contact": _contact,
            "external_wrench": _external_wrench}


def read_extensions(elements: list[ET.Element], source: str) -> Extensions:
    """The content of the ``<mb_sim>`` elements (several are merged, in document order)."""
    found: dict[str, list] = {tag: [] for tag in _READERS}
    gravity: list[np.ndarray] = []
    grounds: list[GroundDescription] = []
    for element in elements:
        container = _Element(element, source, ())
        for child in element:
            if not isinstance(child.tag, str):
                continue
            if child.tag == "gravity":
                gravity.append(_gravity(child, source))
            elif child.tag == "ground":
                grounds.append(_ground(child, source))
            elif child.tag in _READERS:
                found[child.tag].append(_READERS[child.tag](child, source))
            else:
                known = ", ".join(f"<{t}>" for t in (*_READERS, "gravity", "ground"))
                container.fail(f"unknown element <{child.tag}> (known: {known})")
    if len(gravity) > 1:
        raise URDFError(source, f"{EXTENSION_TAG} gravity", f"given {len(gravity)} times; give it once")
    if len(grounds) > 1:
        raise URDFError(source, f"{EXTENSION_TAG} ground", f"given {len(grounds)} times; give one ground plane")
    links = [c.link for c in found["contact"]]
    twice = sorted({link for link in links if links.count(link) > 1})
    if twice:
        raise URDFError(source, f"{EXTENSION_TAG} contact link=\"{twice[0]}\"", "given twice; give one <contact> per link")
    if len(found["self_collision"]) > 1:
        raise URDFError(source, f"{EXTENSION_TAG} self_collision",
                        f"given {len(found['self_collision'])} times; give it once")
    return Extensions(found["loop_joint"], found["coordinate_constraint"], found["spring_damper"],
                      found["joint_spring"], gravity[0] if gravity else None, found["dc_motor"],
                      found["rolling_wheel"], grounds[0] if grounds else None,
                      contact_pairs=found["contact_pair"], imus=found["imu"], force_torques=found["force_torque"],
                      self_collision=found["self_collision"][0] if found["self_collision"] else None,
                      link_contacts={c.link: c for c in found["contact"]},
                      wrench_links=tuple(dict.fromkeys(found["external_wrench"])))
