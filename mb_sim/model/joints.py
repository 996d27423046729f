"""URDF joints as connections between a parent and a child link.

Each joint defines the child's kinematics relative to the parent link: orientation, position,
angular velocity and velocity in the parent frame.  Inertial velocities follow from these (SymPy
derives them on request); the symbolic core composes the relative quantities link by link.

Frames follow URDF: the joint frame J sits in the parent link frame at the origin's ``xyz``,
rotated by its fixed-axis ``rpy``; at zero coordinates the child link frame coincides with J.

Generalized coordinates and speeds, per joint type:

- revolute, continuous: ``q`` angle about the axis [rad], ``u = q'`` [rad/s];
- prismatic: ``q`` displacement along the axis [m], ``u = q'`` [m/s];
- planar: ``x, y`` translation in the plane normal to the axis (along ``e1, e2``, see
  :class:`PlanarJoint`) then ``theta`` about the axis; speeds are their rates;
- floating: position ``x, y, z`` of the child origin in J [m] and the unit quaternion
  ``qw, qx, qy, qz`` of the child frame relative to J (no singularity anywhere; its norm is kept
  by the simulator), speeds ``vx, vy, vz`` (origin velocity in J axes, m/s, as MuJoCo's free joint) and
  ``wx, wy, wz`` (angular velocity in child-frame axes, rad/s, as MuJoCo and Pinocchio);
- fixed: none.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from sympy import Basic, Matrix, Rational, S
from sympy.physics.mechanics import Force, Point, ReferenceFrame, Torque, Vector, dynamicsymbols

from mb_sim.model.algebra import components, matrix_product
from mb_sim.model.base import ConnectionBase, ConstraintRow, component_system
from mb_sim.model.link import RigidLink
from mb_sim.model.orientation import axis_rotation, body_fixed_rotation, orient, orient_fixed, unit_column
from mb_sim.model.parameters import dynamic_symbol, exact_angle, exact_axis, parameter
from mb_sim.model.requirement import ModelRequirement
from mb_sim.urdf import JointDescription

__all__ = [
    "JointBase", "BallJoint", "FixedJoint", "RevoluteJoint", "PrismaticJoint", "PlanarJoint", "FloatingJoint",
    "JOINT_CLASSES", "axis_basis",
]


class JointBase(ConnectionBase):
    """A URDF joint: places the child link relative to the parent link.

    Subclasses name their coordinates in ``coordinates`` (name, description) and implement
    ``_place_child``.
    """

    required_models = (
        ModelRequirement("parent", RigidLink, "Link the joint is mounted on."),
        ModelRequirement("child", RigidLink, "Link the joint moves."),
    )
    parent: RigidLink
    child: RigidLink
    #: (name, meaning, unit) of each generalized coordinate.
    coordinates: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    #: (name, meaning, unit) of each generalized speed.
    speeds: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    #: Whether the child origin moves relative to the parent frame.
    translates: ClassVar[bool] = False
    #: Index in ``q`` of the scalar part of the joint's unit quaternion (None: it has none).
    quaternion_offset: ClassVar[int | None] = None

    def __init__(self, name: str, description: JointDescription) -> None:
        super().__init__(name)
        self.joint_description = description
        self.mimicked: JointBase | None = None
        self.frame: ReferenceFrame | None = None
        self.point: Point | None = None

    @property
    def is_mimic(self) -> bool:
        """True where the joint's coordinate is tied to another joint's by a mimic constraint."""
        return self.joint_description.mimic is not None

    def _define_objects(self) -> None:
        self._system = component_system()
        d, jd = self._descriptions, self.joint_description
        self.q = Matrix(self._new_coordinates(self.coordinates))
        self.u = Matrix(self._new_coordinates(self.speeds))
        self._offset = [parameter(self, f"origin_{a}", v, f"origin {a} of joint '{self.name}' in link "
                                  f"'{jd.parent}' [m]", d) for a, v in zip("xyz", jd.origin_xyz)]
        self._rpy = [exact_angle(self, f"origin_{a}", v, f"origin {a} angle of joint '{self.name}' [rad]", d)
                     for a, v in zip(("roll", "pitch", "yaw"), jd.origin_rpy)]
        self.frame = ReferenceFrame(self._add_prefix("frame"))
        self.point = Point(self._add_prefix("origin"))

    def _new_coordinates(self, specs: tuple[tuple[str, str, str], ...]) -> list:
        """Prefixed dynamic symbols with their descriptions."""
        out = []
        for name, meaning, unit in specs:
            symbol = dynamic_symbol(self._add_prefix(name))
            self._descriptions[symbol] = f"joint '{self.name}': {meaning} [{unit}]"
            out.append(symbol)
        return out

    def _axis_components(self) -> list:
        """The joint axis's components in the joint frame: exact where axis-aligned, else parameters."""
        axis = self.joint_description.axis
        exact = exact_axis(axis)
        if exact is None:
            exact = [parameter(self, f"axis_{a}", v, f"component {a} of the unit axis of joint '{self.name}'",
                               self._descriptions) for a, v in zip("xyz", axis)]
        return list(exact)

    def _axis_vector(self, axis: list | None = None) -> Vector:
        """The joint axis in the joint frame (`axis`'s components, else :meth:`_axis_components`)."""
        x, y, z = self._axis_components() if axis is None else axis
        return x * self.frame.x + y * self.frame.y + z * self.frame.z

    def _in_child(self, axis: list) -> Vector:
        """The axis with components `axis` in the child's frame: a rotation about an axis leaves
        its components as they are, and SymPy would rotate them through it (long expressions for
        an axis of parameters)."""
        frame = self.child.frame
        return axis[0] * frame.x + axis[1] * frame.y + axis[2] * frame.z

    def _define_kinematics(self) -> None:
        self._local_kinematics = None  # (re)placed here: local_kinematics computes them again
        parent = self.parent
        roll, pitch, yaw = self._rpy
        orient_fixed(self.frame, parent.frame, body_fixed_rotation(roll, pitch, yaw))
        x, y, z = self._offset
        self.point.set_pos(parent.origin, x * parent.frame.x + y * parent.frame.y + z * parent.frame.z)
        self.point.set_vel(parent.frame, 0)
        self._place_child()
        independent = not self.is_mimic
        self.system.add_coordinates(*self.q, independent=independent)
        self.system.add_speeds(*self.u, independent=independent)
        self.system.add_kdes(*self._kdes())

    def _kdes(self) -> list:
        """Kinematic differential equations (``q' - u`` unless the joint says otherwise)."""
        return [qi.diff(dynamicsymbols._t) - ui for qi, ui in zip(self.q, self.u)]

    def _place_child(self) -> None:
        """Orient the child frame in J, position its origin, set relative velocities."""
        raise NotImplementedError

    def _define_constraints(self) -> None:
        mimic = self.joint_description.mimic
        if mimic is None:
            return
        d = self._descriptions
        multiplier = S.One if mimic.multiplier == 1.0 else parameter(
            self, "mimic_multiplier", mimic.multiplier, f"mimic multiplier of joint '{self.name}'", d)
        offset = parameter(self, "mimic_offset", mimic.offset, f"mimic offset of joint '{self.name}'", d)
        expression = self.q[0] - (multiplier * self.mimicked.q[0] + offset)
        self.constraint_rows[expression] = ConstraintRow(
            f"mimic joint '{self.name}': q = {mimic.multiplier:g} q({mimic.joint}) + {mimic.offset:g}")
        self.system.add_holonomic_constraints(expression)

    def generalized_force_loads(self, effort: Basic) -> list:
        """Loads of a joint effort `effort` (torque or force along the axis) on child and parent."""
        raise NotImplementedError(f"{type(self).__name__} takes no joint effort")

    # Local kinematics (after define kinematics): small expressions in this joint's coordinates,
    # which the symbolic core composes link by link.
    def local_kinematics(self) -> tuple[Matrix, Matrix, Matrix, Matrix]:
        """:meth:`rotation`, :meth:`translation`, :meth:`relative_angular_velocity` and
        :meth:`relative_velocity`, computed once after the define steps: the topology key and the
        derivation both read them, and each search of SymPy's position graph walks all of it."""
        cached = getattr(self, "_local_kinematics", None)
        if cached is None:
            cached = self._local_kinematics = (self.rotation(), self.translation(), self.relative_angular_velocity(),
                                               self.relative_velocity())
        return cached

    # Parent -> joint frame -> child: each step is a neighbour's relation SymPy keeps in a dict
    # (``_dcm_cache``, ``_pos_dict``, ``_ang_vel_dict``), read there.  SymPy's own search from the
    # parent to the child lists every path of the whole graph (quadratic in its size: iCub's 640
    # frames and points took 6 s); it is the fallback for a child placed some other way.

    def rotation(self) -> Matrix:
        """Direction cosines mapping child-frame components to parent-frame components."""
        factors = self.rotation_factors()
        return self.parent.frame.dcm(self.child.frame) if factors is None else matrix_product(*factors)

    def rotation_factors(self) -> tuple[Matrix, Matrix] | None:
        """:meth:`rotation` as (parent <- joint frame, constant; joint frame <- child), where the
        joint placed its child through its own frame (None otherwise)."""
        parent, joint, child = self.parent.frame, self.frame, self.child.frame
        if joint in parent._dcm_cache and child in joint._dcm_cache:
            return parent.dcm(joint), joint.dcm(child)
        return None

    def translation(self) -> Matrix:
        """Child origin relative to the parent origin, in parent-frame components."""
        origin, point, child = self.parent.origin, self.point, self.child.origin
        if point in child._pos_dict and origin in point._pos_dict:
            return components(child._pos_dict[point] + point._pos_dict[origin], self.parent.frame)
        return components(child.pos_from(origin), self.parent.frame)

    def relative_angular_velocity(self) -> Matrix:
        """Angular velocity of the child in the parent frame, in child-frame components."""
        parent, joint, child = self.parent.frame, self.frame, self.child.frame
        if joint in child._ang_vel_dict and parent in joint._ang_vel_dict:
            spin = child._ang_vel_dict[joint] + joint._ang_vel_dict[parent]
        else:
            spin = child.ang_vel_in(parent)
        return components(spin, child)

    def relative_velocity(self) -> Matrix:
        """Velocity of the child origin in the parent frame, in parent-frame components."""
        if not self.translates:
            return Matrix([0, 0, 0])
        return components(self.child.origin.vel(self.parent.frame), self.parent.frame)


