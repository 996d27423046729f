"""Generate the C99 source file that evaluates and integrates a model.

The generated part is the model's straight-line functions (the dynamics outputs, the others,
the decay rates, the constraint blocks) and the macros and index tables the hand-written runtime
reads; the runtime itself (linear algebra, servos, forward dynamics, projection, RK4) is real C
in ``mb_sim/codegen/c/`` (``mb_runtime.h`` documents the contract), included at the end of the
generated file, so a model is still one translation unit and one shared library.

Entry points (all ``q, u, z, inputs, params`` are ``const double *`` unless noted, ``t`` a
double; ``z`` are the electrical states, motor currents, possibly none):

* ``void mb_evaluate(q, u, z, inputs, params, t, double *out)``: every output, in the layout of
  :class:`~mb_sim.codegen.layout.OutputLayout` (documented in the file's header comment);
* ``void mb_dynamics(...)``, ``void mb_constraints(...)``, ``void mb_decay(...)``: only the
  dynamics blocks, only the blocks projection needs (Phi, N, M, A, b; generated only for
  constrained models), or only the electrical states' decay rates (only where there are some),
  of the same layout (each with its own CSE, so cheaper);
* ``void mb_state_updates(q, u, z, inputs, params, t, double *z_after)``: only in a model with a
  ground's stiction anchors (then ``MB_HAS_STATE_UPDATES`` is defined): every electrical state's
  value after a step, which ``mb_finish_step`` copies into z after the projection;
* ``int mb_forward_dynamics(q, u, z, inputs, params, t, double *qdot, double *udot, double *zdot,
  double *lam, const double *enabled)``: solves ``M u' = F`` (``M = L^T L`` along the tree of M's sparsity, no fill-in) or, with constraints,
  ``[M A^T; A 0][u'; lam] = [F; -c]`` through the Schur complement ``A M^-1 A^T``, the
  multipliers into ``lam`` (untouched without constraints; the generalized constraint forces are
  ``-A^T lam``), and z'; returns 0 or 1, 2, or 5 for a spring-damper shorter than
  ``MB_SPRING_MIN_LENGTH``;
* ``int mb_project(double *q, double *u, inputs, params, t, const double *enabled)``: projects
  the state onto the constraints (unit quaternions, ``Phi(q) = 0``, ``A u + b = 0``; see
  :mod:`~mb_sim.codegen.projection`); returns 0, or 4 leaving q and u unchanged;
* ``int mb_rk4(double *q, double *u, double *z, inputs, params, double *t, double dt,
  int n_steps, const double *enabled)``: ``n_steps`` steps with inputs held (classic RK4 for q
  and u, ETDRK4 for z), each followed by a finiteness check (3) and the projection (4); on
  failure the state and ``*t`` are those at the start of the failing step;
* ``mb_evaluate_packed``, ``mb_forward_dynamics_packed``, ``mb_project_packed`` (each
  ``(double *const *a)``) and ``mb_rk4_packed(a, dt, n_steps)``: the same with the buffers packed,
  ``a = {q, u, inputs, params, &t, out, qdot, udot, lam, enabled, z, zdot, servo, applied}``:
  these two apply the joint servos of the ``servo`` table (:mod:`~mb_sim.codegen.servo`; a zero
  first entry: none) at every evaluation, the forward dynamics writing the efforts applied;
* ``mb_n_q(), mb_n_u(), mb_n_z(), mb_n_inputs(), mb_n_params(), mb_n_constraints()`` and
  ``mb_output_offset/rows/cols(int block)`` so a loader can check the library matches;
* with user force laws, ``void mb_set_force_law(law)``: the callback evaluating
  ``law(index, t, deltaL, deltaL_t, k, d, f, active)`` (the library keeps one: set it before
  each call when several models share it).

``enabled[i]`` (``MB_N_CONSTRAINTS`` values, or NULL for all enabled) switches velocity
constraint row i (and, for i < ``MB_N_HOLONOMIC``, the holonomic row i of Phi) on (non-zero) or
off (0.0): a disabled row gets a zero multiplier and is left out of the projection, exactly as if
it had not been derived (the rows of the others stay independent: a subset of independent rows).

Status codes are the keys of :data:`~mb_sim.codegen.errors.FACTORIZATION_FAILURES`.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from string import Template

import numpy as np
import sympy
from sympy import Symbol

from mb_sim.codegen.c_printer import CPrinter
from mb_sim.codegen.errors import SPRING_MIN_LENGTH
from mb_sim.codegen.guarded import accumulations, guarded_lines, guarded_runs
from mb_sim.codegen.parts import function_in_parts
from mb_sim.codegen.mass_factor import is_unrolled, unrolled_mass_functions
from mb_sim.codegen.layout import DYNAMICS_OUTPUTS, PROJECTION_OUTPUTS, OutputLayout
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.program import ARGUMENTS, ProgramSource, StraightLineProgram
from mb_sim.codegen.projection import DEPENDENT_PIVOT, PROJECTION_ITERATIONS, PROJECTION_TOLERANCE, Projection
from mb_sim.codegen.dissipation import DISSIPATION_WIDTH, MAX_ITERATIONS, NEWTON_REGION, STIFF_RATE_DT, TOLERANCE
from mb_sim.codegen.runtime_files import RUNTIME_HEADER, RUNTIME_SOURCES, runtime_digest, runtime_directory, runtime_files
from mb_sim.codegen.servo import SERVO_WIDTH
from mb_sim.codegen.units import UNIT_FUNCTIONS, begin_marker, end_marker
from mb_sim.codegen.version import GENERATOR_VERSION
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

#: The optional output of a model with stiction anchors (mb_sim.model.contact): every electrical
#: state's value after a step, computed by ``mb_state_updates`` and copied into z by mb_finish_step.
STATE_UPDATES = "state_updates"

__all__ = ["GENERATOR_VERSION", "RUNTIME_HEADER", "RUNTIME_SOURCES", "generate_c_source", "runtime_digest",
           "runtime_directory", "runtime_files"]



_SIGNATURE = ("const double *q, const double *u, const double *z, const double *inputs,\n"
              "    const double *params, double t")


def generate_c_source(eom: EquationsOfMotion, progress: Progress = None) -> str:
    """The C99 source of `eom`'s model (see the module docstring for its entry points)."""
    layout = OutputLayout.from_equations(eom)
    projection = Projection.from_equations(eom)
    report(progress, f"generating C for {eom.name}...")
    functions = [
        ("mb_dynamics", "Only the dynamics blocks (M, F, qdot, A, b, c) into out[].",
         DYNAMICS_OUTPUTS),
        ("mb_other_outputs", "The blocks mb_dynamics does not write into out[].",
         tuple(name for name in OUTPUT_NAMES if name not in DYNAMICS_OUTPUTS)),
    ]
    if eom.n_z:
        functions.append(("mb_decay", "Only the electrical states' decay rates into out[].",
                          ("electrical_decay",)))
    if eom.n_constraints:
        functions.append(("mb_constraints", "Only the blocks projection needs (Phi, N, M, A, b) into "
                          "out[].", PROJECTION_OUTPUTS))
    updates, source = [], ProgramSource(eom)
    if STATE_UPDATES in eom.outputs:  # stiction anchors: z after a step, for mb_finish_step
        updates.append(_c_function("mb_state_updates", "The electrical states' values after a step (a ground's "
                                   "stiction anchors moved, the others as they are) into out[0 .. MB_N_Z).",
                                   source.program((STATE_UPDATES,), progress, eliminate=False, rename=False),
                                   np.arange(eom.n_z)))
    return "\n".join([
        _header(eom, layout, projection),
        *(_marked(name, _c_function(name, doc, source.program(names, progress, eliminate=False, rename=False),
                                    layout.indices(names))) for name, doc, names in functions),
        *updates,
        unrolled_mass_functions(speed_parents(eom.outputs["mass_matrix"])),
        "/* The hand-written runtime (mb_sim/codegen/c): linear algebra, dynamics, projection, RK4. */",
        *(f'#include "{name}"' for name in RUNTIME_SOURCES), "",
    ])


