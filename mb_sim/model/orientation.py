"""Orienting one frame in another with the rotation built here, without SymPy's costly paths.

SymPy's ``orient_body_fixed``, ``orient_axis`` and ``orient_explicit`` differentiate the new
rotation in time for the angular velocity (``orient_explicit`` the whole matrix), and
``orient_axis`` expresses and normalizes its axis through a search of the frame graph; the
joints set their own angular velocities right after.  Here the rotation is built from small
matrices and recorded the way those methods record it, which was a third of parsing a humanoid
with 200 joints (iCub).
"""
from __future__ import annotations

from sympy import Basic, Matrix, cos, eye, sin, sqrt
from sympy.physics.vector import ReferenceFrame

from mb_sim.model.algebra import matrix_product

__all__ = ["axis_rotation", "body_fixed_rotation", "orient", "orient_fixed", "unit_column"]


def _rotation_about(axis: int, angle: Basic) -> Matrix:
    """The rotation by `angle` about coordinate axis `axis` (0: x, 1: y, 2: z)."""
    c, s = cos(angle), sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3  # the plane it turns, in cyclic order
    rotation = eye(3)
    rotation[i, i], rotation[i, j], rotation[j, i], rotation[j, j] = c, -s, s, c
    return rotation


def body_fixed_rotation(roll: Basic, pitch: Basic, yaw: Basic) -> Matrix:
    """URDF's ``rpy``: ``Rz(yaw) Ry(pitch) Rx(roll)``, mapping child-frame components to parent's."""
    return matrix_product(matrix_product(_rotation_about(2, yaw), _rotation_about(1, pitch)),
                          _rotation_about(0, roll))


def unit_column(components: list[Basic]) -> Matrix:
    """The axis `components` divided by their norm (exact axes stay as they are)."""
    column = Matrix(components)
    return column / sqrt(sum(c**2 for c in components))


def axis_rotation(unit: Matrix, angle: Basic) -> Matrix:
    """Rotation by `angle` about the unit axis `unit` (Rodrigues; child to parent components)."""
    x, y, z = unit
    cross = Matrix([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    outer = unit * unit.T
    return (eye(3) - outer) * cos(angle) + cross * sin(angle) + outer


def orient(child: ReferenceFrame, parent: ReferenceFrame, rotation: Matrix) -> None:
    """Record ``parent.dcm(child) = rotation`` as SymPy's ``orient_*`` methods do (the angular
    velocity is the caller's to set)."""
    child._dcm(parent, rotation)  # SymPy's own bookkeeping of both frames' direction cosines
    child._var_dict = {}


def orient_fixed(child: ReferenceFrame, parent: ReferenceFrame, rotation: Matrix | None = None) -> None:
    """`child` fixed in `parent` at `rotation` (identity when None), with no angular velocity."""
    orient(child, parent, eye(3) if rotation is None else rotation)
    child.set_ang_vel(parent, 0)
