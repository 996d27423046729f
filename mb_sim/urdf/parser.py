"""Read URDF text or files into a validated :class:`RobotDescription`.

Three passes: an XML pass (well-formedness, numbers, extension elements), ``urdf_parser_py`` for
links and joints, and graph/inertia validation (the inertia policy of :mod:`mb_sim.urdf.inertia`).
What only says how a link looks or collides (``<visual>``, ``<collision>``, materials) is never
read, so nothing in it can refuse a robot.  Every error is a :class:`URDFError` naming the file and
the element.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import NoReturn

import numpy as np
import urdf_parser_py.xml_reflection.core as urdf_reflection
from urdf_parser_py import urdf as urdf_model

from mb_sim.urdf.description import (
    JOINT_TYPE_ALIASES, JOINT_TYPES, WORLD_LINK, ComponentSpec, Extensions, GroundDescription, Inertial, JointDescription, JointLimit,
    LinkDescription, Mimic, RobotDescription, SkippedCollision,
)
from mb_sim.urdf.collision import enclosed_shapes, ground_excluded, read_collisions
from mb_sim.urdf.contact_tags import merge_link_contacts, read_gazebo_contacts, read_pybullet_contacts
from mb_sim.urdf.errors import FixedBaseWarning, RepairWarning, URDFError, URDFWarning, warn_user
from mb_sim.urdf.extensions import EXTENSION_TAG, read_extensions, read_gazebo_force_torques, read_gazebo_imus
from mb_sim.urdf.inertia import Repair, check_mass_matrix, refuse_link_problems
from mb_sim.urdf.numbers import read_numbers
from mb_sim.urdf.ros2_control import read_ros2_control_sensors
from mb_sim.urdf.rotations import rpy_to_matrix
from mb_sim.urdf.source import read_source as _read_source
from mb_sim.urdf.validation import validate
from mb_sim.urdf.xml_document import parse_document
from mb_sim.urdf.xacro_expansion import expand_xacro, is_xacro

__all__ = ["parse_urdf"]

#: Top-level elements parsed by urdf_parser_py.
URDF_ELEMENTS = {"link", "joint", "material"}
#: Top-level elements of other tools that mb_sim knows and ignores without a warning.
IGNORED_ELEMENTS = {"transmission", "gazebo", "ros2_control"}
#: Elements of a link that only say how it looks or collides: never read, never checked.
APPEARANCE_ELEMENTS = {"visual", "collision"}
#: Elements of a link urdf_parser_py does not know that mb_sim reads itself (pybullet's contact
#: parameters: :mod:`mb_sim.urdf.contact_tags`).
READ_LINK_ELEMENTS = {"contact"}
#: mb_sim's own extension elements (the content of <mb_sim> is checked by mb_sim.urdf.extensions).
EXTENSION_ELEMENTS = {"component", EXTENSION_TAG}
#: Numeric attributes per element tag, with the number of values each holds.
NUMERIC_ATTRIBUTES = {
    "origin": {"xyz": 3, "rpy": 3},
    "mass": {"value": 1},
    "inertia": {name: 1 for name in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")},
    "axis": {"xyz": 3},
    "limit": {"lower": 1, "upper": 1, "effort": 1, "velocity": 1},
    "dynamics": {"damping": 1, "friction": 1},
    "mimic": {"multiplier": 1, "offset": 1},
    "parameter": {"value": 1},
}
#: Elements nested deeper than this are refused before anything recurses over them (real URDFs
#: nest at most 7 deep: example-robot-data's hyq; Python recursion stops near 1000).
MAX_ELEMENT_DEPTH = 64
#: The largest magnitude each numeric attribute may have: beyond it the number is no robot's
#: (and products of such numbers overflow).  Lengths and angles 1e4 (m, rad), masses 1e6 kg,
#: inertias 1e8 kg m^2 (1e6 kg 10 m across); example-robot-data stays below 2e4 everywhere.
#: ``<limit>`` is not here: a bound above NO_LIMIT_ABOVE means "no limit" (see there).
MAGNITUDE_BOUNDS = {
    ("origin", "xyz"): 1e4, ("origin", "rpy"): 1e4, ("mass", "value"): 1e6, ("axis", "xyz"): 1e6,
    **{("inertia", name): 1e8 for name in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")},
    ("dynamics", "damping"): 1e9, ("dynamics", "friction"): 1e9,
    ("mimic", "multiplier"): 1e6, ("mimic", "offset"): 1e4, ("parameter", "value"): 1e12,
}
#: A ``<limit>`` bound (lower, upper, effort, velocity) of larger magnitude is read as no limit:
#: exporters write 1e16 (example-robot-data's iris) or DBL_MAX for "unlimited".
NO_LIMIT_ABOVE = 1e9


def parse_urdf(path_or_xml: str | os.PathLike, strict: bool = False, floating_base: bool = False,
               xacro_args: Mapping[str, object] | None = None,
               ground: bool | str | Iterable[str] = False, wrench_links: Iterable[str] = ()) -> RobotDescription:
    """Parse and validate a URDF given as a file path or as XML text.

    A ``.xacro`` file, or text using xacro markup, is expanded first with `xacro_args` (the
    ``name:=value`` pairs of the xacro command line; :mod:`mb_sim.urdf.xacro_expansion`); errors
    then name the xacro file.

    Mass properties are judged per moving body (links fixed to each other merged) and repaired
    where the fault is rounding or the triangle inequality (see :mod:`mb_sim.urdf.inertia`); a
    ``<mimic>`` on a fixed joint is ignored.  Each repair is issued as a :class:`RepairWarning` and
    listed in ``RobotDescription.repairs``.  `strict` refuses instead: every repair becomes the
    URDFError of the per-link check.  What XML refuses but urdfdom reads (blank lines before
    ``<?xml``, undeclared namespace prefixes) and ``<limit lower > upper>`` (no position limit) are
    such repairs too.

    A root link not named ``world`` is fixed to the world; `floating_base` joins it to a ``world``
    link by a ``floating`` joint named ``root_joint`` (Pinocchio's name) instead.  A robot that
    looks mobile and stays fixed gets one :class:`FixedBaseWarning`.

    With a ``<ground>`` in ``<mb_sim>`` (or `ground`: the default plane z = 0 where the file has
    none) the links' ``<collision>`` shapes are read (:mod:`mb_sim.urdf.collision`) into
    ``collisions``; those no contact uses are in ``skipped_collisions`` with the reason.  `ground`
    given as link names (a list, or one string separated by white space) is ``<ground
    links="...">``: only those links' shapes touch the plane (the file's or the default one).
    `wrench_links` take an external wrench as inputs, as ``<mb_sim><external_wrench link>`` does.

    Raises
    ------
    URDFError
        For any input mb_sim cannot simulate; the message names the file and element.
    """
    text, source = _read_source(path_or_xml)
    if is_xacro(path_or_xml):
        text = expand_xacro(path_or_xml, xacro_args)
    elif xacro_args:
        warn_user(f"{source}: xacro_args ignored: not a xacro file", URDFWarning)
    root, oddities = parse_document(text, source, strict)
    _check_depth(root, source)
    warned: set[str] = set()
    components = _read_top_level(root, source, warned)
    extensions = read_extensions(root.findall(EXTENSION_TAG), source)
    extensions = dataclasses.replace(extensions, imus=[*extensions.imus, *read_gazebo_imus(root, source)],
                                     force_torques=[*extensions.force_torques, *read_gazebo_force_torques(root, source)])
    _check_numbers(root, source)
    _check_joint_types(root, source)
    robot = _parse_links_and_joints(root, source, warned)
    extensions = _with_ros2_control_sensors(extensions, root, source, robot)
    links = [_link_description(link, source) for link in robot.links]
    if strict:  # the per-link check, where it always ran (before the joints are read)
        refuse_link_problems(source, links)
    stated = _stated_limits(root)
    joints = [_joint_description(joint, source, stated.get(joint.name, set()), oddities, strict)
              for joint in robot.joints]
    if floating_base:
        _float_root(source, links, joints)
    extensions = _with_wrench_links(extensions, wrench_links, source, links)
    description = validate(robot.name or "robot", source, links, joints, components, extensions, strict=strict)
    if floating_base:
        _check_floating_root(description)
    else:
        _note_fixed_base(description)
    for oddity in oddities:
        warn_user(f"{source}: {oddity}", RepairWarning)
    description = dataclasses.replace(description, repairs=[*oddities, *description.repairs])
    extensions = description.extensions
    if ground or extensions.ground is not None or extensions.contact_pairs or extensions.self_collision is not None:
        description = _with_contacts(description, root, source if os.path.isfile(source) else None, ground)
    return description


def _with_wrench_links(extensions: Extensions, wrench_links: Iterable[str], source: str, links: list) -> Extensions:
    """`extensions` with the loader's `wrench_links` added (each link once); an unknown link is
    refused by name."""
    names = [wrench_links] if isinstance(wrench_links, str) else [str(n) for n in wrench_links]
    known = [link.name for link in links]
    for name in names:
        if name not in known:
            raise URDFError(source, f"wrench_links '{name}'", f"no such link (links: {', '.join(known)})")
    merged = tuple(dict.fromkeys([*extensions.wrench_links, *names]))
    if WORLD_LINK in merged:
        raise URDFError(source, f"wrench_links '{WORLD_LINK}'", "the world frame cannot be pushed; name a link of the robot")
    return dataclasses.replace(extensions, wrench_links=merged)


def _with_ros2_control_sensors(extensions: Extensions, root: ET.Element, source: str, robot) -> Extensions:
    """`extensions` plus the IMUs and force-torque sensors of the ``<ros2_control>`` elements
    (those not declared already, by ``<mb_sim>`` or a Gazebo sensor of the same name)."""
    parents = {link.name: None for link in robot.links}
    parents.update((joint.child, joint.name) for joint in robot.joints)
    declared = {sensor.name for sensor in [*extensions.imus, *extensions.force_torques]}
    imus, force_torques = read_ros2_control_sensors(root, source, parents, declared)
    return dataclasses.replace(extensions, imus=[*extensions.imus, *imus],
                               force_torques=[*extensions.force_torques, *force_torques])


def _with_contacts(description: RobotDescription, root: ET.Element, urdf_path: str | None,
                   ground: bool | str | Iterable[str]) -> RobotDescription:
    """`description` with its ground (the default plane where `ground` asks for one and the file
    has none; `ground` as link names sets its ``links``) and the collision shapes of the links that
    move, less those inside another shape of their rigid body and those of links the ground leaves
    out (unread); a robot with nothing to touch the ground is warned about."""
    extensions = description.extensions
    if extensions.ground is None and ground:
        extensions = dataclasses.replace(extensions, ground=GroundDescription())
    if not isinstance(ground, bool) and ground:  # link names
        names = tuple(dict.fromkeys(ground.split() if isinstance(ground, str) else (str(n) for n in ground)))
        extensions = dataclasses.replace(extensions, ground=dataclasses.replace(extensions.ground, links=names))
    fixed = description.fixed_to_world()
    paired = {link for pair in extensions.contact_pairs for link in (pair.link1, pair.link2)}
    if extensions.self_collision is not None:  # its links' shapes are read too (fixed links' stay out)
        paired |= set(extensions.self_collision.links or description.links) - fixed
    excluded = ground_excluded(extensions.ground, description.links, paired, description.source)
    used, skipped = read_collisions(root, description.source, urdf_path, set(description.links), excluded)
    skipped += [SkippedCollision(c.link, c.index, "its link is fixed to the world and in no contact_pair")
                for c in used if c.link in fixed and c.link not in paired]
    used = [c for c in used if c.link not in fixed or c.link in paired]
    enclosed = enclosed_shapes(used, description.joints)
    skipped += [SkippedCollision(c.link, c.index, f"inside {container.label} on the same rigid body")
                for i, c in enumerate(used) if (container := enclosed.get(i)) is not None]
    used = [c for i, c in enumerate(used) if i not in enclosed]
    if not [c for c in used if c.link not in fixed] and extensions.ground is not None:
        warn_user(f"{description.source}: mb_sim ground '{extensions.ground.name}': no moving link has a <collision> "
                  "shape, so nothing can touch the ground", URDFWarning)
    extensions = dataclasses.replace(extensions, link_contacts=_link_contacts(root, description, {c.link for c in used}))
    return dataclasses.replace(description, extensions=extensions, collisions=used, skipped_collisions=skipped)


def _link_contacts(root: ET.Element, description: RobotDescription, touching: set[str]) -> dict:
    """Contact parameters by link from Gazebo's and pybullet's tags and ``<mb_sim><contact>``
    (:mod:`mb_sim.urdf.contact_tags`), for the links whose shapes touch something; one warning per
    such link listing what was read and what is not simulated.  ``<mb_sim><contact>`` naming no
    link is an error; one for a link whose shapes touch nothing is warned about."""
    source, own = description.source, description.extensions.link_contacts
    for link in own:
        if link not in description.links:
            raise URDFError(source, f'{EXTENSION_TAG} contact link="{link}"', "no such link")
    merged = merge_link_contacts([read_gazebo_contacts(root, source), read_pybullet_contacts(root, source), own])
    unused = [link for link in merged if link not in touching and link not in own]
    if touching and unused:  # (without a ground or pair nothing touches: the tags wait for one)
        warn_user(f"{source}: contact parameters read for {', '.join(repr(n) for n in unused)}, but no collision shape "
                  "of theirs touches anything (not a link, no <collision>, or outside <ground links>): not used",
                  URDFWarning)
    for link, contact in merged.items():
        if link not in touching:
            if link in own:
                warn_user(f"{source}: {EXTENSION_TAG} contact link=\"{link}\": none of its collision shapes touches "
                          "anything (no ground or contact pair reads them): no effect", URDFWarning)
            continue
        parts = [*contact.read, *(f"not simulated: {line}" for line in contact.ignored)]
        warn_user(f"{source}: link '{link}' contact parameters: " + "; ".join(parts), URDFWarning)
    return {link: contact for link, contact in merged.items() if link in touching and contact.given()}


def _check_depth(root: ET.Element, source: str) -> None:
    """Refuse elements nested deeper than MAX_ELEMENT_DEPTH, counted without recursion: the
    readers after this one (ElementTree's serializer, urdf_parser_py) recurse per level."""
    pending = [(root, 1, root)]
    while pending:
        element, depth, top = pending.pop()
        if depth > MAX_ELEMENT_DEPTH:
            where = _element_label(top) if top is not root and top.get("name") else f"<{top.tag}>"
            raise URDFError(source, where, f"elements nested {_depth(element, depth)} deep; mb_sim reads at most "
                                           f"{MAX_ELEMENT_DEPTH} levels (real URDFs nest a few: example-robot-data 7)")
        pending.extend((child, depth + 1, child if element is root else top) for child in element)


def _depth(element: ET.Element, depth: int) -> int:
    """`depth` plus the depth of the deepest path below `element` (iteratively)."""
    deepest, pending = depth, [(element, depth)]
    while pending:
        current, level = pending.pop()
        deepest = max(deepest, level)
        pending.extend((child, level + 1) for child in current)
    return deepest


def _warn_once(warned: set[str], key: str, message: str) -> None:
    if key not in warned:
        warned.add(key)
        warnings.warn(message, URDFWarning, stacklevel=4)


def _read_top_level(root: ET.Element, source: str, warned: set[str]) -> list[ComponentSpec]:
    """Sort top-level elements: URDF proper, extensions (returned), ignored, unknown (warned)."""
    components = []
    for element in root:
        if not isinstance(element.tag, str) or element.tag in URDF_ELEMENTS | IGNORED_ELEMENTS | {EXTENSION_TAG}:
            continue
        if element.tag == "component":
            components.append(_component_spec(element, source))
        else:
            _warn_once(warned, element.tag,
                       f"{source}: unknown element <{element.tag}> ignored (mb_sim reads "
                       f"{', '.join(sorted(URDF_ELEMENTS | EXTENSION_ELEMENTS))})")
    return components


def _component_spec(element: ET.Element, source: str) -> ComponentSpec:
    label = f"component '{element.get('name', '?')}'"
    for attribute in ("type", "name", "attach_to"):
        if not element.get(attribute):
            raise URDFError(source, label, f"<component> needs a '{attribute}' attribute")
    parameters = {}
    for parameter in element.findall("parameter"):
        name, raw = parameter.get("name"), parameter.get("value")
        if not name or raw is None:
            raise URDFError(source, label, "<parameter> needs 'name' and 'value' attributes")
        try:
            value = float(raw)
        except ValueError:
            raise URDFError(source, f"{label} <parameter name=\"{name}\" value=\"{raw}\">", "not a number") from None
        if not math.isfinite(value):
            raise URDFError(source, f"{label} <parameter name=\"{name}\" value=\"{raw}\">", "NaN or infinite value")
        parameters[name] = value
    return ComponentSpec(element.get("type"), element.get("name"), element.get("attach_to"), parameters)


def _element_label(top: ET.Element) -> str:
    return f"{top.tag} '{top.get('name', '?')}'"


def _check_numbers(root: ET.Element, source: str) -> None:
    """Every numeric attribute of links, joints and components holds finite numbers."""
    for top in root:
        if top.tag not in URDF_ELEMENTS | {"component"}:
            continue
        for element in _dynamics_elements(top):
            for attribute, count in NUMERIC_ATTRIBUTES.get(element.tag, {}).items():
                raw = element.get(attribute)
                if raw is None:
                    continue
                where = f"{_element_label(top)} <{element.tag} {attribute}=\"{raw}\">"

                def fail(problem: str, where: str = where) -> NoReturn:
                    raise URDFError(source, where, problem)

                read_numbers(raw, count, fail, MAGNITUDE_BOUNDS.get((element.tag, attribute)), _UNITS.get(element.tag, ""))


_UNITS = {"origin": "m and rad", "mass": "kg", "inertia": "kg m^2", "axis": "a direction",
          "dynamics": "N m s/rad or N s/m, N m or N", "mimic": "a ratio, rad or m", "parameter": "any unit"}


def _dynamics_elements(top: ET.Element):
    """`top` and its descendants, except <visual> and <collision> subtrees (and materials)."""
    if top.tag == "material":
        return
    yield top
    for child in top:
        if child.tag not in APPEARANCE_ELEMENTS:
            yield from _dynamics_elements(child)


def _check_joint_types(root: ET.Element, source: str) -> None:
    for joint in root.findall("joint"):
        kind = JOINT_TYPE_ALIASES.get(joint.get("type"), joint.get("type"))
        if kind not in JOINT_TYPES:
            raise URDFError(source, _element_label(joint),
                            f"unsupported joint type '{kind}' (supported: {', '.join(JOINT_TYPES)}; "
                            f"{', '.join(f'{a} for {t}' for a, t in JOINT_TYPE_ALIASES.items())})")
        if kind == "spherical":
            _check_ball_joint(joint, source)


def _nonzero(text: str | None) -> bool:
    """Whether an attribute's text is a number other than zero (_check_numbers judged it finite)."""
    try:
        return text is not None and float(text) != 0.0
    except ValueError:
        return True


def _check_ball_joint(joint: ET.Element, source: str) -> None:
    """What a spherical joint cannot honour is refused: position limits (a cone or per-axis
    bounds are not defined for it), damping and friction, a mimic."""
    label = _element_label(joint)
    limit = joint.find("limit")
    if limit is not None and ("lower" in limit.attrib or "upper" in limit.attrib):
        raise URDFError(source, f"{label} <limit>", "a spherical joint takes no lower or upper position limit "
                                                    "(its orientation has no angle to bound); remove them")
    dynamics = joint.find("dynamics")
    if dynamics is not None and any(_nonzero(dynamics.get(a)) for a in ("damping", "friction")):
        raise URDFError(source, f"{label} <dynamics>", "damping and friction are not simulated on a spherical joint "
                                                       "(only on revolute and prismatic ones); remove them")
    if joint.find("mimic") is not None:
        raise URDFError(source, f"{label} <mimic>", "a spherical joint cannot mimic another joint")


def _parse_links_and_joints(root: ET.Element, source: str, warned: set[str]) -> urdf_model.URDF:
    """Run urdf_parser_py on the links, joints and materials; its complaints become warnings."""
    # The robot's name is only used in messages: a nameless robot is "robot", not refused.
    reduced = ET.Element("robot", {**root.attrib, "name": root.get("name") or "robot"})
    balls = set()  # urdf_parser_py knows no spherical joint: read as floating, typed back below
    for element in root:
        if element.tag in ("link", "joint"):
            reduced.append(_without_appearance(element))
            if element.tag == "joint" and JOINT_TYPE_ALIASES.get(element.get("type"), element.get("type")) == "spherical":
                reduced[-1].set("type", "floating")
                balls.add(element.get("name"))
    previous = urdf_reflection.on_error
    # 'Unknown attribute "D" in /robot/joint[...]': warn once per unknown name, not per joint.
    urdf_reflection.on_error = lambda message: _warn_once(
        warned, message.split(" in ")[0], f"{source}: {message} (ignored; said once per name)")
    try:
        robot = urdf_model.URDF.from_xml_string(ET.tostring(reduced, encoding="unicode"))
        for joint in robot.joints:
            if joint.name in balls:
                joint.type = "spherical"
        return robot
    except urdf_reflection.ParseError as err:
        raise URDFError(source, _xpath_label(err.path), str(err.e)) from None
    except (AssertionError, ValueError, TypeError, AttributeError) as err:
        raise URDFError(source, "", f"invalid URDF: {err}") from None
    finally:
        urdf_reflection.on_error = previous


def _without_appearance(element: ET.Element) -> ET.Element:
    """A copy of a <link> or <joint> without <visual> and <collision>: what they say (meshes,
    materials, textures) never enters the dynamics, so nothing in them may refuse a robot."""
    copy = ET.Element(element.tag, element.attrib)
    copy.text, copy.tail = element.text, element.tail
    copy.extend(child for child in element if child.tag not in APPEARANCE_ELEMENTS | READ_LINK_ELEMENTS)
    return copy


def _xpath_label(path: object) -> str:
    """``/robot[@name='r']/joint[@name='j']/origin`` -> ``joint 'j' <origin>``."""
    parts = str(path).strip("/").split("/")[1:]
    labels = []
    for part in parts:
        tag, _, rest = part.partition("[")
        name = rest.partition("'")[2].partition("'")[0] if "@name=" in rest else ""
        labels.append(f"{tag} '{name}'" if name else f"<{tag}>")
    return " ".join(labels) or "<robot>"


def _vector(value: object, default: tuple[float, float, float]) -> np.ndarray:
    return np.array(value if value is not None else default, dtype=float)


def _link_description(link: urdf_model.Link, source: str) -> LinkDescription:
    inertial = link.inertial
    if inertial is None:
        return LinkDescription(link.name, None)
    label = f"link '{link.name}' <inertial>"
    mass = float(inertial.mass or 0.0)
    i = inertial.inertia
    local = np.zeros((3, 3)) if i is None else np.array(
        [[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]], dtype=float)
    origin = inertial.origin
    xyz = _vector(origin.xyz if origin else None, (0.0, 0.0, 0.0))
    rotation = rpy_to_matrix(_vector(origin.rpy if origin else None, (0.0, 0.0, 0.0)))
    inertia = rotation @ local @ rotation.T
    if mass < 0.0:
        raise URDFError(source, label, f"negative mass {mass}")
    if mass == 0.0 and not local.any():
        return LinkDescription(link.name, None)
    return LinkDescription(link.name, Inertial(mass, xyz, inertia))


def _stated_limits(root: ET.Element) -> dict[str, set[str]]:
    """Which of lower/upper each joint's <limit> states (urdf_parser_py reports absent ones as 0)."""
    return {joint.get("name"): {a for a in ("lower", "upper") if limit.get(a) is not None}
            for joint in root.findall("joint") for limit in joint.findall("limit")}


def _bound(value: float | None) -> float | None:
    """A ``<limit>`` bound, None where the URDF says "no limit" in numbers (beyond NO_LIMIT_ABOVE)."""
    return None if value is None or abs(float(value)) > NO_LIMIT_ABOVE else float(value)


def _joint_description(joint: urdf_model.Joint, source: str, stated: set[str], repairs: list[Repair] | None = None,
                       strict: bool = False) -> JointDescription:
    """A JointDescription; position bounds only where the URDF states them (else unbounded).  A lower
    bound above the upper one is pybullet's "no limit" (urdfdom and Pinocchio keep it and enforce
    nothing): the joint gets no stop, and a Repair is appended to `repairs` (`strict` refuses)."""
    label = f"joint '{joint.name}'"
    origin = joint.origin
    axis = _vector(joint.axis, (1.0, 0.0, 0.0))
    norm = float(np.linalg.norm(axis))
    if norm < 1e-12 and JOINT_TYPES[joint.type] in (1, 3):
        raise URDFError(source, f"{label} <axis>", "axis is zero")
    limit = JointLimit()
    if joint.limit is not None:
        for bound in ("effort", "velocity"):
            if (getattr(joint.limit, bound) or 0.0) < 0:
                raise URDFError(source, f"{label} <limit {bound}=\"{getattr(joint.limit, bound):g}\">",
                                f"a negative {bound} limit means nothing (limits are magnitudes)")
        bounded = joint.type in ("revolute", "prismatic")
        limit = JointLimit(
            lower=_bound(joint.limit.lower) if bounded and "lower" in stated else None,
            upper=_bound(joint.limit.upper) if bounded and "upper" in stated else None,
            velocity=_bound(joint.limit.velocity) or float("inf"),
            effort=_bound(joint.limit.effort) or float("inf"),
        )
        if limit.lower is not None and limit.upper is not None and limit.lower > limit.upper:
            if strict or repairs is None:
                raise URDFError(source, f"{label} <limit>", f"lower {limit.lower:g} is above upper {limit.upper:g}")
            repairs.append(Repair("joint", joint.name, f"<limit lower=\"{limit.lower:g}\"> above upper=\"{limit.upper:g}\"",
                                  "read as no position limit (pybullet's convention; urdfdom and Pinocchio enforce "
                                  "nothing); swap the bounds if they were meant as a range"))
            limit = dataclasses.replace(limit, lower=None, upper=None)
    dynamics = joint.dynamics
    mimic = None
    if joint.mimic is not None:
        mimic = Mimic(joint.mimic.joint,
                      1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier),
                      0.0 if joint.mimic.offset is None else float(joint.mimic.offset))
    damping = float(dynamics.damping or 0.0) if dynamics else 0.0
    friction = float(dynamics.friction or 0.0) if dynamics else 0.0
    if damping < 0 or friction < 0:
        raise URDFError(source, f"{label} <dynamics>", "damping and friction must not be negative")
    return JointDescription(
        name=joint.name, type=joint.type, parent=joint.parent, child=joint.child,
        origin_xyz=_vector(origin.xyz if origin else None, (0.0, 0.0, 0.0)),
        origin_rpy=_vector(origin.rpy if origin else None, (0.0, 0.0, 0.0)),
        axis=axis / norm if norm >= 1e-12 else axis, limit=limit,
        damping=damping, friction=friction, mimic=mimic,
    )


