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
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipk
from sympy import Matrix, Symbol, cos, diag, eye, sin, sqrt, symbols

from mb_sim.codegen import (
    CodegenError, FactorizationError, NumpyModel, compile_model, generate_c_source,
)
from mb_sim.codegen import pipeline
from mb_sim.codegen.c_source import runtime_directory
from mb_sim.codegen.cache import cache_key
from mb_sim.symbolic.equations import EquationsOfMotion

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent


def _no_constraints(n_q: int, n_u: int) -> dict[str, Matrix]:
    """The constraint outputs of an unconstrained system (zero-row matrices)."""
    return {"phi": Matrix.zeros(0, 1), "phi_jacobian": Matrix.zeros(0, n_q),
            "constraint_matrix": Matrix.zeros(0, n_u),
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
        **_no_constraints(1, 1),
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
        **_no_constraints(2, 2),
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
        "phi": Matrix([k * (x1 - x2)]), "phi_jacobian": Matrix([[k, -k]]),
        "constraint_matrix": Matrix([[k, -k]]),
        "constraint_bias": Matrix([0]), "acceleration_bias": Matrix([0]),
        "link_poses": Matrix([[*pose, x1, 0, 0], [*pose, x2, 0, 0]]),
        "kinetic_energy": Matrix([(m1 * v1**2 + m2 * v2**2) / 2]),
        "potential_energy": Matrix([0]),
    }
    return EquationsOfMotion("masses", [x1, x2], [v1, v2], [f1, f2], [m1, m2, k],
                             [1.0, 3.0, 1.0], t, [], outputs)


def cartesian_pendulum(dependent: list[int] | None = None) -> EquationsOfMotion:
    """Point mass on a rod in the x-y plane, x^2 + y^2 = l^2, gravity along -y; no inputs.

    `dependent`: the dependent coordinates, position speeds and dependent speeds (default: none
    named, so all).
    """
    x, y, vx, vy, m, l, g, t = symbols("x y vx vy m l g t")
    outputs = {
        "mass_matrix": m * eye(2), "forcing": Matrix([0, -m * g]), "qdot": Matrix([vx, vy]),
        "phi": Matrix([x**2 + y**2 - l**2]), "phi_jacobian": Matrix([[2 * x, 2 * y]]),
        "constraint_matrix": Matrix([[2 * x, 2 * y]]),
        "constraint_bias": Matrix([0]), "acceleration_bias": Matrix([2 * (vx**2 + vy**2)]),
        "link_poses": Matrix([[1, 0, 0, 0, 1, 0, 0, 0, 1, x, y, 0]]),
        "kinetic_energy": Matrix([m * (vx**2 + vy**2) / 2]),
        "potential_energy": Matrix([m * g * y]),
    }
    return EquationsOfMotion("cartesian_pendulum", [x, y], [vx, vy], [], [m, l, g],
                             [0.8, 1.1, 9.81], t, [], outputs,
                             dependent_coordinates=list(dependent or []),
                             dependent_speeds=list(dependent or []), position_speeds=list(dependent or []))


def _quaternion_rotation(w, x, y, z) -> list:
    """Row-major rotation matrix of the unit quaternion (w, x, y, z)."""
    return [1 - 2 * (y**2 + z**2), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x**2 + z**2), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x**2 + y**2)]


