"""Model size limits: a model too large to derive and compile in reasonable time is refused at
once, in one line that names the robot and says the limit and why (library, ``mb-sim``, the node),
never after minutes of work nor with a traceback; generated C too large to compile is refused
before the compiler runs.  The tests do not depend on the limits' figures: chains are sized from
:data:`mb_sim.urdf.size.MAX_MASS_MATRIX_ENTRIES`, sources from
:data:`mb_sim.codegen.compiler.MAX_SOURCE_BYTES`."""
from __future__ import annotations

import ast
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mb_sim.codegen import CodegenError, load_numeric_model
from mb_sim.codegen.cache import load_library
from mb_sim.codegen.compiler import MAX_SOURCE_BYTES, check_source_size
from mb_sim.model import build_robot, load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError, parse_urdf
from mb_sim.urdf.size import MAX_MASS_MATRIX_ENTRIES, ModelSize, model_size

REPO = Path(__file__).resolve().parent.parent
MB_SIM = Path(sys.executable).parent / "mb-sim"
NODE_EXE = Path(sys.executable).parent / "mb_sim_node"
#: Seconds a refusal may take (parsing the URDF: 0.6 s for 500 links; loading one took 70 s).
QUICK = 10.0


def _bench_function(name: str):
    """A function of bench/bench_dynamics.py, without importing the benchmark (it needs MuJoCo)."""
    source = (REPO / "bench" / "bench_dynamics.py").read_text()
    (definition,) = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name == name]
    namespace: dict = {}
    exec(compile(ast.Module([definition], type_ignores=[]), "bench_dynamics.py", "exec"), namespace)
    return namespace[name]


chain_urdf = _bench_function("chain_urdf")


def chain_over_the_limit(factor: float) -> int:
    """The number of links of the shortest chain with `factor` times the limit's entries."""
    return math.ceil((math.sqrt(1 + 8 * factor * MAX_MASS_MATRIX_ENTRIES) - 1) / 2) + 1


def _refused(function, *args) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(URDFError) as raised:
        function(*args)
    return str(raised.value), time.monotonic() - started


