"""Code generation: compiled C vs NumPy vs analytic results, RK4 vs SciPy, and the disk cache.

The equations of motion are written by hand for systems with known solutions, so these tests do
not depend on the symbolic derivation.  Everything runs the real compiler on the real generated C.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from sympy import Matrix, Symbol, cos, diag, eye, sin, symbols

from mb_sim.codegen import (
    CodegenError, FactorizationError, NumpyModel, compile_model, generate_c_source,
)
from mb_sim.codegen.cache import cache_key
from mb_sim.symbolic.equations import EquationsOfMotion

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent


def _no_constraints(n_u: int) -> dict[str, Matrix]:
    """The constraint outputs of an unconstrained system (zero-row matrices)."""
    return {"phi": Matrix.zeros(0, 1), "constraint_matrix": Matrix.zeros(0, n_u),
            "constraint_bias": Matrix.zeros(0, 1), "acceleration_bias": Matrix.zeros(0, 1)}


def pendulum(name: str = "pendulum", damping: float = 0) -> EquationsOfMotion:
    """Pendulum swinging about y: m l^2 th'' = -m g l sin(th) - damping th' + tau cos(t).

    Symbol names are not C identifiers (one is "x0", a likely CSE name), and sin(th) appears
    both in a temporary and directly in the forcing, so CSE must share it.
    """
    th, w, tau, t = Symbol("joint[0].θ"), Symbol("u-0"), Symbol("τ"), Symbol("t")
    m, l, g = Symbol("m bob"), Symbol("l*/"), Symbol("g")
    s, c, h = Symbol("sin(θ)"), Symbol("x0"), Symbol("height")
    rotation = [c, 0, s, 0, 1, 0, -s, 0, c]
    outputs = {
        "mass_matrix": Matrix([[m * l**2]]),
        "forcing": Matrix([-m * g * l * sin(th) - damping * w + tau * cos(t)]),
        "qdot": Matrix([w]),
        **_no_constraints(1),
        "link_poses": Matrix([[*rotation, -l * s, 0, h]]),
        "kinetic_energy": Matrix([m * l**2 * w**2 / 2]),
        "potential_energy": Matrix([m * g * h]),
    }
    return EquationsOfMotion(
        name, [th], [w], [tau], [m, l, g], [1.3, 0.7, 9.81], t,
        [(s, sin(th)), (c, cos(th)), (h, -l * c)], outputs, link_names=["bob"])


def double_pendulum() -> EquationsOfMotion:
    """Two point masses on rods in the x-y plane, angles from -y, gravity along -y.

    Temporaries build on each other, and the potential energy repeats l1*c1 from temporary y1:
    the CSE local for it must come after c1 and before y1.
    """
    th1, th2, w1, w2, tau1, tau2, t = symbols("th1 th2 w1 w2 tau1 tau2 t")
    m1, m2, l1, l2, g = symbols("m1 m2 l1 l2 g")
    s1, c1, s2, c2, x1, y1, x2, y2, cd, sd = symbols("s1 c1 s2 c2 x1 y1 x2 y2 cd sd")
    temporaries = [(s1, sin(th1)), (c1, cos(th1)), (s2, sin(th2)), (c2, cos(th2)),
                   (x1, l1 * s1), (y1, -l1 * c1), (x2, x1 + l2 * s2), (y2, y1 - l2 * c2),
                   (cd, cos(th1 - th2)), (sd, sin(th1 - th2))]
    k = m2 * l1 * l2
    outputs = {
        "mass_matrix": Matrix([[(m1 + m2) * l1**2, k * cd], [k * cd, m2 * l2**2]]),
        "forcing": Matrix([-k * sd * w2**2 - (m1 + m2) * g * l1 * s1 + tau1,
                           k * sd * w1**2 - m2 * g * l2 * s2 + tau2]),
        "qdot": Matrix([w1, w2]),
        **_no_constraints(2),
        "link_poses": Matrix([[c1, -s1, 0, s1, c1, 0, 0, 0, 1, x1, y1, 0],
                              [c2, -s2, 0, s2, c2, 0, 0, 0, 1, x2, y2, 0]]),
        "kinetic_energy": Matrix([((m1 + m2) * l1**2 * w1**2 + m2 * l2**2 * w2**2) / 2
                                  + k * cd * w1 * w2]),
        "potential_energy": Matrix([g * (m1 * -l1 * c1 + m2 * (y1 - l2 * c2))]),
    }
    return EquationsOfMotion("double_pendulum", [th1, th2], [w1, w2], [tau1, tau2],
                             [m1, m2, l1, l2, g], [1.0, 0.6, 0.8, 0.5, 9.81], t, temporaries,
                             outputs, link_names=["upper", "lower"])


def masses_on_a_line() -> EquationsOfMotion:
    """Two point masses on a line held together by k (x1 - x2) = 0."""
    x1, x2, v1, v2, f1, f2, m1, m2, k, t = symbols("x1 x2 v1 v2 f1 f2 m1 m2 k t")
    pose = [1, 0, 0, 0, 1, 0, 0, 0, 1]
    outputs = {
        "mass_matrix": diag(m1, m2), "forcing": Matrix([f1, f2]), "qdot": Matrix([v1, v2]),
        "phi": Matrix([k * (x1 - x2)]), "constraint_matrix": Matrix([[k, -k]]),
        "constraint_bias": Matrix([0]), "acceleration_bias": Matrix([0]),
        "link_poses": Matrix([[*pose, x1, 0, 0], [*pose, x2, 0, 0]]),
        "kinetic_energy": Matrix([(m1 * v1**2 + m2 * v2**2) / 2]),
        "potential_energy": Matrix([0]),
    }
    return EquationsOfMotion("masses", [x1, x2], [v1, v2], [f1, f2], [m1, m2, k],
                             [1.0, 3.0, 1.0], t, [], outputs)


def cartesian_pendulum() -> EquationsOfMotion:
    """Point mass on a rod in the x-y plane, x^2 + y^2 = l^2, gravity along -y; no inputs."""
    x, y, vx, vy, m, l, g, t = symbols("x y vx vy m l g t")
    outputs = {
        "mass_matrix": m * eye(2), "forcing": Matrix([0, -m * g]), "qdot": Matrix([vx, vy]),
        "phi": Matrix([x**2 + y**2 - l**2]), "constraint_matrix": Matrix([[2 * x, 2 * y]]),
        "constraint_bias": Matrix([0]), "acceleration_bias": Matrix([2 * (vx**2 + vy**2)]),
        "link_poses": Matrix([[1, 0, 0, 0, 1, 0, 0, 0, 1, x, y, 0]]),
        "kinetic_energy": Matrix([m * (vx**2 + vy**2) / 2]),
        "potential_energy": Matrix([m * g * y]),
    }
    return EquationsOfMotion("cartesian_pendulum", [x, y], [vx, vy], [], [m, l, g],
                             [0.8, 1.1, 9.81], t, [], outputs)


SYSTEMS = {"pendulum": pendulum, "double_pendulum": double_pendulum,
           "masses": masses_on_a_line, "cartesian": cartesian_pendulum}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mb_sim_cache")


@pytest.fixture(scope="module", params=list(SYSTEMS))
def backends(request, cache):
    """(c_model, numpy_model) of each system."""
    eom = SYSTEMS[request.param]()
    return compile_model(eom, cache_dir=cache), compile_model(eom, backend="numpy")


@pytest.fixture(scope="module")
def pendulums(cache):
    """(c_model, numpy_model) of the pendulum."""
    return compile_model(pendulum(), cache_dir=cache), NumpyModel(pendulum())


def random_arguments(model, rng: np.random.Generator) -> dict:
    """A random state, inputs, perturbed parameters and time."""
    return {"q": rng.normal(size=model.n_q), "u": rng.normal(size=model.n_u),
            "inputs": rng.normal(size=model.n_inputs),
            "params": model.parameter_values * rng.uniform(0.5, 1.5, size=model.n_params),
            "t": rng.uniform(0, 10)}


def test_c_and_numpy_backends_agree(backends):
    c_model, numpy_model = backends
    rng = np.random.default_rng(1)
    for _ in range(5):
        arguments = random_arguments(c_model, rng)
        c_outputs, numpy_outputs = c_model.evaluate(**arguments), numpy_model.evaluate(**arguments)
        assert list(c_outputs) == list(numpy_outputs)
        for name, value in c_outputs.items():
            assert value.shape == numpy_outputs[name].shape
            np.testing.assert_allclose(value, numpy_outputs[name], rtol=1e-12, atol=1e-12,
                                       err_msg=name)
        for c_value, numpy_value in zip(c_model.forward_dynamics(**arguments),
                                        numpy_model.forward_dynamics(**arguments)):
            np.testing.assert_allclose(c_value, numpy_value, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", [0, 1], ids=["c", "numpy"])
def test_pendulum_matches_analytic(pendulums, backend):
    model = pendulums[backend]
    th, w, tau, t = 0.4, -1.2, 0.3, 0.9
    m, l, g = model.parameter_values
    outputs = model.evaluate([th], [w], [tau], t=t)
    s, c = np.sin(th), np.cos(th)
    np.testing.assert_allclose(outputs["mass_matrix"], [[m * l**2]], rtol=1e-14)
    np.testing.assert_allclose(outputs["link_poses"],
                               [[c, 0, s, 0, 1, 0, -s, 0, c, -l * s, 0, -l * c]], rtol=1e-14)
    np.testing.assert_allclose(outputs["kinetic_energy"], [[m * l**2 * w**2 / 2]], rtol=1e-14)
    np.testing.assert_allclose(outputs["potential_energy"], [[-m * g * l * c]], rtol=1e-14)
    assert outputs["phi"].shape == (0, 1) and outputs["constraint_matrix"].shape == (0, 1)
    qdot, udot = model.forward_dynamics([th], [w], [tau], t=t)
    np.testing.assert_allclose(qdot, [w], rtol=1e-15)
    np.testing.assert_allclose(udot, [(-m * g * l * s + tau * np.cos(t)) / (m * l**2)],
                               rtol=1e-13)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_double_pendulum_matches_analytic(cache, backend):
    model = compile_model(double_pendulum(), backend, cache)
    m1, m2, l1, l2, g = model.parameter_values
    (th1, th2), (w1, w2), (tau1, tau2) = (0.3, -0.8), (1.1, -0.4), (0.2, -0.7)
    k, cd, sd = m2 * l1 * l2, np.cos(th1 - th2), np.sin(th1 - th2)
    mass_matrix = [[(m1 + m2) * l1**2, k * cd], [k * cd, m2 * l2**2]]
    forcing = [-k * sd * w2**2 - (m1 + m2) * g * l1 * np.sin(th1) + tau1,
               k * sd * w1**2 - m2 * g * l2 * np.sin(th2) + tau2]
    outputs = model.evaluate([th1, th2], [w1, w2], [tau1, tau2])
    np.testing.assert_allclose(outputs["mass_matrix"], mass_matrix, rtol=1e-14)
    y1, y2 = -l1 * np.cos(th1), -l1 * np.cos(th1) - l2 * np.cos(th2)
    np.testing.assert_allclose(outputs["potential_energy"], [[g * (m1 * y1 + m2 * y2)]],
                               rtol=1e-14)
    np.testing.assert_allclose(outputs["link_poses"][:, 9:],
                               [[l1 * np.sin(th1), y1, 0],
                                [l1 * np.sin(th1) + l2 * np.sin(th2), y2, 0]], rtol=1e-14)
    _, udot = model.forward_dynamics([th1, th2], [w1, w2], [tau1, tau2])
    np.testing.assert_allclose(udot, np.linalg.solve(mass_matrix, forcing), rtol=1e-13)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_constrained_forward_dynamics_matches_analytic(cache, backend):
    masses = compile_model(masses_on_a_line(), backend, cache)
    f = np.array([2.0, -0.5])
    _, udot = masses.forward_dynamics([0.3, 0.3], [0.1, 0.1], f)
    np.testing.assert_allclose(udot, [f.sum() / 4.0] * 2, rtol=1e-14)

    rod = compile_model(cartesian_pendulum(), backend, cache)
    m, l, g = rod.parameter_values
    th, w = 0.7, 1.9
    s, c = np.sin(th), np.cos(th)
    alpha = -g / l * s
    _, udot = rod.forward_dynamics([l * s, -l * c], [l * w * c, l * w * s], [])
    np.testing.assert_allclose(udot, [l * (alpha * c - w**2 * s), l * (alpha * s + w**2 * c)],
                               rtol=1e-12)


@pytest.mark.parametrize("backend", [0, 1], ids=["c", "numpy"])
def test_rk4_matches_solve_ivp(pendulums, backend):
    model = pendulums[backend]
    m, l, g = model.parameter_values
    q0, u0, tau, t0, dt, n = 0.4, 0.5, 0.3, 0.2, 1e-3, 1000

    def rhs(t, x):
        return [x[1], (-m * g * l * np.sin(x[0]) + tau * np.cos(t)) / (m * l**2)]

    reference = solve_ivp(rhs, (t0, t0 + n * dt), [q0, u0], method="DOP853", rtol=1e-10,
                          atol=1e-12)
    q, u, t = model.rk4([q0], [u0], [tau], dt, n, t=t0)
    assert t == pytest.approx(t0 + n * dt, rel=1e-15)
    np.testing.assert_allclose(np.concatenate([q, u]), reference.y[:, -1], rtol=0, atol=1e-8)


@pytest.mark.parametrize("backend", [0, 1], ids=["c", "numpy"])
def test_fast_path_uses_buffers(pendulums, backend):
    model = pendulums[backend]
    b = model.buffers
    b.q[:], b.u[:], b.inputs[:], b.params[:] = 0.4, -1.2, 0.3, model.parameter_values
    model.forward_dynamics_into(0.9)
    qdot, udot = model.forward_dynamics([0.4], [-1.2], [0.3], t=0.9)
    assert np.array_equal(b.qdot, qdot) and np.array_equal(b.udot, udot)
    t = model.rk4_into(1e-3, 10, 0.9)
    assert t == pytest.approx(0.91) and b.q[0] != 0.4
    with pytest.raises(AttributeError):
        b.q = np.zeros(1)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_factorization_failure_raises(cache, backend):
    model = compile_model(pendulum(), backend, cache)
    with pytest.raises(FactorizationError, match="mass matrix"):
        model.forward_dynamics([0.1], [0.0], [0.0], params=[0.0, 1.0, 9.81])
    with pytest.raises(FactorizationError) as failure:
        model.rk4([0.1], [0.2], [0.0], 1e-3, 5, params=[0.0, 1.0, 9.81], t=0.5)
    assert failure.value.t == 0.5 and (model.buffers.q[0], model.buffers.u[0]) == (0.1, 0.2)
    masses = compile_model(masses_on_a_line(), backend, cache)
    with pytest.raises(FactorizationError, match="constraints") as failure:
        masses.forward_dynamics([0, 0], [0, 0], [1, 1], params=[1.0, 1.0, 0.0])
    assert failure.value.code == 2


def test_generated_c_shares_subexpressions_and_compiles_cleanly(tmp_path):
    source = generate_c_source(pendulum())
    for function in ("void mb_evaluate(", "void mb_dynamics("):
        body = source.split(function)[1].split("\n}\n")[0]
        assert body.count("sin(q[0])") == 1, function
    assert "θ" not in source and "joint[0]" not in source and "m bob" not in source
    for name, text in [("pendulum", source), ("masses", generate_c_source(masses_on_a_line()))]:
        path = tmp_path / f"{name}.c"
        path.write_text(text)
        subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-c",
                        str(path), "-o", str(path.with_suffix(".o"))], check=True)


def test_malformed_equations_are_reported():
    eom = pendulum()
    eom.outputs["forcing"] = Matrix([Symbol("undeclared")])
    with pytest.raises(CodegenError, match="undeclared"):
        generate_c_source(eom)
    eom.outputs["forcing"] = Matrix([[1, 2]])
    with pytest.raises(CodegenError, match="'forcing' has shape 1 x 2, expected 1 x 1"):
        generate_c_source(eom)
    with pytest.raises(ValueError, match="backend"):
        compile_model(pendulum(), backend="fortran")


def test_cache_key_follows_the_equations_not_parameter_values():
    key = cache_key(generate_c_source(pendulum()))
    other_values = pendulum()
    other_values.parameter_values = [2.0, 1.0, 1.0]
    assert cache_key(generate_c_source(other_values)) == key
    assert cache_key(generate_c_source(pendulum(damping=0.1))) != key


def test_second_compile_loads_from_cache_without_compiler(tmp_path, monkeypatch):
    first: list[str] = []
    model = compile_model(pendulum(), cache_dir=tmp_path, progress=first.append)
    assert any("compiling" in m for m in first)
    stamp = model.library_path.stat().st_mtime_ns
    monkeypatch.setenv("CC", "/nonexistent/cc")
    second: list[str] = []
    again = compile_model(pendulum(), cache_dir=tmp_path, progress=second.append)
    assert not any("compiling" in m for m in second)
    assert any("from the cache" in m for m in second)
    assert again.library_path == model.library_path
    assert again.library_path.stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(again.forward_dynamics([0.1], [0], [0]),
                                  model.forward_dynamics([0.1], [0], [0]))


def test_cache_directory_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MB_SIM_CACHE_DIR", str(tmp_path / "from_env"))
    model = compile_model(pendulum())
    assert model.library_path.parent == tmp_path / "from_env"


def _rebuild_messages(cache_dir: Path) -> list[str]:
    """Progress messages of compiling the pendulum into `cache_dir` (must succeed)."""
    messages: list[str] = []
    model = compile_model(pendulum(), cache_dir=cache_dir, progress=messages.append)
    assert model.forward_dynamics([0.0], [0.0], [1.0])[1][0] == 1.0 / (1.3 * 0.7**2)
    return messages


def _sidecar(cache_dir: Path) -> tuple[Path, Path, dict]:
    """Library, sidecar and sidecar contents of the single entry in `cache_dir`."""
    (library,) = cache_dir.glob("*.so")
    sidecar = library.with_suffix(".json")
    return library, sidecar, json.loads(sidecar.read_text())


def test_truncated_library_is_rebuilt(tmp_path):
    _rebuild_messages(tmp_path)
    library, _, _ = _sidecar(tmp_path)
    data = library.read_bytes()
    library.unlink()  # a new file: the loaded library stays mapped
    library.write_bytes(data[: len(data) // 2])
    messages = _rebuild_messages(tmp_path)
    assert any("stale or corrupt" in m for m in messages)
    assert any("compiling" in m for m in messages)
    assert library.read_bytes() == data


def test_mismatched_sidecar_is_rebuilt(tmp_path):
    _rebuild_messages(tmp_path)
    _, sidecar, metadata = _sidecar(tmp_path)
    sidecar.write_text(json.dumps(dict(metadata, key="0" * 64)))
    assert any("compiling" in m for m in _rebuild_messages(tmp_path))
    assert _sidecar(tmp_path)[2]["key"] == metadata["key"]


COMPILE_SCRIPT = """
import pathlib, sys, time
sys.path.insert(0, {test_dir!r})
from test_codegen import pendulum
from mb_sim.codegen import compile_model
barrier, name, cache_dir = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
(barrier / name).touch()
while len(list(barrier.iterdir())) < int(sys.argv[4]):
    time.sleep(0.001)
