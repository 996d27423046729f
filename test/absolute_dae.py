"""A reference integrator for closed-loop mechanisms in absolute (maximal) coordinates, independent
of mb_sim's derivation: every moving link is a free rigid body (centre-of-mass position, unit
quaternion, velocity and angular velocity in world axes), every joint and loop joint a set of
algebraic constraint rows between two bodies, and the motion the index-1 differential-algebraic
system

    [[M, G^T], [G, 0]] [nu'; lambda] = [f; -gamma - 2 alpha Phi' - alpha^2 Phi]

(Lagrange multipliers lambda, Baumgarte stabilization) integrated by SciPy's ``solve_ivp``.

Only the URDF is read (``urdf_parser_py`` for links, inertials and joints; ElementTree for the
``<mb_sim><loop_joint>`` elements).  The constraint Jacobians G and the acceleration biases gamma
(G nu' = -gamma on the constraint manifold) are written out from rigid-body kinematics:

- point coincidence ``x_B + r_B - x_A - r_A = 0`` (3 rows): velocity ``v + w x r`` per side,
  bias ``w_B x (w_B x r_B) - w_A x (w_A x r_A)``;
- perpendicular unit vectors ``e_A . e_B = 0`` fixed in two bodies (1 row): rate
  ``(w_A - w_B) . (e_A x e_B)``;
- a point of B on a line of A, ``d . n_A = 0`` with ``d`` from the line's point to B's point
  (1 row): rate ``d' . n_A + d . (w_A x n_A)``.

Joints: revolute/continuous = coincidence + the axis (in the parent) perpendicular to two child
axes normal to it; prismatic = the child's axes parallel to J's (three perpendicularity rows
``Cy.Jz, Cz.Jx, Cx.Jy``) + the child's origin on J's axis line (two rows); floating = none; fixed =
the child merged into its parent's body.  Loop joints: spherical = coincidence of J and C;
universal = that and ``b1_C . a_J = 0``; revolute = that and ``a_C`` normal to ``b1, b2`` of J.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import cho_factor, cho_solve

GRAVITY = 9.81  # [m/s^2], along -z of the world


# -- small rigid-body helpers ------------------------------------------------------------------
def rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def transform(xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)) -> np.ndarray:
    """4x4 homogeneous transform of a URDF origin."""
    T = np.eye(4)
    T[:3, :3] = rpy_matrix(rpy)
    T[:3, 3] = xyz
    return T


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of (k, 3) arrays (np.cross's axis handling costs more than this)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1)


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices [v]x of the rows of `v` (..., 3) -> (..., 3, 3)."""
    z = np.zeros(v.shape[:-1])
    return np.stack([np.stack([z, -v[..., 2], v[..., 1]], -1),
                     np.stack([v[..., 2], z, -v[..., 0]], -1),
                     np.stack([-v[..., 1], v[..., 0], z], -1)], -2)


