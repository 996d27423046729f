"""The robot's TF tree, as the node publishes it and recordings store it, and base twists for
``/odom``.

Pure Python (no rclpy).  Every joint is one TF edge parent link -> child link, its transform the
child's pose in the parent, ``inv(T_parent) @ T_child`` from the simulator's world poses.  Frame
ids follow robot_state_publisher: ``frame_prefix + link``; the root link named ``world`` *is* the
world frame and is called ``world_frame`` (no prefix, it is shared); any other root link hangs
from ``world_frame`` by an identity transform.  Floating and planar joints out of the root (the
world, or a link fixed to it) move a mobile base: they also get ``/odom``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sympy import Matrix, Symbol, lambdify

from mb_sim.model import FloatingJoint, PlanarJoint, Robot

__all__ = ["Edge", "FrameTree", "frame_tree", "relative_pose", "edge_poses", "EdgePoses", "quaternions",
           "base_twist_function", "ROBOT_WORLD_LINK"]

#: A root link of this name stands for the world frame itself.
ROBOT_WORLD_LINK = "world"


@dataclass(frozen=True)
class Edge:
    """One TF edge: the pose of link `child_link` in link `parent_link` (None: the world frame
    above the root link), published as `parent_frame` -> `child_frame`."""

    joint: str | None
    parent_link: str | None
    child_link: str
    parent_frame: str
    child_frame: str
    odometry: bool = False


@dataclass(frozen=True)
class FrameTree:
    """The edges of a robot: ``moving`` go to /tf, ``static`` to /tf_static."""

    moving: list[Edge]
    static: list[Edge]

    @property
    def odometry(self) -> list[Edge]:
        """Moving edges that also go to /odom."""
        return [edge for edge in self.moving if edge.odometry]


def frame_tree(robot: Robot, world_frame: str = "world", frame_prefix: str = "") -> FrameTree:
    """The TF edges of `robot` (see the module docstring)."""
    root = robot.root_link.name

    def frame(link: str) -> str:
        return world_frame if link == root == ROBOT_WORLD_LINK else frame_prefix + link

    moving, static = [], []
    if root != ROBOT_WORLD_LINK:
        static.append(Edge(None, None, root, world_frame, frame(root)))
    for joint in robot.joints.values():
        description = joint.joint_description
        edge = Edge(joint.name, description.parent, description.child, frame(description.parent),
                    frame(description.child),
                    odometry=isinstance(joint, (FloatingJoint, PlanarJoint)) and description.parent == root)
        (static if description.type == "fixed" else moving).append(edge)
    return FrameTree(moving, static)


def relative_pose(parent: np.ndarray | None, child: np.ndarray) -> np.ndarray:
    """Pose of `child` in `parent` (4x4 world poses; None is the world frame)."""
    if parent is None:
        return np.array(child, dtype=float)
    return np.linalg.solve(parent, child)


class EdgePoses:
    """All edges' child poses in their parents at once, from the model's ``link_poses`` rows
    (per link: rotation row-major, then position), as the node needs them every period."""

    def __init__(self, edges: list[Edge], link_names: list[str]) -> None:
        index = {name: k for k, name in enumerate(link_names)}
        world = len(link_names)  # an identity row after the links' for parents outside the model
        self._parent = np.array([index.get(edge.parent_link, world) for edge in edges], dtype=np.intp)
        self._child = np.array([index[edge.child_link] for edge in edges], dtype=np.intp)
        self._rows = np.zeros((world + 1, 12))
        self._rows[world, [0, 4, 8]] = 1.0

    def __call__(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R, p)``: per edge the rotation (n, 3, 3) and position (n, 3) of the child in its parent."""
        self._rows[:-1] = rows
        parent, child = self._rows[self._parent], self._rows[self._child]
        parent_t = parent[:, :9].reshape(-1, 3, 3).transpose(0, 2, 1)  # R_parent^T
        rotation = parent_t @ child[:, :9].reshape(-1, 3, 3)
        position = (parent_t @ (child[:, 9:12] - parent[:, 9:12])[:, :, None])[:, :, 0]
        return rotation, position


