"""Forward kinematics of the component model: world pose of every link frame."""
from __future__ import annotations

from typing import Callable

import numpy as np
from sympy import Matrix, Symbol, lambdify

from mb_sim.model.robot import Robot

__all__ = ["link_pose_expressions", "link_poses"]


def link_pose_expressions(robot: Robot) -> dict[str, Matrix]:
    """Homogeneous 4x4 transform world <- link for every link, in coordinates and parameters."""
    world, origin = robot.world_frame, robot.world_origin
    poses = {}
    for name, link in robot.links.items():
        rotation = world.dcm(link.frame)
        position = link.origin.pos_from(origin).to_matrix(world)
        poses[name] = rotation.row_join(position).col_join(Matrix([[0, 0, 0, 1]]))
    return poses


def link_poses(robot: Robot) -> Callable[..., dict[str, np.ndarray]]:
    """A numeric function ``f(q, parameters=None) -> {link: 4x4 array}``.

    ``q`` holds the robot's generalized coordinates in ``robot.system.q`` order; ``parameters``
    optionally overrides parameter values (``{symbol: value}``).
    """
    q = list(robot.system.q)
    q_plain = [Symbol(f"_q{i}") for i in range(len(q))]
    parameters = robot.parameters
    symbols = list(parameters)
    expressions = link_pose_expressions(robot)
    names = list(expressions)
    stacked = [expressions[n].xreplace(dict(zip(q, q_plain))) for n in names]
    evaluate = lambdify([q_plain, symbols], stacked, modules="numpy", cse=True)

    def poses(q_values, overrides: dict | None = None) -> dict[str, np.ndarray]:
        values = dict(parameters, **(overrides or {}))
        out = evaluate(list(np.asarray(q_values, dtype=float)), [values[s] for s in symbols])
        return {n: np.array(m, dtype=float) for n, m in zip(names, out)}

    return poses