def quaternion_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions (w, x, y, z), rows of `q` (n, 4) -> (n, 3, 3)."""
    w, x, y, z = q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def matrix_quaternion(R: np.ndarray) -> np.ndarray:
    """A unit quaternion (w, x, y, z) of rotation matrix `R` (Shepperd's method: the largest
    diagonal term first, so no division by a small number)."""
    trace = np.trace(R)
    k = int(np.argmax([trace, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        s = 2 * math.sqrt(1 + trace)
        q = [s / 4, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif k == 1:
        s = 2 * math.sqrt(1 + 2 * R[0, 0] - trace)
        q = [(R[2, 1] - R[1, 2]) / s, s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif k == 2:
        s = 2 * math.sqrt(1 + 2 * R[1, 1] - trace)
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s]
    else:
        s = 2 * math.sqrt(1 + 2 * R[2, 2] - trace)
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4]
    return np.array(q)


def quaternion_rates(quat: np.ndarray, w: np.ndarray) -> np.ndarray:
    """q' = (0, w) q / 2 of unit quaternions (n, 4) turning at angular velocities w (n, 3) in world
    axes (the rotation's rate R' = [w]x R)."""
    q0, qv = quat[:, :1], quat[:, 1:]
    return 0.5 * np.hstack([-np.einsum("ki,ki->k", w, qv)[:, None], q0 * w + cross(w, qv)])


def normal_pair(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors normal to the unit `axis` and to each other (any such pair will do)."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(axis, e1)


def universal_cross_axis(axis: np.ndarray) -> np.ndarray:
    """b1 of a universal loop joint's axis (URDF conventions of mb_sim's ``<loop_joint>``): y for
    an axis along x, z for one along y, x for one along z."""
    k = int(np.argmax(np.abs(axis)))
    if not np.isclose(abs(axis[k]), 1.0):
        raise NotImplementedError(f"universal loop joint with an axis {axis} not along a frame axis")
    return np.eye(3)[(k + 1) % 3]


# -- the mechanism -----------------------------------------------------------------------------
@dataclass
class Body:
    """A rigid body: one moving link and the links welded to it by fixed joints.  Its frame is
    the first link's; ``com`` and ``inertia`` (about the centre of mass) are in that frame."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    links: dict[str, np.ndarray] = field(default_factory=dict)  # link -> its pose in the body frame


@dataclass
class JointInfo:
    """A tree joint as the URDF gives it."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray  # 4x4: J in the parent link
    axis: np.ndarray


@dataclass
class LoopJoint:
    """An ``<mb_sim><loop_joint>``: frame J in the parent link, C in the child link, axis in J."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    child_origin: np.ndarray
    axis: np.ndarray


@dataclass
class ConstraintSet:
    """The constraint rows of one primitive kind, vectorized over its instances: body indices
    ``a``, ``b`` (the ground is index n_bodies) and vectors fixed in them, relative to the
    centre of mass and in body axes."""

    a: list[int] = field(default_factory=list)
    b: list[int] = field(default_factory=list)
    va: list[np.ndarray] = field(default_factory=list)  # point (coincidence, line) or unit vector
    vb: list[np.ndarray] = field(default_factory=list)
    na: list[np.ndarray] = field(default_factory=list)  # line normals (line rows only)
    names: list[str] = field(default_factory=list)

    def add(self, name: str, a: int, va: np.ndarray, b: int, vb: np.ndarray, na: np.ndarray | None = None) -> None:
        """One instance, named after its joint."""
        self.names.append(name)
        self.a.append(a)
        self.b.append(b)
        self.va.append(np.asarray(va, float))
        self.vb.append(np.asarray(vb, float))
        self.na.append(np.zeros(3) if na is None else np.asarray(na, float))

    def freeze(self) -> None:
        """Lists to arrays, for the vectorized evaluation."""
        self.a, self.b = np.array(self.a, int), np.array(self.b, int)
        self.va, self.vb = np.array(self.va).reshape(-1, 3), np.array(self.vb).reshape(-1, 3)
        self.na = np.array(self.na).reshape(-1, 3)