# -- the measure --------------------------------------------------------------------------------
def test_a_chain_of_n_links_has_n_times_n_plus_one_over_two_entries():
    for n in (1, 2, 12, 50):
        description = parse_urdf(chain_urdf(n))
        assert model_size(description.joints, description.root) == ModelSize(n, n, n * (n + 1) // 2)


def test_a_tree_counts_each_speed_with_the_speeds_above_it():
    # world -floating-> base; base -revolute-> a -revolute-> b; base -fixed-> c -prismatic-> d
    link = '<link name="{}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>' \
           '</inertial></link>'
    joint = '<joint name="{0}" type="{1}"><parent link="{2}"/><child link="{3}"/><axis xyz="0 0 1"/>' \
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
    xml = ('<robot name="tree"><link name="world"/>' + "".join(link.format(n) for n in "base a b c d".split())
           + joint.format("free", "floating", "world", "base") + joint.format("ja", "revolute", "base", "a")
           + joint.format("jb", "revolute", "a", "b") + joint.format("jc", "fixed", "base", "c")
           + joint.format("jd", "prismatic", "c", "d") + "</robot>")
    description = parse_urdf(xml)
    size = model_size(description.joints, description.root)
    assert (size.speeds, size.depth) == (9, 8)
    assert size.entries == (1 + 2 + 3 + 4 + 5 + 6) + 7 + 8 + 7  # the base's block, a, b, d


def test_the_limit_admits_the_largest_shipped_and_corpus_like_robots():
    assert MAX_MASS_MATRIX_ENTRIES >= 600  # Talos full on a floating base: 567; tiago_dual: 930
    for robot in (REPO / "urdf").glob("*.urdf"):
        load_urdf(robot)


# -- refusals -------------------------------------------------------------------------------------
def test_a_chain_well_above_the_limit_is_refused_quickly_in_one_line():
    n = chain_over_the_limit(4)
    message, elapsed = _refused(load_urdf, chain_urdf(n))
    assert elapsed < QUICK, f"refused after {elapsed:.1f} s"
    assert "\n" not in message
    assert message.startswith(f"<string>: robot 'chain{n}': too large to derive and compile: {n} generalized speeds")
    assert f"make {n * (n + 1) // 2} mass-matrix entries" in message
    assert f"the limit is {MAX_MASS_MATRIX_ENTRIES}" in message


def test_a_chain_just_above_the_limit_is_refused_and_one_at_it_loads():
    n = chain_over_the_limit(1)
    assert n * (n + 1) // 2 > MAX_MASS_MATRIX_ENTRIES >= (n - 1) * n // 2
    _refused(load_urdf, chain_urdf(n))
    description = parse_urdf(chain_urdf(n - 1))
    assert model_size(description.joints, description.root).entries <= MAX_MASS_MATRIX_ENTRIES


def test_models_built_without_the_loader_are_refused_before_deriving(tmp_path):
    n = chain_over_the_limit(1)
    robot = build_robot(parse_urdf(chain_urdf(n)))  # no define steps: the check needs none
    message, elapsed = _refused(load_numeric_model, robot, "c", tmp_path)
    assert f"robot 'chain{n}': too large" in message and elapsed < QUICK


def test_a_500_link_chain_is_a_urdf_error_not_a_traceback(tmp_path):
    # Before: loading took 70 s, then the derivation ran for hours (and ended in a RecursionError).
    message, elapsed = _refused(Simulator, chain_urdf(500))
    assert "robot 'chain500': too large" in message and elapsed < QUICK


def test_the_loader_does_not_recurse_per_link():
    """The RecursionError of 500-link chains came from the loader: its check that every joint moves
    mass summed subtree masses recursively, two Python frames per link.  Deeper than Python's
    recursion limit, the URDF still parses (and is then refused by size)."""
    n = sys.getrecursionlimit() + 100
    assert model_size(parse_urdf(chain_urdf(n)).joints, "base").depth == n


def test_generated_c_above_the_compiled_size_is_refused_before_compiling(tmp_path):
    source = "/*" + "x" * MAX_SOURCE_BYTES + "*/\n"  # never compiled: the check comes first
    started = time.monotonic()
    with pytest.raises(CodegenError) as raised:
        load_library(source, "wide", tmp_path)
    message = str(raised.value)
    assert "\n" not in message and time.monotonic() - started < QUICK
    assert message.startswith(f"model 'wide': {len(source) / 1e6:.2f} MB of generated C is more than the "
                              f"{MAX_SOURCE_BYTES / 1e6:g} MB mb_sim compiles")
    assert not list(tmp_path.glob("*.so"))
    check_source_size("x" * MAX_SOURCE_BYTES, "fits")  # at the limit: compiled


def _chain_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / f"chain{n}.urdf"
    path.write_text(chain_urdf(n))
    return path


@pytest.mark.parametrize("command", [["derive"], ["info"], ["simulate", "--duration", "1"]])
def test_mb_sim_refuses_a_500_link_chain_in_one_line(tmp_path, command):
    path = _chain_file(tmp_path, 500)
    env = {**os.environ, "MB_SIM_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run([str(MB_SIM), *command, str(path)], capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"mb-sim: {path}: robot 'chain500': too large to derive and compile: 500 generalized "
                           "speeds"), line
    assert f"the limit is {MAX_MASS_MATRIX_ENTRIES}" in line


def test_the_node_refuses_a_500_link_chain_in_one_line(tmp_path):
    path = _chain_file(tmp_path, 500)
    env = {**os.environ, "MB_SIM_CACHE_DIR": str(tmp_path / "cache"), "RCUTILS_LOGGING_BUFFERED_STREAM": "0"}
    result = subprocess.run([str(NODE_EXE), "--ros-args", "-p", f"urdf_file:={path}"], capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mb_sim_node: parameter urdf_file: {path}: robot 'chain500': too large to derive "
                           "and compile"), result.stderr
    assert f"the limit is {MAX_MASS_MATRIX_ENTRIES}" in last
