"""Whole-robot checks: a single tree rooted in one link, mimic references, masses where needed."""
from __future__ import annotations

import dataclasses
from collections import Counter

from mb_sim.urdf.description import (
    JOINT_TYPES, WORLD_LINK, ComponentSpec, Extensions, JointDescription, LinkDescription, RobotDescription,
)
from mb_sim.urdf.errors import InertiaRepairWarning, RepairWarning, URDFError, warn_user
from mb_sim.urdf.inertia import Repair, apply_inertia_policy

__all__ = ["validate"]


def validate(name: str, source: str, links: list[LinkDescription], joints: list[JointDescription],
             components: list[ComponentSpec], extensions: Extensions | None = None,
             strict: bool = False) -> RobotDescription:
    """Check the robot's structure and return it with joints ordered parent before child.

    Mass properties follow the inertia policy (:mod:`mb_sim.urdf.inertia`) and a ``<mimic>`` on a
    fixed joint is ignored; each such repair is warned about once and listed in the result's
    ``repairs``.  `strict` refuses them instead, as the per-link checks did.
    """
    extensions = extensions or Extensions()
    if not links:
        raise URDFError(source, f"robot '{name}'", "no <link> elements")
    _named(source, "link", [link.name for link in links])
    _named(source, "joint", [joint.name for joint in joints])
    _unique(source, "link", [link.name for link in links])
    _unique(source, "joint", [joint.name for joint in joints])
    by_name = {link.name: link for link in links}
    _check_joint_links(source, by_name, joints)
    root = _find_root(source, by_name, joints)
    ordered = _tree_order(source, root, by_name, joints)
    if root == WORLD_LINK and by_name[root].inertial is not None:
        raise URDFError(source, "link 'world'", "the world link is the fixed world frame and cannot have an <inertial>")
    ordered, repairs = _fixed_mimics(source, ordered, strict)
    _check_mimics(source, ordered)
    _check_moving_mass(source, by_name, ordered)
    by_name, inertia_repairs = apply_inertia_policy(source, by_name, ordered, root, strict)
    _check_components(source, components, by_name, ordered)
    _check_extensions(source, extensions, by_name, ordered)
    for repair in repairs:
        warn_user(f"{source}: {repair}", RepairWarning)
    for repair in inertia_repairs:
        warn_user(f"{source}: {repair}", InertiaRepairWarning)
    return RobotDescription(name, source, by_name, ordered, root, components, extensions,
                            repairs=[*repairs, *inertia_repairs])


def _named(source: str, kind: str, names: list[str]) -> None:
    """Every link and joint has a non-empty name (joints and mb_sim elements refer to them by it)."""
    if any(not name for name in names):
        raise URDFError(source, f"{kind} ''", f"a {kind} needs a non-empty name (links and joints are referred "
                                              "to by name)")


def _unique(source: str, kind: str, names: list[str]) -> None:
    for element, count in Counter(names).items():
        if count > 1:
            raise URDFError(source, f"{kind} '{element}'", f"{count} {kind}s have this name")


def _check_joint_links(source: str, links: dict[str, LinkDescription], joints: list[JointDescription]) -> None:
    parents: dict[str, str] = {}
    for joint in joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise URDFError(source, f"joint '{joint.name}'", f"{role} link '{link}' does not exist")
        if joint.parent == joint.child:
            raise URDFError(source, f"joint '{joint.name}'", f"connects link '{joint.child}' to itself (a cycle)")
        if joint.child in parents:
            raise URDFError(source, f"link '{joint.child}'",
                            f"is the child of two joints ('{parents[joint.child]}' and '{joint.name}'): "
                            "the joint graph has a cycle; a URDF describes a tree")
        parents[joint.child] = joint.name


def _find_root(source: str, links: dict[str, LinkDescription], joints: list[JointDescription]) -> str:
    children = {joint.child for joint in joints}
    roots = [name for name in links if name not in children]
    if not roots:
        cycle = " -> ".join(joint.name for joint in joints)
        raise URDFError(source, "joints", f"every link has a parent joint, so the joint graph has a cycle ({cycle})")
    if len(roots) > 1:
        raise URDFError(source, "links", f"several root links ({', '.join(repr(r) for r in roots)}); "
                                         "connect them with joints into one tree")
    return roots[0]