def _product_map() -> tuple[np.ndarray, np.ndarray]:
    """``W, c`` with ``R.ravel() @ W + c`` = the 16 products 4 q_i q_j of R's quaternion, row i
    over j, components in the order x, y, z, w (R row-major: r00 r01 r02 r10 ... r22)."""
    x, y, z, w = range(4)
    weights, constant = np.zeros((9, 4, 4)), np.zeros((4, 4))
    squares = {w: (1, 1, 1), x: (1, -1, -1), y: (-1, 1, -1), z: (-1, -1, 1)}  # 4q² = 1 +- r00 +- r11 +- r22
    for i, signs in squares.items():
        constant[i, i] = 1.0
        weights[[0, 4, 8], i, i] = signs
    pairs = {(w, x): (7, 5, -1), (w, y): (2, 6, -1), (w, z): (3, 1, -1),  # 4wx = r21 - r12 ...
             (x, y): (1, 3, 1), (x, z): (2, 6, 1), (y, z): (5, 7, 1)}  # 4xy = r01 + r10 ...
    for (i, j), (first, second, sign) in pairs.items():
        for a, b in ((i, j), (j, i)):
            weights[first, a, b], weights[second, a, b] = 1.0, sign
    return weights.reshape(9, 16), constant.ravel()


_PRODUCTS, _PRODUCTS_CONSTANT = _product_map()


def quaternions(rotations: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(x, y, z, w)``, ``w >= 0``, of rotation matrices (n, 3, 3).

    Shepperd's method without branches: all products 4 q_i q_j come from one matrix product,
    and each quaternion is the row of its largest component (well conditioned for every
    rotation), normalized.
    """
    r = np.asarray(rotations, dtype=float).reshape(-1, 9)
    products = (r @ _PRODUCTS + _PRODUCTS_CONSTANT).reshape(-1, 4, 4)
    largest = np.argmax(products.reshape(-1, 16)[:, ::5], axis=1)  # the diagonal: 4 q_i²
    q = products[np.arange(len(r)), largest]  # 4 q_k q with q_k > 0: q's direction and sign
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q *= np.where(q[:, 3:] < 0.0, -1.0, 1.0)
    return q


Twist = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def edge_poses(edges: list[Edge], world_poses: dict[str, np.ndarray]) -> list[tuple[Edge, np.ndarray]]:
    """Each edge with the 4x4 pose of its child link in its parent frame, from world link poses."""
    return [(edge, relative_pose(world_poses.get(edge.parent_link), world_poses[edge.child_link])) for edge in edges]


def base_twist_function(robot: Robot, joint_name: str) -> Twist:
    """``f(q, u, params) -> (linear, angular)``: the twist of the joint's child link relative to its
    parent, both in child-frame axes (as ``nav_msgs/Odometry`` wants it).

    ``q`` and ``u`` are the robot's generalized coordinates and speeds in ``robot.system`` order
    (the simulator's ``q`` and ``u``); ``params`` the values of its parameters in
    ``robot.parameters`` order (the simulator's ``parameter_names``, its model's
    ``buffers.params``), so parameters changed at run time (``Simulator.set_parameters``) count.
    ``list(robot.parameters.values())`` gives the URDF values.

    Only the parameters the twist depends on are read.  A planar or floating joint's twist in
    child axes involves none (its origin angles appear in both the rotation and the velocity and
    cancel); an axis that is not a coordinate axis makes a revolute or prismatic joint's
    components parameters.
    """
    joint = robot.joints[joint_name]
    rotation = joint.rotation()  # child components -> parent components
    linear = rotation.T * joint.relative_velocity()
    angular = joint.relative_angular_velocity()
    stacked = Matrix.vstack(linear, angular)
    q, u = list(robot.system.q), list(robot.system.u)
    parameters = list(robot.parameters)
    used = [k for k, symbol in enumerate(parameters) if symbol in stacked.free_symbols]
    q_plain = [Symbol(f"_q{i}") for i in range(len(q))]
    u_plain = [Symbol(f"_u{i}") for i in range(len(u))]
    p_plain = [Symbol(f"_p{k}") for k in used]
    replacements = {**dict(zip(q, q_plain)), **dict(zip(u, u_plain)),
                    **{parameters[k]: plain for k, plain in zip(used, p_plain)}}
    evaluate = lambdify([q_plain, u_plain, p_plain], stacked.xreplace(replacements), modules="numpy", cse=True)
    n_params = len(parameters)

    def twist(q_values: np.ndarray, u_values: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        params = np.asarray(params, dtype=float)
        if params.shape != (n_params,):
            raise ValueError(f"expected {n_params} parameter values (robot.parameters order), got shape "
                             f"{params.shape}")
        values = np.asarray(evaluate(list(q_values), list(u_values), params[used].tolist()),
                            dtype=float).reshape(6)
        return values[:3], values[3:]

    return twist
