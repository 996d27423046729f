"""Standalone C export of a model (``mb-sim export-c ROBOT OUT_DIR``): no Python at run time.

OUT_DIR receives

* ``<name>.c``: the generated model (the file mb_sim compiles for itself) followed by the export's
  additions (default parameters, default constraint flags, the numerical linearization); it
  includes the runtime files copied beside it, so it is the only file to compile;
* ``mb_runtime.h`` and the runtime sources (``mb_linalg.c`` ...; included by ``<name>.c``, not
  compiled on their own) and ``mb_linearize.c``;
* ``<name>.h``: the public API, documented: dimensions, the names of the state's entries, the
  parameter struct ``mb_params_t`` (one field per model parameter, with its description and
  unit), forward dynamics, RK4 with projection, projection, evaluation, linearization;
* ``example.c``: sets a state, takes 1000 RK4 steps, prints the final state;
* ``CMakeLists.txt``: the library ``<name>`` and the example.
"""
from __future__ import annotations

import math
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template

import numpy as np

from mb_sim import __version__
from mb_sim.codegen.c_source import GENERATOR_VERSION, generate_c_source, runtime_directory, runtime_files
from mb_sim.codegen.layout import OutputLayout
from mb_sim.codegen.progress import Progress, report
from mb_sim.model import Robot, symbol_name
from mb_sim.symbolic import EquationsOfMotion, derive_equations

__all__ = ["EXPORT_SOURCES", "ExportedFiles", "c_identifiers", "export_c"]

#: Runtime files only an export includes (after the model's runtime).
EXPORT_SOURCES = ("mb_linearize.c",)
#: RK4 steps and step of the example program.
EXAMPLE_STEPS, EXAMPLE_DT = 1000, 1e-3

_C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while _Bool _Complex _Imaginary""".split())


@dataclass(frozen=True)
class ExportedFiles:
    """What :func:`export_c` wrote: the library's source and header, the example, the CMake file."""

    source: Path
    header: Path
    example: Path
    cmake: Path
    runtime: tuple[Path, ...]


