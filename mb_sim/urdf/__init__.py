"""URDF in: parse and validate a URDF into a plain :class:`RobotDescription`.

Nothing here knows about SymPy; the model layer builds components from the description.
"""
from __future__ import annotations

from mb_sim._lazy import lazy_exports

#: Each public name and the module it is imported from on first use (light to import: see mb_sim._lazy).
_EXPORTS = {
    "CollisionDescription": "mb_sim.urdf.description",
    "ContactPairDescription": "mb_sim.urdf.description",
    "GroundDescription": "mb_sim.urdf.description",
    "SkippedCollision": "mb_sim.urdf.description",
    "ComponentSpec": "mb_sim.urdf.description",
    "CoordinateConstraintDescription": "mb_sim.urdf.description",
    "DCMotorDescription": "mb_sim.urdf.description",
    "Extensions": "mb_sim.urdf.description",
    "Inertial": "mb_sim.urdf.description",
    "JointDescription": "mb_sim.urdf.description",
    "FixedBaseWarning": "mb_sim.urdf.errors",
    "InertiaRepairWarning": "mb_sim.urdf.errors",
    "JointLimit": "mb_sim.urdf.description",
    "JointSpringDescription": "mb_sim.urdf.description",
    "LinkDescription": "mb_sim.urdf.description",
    "LoopJointDescription": "mb_sim.urdf.description",
    "Marker": "mb_sim.urdf.description",
    "Mimic": "mb_sim.urdf.description",
    "Repair": "mb_sim.urdf.inertia",
    "RepairWarning": "mb_sim.urdf.errors",
    "RobotDescription": "mb_sim.urdf.description",
    "RollingWheelDescription": "mb_sim.urdf.description",
    "SpringDamperDescription": "mb_sim.urdf.description",
    "URDFError": "mb_sim.urdf.errors",
    "URDFWarning": "mb_sim.urdf.errors",
    "parse_urdf": "mb_sim.urdf.parser",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
