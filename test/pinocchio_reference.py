"""Conversions between mb_sim's coordinates/speeds and Pinocchio's, for comparison tests.

Pinocchio's conventions differ from ours in three places: continuous joints use (cos, sin);
the free-flyer's linear velocity is in the moving frame (ours: in the joint frame, as MuJoCo);
the planar joint's linear velocity is in the moving frame (ours: in the fixed joint frame).
``velocity_map`` returns G with ``u = G v_pin`` (G orthogonal) and its time derivative.
"""
from __future__ import annotations

from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import pinocchio as pin

from mb_sim.model import FloatingJoint, PlanarJoint
from mb_sim.model.loads import JointEffort


def example_robot_data_dir() -> Path:
    """The robots folder shipped by the example-robot-data wheel."""
    return Path(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))


def with_floating_base(xml: str, base: str) -> str:
    """URDF text with a ``world`` link and a floating joint to `base` (Pinocchio's free-flyer)."""
    start = xml.index(">", xml.index("<robot")) + 1
    floating = (f'<link name="world"/><joint name="root_joint" type="floating"><parent link="world"/>'
                f'<child link="{base}"/></joint>')
    return xml[:start] + floating + xml[start:]


def random_coordinates(robot, rng) -> np.ndarray:
    """A random configuration, with mimic joints following their reference."""
    values = {}
    for joint in robot.joints.values():
        if isinstance(joint, FloatingJoint):
            quaternion = rng.normal(size=4)
            values.update(zip(joint.q, [*rng.uniform(-2, 2, 3), *quaternion / np.linalg.norm(quaternion)]))
        elif isinstance(joint, PlanarJoint):
            values.update(zip(joint.q, [*rng.uniform(-2, 2, 2), rng.uniform(-np.pi, np.pi)]))
        else:
            values.update(zip(joint.q, rng.uniform(-np.pi, np.pi, len(joint.q))))
    for joint in robot.joints.values():
        mimic = joint.joint_description.mimic
        if mimic is not None:
            values[joint.q[0]] = mimic.multiplier * values[joint.mimicked.q[0]] + mimic.offset
    return np.array([values[q] for q in robot.system.q])


def pinocchio_configuration(robot, model, q: np.ndarray) -> np.ndarray:
    """Our coordinates in Pinocchio's layout: free-flyer xyz + quaternion xyzw; planar x, y, cos, sin;
    continuous (unbounded revolute) cos, sin."""
    ours = dict(zip(robot.system.q, q))
    out = pin.neutral(model)
    for joint in robot.joints.values():
        if not len(joint.q):
            continue
        values = [ours[s] for s in joint.q]
        if isinstance(joint, FloatingJoint):
            values = [*values[:3], *values[4:], values[3]]
        elif isinstance(joint, PlanarJoint):
            values = [values[0], values[1], np.cos(values[2]), np.sin(values[2])]
        index = model.getJointId(joint.name)
        if model.nqs[index] == 2 and len(values) == 1:
            values = [np.cos(values[0]), np.sin(values[0])]
        start = model.idx_qs[index]
        out[start:start + len(values)] = values
    return out


def _rotation_z(angle: float) -> np.ndarray:
    return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])


def velocity_map(robot, model, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """G and dG/dt with ``u = G v`` for Pinocchio velocity `v` at our configuration `q`."""
    n = len(robot.system.u)
    speeds = list(robot.system.u)
    ours = dict(zip(robot.system.q, q))
    G, G_dot = np.zeros((n, model.nv)), np.zeros((n, model.nv))
    for joint in robot.joints.values():
        if not len(joint.u):
            continue
        index = model.getJointId(joint.name)
        rows = [speeds.index(s) for s in joint.u]
        cols = list(range(model.idx_vs[index], model.idx_vs[index] + model.nvs[index]))
        block, block_dot = np.eye(len(rows)), np.zeros((len(rows), len(rows)))
        if isinstance(joint, FloatingJoint):
            quaternion = [ours[s] for s in joint.q[3:]]  # w, x, y, z
            rotation = pin.Quaternion(*quaternion).toRotationMatrix()
            w = v[cols[3:6]]
            block[:3, :3] = rotation
            block_dot[:3, :3] = rotation @ np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        elif isinstance(joint, PlanarJoint):
            theta, rate = ours[joint.q[2]], v[cols[2]]
            block[:2, :2] = _rotation_z(theta)
            block_dot[:2, :2] = rate * _rotation_z(theta + np.pi / 2)
        G[np.ix_(rows, cols)], G_dot[np.ix_(rows, cols)] = block, block_dot
    return G, G_dot


def coordinates_inside_limits(robot, rng: np.random.Generator) -> np.ndarray:
    """A random configuration (``random_coordinates``) with every bounded joint drawn inside its
    limits, and mimic joints following their reference."""
    ours = dict(zip(robot.system.q, random_coordinates(robot, rng)))
    for joint in robot.joints.values():
        limit = joint.joint_description.limit
        if len(joint.q) == 1 and limit.lower is not None and limit.upper is not None:
            ours[joint.q[0]] = rng.uniform(limit.lower, limit.upper)
    for joint in robot.joints.values():
        mimic = joint.joint_description.mimic
        if mimic is not None:
            ours[joint.q[0]] = mimic.multiplier * ours[joint.mimicked.q[0]] + mimic.offset
    return np.array([ours[q] for q in robot.system.q])


def actuated_joints(robot) -> list:
    """The joints with an effort input, in input order."""
    return [joint for joint in robot.joints.values() if any(isinstance(g, JointEffort) for g in joint.load_groups)]


def pinocchio_efforts(robot, model, efforts: np.ndarray) -> np.ndarray:
    """Our effort inputs as Pinocchio's tau (zero on mimic joints and the free-flyer)."""
    tau = np.zeros(model.nv)
    for joint, value in zip(actuated_joints(robot), efforts):
        tau[model.idx_vs[model.getJointId(joint.name)]] = value
    return tau


def mimic_constraint_rows(robot) -> np.ndarray:
    """A of the mimic constraints, from the URDF: u_mimic - multiplier u_ref = 0 (so c = 0)."""
    speeds = list(robot.system.u)
    rows = []
    for joint in robot.joints.values():
        mimic = joint.joint_description.mimic
        if mimic is not None:
            row = np.zeros(len(speeds))
            row[speeds.index(joint.u[0])], row[speeds.index(joint.mimicked.u[0])] = 1.0, -mimic.multiplier
            rows.append(row)
    return np.array(rows).reshape(len(rows), len(speeds))


def relative_error(ours: np.ndarray, expected: np.ndarray) -> float:
    """Largest error relative to the largest expected entry (at least 1)."""
    return float(np.abs(ours - expected).max() / max(1.0, np.abs(expected).max()))