def _marked(name: str, text: str) -> str:
    """The functions a large model compiles apart (:data:`~mb_sim.codegen.units.UNIT_FUNCTIONS`)
    between their markers (:mod:`mb_sim.codegen.units`); the others as they are."""
    return f"{begin_marker(name)}\n{text}{end_marker(name)}\n" if name in UNIT_FUNCTIONS else text


def _c_function(name: str, doc: str, program: StraightLineProgram, indices: np.ndarray) -> str:
    """A C function computing `program`, output element k into ``out[indices[k]]``."""
    names = {s: f"{key}[{i}]" for key in ARGUMENTS[:-1]
             for i, s in enumerate(program.arguments[key])}
    names[program.arguments["t"][0]] = "t"
    names.update((s, f"v{i}") for i, (s, _) in enumerate(program.assignments))
    printer = CPrinter(names)
    runs = guarded_runs(program.assignments)
    sums = accumulations(runs, program.outputs)
    needed, later = [], set().union(*(e.free_symbols for e in program.outputs))
    for run in reversed(runs):  # what each run must leave defined: what comes after it reads
        needed.append({s for s, _ in run if s in later})
        for s, e in run:
            if s not in sums.terms:  # a sum's terms are added where computed
                later |= e.free_symbols
    statements = []
    for i, (run, after) in enumerate(zip(runs, reversed(needed))):
        statements += [[f"    double {names[s]} = 0;"] for s in sums.declared_before.get(i, ())]
        statements.append(guarded_lines(run, names, printer, after, sums))  # an if block: one statement
    statements += [[f"    out[{k}] = {printer.doprint(e)};"] for k, e in zip(indices, program.outputs)]
    return function_in_parts(name, doc, _SIGNATURE, "(void)q; (void)u; (void)z; (void)inputs; (void)params; (void)t;",
                             statements)