def export_c(robot: Robot, out_dir: str | Path, q0: Sequence[float] | None = None,
             u0: Sequence[float] | None = None, progress: Progress = None,
             eom: EquationsOfMotion | None = None) -> ExportedFiles:
    """Write the standalone C library of `robot` into `out_dir` (created if missing).

    `q0`, `u0` are the example's initial state (default: zero coordinates, identity quaternions,
    zero speeds; the example projects it onto the constraints first).  `eom`, if given, is the
    robot's derived equations (else derived here).
    """
    eom = derive_equations(robot, progress) if eom is None else eom
    name = _library_name(eom.name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runtime = tuple(_copy_runtime(out))
    fields = c_identifiers([str(p) for p in eom.parameters])
    header = out / f"{name}.h"
    header.write_text(_public_header(robot, eom, name, fields))
    source = out / f"{name}.c"
    source.write_text(generate_c_source(eom, progress) + _export_part(eom, name, fields))
    example = out / "example.c"
    example.write_text(_example(eom, name, q0, u0))
    cmake = out / "CMakeLists.txt"
    cmake.write_text(_CMAKE.substitute(name=name))
    report(progress, f"exported {eom.name} to {out}: {source.name}, {header.name}, example.c, CMakeLists.txt")
    return ExportedFiles(source, header, example, cmake, runtime)


def _library_name(model: str) -> str:
    """The model's name as a C file stem and CMake target: [A-Za-z0-9_], not a runtime file's."""
    name = re.sub(r"\W", "_", model, flags=re.ASCII) or "model"
    name = f"model_{name}" if name[0].isdigit() else name
    runtime = {p.stem for p in runtime_files()} | {Path(s).stem for s in EXPORT_SOURCES} | {"example"}
    return f"{name}_model" if name in runtime else name


def _copy_runtime(out: Path) -> list[Path]:
    """Copy the runtime header and sources (and the export-only ones) into `out`."""
    paths = [*runtime_files(), *(runtime_directory() / s for s in EXPORT_SOURCES)]
    return [Path(shutil.copyfile(path, out / path.name)) for path in paths]


def c_identifiers(names: Sequence[str]) -> list[str]:
    """`names` as distinct valid C identifiers: other characters become _, a leading digit or a
    C keyword gets a prefix, repeats get a numbered suffix."""
    identifiers: list[str] = []
    for name in names:
        identifier = re.sub(r"\W", "_", name, flags=re.ASCII) or "p"
        if identifier[0].isdigit() or identifier in _C_KEYWORDS:
            identifier = f"p_{identifier}"
        base, k = identifier, 2
        while identifier in identifiers:
            identifier, k = f"{base}_{k}", k + 1
        identifiers.append(identifier)
    return identifiers


def _literal(value: float) -> str:
    """A C double literal of `value` that reads back exactly (INFINITY or NAN if not finite)."""
    value = float(value)
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    text = repr(value)
    return text if any(c in text for c in ".eE") else f"{text}.0"


def _comment(text: str) -> str:
    """`text` safe inside a C block comment (one line, no comment terminator)."""
    return " ".join(str(text).split()).replace("*/", "* /")


def _symbol_list(title: str, symbols: Sequence, descriptions: dict) -> str:
    """A comment block listing `symbols` by index with their descriptions."""
    if not symbols:
        return f" * {title}: none\n"
    lines = [f" * {title}:"]
    names = [symbol_name(s) for s in symbols]
    lines += [f" *   [{k}] {_comment(n)}" + (f": {_comment(descriptions[n])}" if n in descriptions else "")
              for k, n in enumerate(names)]
    return "\n".join(lines) + "\n"


def _descriptions_by_name(robot: Robot) -> dict[str, str]:
    """The robot's symbol descriptions (with units) by symbol name: the equations carry plain
    symbols of the same names in place of the model's time-dependent ones."""
    return {symbol_name(symbol): text for symbol, text in robot.descriptions.items()}


def _params_struct(eom: EquationsOfMotion, fields: list[str], descriptions: dict) -> str:
    """The typedef of mb_params_t: one documented double per parameter, in params[] order."""
    lines = []
    for k, (symbol, field) in enumerate(zip(eom.parameters, fields)):
        doc = _comment(descriptions.get(symbol_name(symbol), "")) or "model parameter"
        alias = "" if field == str(symbol) else f" ({_comment(symbol)})"
        lines.append(f"    double {field};  /**< params[{k}]{alias}: {doc} */")
    body = "\n".join(lines) or "    double unused;  /**< the model has no parameters */"
    return f"typedef struct {{\n{body}\n}} mb_params_t;\n"


def _public_header(robot: Robot, eom: EquationsOfMotion, name: str, fields: list[str]) -> str:
    """The text of <name>.h (its macros are token for token those of the generated source, so
    <name>.c can include it: C allows identical redefinitions)."""
    descriptions = _descriptions_by_name(robot)
    layout = OutputLayout.from_equations(eom)
    blocks = "\n".join(f" *   MB_OFFSET_{b.name.upper():<24s} {b.shape[0]} x {b.shape[1]}"
                       for b in layout.blocks.values())
    return _HEADER.substitute(
        model=_comment(eom.name), name=name, guard=f"MB_{name.upper()}_H", version=__version__,
        generator=GENERATOR_VERSION, n_q=eom.n_q, n_u=eom.n_u, n_z=eom.n_z, n_inputs=len(eom.inputs),
        n_params=len(eom.parameters), n_c=eom.n_constraints, n_out=layout.size,
        macros="".join(f"#define MB_OFFSET_{b.name.upper()} {b.offset}\n" for b in layout.blocks.values()),
        symbols=_symbol_list("Coordinates q", eom.q, descriptions) + _symbol_list("Speeds u", eom.u, descriptions)
        + _symbol_list("Electrical states z", eom.z, descriptions) + _symbol_list("Inputs", eom.inputs, descriptions)
        + _symbol_list("Constraint rows (enabled[])", eom.constraint_labels or [], {}),
        blocks=blocks, params=_params_struct(eom, fields, descriptions))


def _export_part(eom: EquationsOfMotion, name: str, fields: list[str]) -> str:
    """What <name>.c adds to the generated model: the public header (checking its prototypes),
    the numerical linearization, the default parameters and constraint flags."""
    values = "\n".join(f"    p.{f} = {_literal(v)};" for f, v in zip(fields, eom.parameter_values))
    to_array = "\n".join(f"    params[{k}] = p->{f};" for k, f in enumerate(fields))
    enabled = ", ".join("1.0" for _ in range(eom.n_constraints)) or "0.0"
    return _EXPORT.substitute(name=name, defaults=values or "    p.unused = 0.0;",
                              to_array=to_array or "    (void)p; (void)params;", enabled=enabled)


def _example(eom: EquationsOfMotion, name: str, q0: Sequence[float] | None,
             u0: Sequence[float] | None) -> str:
    """The text of example.c: `EXAMPLE_STEPS` RK4 steps from (q0, u0), the final state printed."""
    q = np.zeros(eom.n_q) if q0 is None else np.asarray(q0, dtype=float)
    if q0 is None:
        q[list(eom.quaternion_starts)] = 1.0
    u = np.zeros(eom.n_u) if u0 is None else np.asarray(u0, dtype=float)
    if q.shape != (eom.n_q,) or u.shape != (eom.n_u,):
        raise ValueError(f"the example's state needs {eom.n_q} coordinates and {eom.n_u} speeds, "
                         f"got {q.size} and {u.size}")
    return _EXAMPLE.substitute(name=name, q0=", ".join(map(_literal, q)) or "0.0",
                               u0=", ".join(map(_literal, u)) or "0.0", steps=EXAMPLE_STEPS,
                               dt=_literal(EXAMPLE_DT))


_HEADER = Template("""\
/* $name.h: standalone C library of the mb_sim model $model.
 * Exported by mb_sim $version (code generator $generator): `mb-sim export-c`.  No Python needed.
 *
 * Build: compile $name.c only (it includes mb_runtime.h and the runtime .c files beside it), C99,
 * link with -lm:   cc -std=c99 -O2 -c $name.c   (or use CMakeLists.txt).
 * All arrays are plain doubles, row-major; the functions keep no state and are reentrant (they
 * use only the caller's buffers and their own stack).
 *
 * Arguments of the functions below:
 *   q[MB_N_Q] coordinates, u[MB_N_U] speeds, z[MB_N_Z] electrical states (motor currents; pass
 *   any pointer when MB_N_Z is 0), inputs[MB_N_INPUTS] (joint efforts [N m or N], motor
 *   voltages [V]), params[MB_N_PARAMS] (see mb_params_t and mb_params_to_array), t time [s],
 *   enabled[MB_N_CONSTRAINTS] one flag per constraint row (non-zero: enforced; NULL: all rows;
 *   mb_default_enabled gives the defaults: every row; a row that depends on the others where the
 *   robot is gets a zero multiplier there, judged at every call).
 * Status codes: 0 ok; 1 mass matrix not positive definite; 2 constraints' Schur complement
 * A M^-1 A^T not finite (a constraint row dependent on the others is not a failure: it gets a zero
 * multiplier); 3 state not finite; 4 projection failed; 5 a
 * spring-damper shorter than its minimum length.
 *
$symbols */
#ifndef $guard
#define $guard

#ifdef __cplusplus
extern "C" {
#endif

#define MB_N_Q $n_q
#define MB_N_U $n_u
#define MB_N_Z $n_z
#define MB_N_STATE (MB_N_Q + MB_N_U + MB_N_Z)
#define MB_N_INPUTS $n_inputs
#define MB_N_PARAMS $n_params
#define MB_N_CONSTRAINTS $n_c

/* The model's parameters by name, in the order of params[] (units in brackets).  Fill one with
 * mb_default_params() (the URDF's values), change fields, then mb_params_to_array(). */
$params
/* The URDF's parameter values. */
mb_params_t mb_default_params(void);

/* params[MB_N_PARAMS] from p, the array every function below takes. */
void mb_params_to_array(const mb_params_t *p, double *params);

/* The model's default constraint flags into enabled[MB_N_CONSTRAINTS] (nothing if there are no
 * constraints): 1.0 for the rows enforced, 0.0 for redundant rows left out. */
void mb_default_enabled(double *enabled);

/* Forward dynamics: q', u' and z' at (q, u, z, inputs, t); with constraints the multipliers
 * lam[MB_N_CONSTRAINTS] of [M A^T; A 0][u'; lam] = [F; -c] (generalized constraint forces
 * -A^T lam; lam untouched without constraints).  Returns a status code. */
int mb_forward_dynamics(const double *q, const double *u, const double *z, const double *inputs,
                        const double *params, double t, double *qdot, double *udot, double *zdot,
                        double *lam, const double *enabled);

/* n_steps steps of dt from *t with the inputs held: classic RK4 for q and u, ETDRK4 for z, each
 * step followed by a finiteness check and the projection onto the constraints (mb_project).
 * q, u, z and *t are updated in place; on failure they are the state at the start of the failing
 * step.  Returns 0 or the failing step's status code. */
int mb_rk4(double *q, double *u, double *z, const double *inputs, const double *params, double *t,
           double dt, int n_steps, const double *enabled);

/* Project (q, u) onto the constraints: unit quaternions, Phi(q) = 0 (Gauss-Newton to 1e-12),
 * A u + b = 0 (the mass-weighted impulse).  Returns 0, or 4 leaving q and u unchanged. */
int mb_project(double *q, double *u, const double *inputs, const double *params, double t,
               const double *enabled);

/* Every output of the model into out[MB_N_OUT], row-major blocks at these offsets:
$blocks
 * (mass matrix M, forcing F, q' = N u + ..., constraint rows, poses, energies, ...). */
#define MB_N_OUT $n_out
$macros
void mb_evaluate(const double *q, const double *u, const double *z, const double *inputs,
                 const double *params, double t, double *out);

/* Numerical linearization of the full state x = [q; u; z]: A = dx'/dx (MB_N_STATE x MB_N_STATE)
 * and B = dx'/d inputs (MB_N_STATE x MB_N_INPUTS), row-major, by central differences of
 * mb_forward_dynamics with the step 6.06e-6 max(1, |value|) (cube root of the machine
 * epsilon: about 1e-10 relative error).  Coordinates are perturbed independently, so with
 * constraints or quaternions this is the full, not the minimal, state (`mb-sim linearize`
 * gives the exact linearization in minimal coordinates).  Returns 0 or a status code. */
int mb_linearize_full(const double *q, const double *u, const double *z, const double *inputs,
                      const double *params, double t, const double *enabled, double *A, double *B);

/* Dimensions, to check a library against its header at run time. */
int mb_n_q(void);
int mb_n_u(void);
int mb_n_z(void);
int mb_n_inputs(void);
int mb_n_params(void);
int mb_n_constraints(void);

#ifdef __cplusplus
}
#endif

#endif /* $guard */
""")

_EXPORT = Template("""
/* Standalone export (mb-sim export-c): the public header, the linearization, the defaults. */
#include "$name.h"
#include "mb_linearize.c"

mb_params_t mb_default_params(void)
{
    mb_params_t p;
$defaults
    return p;
}

void mb_params_to_array(const mb_params_t *p, double *params)
{
$to_array
}

static const double mb_enabled_defaults[MB_N_CONSTRAINTS > 0 ? MB_N_CONSTRAINTS : 1] = {$enabled};

void mb_default_enabled(double *enabled)
{
    memcpy(enabled, mb_enabled_defaults, sizeof(double) * MB_N_CONSTRAINTS);
}
""")

_EXAMPLE = Template("""\
/* Example: $steps RK4 steps of $dt s from a fixed state with zero inputs and the URDF's
 * parameters, then the final time and state printed (%.17g: every digit of each double).
 * Build: cmake -S . -B build && cmake --build build && ./build/example
 *    or: cc -std=c99 -O2 example.c $name.c -lm -o example && ./example */
#include <stdio.h>

#include "$name.h"

#define LEN(n) ((n) > 0 ? (n) : 1)

static void print_vector(const char *label, const double *v, int n)
{
    printf("%s", label);
    for (int i = 0; i < n; ++i)
        printf(" %.17g", v[i]);
    printf("\\n");
}

int main(void)
{
    static const double q0[LEN(MB_N_Q)] = {$q0}, u0[LEN(MB_N_U)] = {$u0};
    double q[LEN(MB_N_Q)], u[LEN(MB_N_U)], z[LEN(MB_N_Z)] = {0.0}, inputs[LEN(MB_N_INPUTS)] = {0.0};
    double params[LEN(MB_N_PARAMS)], enabled[LEN(MB_N_CONSTRAINTS)];
    double t = 0.0;
    const mb_params_t p = mb_default_params();
    int status;
    for (int i = 0; i < MB_N_Q; ++i)
        q[i] = q0[i];
    for (int i = 0; i < MB_N_U; ++i)
        u[i] = u0[i];
    mb_params_to_array(&p, params);
    mb_default_enabled(enabled);
    if ((status = mb_project(q, u, inputs, params, t, enabled)) != 0) {
        fprintf(stderr, "example: the initial state cannot be projected onto the constraints (status %d)\\n", status);
        return 1;
    }
    if ((status = mb_rk4(q, u, z, inputs, params, &t, $dt, $steps, enabled)) != 0) {
        fprintf(stderr, "example: RK4 stopped at t = %g s with status %d\\n", t, status);
        return 1;
    }
    printf("t %.17g\\n", t);
    print_vector("q", q, MB_N_Q);
    print_vector("u", u, MB_N_U);
    print_vector("z", z, MB_N_Z);
    return 0;
}
""")

_CMAKE = Template("""\
# Standalone C library exported by mb_sim (mb-sim export-c): the library $name and the example.
cmake_minimum_required(VERSION 3.10)
project($name C)

set(CMAKE_C_STANDARD 99)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)  # -std=c99: no contraction into fused multiply-adds, as mb_sim compiles
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

# $name.c includes mb_runtime.h and the runtime .c files beside it: it is the only source.
add_library($name $name.c)
target_include_directories($name PUBLIC $${CMAKE_CURRENT_SOURCE_DIR})
set_target_properties($name PROPERTIES POSITION_INDEPENDENT_CODE ON)
find_library(MB_MATH_LIBRARY m)
if(MB_MATH_LIBRARY)
  target_link_libraries($name PUBLIC $${MB_MATH_LIBRARY})
endif()

add_executable(example example.c)
target_link_libraries(example PRIVATE $name)
""")
