"""The component model: models, connections and load groups with staged define steps.

After SymBRiM: a robot is a :class:`Robot` model whose submodels are :class:`RigidLink` models and
whose connections are joints; loads are load groups.  ``load_urdf`` builds one from a URDF.
"""
from mb_sim.model.actuators import MOTOR_STATE, DCMotor
from mb_sim.model.auxiliary import AuxiliaryDataHandler
from mb_sim.model.base import (
    INPUT_KINDS, ComponentBase, ComponentError, ConnectionBase, ConstraintRow, Input, LoadGroupBase, ModelBase,
    symbol_name,
)
from mb_sim.model.builder import build_robot, load_urdf
from mb_sim.model.closures import CoordinateConstraint, LoopJoint
from mb_sim.model.body_contact import BodyContact
from mb_sim.model.contact import CONTACT_STATE, GroundContact
from mb_sim.model.force_laws import SpringForceLaw, force_law, register_force_law, registered_force_laws
from mb_sim.model.joints import (
    FixedJoint, FloatingJoint, JointBase, PlanarJoint, PrismaticJoint, RevoluteJoint,
)
from mb_sim.model.kinematics import link_poses
from mb_sim.model.link import RigidLink
from mb_sim.model.loads import Gravity, JointDissipation, JointEffort, JointLimitStop, JointSpring
from mb_sim.model.registry import component_class, registered_components
from mb_sim.model.requirement import ConnectionRequirement, ModelRequirement
from mb_sim.model.robot import Robot
from mb_sim.model.springs import SPRING_STATE, SpringDamper
from mb_sim.model.wheels import RollingWheel

__all__ = [
    "AuxiliaryDataHandler", "BodyContact", "CONTACT_STATE", "GroundContact", "DCMotor", "MOTOR_STATE", "RollingWheel", "ComponentBase", "ComponentError", "ConnectionBase", "ConnectionRequirement",
    "ConstraintRow", "CoordinateConstraint", "INPUT_KINDS", "Input", "FixedJoint", "FloatingJoint", "Gravity", "JointBase",
    "JointDissipation", "JointEffort", "JointLimitStop", "JointSpring", "LoadGroupBase", "LoopJoint", "ModelBase",
    "ModelRequirement", "PlanarJoint", "PrismaticJoint", "RevoluteJoint", "RigidLink", "Robot", "SPRING_STATE",
    "SpringDamper", "SpringForceLaw", "build_robot", "component_class", "force_law", "link_poses", "load_urdf",
    "register_force_law", "registered_force_laws", "registered_components", "symbol_name",
]