class FixedJoint(JointBase):
    """Rigidly attaches the child link to the parent link."""

    def _place_child(self) -> None:
        child = self.child
        orient_fixed(child.frame, self.frame)
        child.origin.set_pos(self.point, 0)
        child.origin.set_vel(self.parent.frame, 0)


class RevoluteJoint(JointBase):
    """Rotation about the axis (``revolute`` with limits, ``continuous`` without)."""

    coordinates = (("q", "angle about the axis", "rad"),)
    speeds = (("u", "angular rate about the axis", "rad/s"),)

    def _place_child(self) -> None:
        child = self.child
        axis = self._axis_components()
        self.axis = self._axis_vector(axis)
        orient(child.frame, self.frame, axis_rotation(unit_column(axis), self.q[0]))
        child.frame.set_ang_vel(self.frame, self.u[0] * self._in_child(axis))
        child.origin.set_pos(self.point, 0)
        child.origin.set_vel(self.parent.frame, 0)

    def generalized_force_loads(self, effort: Basic) -> list:
        return [Torque(self.child.frame, effort * self.axis), Torque(self.parent.frame, -effort * self.axis)]


class PrismaticJoint(JointBase):
    """Translation along the axis."""

    translates = True

    coordinates = (("q", "displacement along the axis", "m"),)
    speeds = (("u", "rate of displacement along the axis", "m/s"),)

    def _place_child(self) -> None:
        child = self.child
        self.axis = self._axis_vector()
        orient_fixed(child.frame, self.frame)
        child.origin.set_pos(self.point, self.q[0] * self.axis)
        child.origin.set_vel(self.parent.frame, self.u[0] * self.axis)
        # The parent's material point under the child origin: where the reaction acts.
        self.reaction_point = Point(self._add_prefix("reaction_point"))
        self.reaction_point.set_pos(child.origin, 0)
        self.reaction_point.set_vel(self.parent.frame, 0)

    def generalized_force_loads(self, effort: Basic) -> list:
        return [Force(self.child.origin, effort * self.axis), Force(self.reaction_point, -effort * self.axis)]


