"""The root model of a URDF robot: its links (submodels) and joints (connections)."""
from __future__ import annotations

from sympy import Basic
from sympy.physics.mechanics import Point, ReferenceFrame, System

from mb_sim.model.base import INPUT_KINDS, ComponentBase, ComponentError, ConnectionBase, Input, ModelBase, symbol_name
from mb_sim.model.closures import CoordinateConstraint, LoopJoint
from mb_sim.model.body_contact import BodyContact
from mb_sim.model.contact import GroundContact
from mb_sim.model.joints import JointBase
from mb_sim.model.link import RigidLink
from mb_sim.model.orientation import orient_fixed
from mb_sim.model.actuators import DCMotor
from mb_sim.model.loads import Gravity, JointDissipation, JointEffort, JointLimitStop, JointSpring
from mb_sim.model.springs import SpringDamper
from mb_sim.model.wheels import RollingWheel

__all__ = ["Robot"]


class Robot(ModelBase):
    """A robot: links joined by joints into a tree, with the world frame ``world``.

    The root link's frame is the world frame: a root link named ``world`` stands for the world
    itself, any other root link is fixed to it.  ``system`` (after the define steps) holds the
    whole robot: coordinates and speeds in joint order (parents before children), bodies, loads
    and constraints.  Besides the tree's joints its connections are `others`: loop joints and
    coordinate constraints (which add constraints, no coordinates) and spring-dampers.
    """

    def __init__(self, name: str, links: list[RigidLink], joints: list[JointBase], root: str,
                 others: list[ConnectionBase] = ()) -> None:
        super().__init__(name)
        self._links = {link.name: link for link in links}
        self._joints = {joint.name: joint for joint in joints}
        self._others = {connection.name: connection for connection in others}
        #: Where the robot came from, for messages (the URDF path, or "<string>").
        self.source = "<model>"
        #: What the URDF loader repaired or accepted instead of refusing (mb_sim.urdf.Repair: element,
        #: name, problem, action; ``str()`` is one line); empty for a strict load.
        self.repairs: list = []
        #: The URDF's <collision> elements no contact uses, with the reason (mb_sim.urdf.SkippedCollision).
        self.skipped_collisions: list = []
        #: The IMUs (mb_sim.urdf.IMUDescription: name, link, mounting): outputs, not loads.
        self.imus: list = []
        #: The force-torque sensors (mb_sim.urdf.ForceTorqueDescription: name, joint, frame,
        #: direction): outputs, not loads; see :meth:`force_torque_subtree`.
        self.force_torques: list = []
        if root not in self._links:
            raise ComponentError(f"robot '{name}': root link '{root}' is not among its links")
        self.root_link = self._links[root]

    @property
    def links(self) -> dict[str, RigidLink]:
        """Links by name."""
        return dict(self._links)

    @property
    def joints(self) -> dict[str, JointBase]:
        """Joints by name, parents before children."""
        return dict(self._joints)

    def _others_of(self, kind: type) -> dict:
        return {name: c for name, c in self._others.items() if isinstance(c, kind)}

    @property
    def loop_joints(self) -> dict[str, LoopJoint]:
        """Loop-closure joints by name."""
        return self._others_of(LoopJoint)

    @property
    def coordinate_constraints(self) -> dict[str, CoordinateConstraint]:
        """Coordinate constraints by name."""
        return self._others_of(CoordinateConstraint)

    @property
    def rolling_wheels(self) -> dict[str, RollingWheel]:
        """Rolling wheels by name."""
        return self._others_of(RollingWheel)

    @property
    def spring_dampers(self) -> dict[str, SpringDamper]:
        """Spring-dampers by name."""
        return self._others_of(SpringDamper)

    @property
    def grounds(self) -> dict[str, GroundContact]:
        """Ground planes (contact) by name."""
        return self._others_of(GroundContact)

    @property
    def contact_pairs(self) -> dict[str, BodyContact]:
        """Contact pairs between links by name."""
        return self._others_of(BodyContact)

    def collect_inputs(self, kind: str | None = None) -> list[Input]:
        """Every component's inputs (:meth:`ComponentBase.inputs`), or those of `kind`: by kind in
        :data:`INPUT_KINDS` order, each kind in joint order (wrenches in link order; the order the
        equations take them)."""
        order = {name: k for k, name in enumerate(self.joints)}
        link_order = {name: k for k, name in enumerate(self.links)}
        found = [i for component in self.walk() for i in component.inputs()]
        _check_inputs(found, self.joints, self.links)
        found = sorted(found, key=lambda i: (INPUT_KINDS.index(i.kind), (link_order if i.kind == "wrench" else order)
                                             .get(i.joint, len(order))))
        return [i for i in found if kind in (None, i.kind)]

    def submodels(self) -> tuple[ModelBase, ...]:
        return tuple(self._links.values())

    def connections(self) -> tuple[ConnectionBase, ...]:
        return (*self._joints.values(), *self._others.values())

    def _define_connections(self) -> None:
        for joint in self._joints.values():
            description = joint.joint_description
            joint.parent = self._links[description.parent]
            joint.child = self._links[description.child]
            if description.mimic is not None:
                joint.mimicked = self._joints[description.mimic.joint]
        for connection in self._others.values():
            connection.resolve(self._links, self._joints)

    def _define_objects(self) -> None:
        self.world_frame = ReferenceFrame("world")
        self.world_origin = Point("world_origin")
        self.world_origin.set_vel(self.world_frame, 0)
        self._system = System(self.world_frame, self.world_origin)

    def _define_kinematics(self) -> None:
        root = self.root_link
        orient_fixed(root.frame, self.world_frame)
        root.origin.set_pos(self.world_origin, 0)
        root.origin.set_vel(self.world_frame, 0)

    def define_all(self) -> None:
        super().define_all()
        self._check_unique_symbol_names()
        for sensor in self.force_torques:
            self.force_torque_subtree(sensor)

    def force_torque_subtree(self, sensor) -> list[str]:
        """The links on the child side of force-torque `sensor`'s joint (its child link and every
        link below it, parents first): the side whose Newton-Euler balance gives the wrench through
        the joint (:mod:`mb_sim.symbolic.force_torque`).  ComponentError naming the sensor and the
        element when the joint does not exist, or when something besides that joint, gravity and
        contacts joins the side to the rest (a loop joint, a spring-damper with one end outside, a
        rolling wheel, a user load): the wrench through the joint cannot be told from the side's
        motion then, and a wrong one is worse than none."""
        label = f"force_torque sensor '{sensor.name}'"
        if sensor.joint not in self._joints:
            raise ComponentError(f"{label}: joint '{sensor.joint}' does not exist")
        side = [self._joints[sensor.joint].joint_description.child]
        for joint in self._joints.values():  # parents before children
            if joint.joint_description.parent in side:
                side.append(joint.joint_description.child)
        inside = set(side)
        for connection in self._others.values():
            links = _connected_links(connection)
            if isinstance(connection, (GroundContact, BodyContact, CoordinateConstraint)):
                continue  # contact forces are summed on the side; coordinate constraints act along joints
            if links is None or (inside & links and links - inside) or isinstance(connection, RollingWheel) and inside & links:
                raise ComponentError(f"{label} on joint '{sensor.joint}': {type(connection).__name__} "
                                     f"'{connection.name}' also joins the child side to the rest; its share of the "
                                     "wrench is unknown, so the sensor is refused")
        known = (Gravity, JointEffort, JointDissipation, JointLimitStop, JointSpring, DCMotor)
        touching = [self, *(self._links[name] for name in side),
                    *(j for j in self._joints.values() if j.joint_description.child in inside)]
        for component in touching:
            for group in component.load_groups:
                if type(group) not in known:
                    raise ComponentError(f"{label} on joint '{sensor.joint}': load group '{group.name}' "
                                         f"({type(group).__name__}) on {component!r} may act across the joint; "
                                         "the sensor is refused")
        return side

    def _check_unique_symbol_names(self) -> None:
        """Symbol names are component name + suffix, so names can collide (joint ``k``'s stop
        damping ``k_limit_damping`` and joint ``k_limit``'s damping): refused in one line naming both
        (SymPy would take two symbols of one name for the same quantity)."""
        seen: dict[str, tuple[ComponentBase, str]] = {}
        for component in list(self.walk())[1:]:
            for symbol, meaning in component.descriptions.items():
                name = symbol_name(symbol)
                owner, first = seen.setdefault(name, (component, meaning))
                if owner is not component:
                    raise ComponentError(f"symbol name '{name}' is made twice, for {first.split(' [')[0]} "
                                         f"({owner!r}) and for {meaning.split(' [')[0]} ({component!r}): the names "
                                         "of links and joints plus their symbols' suffixes collide; rename one of them")

    @property
    def parameters(self) -> dict[Basic, float]:
        """Every parameter symbol of the robot with its value, in component order."""
        values: dict[Basic, float] = {}
        for component in self.walk():
            values.update(component.parameter_values)
        return values

    @property
    def descriptions(self) -> dict[Basic, str]:
        """Descriptions of every symbol, coordinate and speed in the robot."""
        out: dict[Basic, str] = {}
        for component in self.walk():
            if component is not self:
                out.update(component.descriptions)
        return out

    def describe(self) -> str:
        """The component tree with every symbol, coordinate and speed, its description and value."""
        system = self.system
        loops = f"{len(self.loop_joints)} loop joints, " if self.loop_joints else ""
        lines = [f"Robot '{self.name}': {len(self._links)} links, {len(self._joints)} joints, {loops}"
                 f"{len(system.q)} coordinates, {len(system.u)} speeds, "
                 f"{len(system.holonomic_constraints)} holonomic constraints"]
        lines += _describe_component(self, 1)
        return "\n".join(lines)