def _header(eom: EquationsOfMotion, layout: OutputLayout, projection: Projection) -> str:
    """Banner with the layout, the macros and tables the runtime reads (see c/mb_runtime.h)."""
    blocks = list(layout.blocks.values())
    table = "\n".join(f" *   {i:<5d}  {b.name:<19s} {b.offset:<7d} {b.shape[0]} x {b.shape[1]}"
                      for i, b in enumerate(blocks))
    offsets = "".join(f"#define MB_OFFSET_{b.name.upper()} {b.offset}\n" for b in blocks)
    starts, chains = _chains(speed_parents(eom.outputs["mass_matrix"]))
    return _HEADER.substitute(
        name=repr(eom.name).replace("*/", "*\\/"), version=GENERATOR_VERSION,
        sympy=sympy.__version__, table=table, offsets=offsets, n_q=eom.n_q, n_u=eom.n_u, n_z=eom.n_z,
        n_inputs=len(eom.inputs), n_params=len(eom.parameters), n_c=eom.n_constraints,
        n_h=eom.n_holonomic, n_springs=len(eom.spring_names), spring_min=repr(SPRING_MIN_LENGTH),
        n_out=layout.size, n_blocks=len(blocks), servo_width=SERVO_WIDTH,
        n_dissipation=len(eom.dissipation_rows) // DISSIPATION_WIDTH,
        dissipation_width=DISSIPATION_WIDTH, dissipation_iterations=MAX_ITERATIONS,
        dissipation_tolerance=repr(TOLERANCE), dissipation_stiff=repr(STIFF_RATE_DT),
        dissipation_newton_region=repr(NEWTON_REGION),
        n_quaternions=len(projection.quaternion_starts), n_position_speeds=len(projection.correction_speeds),
        len_chain=max(len(chains), 1), features=_features(eom, projection),
        offset_list=", ".join(str(b.offset) for b in blocks) + f", {layout.size}",
        rows=", ".join(str(b.shape[0]) for b in blocks),
        cols=", ".join(str(b.shape[1]) for b in blocks),
        chain_starts=", ".join(map(str, starts)), chains=", ".join(map(str, chains)) or "0",
        projection_tables=_projection_tables(projection) + _dissipation_table(eom.dissipation_rows),
        quaternions=_index_list(projection.quaternion_starts),
        position_speeds=_index_list(projection.correction_speeds),
        tolerance=repr(PROJECTION_TOLERANCE), iterations=PROJECTION_ITERATIONS,
        dependent_pivot=repr(DEPENDENT_PIVOT))