class PlanarJoint(JointBase):
    """Translation ``x, y`` in the plane normal to the axis, then rotation ``theta`` about it.

    The in-plane directions are ``e1, e2`` with ``e1 x e2 = axis``: for an axis along z they are
    x and y (likewise cyclically for x and y axes); for other axes ``e1`` is the unit vector along
    ``axis x ex`` (``axis x ey`` if the axis is near ex).
    """

    translates = True
    coordinates = (("x", "position along e1", "m"), ("y", "position along e2", "m"),
                   ("theta", "angle about the axis", "rad"))
    speeds = (("vx", "velocity along e1", "m/s"), ("vy", "velocity along e2", "m/s"),
              ("w", "angular rate about the axis", "rad/s"))

    def _place_child(self) -> None:
        child = self.child
        self.axis, e1, e2 = axis_basis(self.joint_description.axis, self.frame)
        x, y, theta = self.q
        vx, vy, w = self.u
        axis = list(components(self.axis, self.frame))
        orient(child.frame, self.frame, axis_rotation(unit_column(axis), theta))
        child.frame.set_ang_vel(self.frame, w * self._in_child(axis))  # (as a revolute joint's)
        child.origin.set_pos(self.point, x * e1 + y * e2)
        child.origin.set_vel(self.parent.frame, vx * e1 + vy * e2)


