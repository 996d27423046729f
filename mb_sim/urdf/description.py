"""Plain data describing a robot as a URDF gives it, validated, in SI units.

Conventions follow URDF: a joint's origin places the joint frame in the parent link frame
(``xyz`` then fixed-axis roll-pitch-yaw); the child link frame coincides with the joint frame
at zero joint position; the axis is a unit vector in the joint frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ComponentSpec", "Inertial", "JointDescription", "JointLimit", "LinkDescription", "Mimic",
    "RobotDescription", "MOVING_JOINT_TYPES", "JOINT_TYPES", "WORLD_LINK",
]

#: Joint types mb_sim simulates, with their number of degrees of freedom.
JOINT_TYPES = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 1, "planar": 3, "floating": 6}
#: A root link with this name is the world frame.
WORLD_LINK = "world"
MOVING_JOINT_TYPES = frozenset(t for t, dof in JOINT_TYPES.items() if dof > 0)


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
class RobotDescription:
    """A validated robot: links, joints in parent-before-child order, extension components.

    ``root`` is the URDF's root link.  A root link named ``world`` is the world frame itself (it
    has no mass), so the joints out of it say how the robot moves relative to the world
    (floating, planar, ...); any other root link is fixed to the world frame.
    """

    name: str
    source: str
    links: dict[str, LinkDescription]
    joints: list[JointDescription]
    root: str
    components: list[ComponentSpec] = field(default_factory=list)

    @property
    def root_is_world(self) -> bool:
        """True where the root link is the world frame (``world``)."""
        return self.root == WORLD_LINK

    def joint(self, name: str) -> JointDescription:
        """The joint named `name`."""
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise KeyError(name)