class Mechanism:
    """The bodies, the fixed (ground) frames and the constraint rows read from a URDF."""

    def __init__(self, urdf_text: str) -> None:
        self.links, self.joints = parse_tree(urdf_text)
        self.loops = parse_loop_joints(urdf_text)
        self.root = root_link(self.joints, list(self.links))
        self.bodies: list[Body] = []
        self.body_of: dict[str, int] = {}  # link -> body index; the ground is len(bodies)
        self.ground_pose: dict[str, np.ndarray] = {}  # ground links' world poses
        self._group_links()
        self.n = len(self.bodies)
        for link, k in list(self.body_of.items()):
            if k == -1:
                self.body_of[link] = self.n
        self.coincidences, self.perpendiculars, self.lines = ConstraintSet(), ConstraintSet(), ConstraintSet()
        for joint in self.joints.values():
            self._add_joint(joint)
        for loop in self.loops:
            self._add_loop(loop)
        for group in (self.coincidences, self.perpendiculars, self.lines):
            group.freeze()
        self.m = 3 * len(self.coincidences.a) + len(self.perpendiculars.a) + len(self.lines.a)
        self.masses = np.array([b.mass for b in self.bodies])
        self.inertias = np.array([b.inertia for b in self.bodies])
        self.inverse_inertias = np.linalg.inv(self.inertias)

    # structure
    def _group_links(self) -> None:
        """Bodies from the tree: the root and links welded to it are the ground; a fixed joint
        merges its child into the parent's body; every other joint starts a body."""
        children: dict[str, list[JointInfo]] = {}
        for joint in self.joints.values():
            children.setdefault(joint.parent, []).append(joint)
        self.body_of[self.root], self.ground_pose[self.root] = -1, np.eye(4)
        stack = [self.root]
        while stack:
            parent = stack.pop()
            for joint in children.get(parent, []):
                k = self.body_of[parent]
                if joint.type == "fixed" and k == -1:
                    self.body_of[joint.child] = -1
                    self.ground_pose[joint.child] = self.ground_pose[parent] @ joint.origin
                elif joint.type == "fixed":
                    self.body_of[joint.child] = k
                    self.bodies[k].links[joint.child] = self.bodies[k].links[parent] @ joint.origin
                else:
                    self.body_of[joint.child] = len(self.bodies)
                    self.bodies.append(Body(joint.child, links={joint.child: np.eye(4)}))
                stack.append(joint.child)
        for body in self.bodies:
            self._lump_inertials(body)

    def _lump_inertials(self, body: Body) -> None:
        """Mass, centre of mass and central inertia of a body from its links' inertials."""
        parts = [(pose, self.links[link]) for link, pose in body.links.items() if self.links[link] is not None]
        for pose, (mass, com, inertia) in parts:
            body.mass += mass
            body.com = body.com + mass * (pose[:3, :3] @ com + pose[:3, 3])
        if body.mass <= 0:
            raise ValueError(f"body {body.name!r} has no mass")
        body.com = body.com / body.mass
        for pose, (mass, com, inertia) in parts:
            R = pose[:3, :3]
            offset = R @ com + pose[:3, 3] - body.com
            parallel_axis = mass * (offset @ offset * np.eye(3) - np.outer(offset, offset))
            body.inertia = body.inertia + R @ inertia @ R.T + parallel_axis

    def frame(self, link: str, pose_in_link: np.ndarray) -> tuple[int, np.ndarray]:
        """(body index, the frame's pose in body axes about the body's centre of mass)."""
        k = self.body_of[link]
        T = (self.ground_pose[link] if k == self.n else self.bodies[k].links[link]) @ pose_in_link
        T = T.copy()
        if k < self.n:
            T[:3, 3] -= self.bodies[k].com
        return k, T

    # constraints
    def _add_joint(self, joint: JointInfo) -> None:
        """The rows of a tree joint (the child's frame at zero coordinate is J)."""
        if joint.type in ("fixed", "floating"):
            return
        p, J = self.frame(joint.parent, joint.origin)
        c, C = self.frame(joint.child, np.eye(4))
        axis = joint.axis / np.linalg.norm(joint.axis)
        e1, e2 = normal_pair(axis)
        if joint.type in ("revolute", "continuous"):
            self.coincidences.add(joint.name, p, J[:3, 3], c, C[:3, 3])
            for e in (e1, e2):
                self.perpendiculars.add(joint.name, p, J[:3, :3] @ axis, c, C[:3, :3] @ e)
        elif joint.type == "prismatic":
            for i, j in ((2, 1), (0, 2), (1, 0)):  # Jz.Cy, Jx.Cz, Jy.Cx
                self.perpendiculars.add(joint.name, p, J[:3, i], c, C[:3, j])
            for e in (e1, e2):
                self.lines.add(joint.name, p, J[:3, 3], c, C[:3, 3], J[:3, :3] @ e)
        else:
            raise NotImplementedError(f"joint {joint.name!r} of type {joint.type!r}")

    def _add_loop(self, loop: LoopJoint) -> None:
        """The rows of a loop joint: J (parent) and C (child) share their origin, and more."""
        p, J = self.frame(loop.parent, loop.origin)
        c, C = self.frame(loop.child, loop.child_origin)
        self.coincidences.add(loop.name, p, J[:3, 3], c, C[:3, 3])
        axis = loop.axis / np.linalg.norm(loop.axis)
        if loop.type == "spherical":
            return
        if loop.type == "universal":
            self.perpendiculars.add(loop.name, p, J[:3, :3] @ axis, c, C[:3, :3] @ universal_cross_axis(axis))
        elif loop.type in ("revolute", "continuous"):
            for e in normal_pair(axis):
                self.perpendiculars.add(loop.name, p, J[:3, :3] @ e, c, C[:3, :3] @ axis)
        else:
            raise NotImplementedError(f"loop joint {loop.name!r} of type {loop.type!r}")

    def link_pose(self, link: str, positions: np.ndarray, rotations: np.ndarray) -> np.ndarray:
        """World pose (4x4) of `link` from the bodies' centres of mass and rotations."""
        k = self.body_of[link]
        if k == self.n:
            return self.ground_pose[link].copy()
        body = self.bodies[k]
        T = np.eye(4)
        T[:3, :3] = rotations[k]
        T[:3, 3] = positions[k] - rotations[k] @ body.com
        return T @ body.links[link]


