"""URDF -> derivation -> compiled model, the topology-keyed cache, and the two backends."""
from __future__ import annotations

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.codegen import load_numeric_model
from pinocchio_reference import random_coordinates


def test_second_load_skips_derivation_and_takes_new_parameter_values(repo, tmp_path):
    first_lines, second_lines = [], []
    first = load_numeric_model(load_urdf(repo / "urdf" / "double_pendulum.urdf"), cache_dir=tmp_path,
                               progress=first_lines.append)
    heavier = (repo / "urdf" / "double_pendulum.urdf").read_text().replace('<mass value="0.5"/>',
                                                                          '<mass value="2.5"/>')
    second = load_numeric_model(load_urdf(heavier), cache_dir=tmp_path, progress=second_lines.append)
    assert any("Kane's equations" in line for line in first_lines)
    assert not any("Kane's equations" in line or "compiling" in line for line in second_lines), second_lines
    assert second.library_path == first.library_path
    q, u, tau = np.array([0.3, -0.2]), np.zeros(2), np.zeros(2)
    # Lower rod about the elbow: m (l/2)^2 + I_yy, with m 0.5 kg -> 2.5 kg and I_yy unchanged.
    assert first.evaluate(q, u, tau)["mass_matrix"][1, 1] == pytest.approx(0.5 * 0.25 + 0.04171667)
    assert second.evaluate(q, u, tau)["mass_matrix"][1, 1] == pytest.approx(2.5 * 0.25 + 0.04171667)


def test_damaged_index_entry_is_rebuilt(repo, tmp_path):
    load_numeric_model(load_urdf(repo / "urdf" / "pendulum.urdf"), cache_dir=tmp_path)
    (index,) = tmp_path.glob("*.model.json")
    index.write_text("{not json")
    lines = []
    model = load_numeric_model(load_urdf(repo / "urdf" / "pendulum.urdf"), cache_dir=tmp_path,
                               progress=lines.append)
    assert any("Kane's equations" in line for line in lines)
    assert model.forward_dynamics([0.0], [0.0], [2.0])[1] == pytest.approx([2.0 / (1.0 + 0.001)])


@pytest.mark.parametrize("path", ["urdf/arm6.urdf", "test/urdf/kinematic_zoo.urdf", "urdf/free_body.urdf"])
def test_c_and_numpy_backends_agree(repo, tmp_path, path):
    robot = load_urdf(repo / path)
    compiled = load_numeric_model(robot, backend="c", cache_dir=tmp_path)
    numpy_model = load_numeric_model(robot, backend="numpy")
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = random_coordinates(robot, rng)
        u, efforts = rng.normal(size=compiled.n_u), rng.normal(size=compiled.n_inputs)
        ours, reference = compiled.evaluate(q, u, efforts), numpy_model.evaluate(q, u, efforts)
        for name, value in reference.items():
            scale = max(1.0, np.abs(value).max()) if value.size else 1.0
            assert np.abs(ours[name] - value).max(initial=0.0) <= 1e-12 * scale, name
        for a, b in zip(compiled.forward_dynamics(q, u, efforts), numpy_model.forward_dynamics(q, u, efforts)):
            assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max())
