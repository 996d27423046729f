"""The component model: models, connections and load groups with staged define steps.

After SymBRiM: a robot is a :class:`Robot` model whose submodels are :class:`RigidLink` models and
whose connections are joints; loads are load groups.  ``load_urdf`` builds one from a URDF.
"""
from __future__ import annotations

from mb_sim._lazy import lazy_exports

#: Each public name and the module it is imported from on first use (light to import: see mb_sim._lazy).
_EXPORTS = {
    "AuxiliaryDataHandler": "mb_sim.model.auxiliary",
    "BallJoint": "mb_sim.model.joints",
    "BodyContact": "mb_sim.model.body_contact",
    "CONTACT_STATE": "mb_sim.model.contact",
    "GroundContact": "mb_sim.model.contact",
    "DCMotor": "mb_sim.model.actuators",
    "MOTOR_STATE": "mb_sim.model.actuators",
    "RollingWheel": "mb_sim.model.wheels",
    "ComponentBase": "mb_sim.model.base",
    "ComponentError": "mb_sim.model.base",
    "ConnectionBase": "mb_sim.model.base",
    "ConnectionRequirement": "mb_sim.model.requirement",
    "ConstraintRow": "mb_sim.model.base",
    "CoordinateConstraint": "mb_sim.model.closures",
    "INPUT_KINDS": "mb_sim.model.base",
    "Input": "mb_sim.model.base",
    "ExternalWrench": "mb_sim.model.wrench",
    "FixedJoint": "mb_sim.model.joints",
    "FloatingJoint": "mb_sim.model.joints",
    "Gravity": "mb_sim.model.loads",
    "JointBase": "mb_sim.model.joints",
    "JointDissipation": "mb_sim.model.loads",
    "JointEffort": "mb_sim.model.loads",
    "JointLimitStop": "mb_sim.model.loads",
    "JointSpring": "mb_sim.model.loads",
    "LoadGroupBase": "mb_sim.model.base",
    "LoopJoint": "mb_sim.model.closures",
    "ModelBase": "mb_sim.model.base",
    "ModelRequirement": "mb_sim.model.requirement",
    "PlanarJoint": "mb_sim.model.joints",
    "PrismaticJoint": "mb_sim.model.joints",
    "RevoluteJoint": "mb_sim.model.joints",
    "RigidLink": "mb_sim.model.link",
    "Robot": "mb_sim.model.robot",
    "SPRING_STATE": "mb_sim.model.springs",
    "SpringDamper": "mb_sim.model.springs",
    "SpringForceLaw": "mb_sim.model.force_laws",
    "build_robot": "mb_sim.model.builder",
    "component_class": "mb_sim.model.registry",
    "force_law": "mb_sim.model.force_laws",
    "link_poses": "mb_sim.model.kinematics",
    "load_urdf": "mb_sim.model.builder",
    "register_force_law": "mb_sim.model.force_laws",
    "registered_force_laws": "mb_sim.model.force_laws",
    "registered_components": "mb_sim.model.registry",
    "symbol_name": "mb_sim.model.base",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
