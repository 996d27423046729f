"""The standalone C export (``mb-sim export-c``) against the Python simulator.

arm6 (a tree with joint stops) and the four-bar (a closed loop: constraints and projection) are
exported into temporary directories, compiled with ``cc -std=c99 -O2 -Wall -Wextra -pedantic``
(no warning allowed) and with CMake, and run for 1000 RK4 steps; the final state must match
:class:`mb_sim.sim.Simulator` (same dt, same initial state, inputs, parameters and constraint
flags: the driver below is given the simulator's, since the simulator tunes its joint stops) to
1e-12.  The example program must match the compiled model run from Python with the URDF's
parameters, and the numerical linearization a central difference of the model's forward
dynamics.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.cli import main
from mb_sim.codegen import load_numeric_model
from mb_sim.codegen.export import c_identifiers, export_c
from mb_sim.sim import Simulator

REPO = Path(__file__).resolve().parent.parent
CC_FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic"]
STEPS, DT = 1000, 1e-3
TOLERANCE = 1e-12

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

# Reads dt, steps, then q, u, z, inputs, params, enabled from stdin; prints the status, the final
# state after mb_rk4, and A and B of mb_linearize_full at the initial state.
DRIVER = r"""
#include <stdio.h>
#include "MODEL.h"
#define LEN(n) ((n) > 0 ? (n) : 1)

static int read_vector(double *v, int n)
{
    for (int i = 0; i < n; ++i)
        if (scanf("%lf", &v[i]) != 1)
            return 1;
    return 0;
}

static void print_vector(const char *label, const double *v, int n)
{
    printf("%s", label);
    for (int i = 0; i < n; ++i)
        printf(" %.17g", v[i]);
    printf("\n");
}

int main(void)
{
    static double q[LEN(MB_N_Q)], u[LEN(MB_N_U)], z[LEN(MB_N_Z)], inputs[LEN(MB_N_INPUTS)];
    static double params[LEN(MB_N_PARAMS)], enabled[LEN(MB_N_CONSTRAINTS)];
    static double a[LEN(MB_N_STATE * MB_N_STATE)], b[LEN(MB_N_STATE * MB_N_INPUTS)];
    double dt, t = 0.0;
    int steps, status;
    if (scanf("%lf %d", &dt, &steps) != 2 || read_vector(q, MB_N_Q) || read_vector(u, MB_N_U)
        || read_vector(z, MB_N_Z) || read_vector(inputs, MB_N_INPUTS) || read_vector(params, MB_N_PARAMS)
        || read_vector(enabled, MB_N_CONSTRAINTS))
        return 2;
    status = mb_linearize_full(q, u, z, inputs, params, t, enabled, a, b);
    print_vector("A", a, MB_N_STATE * MB_N_STATE);
    print_vector("B", b, MB_N_STATE * MB_N_INPUTS);
    status = status ? status : mb_rk4(q, u, z, inputs, params, &t, dt, steps, enabled);
    printf("status %d\nt %.17g\n", status, t);
    print_vector("q", q, MB_N_Q);
    print_vector("u", u, MB_N_U);
    print_vector("z", z, MB_N_Z);
    return 0;
}
"""

# The robots, their initial joint positions and speeds, and the efforts held.
CASES = {
    "arm6": ({"shoulder_lift_joint": -0.6, "elbow_joint": 0.9, "wrist_2_joint": 0.4},
             {"shoulder_pan_joint": 0.5, "wrist_1_joint": -0.8},
             {"shoulder_pan_joint": 2.0, "shoulder_lift_joint": -5.0, "wrist_3_joint": 0.05}),
    "four_bar": ({"crank_joint": 0.7}, {"crank_joint": 1.5}, {"crank_joint": 0.3}),
}


def compile_checked(sources: list[Path], output: Path, include: Path) -> None:
    """Compile and link `sources` with CC_FLAGS; fail on an error or any compiler output."""
    result = subprocess.run(["cc", *CC_FLAGS, "-I", str(include), *map(str, sources), "-lm", "-o", str(output)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == "", f"compiler output (warnings?):\n{result.stderr}"


def parse(text: str) -> dict[str, np.ndarray]:
    """The labelled lines the driver and the example print, as arrays."""
    return {line.split()[0]: np.array(line.split()[1:], dtype=float) for line in text.splitlines() if line.strip()}


def run_driver(driver: Path, steps: int, vectors: list[np.ndarray]) -> dict[str, np.ndarray]:
    """What the driver prints after `steps` steps of DT from the state and arguments `vectors`
    (q, u, z, inputs, params, enabled), every double passed exactly (repr)."""
    numbers = " ".join(repr(float(v)) for vector in vectors for v in vector)
    result = subprocess.run([str(driver)], input=f"{DT!r} {steps} {numbers}", capture_output=True, text=True,
                            check=True)
    return parse(result.stdout)


def started_simulator(robot) -> Simulator:
    """The simulator of one CASES robot at its initial state with its efforts set."""
    positions, velocities, efforts = CASES[robot.name]
    sim = Simulator(robot, dt=DT, integrator="rk4")
    sim.set_state(positions, velocities)
    sim.set_efforts(efforts)
    return sim


@pytest.fixture(scope="module", params=sorted(CASES))
def exported(request, tmp_path_factory):
    """(robot, export directory, driver executable) of one CASES robot."""
    robot = load_urdf(REPO / "urdf" / f"{request.param}.urdf")
    out = tmp_path_factory.mktemp(f"export_{request.param}")
    files = export_c(robot, out)
    driver = out / "driver.c"
    driver.write_text(DRIVER.replace("MODEL", files.source.stem))
    compile_checked([driver, files.source], out / "driver", out)
    return robot, out, out / "driver"


def test_exported_c_matches_the_simulator(exported):
    robot, _, driver = exported
    sim = started_simulator(robot)
    b = sim.model.buffers
    start = np.concatenate([sim.q, sim.u])
    c = run_driver(driver, STEPS, [sim.q, sim.u, sim.z, b.inputs, b.params, b.enabled])
    sim.advance(STEPS * DT)
    assert c["status"][0] == 0 and c["t"][0] == pytest.approx(sim.time, abs=1e-12)
    moved = np.abs(np.concatenate([sim.q, sim.u]) - start).max()
    assert moved > 0.1  # the comparison is of a motion, not of a state at rest
    error = np.abs(np.concatenate([c["q"] - sim.q, c["u"] - sim.u])).max()
    print(f"{robot.name}: largest difference from the simulator after {STEPS} steps {error:.1e}")
    assert error <= TOLERANCE


def test_linearization_is_a_central_difference_of_the_dynamics(exported):
    """mb_linearize_full's A and B against a central difference of the compiled model (Python)."""
    robot, _, driver = exported
    sim = started_simulator(robot)
    model, b = sim.model, sim.model.buffers
    q0, u0, inputs, params = sim.q, sim.u, b.inputs.copy(), b.params.copy()
    out = run_driver(driver, 0, [q0, u0, sim.z, inputs, params, b.enabled])
    n_q, n_x = model.n_q, model.n_q + model.n_u

    def derivative(x: np.ndarray, f: np.ndarray) -> np.ndarray:
        return np.concatenate(model.forward_dynamics(x[:n_q], x[n_q:], f, params))

    x0 = np.concatenate([q0, u0])
    columns = []
    for j, vector in [(j, "x") for j in range(n_x)] + [(j, "f") for j in range(model.n_inputs)]:
        base = x0 if vector == "x" else inputs
        h = 6.055454452393343e-06 * max(1.0, abs(base[j]))
        plus, minus = base.copy(), base.copy()
        plus[j] += h
        minus[j] -= h
        pair = [(p, inputs) if vector == "x" else (x0, p) for p in (plus, minus)]
        columns.append((derivative(*pair[0]) - derivative(*pair[1])) / (2 * h))
    expected = np.array(columns).T
    a, b_matrix = out["A"].reshape(n_x, n_x), out["B"].reshape(n_x, model.n_inputs)
    np.testing.assert_allclose(np.hstack([a, b_matrix]), expected, rtol=1e-9, atol=1e-9)
    assert np.abs(a).max() > 1.0