def _features(eom: EquationsOfMotion, projection: Projection) -> str:
    """The runtime's feature flags (0 or 1): which optional parts the model compiles in."""
    flags = {"CONSTRAINTS": eom.n_constraints, "HOLONOMIC": eom.n_holonomic, "ELECTRICAL_STATES": eom.n_z,
             "SPRINGS": len(eom.spring_names), "FORCE_LAW": len(eom.force_laws),
             "QUATERNIONS": len(projection.quaternion_starts), "DISSIPATION": len(eom.dissipation_rows)}
    stiction = "#define MB_HAS_STATE_UPDATES 1\n" if STATE_UPDATES in eom.outputs else ""  # only then: same code
    unrolled = ("#define MB_UNROLLED_MASS 1  /* mb_mass_factor and mb_mass_solve printed below */\n"
                if is_unrolled(speed_parents(eom.outputs["mass_matrix"])) else "")
    return "".join(f"#define MB_HAS_{name} {int(bool(value))}\n" for name, value in flags.items()) + stiction + unrolled


def _chains(parents: list[int]) -> tuple[list[int], list[int]]:
    """mb_chain_start and mb_chain: every speed's chain of parents in the tree of M's sparsity,
    concatenated, and where each speed's chain starts (one more entry: the end)."""
    chains, starts = [], [0]
    for k in range(len(parents)):
        l = parents[k]
        while l >= 0:
            chains.append(l)
            l = parents[l]
        starts.append(len(chains))
    return starts, chains


def _projection_tables(projection: Projection) -> str:
    """The index tables of the projection the model needs: quaternion blocks, position speeds."""
    tables = []
    if projection.quaternion_starts:
        tables.append("static const int mb_quaternion_starts[MB_N_QUATERNIONS] = "
                      f"{{{_index_list(projection.quaternion_starts)}}};\n")
    if projection.correction_speeds:
        tables.append("static const int mb_position_speeds[MB_N_POSITION_SPEEDS] = "
                      f"{{{_index_list(projection.correction_speeds)}}};\n")
    return "".join(tables)


def _dissipation_table(rows: list[int]) -> str:
    """mb_dissipation: per joint with damping or friction, its speed and the parameter indices of
    d, f, v_s (-1: zero), the rows RK4 may take implicitly (mb_sim.codegen.dissipation)."""
    if not rows:
        return ""
    return ("/* Joints with damping or friction: speed, parameter indices of d, f, v_s (-1: zero). */\n"
            f"static const int mb_dissipation[MB_N_DISSIPATION * MB_DISSIPATION_WIDTH] = {{{_index_list(rows)}}};\n")


def _index_list(indices: tuple[int, ...]) -> str:
    """`indices` for a C initializer or a comment; "none" if empty."""
    return ", ".join(map(str, indices)) or "none"


