"""Generate one self-contained C99 source file that evaluates and integrates a model.

Entry points (all ``q, u, z, inputs, params`` are ``const double *`` unless noted, ``t`` a
double; ``z`` are the electrical states, motor currents, possibly none):

* ``void mb_evaluate(q, u, z, inputs, params, t, double *out)``: every output, in the layout of
  :class:`~mb_sim.codegen.layout.OutputLayout` (documented in the file's header comment);
* ``void mb_dynamics(...)``, ``void mb_constraints(...)``, ``void mb_decay(...)``: only the
  dynamics blocks, only the blocks projection needs (Phi, N, M, A, b; generated only for
  constrained models), or only the electrical states' decay rates (only where there are some),
  of the same layout (each with its own CSE, so cheaper);
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

from string import Template

import numpy as np
import sympy
from sympy import Symbol
from sympy.printing.c import C99CodePrinter
from sympy.printing.precedence import PRECEDENCE

from mb_sim.codegen.errors import SPRING_MIN_LENGTH
from mb_sim.codegen.layout import DYNAMICS_OUTPUTS, PROJECTION_OUTPUTS, OutputLayout
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.program import ARGUMENTS, StraightLineProgram, straight_line_program
from mb_sim.codegen.projection import PROJECTION_ITERATIONS, PROJECTION_TOLERANCE, Projection
from mb_sim.codegen.servo import SERVO_WIDTH
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

__all__ = ["GENERATOR_VERSION", "generate_c_source"]

# Bump whenever the generated code changes for the same equations (invalidates cached builds).
GENERATOR_VERSION = "11"

_SIGNATURE = ("const double *q, const double *u, const double *z, const double *inputs,\n"
              "    const double *params, double t")


def generate_c_source(eom: EquationsOfMotion, progress: Progress = None) -> str:
    """The C99 source of `eom`'s model (see the module docstring for its entry points)."""
    layout = OutputLayout.from_equations(eom)
    projection = Projection.from_equations(eom)
    n_h, len_x = eom.n_holonomic, max(eom.n_q + eom.n_u + eom.n_z, 1)  # n_h <= n_c: checked by the layout
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
    return "\n".join([
        _header(eom, layout, projection),
        _FORCE_LAW if eom.force_laws else "",
        *(_c_function(name, doc, straight_line_program(eom, names, progress, eliminate=False),
                      layout.indices(names)) for name, doc, names in functions),
        _EVALUATE,
        _linear_algebra(eom.n_u, eom.n_constraints, n_h, speed_parents(eom.outputs["mass_matrix"])),
        _forward_dynamics(eom.n_u, eom.n_constraints, len(eom.spring_names)),
        _projection(projection, n_h, eom.n_constraints, len_x),
        _integrator(eom.n_z, len_x, max(eom.n_constraints, 1)),
    ])


class _Printer(C99CodePrinter):
    """C99 printer that prints symbols through a fixed table and constants as literals."""

    def __init__(self, names: dict[Symbol, str]):
        super().__init__({"strict": True, "inline": True, "math_macros": {}})
        self._names = names

    def _print_Symbol(self, expr: Symbol) -> str:
        return self._names[expr]

    _print_Dummy = _print_Symbol

    def _print_SpringForceLaw(self, expr) -> str:
        """A user force law: a call back into the host (see _FORCE_LAW)."""
        index, *arguments = expr.args
        return f"mb_force_law({int(index)}, {', '.join(self.doprint(a) for a in arguments)})"

    def _print_Pow(self, expr) -> str:
        """Small integer powers as products: pow() is a library call."""
        if expr.exp.is_Integer and 2 <= expr.exp <= 4:
            base = self.parenthesize(expr.base, PRECEDENCE["Mul"])
            return "(" + "*".join([base] * int(expr.exp)) + ")"
        return super()._print_Pow(expr)


def _c_function(name: str, doc: str, program: StraightLineProgram, indices: np.ndarray) -> str:
    """A C function computing `program`, output element k into ``out[indices[k]]``."""
    names = {s: f"{key}[{i}]" for key in ARGUMENTS[:-1]
             for i, s in enumerate(program.arguments[key])}
    names[program.arguments["t"][0]] = "t"
    names.update((s, f"v{i}") for i, (s, _) in enumerate(program.assignments))
    printer = _Printer(names)
    body = [f"    const double v{i} = {printer.doprint(e)};"
            for i, (_, e) in enumerate(program.assignments)]
    body += [f"    out[{k}] = {printer.doprint(e)};" for k, e in zip(indices, program.outputs)]
    return "\n".join([
        f"/* {doc} */", f"void {name}({_SIGNATURE}, double *out)", "{",
        "    (void)q; (void)u; (void)z; (void)inputs; (void)params; (void)t;", *body, "}", ""])