model = compile_model(pendulum(), cache_dir=cache_dir, progress=print)
print("udot", model.forward_dynamics([0.0], [0.0], [1.0])[1][0])
"""


def _compile_in_processes(cache_dir: Path, barrier: Path, count: int) -> list[str]:
    """Outputs of `count` processes that compile the pendulum into `cache_dir` at once."""
    barrier.mkdir()
    script = COMPILE_SCRIPT.format(test_dir=str(TEST_DIR))
    processes = [
        subprocess.Popen([sys.executable, "-c", script, str(barrier), str(i), str(cache_dir),
                          str(count)], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for i in range(count)]
    results = [p.communicate(timeout=120) for p in processes]
    for process, (_, stderr) in zip(processes, results):
        assert process.returncode == 0, stderr
    return [stdout for stdout, _ in results]


def test_concurrent_processes_compile_the_same_model(tmp_path):
    cache_dir = tmp_path / "cache"
    outputs = _compile_in_processes(cache_dir, tmp_path / "barrier", 2)
    expected = f"udot {1.0 / (1.3 * 0.7**2)!r}"
    assert all(expected in out for out in outputs)
    assert any("compiling" in out for out in outputs)
    assert sorted(p.suffix for p in cache_dir.iterdir()) == [".c", ".json", ".so"]
    library, _, metadata = _sidecar(cache_dir)
    assert metadata["key"] == cache_key(generate_c_source(pendulum()))
    assert "from the cache" in _rebuild_messages(cache_dir)[-1]


def test_unloadable_library_is_rebuilt(tmp_path):
    # Built by another process: this one has never loaded the path, so dlopen reads the file.
    _compile_in_processes(tmp_path / "cache", tmp_path / "barrier", 1)
    library, sidecar, metadata = _sidecar(tmp_path / "cache")
    library.write_bytes(b"not a shared library")
    sidecar.write_text(json.dumps(dict(metadata, sha256=hashlib.sha256(library.read_bytes())
                                       .hexdigest())))
    messages = _rebuild_messages(tmp_path / "cache")
    assert any("cannot load cached" in m for m in messages)
    assert any("compiling" in m for m in messages)


def test_missing_compiler_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(CodegenError, match=r"'/nonexistent/cc' not found.*backend='numpy'"):
        compile_model(pendulum(), cache_dir=tmp_path)


def test_failing_compiler_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "cc --no-such-option")
    with pytest.raises(CodegenError, match=r"(?s)'cc' failed.*no-such-option"):
        compile_model(pendulum(), cache_dir=tmp_path)
    assert [p.suffix for p in tmp_path.iterdir()] == [".c"]