def _tree_order(source: str, root: str, links: dict[str, LinkDescription],
                joints: list[JointDescription]) -> list[JointDescription]:
    """Joints breadth-first from the root; links never reached sit on a cycle."""
    out_of: dict[str, list[JointDescription]] = {}
    for joint in joints:
        out_of.setdefault(joint.parent, []).append(joint)
    ordered, frontier, reached = [], [root], {root}
    while frontier:
        link = frontier.pop(0)
        for joint in out_of.get(link, []):
            ordered.append(joint)
            reached.add(joint.child)
            frontier.append(joint.child)
    if len(reached) != len(links):
        loop = [j.name for j in joints if j.child not in reached]
        raise URDFError(source, f"joint '{loop[0]}'",
                        f"is on a cycle in the joint graph (joints {', '.join(loop)}); a URDF describes a tree")
    return ordered


def _fixed_mimics(source: str, joints: list[JointDescription], strict: bool
                  ) -> tuple[list[JointDescription], list[Repair]]:
    """Joints with the <mimic> of fixed joints dropped (reduced models freeze mimic joints by making
    them fixed and keep the element; a fixed joint has no coordinate to tie, Pinocchio ignores it)."""
    if strict:
        return joints, []
    out, repairs = [], []
    for joint in joints:
        if joint.mimic is not None and joint.type == "fixed":
            repairs.append(Repair("joint", joint.name, f"<mimic joint=\"{joint.mimic.joint}\"> on a fixed joint",
                                  "ignored: a fixed joint has no coordinate to tie (no effect on the motion)"))
            joint = dataclasses.replace(joint, mimic=None)
        out.append(joint)
    return out, repairs


def _check_mimics(source: str, joints: list[JointDescription]) -> None:
    by_name = {joint.name: joint for joint in joints}
    for joint in joints:
        if joint.mimic is None:
            continue
        label = f"joint '{joint.name}' <mimic>"
        target = by_name.get(joint.mimic.joint)
        if target is None:
            raise URDFError(source, label, f"mimics unknown joint '{joint.mimic.joint}'")
        for j in (joint, target):
            if JOINT_TYPES[j.type] != 1:
                raise URDFError(source, label, f"joint '{j.name}' is {j.type}; mimic needs one-DoF joints")
        seen, current = [joint.name], target
        while current.mimic is not None:
            if current.name in seen:
                raise URDFError(source, label, f"mimic cycle: {' -> '.join(seen + [current.name])}")
            seen.append(current.name)
            current = by_name[current.mimic.joint]


def _check_moving_mass(source: str, links: dict[str, LinkDescription], joints: list[JointDescription]) -> None:
    """Each moving joint must move some mass, or the mass matrix is singular."""
    children: dict[str, list[str]] = {}
    for joint in joints:
        children.setdefault(joint.parent, []).append(joint.child)

    def has_mass(link: str) -> bool:
        inertial = links[link].inertial
        return bool(inertial and (inertial.mass > 0.0 or inertial.inertia.any()))

    carries: dict[str, bool] = {}
    for joint in reversed(joints):  # leaves first, without recursion (deep chains)
        carries[joint.child] = has_mass(joint.child) or any(carries[c] for c in children.get(joint.child, []))
    for joint in joints:
        if JOINT_TYPES[joint.type] and not carries[joint.child]:
            raise URDFError(source, f"joint '{joint.name}'",
                            f"moves link '{joint.child}' whose subtree has no mass or rotational inertia "
                            "(the mass matrix would be singular); give it an <inertial> or make the joint fixed")


def _check_components(source: str, components: list[ComponentSpec], links: dict[str, LinkDescription],
                      joints: list[JointDescription]) -> None:
    _unique(source, "component", [c.name for c in components])
    targets = set(links) | {joint.name for joint in joints}
    for component in components:
        if component.attach_to not in targets:
            raise URDFError(source, f"component '{component.name}'",
                            f"attach_to '{component.attach_to}' is neither a link nor a joint")