def spinning_body() -> EquationsOfMotion:
    """A rigid body sliding along x and spinning freely: q = [x, qw, qx, qy, qz], u = [v, w].

    Euler's equations in body axes; q' = q (x) (0, w) / 2 keeps the quaternion's norm only up
    to the integrator's error, so projection must renormalize it (the block starts at q[1]).
    """
    x, qw, qx, qy, qz, v, wx, wy, wz, f, t = symbols("x qw qx qy qz v wx wy wz f t")
    m, i1, i2, i3 = symbols("m i1 i2 i3")
    outputs = {
        "mass_matrix": diag(m, i1, i2, i3),
        "forcing": Matrix([f, (i2 - i3) * wy * wz, (i3 - i1) * wz * wx, (i1 - i2) * wx * wy]),
        "qdot": Matrix([v, (-qx * wx - qy * wy - qz * wz) / 2, (qw * wx + qy * wz - qz * wy) / 2,
                        (qw * wy - qx * wz + qz * wx) / 2, (qw * wz + qx * wy - qy * wx) / 2]),
        **_no_constraints(5, 4),
        "link_poses": Matrix([[*_quaternion_rotation(qw, qx, qy, qz), x, 0, 0]]),
        "kinetic_energy": Matrix([(m * v**2 + i1 * wx**2 + i2 * wy**2 + i3 * wz**2) / 2]),
        "potential_energy": Matrix([0]),
    }
    return EquationsOfMotion("spinning_body", [x, qw, qx, qy, qz], [v, wx, wy, wz], [f],
                             [m, i1, i2, i3], [2.0, 0.3, 0.5, 0.9], t, [], outputs,
                             quaternion_starts=[1])


def sleigh() -> EquationsOfMotion:
    """Chaplygin-type sleigh: a body in the plane that cannot slide sideways.

    Only a velocity constraint (no Phi): -sin(th) vx + cos(th) vy = 0.
    """
    x, y, th, vx, vy, w, f, tau, t = symbols("x y th vx vy w f tau t")
    m, inertia = symbols("m inertia")
    s, c = sin(th), cos(th)
    outputs = {
        "mass_matrix": diag(m, m, inertia), "forcing": Matrix([f * c, f * s, tau]),
        "qdot": Matrix([vx, vy, w]), "phi": Matrix.zeros(0, 1),
        "phi_jacobian": Matrix.zeros(0, 3), "constraint_matrix": Matrix([[-s, c, 0]]),
        "constraint_bias": Matrix([0]), "acceleration_bias": Matrix([-w * (c * vx + s * vy)]),
        "link_poses": Matrix([[c, -s, 0, s, c, 0, 0, 0, 1, x, y, 0]]),
        "kinetic_energy": Matrix([(m * (vx**2 + vy**2) + inertia * w**2) / 2]),
        "potential_energy": Matrix([0]),
    }
    return EquationsOfMotion("sleigh", [x, y, th], [vx, vy, w], [f, tau], [m, inertia],
                             [1.5, 0.2], t, [], outputs)


def diverging() -> EquationsOfMotion:
    """x'' = 1 / sqrt(t_blow - t): finite before t_blow, NaN after."""
    x, v, t, t_blow = symbols("x v t t_blow")
    outputs = {
        "mass_matrix": Matrix([[1]]), "forcing": Matrix([1 / sqrt(t_blow - t)]),
        "qdot": Matrix([v]), **_no_constraints(1, 1),
        "link_poses": Matrix([[1, 0, 0, 0, 1, 0, 0, 0, 1, x, 0, 0]]),
        "kinetic_energy": Matrix([v**2 / 2]), "potential_energy": Matrix([0]),
    }
    return EquationsOfMotion("diverging", [x], [v], [], [t_blow], [0.0105], t, [], outputs)


