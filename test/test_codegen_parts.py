"""Long generated functions cut into parts (mb_sim.codegen.parts) and the parts shared out over
translation units (mb_sim.codegen.units): the same arithmetic, so the same numbers, bit for bit,
as the function in one piece; values that cross parts (temporaries, guarded results, sums still
accumulating) are passed on through the scratch array."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from mb_sim.codegen import parts, units
from mb_sim.sim import Simulator
from test_guarded_sums import SCENE


def _build(tmp_path, monkeypatch, statements: int, unit_bytes: int) -> Simulator:
    monkeypatch.setattr(parts, "PART_STATEMENTS", statements)
    monkeypatch.setattr(parts, "PARTS_ABOVE", statements)
    monkeypatch.setattr(units, "PARTS_UNIT_BYTES", unit_bytes)
    monkeypatch.setattr(units, "SPLIT_ABOVE", 0)
    path = tmp_path / f"sums_{statements}.urdf"
    path.write_text(SCENE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulator(path, cache_dir=tmp_path / f"cache_{statements}")


def test_a_model_in_parts_computes_what_it_computes_whole(tmp_path, monkeypatch):
    whole = _build(tmp_path, monkeypatch, 10**9, 10**9)
    cut = _build(tmp_path, monkeypatch, 7, 3_000)
    assert "_part" not in whole.model.source
    source = cut.model.source
    assert len(re.findall(r"^MB_PART void mb_dynamics_part\d+\([^;{]*\{", source, re.MULTILINE)) > 10
    assert re.search(r"^ +w\[\d+\] = ", source, re.MULTILINE)  # values passed on
    assert re.search(r"^ +w\[\d+\] [-+]= ", source, re.MULTILINE)  # a sum accumulating over parts
    assert len(units.translation_units(source)) > 8  # the parts shared out over units
    rng = np.random.default_rng(11)
    for _ in range(5):  # some points in contact and some not, moving
        u = rng.normal(0.0, 0.3, whole.model.n_u)
        for sim in (whole, cut):
            sim.set_state(positions={"tilted_free_z": 0.03}, velocities=dict(zip(sim.speed_names, u)))
        args = (whole.model.buffers.q, whole.model.buffers.u, whole.model.buffers.inputs, whole.model.buffers.params)
        expected, got = whole.model.evaluate(*args), cut.model.evaluate(*args)
        assert expected.keys() == got.keys()
        for name in expected:
            assert np.array_equal(expected[name], got[name]), name
    whole.advance(0.05)
    cut.advance(0.05)
    assert np.array_equal(whole.model.buffers.q, cut.model.buffers.q)
    assert np.array_equal(whole.model.buffers.u, cut.model.buffers.u)


def test_a_mass_factorization_in_parts_gives_the_same_accelerations(tmp_path, monkeypatch):
    # chain32's unrolled factorization, 6,000 lines in one function, took gcc 26 s on its own
    from mb_sim.codegen import mass_factor
    from mb_sim.resources import robot_path

    built = {}
    for lines in (10**9, 8):
        monkeypatch.setattr(mass_factor, "FACTOR_PART_LINES", lines)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built[lines] = Simulator(robot_path("arm6"), cache_dir=tmp_path / f"cache_{lines}")
    whole, cut = built[10**9], built[8]
    assert "mb_mass_factor_part" not in whole.model.source
    assert len(re.findall(r"^MB_PART int mb_mass_factor_part\d+\(", cut.model.source, re.MULTILINE)) > 3
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, u = rng.uniform(-2.0, 2.0, whole.model.n_q), rng.normal(0.0, 1.0, whole.model.n_u)
        inputs = rng.normal(0.0, 5.0, len(whole.model.buffers.inputs))
        expected = whole.model.forward_dynamics(q, u, inputs)
        got = cut.model.forward_dynamics(q, u, inputs)
        assert np.array_equal(expected[1], got[1])