# -- URDF reading --------------------------------------------------------------------------------
def parse_tree(urdf_text: str) -> tuple[dict[str, tuple | None], dict[str, JointInfo]]:
    """Links (name -> (mass, centre of mass, inertia about it in link axes) or None) and joints,
    by urdf_parser_py (the ``<mb_sim>`` element stripped: it does not know it)."""
    from urdf_parser_py.urdf import URDF

    robot = URDF.from_xml_string(re.sub(r"<mb_sim>.*?</mb_sim>", "", urdf_text, flags=re.S))
    links: dict[str, tuple | None] = {}
    for link in robot.links:
        inertial = link.inertial
        if inertial is None or inertial.mass is None:
            links[link.name] = None
            continue
        origin = inertial.origin
        R = rpy_matrix(origin.rpy if origin is not None and origin.rpy else (0, 0, 0))
        com = np.array(origin.xyz if origin is not None and origin.xyz else (0, 0, 0), float)
        i = inertial.inertia
        I = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]], float)
        links[link.name] = (float(inertial.mass), com, R @ I @ R.T)
    joints = {}
    for joint in robot.joints:
        origin = joint.origin
        T = transform(origin.xyz or (0, 0, 0), origin.rpy or (0, 0, 0)) if origin is not None else np.eye(4)
        axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), float)
        joints[joint.name] = JointInfo(joint.name, joint.type, joint.parent, joint.child, T, axis)
    return links, joints


def _floats(text: str | None, default: tuple) -> tuple:
    """Numbers of an XML attribute, or `default` without one."""
    return tuple(float(v) for v in text.split()) if text else default


def _origin(element: ET.Element | None) -> np.ndarray:
    """The transform of an ``<origin xyz rpy>``-like element (identity without one)."""
    if element is None:
        return np.eye(4)
    return transform(_floats(element.get("xyz"), (0.0, 0.0, 0.0)), _floats(element.get("rpy"), (0.0, 0.0, 0.0)))


