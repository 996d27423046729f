"""Wheels that roll without slipping on the ground plane z = 0 (seed 002's differential drive).

The wheel link's frame origin is the wheel centre ``c``, ``a`` its spin axis (unit, in the wheel
frame: the ``<axis>`` given, else the axis of the joint moving the link).  The contact point is
the rim point lowest in the world: ``p = c - r d`` with ``d`` the unit vector in the wheel's plane
closest to the world's up direction ``z``, ``d = (z - (z . a) a) / |z - (z . a) a|``.  The ground
directions at the contact are the wheel's own, its rolling direction and its axle's trace on the
ground:

    t = (a x z) / |a x z|,        l = z x t,        |a x z| = |z - (z . a) a| = sqrt(1 - (a . z)^2)

(for an axle parallel to the ground ``a . z`` is structurally 0 and no square root is written).
Rolling without slipping says the wheel's material point at ``p`` does not move along the ground:

    (v_c + w x (p - c)) . t / r = 0   (rolling),      (v_c + w x (p - c)) . l / r = 0   (sideways)

two nonholonomic conditions, named after the element so a wheel can be let slip (disabled: it
then spins freely).  Because ``t`` and ``l`` turn with the wheel, each row says the same thing at
every heading (seed 002 writes them in the body frame): the rows are regular wherever the wheel
does not lie flat (``a . z = +-1``), and which rows are kept does not depend on the heading.
(Rows along fixed world x and y were not: a robot facing world +-y had both wheels' x rows say the
same sideways condition, and A lost rank.)  The condition normal to the ground is not stated: the
base's joint keeps the wheel on the ground (a planar base), or it is the user's to keep.

For a rigid axle the two wheels' sideways conditions are the same one at every heading: both are
enforced, and the dynamics leave the second to the first wherever the robot is (when a wheel is
released the other's carries it alone).  The rows are slip
velocities over the wheel's radius (rolling: ``v_c . t / r`` less the spin rate, the wheel speed
the rim lacks) [rad/s] because the model holds each condition as a distinct expression (the robot's
System and the constraint analysis key rows by expression): in metres per second the two sideways
rows are the same expression and one wheel's would be lost; over each wheel's own radius they stay
apart.  A row's multiplier is then the friction force times the radius (for the rolling row, the
ground's torque about the axle), and its wrench (``ConstraintRow.wrench``: force along ``t / r``
or ``l / r`` in world components, no torque) makes the reported reaction the ground's friction
force on the wheel at the contact point in world axes.
"""
from __future__ import annotations

from sympy import Expr, Matrix, sqrt
from sympy.physics.mechanics import Vector

from mb_sim.model.base import ConnectionBase, ConstraintRow, component_system
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
        self._system = component_system()
        self.radius = parameter(self, "radius", self.wheel_description.radius,
                                f"radius of rolling wheel '{self.name}' [m]", self._descriptions)

    def _spin_axis(self) -> Vector:
        axis = self.wheel_description.axis
        if axis is None:
            axis = self.joint.joint_description.axis
        components = exact_axis(axis) or tuple(float(v) for v in axis)
        W = self.wheel.frame
        return components[0] * W.x + components[1] * W.y + components[2] * W.z

    def _tilt_scale(self) -> Expr:
        """``sqrt(1 - (a . z)^2)``: the length of ``a x z`` and of ``z - (z . a) a``; exactly 1,
        with no square root, when the axle is structurally parallel to the ground."""
        tilt = self._spin_axis().dot(self.auxiliary_handler.inertial_frame.z)
        return sqrt(1 - tilt ** 2) if tilt != 0 else 1

    def contact_offset(self) -> Vector:
        """``p - c``: from the wheel centre to the contact point."""
        up = self.auxiliary_handler.inertial_frame.z
        axis = self._spin_axis()
        return -self.radius * (up - axis.dot(up) * axis) / self._tilt_scale()

    def ground_directions(self) -> tuple[Vector, Vector]:
        """``(t, l)``: the unit rolling direction ``(a x z)/|a x z|`` and the unit sideways
        direction ``z x t`` along the axle's trace on the ground (see the module docstring)."""
        up = self.auxiliary_handler.inertial_frame.z
        rolling = self._spin_axis().cross(up) / self._tilt_scale()
        return rolling, up.cross(rolling)

    def _define_constraints(self) -> None:
        world, origin = self.auxiliary_handler.inertial_frame, self.auxiliary_handler.inertial_point
        centre_velocity = self.wheel.origin.pos_from(origin).dt(world)
        contact_velocity = centre_velocity + self.wheel.frame.ang_vel_in(world).cross(self.contact_offset())
        rolling, sideways = self.ground_directions()
        for direction, what in ((rolling, "along the rolling direction"), (sideways, "along the axle (sideways)")):
            expression = contact_velocity.dot(direction) / self.radius
            self.constraint_rows[expression] = ConstraintRow(
                f"rolling wheel '{self.name}': contact velocity {what}, over the radius",
                self._friction_wrench(direction))
            self.system.add_nonholonomic_constraints(expression)

    def _friction_wrench(self, direction: Vector) -> Matrix:
        """The wrench (force in world components, no torque) a row's multiplier scales: the row is
        a contact velocity along `direction` over the radius, so its generalized force is that of
        the force ``direction / r`` at the contact point."""
        world = self.auxiliary_handler.inertial_frame
        return Matrix([direction.dot(world.x), direction.dot(world.y), direction.dot(world.z), 0, 0, 0]) / self.radius
