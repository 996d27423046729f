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

__all__ = ["axis_rotation", "body_fixed_rotation", "orient", "orient_fixed", "unit_column"]


def body_fixed_rotation(roll: Basic, pitch: Basic, yaw: Basic) -> Matrix:
    """URDF's ``rpy``: ``Rz(yaw) Ry(pitch) Rx(roll)``, mapping child-frame components to parent's
    (entry by entry: SymPy's matrix products cost 4 ms a joint)."""
    cr, sr, cp, sp, cy, sy = cos(roll), sin(roll), cos(pitch), sin(pitch), cos(yaw), sin(yaw)
    return Matrix([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                   [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                   [-sp, cp * sr, cp * cr]])


def unit_column(components: list[Basic]) -> Matrix:
    """The axis `components` divided by their norm (exact axes stay as they are)."""
    norm = sqrt(sum(c**2 for c in components))
    return Matrix([c / norm for c in components])


def axis_rotation(unit: Matrix, angle: Basic) -> Matrix:
    """Rotation by `angle` about the unit axis `unit` (Rodrigues' ``(1 - n n^T) cos + [n]x sin +
    n n^T``, entry by entry; child to parent components)."""
    c, s = cos(angle), sin(angle)
    n = list(unit)
    cross = [[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]]
    return Matrix(3, 3, lambda i, j: (int(i == j) - n[i] * n[j]) * c + cross[i][j] * s + n[i] * n[j])


def orient(child: ReferenceFrame, parent: ReferenceFrame, rotation: Matrix) -> None:
    """Record ``parent.dcm(child) = rotation`` as SymPy's ``orient_*`` methods do (the angular
    velocity is the caller's to set)."""
    child._dcm(parent, rotation)  # SymPy's own bookkeeping of both frames' direction cosines
    child._var_dict = {}


def orient_fixed(child: ReferenceFrame, parent: ReferenceFrame, rotation: Matrix | None = None) -> None:
    """`child` fixed in `parent` at `rotation` (identity when None), with no angular velocity."""
    orient(child, parent, eye(3) if rotation is None else rotation)
    child.set_ang_vel(parent, 0)