class BallJoint(JointBase):
    """Three rotational degrees of freedom about the joint origin (URDF ``type="spherical"``, as
    pybullet reads it, or ``"ball"``, Drake's); orientation by a unit quaternion, so no
    configuration is singular (three revolutes lock at +-90 degrees)."""

    coordinates = (("qw", "orientation quaternion, scalar part", "1"),
                   ("qx", "orientation quaternion, x part", "1"),
                   ("qy", "orientation quaternion, y part", "1"),
                   ("qz", "orientation quaternion, z part", "1"))
    speeds = (("wx", "angular velocity about the child frame's x", "rad/s"),
              ("wy", "angular velocity about the child frame's y", "rad/s"),
              ("wz", "angular velocity about the child frame's z", "rad/s"))
    #: Index in ``q`` of the quaternion's scalar part.
    quaternion_offset: ClassVar[int | None] = 0

    def _place_child(self) -> None:
        child, J = self.child, self.frame
        child.frame.orient_quaternion(J, tuple(self.q))
        wx, wy, wz = self.u
        child.frame.set_ang_vel(J, wx * child.frame.x + wy * child.frame.y + wz * child.frame.z)
        child.origin.set_pos(self.point, 0)
        child.origin.set_vel(self.parent.frame, 0)

    def _kdes(self) -> list:
        return quaternion_kdes(self.q, self.u)