def _header(eom: EquationsOfMotion, layout: OutputLayout, projection: Projection) -> str:
    """Banner with the layout, includes, dimension macros and the introspection functions."""
    blocks = list(layout.blocks.values())
    table = "\n".join(f" *   {i:<5d}  {b.name:<19s} {b.offset:<7d} {b.shape[0]} x {b.shape[1]}"
                      for i, b in enumerate(blocks))
    offsets = "".join(f"#define MB_OFFSET_{b.name.upper()} {b.offset}\n" for b in blocks)
    return _HEADER.substitute(
        name=repr(eom.name).replace("*/", "*\\/"), version=GENERATOR_VERSION,
        sympy=sympy.__version__, table=table, offsets=offsets, n_q=eom.n_q, n_u=eom.n_u, n_z=eom.n_z,
        n_inputs=len(eom.inputs), n_params=len(eom.parameters), n_c=eom.n_constraints,
        n_h=eom.n_holonomic, n_springs=len(eom.spring_names), spring_min=repr(SPRING_MIN_LENGTH),
        n_out=layout.size, n_blocks=len(blocks),
        offset_list=", ".join(str(b.offset) for b in blocks) + f", {layout.size}",
        rows=", ".join(str(b.shape[0]) for b in blocks),
        cols=", ".join(str(b.shape[1]) for b in blocks),
        quaternions=_index_list(projection.quaternion_starts),
        position_speeds=_index_list(projection.position_speeds),
        tolerance=repr(PROJECTION_TOLERANCE), iterations=PROJECTION_ITERATIONS)


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


def _linear_algebra(n_u: int, n_c: int, n_h: int, parents: list[int]) -> str:
    """The tree-sparse factorization of M, plus what the constrained solver and the projection
    need (dense Cholesky for their small matrices), if anything."""
    chains, starts = [], [0]
    for k in range(n_u):
        l = parents[k]
        while l >= 0:
            chains.append(l)
            l = parents[l]
        starts.append(len(chains))
    mass = _MASS_FACTOR.substitute(starts=", ".join(map(str, starts)), len_chains=max(len(chains), 1),
                                   chains=", ".join(map(str, chains)) or "0")
    if not n_c:
        return mass
    least_norm = _LEAST_NORM.substitute(len_gram=n_h * n_h) if n_h else ""
    return "\n".join([mass, _CHOLESKY, _DOT, _ENABLED, least_norm,
                      _SCHUR.substitute(len_cu=n_c * n_u, len_cc=n_c * n_c)])


def _forward_dynamics(n_u: int, n_c: int, n_springs: int) -> str:
    """mb_forward_dynamics, through the Schur complement if n_c > 0."""
    constrained = _CONSTRAINED if n_c else "    (void)lam; (void)enabled;\n"
    return _SERVO.substitute(width=SERVO_WIDTH) + "\n" + _FORWARD_DYNAMICS.substitute(
        constrained=constrained, springs=_SPRING_CHECK if n_springs else "")


def _projection(projection: Projection, n_h: int, n_c: int, len_x: int) -> str:
    """mb_project_state (in place; only what the model needs) and mb_project (all or nothing)."""
    if not projection.needed:
        return _NO_PROJECTION
    helpers, body = [], []
    if n_c:
        helpers.append("/* Zero electrical states, for mb_constraints (no constraint depends on them). */\n"
                       "static const double mb_no_states[MB_N_Z > 0 ? MB_N_Z : 1];\n")
        body.append("    double out[MB_N_OUT];")
    body.append("    (void)q; (void)u; (void)inputs; (void)params; (void)t; (void)enabled;")
    if projection.quaternion_starts:
        helpers.append(_QUATERNIONS.substitute(
            n=len(projection.quaternion_starts), starts=_index_list(projection.quaternion_starts)))
        body += ["    if (mb_normalize_quaternions(q))", "        return 4;"]
    if n_h:
        renormalize = ("        if (mb_normalize_quaternions(q))\n            return 4;\n"
                       if projection.quaternion_starts else "")
        helpers.append(_COORDINATES.substitute(
            n=len(projection.position_speeds), indices=_index_list(projection.position_speeds),
            renormalize=renormalize))
        body += ["    if (mb_project_coordinates(q, u, inputs, params, t, out, enabled))",
                 "        return 4;"]
    elif n_c:
        body.append("    mb_constraints(q, u, mb_no_states, inputs, params, t, out);")
    if n_c:
        helpers.append(_SPEEDS)
        body.append("    return mb_project_speeds(u, out, enabled);")
    else:
        body.append("    return 0;")
    return _PROJECT.substitute(helpers="\n".join(helpers), body="\n".join(body), len_x=len_x)


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
$offsets
static const int mb_offsets[MB_N_BLOCKS + 1] = {$offset_list};
static const int mb_rows[MB_N_BLOCKS] = {$rows};
static const int mb_cols[MB_N_BLOCKS] = {$cols};

int mb_n_q(void) { return MB_N_Q; }
int mb_n_u(void) { return MB_N_U; }
int mb_n_z(void) { return MB_N_Z; }
int mb_n_inputs(void) { return MB_N_INPUTS; }
int mb_n_params(void) { return MB_N_PARAMS; }
int mb_n_constraints(void) { return MB_N_CONSTRAINTS; }