def speed_parents(mass_matrix: sympy.Matrix) -> list[int]:
    """The tree of the mass matrix's sparsity: per speed k, the largest l < k with M[k, l] not
    identically zero (-1: none), so every such l lies on k's chain of parents and an L^T L
    factorization from the last speed up makes no fill-in (Featherstone's LTL).  A pattern that
    is no tree gives the chain k - 1 (the dense factorization)."""
    n = mass_matrix.shape[0]
    coupled = [{l for l in range(k) if mass_matrix[k, l] != 0} for k in range(n)]
    parents = [max(c) if c else -1 for c in coupled]
    for k in range(n):
        chain, l = set(), parents[k]
        while l >= 0:
            chain.add(l)
            l = parents[l]
        if not coupled[k] <= chain:
            return list(range(-1, n - 1))
    return parents




_HEADER = Template("""\
/* Equations of motion of model $name, generated by mb_sim codegen $version (SymPy $sympy).
 * Do not edit: regenerate from the model instead.
 *
 * Arguments: q[MB_N_Q], u[MB_N_U], electrical states z[MB_N_Z], inputs[MB_N_INPUTS],
 * params[MB_N_PARAMS], time t.
 * out[MB_N_OUT] holds these blocks, each flattened row-major (mb_dynamics writes only M, F,
 * qdot, A, b, c, the spring lengths and z'; mb_constraints only Phi, N, M, A and b):
 *   block  name                offset  rows x cols
$table
 *
 * Projection onto the constraints (mb_project, and mb_rk4 after each step): unit quaternions
 * starting at q[$quaternions]; coordinates onto Phi = 0 along the speeds u[$position_speeds];
 * all speeds onto A u + b = 0 by the mass-weighted impulse.
 *
 * The macros and tables below are what the hand-written runtime reads (mb_runtime.h), included
 * at the end of this file: one translation unit, compiled with -I <the runtime's directory>.
 */
#include <math.h>
#include <string.h>

#define MB_N_Q $n_q
#define MB_N_U $n_u
#define MB_N_Z $n_z
#define MB_N_STATE (MB_N_Q + MB_N_U + MB_N_Z)
#define MB_N_INPUTS $n_inputs
#define MB_N_PARAMS $n_params
#define MB_N_CONSTRAINTS $n_c
#define MB_N_HOLONOMIC $n_h
#define MB_N_SPRINGS $n_springs
#define MB_SPRING_MIN_LENGTH $spring_min
#define MB_N_OUT $n_out
#define MB_N_BLOCKS $n_blocks
#define MB_PROJECTION_TOLERANCE $tolerance
#define MB_PROJECTION_ITERATIONS $iterations
#define MB_DEPENDENT_PIVOT $dependent_pivot
#define MB_SERVO_WIDTH $servo_width
#define MB_N_DISSIPATION $n_dissipation
#define MB_DISSIPATION_WIDTH $dissipation_width
#define MB_DISSIPATION_ITERATIONS $dissipation_iterations
#define MB_DISSIPATION_TOLERANCE $dissipation_tolerance
#define MB_DISSIPATION_STIFF $dissipation_stiff
#define MB_DISSIPATION_NEWTON_REGION $dissipation_newton_region
#define MB_N_QUATERNIONS $n_quaternions
#define MB_N_POSITION_SPEEDS $n_position_speeds
#define MB_LEN_CHAIN $len_chain
$features$offsets
#include "mb_runtime.h"
/* mb_sim: macros end */

static const int mb_offsets[MB_N_BLOCKS + 1] = {$offset_list};
static const int mb_rows[MB_N_BLOCKS] = {$rows};
static const int mb_cols[MB_N_BLOCKS] = {$cols};

/* The tree of M's sparsity: speed k's chain of parents (its parent, the parent's parent, ...) is
 * mb_chain[mb_chain_start[k] .. mb_chain_start[k + 1]); M[k][l] != 0 for l < k only on it.  The
 * runtime's loops read it (the unrolled factorization has it in its indices). */
#if !defined(MB_UNROLLED_MASS) || MB_HAS_CONSTRAINTS || MB_HAS_DISSIPATION
static const int mb_chain_start[MB_N_U + 1] = {$chain_starts};
static const int mb_chain[MB_LEN_CHAIN] = {$chains};
#endif
$projection_tables""")
