"""The hand-written C runtime (mb_sim/codegen/c) compiles on its own without a warning.

Each runtime file is compiled as its own translation unit (MB_SEPARATE_COMPILATION) against a
toy model's macros, once with every optional part on (constraints, holonomic rows, electrical
states, springs, force laws, quaternions) and once with all off, with
``cc -std=c99 -O2 -Wall -Wextra -pedantic -Werror``; and the cache key follows the runtime's
content.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mb_sim.codegen import c_source
from mb_sim.codegen.c_source import RUNTIME_SOURCES, runtime_directory, runtime_files
from mb_sim.codegen.export import EXPORT_SOURCES

FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror"]
# Output blocks the runtime reads: offsets of a toy layout (values only need to be in range).
BLOCKS = ("MASS_MATRIX", "FORCING", "QDOT", "ELECTRICAL_RATES", "ELECTRICAL_DECAY", "SPRING_LENGTHS",
          "CONSTRAINT_MATRIX", "ACCELERATION_BIAS", "CONSTRAINT_BIAS", "PHI", "KINEMATIC_MAP")
FEATURES = ("CONSTRAINTS", "HOLONOMIC", "ELECTRICAL_STATES", "SPRINGS", "FORCE_LAW", "QUATERNIONS", "DISSIPATION")


def toy_header(on: bool) -> str:
    """The macros of a toy model with 7 coordinates (a quaternion), 6 speeds, 2 motor currents,
    2 constraints (1 holonomic), 1 spring, 2 damped joints; or of a 2-DoF model without any optional part."""
    dims = dict(N_Q=7, N_U=6, N_Z=2, N_INPUTS=3, N_PARAMS=5, N_CONSTRAINTS=2, N_HOLONOMIC=1, N_SPRINGS=1,
                N_QUATERNIONS=1, N_POSITION_SPEEDS=6, N_DISSIPATION=2) if on else \
        dict(N_Q=2, N_U=2, N_Z=0, N_INPUTS=2, N_PARAMS=3, N_CONSTRAINTS=0, N_HOLONOMIC=0, N_SPRINGS=0,
             N_QUATERNIONS=0, N_POSITION_SPEEDS=0, N_DISSIPATION=0)
    lines = ["#define MB_SEPARATE_COMPILATION 1"]
    lines += [f"#define MB_{k} {v}" for k, v in dims.items()]
    lines += ["#define MB_N_STATE (MB_N_Q + MB_N_U + MB_N_Z)", "#define MB_SPRING_MIN_LENGTH 1e-09",
              "#define MB_N_OUT 400", "#define MB_N_BLOCKS 11", "#define MB_PROJECTION_TOLERANCE 1e-12",
              "#define MB_PROJECTION_ITERATIONS 20", "#define MB_DEPENDENT_PIVOT 1e-10", "#define MB_SERVO_WIDTH 23", "#define MB_LEN_CHAIN 15",
              "#define MB_DISSIPATION_WIDTH 4", "#define MB_DISSIPATION_ITERATIONS 30",
              "#define MB_DISSIPATION_TOLERANCE 1e-13", "#define MB_DISSIPATION_STIFF 1.0",
              "#define MB_DISSIPATION_NEWTON_REGION 1e-10"]
    lines += [f"#define MB_OFFSET_{name} {30 * i}" for i, name in enumerate(BLOCKS)]
    lines += [f"#define MB_HAS_{name} {int(on)}" for name in FEATURES]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("on", [True, False], ids=["every part", "no optional part"])
@pytest.mark.parametrize("name", RUNTIME_SOURCES + EXPORT_SOURCES)
def test_runtime_file_compiles_alone_without_warnings(tmp_path: Path, name: str, on: bool):
    header = tmp_path / "toy_model.h"
    header.write_text(toy_header(on))
    result = subprocess.run(["cc", *FLAGS, "-include", str(header), "-I", str(runtime_directory()), "-c",
                             str(runtime_directory() / name), "-o", str(tmp_path / "runtime.o")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and not result.stderr, result.stderr


def test_runtime_files_are_real_files_and_in_the_cache_key(tmp_path: Path, monkeypatch):
    """Every runtime file exists; changing one changes the key of the same generated source."""
    from mb_sim.codegen.cache import cache_key

    assert all(path.is_file() for path in runtime_files())
    key = cache_key("/* a model */")
    copy = tmp_path / "c"
    shutil.copytree(runtime_directory(), copy)
    from mb_sim.codegen import runtime_files as files

    monkeypatch.setattr(files, "_RUNTIME", copy)
    assert cache_key("/* a model */") == key
    (copy / "mb_linalg.c").write_text((copy / "mb_linalg.c").read_text() + "\n/* edited */\n")
    assert cache_key("/* a model */") != key


def _law_spring(repo: Path) -> str:
    """spring_mass.urdf with a user force law (the callback into the host)."""
    return (repo / "urdf/spring_mass.urdf").read_text().replace('reference_length="1"',
                                                                 'reference_length="1" law="runtime_test_law"')


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("robot", ["four_bar", "diff_drive", "free_body", "spring_mass", "spring_mass law"])
def test_generated_models_compile_without_warnings(tmp_path: Path, robot: str):
    """Each feature flag's runtime parts, as a model compiles them: holonomic loops, motors with
    nonholonomic rolling, a quaternion, springs, a user force law."""
    from mb_sim import load_urdf
    from mb_sim.model import register_force_law
    from mb_sim.symbolic import derive_equations

    repo = Path(__file__).resolve().parent.parent
    if robot.endswith("law"):
        register_force_law("runtime_test_law", lambda t, name, u, v, k, d, f0: k * u + d * v + f0)
        model = load_urdf(_law_spring(repo))
    else:
        model = load_urdf(repo / "urdf" / f"{robot}.urdf")
    source = tmp_path / "model.c"
    text = c_source.generate_c_source(derive_equations(model))
    assert ("#define MB_HAS_FORCE_LAW 1" in text) == robot.endswith("law")
    source.write_text(text)
    result = subprocess.run(["cc", *FLAGS, "-I", str(runtime_directory()), "-c", str(source), "-o",
                             str(tmp_path / "model.o")], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and not result.stderr, result.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_unrolled_factorization_is_the_loops_bit_for_bit(tmp_path: Path, monkeypatch):
    """The generated straight-line mb_mass_factor / mb_mass_solve (mb_sim.codegen.mass_factor) do
    the runtime loops' operations in their order: a chain (arm6), a tree with constraints (the diff
    drive) and a floating base (free_body) get the same accelerations to the last bit at random
    states as with the loops (forced by an operation limit below any model's)."""
    import numpy as np

    from mb_sim import load_urdf
    from mb_sim.codegen import mass_factor
    from mb_sim.codegen.compiled import CompiledModel
    from mb_sim.symbolic import derive_equations

    repo = Path(__file__).resolve().parent.parent
    rng = np.random.default_rng(7)
    for robot in ("arm6", "diff_drive", "free_body"):
        eom = derive_equations(load_urdf(repo / "urdf" / f"{robot}.urdf"))
        unrolled = CompiledModel(eom, tmp_path / "unrolled")
        assert "#define MB_UNROLLED_MASS 1" in unrolled.source
        monkeypatch.setattr(mass_factor, "MAX_UNROLLED_OPERATIONS", -1)
        looped = CompiledModel(eom, tmp_path / "looped")
        monkeypatch.undo()
        assert "MB_UNROLLED_MASS" not in looped.source.split("#include \"mb_runtime.h\"")[0]
        for _ in range(20):
            q, u = rng.normal(size=eom.n_q), rng.normal(size=eom.n_u)
            inputs = rng.normal(size=len(eom.inputs))
            a = unrolled.forward_dynamics(q, u, inputs)[1]
            b = looped.forward_dynamics(q, u, inputs)[1]
            assert a.tobytes() == b.tobytes(), robot