SYSTEMS = {"pendulum": pendulum, "double_pendulum": double_pendulum,
           "masses": masses_on_a_line, "cartesian": cartesian_pendulum,
           "spinning_body": spinning_body, "sleigh": sleigh}


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
        assert c_model.buffers.lam.shape == (c_model.n_constraints,)
        np.testing.assert_allclose(c_model.buffers.lam, numpy_model.buffers.lam, rtol=1e-12,
                                   atol=1e-12)
        state = {k: arguments[k] for k in ("q", "u", "params", "t")}
        for c_value, numpy_value in zip(c_model.project(**state), numpy_model.project(**state)):
            np.testing.assert_allclose(c_value, numpy_value, rtol=1e-12, atol=1e-12)
        steps = dict(arguments, dt=1e-3, n_steps=20)
        for c_value, numpy_value in zip(c_model.rk4(**steps), numpy_model.rk4(**steps)):
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
    # k = 0: the constraint's row vanishes and says nothing here: a zero multiplier, free motion.
    _, udot = masses.forward_dynamics([0, 0], [0, 0], [1, 1], params=[1.0, 1.0, 0.0])
    assert masses.buffers.lam[0] == 0.0 and udot.tolist() == [1.0, 1.0]
    with pytest.raises(FactorizationError, match="constraints") as failure:
        masses.forward_dynamics([0, 0], [0, 0], [1, 1], params=[1.0, 1.0, np.inf])
    assert failure.value.code == 2


def _pendulum_state(l: float, th: float, w: float) -> tuple[np.ndarray, np.ndarray]:
    """Cartesian pendulum state at angle `th` from -y and angular speed `w`."""
    s, c = np.sin(th), np.cos(th)
    return np.array([l * s, -l * c]), np.array([l * w * c, l * w * s])