#: The floating joint `floating_base` adds from the world to the root link (Pinocchio's name for it).
ROOT_JOINT = "root_joint"
#: Words of link and joint names that say a robot moves about (wheels, legs, rotors), matched at the
#: start of a word (after a non-letter or a camel-case hump): ``wheel_left_link``, ``FL_foot``,
#: ``base_footprint``, ``LKneePitch``, ``iris__rotor_0``, not ``allegro``.
_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
MOBILE_WORDS = re.compile(r"(?<![a-z])(wheel|caster|foot|leg|knee|shank|thigh|rotor|propeller)", re.IGNORECASE)


def _float_root(source: str, links: list[LinkDescription], joints: list[JointDescription]) -> None:
    """Add a ``world`` link and a floating ``root_joint`` from it to the root link (in place)."""
    children = {joint.child for joint in joints}
    roots = [link.name for link in links if link.name not in children]
    if len(roots) != 1:
        return  # validate() names the cycle or the several roots
    (root,) = roots
    if root == WORLD_LINK:
        moved = ", ".join(f"'{j.name}' ({j.type})" for j in joints if j.parent == WORLD_LINK) or "none"
        raise URDFError(source, f"link '{WORLD_LINK}'", "floating_base: the root link is the world itself, so the "
                        f"URDF says how the robot moves relative to it (joints from it: {moved}); "
                        "change those joints instead")
    for kind, names, name in (("link", [link.name for link in links], WORLD_LINK),
                              ("joint", [joint.name for joint in joints], ROOT_JOINT)):
        if name in names:
            raise URDFError(source, f"{kind} '{name}'", f"floating_base adds a {kind} named '{name}' from the world "
                                                       f"to the root link '{root}'; this URDF already has one")
    links.append(LinkDescription(WORLD_LINK, None))
    joints.insert(0, JointDescription(ROOT_JOINT, "floating", WORLD_LINK, root, np.zeros(3), np.zeros(3),
                                      np.array([1.0, 0.0, 0.0])))


