"""The delta robot of urdf/delta_robot.urdf (issue 39: parallel robots): three degrees of freedom
reported, assembled from any motor angles, its platform where the closed-form forward
kinematics of a delta robot puts it (three spheres intersected) and never turned, and 2 s of
free motion under gravity keeping the loops closed and the energy."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mb_sim.sim import Simulator
from mb_sim.sim.errors import AssemblyWarning
from mb_sim.sim.singularity import ConstraintSingularityWarning

BASE, ARM, FOREARM, PLATFORM = 0.2, 0.2, 0.5, 0.05  # radii and lengths written in the URDF [m]
ANGLES = [2 * math.pi * i / 3 for i in range(3)]


def forward_kinematics(motors) -> np.ndarray:
    """The platform centre: the lower point at FOREARM from each elbow less its platform offset
    (trilateration of three equal spheres, closed form)."""
    centres = []
    for phi, theta in zip(ANGLES, motors):
        radial = np.array([math.cos(phi), math.sin(phi), 0.0])
        elbow = BASE * radial + ARM * (math.cos(theta) * radial + np.array([0.0, 0.0, -math.sin(theta)]))
        centres.append(elbow - PLATFORM * radial)
    c1, c2, c3 = centres
    ex = (c2 - c1) / np.linalg.norm(c2 - c1)
    i = ex @ (c3 - c1)
    ey = c3 - c1 - i * ex
    ey /= np.linalg.norm(ey)
    ez = np.cross(ex, ey)
    d, j = np.linalg.norm(c2 - c1), ey @ (c3 - c1)
    x = d / 2
    y = (i * i + j * j - 2 * i * x) / (2 * j)
    z = math.sqrt(FOREARM**2 - x * x - y * y)
    candidates = [c1 + x * ex + y * ey + s * z * ez for s in (1.0, -1.0)]
    return min(candidates, key=lambda p: p[2])


@pytest.fixture(scope="module")
def delta(repo, model_cache):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator(repo / "urdf" / "delta_robot.urdf", cache_dir=model_cache)
    assert any(issubclass(w.category, AssemblyWarning) and "does not close loop joints 'wrist_2', 'wrist_3'"
               in str(w.message) for w in caught)
    return sim


def test_three_degrees_of_freedom_driven_by_the_motors(delta):
    assert delta.degrees_of_freedom() == 3
    assert delta.independent_joints == ["motor_1", "motor_2", "motor_3"]


@pytest.mark.parametrize("seed", range(6))
def test_assembled_from_any_motor_angles_where_the_closed_form_puts_it(delta, seed):
    motors = np.random.default_rng(seed).uniform(-0.6, 0.9, 3)
    delta.set_state(dict(zip(["motor_1", "motor_2", "motor_3"], motors)))
    tool = delta.outputs(dynamics=False).link_poses["tool"]
    assert np.allclose(tool[:3, 3], forward_kinematics(motors), rtol=0, atol=1e-9)
    assert np.allclose(tool[:3, :3], np.eye(3), rtol=0, atol=1e-9)  # it translates only


def test_two_seconds_of_free_motion_keep_the_loops_and_the_energy(delta):
    """Released from 0.4, -0.2, 0.7 rad with the motors moving and no effort, friction or damping."""
    delta.set_state({"motor_1": 0.4, "motor_2": -0.2, "motor_3": 0.7}, {"motor_1": 1.0, "motor_2": -0.5})
    out = delta.outputs()
    start = out.kinetic_energy + out.potential_energy
    with pytest.warns(ConstraintSingularityWarning):  # (it passes three: test_constraint_singularities.py)
        delta.advance(2.0)
    out = delta.outputs()
    assert abs(out.kinetic_energy + out.potential_energy - start) < 5e-6 * (abs(start) + out.kinetic_energy)  # 2.3e-6 J
    assert out.position_error < 1e-10
    tool = out.link_poses["tool"]
    motors = [delta.q[delta.joint_indices[f"motor_{n}"][0]] for n in (1, 2, 3)]
    assert np.allclose(tool[:3, 3], forward_kinematics(motors), rtol=0, atol=1e-9)
    assert np.allclose(tool[:3, :3], np.eye(3), rtol=0, atol=1e-9)