/* Offset in out[] of block `which`; which == MB_N_BLOCKS gives MB_N_OUT; -1 if out of range. */
int mb_output_offset(int which)
{
    return which >= 0 && which <= MB_N_BLOCKS ? mb_offsets[which] : -1;
}

int mb_output_rows(int which) { return which >= 0 && which < MB_N_BLOCKS ? mb_rows[which] : -1; }
int mb_output_cols(int which) { return which >= 0 && which < MB_N_BLOCKS ? mb_cols[which] : -1; }
""")

_CHOLESKY = """\
/* In-place Cholesky factorization a = L L^T of the row-major n x n matrix a (lower triangle read
 * and overwritten).  Returns 0, or 1 at a non-positive pivot (a not positive definite). */
static int mb_cholesky(double *a, int n)
{
    for (int j = 0; j < n; ++j) {
        double d = a[j * n + j];
        for (int k = 0; k < j; ++k)
            d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0.0))
            return 1;
        d = sqrt(d);
        a[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = a[i * n + j];
            for (int k = 0; k < j; ++k)
                s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / d;
        }
    }
    return 0;
}

/* Solve L L^T x = b with L from mb_cholesky; x overwrites b. */
static void mb_cholesky_solve(const double *l, int n, double *b)
{
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < i; ++k)
            b[i] -= l[i * n + k] * b[k];
        b[i] /= l[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        for (int k = i + 1; k < n; ++k)
            b[i] -= l[k * n + i] * b[k];
        b[i] /= l[i * n + i];
    }
}
"""

_EVALUATE = """\
/* Every output of the model into out[] (the dynamics blocks are compiled once, in mb_dynamics). */
void mb_evaluate(const double *q, const double *u, const double *z, const double *inputs,
    const double *params, double t, double *out)
{
    mb_dynamics(q, u, z, inputs, params, t, out);
    mb_other_outputs(q, u, z, inputs, params, t, out);
}
"""

_MASS_FACTOR = Template("""\
/* The tree of M's sparsity: speed k's chain of parents (its parent, the parent's parent, ...) is
 * mb_chain[mb_chain_start[k] .. mb_chain_start[k + 1]); M[k][l] != 0 for l < k only on it. */
static const int mb_chain_start[MB_N_U + 1] = {$starts};
static const int mb_chain[$len_chains] = {$chains};

/* In-place factorization M = L^T L of the row-major MB_N_U x MB_N_U mass matrix along the chains,
 * from the last speed up, so there is no fill-in (Featherstone, RBDA, table 6.3, with a square
 * root: the cost is the sum over speeds of their depth squared).  L is left in the lower triangle
 * (only the chain entries); returns 0, or 1 at a non-positive pivot. */
static int mb_mass_factor(double *h)
{
    for (int k = MB_N_U - 1; k >= 0; --k) {
        double *row = h + k * MB_N_U;
        const int *chain = mb_chain + mb_chain_start[k], n = mb_chain_start[k + 1] - mb_chain_start[k];
        double r[MB_N_U > 0 ? MB_N_U : 1];  /* row k's chain entries, held apart from h (no aliasing) */
        if (!(row[k] > 0.0))
            return 1;
        row[k] = sqrt(row[k]);
        const double inverse = 1.0 / row[k];
        for (int a = 0; a < n; ++a)
            r[a] = row[chain[a]] *= inverse;
        for (int a = 0; a < n; ++a) {  /* the chain of chain[a] is chain[a + 1 ..] */
            double *target = h + chain[a] * MB_N_U;
            for (int b = a; b < n; ++b)
                target[chain[b]] -= r[a] * r[b];
        }
    }
    return 0;
}

/* Solve L^T x = b with L from mb_mass_factor; x overwrites b.  Zeros of b are skipped: a
 * constraint row is sparse, and only its entries' chains fill in. */
static void mb_mass_solve_upper(const double *l, double *b)
{
    for (int i = MB_N_U - 1; i >= 0; --i) {
        if (b[i] == 0.0)
            continue;
        const double *row = l + i * MB_N_U;
        b[i] /= row[i];
        for (int a = mb_chain_start[i]; a < mb_chain_start[i + 1]; ++a)
            b[mb_chain[a]] -= row[mb_chain[a]] * b[i];
    }
}

/* Solve L x = b with L from mb_mass_factor; x overwrites b. */
static void mb_mass_solve_lower(const double *l, double *b)
{
    for (int i = 0; i < MB_N_U; ++i) {
        const double *row = l + i * MB_N_U;
        double s = b[i];
        for (int a = mb_chain_start[i]; a < mb_chain_start[i + 1]; ++a)
            s -= row[mb_chain[a]] * b[mb_chain[a]];
        b[i] = s / row[i];
    }
}