def _symbol_line(symbol: Basic, description: str, value: float | None, indent: int) -> str:
    name = symbol_name(symbol)
    shown = f" = {value:.6g}" if value is not None else ""
    return f"{'  ' * indent}{name}{shown}: {description}"


def _describe_component(component: ComponentBase, indent: int) -> list[str]:
    lines = []
    children = list(component.children())
    for child in children:
        kind = type(child).__name__
        extra = ""
        if isinstance(child, JointBase):
            extra = f" ({child.joint_description.type}: {child.parent.name} -> {child.child.name})"
        elif isinstance(child, LoopJoint):
            extra = f" ({child.loop_description.type} loop closure: {child.parent.name} -> {child.child.name})"
        elif isinstance(child, SpringDamper):
            extra = f" ({child.link0.name} -> {child.link1.name})"
        elif isinstance(child, RollingWheel):
            extra = f" (link {child.wheel.name} rolls on z = 0)"
        elif isinstance(child, GroundContact):
            extra = f" ({len(child.shapes)} collision shapes, {len(child.features)} contact points)"
        elif isinstance(child, BodyContact):
            extra = (f" ({child.pair_description.link1} <-> {child.pair_description.link2}: "
                     f"{len(child.checks)} point-shape checks, "
                     f"{sum(g.count for g in child.slot_groups)} contact slots)")
        elif isinstance(child, RigidLink) and child.is_massless:
            extra = " (massless)"
        lines.append(f"{'  ' * indent}{kind} '{child.name}'{extra}")
        values = child.parameter_values
        for symbol, description in child.descriptions.items():
            lines.append(_symbol_line(symbol, description, values.get(symbol), indent + 1))
        lines += _describe_component(child, indent + 1)
    return lines


