"""World poses of every link frame agree with Pinocchio's forward kinematics."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from mb_sim.model import link_poses, load_urdf
from pinocchio_reference import pinocchio_configuration, random_coordinates

ROBOTS = ["urdf/pendulum.urdf", "urdf/double_pendulum.urdf", "urdf/arm6.urdf", "urdf/free_body.urdf",
          "test/urdf/kinematic_zoo.urdf"]


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