/* Solve M x = L^T L x = b; x overwrites b. */
static void mb_mass_solve(const double *l, double *b)
{
    mb_mass_solve_upper(l, b);
    mb_mass_solve_lower(l, b);
}
""")

_DOT = """\
static double mb_dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; ++i)
        s += a[i] * b[i];
    return s;
}
"""

_ENABLED = """\
/* Whether constraint row i is enabled (enabled == NULL: every row is). */
static int mb_enabled(const double *enabled, int i)
{
    return enabled == NULL || enabled[i] != 0.0;
}
"""

_LEAST_NORM = Template("""\
/* x[S] -= M_S^T (M_S M_S^T)^-1 r for the row-major rows x cols matrix m, S = index[0..n_index)
 * and M_S its columns S: the least-norm change of x[S] with M dx = -r, over the enabled rows
 * only (a disabled row gets a unit row and column in the Gram matrix and a zero residual, so it
 * contributes nothing).  r is overwritten.  Returns 0, or 4 if the enabled part of M_S M_S^T
 * is not positive definite (M_S not of full row rank). */
static int mb_least_norm_correction(double *x, const double *m, int rows, int cols,
                                    const int *index, int n_index, double *r,
                                    const double *enabled)
{
    double g[$len_gram];
    for (int i = 0; i < rows; ++i) {
        if (!mb_enabled(enabled, i))
            r[i] = 0.0;
        for (int j = 0; j <= i; ++j) {
            double s = 0.0;
            if (mb_enabled(enabled, i) && mb_enabled(enabled, j))
                for (int k = 0; k < n_index; ++k)
                    s += m[i * cols + index[k]] * m[j * cols + index[k]];
            else if (i == j)
                s = 1.0;
            g[i * rows + j] = s;
        }
    }
    if (mb_cholesky(g, rows))
        return 4;
    mb_cholesky_solve(g, rows, r);
    for (int k = 0; k < n_index; ++k) {
        double s = 0.0;
        for (int i = 0; i < rows; ++i)
            if (mb_enabled(enabled, i))
                s += m[i * cols + index[k]] * r[i];
        x[index[k]] -= s;
    }
    return 0;
}
""")

_SERVO = Template("""\
/* Joint servos (see mb_sim.codegen.servo): servo[0] active rows of MB_SERVO_WIDTH values
 * {input, coordinate, speed, kp, kd, limit, t0, feed_forward, p0..p5, v0..v4, a0..a3}; each row's
 * effort clamp(ff + kp (p - q) + kd (v - u) [+ (M a)_j - (F_j - ff)], +-limit) replaces its input ff
 * in F (the bracket, the computed-torque feed-forward over the servoed speeds' reference
 * accelerations a, where the row asks for it). */
#define MB_SERVO_WIDTH $width
static double mb_polynomial(const double *c, int n, double s)
{
    double value = 0.0;
    for (int k = n - 1; k >= 0; --k)
        value = value * s + c[k];
    return value;
}

static void mb_servo(const double *q, const double *u, const double *inputs, double t,
                     const double *servo, double *out, double *applied)
{
    const int n = (int)servo[0];
    double a[MB_N_INPUTS > 0 ? MB_N_INPUTS : 1], effort[MB_N_INPUTS > 0 ? MB_N_INPUTS : 1];
    for (int r = 0; r < n; ++r) {
        const double *row = servo + 1 + r * MB_SERVO_WIDTH;
        a[r] = mb_polynomial(row + 19, 4, t - row[6]);
    }
    for (int r = 0; r < n; ++r) {
        const double *row = servo + 1 + r * MB_SERVO_WIDTH;
        const int k = (int)row[0], i = (int)row[1], j = (int)row[2];
        const double s = t - row[6];
        double e = inputs[k] + row[3] * (mb_polynomial(row + 8, 6, s) - q[i])
            + row[4] * (mb_polynomial(row + 14, 5, s) - u[j]);
        if (row[7] != 0.0) {
            e -= out[MB_OFFSET_FORCING + j] - inputs[k];
            for (int c = 0; c < n; ++c)
                e += out[MB_OFFSET_MASS_MATRIX + j * MB_N_U + (int)servo[1 + c * MB_SERVO_WIDTH + 2]] * a[c];
        }
        effort[r] = fmin(fmax(e, -row[5]), row[5]);
    }
    for (int r = 0; r < n; ++r) {  /* after every row read F: the feed-forward is F without servos */
        const double *row = servo + 1 + r * MB_SERVO_WIDTH;
        const int k = (int)row[0], j = (int)row[2];
        out[MB_OFFSET_FORCING + j] += effort[r] - inputs[k];
        if (applied != NULL)
            applied[k] = effort[r];
    }
}
""")

_FORWARD_DYNAMICS = Template("""\
/* q', u' and z' at (q, u, z, t); with constraints also the multipliers lam of
 * [M A^T; A 0][u'; lam] = [F; -c] over the enabled rows (disabled rows get lam = 0), so the
 * generalized constraint forces are -A^T lam (lam is untouched without constraints).  With a servo
 * table (NULL: none) the servos' efforts replace their joints' effort inputs in F, and each
 * input's applied effort goes into applied[MB_N_INPUTS] (unless NULL).  Returns 0, 1 if M is not
 * positive definite, 2 if A M^-1 A^T is not, 5 if a spring-damper is shorter than
 * MB_SPRING_MIN_LENGTH. */
