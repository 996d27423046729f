"""Constraints URDF cannot state: loop-closure joints and coordinate constraints.

Both are connections of the robot model that add holonomic constraints, named after their URDF
element so they can be switched at run time (Karana's SubGraph ``enableConstraint``).  Every
constraint row carries a :class:`ConstraintRow`: what it says, and the unit wrench it stands for,
so the multipliers become reaction forces and torques.

Loop-joint conditions, with J the parent-side frame, C the child-side frame, ``r`` the position of
C's origin from J's, ``a`` the joint axis (in J; ``a_C`` the same components in C) and ``b1, b2``
unit vectors normal to ``a`` (see :func:`~mb_sim.model.joints.axis_basis`):

==============  ===================================================  ==========================
type            conditions                                           count
==============  ===================================================  ==========================
spherical       ``r . Jx = r . Jy = r . Jz = 0``                     3
universal       the three above, and ``b1_C . a = 0``                4
revolute        the three above, and ``a_C . b1 = a_C . b2 = 0``     5
prismatic       ``r . b1 = r . b2 = 0``, ``Cy . Jz = Cz . Jx =        5
                Cx . Jy = 0``
fixed           ``r = 0`` (3) and ``Cy . Jz = Cz . Jx = Cx . Jy = 0``  6
==============  ===================================================  ==========================

Each orientation condition is a dot product of a unit vector fixed in the child with one fixed in
the parent that are perpendicular when the loop is closed, so its gradient with respect to a
small rotation is a unit vector at the solution: the conditions stay well conditioned wherever
the loop can close (unlike differences of angles, which wrap, or of rotation-matrix entries,
whose gradient vanishes at 90 degrees of relative rotation about the joint axis).  They also hold
for half turns about the constrained axes; the simulator starts on the assembled branch and
projection keeps it there.  The time derivative of ``r . e`` (``e`` fixed in the parent) is
``e . (v_C - v_P')`` with ``P'`` the parent's point under C, that of ``c . p`` is
``(w_child - w_parent) . (c x p)``: so a row's multiplier ``lam`` is a force ``-lam e`` or a
torque ``-lam (c x p)`` on the child at C (the opposite on the parent).

Rows that are identically zero (a planar mechanism's out-of-plane conditions) are not added;
they are recorded in ``satisfied`` for the constraint analysis.
"""
from __future__ import annotations

from sympy import Expr, S
from sympy.physics.mechanics import Point, ReferenceFrame, Vector

from mb_sim.model.base import ComponentError, ConnectionBase, ConstraintRow, component_system
from mb_sim.model.joints import JointBase, PrismaticJoint, RevoluteJoint, axis_basis
from mb_sim.model.link import RigidLink
from mb_sim.model.orientation import body_fixed_rotation, orient_fixed
from mb_sim.model.parameters import exact_angle, parameter
from mb_sim.model.requirement import ModelRequirement
from mb_sim.urdf import CoordinateConstraintDescription, LoopJointDescription

__all__ = ["CoordinateConstraint", "LoopJoint", "mount_frame"]

_AXIS_NAMES = {"x": 0, "y": 1, "z": 2}


def mount_frame(component, link: RigidLink, key: str, xyz, rpy, what: str) -> tuple[ReferenceFrame, Point]:
    """A frame and point fixed in `link` at `xyz` (parameters) rotated by URDF `rpy`."""
    d = component._descriptions
    offset = [parameter(component, f"{key}_{a}", v, f"{what} {a} of '{component.name}' in link '{link.name}' [m]", d)
              for a, v in zip("xyz", xyz)]
    roll, pitch, yaw = (exact_angle(component, f"{key}_{a}", v, f"{what} {a} angle of '{component.name}' [rad]", d)
                        for a, v in zip(("roll", "pitch", "yaw"), rpy))
    frame = ReferenceFrame(component._add_prefix(f"{key}_frame"))
    point = Point(component._add_prefix(f"{key}_point"))
    orient_fixed(frame, link.frame, body_fixed_rotation(roll, pitch, yaw))
    point.set_pos(link.origin, offset[0] * link.frame.x + offset[1] * link.frame.y + offset[2] * link.frame.z)
    point.set_vel(link.frame, 0)
    return frame, point