def parse_loop_joints(urdf_text: str) -> list[LoopJoint]:
    """The ``<mb_sim><loop_joint>`` elements, by ElementTree."""
    loops = []
    for element in ET.fromstring(urdf_text).iter("loop_joint"):
        axis = element.find("axis")
        loops.append(LoopJoint(element.get("name"), element.get("type"), element.get("parent"), element.get("child"),
                               _origin(element.find("origin")), _origin(element.find("child_origin")),
                               np.array(_floats(axis.get("xyz") if axis is not None else None, (1.0, 0.0, 0.0)))))
    return loops


def root_link(joints: dict[str, JointInfo], links: list[str]) -> str:
    """The one link that is no joint's child."""
    roots = set(links) - {j.child for j in joints.values()}
    if len(roots) != 1:
        raise ValueError(f"expected one root link, found {sorted(roots)}")
    return roots.pop()


# -- constraint kinematics -------------------------------------------------------------------------
@dataclass
class Kinematics:
    """World state of the bodies with the ground appended (index n): centre of mass x, rotation
    R, velocity v and angular velocity w."""

    x: np.ndarray
    R: np.ndarray
    v: np.ndarray
    w: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, R: np.ndarray, v: np.ndarray, w: np.ndarray) -> Kinematics:
        """The bodies' state with the ground's (at rest, at the world's origin) appended."""
        zero = np.zeros((1, 3))
        return cls(np.vstack([x, zero]), np.concatenate([R, np.eye(3)[None]]), np.vstack([v, zero]),
                   np.vstack([w, zero]))


def _columns(bodies: np.ndarray, offset: int) -> np.ndarray:
    """Velocity columns offset..offset+2 (0: linear, 3: angular) of `bodies` -> (k, 3)."""
    return 6 * bodies[:, None] + offset + np.arange(3)


def coincidence_rows(s: ConstraintSet, k: Kinematics, G: np.ndarray, row: int):
    """Phi = x_B + r_B - x_A - r_A (3 rows each), its Jacobian written into G from `row`, and
    the bias w_B x (w_B x r_B) - w_A x (w_A x r_A)."""
    n = len(s.a)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    rA = np.einsum("kij,kj->ki", k.R[s.a], s.va)
    rB = np.einsum("kij,kj->ki", k.R[s.b], s.vb)
    phi = k.x[s.b] + rB - k.x[s.a] - rA
    rows = row + 3 * np.arange(n)[:, None] + np.arange(3)  # (n, 3)
    eye = np.broadcast_to(np.eye(3), (n, 3, 3))
    G[rows[:, :, None], _columns(s.b, 0)[:, None, :]] = eye
    G[rows[:, :, None], _columns(s.a, 0)[:, None, :]] = -eye
    G[rows[:, :, None], _columns(s.b, 3)[:, None, :]] = -skew(rB)
    G[rows[:, :, None], _columns(s.a, 3)[:, None, :]] = skew(rA)
    wA, wB = k.w[s.a], k.w[s.b]
    bias = cross(wB, cross(wB, rB)) - cross(wA, cross(wA, rA))
    return phi.ravel(), bias.ravel()


def perpendicular_rows(s: ConstraintSet, k: Kinematics, G: np.ndarray, row: int):
    """Phi = e_A . e_B, Jacobian (w_A - w_B) . (e_A x e_B), bias (w_A - w_B) . d(e_A x e_B)/dt
    at constant angular velocities."""
    n = len(s.a)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    eA = np.einsum("kij,kj->ki", k.R[s.a], s.va)
    eB = np.einsum("kij,kj->ki", k.R[s.b], s.vb)
    wA, wB = k.w[s.a], k.w[s.b]
    c = cross(eA, eB)
    rows = row + np.arange(n)[:, None]
    G[rows, _columns(s.a, 3)] = c
    G[rows, _columns(s.b, 3)] = -c
    c_rate = cross(cross(wA, eA), eB) + cross(eA, cross(wB, eB))
    return np.einsum("ki,ki->k", eA, eB), np.einsum("ki,ki->k", wA - wB, c_rate)