static int mb_solve_dynamics($signature, double *qdot, double *udot, double *zdot,
                             double *lam, const double *enabled, const double *servo,
                             double *applied)
{
    double out[MB_N_OUT];
    double *l = out + MB_OFFSET_MASS_MATRIX;  /* factorized in place */
    mb_dynamics(q, u, z, inputs, params, t, out);
    if (applied != NULL)
        memcpy(applied, inputs, sizeof(double) * MB_N_INPUTS);
    if (servo != NULL && servo[0] > 0.0)
        mb_servo(q, u, inputs, t, servo, out, applied);
$springs    memcpy(qdot, out + MB_OFFSET_QDOT, sizeof(double) * MB_N_Q);
    memcpy(zdot, out + MB_OFFSET_ELECTRICAL_RATES, sizeof(double) * MB_N_Z);
    memcpy(udot, out + MB_OFFSET_FORCING, sizeof(double) * MB_N_U);
    if (mb_mass_factor(l))
        return 1;
    mb_mass_solve(l, udot);
$constrained    return 0;
}

int mb_forward_dynamics($signature, double *qdot, double *udot, double *zdot,
                        double *lam, const double *enabled)
{
    return mb_solve_dynamics(q, u, z, inputs, params, t, qdot, udot, zdot, lam, enabled, NULL, NULL);
}
""".replace("$signature", _SIGNATURE))

_CONSTRAINED = """\
    {   /* lam = S^-1 (A M^-1 F + c) over the enabled rows, u' = M^-1 F - M^-1 A^T lam. */
        const double *a = out + MB_OFFSET_CONSTRAINT_MATRIX;
        for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
            lam[i] = mb_dot(a + i * MB_N_U, udot, MB_N_U) + out[MB_OFFSET_ACCELERATION_BIAS + i];
        if (mb_schur_correction(l, a, lam, udot, enabled))
            return 2;
    }
"""

_SPRING_CHECK = """\
    for (int i = 0; i < MB_N_SPRINGS; ++i)  /* the direction of a zero-length spring is undefined */
        if (!(out[MB_OFFSET_SPRING_LENGTHS + i] > MB_SPRING_MIN_LENGTH))
            return 5;
"""

_SCHUR = Template("""\
/* With l from mb_mass_factor (M = L^T L) and the rows a_i of A (row-major, MB_N_CONSTRAINTS x
 * MB_N_U): x := S^-1 x for S = A M^-1 A^T = Z^T Z, Z = L^-T A^T, over the enabled rows (a disabled
 * row gets a unit row and column in S and x_i = 0), then v -= M^-1 A^T x = L^-1 (Z x) over the
 * enabled rows (skipped, not multiplied by zero: a disabled row may hold inf, and 0 * inf is
 * NaN).  Each column of Z is one half solve of a sparse row.  Returns 0, or 1 if the enabled part
 * of S is not positive definite. */
static int mb_schur_correction(const double *l, const double *a, double *x, double *v,
                               const double *enabled)
{
    double z[$len_cu], s[$len_cc], w[MB_N_U];
    for (int i = 0; i < MB_N_CONSTRAINTS; ++i) {  /* z_i = L^-T a_i */
        memcpy(z + i * MB_N_U, a + i * MB_N_U, sizeof(double) * MB_N_U);
        if (mb_enabled(enabled, i))
            mb_mass_solve_upper(l, z + i * MB_N_U);
        else
            x[i] = 0.0;
    }
    for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
        for (int j = 0; j <= i; ++j)
            s[i * MB_N_CONSTRAINTS + j] = mb_enabled(enabled, i) && mb_enabled(enabled, j)
                ? mb_dot(z + i * MB_N_U, z + j * MB_N_U, MB_N_U) : (double)(i == j);
    if (mb_cholesky(s, MB_N_CONSTRAINTS))
        return 1;
    mb_cholesky_solve(s, MB_N_CONSTRAINTS, x);
    memset(w, 0, sizeof(w));
    for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
        if (mb_enabled(enabled, i))
            for (int k = 0; k < MB_N_U; ++k)
                w[k] += x[i] * z[i * MB_N_U + k];
    mb_mass_solve_lower(l, w);
    for (int k = 0; k < MB_N_U; ++k)
        v[k] -= w[k];
    return 0;
}
""")

_FORCE_LAW = """\
/* User force laws of spring-dampers call back into the host: law(index, t, deltaL, deltaL_t,
 * stiffness, damping, force, active) -> scalar force.  Not called (zero force) when active is 0;
 * NaN while no callback is set, so the integrator stops with a non-finite state. */
typedef double (*mb_force_law_t)(int, double, double, double, double, double, double, double);
static mb_force_law_t mb_force_law_callback = NULL;

void mb_set_force_law(mb_force_law_t law)
{
    mb_force_law_callback = law;
}

static double mb_force_law(int spring, double t, double deltaL, double deltaL_t, double stiffness,
                           double damping, double force, double active)
{
    if (active == 0.0)
        return 0.0;
    if (mb_force_law_callback == NULL)
        return NAN;
    return mb_force_law_callback(spring, t, deltaL, deltaL_t, stiffness, damping, force, active);
}
"""

_QUATERNIONS = Template("""\
static const int mb_quaternion_starts[$n] = {$starts};

