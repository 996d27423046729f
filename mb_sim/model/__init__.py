"""The component model: models, connections and load groups with staged define steps.

After SymBRiM: a robot is a :class:`Robot` model whose submodels are :class:`RigidLink` models and
whose connections are joints; loads are load groups.  ``load_urdf`` builds one from a URDF.
"""
from mb_sim.model.auxiliary import AuxiliaryDataHandler
from mb_sim.model.base import (
    ComponentBase, ComponentError, ConnectionBase, LoadGroupBase, ModelBase, symbol_name,
)
from mb_sim.model.builder import build_robot, load_urdf
from mb_sim.model.joints import (
    FixedJoint, FloatingJoint, JointBase, PlanarJoint, PrismaticJoint, RevoluteJoint,
)
from mb_sim.model.kinematics import link_poses
from mb_sim.model.link import RigidLink
from mb_sim.model.loads import Gravity, JointDissipation, JointEffort, JointLimitStop
from mb_sim.model.registry import component_class, registered_components
from mb_sim.model.requirement import ConnectionRequirement, ModelRequirement
from mb_sim.model.robot import Robot

__all__ = [
    "AuxiliaryDataHandler", "ComponentBase", "ComponentError", "ConnectionBase", "ConnectionRequirement",
    "FixedJoint", "FloatingJoint", "Gravity", "JointBase", "JointDissipation", "JointEffort", "JointLimitStop",
    "LoadGroupBase", "ModelBase", "ModelRequirement", "PlanarJoint", "PrismaticJoint", "RevoluteJoint",
    "RigidLink", "Robot", "build_robot", "component_class", "link_poses", "load_urdf",
    "registered_components", "symbol_name",
]