def line_rows(s: ConstraintSet, k: Kinematics, G: np.ndarray, row: int):
    """Phi = d . n_A with d = (x_B + r_B) - (x_A + r_A) and n_A fixed in A; Jacobian
    d' . n_A + d . (w_A x n_A); bias (w_B x (w_B x r_B) - w_A x (w_A x r_A)) . n_A
    + 2 d' . (w_A x n_A) + d . (w_A x (w_A x n_A))."""
    n = len(s.a)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    rA = np.einsum("kij,kj->ki", k.R[s.a], s.va)
    rB = np.einsum("kij,kj->ki", k.R[s.b], s.vb)
    nA = np.einsum("kij,kj->ki", k.R[s.a], s.na)
    d = k.x[s.b] + rB - k.x[s.a] - rA
    vA, vB, wA, wB = k.v[s.a], k.v[s.b], k.w[s.a], k.w[s.b]
    d_rate = vB + cross(wB, rB) - vA - cross(wA, rA)
    rows = row + np.arange(n)[:, None]
    G[rows, _columns(s.b, 0)] = nA
    G[rows, _columns(s.b, 3)] = cross(rB, nA)
    G[rows, _columns(s.a, 0)] = -nA
    G[rows, _columns(s.a, 3)] = -cross(rA, nA) + cross(nA, d)
    wn = cross(wA, nA)
    dot = lambda p, q: np.einsum("ki,ki->k", p, q)  # noqa: E731
    bias = (dot(cross(wB, cross(wB, rB)) - cross(wA, cross(wA, rA)), nA) + 2 * dot(d_rate, wn)
            + dot(d, cross(wA, wn)))
    return dot(d, nA), bias


def constraints(mech: Mechanism, k: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Phi, G, gamma) of every row: G maps the bodies' velocities (v, w per body) to Phi', and
    G nu' + gamma = Phi''."""
    G = np.zeros((mech.m, 6 * (mech.n + 1)))
    parts, row = [], 0
    for rows, group, size in ((coincidence_rows, mech.coincidences, 3), (perpendicular_rows, mech.perpendiculars, 1),
                              (line_rows, mech.lines, 1)):
        parts.append(rows(group, k, G, row))
        row += size * len(group.a)
    phi = np.concatenate([p for p, _ in parts])
    gamma = np.concatenate([g for _, g in parts])
    return phi, G[:, :6 * mech.n], gamma


