"""Build the component model of a robot from its validated URDF description."""
from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Mapping

import numpy as np

from mb_sim.model.actuators import DCMotor
from mb_sim.model.base import ComponentError, ConnectionBase, LoadGroupBase
from mb_sim.model.closures import CoordinateConstraint, LoopJoint
from mb_sim.model.body_contact import BodyContact
from mb_sim.model.contact import GroundContact
from mb_sim.model.contact_law import SUPPORTS, stable_link_values
from mb_sim.model.joints import JOINT_CLASSES, JointBase, PrismaticJoint, RevoluteJoint
from mb_sim.model.link import RigidLink
from mb_sim.model.loads import Gravity, JointDissipation, JointEffort, JointLimitStop, JointSpring
from mb_sim.model.registry import component_class
from mb_sim.model.robot import Robot
from mb_sim.model.springs import SpringDamper
from mb_sim.model.wheels import RollingWheel
from mb_sim.model.wrench import ExternalWrench
from mb_sim.urdf import ComponentSpec, RobotDescription, URDFError, URDFWarning, parse_urdf
from mb_sim.urdf.collision import contact_effective_mass, self_collision_pairs
from mb_sim.urdf.errors import warn_user
from mb_sim.urdf.size import check_model_size, constraint_rows

__all__ = ["build_robot", "load_urdf"]


def load_urdf(path_or_xml: str | os.PathLike, strict: bool = False, floating_base: bool = False,
              xacro_args: Mapping[str, object] | None = None, ground: bool | str | Iterable[str] = False,
              wrench_links: Iterable[str] = ()) -> Robot:
    """Parse a URDF (file path or XML text) into a robot model with all define steps run.

    A ``.xacro`` file (or text using xacro markup) is expanded first with `xacro_args`, e.g.
    ``load_urdf("arm.urdf.xacro", xacro_args={"prefix": "left_"})``; the model, and so the compiled
    code's cache key, comes from the expanded URDF.

    What the loader repaired or accepted instead of refusing (mass properties judged per moving
    body, rounding repaired, a ``<mimic>`` on a fixed joint ignored) is warned about once each
    (:class:`mb_sim.urdf.RepairWarning`) and listed in ``robot.repairs``; with `strict` each is a
    URDFError instead.  A model above :data:`mb_sim.urdf.size.MAX_MASS_MATRIX_ENTRIES` is refused
    before anything is built (it would not derive and compile in reasonable time).

    A root link not named ``world`` is fixed to the world (a robot that looks mobile gets one
    :class:`mb_sim.urdf.FixedBaseWarning` saying so); `floating_base` joins it to the world by a
    6-DoF ``floating`` joint ``root_joint`` instead, without editing the file.  `ground` adds the
    plane z = 0 (default contact parameters) where the file has no ``<ground>``: the links'
    ``<collision>`` shapes then touch it (:mod:`mb_sim.model.contact`).  `ground` given as link
    names (``ground=["left_foot", "right_foot"]``) makes only their shapes touch it (the file's
    ground or the default one), as ``<ground links="left_foot right_foot"/>`` does: a humanoid's
    many mesh shapes otherwise make code too large to compile.  `wrench_links` take an external
    wrench (six inputs each: :mod:`mb_sim.model.wrench`), as ``<mb_sim><external_wrench link>`` does.

    Raises
    ------
    URDFError
        The URDF cannot be simulated; the message names the file and the element.
    """
    description = parse_urdf(path_or_xml, strict=strict, floating_base=floating_base, xacro_args=xacro_args,
                             ground=ground, wrench_links=wrench_links)
    check_model_size(description.source, description.name, description.joints, description.root,
                     constraint_rows(description))
    robot = build_robot(description)
    try:
        robot.define_all()
    except ComponentError as err:  # e.g. two components' symbols share a name
        raise URDFError(robot.source, f"robot '{robot.name}'", str(err)) from None
    return robot