def quaternion_kdes(q, w) -> list:
    """q' = 1/2 q (x) (0, w) for a unit quaternion `q` (w, x, y, z) and the angular velocity `w`
    in the rotated (child) frame."""
    t = dynamicsymbols._t
    qw, qx, qy, qz = q
    wx, wy, wz = w
    half = Rational(1, 2)
    return [
        qw.diff(t) + half * (qx * wx + qy * wy + qz * wz),
        qx.diff(t) - half * (qw * wx + qy * wz - qz * wy),
        qy.diff(t) - half * (qw * wy + qz * wx - qx * wz),
        qz.diff(t) - half * (qw * wz + qx * wy - qy * wx),
    ]


class FloatingJoint(JointBase):
    """Six degrees of freedom; orientation by a unit quaternion (see the module docstring)."""

    translates = True
    quaternion_offset: ClassVar[int | None] = 3

    coordinates = (("x", "position of the child origin along the joint frame's x", "m"),
                   ("y", "position of the child origin along the joint frame's y", "m"),
                   ("z", "position of the child origin along the joint frame's z", "m"),
                   ("qw", "orientation quaternion, scalar part", "1"),
                   ("qx", "orientation quaternion, x part", "1"),
                   ("qy", "orientation quaternion, y part", "1"),
                   ("qz", "orientation quaternion, z part", "1"))
    speeds = (("vx", "velocity of the child origin along the joint frame's x", "m/s"),
              ("vy", "velocity of the child origin along the joint frame's y", "m/s"),
              ("vz", "velocity of the child origin along the joint frame's z", "m/s"),
              ("wx", "angular velocity about the child frame's x", "rad/s"),
              ("wy", "angular velocity about the child frame's y", "rad/s"),
              ("wz", "angular velocity about the child frame's z", "rad/s"))

    def _place_child(self) -> None:
        child, J = self.child, self.frame
        x, y, z, qw, qx, qy, qz = self.q
        vx, vy, vz, wx, wy, wz = self.u
        child.frame.orient_quaternion(J, (qw, qx, qy, qz))
        child.frame.set_ang_vel(J, wx * child.frame.x + wy * child.frame.y + wz * child.frame.z)
        child.origin.set_pos(self.point, x * J.x + y * J.y + z * J.z)
        child.origin.set_vel(self.parent.frame, vx * J.x + vy * J.y + vz * J.z)

    def _kdes(self) -> list:
        t = dynamicsymbols._t
        x, y, z = self.q[:3]
        vx, vy, vz = self.u[:3]
        return [x.diff(t) - vx, y.diff(t) - vy, z.diff(t) - vz, *quaternion_kdes(self.q[3:], self.u[3:])]


def axis_basis(axis: np.ndarray, frame: ReferenceFrame) -> tuple[Vector, Vector, Vector]:
    """``(n, e1, e2)``: the unit `axis` and two unit vectors normal to it with ``e1 x e2 = n``, in `frame`.

    For an axis along z they are x and y (likewise cyclically for x and y axes); for other axes
    ``e1`` is the unit vector along ``axis x ex`` (``axis x ey`` if the axis is near ex).
    """
    unit = (frame.x, frame.y, frame.z)
    exact = exact_axis(axis)
    if exact is not None:
        k = next(i for i, v in enumerate(exact) if v != 0)
        n = exact[k] * unit[k]
        e1 = unit[(k + 1) % 3]
        return n, e1, n.cross(e1)
    helper = np.array([0.0, 1.0, 0.0]) if abs(axis[0]) > 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    to_vector = lambda v: float(v[0]) * unit[0] + float(v[1]) * unit[1] + float(v[2]) * unit[2]  # noqa: E731
    return to_vector(axis), to_vector(e1), to_vector(e2)


#: Component class per URDF joint type.
JOINT_CLASSES: dict[str, type[JointBase]] = {
    "fixed": FixedJoint, "revolute": RevoluteJoint, "continuous": RevoluteJoint,
    "prismatic": PrismaticJoint, "planar": PlanarJoint, "floating": FloatingJoint, "spherical": BallJoint,
}