def _check_floating_root(description: RobotDescription) -> None:
    """URDFError where the floated root body (the root link and the links fixed to it) has no mass and
    the mass matrix is singular (a massless base on one hinge: the floating joint and the hinge move
    the same body)."""
    body, pending = set(), [description.joints[0].child]
    while pending:
        link = pending.pop()
        body.add(link)
        pending += [j.child for j in description.joints if j.parent == link and j.type == "fixed"]
    if any(description.links[link].inertial is not None for link in body):
        return
    try:
        check_mass_matrix(description.source, description.links, description.joints, description.root, sorted(body))
    except URDFError:
        raise URDFError(description.source, f"link '{description.joints[0].child}'",
                        "floating_base: this root link (with the links fixed to it) has no mass, so the mass matrix "
                        "would be singular (the floating joint and the joints below it move the same mass); give it "
                        "an <inertial>") from None


def _mobile_reason(description: RobotDescription) -> str | None:
    """Why the robot looks mobile (rolling wheels, or wheel/leg names), or None (an arm, a gripper)."""
    if description.extensions.rolling_wheels:
        return f"<mb_sim> rolling wheel '{description.extensions.rolling_wheels[0].name}'"
    names = [("joint", joint.name) for joint in description.joints if JOINT_TYPES[joint.type]]
    names += [("link", link) for link in description.links]
    return next((f"{kind} '{name}'" for kind, name in names if MOBILE_WORDS.search(_CAMEL_HUMP.sub("_", name))), None)


def _note_fixed_base(description: RobotDescription) -> None:
    """One FixedBaseWarning where a robot that looks mobile is fixed to the world by convention."""
    if description.root_is_world:
        return
    reason = _mobile_reason(description)
    if reason is not None:
        warn_user(f"{description.source}: root link '{description.root}' is fixed to the world (no joint from a "
                  f"'world' link), though the robot looks mobile ({reason}); float it with floating_base "
                  "(load_urdf(..., floating_base=True), mb-sim --floating-base, the node's floating_base:=true)",
                  FixedBaseWarning)
