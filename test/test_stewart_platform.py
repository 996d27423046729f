"""The Gough-Stewart platform of urdf/stewart_platform.urdf (issue 39: parallel robots): six degrees
of freedom reported, assembled from any leg extensions where the closed-form inverse kinematics of a
6-UPS platform says (every leg as long as its actuator sets it), and free motion keeping the loops
closed and the energy."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import stewart_geometry as geometry
from mb_sim.sim import Simulator

LEGS = [f"leg_{n}" for n in range(1, 7)]


@pytest.fixture(scope="module")
def stewart(repo, model_cache):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (assembly notes)
        return Simulator(repo / "urdf" / "stewart_platform.urdf", cache_dir=model_cache)


def test_the_shipped_urdf_is_the_one_the_geometry_writes(repo):
    assert (repo / "urdf" / "stewart_platform.urdf").read_text() == geometry.urdf_text()


def test_six_degrees_of_freedom(stewart):
    assert stewart.degrees_of_freedom() == 6
    # the platform's pose is independent (its joint is nearest the root); the legs are solved
    assert stewart.dependent_coordinates == [f"hip_{n}_{a}_q" for a in "xy" for n in range(1, 7)] + \
        [f"{leg}_q" for leg in LEGS]
    assert len(stewart.constraints) == 6  # one spherical loop joint per leg, 3 rows each


def _leg_lengths(sim) -> np.ndarray:
    """Every leg's length by the closed-form inverse kinematics of the platform's pose."""
    pose = sim.outputs(dynamics=False).link_poses["platform"]
    return np.array([np.linalg.norm(v) for v in geometry.leg_vectors(pose[:3, 3], pose[:3, :3])])


def _extensions(sim) -> np.ndarray:
    return np.array([sim.q[sim.joint_indices[leg][0]] for leg in LEGS])


@pytest.mark.parametrize("seed", range(4))
def test_assembled_from_any_leg_extensions_where_the_inverse_kinematics_agrees(stewart, seed):
    extensions = np.random.default_rng(seed).uniform(-0.12, 0.12, 6)
    stewart.set_state(dict(zip(LEGS, extensions)))
    assert np.allclose(_extensions(stewart), extensions, rtol=0, atol=1e-12)  # held as given
    lengths = np.array(geometry.nominal_lengths()) + extensions
    assert np.allclose(_leg_lengths(stewart), lengths, rtol=0, atol=1e-9)
    pose = stewart.outputs(dynamics=False).link_poses["platform"]
    assert pose[2, 3] > 0.3  # the upper assembly, not the mirror image below the base


def test_free_motion_keeps_the_loops_and_the_energy(stewart):
    """Without gravity, legs started moving: the energy is all kinetic and stays; the loops stay
    closed, and the platform stays where its legs' lengths put it."""
    stewart.set_parameters({"gravity_g": 0.0})
    try:
        stewart.set_state({leg: 0.0 for leg in LEGS},
                          dict(zip(LEGS, [0.05, -0.04, 0.03, 0.02, -0.05, 0.04])))
        start = stewart.outputs().kinetic_energy
        stewart.advance(1.0)
        out = stewart.outputs()
        assert abs(out.kinetic_energy - start) < 1e-8 * start, (out.kinetic_energy, start)
        assert out.position_error < 1e-10
        lengths = np.array(geometry.nominal_lengths()) + _extensions(stewart)
        assert np.allclose(_leg_lengths(stewart), lengths, rtol=0, atol=1e-9)
        assert np.ptp(_extensions(stewart)) > 0.01  # it moved
    finally:
        stewart.set_parameters({"gravity_g": 9.81})