def _check_extensions(source: str, extensions: Extensions, links: dict[str, LinkDescription],
                      joints: list[JointDescription]) -> None:
    """Names unique and distinct from links and joints; every referenced link and joint exists and
    has the type the element needs."""
    by_joint = {joint.name: joint for joint in joints}
    elements = [("loop_joint", e) for e in extensions.loop_joints]
    elements += [("coordinate_constraint", e) for e in extensions.coordinate_constraints]
    elements += [("spring_damper", e) for e in extensions.spring_dampers]
    elements += [("joint_spring", e) for e in extensions.joint_springs]
    elements += [("dc_motor", e) for e in extensions.dc_motors]
    elements += [("rolling_wheel", e) for e in extensions.rolling_wheels]
    elements += [("contact_pair", e) for e in extensions.contact_pairs]
    seen: dict[str, str] = {}
    for kind, element in elements:
        label = f"mb_sim {kind} '{element.name}'"
        if element.name in by_joint or element.name in links:
            what = "joint" if element.name in by_joint else "link"
            raise URDFError(source, label, f"has the name of a {what}; give it a name of its own")
        if element.name in seen:
            raise URDFError(source, label, f"the name is also used by an <{seen[element.name]}>")
        seen[element.name] = kind
        for role, link in _links_of(kind, element):
            if link not in links:
                raise URDFError(source, label, f"{role} link '{link}' does not exist")
        for role, joint in _joints_of(kind, element):
            if joint not in by_joint:
                raise URDFError(source, label, f"{role} '{joint}' does not exist")
            if JOINT_TYPES[by_joint[joint].type] != 1:
                raise URDFError(source, label, f"{role} '{joint}' is {by_joint[joint].type}; "
                                               "it needs a one-DoF joint (revolute, continuous or prismatic)")
    _check_motors_and_wheels(source, extensions, joints)
    _check_imus(source, extensions, links)
    for link in extensions.wrench_links:
        if link not in links:
            raise URDFError(source, f"mb_sim external_wrench link=\"{link}\"",
                            f"link '{link}' does not exist (links: {', '.join(links)})")


def _check_imus(source: str, extensions: Extensions, links: dict[str, LinkDescription]) -> None:
    """IMU names unique among IMUs (they may repeat a link's: Gazebo sensors often do) and each
    IMU's link exists."""
    seen: set[str] = set()
    for imu in extensions.imus:
        label = f"{imu.declared_in} '{imu.name}'"
        if imu.name in seen:
            raise URDFError(source, label, "another IMU has this name")
        seen.add(imu.name)
        if imu.link not in links:
            raise URDFError(source, label, f"link '{imu.link}' does not exist")


def _check_motors_and_wheels(source: str, extensions: Extensions, joints: list[JointDescription]) -> None:
    """One motor per joint; a wheel without an <axis> must be moved by a revolute joint."""
    driven: dict[str, str] = {}
    for motor in extensions.dc_motors:
        if motor.joint in driven:
            raise URDFError(source, f"mb_sim dc_motor '{motor.name}'",
                            f"joint '{motor.joint}' already has the motor '{driven[motor.joint]}'")
        driven[motor.joint] = motor.name
    by_child = {joint.child: joint for joint in joints}
    for wheel in extensions.rolling_wheels:
        joint = by_child.get(wheel.link)
        if wheel.axis is None and (joint is None or joint.type not in ("revolute", "continuous")):
            raise URDFError(source, f"mb_sim rolling_wheel '{wheel.name}'",
                            f"link '{wheel.link}' is not moved by a revolute or continuous joint; give the "
                            "wheel's spin axis with <axis xyz=...>")


def _links_of(kind: str, element) -> list[tuple[str, str]]:
    if kind == "loop_joint":
        return [("parent", element.parent), ("child", element.child)]
    if kind == "spring_damper":
        return [(f"marker {i}", marker.link) for i, marker in enumerate(element.markers)]
    if kind == "rolling_wheel":
        return [("wheel", element.link)]
    if kind == "contact_pair":
        return [("link1", element.link1), ("link2", element.link2)]
    return []


def _joints_of(kind: str, element) -> list[tuple[str, str]]:
    if kind == "coordinate_constraint":
        return [("joint", element.joint), ("reference joint", element.reference)]
    if kind in ("joint_spring", "dc_motor"):
        return [("joint", element.joint)]
    return []