/* Scale each quaternion block of q to unit norm.  Returns 0, or 4 at a zero or non-finite one. */
static int mb_normalize_quaternions(double *q)
{
    for (int k = 0; k < $n; ++k) {
        double *e = q + mb_quaternion_starts[k];
        const double norm = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        if (!(norm > 0.0) || !isfinite(norm))
            return 4;
        for (int i = 0; i < 4; ++i)
            e[i] /= norm;
    }
    return 0;
}
""")

_COORDINATES = Template("""\
static const int mb_position_speeds[$n] = {$indices};

/* Gauss-Newton onto the enabled rows of Phi(q) = 0, in place, along the position speeds S: each
 * correction is dq = N(q) du with du the least-norm solution of A_hS du_S = -Phi (A_h the holonomic
 * rows of A = dPhi/dq N, N = dq'/du the kinematic map), so a unit quaternion moves in its three
 * rotation directions, never along its norm; quaternions are renormalized after each correction.
 * Leaves the mb_constraints blocks at the projected q in out[].  Returns 0, or 4 if A_hS A_hS^T is
 * singular or max |Phi| <= MB_PROJECTION_TOLERANCE is not reached in MB_PROJECTION_ITERATIONS
 * corrections. */
static int mb_project_coordinates(double *q, const double *u, const double *inputs,
                                  const double *params, double t, double *out,
                                  const double *enabled)
{
    for (int iteration = 0;; ++iteration) {
        double r[MB_N_HOLONOMIC], du[MB_N_U];
        int converged = 1;
        mb_constraints(q, u, mb_no_states, inputs, params, t, out);
        for (int i = 0; i < MB_N_HOLONOMIC; ++i) {
            r[i] = out[MB_OFFSET_PHI + i];
            converged &= !mb_enabled(enabled, i)
                         || fabs(r[i]) <= MB_PROJECTION_TOLERANCE;  /* false for NaN */
        }
        if (converged)
            return 0;
        memset(du, 0, sizeof(du));
        if (iteration == MB_PROJECTION_ITERATIONS
            || mb_least_norm_correction(du, out + MB_OFFSET_CONSTRAINT_MATRIX, MB_N_HOLONOMIC, MB_N_U,
                                        mb_position_speeds, $n, r, enabled))
            return 4;
        for (int i = 0; i < MB_N_Q; ++i)
            q[i] += mb_dot(out + MB_OFFSET_KINEMATIC_MAP + i * MB_N_U, du, MB_N_U);
$renormalize    }
}
""")

_SPEEDS = """\
/* Mass-weighted projection of the speeds onto the enabled rows of A u + b = 0, in place, with M,
 * A and b from out[]: the impulse du = -M^-1 A^T (A M^-1 A^T)^-1 (A u + b), the velocity change
 * smallest in the kinetic-energy norm (so an engaging constraint is an inelastic impact that
 * keeps the momentum it does not act on).  Returns 0, or 4 if M or A M^-1 A^T is not positive definite. */
static int mb_project_speeds(double *u, const double *out, const double *enabled)
{
    const double *a = out + MB_OFFSET_CONSTRAINT_MATRIX;
    double l[MB_N_U * MB_N_U], r[MB_N_CONSTRAINTS];
    memcpy(l, out + MB_OFFSET_MASS_MATRIX, sizeof(double) * MB_N_U * MB_N_U);
    if (mb_mass_factor(l))
        return 4;
    for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
        r[i] = mb_dot(a + i * MB_N_U, u, MB_N_U) + out[MB_OFFSET_CONSTRAINT_BIAS + i];
    return mb_schur_correction(l, a, r, u, enabled) ? 4 : 0;
}
"""

_PROJECT = Template("""\
$helpers
/* Project (q, u) in place onto the constraints: quaternions to unit norm, the dependent
 * coordinates onto Phi = 0, the dependent speeds onto A u + b = 0.  Returns 0, or 4 with q and
 * u partly corrected. */
static int mb_project_state(double *q, double *u, const double *inputs, const double *params,
                            double t, const double *enabled)
{
$body
}

/* mb_project_state, all or nothing: returns 0, or 4 leaving q and u unchanged. */
int mb_project(double *q, double *u, const double *inputs, const double *params, double t,
               const double *enabled)
{
    double x[$len_x];
    int status;
    memcpy(x, q, sizeof(double) * MB_N_Q);
    memcpy(x + MB_N_Q, u, sizeof(double) * MB_N_U);
    if ((status = mb_project_state(x, x + MB_N_Q, inputs, params, t, enabled)))
        return status;
    memcpy(q, x, sizeof(double) * MB_N_Q);
    memcpy(u, x + MB_N_Q, sizeof(double) * MB_N_U);
    return 0;
}
""")

_NO_PROJECTION = """\
/* Nothing to project: the model has no constraints and no quaternions. */
static int mb_project_state(double *q, double *u, const double *inputs, const double *params,
                            double t, const double *enabled)
{
    (void)q; (void)u; (void)inputs; (void)params; (void)t; (void)enabled;
    return 0;
}