def _zero_crossings(times: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Times where `values` changes sign, by linear interpolation."""
    k = np.nonzero(np.sign(values[:-1]) != np.sign(values[1:]))[0]
    return times[k] - values[k] * (times[k + 1] - times[k]) / (values[k + 1] - values[k])


def test_cartesian_pendulum_stays_on_its_constraints(cache):
    """10 s of RK4 at 1 ms: the projection holds Phi and A u to round-off, the motion is the
    pendulum's (energy, period from the complete elliptic integral)."""
    model = compile_model(cartesian_pendulum(), cache_dir=cache)
    m, l, g = model.parameter_values
    th0, dt = 1.0, 1e-3
    b = model.buffers
    b.q[:], b.u[:] = _pendulum_state(l, th0, 0.0)
    times, xs, t = [0.0], [b.q[0]], 0.0
    for _ in range(10000):
        t = model.rk4_into(dt, 1, t)
        times.append(t)
        xs.append(b.q[0])
    x, y = b.q
    assert t == pytest.approx(10.0, rel=1e-12)
    assert abs(x**2 + y**2 - l**2) <= 1e-12
    assert abs(2 * x * b.u[0] + 2 * y * b.u[1]) <= 1e-10
    energy = m * (b.u @ b.u) / 2 + m * g * y
    assert energy == pytest.approx(-m * g * l * np.cos(th0), rel=1e-9)
    crossings = _zero_crossings(np.array(times), np.array(xs))
    period = 2 * (crossings[-1] - crossings[0]) / (len(crossings) - 1)
    assert period == pytest.approx(4 * np.sqrt(l / g) * ellipk(np.sin(th0 / 2) ** 2), rel=1e-8)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_multiplier_is_the_rod_tension(cache, backend):
    """-A^T lam is the rod's force on the bob: tension T = m (l w^2 + g cos th) along -q / l."""
    model = compile_model(cartesian_pendulum(), backend, cache)
    m, l, g = model.parameter_values
    th, w = 0.7, 1.9
    q, u = _pendulum_state(l, th, w)
    model.forward_dynamics(q, u, [])
    tension = m * (l * w**2 + g * np.cos(th))
    (lam,) = model.buffers.lam
    np.testing.assert_allclose(-np.array([[2 * q[0], 2 * q[1]]]).T @ [lam], -tension * q / l,
                               rtol=1e-13)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_projection_matches_analytic(cache, backend):
    q, u = np.array([0.9, -0.5]), np.array([0.3, 0.7])
    model = compile_model(cartesian_pendulum(), backend, cache)
    l = model.parameter_values[1]
    # All coordinates and speeds: the nearest point on the circle, the tangential velocity.
    # (Gauss-Newton stops at |Phi| <= 1e-12, so agreement is to about that.)
    projected_q, projected_u = model.project(q, u)
    radial = q / np.linalg.norm(q)
    np.testing.assert_allclose(projected_q, l * radial, rtol=1e-12)
    np.testing.assert_allclose(projected_u, u - (u @ radial) * radial, rtol=1e-12)
    # Only y is a dependent coordinate: x is kept.  The speeds always get the mass-weighted
    # impulse, here (M = m I) the tangential velocity at the projected point.
    model = compile_model(cartesian_pendulum(dependent=[1]), backend, cache)
    projected_q, projected_u = model.project(q, u)
    y = -np.sqrt(l**2 - q[0] ** 2)
    assert projected_q[0] == q[0]
    np.testing.assert_allclose(projected_q, [q[0], y], rtol=1e-12)
    radial = projected_q / l
    np.testing.assert_allclose(projected_u, u - (u @ radial) * radial, rtol=1e-12)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_speed_projection_is_the_momentum_conserving_impulse(cache, backend):
    """Masses 1 and 3 on a line held together: projecting the speeds is a perfectly inelastic
    collision, both end at the centre-of-mass speed (not at the mean of the two)."""
    model = compile_model(masses_on_a_line(), backend, cache)
    m1, m2, _ = model.parameter_values
    v = np.array([2.0, -1.0])
    _, projected = model.project([0.5, 0.5], v)
    common = (m1 * v[0] + m2 * v[1]) / (m1 + m2)
    np.testing.assert_allclose(projected, [common, common], rtol=1e-14)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_speed_projection_without_holonomic_constraints(cache, backend):
    model = compile_model(sleigh(), backend, cache)
    th = 0.4
    heading = np.array([np.cos(th), np.sin(th)])
    q, u = model.project([1.0, 2.0, th], [0.3, -0.8, 0.5])
    np.testing.assert_array_equal(q, [1.0, 2.0, th])
    np.testing.assert_allclose(u, [*(heading @ [0.3, -0.8]) * heading, 0.5], rtol=1e-14,
                               atol=1e-15)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_quaternion_stays_unit(cache, backend):
    model = compile_model(spinning_body(), backend, cache)
    quaternion = np.array([0.5, 0.1, -0.3, 0.8])
    q, u, _ = model.rk4([0.0, *quaternion], [0.1, 3.0, -2.0, 5.0], [0.0], 0.02, 200)
    assert abs(np.linalg.norm(q[1:]) - 1.0) <= 1e-14
    # The kinematics keep the norm exactly, RK4 only to 5e-3 here: projection did the rest.
    qdot, _ = model.forward_dynamics(q, u, [0.0])
    assert abs(q[1:] @ qdot[1:]) <= 1e-12
    projected, _ = model.project([0.0, *quaternion], u)
    np.testing.assert_allclose(projected[1:], quaternion / np.linalg.norm(quaternion),
                               rtol=1e-15)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_failing_projection_raises_and_keeps_the_state(cache, backend):
    model = compile_model(cartesian_pendulum(), backend, cache)
    with pytest.raises(FactorizationError, match="projection") as failure:
        model.project([0.0, 0.0], [1.0, 2.0], t=0.3)
    assert (failure.value.code, failure.value.t) == (4, 0.3)
    assert list(model.buffers.q) == [0.0, 0.0] and list(model.buffers.u) == [1.0, 2.0]
    spinning = compile_model(spinning_body(), backend, cache)
    with pytest.raises(FactorizationError) as failure:
        spinning.project([0.0] * 5, [0.0] * 4)
    assert failure.value.code == 4


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_diverging_state_stops_rk4_at_the_start_of_the_failing_step(cache, backend):
    model = compile_model(diverging(), backend, cache)
    dt, blow_up = 1e-3, model.parameter_values[0]
    with np.errstate(invalid="ignore", divide="ignore"), \
            pytest.raises(FactorizationError, match="not finite") as failure:
        model.rk4([0.0], [0.0], [], dt, 100)
    assert failure.value.code == 3
    assert failure.value.t == pytest.approx(0.010, rel=1e-12) and failure.value.t < blow_up
    q, u = model.buffers.q.copy(), model.buffers.u.copy()
    assert np.isfinite(q).all() and np.isfinite(u).all() and u[0] > 0
    np.testing.assert_array_equal((q, u), model.rk4([0.0], [0.0], [], dt, 10)[:2])


def test_generated_c_shares_subexpressions_and_compiles_cleanly(tmp_path):
    source = generate_c_source(pendulum())
    for function in ("void mb_other_outputs(", "void mb_dynamics("):
        body = source.split(function)[1].split("\n}\n")[0]
        assert body.count("sin(q[0])") == 1, function
    assert "θ" not in source and "joint[0]" not in source and "m bob" not in source
    assert "void mb_constraints(" not in source and "mb_project_coordinates(" not in source
    for name, text in [("pendulum", source), *((name, generate_c_source(SYSTEMS[name]()))
                                               for name in ("masses", "spinning_body", "sleigh"))]:
        path = tmp_path / f"{name}.c"
        path.write_text(text)
        subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-c",
                        "-I", str(runtime_directory()), str(path), "-o", str(path.with_suffix(".o"))],
                       check=True)


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
    eom = cartesian_pendulum()
    del eom.outputs["phi_jacobian"]
    with pytest.raises(CodegenError, match="phi_jacobian missing"):
        generate_c_source(eom)
    eom = cartesian_pendulum()  # Phi without its velocity row in A: enabled flags could not pair them
    for name in ("constraint_matrix", "constraint_bias", "acceleration_bias"):
        eom.outputs[name] = eom.outputs[name][:0, :]
    with pytest.raises(CodegenError, match="1 holonomic constraints but only 0 rows in the constraint matrix"):
        generate_c_source(eom)


