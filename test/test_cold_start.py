"""A robot's first load and what makes it again (issue 37): edits of numbers only (a mass, an
inertia, a length, a limit, damping) are parameters of the compiled model, so the edited URDF loads
from the cache (no derivation, no C) and its mass matrix is Pinocchio's of the edited URDF; the
progress lines say about how long a first load and its compilation will take."""
from __future__ import annotations

import re

import numpy as np
import pinocchio as pin
import pytest

from mb_sim.codegen.compiler import estimated_seconds
from mb_sim.codegen.pipeline import first_load_seconds
from mb_sim.resources import robot_path
from mb_sim.sim import Simulator

#: Numbers of urdf/arm6.urdf and what they become: upper_arm_link's mass and ixx, the elbow's
#: offset, its lower limit and damping.
EDITS = [('<mass value="8.393"/>', '<mass value="10.5"/>'),
         ('ixx="0.132451"', 'ixx="0.14"'),  # (within the triangle inequality: iyy + izz = 0.1447)
         ('<origin xyz="0 -0.1197 0.425" rpy="0 0 0"/>', '<origin xyz="0 -0.1197 0.5" rpy="0 0 0"/>'),
         ('<limit lower="-3.1416" upper="3.1416" effort="150" velocity="3.15"/>\n    <dynamics damping="0.3"',
          '<limit lower="-2.5" upper="3.1416" effort="150" velocity="3.15"/>\n    <dynamics damping="0.8"')]


@pytest.fixture
def cache(model_cache):
    return model_cache


def test_numbers_only_edits_reuse_the_compiled_model(cache):
    original = robot_path("arm6").read_text()
    edited = original
    for before, after in EDITS:
        assert edited.count(before) == 1, before
        edited = edited.replace(before, after)
    Simulator(original, cache_dir=cache)  # compiled (or found) once
    lines: list[str] = []
    sim = Simulator(edited, cache_dir=cache, progress=lines.append)
    assert any("loaded from the cache" in line for line in lines), lines
    assert not any(line.startswith(("generating C", "compiling")) for line in lines), lines
    model = pin.buildModelFromXML(edited)
    data = model.createData()
    q = np.random.default_rng(3).uniform(-1.0, 1.0, model.nq)
    out = sim.model.evaluate(q, np.zeros(model.nv), np.zeros(len(sim.actuated_joints)), sim.model.buffers.params)
    expected = pin.crba(model, data, q)
    expected = np.triu(expected) + np.triu(expected, 1).T
    assert np.abs(out["mass_matrix"] - expected).max() < 1e-12 * np.abs(expected).max()
    assert sim.parameter(next(n for n in sim.parameter_names if "elbow_joint" in n and n.endswith("_damping"))) == 0.8


def test_a_first_load_says_about_how_long_it_takes(tmp_path):
    lines: list[str] = []
    Simulator(robot_path("double_pendulum"), cache_dir=tmp_path, progress=lines.append)
    said = [k for k, line in enumerate(lines) if "first load of this structure" in line]
    assert len(said) == 1 and said[0] < next(k for k, line in enumerate(lines) if line.startswith("generating C")), lines
    assert re.search(r"about \d+ s ", lines[said[0]]), lines[said[0]]
    lines.clear()
    Simulator(robot_path("double_pendulum"), cache_dir=tmp_path, progress=lines.append)
    assert lines and not any("first load" in line for line in lines), lines  # from the cache: nothing to wait for
    assert first_load_seconds(64, 65) > 4 * first_load_seconds(12, 13) > 4.0  # linear in the tree, as the stages are
    assert first_load_seconds(38, 214) > first_load_seconds(38, 39) + 2.0  # links cost too (iCub's 175 fixed ones)


def test_the_compile_estimate_grows_with_the_units():
    small, large = ["x" * 50_000], ["x" * 50_000, "x" * 300_000]
    assert 2.0 < estimated_seconds(small, cores=2) < estimated_seconds(large, cores=2)
    assert estimated_seconds(large, cores=1) > estimated_seconds(large, cores=2)  # one core: the units in turn


def test_compilers_run_one_per_core_at_a_lower_priority(tmp_path, monkeypatch):
    # A first load's units queued for the cores beside whatever else ran (a node's timing): now at
    # most compile_jobs() at once, each niced, so a process publishing beside a build keeps its period.
    from mb_sim.codegen import compiler

    monkeypatch.setattr(compiler, "compile_jobs", lambda: 2)
    log = tmp_path / "log"
    commands = [["sh", "-c", f"echo start {i} $(nice) >> {log}; sleep 0.5; echo end {i} >> {log}"] for i in range(5)]
    results = compiler.run_compilers(commands, timeout=60)
    assert [status for status, _ in results] == [0] * 5
    running, most = 0, 0
    for line in log.read_text().splitlines():
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
        if line.startswith("start"):
            assert int(line.split()[2]) >= compiler.COMPILER_NICENESS, line
    assert most == 2