def build_robot(description: RobotDescription) -> Robot:
    """Links, joints and load groups for `description` (define steps not yet run).

    Every moving one-DoF joint that is neither a mimic nor driven by a ``<dc_motor>`` (whose input
    is a voltage) gets an effort input; joints with URDF
    ``<dynamics>`` get damping and friction, joints with position limits stops; the robot gets
    gravity, and the ``<mb_sim>`` extensions their components: loop joints, coordinate
    constraints, spring-dampers (connections) and joint springs (load groups of their joint).
    """
    links = [RigidLink(name, link) for name, link in description.links.items()]
    joints = [JOINT_CLASSES[j.type](j.name, j) for j in description.joints]
    robot = Robot(description.name, links, joints, description.root, _extension_connections(description))
    robot.source = description.source
    robot.repairs = list(description.repairs)
    robot.skipped_collisions = list(description.skipped_collisions)
    robot.imus = list(description.extensions.imus)
    robot.force_torques = list(description.extensions.force_torques)
    robot.add_load_group(Gravity("gravity", description.gravity))
    motors = {motor.joint: motor for motor in description.extensions.dc_motors}
    for joint in joints:
        if not isinstance(joint, (RevoluteJoint, PrismaticJoint)):
            continue
        if joint.name in motors:
            joint.add_load_group(DCMotor(motors[joint.name].name, motors[joint.name]))
        elif not joint.is_mimic:
            joint.add_load_group(JointEffort(joint.name))
        jd = joint.joint_description
        if jd.damping or jd.friction:
            joint.add_load_group(JointDissipation(joint.name, jd.damping, jd.friction))
        if jd.limit.lower is not None or jd.limit.upper is not None:
            joint.add_load_group(JointLimitStop(joint.name, jd.limit.lower, jd.limit.upper))
    for spring in description.extensions.joint_springs:
        robot.joints[spring.joint].add_load_group(JointSpring(spring.name, spring))
    for link in description.extensions.wrench_links:
        robot.links[link].add_load_group(ExternalWrench(f"{link}_wrench"))
    for spec in description.components:
        _attach_component(robot, spec, description.source)
    return robot


def _extension_connections(description: RobotDescription) -> list[ConnectionBase]:
    """Loop joints, coordinate constraints, rolling wheels and spring-dampers, in that order;
    springs with a user force law are numbered in document order (the index their generated code
    calls back with)."""
    extensions = description.extensions
    connections: list[ConnectionBase] = [LoopJoint(loop.name, loop) for loop in extensions.loop_joints]
    connections += [CoordinateConstraint(c.name, c) for c in extensions.coordinate_constraints]
    connections += [RollingWheel(w.name, w) for w in extensions.rolling_wheels]
    laws = iter(range(len(extensions.spring_dampers)))
    connections += [SpringDamper(s.name, s, next(laws) if s.law is not None else None)
                    for s in extensions.spring_dampers]
    mass = sum(link.inertial.mass for link in description.links.values() if link.inertial is not None)
    gravity = float(np.linalg.norm(description.gravity))
    if extensions.ground is not None:
        fixed = description.fixed_to_world()
        shapes = [c for c in description.collisions if c.link not in fixed
                  and (extensions.ground.links is None or c.link in extensions.ground.links)]  # paired links' shapes are read too
        light = (contact_effective_mass(shapes, description.links, description.joints)
                 or _lightest_body(description, shapes))
        ground = GroundContact(extensions.ground, shapes, mass, gravity, light,
                               _link_values(description, shapes, mass * gravity))
        ground.link_notes = {link: (*c.read, *(f"not simulated: {line}" for line in c.ignored))
                             for link, c in extensions.link_contacts.items() if link in ground.link_values}
        connections.append(ground)
    for pair in extensions.contact_pairs:
        _check_pair(description, pair)
    connections += [BodyContact(pair, description.collisions, mass, gravity, _lightest_point(description, pair),
                                carried=_carried_mass(description, pair))
                    for pair in extensions.contact_pairs]
    if extensions.self_collision is not None:
        connections.append(_self_collision(description, mass, gravity))
    return connections


