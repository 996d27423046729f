"""URDF in: parse and validate a URDF into a plain :class:`RobotDescription`.

Nothing here knows about SymPy; the model layer builds components from the description.
"""
from mb_sim.urdf.description import (
    CollisionDescription, ContactPairDescription, GroundDescription, SkippedCollision,
    ComponentSpec, CoordinateConstraintDescription, DCMotorDescription, Extensions, Inertial, JointDescription, JointLimit,
    JointSpringDescription, LinkDescription, LoopJointDescription, Marker, Mimic, RobotDescription,
    RollingWheelDescription, SpringDamperDescription,
)
from mb_sim.urdf.errors import FixedBaseWarning, InertiaRepairWarning, RepairWarning, URDFError, URDFWarning
from mb_sim.urdf.inertia import Repair
from mb_sim.urdf.parser import parse_urdf

__all__ = [
    "CollisionDescription", "ContactPairDescription", "GroundDescription", "SkippedCollision",
    "ComponentSpec", "CoordinateConstraintDescription", "DCMotorDescription", "Extensions", "Inertial", "JointDescription",
    "FixedBaseWarning", "InertiaRepairWarning", "JointLimit", "JointSpringDescription", "LinkDescription", "LoopJointDescription", "Marker",
    "Mimic", "Repair", "RepairWarning", "RobotDescription", "RollingWheelDescription", "SpringDamperDescription",
    "URDFError", "URDFWarning", "parse_urdf",
]