class LoopJoint(ConnectionBase):
    """``<loop_joint>``: closes a kinematic loop between two links of the tree.

    It adds no coordinates: it constrains the tree's (see the module docstring for the
    conditions).  ``parent_frame``/``parent_point`` (J) are fixed in the parent link,
    ``child_frame``/``child_point`` (C) in the child link.
    """

    required_models = (
        ModelRequirement("parent", RigidLink, "Link holding the loop joint's frame J."),
        ModelRequirement("child", RigidLink, "Link the loop joint closes onto (its frame C)."),
    )
    parent: RigidLink
    child: RigidLink

    def __init__(self, name: str, description: LoopJointDescription) -> None:
        super().__init__(name)
        self.loop_description = description
        self.satisfied: list[str] = []

    @property
    def n_conditions(self) -> int:
        """Scalar conditions the joint type states, identically satisfied ones included."""
        return {"spherical": 3, "universal": 4, "fixed": 6}.get(self.loop_description.type, 5)

    def resolve(self, links: dict[str, RigidLink], joints: dict[str, JointBase]) -> None:
        """Find the parent and child links by name (define connections)."""
        self.parent = links[self.loop_description.parent]
        self.child = links[self.loop_description.child]

    def _define_objects(self) -> None:
        self._system = component_system()

    def _define_kinematics(self) -> None:
        ld = self.loop_description
        self.parent_frame, self.parent_point = mount_frame(self, self.parent, "origin", ld.origin_xyz, ld.origin_rpy,
                                                           "origin")
        self.child_frame, self.child_point = mount_frame(self, self.child, "child_origin", ld.child_origin_xyz,
                                                         ld.child_origin_rpy, "child-side origin")

    def _define_constraints(self) -> None:
        J, C = self.parent_frame, self.child_frame
        kind = self.loop_description.type
        r = self.child_point.pos_from(self.parent_point)
        axis, b1, b2 = axis_basis(self.loop_description.axis, J)
        if kind == "prismatic":
            for e in (b1, b2):
                self._position_row(r, e)
        elif kind in ("spherical", "universal", "revolute", "continuous", "fixed"):
            for e in (J.x, J.y, J.z):
                self._position_row(r, e)
        if kind in ("revolute", "continuous"):
            axis_in_child = sum((axis.dot(u) * v for u, v in zip((J.x, J.y, J.z), (C.x, C.y, C.z))), Vector(0))
            for b in (b1, b2):
                self._orientation_row(axis_in_child, b)
        elif kind in ("prismatic", "fixed"):
            for c, p in ((C.y, J.z), (C.z, J.x), (C.x, J.y)):
                self._orientation_row(c, p)
        elif kind == "universal":  # the cross axis: fixed in C, b1's components (normal to the axis when closed)
            cross_in_child = sum((b1.dot(u) * v for u, v in zip((J.x, J.y, J.z), (C.x, C.y, C.z))), Vector(0))
            self._orientation_row(cross_in_child, axis)

    def _axis_label(self, vector: Vector) -> str:
        """'x', 'y', 'z' for a parent-side axis, else its components."""
        components = vector.to_matrix(self.parent_frame)
        for name, k in _AXIS_NAMES.items():
            if components[k] != 0 and all(components[i] == 0 for i in range(3) if i != k):
                return f"{'-' if components[k] < 0 else ''}{name}"
        return "(" + ", ".join(f"{float(c):.3g}" for c in components) + ")"

    def _add(self, expression: Expr, description: str, force: Vector, torque: Vector) -> None:
        label = f"loop joint '{self.name}': {description}"
        if expression == S.Zero:
            self.satisfied.append(label)
            return
        J = self.parent_frame
        wrench = force.to_matrix(J).col_join(torque.to_matrix(J))
        self.constraint_rows[expression] = ConstraintRow(label, wrench)
        self.system.add_holonomic_constraints(expression)

    def _position_row(self, r: Vector, e: Vector) -> None:
        self._add(r.dot(e), f"position along {self._axis_label(e)}", e, Vector(0))

    def _orientation_row(self, child_vector: Vector, parent_vector: Vector) -> None:
        self._add(child_vector.dot(parent_vector), f"orientation ({self._row_axis(child_vector, parent_vector)})",
                  Vector(0), child_vector.cross(parent_vector))

    def _row_axis(self, child_vector: Vector, parent_vector: Vector) -> str:
        """The rotation axis a row constrains, named at the closed configuration (C = J)."""
        J, C = self.parent_frame, self.child_frame
        closed = child_vector.to_matrix(C)  # components in C are those in J when closed
        closed_vector = closed[0] * J.x + closed[1] * J.y + closed[2] * J.z
        return f"rotation about {self._axis_label(closed_vector.cross(parent_vector)).lstrip('-')}"


class CoordinateConstraint(ConnectionBase):
    """``<coordinate_constraint>``: ``q(joint) = ratio * q(reference) + offset`` between two
    one-DoF joints of the tree (a gear or belt; Karana's coordinate constraint)."""

    def __init__(self, name: str, description: CoordinateConstraintDescription) -> None:
        super().__init__(name)
        self.coordinate_description = description
        self.joint: JointBase | None = None
        self.reference: JointBase | None = None

    def resolve(self, links: dict[str, RigidLink], joints: dict[str, JointBase]) -> None:
        """Find both joints by name (define connections)."""
        for role, name in (("joint", self.coordinate_description.joint),
                           ("reference", self.coordinate_description.reference)):
            joint = joints[name]
            if not isinstance(joint, (RevoluteJoint, PrismaticJoint)):
                raise ComponentError(f"coordinate constraint '{self.name}': {role} '{name}' is not a one-DoF joint")
            setattr(self, role, joint)

    def _define_objects(self) -> None:
        self._system = component_system()
        cd, d = self.coordinate_description, self._descriptions
        self.ratio = S.One if cd.ratio == 1.0 else parameter(
            self, "ratio", cd.ratio, f"ratio of coordinate constraint '{self.name}'", d)
        self.offset = parameter(self, "offset", cd.offset, f"offset of coordinate constraint '{self.name}'", d)

    def _define_constraints(self) -> None:
        cd = self.coordinate_description
        expression = self.joint.q[0] - (self.ratio * self.reference.q[0] + self.offset)
        self.constraint_rows[expression] = ConstraintRow(
            f"coordinate constraint '{self.name}': q({cd.joint}) = {cd.ratio:g} q({cd.reference}) + {cd.offset:g}")
        self.system.add_holonomic_constraints(expression)
