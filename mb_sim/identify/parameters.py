"""Standard parameters of a robot's bodies from its URDF, and back to link ``<inertial>`` values."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mb_sim.model import JointDissipation, Robot
from mb_sim.symbolic.regressor import BODY_PARAMETERS, Regressor

__all__ = ["LinkInertial", "body_vector", "body_parts", "fixed_parts", "prior_parameters", "split_body",
           "pseudo_inertia"]


@dataclass
class LinkInertial:
    """A link's mass properties as URDF holds them: mass, centre of mass and inertia about it
    (link-frame components)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


def body_vector(m: float, h: np.ndarray, J: np.ndarray) -> np.ndarray:
    """(m, h, J about the origin) as the ten numbers of :data:`BODY_PARAMETERS`."""
    return np.array([m, *h, J[0, 0], J[0, 1], J[1, 1], J[0, 2], J[1, 2], J[2, 2]])


def body_parts(pi: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The inverse of :func:`body_vector`."""
    m, h = pi[0], np.array(pi[1:4])
    J = np.array([[pi[4], pi[5], pi[7]], [pi[5], pi[6], pi[8]], [pi[7], pi[8], pi[9]]])
    return m, h, J


def pseudo_inertia(pi: np.ndarray) -> np.ndarray:
    """The 4 x 4 pseudo-inertia [[Sigma, h], [h^T, m]], Sigma = tr(J)/2 1 - J: positive definite
    exactly when the body's mass distribution can exist (Wensing, Kim and Slotine 2017)."""
    m, h, J = body_parts(pi)
    sigma = 0.5 * np.trace(J) * np.eye(3) - J
    return np.block([[sigma, h[:, None]], [h[None, :], np.array([[m]])]])


def _about_origin(link: LinkInertial, rotation: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """A link's ten parameters in its carrier's frame (carrier <- link `rotation`, link origin at `offset`)."""
    c = offset + rotation @ link.com
    J = rotation @ link.inertia @ rotation.T + link.mass * (c @ c * np.eye(3) - np.outer(c, c))
    return body_vector(link.mass, link.mass * c, J)


def link_inertial(robot: Robot, name: str) -> LinkInertial:
    props = robot.links[name].link_description.inertial
    return LinkInertial(float(props.mass), np.array(props.com, dtype=float), np.array(props.inertia, dtype=float))


def _numeric(matrix, regressor: Regressor) -> np.ndarray:
    """A matrix of the parameters (through the derivation's temporaries) as numbers."""
    from mb_sim.identify.regressor import needed_assignments

    values = dict(regressor.parameters)
    for symbol, expr in needed_assignments(regressor.temporaries, list(matrix)):
        values[symbol] = float(expr.xreplace(values))
    return np.array(matrix.xreplace(values), dtype=float)


def merged_links(robot: Robot, regressor: Regressor) -> dict[str, list[tuple[str, np.ndarray, np.ndarray]]]:
    """Each body's links with their numeric rotation and offset in the carrier's frame."""
    return {carrier: [(name, _numeric(R, regressor), _numeric(r, regressor).ravel()) for name, R, r in links]
            for carrier, links in regressor.bodies.items()}


def prior_parameters(robot: Robot, regressor: Regressor) -> np.ndarray:
    """The URDF's values of every regressor column: bodies' ten, then damping and friction per joint."""
    values = []
    for carrier, links in merged_links(robot, regressor).items():
        values.append(sum(_about_origin(link_inertial(robot, name), R, r) for name, R, r in links))
    for joint in regressor.friction_joints:
        group = next((g for g in robot.joints[joint].load_groups if isinstance(g, JointDissipation)), None)
        values.append(np.array([group.damping, group.friction] if group is not None else [0.0, 0.0]))
    return np.concatenate(values) if values else np.zeros(0)


def _target(robot: Robot, links: list[tuple[str, np.ndarray, np.ndarray]]) -> tuple[str, np.ndarray, np.ndarray]:
    """The link of a body that takes its change: its heaviest."""
    return max(links, key=lambda item: link_inertial(robot, item[0]).mass)


def _rest(robot: Robot, links: list[tuple[str, np.ndarray, np.ndarray]]) -> np.ndarray:
    """The ten parameters of a body's links other than its target, which keep their values."""
    target = _target(robot, links)[0]
    return sum((_about_origin(link_inertial(robot, n), R, r) for n, R, r in links if n != target),
               np.zeros(len(BODY_PARAMETERS)))


def fixed_parts(robot: Robot, regressor: Regressor) -> np.ndarray:
    """Per body, the parameters of the links that keep their values (all but the target), so
    physical consistency is asked of the target link itself, not only of the merged body."""
    return np.concatenate([_rest(robot, links) for links in merged_links(robot, regressor).values()]) \
        if regressor.bodies else np.zeros(0)


def split_body(robot: Robot, links: list[tuple[str, np.ndarray, np.ndarray]], pi: np.ndarray
               ) -> tuple[str, LinkInertial]:
    """The link of a body that takes the change to `pi` (its heaviest), with its new inertial: the
    body's parameters less the other links', in that link's frame."""
    target = _target(robot, links)
    rest = _rest(robot, links)
    m, h, J = body_parts(pi - rest)
    _, R, r = target
    if m <= 0:
        raise ValueError(f"the identified mass of link '{target[0]}' is not positive ({m:g} kg)")
    c = h / m
    inertia_c = _inside(J - m * (c @ c * np.eye(3) - np.outer(c, c)))
    return target[0], LinkInertial(m, R.T @ (c - r), R.T @ inertia_c @ R)


REALIZABLE_MARGIN = 1e-6
"""Smallest second moment of mass about the mass centre kept, relative to their sum: an identified
body at the edge of realizability (a thin plate) stays inside it once its numbers are printed."""


def _inside(inertia: np.ndarray) -> np.ndarray:
    """`inertia` (about the mass centre) with its principal second moments Sigma = tr(I)/2 - I at
    least REALIZABLE_MARGIN of their sum (the triangle inequality with a margin)."""
    sigma = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    values, vectors = np.linalg.eigh(sigma)
    values = np.maximum(values, REALIZABLE_MARGIN * max(values.sum(), 0.0))
    sigma = (vectors * values) @ vectors.T
    return np.trace(sigma) * np.eye(3) - sigma
