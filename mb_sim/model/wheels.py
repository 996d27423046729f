"""Wheels that roll without slipping on the ground plane z = 0 (seed 002's differential drive).

The wheel link's frame origin is the wheel centre ``c``, ``a`` its spin axis (unit, in the wheel
frame: the ``<axis>`` given, else the axis of the joint moving the link).  The contact point is
the rim point lowest in the world: ``p = c - r d`` with ``d`` the unit vector in the wheel's plane
closest to the world's up direction, ``d = (z - (z . a) a) / |z - (z . a) a|``.  Rolling without
slipping says the wheel's material point at ``p`` does not move along the ground:

    (v_c + w x (p - c)) . x = 0,      (v_c + w x (p - c)) . y = 0      (world x, y)

two nonholonomic conditions, named after the element so a wheel can be let slip (disabled: it
then spins freely).  The condition normal to the ground is not stated: the base's joint keeps the
wheel on the ground (a planar base), or it is the user's to keep.  For a rigid axle the two
wheels' sideways conditions are the same one: the rank test drops one.  Each row's multiplier is
the friction force on the wheel at the contact point along world x or y.
"""
from __future__ import annotations

from sympy import Matrix, sqrt
from sympy.physics.mechanics import System, Vector

from mb_sim.model.base import ConnectionBase, ConstraintRow
from mb_sim.model.joints import JointBase
from mb_sim.model.link import RigidLink
from mb_sim.model.parameters import exact_axis, parameter
from mb_sim.model.requirement import ModelRequirement
from mb_sim.urdf import RollingWheelDescription

__all__ = ["RollingWheel"]


class RollingWheel(ConnectionBase):
    """``<rolling_wheel>``: the wheel link rolls without slipping on z = 0 (see the module
    docstring).  ``joint`` is the joint moving the wheel link (its axis is the default spin
    axis)."""

    required_models = (ModelRequirement("wheel", RigidLink, "The wheel link (frame origin at the wheel centre)."),)
    wheel: RigidLink

    def __init__(self, name: str, description: RollingWheelDescription) -> None:
        super().__init__(name)
        self.wheel_description = description
        self.joint: JointBase | None = None

    def resolve(self, links: dict[str, RigidLink], joints: dict[str, JointBase]) -> None:
        """Find the wheel link and the joint moving it (define connections)."""
        self.wheel = links[self.wheel_description.link]
        self.joint = next((j for j in joints.values() if j.joint_description.child == self.wheel.name), None)

    def _define_objects(self) -> None:
        self._system = System()
        self.radius = parameter(self, "radius", self.wheel_description.radius,
                                f"radius of rolling wheel '{self.name}' [m]", self._descriptions)

    def _spin_axis(self) -> Vector:
        axis = self.wheel_description.axis
        if axis is None:
            axis = self.joint.joint_description.axis
        components = exact_axis(axis) or tuple(float(v) for v in axis)
        W = self.wheel.frame
        return components[0] * W.x + components[1] * W.y + components[2] * W.z

    def contact_offset(self) -> Vector:
        """``p - c``: from the wheel centre to the contact point."""
        world = self.auxiliary_handler.inertial_frame
        axis = self._spin_axis()
        tilt = axis.dot(world.z)
        towards_up = world.z - tilt * axis
        return -self.radius * towards_up / (sqrt(1 - tilt ** 2) if tilt != 0 else 1)

    def _define_constraints(self) -> None:
        world, origin = self.auxiliary_handler.inertial_frame, self.auxiliary_handler.inertial_point
        centre_velocity = self.wheel.origin.pos_from(origin).dt(world)
        contact_velocity = centre_velocity + self.wheel.frame.ang_vel_in(world).cross(self.contact_offset())
        for k, direction in enumerate((world.x, world.y)):
            expression = contact_velocity.dot(direction)
            force = Matrix([1 if i == k else 0 for i in range(3)] + [0, 0, 0])
            self.constraint_rows[expression] = ConstraintRow(
                f"rolling wheel '{self.name}': contact velocity along world {'xy'[k]}", force)
            self.system.add_nonholonomic_constraints(expression)