def test_example_and_cmake_build(exported, tmp_path):
    """CMake builds the library and the example; the example's final state is the model's, run
    from Python with the URDF's parameters from the same (projected) state."""
    robot, out, _ = exported
    if shutil.which("cmake") is None:
        pytest.skip("no cmake")
    build = tmp_path / "build"
    for command in (["cmake", "-S", str(out), "-B", str(build), "-DCMAKE_C_FLAGS=-Wall -Wextra -pedantic"],
                    ["cmake", "--build", str(build)]):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "warning" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr
    printed = parse(subprocess.run([str(build / "example")], capture_output=True, text=True, check=True).stdout)
    model = load_numeric_model(robot)
    q, u = np.zeros(model.n_q), np.zeros(model.n_u)
    q[list(model.projection.quaternion_starts)] = 1.0
    q, u = model.project(q, u)
    q, u, t = model.rk4(q, u, np.zeros(model.n_inputs), 1e-3, 1000)
    assert printed["t"][0] == pytest.approx(t, abs=1e-12)
    np.testing.assert_allclose(np.concatenate([printed["q"], printed["u"]]), np.concatenate([q, u]),
                               rtol=0, atol=TOLERANCE)


def test_default_parameters_are_the_urdf_values(exported):
    """mb_default_params and mb_params_to_array give the robot's parameters, bit for bit."""
    robot, out, _ = exported
    (out / "params.c").write_text(
        f'#include <stdio.h>\n#include "{robot.name}.h"\nint main(void)\n{{\n'
        "    double params[MB_N_PARAMS];\n    const mb_params_t p = mb_default_params();\n"
        "    mb_params_to_array(&p, params);\n"
        '    for (int i = 0; i < MB_N_PARAMS; ++i)\n        printf("%.17g\\n", params[i]);\n    return 0;\n}\n')
    compile_checked([out / "params.c", out / f"{robot.name}.c"], out / "params", out)
    printed = subprocess.run([str(out / "params")], capture_output=True, text=True, check=True).stdout.split()
    np.testing.assert_array_equal(np.array(printed, dtype=float), list(robot.parameters.values()))
    header = (out / f"{robot.name}.h").read_text()
    assert "typedef struct {" in header and "mass of link" in header and "[kg]" in header


def test_c_identifiers():
    assert c_identifiers(["a-b", "1x", "int", "a_b", "a.b"]) == ["a_b", "p_1x", "p_int", "a_b_2", "a_b_3"]


def test_cli_export_c(tmp_path, capsys):
    assert main(["export-c", "pendulum", str(tmp_path / "out")]) == 0
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"pendulum.c", "pendulum.h", "example.c", "CMakeLists.txt", "mb_runtime.h", "mb_linalg.c"} <= names
    assert "pendulum.c" in capsys.readouterr().out