int mb_project(double *q, double *u, const double *inputs, const double *params, double t,
               const double *enabled)
{
    return mb_project_state(q, u, inputs, params, t, enabled);
}
"""

_INTEGRATOR = Template("""\
/* Whether the n values of x are all finite (no NaN, no inf). */
static int mb_all_finite(const double *x, int n)
{
    for (int i = 0; i < n; ++i)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* Check and project the state x = [q; u; z] reached at the end of a step, at time t.  Returns
 * 0, 3 if it is not finite (checked first, so a diverging model reports 3 rather than a failing
 * projection, and again after the projection), or 4 if the projection fails. */
static int mb_finish_step(double *x, const double *inputs, const double *params, double t,
                          const double *enabled)
{
    int status;
    if (!mb_all_finite(x, MB_N_STATE))
        return 3;
    if ((status = mb_project_state(x, x + MB_N_Q, inputs, params, t, enabled)))
        return status;
    return mb_all_finite(x, MB_N_STATE) ? 0 : 3;
}

/* x' at a stage; 3 if x is not finite (reported as such, not as the factorization it breaks). */
static int mb_state_derivative(const double *x, const double *inputs, const double *params,
                               double t, double *xdot, const double *enabled, const double *servo)
{
    double lam[$len_c];
    if (!mb_all_finite(x, MB_N_STATE))
        return 3;
    return mb_solve_dynamics(x, x + MB_N_Q, x + MB_N_Q + MB_N_U, inputs, params, t, xdot,
                             xdot + MB_N_Q, xdot + MB_N_Q + MB_N_U, lam, enabled, servo, NULL);
}
$etd
/* n_steps steps of x = [q; u; z] from *t, inputs held, each followed by mb_finish_step: classic
 * RK4 for q and u; for the electrical states z, whose rates hold a stiff linear part lambda z
 * (-R/L of a motor), the exponential integrator ETDRK4 (Cox and Matthews 2002), which takes that
 * part exactly and reduces to classic RK4 where lambda = 0, so an L/R far below dt is stable
 * and accurate.  Returns 0 or the failing step's code (1, 2, 5 from mb_forward_dynamics, 3, 4),
 * leaving q, u, z and *t at the start of that step. */
static int mb_integrate(double *q, double *u, double *z, const double *inputs, const double *params,
                        double *t, double dt, int n_steps, const double *enabled, const double *servo)
{
    enum { N = MB_N_Q + MB_N_U };
    double x[$len_x], xs[$len_x], k1[$len_x], k2[$len_x], k3[$len_x], k4[$len_x];
    const double t0 = *t;
    int status = 0;
$etd_setup    memcpy(x, q, sizeof(double) * MB_N_Q);
    memcpy(x + MB_N_Q, u, sizeof(double) * MB_N_U);
    memcpy(x + N, z, sizeof(double) * MB_N_Z);
    for (int step = 0; step < n_steps; ++step) {
        const double ts = t0 + step * dt, te = t0 + (step + 1) * dt;
        if ((status = mb_state_derivative(x, inputs, params, ts, k1, enabled, servo)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + 0.5 * dt * k1[i];
$etd_stage2        if ((status = mb_state_derivative(xs, inputs, params, ts + 0.5 * dt, k2, enabled, servo)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + 0.5 * dt * k2[i];
$etd_stage3        if ((status = mb_state_derivative(xs, inputs, params, ts + 0.5 * dt, k3, enabled, servo)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + dt * k3[i];
$etd_stage4        if ((status = mb_state_derivative(xs, inputs, params, ts + dt, k4, enabled, servo)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + dt / 6.0 * (k1[i] + 2.0 * (k2[i] + k3[i]) + k4[i]);
$etd_final        if ((status = mb_finish_step(xs, inputs, params, te, enabled)))
            break;
        memcpy(x, xs, sizeof(double) * MB_N_STATE);
        *t = te;
    }
    memcpy(q, x, sizeof(double) * MB_N_Q);
    memcpy(u, x + MB_N_Q, sizeof(double) * MB_N_U);
    memcpy(z, x + N, sizeof(double) * MB_N_Z);
    return status;
}

int mb_rk4(double *q, double *u, double *z, const double *inputs, const double *params, double *t,
           double dt, int n_steps, const double *enabled)
{
    return mb_integrate(q, u, z, inputs, params, t, dt, n_steps, enabled, NULL);
}

/* Packed entry points for callers paying per foreign-call argument (ctypes: a call with one
 * argument costs about a third of one with seven).  a = {q, u, inputs, params, &t, out, qdot,
 * udot, lam, enabled, z, zdot, servo, applied}, prepared once by the caller; the forward dynamics
 * and RK4 apply the servo table (see mb_servo), the forward dynamics write the applied efforts. */
void mb_evaluate_packed(double *const *a)
{
    mb_evaluate(a[0], a[1], a[10], a[2], a[3], a[4][0], a[5]);
}

int mb_forward_dynamics_packed(double *const *a)
{
    return mb_solve_dynamics(a[0], a[1], a[10], a[2], a[3], a[4][0], a[6], a[7], a[11], a[8],
                             a[9], a[12], a[13]);
}

int mb_project_packed(double *const *a)
{
    return mb_project(a[0], a[1], a[2], a[3], a[4][0], a[9]);
}

int mb_rk4_packed(double *const *a, double dt, int n_steps)
{
    return mb_integrate(a[0], a[1], a[10], a[2], a[3], a[4], dt, n_steps, a[9], a[12]);
}
""")

#: ETDRK4's coefficients and stages for the electrical states (generated only where there are some).
_ETD = """\
/* phi_1, phi_2, phi_3 of the exponential integrator: phi_k(x) = sum_j x^j / (j + k)!, by the
 * series for |x| < 1 (the closed forms cancel there), else by the closed forms. */
static void mb_phi(double x, double *p1, double *p2, double *p3)
{
    if (fabs(x) < 1.0) {
        double term = 1.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;  /* term = x^j / j! */
        for (int j = 0; j < 24; ++j) {
            s1 += term / (j + 1);
            s2 += term / ((j + 1.0) * (j + 2.0));
            s3 += term / ((j + 1.0) * (j + 2.0) * (j + 3.0));
            term *= x / (j + 1);
        }
        *p1 = s1; *p2 = s2; *p3 = s3;
    } else {
        const double e = exp(x);
        *p1 = (e - 1.0) / x;
        *p2 = (e - 1.0 - x) / (x * x);
        *p3 = (e - 1.0 - x - 0.5 * x * x) / (x * x * x);
    }
}

/* ETDRK4 coefficients of one step dt for the decay rates lambda (Cox and Matthews' e, e2, Q, f1,
 * f2, f3 in their phi-function form). */
static void mb_etd_coefficients(const double *lambda, double dt, double *e, double *e2,
                                double *half, double *f1, double *f2, double *f3)
{
    for (int k = 0; k < MB_N_Z; ++k) {
        double p1, p2, p3, h1, h2, h3;
        mb_phi(lambda[k] * dt, &p1, &p2, &p3);
        mb_phi(0.5 * lambda[k] * dt, &h1, &h2, &h3);
        e[k] = exp(lambda[k] * dt);
        e2[k] = exp(0.5 * lambda[k] * dt);
        half[k] = 0.5 * dt * h1;
        f1[k] = dt * (p1 - 3.0 * p2 + 4.0 * p3);
        f2[k] = dt * (p2 - 2.0 * p3);
        f3[k] = dt * (4.0 * p3 - p2);
    }
}
"""

_ETD_SETUP = """\
    double lambda[MB_N_Z], e[MB_N_Z], e2[MB_N_Z], half[MB_N_Z], f1[MB_N_Z], f2[MB_N_Z], f3[MB_N_Z];
    double n1[MB_N_Z], n2[MB_N_Z], n3[MB_N_Z], a2[MB_N_Z];
    {   /* the decay rates depend on parameters only, fixed during the call */
        double out[MB_N_OUT];
        mb_decay(q, u, z, inputs, params, t0, out);
        memcpy(lambda, out + MB_OFFSET_ELECTRICAL_DECAY, sizeof(double) * MB_N_Z);
        mb_etd_coefficients(lambda, dt, e, e2, half, f1, f2, f3);
    }
"""
_ETD_STAGE2 = """\
        for (int k = 0; k < MB_N_Z; ++k) {  /* n: the rates without their linear part */
            n1[k] = k1[N + k] - lambda[k] * x[N + k];  /* xs holds the stage's state until replaced */
            xs[N + k] = a2[k] = e2[k] * x[N + k] + half[k] * n1[k];
        }
"""
_ETD_STAGE3 = """\
        for (int k = 0; k < MB_N_Z; ++k) {
            n2[k] = k2[N + k] - lambda[k] * xs[N + k];
            xs[N + k] = e2[k] * x[N + k] + half[k] * n2[k];
        }
"""
_ETD_STAGE4 = """\
        for (int k = 0; k < MB_N_Z; ++k) {
            n3[k] = k3[N + k] - lambda[k] * xs[N + k];
            xs[N + k] = e2[k] * a2[k] + half[k] * (2.0 * n3[k] - n1[k]);
        }
"""
_ETD_FINAL = """\
        for (int k = 0; k < MB_N_Z; ++k) {
            const double n4 = k4[N + k] - lambda[k] * xs[N + k];
            xs[N + k] = e[k] * x[N + k] + f1[k] * n1[k] + 2.0 * f2[k] * (n2[k] + n3[k]) + f3[k] * n4;
        }
"""


def _integrator(n_z: int, len_x: int, len_c: int) -> str:
    """mb_rk4 (with ETDRK4 for the electrical states if there are any) and the packed entry points."""
    parts = {"etd": _ETD, "etd_setup": _ETD_SETUP, "etd_stage2": _ETD_STAGE2, "etd_stage3": _ETD_STAGE3,
             "etd_stage4": _ETD_STAGE4, "etd_final": _ETD_FINAL}
    if not n_z:
        parts = dict.fromkeys(parts, "")
    return _INTEGRATOR.substitute(len_x=len_x, len_c=len_c, **parts)
