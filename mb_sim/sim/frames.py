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

__all__ = ["Edge", "FrameTree", "frame_tree", "relative_pose", "edge_poses", "base_twist_function", "ROBOT_WORLD_LINK"]

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
