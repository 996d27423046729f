"""Plain data describing a robot as a URDF gives it, validated, in SI units.

Conventions follow URDF: a joint's origin places the joint frame in the parent link frame
(``xyz`` then fixed-axis roll-pitch-yaw); the child link frame coincides with the joint frame
at zero joint position; the axis is a unit vector in the joint frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "COLLISION_SHAPES", "JOINT_TYPE_ALIASES", "CollisionDescription", "ContactPairDescription", "GroundDescription", "IMUDescription", "SkippedCollision",
    "ForceTorqueDescription",
    "ComponentSpec", "CoordinateConstraintDescription", "DCMotorDescription", "Extensions", "Inertial", "JointDescription",
    "JointLimit", "JointSpringDescription", "LinkContactDescription", "LinkDescription", "LoopJointDescription", "Marker",
    "Mimic",
    "RobotDescription", "RollingWheelDescription", "SelfCollisionDescription", "SpringDamperDescription", "LOOP_JOINT_TYPES", "MOVING_JOINT_TYPES", "JOINT_TYPES",
    "STANDARD_GRAVITY", "WORLD_LINK",
]

#: Joint types mb_sim simulates, with their number of degrees of freedom.
JOINT_TYPES = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 1, "planar": 3, "floating": 6, "spherical": 3}
#: Joint types other tools write for one of JOINT_TYPES (Drake's ball joint is pybullet's spherical).
JOINT_TYPE_ALIASES = {"ball": "spherical"}
#: A root link with this name is the world frame.
WORLD_LINK = "world"
MOVING_JOINT_TYPES = frozenset(t for t, dof in JOINT_TYPES.items() if dof > 0)
#: Loop-closure joint types, with the number of scalar conditions each imposes (before redundancy).
LOOP_JOINT_TYPES = {"revolute": 5, "continuous": 5, "prismatic": 5, "spherical": 3, "universal": 4, "fixed": 6}
#: Gravity when the URDF says nothing: 9.81 m/s^2 along the world's -z axis.
STANDARD_GRAVITY = 9.81


@dataclass(frozen=True)
class Inertial:
    """Mass properties of a link, expressed in the link frame.

    ``com`` is the centre of mass in the link frame; ``inertia`` the 3x3 inertia tensor about the
    centre of mass in link-frame axes (the URDF inertial origin's ``rpy`` already applied).
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class LinkDescription:
    """A URDF link; ``inertial`` is None for a massless link."""

    name: str
    inertial: Inertial | None


@dataclass(frozen=True)
class JointLimit:
    """URDF ``<limit>``: position bounds (None = unbounded), speed and effort bounds (inf = none)."""

    lower: float | None = None
    upper: float | None = None
    velocity: float = float("inf")
    effort: float = float("inf")


@dataclass(frozen=True)
class Mimic:
    """URDF ``<mimic>``: this joint's position is ``multiplier * q(joint) + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class JointDescription:
    """A URDF joint between two links."""

    name: str
    type: str
    parent: str
    child: str
    origin_xyz: np.ndarray
    origin_rpy: np.ndarray
    axis: np.ndarray
    limit: JointLimit = field(default_factory=JointLimit)
    damping: float = 0.0
    friction: float = 0.0
    mimic: Mimic | None = None


@dataclass(frozen=True)
class ComponentSpec:
    """A ``<component type="..." name="..." attach_to="...">`` extension element.

    ``type`` names a component registered in the ``mb_sim.components`` entry-point group;
    ``parameters`` are its numeric ``<parameter name= value=>`` children.
    """

    type: str
    name: str
    attach_to: str
    parameters: dict[str, float]


@dataclass(frozen=True)
class LoopJointDescription:
    """``<loop_joint>``: closes a kinematic loop between two links already in the tree.

    The parent-side frame J sits in the parent link at ``origin_xyz``/``origin_rpy`` (as a URDF
    joint's origin); the child-side frame C sits in the child link at ``child_origin_xyz``/
    ``child_origin_rpy`` (default: the child link frame).  Closed, C coincides with J up to the
    motion the type allows (rotation about ``axis`` for revolute, translation along it for
    prismatic, any rotation for spherical, rotation about ``axis`` and about a cross axis fixed in
    C for universal, none for fixed); ``axis`` is a unit vector in J.
    """

    name: str
    type: str
    parent: str
    child: str
    origin_xyz: np.ndarray
    origin_rpy: np.ndarray
    child_origin_xyz: np.ndarray
    child_origin_rpy: np.ndarray
    axis: np.ndarray


@dataclass(frozen=True)
class CoordinateConstraintDescription:
    """``<coordinate_constraint>``: ``q(joint) = ratio * q(reference) + offset`` (a gear, a belt)."""

    name: str
    joint: str
    reference: str
    ratio: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Marker:
    """A point fixed in a link: ``xyz`` in the link frame [m]."""

    link: str
    xyz: np.ndarray


@dataclass(frozen=True)
class SpringDamperDescription:
    """``<spring_damper>``: Exudyn's ObjectConnectorSpringDamper between two markers.

    Scalar force ``k (L - L0) + d (L' - L0') + f`` (tension positive) along the line of the
    markers, zero when not ``active``; ``law`` names a Python force law registered through the
    API (None: the linear law).
    """

    name: str
    markers: tuple[Marker, Marker]
    stiffness: float = 0.0
    damping: float = 0.0
    reference_length: float = 0.0
    force: float = 0.0
    velocity_offset: float = 0.0
    active: bool = True
    law: str | None = None


@dataclass(frozen=True)
class JointSpringDescription:
    """``<joint_spring>``: effort ``-stiffness (q - reference) - damping q'`` on a one-DoF joint."""

    name: str
    joint: str
    stiffness: float = 0.0
    reference: float = 0.0
    damping: float = 0.0


@dataclass(frozen=True)
class DCMotorDescription:
    """``<dc_motor>``: an armature-controlled DC motor driving a one-DoF joint from its parent link.

    ``L di/dt = V - R i - K n q'`` (no current state if ``inductance`` is 0: ``i = (V - K n q') / R``),
    joint torque ``n K i``, rotor inertia reflected as ``n^2 J``, shaft friction as ``n^2 b``;
    commanded voltages are clamped to ``voltage_limit``.
    """

    name: str
    joint: str
    torque_constant: float
    resistance: float
    inductance: float = 0.0
    gear_ratio: float = 1.0
    rotor_inertia: float = 0.0
    viscous_friction: float = 0.0
    voltage_limit: float = float("inf")


@dataclass(frozen=True)
class IMUDescription:
    """An inertial measurement unit fixed in link `link` at ``xyz``/``rpy`` (link frame, as a
    URDF origin): ``<mb_sim><imu>`` or Gazebo's ``<gazebo reference><sensor type="imu">``
    (``declared_in`` says which, for messages).  It reads the exact accelerations of the model
    (:mod:`mb_sim.sim.imu`)."""

    name: str
    link: str
    xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rpy: np.ndarray = field(default_factory=lambda: np.zeros(3))
    declared_in: str = "mb_sim imu"


@dataclass(frozen=True)
class ForceTorqueDescription:
    """A force-torque sensor on joint `joint`: ``<mb_sim><force_torque>`` or Gazebo's
    ``<gazebo reference="joint"><sensor type="force_torque">``.  It reports the wrench the parent
    side exerts on the child side through the joint (``measure_direction`` "parent_to_child"; its
    negative for "child_to_parent"), torque about the joint origin, in the child link's axes
    (``frame`` "child") or the parent link's ("parent") (:mod:`mb_sim.sim.force_torque`)."""

    name: str
    joint: str
    frame: str = "child"
    measure_direction: str = "parent_to_child"
    declared_in: str = "mb_sim force_torque"


@dataclass(frozen=True)
class RollingWheelDescription:
    """``<rolling_wheel>``: link `link` (its frame origin the wheel centre) rolls without slipping on
    the plane z = 0; ``axis`` (link frame) is its spin axis, None for the axis of the joint that
    moves it."""

    name: str
    link: str
    radius: float
    axis: np.ndarray | None = None


@dataclass(frozen=True)
class Extensions:
    """What the ``<mb_sim>`` element adds to a URDF; ``gravity`` is None where it says nothing."""

    loop_joints: list[LoopJointDescription] = field(default_factory=list)
    coordinate_constraints: list[CoordinateConstraintDescription] = field(default_factory=list)
    spring_dampers: list[SpringDamperDescription] = field(default_factory=list)
    joint_springs: list[JointSpringDescription] = field(default_factory=list)
    gravity: np.ndarray | None = None
    dc_motors: list[DCMotorDescription] = field(default_factory=list)
    rolling_wheels: list[RollingWheelDescription] = field(default_factory=list)
    ground: "GroundDescription | None" = None
    contact_pairs: list = field(default_factory=list)
    imus: list[IMUDescription] = field(default_factory=list)
    force_torques: list[ForceTorqueDescription] = field(default_factory=list)
    self_collision: "SelfCollisionDescription | None" = None
    #: Contact parameters by link (``<mb_sim><contact>``, Gazebo and pybullet tags).
    link_contacts: dict = field(default_factory=dict)
    #: Links taking an external wrench as inputs (``<mb_sim><external_wrench link>``, or the
    #: loader's ``wrench_links``), in order, each once.
    wrench_links: tuple[str, ...] = ()


@dataclass(frozen=True)
class RobotDescription:
    """A validated robot: links, joints in parent-before-child order, extension components.

    ``root`` is the URDF's root link.  A root link named ``world`` is the world frame itself (it
    has no mass), so the joints out of it say how the robot moves relative to the world
    (floating, planar, ...); any other root link is fixed to the world frame.  ``repairs`` lists
    what the loader repaired or accepted instead of refusing (see :mod:`mb_sim.urdf.inertia`).
    """

    name: str
    source: str
    links: dict[str, LinkDescription]
    joints: list[JointDescription]
    root: str
    components: list[ComponentSpec] = field(default_factory=list)
    extensions: Extensions = field(default_factory=Extensions)
    #: What was repaired or accepted instead of refused (:class:`mb_sim.urdf.inertia.Repair`), one per
    #: link or joint; empty when loaded with ``strict``.
    repairs: list = field(default_factory=list)
    #: The ``<collision>`` shapes contacts use, and those skipped with the reason.
    collisions: list = field(default_factory=list)
    skipped_collisions: list = field(default_factory=list)

    @property
    def gravity(self) -> np.ndarray:
        """Gravitational acceleration in world axes [m/s^2] (``<gravity>``, else 9.81 along -z)."""
        if self.extensions.gravity is not None:
            return self.extensions.gravity
        return np.array([0.0, 0.0, -STANDARD_GRAVITY])

    @property
    def root_is_world(self) -> bool:
        """True where the root link is the world frame (``world``)."""
        return self.root == WORLD_LINK

    def fixed_to_world(self) -> set[str]:
        """The root link and the links joined to it by fixed joints only (they never move)."""
        fixed = {self.root}
        for joint in self.joints:  # parents before children
            if joint.type == "fixed" and joint.parent in fixed:
                fixed.add(joint.child)
        return fixed

    def joint(self, name: str) -> JointDescription:
        """The joint named `name`."""
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise KeyError(name)


#: Collision shapes mb_sim reads from ``<collision><geometry>``: URDF's four plus pybullet's capsule.
COLLISION_SHAPES = ("sphere", "box", "cylinder", "capsule", "mesh")


@dataclass(frozen=True)
class CollisionDescription:
    """One ``<collision>`` element of link `link` (the `index`-th, ``name`` if it has one), in SI
    units: its pose in the link frame (``xyz``, rotation matrix ``rotation``), its ``shape`` (one
    of :data:`COLLISION_SHAPES`) and ``size``: radius (sphere), full extents (box), radius and
    length (cylinder, capsule: the length between the end caps' centres, along the shape's z
    axis), the scale (mesh).  A mesh carries ``points``: its convex hull's support points in the
    shape's frame, scaled (:mod:`mb_sim.urdf.meshes`), ``hull``: all its hull's vertices (what a
    contact pair's collision library touches), and ``filename`` as the URDF wrote it."""

    link: str
    index: int
    name: str
    shape: str
    size: tuple[float, ...]
    xyz: np.ndarray
    rotation: np.ndarray
    filename: str = ""
    points: np.ndarray | None = None
    hull: np.ndarray | None = None

    @property
    def label(self) -> str:
        """``link 'foot' <collision 1 'sole'>`` for messages."""
        named = f" '{self.name}'" if self.name else ""
        return f"link '{self.link}' <collision {self.index}{named}>"


@dataclass(frozen=True)
class SkippedCollision:
    """A ``<collision>`` element no contact uses, and why (listed by ``mb-sim info``)."""

    link: str
    index: int
    reason: str


@dataclass(frozen=True)
class GroundDescription:
    """``<ground>``: the plane ``normal . x = height`` (world axes) every collision shape touches.

    Contact parameters (None: chosen from the robot, :mod:`mb_sim.model.contact`): ``stiffness``
    k [N/m^p], ``damping`` c [s/m] (Hunt-Crossley: ``f_n = k d^p (1 + c d')``), ``exponent`` p,
    ``friction`` mu (Coulomb) and ``stick_velocity`` v_s [m/s] (the regularized friction's speed
    scale: ``|f_t| = mu f_n |v_t| / sqrt(|v_t|^2 + v_s^2)``)."""

    name: str = "ground"
    height: float = 0.0
    normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    friction: float = 1.0
    stiffness: float | None = None
    damping: float | None = None
    exponent: float = 1.0
    stick_velocity: float | None = None
    #: The links whose collision shapes touch the plane (``<ground links="a b">``); None: every
    #: moving link's.  Listing the feet keeps a humanoid's generated code small (each mesh adds
    #: about two dozen contact points) and its other meshes unread.
    links: tuple[str, ...] | None = None
    #: Friction as a spring-damper to a sticking point per contact point (an anchor state), clipped
    #: to the friction cone (the default): a body below the friction angle holds, a wheel rolls
    #: without slipping; ``stiction="false"`` gives the regularized law (no states, viscous below
    #: ``stick_velocity``).  ``stiction_stiffness`` k_t [N/m] and ``stiction_damping`` c_t [N s/m]
    #: of that spring (None: chosen from the robot, :mod:`mb_sim.model.contact`).
    stiction: bool = True
    stiction_stiffness: float | None = None
    stiction_damping: float | None = None


@dataclass(frozen=True)
class LinkContactDescription:
    """Contact parameters of one link's collision shapes, where they differ from the ground's:
    ``<mb_sim><contact link>``, Gazebo's ``<gazebo reference="link">`` (``mu1``, ``mu2``, ``kp``,
    ``kd``) or pybullet's ``<link><contact>`` (``lateral_friction``, ``rolling_friction``,
    ``spinning_friction``, ``stiffness``, ``damping``); None: the ground's.

    ``friction`` mu; ``stiffness`` k [N/m^p]; ``damping`` c [s/m] (Hunt-Crossley, as the ground's);
    ``linear_damping`` b [N s/m] (a damper ``b d'`` added to the normal force: Gazebo's ``kd``,
    pybullet's ``damping``); ``rolling_friction`` mu_r [m] and ``spinning_friction`` mu_s [m]
    (torques ``mu_r f_n`` against rolling, ``mu_s f_n`` against spinning about the normal).
    ``read`` says where each value came from, ``ignored`` each tag that was not simulated and why
    (listed by ``mb-sim info`` and in a load warning)."""

    link: str
    friction: float | None = None
    stiffness: float | None = None
    damping: float | None = None
    linear_damping: float | None = None
    rolling_friction: float | None = None
    spinning_friction: float | None = None
    read: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    #: The parameters a link may set, in order.
    PARAMETERS = ("friction", "stiffness", "damping", "linear_damping", "rolling_friction", "spinning_friction")

    def given(self) -> dict[str, float]:
        """The parameters this link sets."""
        return {key: getattr(self, key) for key in self.PARAMETERS if getattr(self, key) is not None}


@dataclass(frozen=True)
class ContactPairDescription:
    """``<contact_pair link1 link2>``: the collision shapes of two links touch each other: spheres
    and capsules in closed form, every other pair of shapes through ``points`` contact slots the
    simulator fills from a collision library (:mod:`mb_sim.model.manifold`).  Parameters as
    :class:`GroundDescription`'s (None: chosen from the robot)."""

    name: str
    link1: str
    link2: str
    friction: float = 1.0
    stiffness: float | None = None
    damping: float | None = None
    exponent: float = 1.0
    stick_velocity: float | None = None
    #: Friction held by a sticking point per feature (anchored on link2), as the ground's: the default.
    stiction: bool = True
    stiction_stiffness: float | None = None
    stiction_damping: float | None = None
    #: Contact slots for the shapes that are not both round (a face on a face needs 4).
    points: int = 4


@dataclass(frozen=True)
class SelfCollisionDescription:
    """``<self_collision links exclude>``: every two moving links with collision shapes touch (as a
    ``<contact_pair>``) unless they are adjacent (one rigid body, or joined by a joint), left out by
    ``exclude`` (pairs of link names), outside ``links`` (None: all links), or given their own
    ``<contact_pair>``.  All its pairs share one parameter set (named ``<name>_stiffness`` ...),
    parameters as :class:`GroundDescription`'s (None: chosen from the robot).  ``pairs`` (the link
    pairs made) and ``skipped`` (``(link1, link2, reason)``) are filled when the model is built."""

    name: str = "self_collision"
    links: tuple[str, ...] | None = None
    exclude: tuple[tuple[str, str], ...] = ()
    friction: float = 1.0
    stiffness: float | None = None
    damping: float | None = None
    exponent: float = 1.0
    stick_velocity: float | None = None
    pairs: tuple[tuple[str, str], ...] = ()
    skipped: tuple[tuple[str, str, str], ...] = ()

    @property
    def link1(self) -> str:
        """For listings that print a pair's links: how many link pairs this filter made."""
        return f"{len(self.pairs)} link pairs"

    @property
    def link2(self) -> str:
        return "one another (self_collision)"