@pytest.mark.parametrize("field, indices, message", [
    ("quaternion_starts", [2], r"quaternion_starts \[2\] must be distinct indices in 0\.\.1"),
    ("quaternion_starts", [0, 1], "overlap"),
    ("dependent_coordinates", [0, 0], "distinct"),
    ("dependent_speeds", [5], "distinct indices in 0..1"),
])
def test_malformed_projection_indices_are_reported(field, indices, message):
    eom = cartesian_pendulum()
    eom.q += symbols("qa qb qc")
    eom.outputs["qdot"] = eom.outputs["qdot"].col_join(Matrix([0, 0, 0]))
    eom.outputs["phi_jacobian"] = eom.outputs["phi_jacobian"].row_join(Matrix.zeros(1, 3))
    eom.outputs["kinematic_map"] = eom.outputs["kinematic_map"].col_join(Matrix.zeros(3, 2))
    setattr(eom, field, indices)
    with pytest.raises(CodegenError, match=message):
        generate_c_source(eom)
    with pytest.raises(CodegenError, match=message):
        NumpyModel(eom)


def test_pipeline_index_carries_the_projection(tmp_path):
    """The header a cache hit rebuilds the model from keeps quaternions and dependent indices."""
    for eom in (spinning_body(), cartesian_pendulum(dependent=[1])):
        model = compile_model(eom, cache_dir=tmp_path)
        index = tmp_path / f"{eom.name}.model.json"
        pipeline._write_index(index, eom, model.library_path.with_suffix(".c"), model.source)
        robot = SimpleNamespace(name=eom.name,
                                parameters=dict(zip(eom.parameters, eom.parameter_values)))
        loaded = pipeline._load_cached(robot, index, tmp_path, None)
        assert loaded is not None and loaded.projection == model.projection
        q, u = np.linspace(0.3, 0.9, model.n_q), np.linspace(-0.2, 0.4, model.n_u)
        for a, b in zip(loaded.project(q, u), model.project(q, u)):
            np.testing.assert_array_equal(a, b)


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