def _link_values(description: RobotDescription, shapes: list, weight: float) -> dict[str, dict[str, float]]:
    """The contact parameters each link of `shapes` gives (:class:`LinkContactDescription`), a
    stiffness or linear damping RK4 cannot take at 1 ms on the link's lightest contact point
    brought down to what it takes, with a warning naming the link (Gazebo's ``kp`` 5e5 N/m on a
    small wheel)."""
    values = {}
    exponent = description.extensions.ground.exponent
    for link, contact in description.extensions.link_contacts.items():
        own = [shape for shape in shapes if shape.link == link]
        if not own:
            continue
        lightest = contact_effective_mass(own, description.links, description.joints) or 0.0
        values[link], notes = stable_link_values(contact.given(), lightest, exponent, weight / SUPPORTS)
        for note in notes:
            warn_user(f"{description.source}: link '{link}' contact {note} (set_parameters changes it)", URDFWarning)
    return values


def _self_collision(description: RobotDescription, mass: float, gravity: float) -> BodyContact:
    """The ``<self_collision>`` component: one BodyContact over all the link pairs the filter makes
    (:func:`mb_sim.urdf.collision.self_collision_pairs`), sharing one parameter set; the pairs it
    skips (shapes that cannot touch, pairs with their own ``<contact_pair>``) are warned about once
    and kept in the description's ``skipped``."""
    spec = description.extensions.self_collision
    pairs, skipped = self_collision_pairs(spec, description, description.collisions)
    spec = dataclasses.replace(spec, pairs=tuple(pairs), skipped=tuple(skipped))
    unusable = [(a, b, why) for a, b, why in skipped if not why.startswith("has its own")]
    if unusable:
        listed = ", ".join(f"{a}:{b}" for a, b, _ in unusable[:6]) + (" ..." if len(unusable) > 6 else "")
        warn_user(f"{description.source}: mb_sim self_collision '{spec.name}': {len(unusable)} link pair(s) skipped, "
                  f"their shapes cannot touch (only spheres and capsules are touched): {listed}", URDFWarning)
    links = {link for pair in pairs for link in pair}
    shapes = [c for c in description.collisions if c.link in links]
    contact = BodyContact(spec, shapes, mass, gravity, _lightest_body(description, shapes), pairs=pairs)
    _check_self_collision_size(description, contact)
    return contact


#: The most point-shape checks a ``<self_collision>`` may make: each writes about 7 kB of C (its
#: force and its ``contact_states`` row; 44 checks of a 6-link arm: 0.29 MB), so 200 stay well
#: below the 2 MB mb_sim compiles (mb_sim.codegen.compiler.MAX_SOURCE_BYTES) with room for the
#: rest of the model, and derive in about a minute.
MAX_SELF_COLLISION_CHECKS = 200


def _check_self_collision_size(description: RobotDescription, contact: BodyContact) -> None:
    """A one-line URDFError naming the model and the largest pairs where `contact` (the
    ``<self_collision>``) makes more checks than :data:`MAX_SELF_COLLISION_CHECKS`."""
    if len(contact.checks) <= MAX_SELF_COLLISION_CHECKS:
        return
    sizes = sorted(((sum(len(c) for _, _, c in group), pair) for pair, group in contact.groups), reverse=True)
    largest = ", ".join(f"{a}:{b} ({n})" for n, (a, b) in sizes[:4])
    raise URDFError(description.source, f"mb_sim self_collision '{contact.name}'",
                    f"robot '{description.name}': {len(contact.checks)} point-shape checks in {len(contact.pairs)} link "
                    f"pairs, above the {MAX_SELF_COLLISION_CHECKS} whose code mb_sim compiles in reasonable time; "
                    f"restrict it with links=\"...\" or exclude=\"linkA:linkB ...\" (largest pairs: {largest})")