# -- dynamics ----------------------------------------------------------------------------------------
class AbsoluteDAE:
    """Rates of the absolute-coordinate state y = (x (n, 3), quaternion (n, 4), v (n, 3), w (n, 3)),
    all in world axes, x and v those of the centres of mass."""

    def __init__(self, mech: Mechanism, gravity: float = GRAVITY, baumgarte: float = 10.0) -> None:
        self.mech, self.gravity, self.alpha = mech, gravity, baumgarte

    def unpack(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """x, unit quaternions (renormalized), v, w."""
        n = self.mech.n
        x, quat = y[:3 * n].reshape(n, 3), y[3 * n:7 * n].reshape(n, 4)
        v, w = y[7 * n:10 * n].reshape(n, 3), y[10 * n:].reshape(n, 3)
        return x, quat / np.linalg.norm(quat, axis=1)[:, None], v, w

    def world_inertias(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Central inertias and their inverses in world axes: R I R^T."""
        Rt = np.transpose(R, (0, 2, 1))
        return R @ self.mech.inertias @ Rt, R @ self.mech.inverse_inertias @ Rt

    def accelerations(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(nu' (n, 6), multipliers): M nu' + G^T lambda = f with G nu' = -gamma - 2 alpha Phi'
        - alpha^2 Phi, solved by eliminating nu' (M is block diagonal: the Schur complement
        G M^-1 G^T is the KKT system's)."""
        mech, n = self.mech, self.mech.n
        x, quat, v, w = self.unpack(y)
        R = quaternion_matrices(quat)
        I, I_inv = self.world_inertias(R)
        force = np.zeros((n, 3))
        force[:, 2] = -mech.masses * self.gravity
        torque = -cross(w, np.einsum("kij,kj->ki", I, w))  # gyroscopic
        phi, G, gamma = constraints(mech, Kinematics.of(x, R, v, w))
        nu = np.hstack([v, w]).ravel()
        rhs = -gamma - 2 * self.alpha * (G @ nu) - self.alpha**2 * phi
        Gb = G.reshape(mech.m, n, 6)
        GMinv = np.concatenate([Gb[:, :, :3] / mech.masses[None, :, None],
                                np.einsum("mkj,kji->mki", Gb[:, :, 3:], I_inv)], axis=2).reshape(mech.m, 6 * n)
        free = np.hstack([force / mech.masses[:, None], np.einsum("kij,kj->ki", I_inv, torque)]).ravel()
        schur = GMinv @ G.T
        multipliers = cho_solve(cho_factor(schur), G @ free - rhs)
        return (free - GMinv.T @ multipliers).reshape(n, 6), multipliers

    def rate(self, t: float, y: np.ndarray) -> np.ndarray:
        """dy/dt: x' = v, q' = (0, w) q / 2, (v', w') from the constraints."""
        x, quat, v, w = self.unpack(y)
        a, _ = self.accelerations(y)
        return np.concatenate([v.ravel(), quaternion_rates(quat, w).ravel(), a[:, :3].ravel(), a[:, 3:].ravel()])

    def energy(self, y: np.ndarray) -> tuple[float, float]:
        """(kinetic, gravitational potential) energy [J], the potential zero at z = 0."""
        x, quat, v, w = self.unpack(y)
        I, _ = self.world_inertias(quaternion_matrices(quat))
        kinetic = 0.5 * (self.mech.masses @ np.einsum("ki,ki->k", v, v) + np.einsum("ki,kij,kj->", w, I, w))
        return float(kinetic), float(self.gravity * self.mech.masses @ x[:, 2])

    def residuals(self, y: np.ndarray) -> tuple[float, float, float]:
        """Largest |Phi| and |G nu| (how far the state is from the constraints), and the smallest
        singular value of G (near zero: a singular configuration, where the multipliers and the
        motion's sensitivity grow without bound)."""
        x, quat, v, w = self.unpack(y)
        phi, G, _ = constraints(self.mech, Kinematics.of(x, quaternion_matrices(quat), v, w))
        return (float(np.max(np.abs(phi))), float(np.max(np.abs(G @ np.hstack([v, w]).ravel()))),
                float(np.linalg.svd(G, compute_uv=False)[-1]))


# -- initial state from link poses and joint speeds ---------------------------------------------
def link_twists(mech: Mechanism, poses: dict[str, np.ndarray],
                joint_speeds: dict[str, float | np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each link's (origin velocity, angular velocity) in world axes, propagated from the root
    through the tree joints: revolute adds qdot a, prismatic qdot a (a in world axes); a floating
    joint's speeds are (origin velocity in J axes, angular velocity in the child's axes)."""
    twists = {mech.root: (np.zeros(3), np.zeros(3))}
    pending = list(mech.joints.values())
    while pending:
        joint = next(j for j in pending if j.parent in twists)
        pending.remove(joint)
        v, w = twists[joint.parent]
        P, C = poses[joint.parent], poses[joint.child]
        v = v + cross(w, C[:3, 3] - P[:3, 3])  # the child's origin carried by the parent
        axis = P[:3, :3] @ joint.origin[:3, :3] @ (joint.axis / np.linalg.norm(joint.axis))
        speed = joint_speeds.get(joint.name, 0.0)
        if joint.type in ("revolute", "continuous"):
            w = w + speed * axis
        elif joint.type == "prismatic":
            v = v + speed * axis
        elif joint.type == "floating":
            speed = np.asarray(speed, float) if np.ndim(speed) else np.zeros(6)
            v = v + P[:3, :3] @ joint.origin[:3, :3] @ speed[:3]
            w = w + C[:3, :3] @ speed[3:]
        elif joint.type != "fixed":
            raise NotImplementedError(f"joint {joint.name!r} of type {joint.type!r}")
        twists[joint.child] = (v, w)
    return twists


def initial_state(mech: Mechanism, poses: dict[str, np.ndarray],
                  twists: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The absolute state y of the bodies from their links' world poses and twists."""
    x, quat, v, w = [], [], [], []
    for body in mech.bodies:
        T = poses[body.name] @ np.linalg.inv(body.links[body.name])
        origin_velocity, omega = twists[body.name]
        offset = T[:3, :3] @ body.com
        x.append(T[:3, 3] + offset)
        quat.append(matrix_quaternion(T[:3, :3]))
        v.append(origin_velocity + cross(omega, offset + T[:3, 3] - poses[body.name][:3, 3]))
        w.append(omega)
    return np.concatenate([np.ravel(x), np.ravel(quat), np.ravel(v), np.ravel(w)])


# -- simulation --------------------------------------------------------------------------------------
@dataclass
class Solution:
    """What ``simulate`` returns: per output time, every link's world pose, the energies, the
    constraint residuals (largest |Phi| and |G nu|) and the smallest singular value of G."""

    times: np.ndarray
    link_poses: list[dict[str, np.ndarray]]
    kinetic: np.ndarray
    potential: np.ndarray
    position_residual: np.ndarray
    velocity_residual: np.ndarray
    singular_value: np.ndarray
    evaluations: int

    @property
    def energy(self) -> np.ndarray:
        """Kinetic plus potential energy per output time [J]."""
        return self.kinetic + self.potential


class Stalled(RuntimeError):
    """The integration needed more rate evaluations than allowed: near a singular configuration
    the rates are ill-conditioned and the error control takes ever smaller steps."""


def simulate(mech: Mechanism, y0: np.ndarray, times, gravity: float = GRAVITY, baumgarte: float = 10.0,
             rtol: float = 1e-11, atol: float = 1e-12, max_evaluations: int = 100_000) -> Solution:
    """Integrate the absolute-coordinate DAE from y0 (at t = 0) with DOP853 and sample it at
    `times` (SciPy's t_eval: the steps are chosen by the error control alone).  Stalled after
    `max_evaluations` rate evaluations."""
    dae = AbsoluteDAE(mech, gravity, baumgarte)
    times = np.asarray(times, float)
    count = iter(range(max_evaluations))

    def rate(t: float, y: np.ndarray) -> np.ndarray:
        if next(count, None) is None:
            raise Stalled(f"{max_evaluations} rate evaluations by t = {t:.6g} s")
        return dae.rate(t, y)

    solution = solve_ivp(rate, (0.0, float(times[-1])), y0, method="DOP853", t_eval=times, rtol=rtol, atol=atol)
    if not solution.success:
        raise RuntimeError(solution.message)
    poses, energies, residuals = [], [], []
    for y in solution.y.T:
        x, quat, _, _ = dae.unpack(y)
        R = quaternion_matrices(quat)
        poses.append({link: mech.link_pose(link, x, R) for link in mech.body_of})
        energies.append(dae.energy(y))
        residuals.append(dae.residuals(y))
    (kinetic, potential), (phi, phi_rate, singular) = np.array(energies).T, np.array(residuals).T
    return Solution(solution.t, poses, kinetic, potential, phi, phi_rate, singular, solution.nfev)


def load(urdf_path: str | Path) -> Mechanism:
    """The mechanism of a URDF file."""
    return Mechanism(Path(urdf_path).read_text())