def _connected_links(connection: ConnectionBase) -> set[str] | None:
    """The names of the links a loop joint, spring-damper or rolling wheel acts on (None for a
    connection of another kind: unknown)."""
    if isinstance(connection, LoopJoint):
        return {connection.loop_description.parent, connection.loop_description.child}
    if isinstance(connection, SpringDamper):
        return {marker.link for marker in connection.spring_description.markers}
    if isinstance(connection, RollingWheel):
        return {connection.wheel_description.link}
    return None


def _check_inputs(inputs: list[Input], joints: dict, links: dict) -> None:
    """Inputs are addressed by name: an effort by its joint's (one per joint), a voltage by its
    motor's (one per motor); each acts on a joint of the robot, a wrench on a link."""
    owners: dict[tuple[str, str], Input] = {}
    for i in inputs:
        who = f"{type(i.component).__name__} {getattr(i.component, 'name', '?')!r}"
        if i.kind == "wrench":
            if i.joint not in links:
                raise ComponentError(f"{who}: its wrench input {i.name!r} must act on a link of the robot "
                                     f"(link {i.joint!r})")
        elif i.joint not in joints or (i.kind == "effort" and i.name != i.joint):
            raise ComponentError(f"{who}: its {i.kind} input {i.name!r} must act on a joint of the robot"
                                 + (" and be named after it" if i.kind == "effort" else "") + f" (joint {i.joint!r})")
        other = owners.setdefault((i.kind, i.name), i)
        if other is not i:
            raise ComponentError(f"{who}: {i.kind} {i.name!r} is already an input of "
                                 f"{type(other.component).__name__} {getattr(other.component, 'name', '?')!r}")