def _check_pair(description: RobotDescription, pair) -> None:
    """URDFError for a ``<contact_pair>`` that can never touch: a link without a collision shape
    (or with only shapes left out: inside another), or two links that never move."""
    where = f'mb_sim contact_pair name="{pair.name}"'
    for link in (pair.link1, pair.link2):
        if not any(c.link == link for c in description.collisions):
            skipped = [c for c in description.skipped_collisions if c.link == link]
            why = f" (skipped: {skipped[0].reason})" if skipped else ""
            raise URDFError(description.source, where, f"link '{link}' has no <collision> shape the pair can use{why}: "
                            "the pair can never touch")
    fixed = description.fixed_to_world()
    if pair.link1 in fixed and pair.link2 in fixed:
        raise URDFError(description.source, where, f"links '{pair.link1}' and '{pair.link2}' are both fixed to the "
                        "world: the pair can never move against each other")


def _carried_mass(description: RobotDescription, pair) -> float | None:
    """The mass of the lighter moving rigid body of a pair's two links (what the contact carries
    at rest), None where neither has one."""
    fixed = description.fixed_to_world()
    masses = [_lightest_body(description, [c for c in description.collisions if c.link == link])
              for link in (pair.link1, pair.link2) if link not in fixed]
    masses = [m for m in masses if m]
    return min(masses) if masses else None


def _lightest_point(description: RobotDescription, pair) -> float | None:
    """The lightest contact point of a pair's two links (its defaults keep RK4 stable there: a
    cube's corner turning it about its centre is a quarter of its mass)."""
    fixed = description.fixed_to_world()  # (a table's shapes do not move: the world's mass is not theirs)
    shapes = [c for c in description.collisions if c.link in (pair.link1, pair.link2) and c.link not in fixed]
    return contact_effective_mass(shapes, description.links, description.joints) or _lightest_body(description, shapes)


def _lightest_body(description: RobotDescription, shapes: list) -> float | None:
    """The mass of the lightest rigid body (links joined by fixed joints) holding one of `shapes`
    (what the default contact parameters keep RK4 stable for); None if none has mass."""
    body = {}
    for joint in description.joints:  # parents before children
        body[joint.child] = body.get(joint.parent, joint.parent) if joint.type == "fixed" else joint.child
    masses: dict[str, float] = {}
    for name, link in description.links.items():
        if link.inertial is not None:
            key = body.get(name, name)
            masses[key] = masses.get(key, 0.0) + link.inertial.mass
    touching = [masses.get(body.get(s.link, s.link), 0.0) for s in shapes]
    touching = [m for m in touching if m > 0]
    return min(touching) if touching else None


def _attach_component(robot: Robot, spec: ComponentSpec, source: str) -> None:
    """Instantiate a registered component named in the URDF and attach it."""
    label = f"component '{spec.name}'"
    try:
        cls = component_class(spec.type)
    except KeyError as err:
        raise URDFError(source, label, err.args[0]) from None
    except Exception as err:  # a broken plug-in must not surface as a deep traceback
        raise URDFError(source, label, f"loading registered component '{spec.type}' failed: {err}") from None
    if not (isinstance(cls, type) and issubclass(cls, LoadGroupBase)):
        raise URDFError(source, label, f"registered component '{spec.type}' is not a load group class")
    target: JointBase | RigidLink = robot.joints.get(spec.attach_to) or robot.links[spec.attach_to]
    try:
        target.add_load_group(cls.from_urdf(spec.name, spec.parameters))
    except ComponentError as err:
        raise URDFError(source, label, str(err)) from None
    if not _contributes(cls):
        warnings.warn(f"{source}: {label}: {cls.__name__} ('{spec.type}') overrides none of _define_loads, "
                      f"_define_constraints, inputs(): it applies no force", URDFWarning, stacklevel=2)


#: The hooks through which a load group acts on the robot; a class overriding none of them loads
#: and changes nothing (e.g. a user component written without ``_define_loads``).
_CONTRIBUTING_HOOKS = ("_define_loads", "_define_constraints", "inputs", "electrical_states", "reflected_inertia")


def _contributes(cls: type) -> bool:
    """Whether a load group class overrides at least one of the hooks that act on the robot."""
    return any(getattr(cls, hook) is not getattr(LoadGroupBase, hook) for hook in _CONTRIBUTING_HOOKS)
