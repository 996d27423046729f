"""What a :class:`~mb_sim.sim.Simulator` reads of its robot, as plain data: names, joints and
their limits, inputs, stops, motors, springs, sensors, contacts; no SymPy object.

The component model (:class:`mb_sim.model.Robot`) holds these among its SymPy expressions;
:func:`robot_facts` gathers them once, and :class:`RobotFacts` goes to and from JSON, so a robot
loaded from the cache (:mod:`mb_sim.sim.robot_cache`) needs neither its URDF parsed nor SymPy
imported: the simulator of a cached robot starts in milliseconds.  A *term* is a parameter's name
(its value is read from the parameters at run time) or a number.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

__all__ = ["AnchorFacts", "ForceTorqueFacts", "ImuFacts", "InputFacts", "JointFacts", "MotorFacts", "RobotFacts",
           "ROBOT_SIZE_FLOOR", "SpringFacts", "StopFacts", "Term", "as_facts", "contact_loads", "robot_facts",
           "robot_size", "unknown_component"]

#: The robot size [m] below which linear velocities are bounded as for this size: 1 m, so a small
#: body falling freely (no ground yet) runs 100 s at 1 ms before its speed is judged a runaway.
ROBOT_SIZE_FLOOR = 1.0
#: A parameter's name, or a number.
Term = str | float


@dataclass(frozen=True)
class JointFacts:
    """One joint: its type, links, coordinates and speeds (names, the speeds' units) and URDF limits
    (None or inf where the URDF gives none)."""

    name: str
    type: str
    parent: str
    child: str
    coordinates: tuple[str, ...]
    speeds: tuple[str, ...]
    speed_units: tuple[str, ...]
    lower: float | None = None
    upper: float | None = None
    effort: float = math.inf
    velocity: float = math.inf


@dataclass(frozen=True)
class InputFacts:
    """One input: its name (a joint for efforts, a motor for voltages, ``<link>.<component>`` for
    a wrench), the joint it acts on (a wrench: the link), its limit."""

    name: str
    joint: str
    limit: float


@dataclass(frozen=True)
class StopFacts:
    """The stops of a joint with URDF position limits (a JointLimitStop): stiffness and damping
    parameters, the bounds (terms; None where the URDF has none)."""

    joint: str
    stiffness: str
    damping: str
    lower: Term | None
    upper: Term | None
    lower_value: float | None
    upper_value: float | None


@dataclass(frozen=True)
class MotorFacts:
    """A DC motor, for the energy watch: its joint's speed, gear ratio n and rotor inertia J, its
    current state and inductance L (None, 0 for a motor without inductance)."""

    speed: str
    gear_ratio: Term
    rotor_inertia: Term
    current: str | None
    inductance: Term


@dataclass(frozen=True)
class SpringFacts:
    """A spring-damper, for the energy watch: its velocity offset and 0/1 switch."""

    name: str
    velocity_offset: Term
    active: Term


@dataclass(frozen=True)
class AnchorFacts:
    """A ground or contact pair with stiction: per contact feature (rows of ``contact_states`` by
    name) its three anchor states, its friction (a term) and the link whose axes its anchor is in
    (None: the world's); the stiction stiffness parameter."""

    features: tuple[str, ...]
    states: tuple[tuple[str, str, str], ...]
    stiffness: str
    frictions: tuple[Term, ...]
    frames: tuple[str | None, ...]


@dataclass(frozen=True)
class ManifoldFacts:
    """The contact slots of one link pair (:mod:`mb_sim.model.manifold`), for the simulator that
    fills them: its links, its shapes (``(shape, size, xyz, rotation row-major, hull points
    flattened)`` in each link's frame), the shape pairs to check (indices into the two lists), per
    slot its nine parameters and, with stiction, its anchor's three states."""

    component: str
    link1: str
    link2: str
    shapes1: tuple
    shapes2: tuple
    pairs: tuple[tuple[int, int], ...]
    parameters: tuple[tuple[str, ...], ...]
    anchors: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class ImuFacts:
    """An IMU: its link and mounting (a URDF origin in the link)."""

    name: str
    link: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]


@dataclass(frozen=True)
class ForceTorqueFacts:
    """A force-torque sensor: its joint's child link, the link whose axes it reports in (``frame``
    "child" or "parent" says which), its sign (+1 parent_to_child) and the links of its child side."""

    name: str
    child: str
    frame_link: str
    frame: str
    sign: float
    side: tuple[str, ...]


_NESTED = {"joints": JointFacts, "efforts": InputFacts, "voltages": InputFacts, "wrenches": InputFacts,
           "stops": StopFacts,
           "motors": MotorFacts, "springs": SpringFacts, "anchors": AnchorFacts, "imus": ImuFacts,
           "manifolds": ManifoldFacts,
           "force_torques": ForceTorqueFacts}


@dataclass(frozen=True)
class RobotFacts:
    """Everything the simulator reads of its robot (see the module docstring).

    ``contact_links`` gives, per row of ``contact_states``, the link the force acts on and the one
    that gets its opposite (None: a ground); ``contact_loads`` the same as (link, sign) lists, as
    the force-torque sensors sum them.  ``unjudged_energy`` says why the energy watch cannot judge
    this robot (a component it does not know), or is None.
    """

    name: str
    source: str
    coordinate_names: tuple[str, ...]
    speed_names: tuple[str, ...]
    parameter_names: tuple[str, ...]
    parameter_values: tuple[float, ...]
    electrical_state_names: tuple[str, ...]
    joints: tuple[JointFacts, ...]
    efforts: tuple[InputFacts, ...]
    voltages: tuple[InputFacts, ...]
    size: float
    stops: tuple[StopFacts, ...] = ()
    motors: tuple[MotorFacts, ...] = ()
    springs: tuple[SpringFacts, ...] = ()
    anchors: tuple[AnchorFacts, ...] = ()
    manifolds: tuple[ManifoldFacts, ...] = ()
    imus: tuple[ImuFacts, ...] = ()
    force_torques: tuple[ForceTorqueFacts, ...] = ()
    contact_links: tuple[tuple[str, str | None], ...] = ()
    contact_loads: tuple[tuple[tuple[str, float], ...], ...] = ()
    loop_joints: tuple[str, ...] = ()
    rolling_wheels: tuple[str, ...] = ()
    #: Per named constraint, the links its component joins (see :func:`_constraint_links`).
    constraint_links: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unjudged_energy: str | None = None
    #: The robot's weight [N] (its links' masses under its gravity).
    weight: float = 0.0
    #: The external wrench inputs (:mod:`mb_sim.model.wrench`), six per link, after the voltages.
    wrenches: tuple[InputFacts, ...] = ()
    #: Per noncontributing force (seed 000's auxiliary data handler), its symbol's name and the
    #: links of the side it acts on (:mod:`mb_sim.symbolic.noncontributing`).
    noncontributing: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def joint(self, name: str) -> JointFacts:
        """Joint `name` (KeyError naming it otherwise)."""
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise KeyError(f"robot '{self.name}' has no joint {name!r}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (:meth:`from_json` reads it back); infinities as strings."""
        return _jsonable(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RobotFacts:
        """The facts of :meth:`to_json`'s dict (KeyError, TypeError or ValueError if it is not one)."""
        values = {}
        for f in fields(cls):
            value = _from_jsonable(data[f.name])
            if f.name in _NESTED:
                value = tuple(_nested(_NESTED[f.name], item) for item in value)
            elif f.name in ("contact_links",):
                value = tuple(tuple(item) for item in value)
            elif f.name in ("constraint_links", "noncontributing"):
                value = _tuples(value)
            elif f.name == "contact_loads":
                value = tuple(tuple((link, float(sign)) for link, sign in row) for row in value)
            elif isinstance(value, list):
                value = tuple(value)
            values[f.name] = value
        return cls(**values)


def _nested(kind: type, item: dict[str, Any]) -> Any:
    """A nested facts record from its JSON dict: lists back to tuples."""
    return kind(**{key: _tuples(value) for key, value in item.items()})


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _jsonable(value: Any) -> Any:
    """`value` with tuples as lists and non-finite floats as strings ("inf", "-inf", "nan")."""
    if isinstance(value, dict):
        return {key: _jsonable(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def _from_jsonable(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"float"}:
        return float(value["float"])
    if isinstance(value, dict):
        return {key: _from_jsonable(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_from_jsonable(v) for v in value]
    return value


# -- from the component model -----------------------------------------------------------------------
def as_facts(robot) -> RobotFacts:
    """`robot` if it is facts already, else the facts of the :class:`mb_sim.model.Robot` it is."""
    return robot if isinstance(robot, RobotFacts) else robot_facts(robot)


def robot_facts(robot) -> RobotFacts:
    """The facts of `robot` (a :class:`mb_sim.model.Robot`, defined)."""
    from mb_sim.model import symbol_name

    names = {"q": [symbol_name(q) for q in robot.system.q], "u": [symbol_name(u) for u in robot.system.u]}
    parameters = robot.parameters
    known = {str(p) for p in parameters}

    def term(value) -> Term:
        return str(value) if str(value) in known else float(value)

    efforts, voltages = robot.collect_inputs("effort"), robot.collect_inputs("voltage")
    return RobotFacts(
        name=robot.name, source=robot.source,
        coordinate_names=tuple(names["q"]), speed_names=tuple(names["u"]),
        parameter_names=tuple(str(p) for p in parameters),
        parameter_values=tuple(float(v) for v in parameters.values()),
        electrical_state_names=tuple(symbol_name(state) for component in robot.walk()
                                     for state, _, _ in component.electrical_states()),
        joints=tuple(_joint(joint, symbol_name) for joint in robot.joints.values()),
        efforts=tuple(InputFacts(i.name, i.joint, float(i.limit)) for i in efforts),
        voltages=tuple(InputFacts(i.name, i.joint, float(i.limit)) for i in voltages),
        size=robot_size(robot),
        stops=tuple(_stops(robot, term)), motors=tuple(_motors(robot, term, symbol_name)),
        springs=tuple(SpringFacts(name, term(s.velocity_offset), term(s.active))
                      for name, s in robot.spring_dampers.items()),
        anchors=tuple(_anchors(robot, symbol_name, term)),
        manifolds=tuple(_manifolds(robot, symbol_name)),
        imus=tuple(ImuFacts(imu.name, imu.link, tuple(float(v) for v in imu.xyz), tuple(float(v) for v in imu.rpy))
                   for imu in getattr(robot, "imus", [])),
        force_torques=tuple(_force_torque(robot, sensor) for sensor in getattr(robot, "force_torques", [])),
        contact_links=tuple(_contact_links(robot)), contact_loads=tuple(_contact_loads(robot)),
        loop_joints=tuple(robot.loop_joints), rolling_wheels=tuple(robot.rolling_wheels),
        constraint_links=tuple(_constraint_links(robot)), unjudged_energy=_unjudged(robot), weight=_weight(robot),
        wrenches=tuple(InputFacts(i.name, i.joint, float(i.limit)) for i in robot.collect_inputs("wrench")),
        noncontributing=tuple(_noncontributing(robot)),
    )


def _noncontributing(robot) -> list[tuple[str, tuple[str, ...]]]:
    """Per noncontributing force, its symbol's name and the links of its side."""
    handler = getattr(robot, "_auxiliary_handler", None)
    if handler is None or not handler.noncontributing_forces:
        return []
    from mb_sim.symbolic.noncontributing import noncontributing_sides

    return [(str(force.symbol), tuple(links)) for force, _, links in noncontributing_sides(robot)]


def _joint(joint, symbol_name) -> JointFacts:
    d = joint.joint_description
    return JointFacts(joint.name, d.type, d.parent, d.child, tuple(symbol_name(q) for q in joint.q),
                      tuple(symbol_name(u) for u in joint.u), tuple(unit for _, _, unit in joint.speeds),
                      None if d.limit.lower is None else float(d.limit.lower),
                      None if d.limit.upper is None else float(d.limit.upper),
                      float(d.limit.effort), float(d.limit.velocity))


def _stops(robot, term) -> list[StopFacts]:
    from mb_sim.model import JointLimitStop

    return [StopFacts(joint.name, str(g.k), str(g.c), *(term(g.bounds[s]) if s in g.bounds else None
                                                          for s in ("lower", "upper")),
                      None if g.lower is None else float(g.lower), None if g.upper is None else float(g.upper))
            for joint in robot.joints.values() for g in joint.load_groups if isinstance(g, JointLimitStop)]


def _motors(robot, term, symbol_name) -> list[MotorFacts]:
    from mb_sim.model import DCMotor

    return [MotorFacts(symbol_name(joint.u[0]), term(g.n), term(g.J),
                       symbol_name(g.current) if g.inductive else None, term(g.L) if g.inductive else 0.0)
            for joint in robot.joints.values() for g in joint.load_groups if isinstance(g, DCMotor)]


def _anchors(robot, symbol_name, term) -> list[AnchorFacts]:
    return [AnchorFacts(tuple(f"{contact.name}/{f.name}" for f in contact.features),
                        tuple(tuple(symbol_name(s) for s in anchor) for anchor in contact.anchors),
                        str(contact.k_t), tuple(term(mu) for mu in contact.anchor_frictions),
                        tuple(contact.anchor_frames))
            for contact in robot.walk() if getattr(contact, "anchors", None)]


def _force_torque(robot, sensor) -> ForceTorqueFacts:
    joint = robot.joints[sensor.joint].joint_description
    frame = joint.child if sensor.frame == "child" else joint.parent
    return ForceTorqueFacts(sensor.name, joint.child, frame, sensor.frame,
                            1.0 if sensor.measure_direction == "parent_to_child" else -1.0,
                            tuple(robot.force_torque_subtree(sensor)))


def _manifolds(robot, symbol_name) -> list[ManifoldFacts]:
    """Every link pair's contact slots, with the shapes the simulator checks."""
    found = []
    for contact in robot.walk():
        groups = getattr(contact, "slot_groups", [])
        offset = len(getattr(contact, "checks", []))
        for group in groups:
            shapes = [list({id(pair[side]): pair[side] for pair in group.shape_pairs}.values()) for side in (0, 1)]
            index = [{id(shape): k for k, shape in enumerate(side)} for side in shapes]  # (shapes hold arrays)
            pairs = tuple((index[0][id(first)], index[1][id(second)]) for first, second in group.shape_pairs)
            anchors = tuple(tuple(symbol_name(s) for s in anchor)
                            for anchor in contact.anchors[offset:offset + group.count]) if contact.anchors else ()
            offset += group.count
            found.append(ManifoldFacts(contact.name, group.link1, group.link2,
                                       *(tuple(_shape_record(shape) for shape in side) for side in shapes), pairs,
                                       tuple(tuple(str(s) for s in row) for row in group.symbols), anchors))
    return found


def _shape_record(shape) -> tuple:
    """A collision shape as plain numbers: (shape, size, xyz, rotation row-major, its hull's vertices
    flattened: a mesh's all, scaled)."""
    hull = shape.hull if shape.hull is not None else shape.points
    points = () if hull is None else tuple(float(v) for v in np.asarray(hull, float).ravel())
    return (shape.shape, tuple(float(v) for v in shape.size), tuple(float(v) for v in shape.xyz),
            tuple(float(v) for v in np.asarray(shape.rotation, float).ravel()), points)


def _constraint_links(robot) -> list[tuple[str, tuple[str, ...]]]:
    """(name, links) of every component that adds constraints: the links it joins (a loop joint's
    parent and child, a rolling wheel's link, a mimic joint's links and those of the joint it
    follows), on which its constraint forces act."""
    found = []
    for component in list(robot.walk())[1:]:
        own = getattr(component, "_system", None)
        if own is None or not (own.holonomic_constraints or own.nonholonomic_constraints):
            continue
        mimicked = getattr(component, "mimicked", None)
        owners = (component, mimicked) if mimicked is not None else (component,)
        links = [getattr(owner, name, None) for owner in owners for name in ("parent", "child", "wheel")]
        names = tuple(dict.fromkeys(name for name in (getattr(link, "name", None) for link in links)
                                    if name in robot.links))
        found.append((component.name, names))
    return found


def _contact_links(robot) -> list[tuple[str, str | None]]:
    """Per contact feature, in the derivation's order, the link its force acts on and the link that
    gets the opposite force (None for a ground).  A feature is named ``<link>/<collision
    index>/<feature>``, plus ``@<other link>/<collision index>`` in a contact pair; a link's name
    may hold a /."""
    links = []
    for component in robot.walk():
        if hasattr(component, "row_links"):  # a contact pair says it
            links += component.row_links
            continue
        for feature in getattr(component, "features", []) if hasattr(component, "kinematic_loads") else []:
            own, _, other = feature.name.partition("@")
            links.append((own.rsplit("/", 2)[0], other.rsplit("/", 1)[0] if other else None))
    return links


def _contact_loads(robot) -> list[tuple[tuple[str, float], ...]]:
    """Per row of ``contact_states``, the links its force acts on with the sign (only for robots
    with force-torque sensors or noncontributing forces, which sum them)."""
    handler = getattr(robot, "_auxiliary_handler", None)
    if not getattr(robot, "force_torques", []) and not (handler is not None and handler.noncontributing_forces):
        return []
    return [tuple(row) for row in contact_loads(robot)]


def _weight(robot) -> float:
    """The links' masses (as the URDF gives them) under the robot's gravity (its parameters' values) [N]."""
    from mb_sim.model import Gravity

    mass = sum(link.link_description.inertial.mass for link in robot.links.values()
               if link.link_description.inertial is not None)
    values = robot.parameters
    gravity = [float(component.xreplace({s: values[s] for s in component.free_symbols if s in values}))
               for group in robot.load_groups if isinstance(group, Gravity) for component in group.components]
    return float(mass * np.linalg.norm(gravity)) if gravity else 0.0


def _unjudged(robot) -> str | None:
    return unknown_component(robot)


def robot_size(robot) -> float:
    """The robot's size [m]: its longest chain of joint offsets from the root plus the centre of
    mass of the chain's last link (at least :data:`ROBOT_SIZE_FLOOR`)."""
    reach = {robot.root_link.name: 0.0}
    pending = [j.joint_description for j in robot.joints.values()]
    while pending:  # joints in any order: place each once its parent link is placed
        placed = [j for j in pending if j.parent in reach]
        if not placed:
            break
        for joint in placed:
            reach[joint.child] = reach[joint.parent] + float(np.linalg.norm(joint.origin_xyz))
        pending = [j for j in pending if j.parent not in reach]
    size = 0.0
    for name, distance in reach.items():
        inertial = robot.links[name].link_description.inertial if name in robot.links else None
        size = max(size, distance + (float(np.linalg.norm(inertial.com)) if inertial is not None else 0.0))
    return max(size, ROBOT_SIZE_FLOOR)


def contact_loads(robot) -> list[list[tuple[str, float]]]:
    """Per row of ``contact_states`` (the derivation's order), the links its force acts on with
    the sign: ``(link, +1)`` for a ground feature, ``(link1, +1), (link2, -1)`` for a pair's."""
    from mb_sim.model.body_contact import BodyContact
    from mb_sim.model.contact import GroundContact

    loads = []
    for component in robot.walk():
        if isinstance(component, GroundContact):
            loads += [[(shape.link, 1.0)] for shape, features in component.shape_features() for _ in features]
        elif isinstance(component, BodyContact):
            loads += [[(link, 1.0), (target, -1.0)] for link, target in component.row_links]
        elif hasattr(component, "kinematic_loads"):
            raise ValueError(f"force-torque sensors: contact component {component.name!r} "
                             f"({type(component).__name__}) is not known to them")
    return loads


def unknown_component(robot) -> str | None:
    """Why the energy watch cannot judge `robot` (a :class:`mb_sim.model.Robot`): a component
    whose power it does not know (a user's load group may feed power in); None if there is none.
    It knows the types conservative with their potential in E, dissipative, ideal constraints, or
    fed through the inputs it looks at."""
    from mb_sim.model import (
        BallJoint, BodyContact, CoordinateConstraint, DCMotor, ExternalWrench, FixedJoint, FloatingJoint, Gravity, GroundContact, JointDissipation,
        JointEffort, JointLimitStop, JointSpring, LoopJoint, PlanarJoint, PrismaticJoint, RevoluteJoint, RigidLink,
        Robot, RollingWheel, SpringDamper,
    )

    known = (Robot, RigidLink, BallJoint, FixedJoint, RevoluteJoint, PrismaticJoint, PlanarJoint, FloatingJoint, Gravity,
             JointEffort, JointDissipation, JointLimitStop, JointSpring, DCMotor, SpringDamper, LoopJoint,
             CoordinateConstraint, RollingWheel, GroundContact, BodyContact, ExternalWrench)
    unknown = [c for c in robot.walk() if type(c) not in known]
    return f"component {unknown[0].name!r} ({type(unknown[0]).__name__}) may feed power in" if unknown else None
