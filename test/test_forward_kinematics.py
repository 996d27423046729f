"""World poses of every link frame agree with Pinocchio's forward kinematics."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from mb_sim.model import FloatingJoint, PlanarJoint, link_poses, load_urdf

ROBOTS = ["urdf/pendulum.urdf", "urdf/double_pendulum.urdf", "urdf/arm6.urdf", "urdf/free_body.urdf",
          "test/urdf/kinematic_zoo.urdf"]


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


@pytest.mark.parametrize("path", ROBOTS)
def test_link_poses_match_pinocchio(repo, path):
    robot = load_urdf(repo / path)
    model = pin.buildModelFromUrdf(str(repo / path))
    data = model.createData()
    poses = link_poses(robot)
    rng = np.random.default_rng(20261122)
    worst = 0.0
    for _ in range(20):
        q = random_coordinates(robot, rng)
        pin.framesForwardKinematics(model, data, pinocchio_configuration(robot, model, q))
        ours = poses(q)
        for link in robot.links:
            if link == "world":
                continue
            expected = data.oMf[model.getFrameId(link, pin.BODY)].homogeneous
            worst = max(worst, np.abs(ours[link] - expected).max())
    print(f"{path}: largest pose difference {worst:.2e}")
    assert worst < 1e-9, f"largest pose difference {worst:.3e}"
