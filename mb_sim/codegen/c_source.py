"""Generate one self-contained C99 source file that evaluates and integrates a model.

Entry points (all ``q, u, inputs, params`` are ``const double *``, ``t`` a double):

* ``void mb_evaluate(q, u, inputs, params, t, double *out)``: every output, in the layout of
  :class:`~mb_sim.codegen.layout.OutputLayout` (documented in the file's header comment);
* ``void mb_dynamics(...)``: only the dynamics blocks of the same layout (own CSE, cheaper);
* ``int mb_forward_dynamics(q, u, inputs, params, t, double *qdot, double *udot)``: solves
  ``M u' = F`` (Cholesky) or, with constraints, ``[M A^T; A 0][u'; lam] = [F; -c]`` through the
  Schur complement ``A M^-1 A^T``; returns 0, or a code of ``FACTORIZATION_FAILURES``;
* ``int mb_rk4(double *q, double *u, inputs, params, double *t, double dt, int n_steps)``:
  ``n_steps`` classic RK4 steps with inputs held; on failure the state is that at the start of the
  failing step;
* ``mb_evaluate_packed(double *const *a)``, ``mb_forward_dynamics_packed(double *const *a)``:
  the same with one argument, ``a = {q, u, inputs, params, &t, out, qdot, udot}``;
* ``mb_n_q(), mb_n_u(), mb_n_inputs(), mb_n_params(), mb_n_constraints()`` and
  ``mb_output_offset/rows/cols(int block)`` so a loader can check the library matches.
"""
from __future__ import annotations

from string import Template

import numpy as np
import sympy
from sympy import Symbol
from sympy.printing.c import C99CodePrinter
from sympy.printing.precedence import PRECEDENCE

from mb_sim.codegen.layout import DYNAMICS_OUTPUTS, OutputLayout
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.program import ARGUMENTS, StraightLineProgram, straight_line_program
from mb_sim.symbolic.equations import OUTPUT_NAMES, EquationsOfMotion

__all__ = ["GENERATOR_VERSION", "generate_c_source"]

# Bump whenever the generated code changes for the same equations (invalidates cached builds).
GENERATOR_VERSION = "2"

_SIGNATURE = ("const double *q, const double *u, const double *inputs,\n"
              "    const double *params, double t")


def generate_c_source(eom: EquationsOfMotion, progress: Progress = None) -> str:
    """The C99 source of `eom`'s model (see the module docstring for its entry points)."""
    layout = OutputLayout.from_equations(eom)
    report(progress, f"generating C for {eom.name}...")
    evaluate = straight_line_program(eom, OUTPUT_NAMES, progress)
    dynamics = straight_line_program(eom, DYNAMICS_OUTPUTS, progress)
    return "\n".join([
        _header(eom, layout),
        _c_function("mb_evaluate", "Every output of the model into out[].", evaluate,
                    layout.indices(OUTPUT_NAMES)),
        _c_function("mb_dynamics", "Only the dynamics blocks (M, F, qdot, A, b, c) into out[].",
                    dynamics, layout.indices(DYNAMICS_OUTPUTS)),
        _solver(eom.n_q, eom.n_u, eom.n_constraints),
    ])


class _Printer(C99CodePrinter):
    """C99 printer that prints symbols through a fixed table and constants as literals."""

    def __init__(self, names: dict[Symbol, str]):
        super().__init__({"strict": True, "inline": True, "math_macros": {}})
        self._names = names

    def _print_Symbol(self, expr: Symbol) -> str:
        return self._names[expr]

    _print_Dummy = _print_Symbol

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
        "    (void)q; (void)u; (void)inputs; (void)params; (void)t;", *body, "}", ""])


def _header(eom: EquationsOfMotion, layout: OutputLayout) -> str:
    """Banner with the layout, includes, dimension macros and the introspection functions."""
    blocks = list(layout.blocks.values())
    table = "\n".join(f" *   {i:<5d}  {b.name:<19s} {b.offset:<7d} {b.shape[0]} x {b.shape[1]}"
                      for i, b in enumerate(blocks))
    offsets = "".join(f"#define MB_OFFSET_{b.name.upper()} {b.offset}\n" for b in blocks)
    return _HEADER.substitute(
        name=repr(eom.name).replace("*/", "*\\/"), version=GENERATOR_VERSION,
        sympy=sympy.__version__, table=table, offsets=offsets, n_q=eom.n_q, n_u=eom.n_u,
        n_inputs=len(eom.inputs), n_params=len(eom.parameters), n_c=eom.n_constraints,
        n_out=layout.size, n_blocks=len(blocks),
        offset_list=", ".join(str(b.offset) for b in blocks) + f", {layout.size}",
        rows=", ".join(str(b.shape[0]) for b in blocks),
        cols=", ".join(str(b.shape[1]) for b in blocks))


def _solver(n_q: int, n_u: int, n_c: int) -> str:
    """Cholesky helpers, mb_forward_dynamics (with the Schur complement if n_c > 0), mb_rk4."""
    lengths = {"len_uu": max(n_u * n_u, 1), "len_x": max(n_q + n_u, 1)}
    if n_c == 0:
        return _SOLVER.substitute(lengths, dot="", constrained="")
    return _SOLVER.substitute(lengths, dot=_DOT, constrained=_CONSTRAINED.substitute(
        len_cu=max(n_c * n_u, 1), len_cc=n_c * n_c))


_HEADER = Template("""\
/* Equations of motion of model $name, generated by mb_sim codegen $version (SymPy $sympy).
 * Do not edit: regenerate from the model instead.
 *
 * Arguments: q[MB_N_Q], u[MB_N_U], inputs[MB_N_INPUTS], params[MB_N_PARAMS], time t.
 * out[MB_N_OUT] holds these blocks, each flattened row-major (mb_dynamics writes only M, F,
 * qdot, A, b and c):
 *   block  name                offset  rows x cols
$table
 */
#include <math.h>
#include <string.h>

#define MB_N_Q $n_q
#define MB_N_U $n_u
#define MB_N_INPUTS $n_inputs
#define MB_N_PARAMS $n_params
#define MB_N_CONSTRAINTS $n_c
#define MB_N_OUT $n_out
#define MB_N_BLOCKS $n_blocks
$offsets
static const int mb_offsets[MB_N_BLOCKS + 1] = {$offset_list};
static const int mb_rows[MB_N_BLOCKS] = {$rows};
static const int mb_cols[MB_N_BLOCKS] = {$cols};

int mb_n_q(void) { return MB_N_Q; }
int mb_n_u(void) { return MB_N_U; }
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

_SOLVER = Template("""\
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
$dot
/* q' and u' at (q, u, t).  Returns 0, 1 if M is not positive definite, 2 if A M^-1 A^T is not. */
int mb_forward_dynamics($signature, double *qdot, double *udot)
{
    double out[MB_N_OUT];
    double l[$len_uu];
    mb_dynamics(q, u, inputs, params, t, out);
    memcpy(qdot, out + MB_OFFSET_QDOT, sizeof(double) * MB_N_Q);
    memcpy(l, out + MB_OFFSET_MASS_MATRIX, sizeof(double) * MB_N_U * MB_N_U);
    memcpy(udot, out + MB_OFFSET_FORCING, sizeof(double) * MB_N_U);
    if (mb_cholesky(l, MB_N_U))
        return 1;
    mb_cholesky_solve(l, MB_N_U, udot);
$constrained    return 0;
}

static int mb_state_derivative(const double *x, const double *inputs, const double *params,
                               double t, double *xdot)
{
    return mb_forward_dynamics(x, x + MB_N_Q, inputs, params, t, xdot, xdot + MB_N_Q);
}

/* n_steps classic RK4 steps of x = [q; u] from *t; inputs held.  Returns 0 or the failing
 * step's mb_forward_dynamics code, leaving q, u and *t at the start of that step. */
int mb_rk4(double *q, double *u, const double *inputs, const double *params, double *t,
           double dt, int n_steps)
{
    enum { N = MB_N_Q + MB_N_U };
    double x[$len_x], xs[$len_x], k1[$len_x], k2[$len_x], k3[$len_x], k4[$len_x];
    const double t0 = *t;
    int status = 0;
    memcpy(x, q, sizeof(double) * MB_N_Q);
    memcpy(x + MB_N_Q, u, sizeof(double) * MB_N_U);
    for (int step = 0; step < n_steps; ++step) {
        const double ts = t0 + step * dt;
        if ((status = mb_state_derivative(x, inputs, params, ts, k1)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + 0.5 * dt * k1[i];
        if ((status = mb_state_derivative(xs, inputs, params, ts + 0.5 * dt, k2)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + 0.5 * dt * k2[i];
        if ((status = mb_state_derivative(xs, inputs, params, ts + 0.5 * dt, k3)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + dt * k3[i];
        if ((status = mb_state_derivative(xs, inputs, params, ts + dt, k4)))
            break;
        for (int i = 0; i < N; ++i)
            x[i] += dt / 6.0 * (k1[i] + 2.0 * (k2[i] + k3[i]) + k4[i]);
        *t = t0 + (step + 1) * dt;
    }
    memcpy(q, x, sizeof(double) * MB_N_Q);
    memcpy(u, x + MB_N_Q, sizeof(double) * MB_N_U);
    return status;
}

/* Packed entry points for callers paying per foreign-call argument (ctypes: a call with one
 * argument costs about a third of one with seven).  a = {q, u, inputs, params, &t, out, qdot,
 * udot}, prepared once by the caller. */
void mb_evaluate_packed(double *const *a)
{
    mb_evaluate(a[0], a[1], a[2], a[3], a[4][0], a[5]);
}

int mb_forward_dynamics_packed(double *const *a)
{
    return mb_forward_dynamics(a[0], a[1], a[2], a[3], a[4][0], a[6], a[7]);
}
""".replace("$signature", _SIGNATURE))

_DOT = """
static double mb_dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; ++i)
        s += a[i] * b[i];
    return s;
}
"""

_CONSTRAINED = Template("""\
    {   /* Schur complement: Y = M^-1 A^T (stored transposed), S = A Y,
         * lam = S^-1 (A M^-1 F + c), u' = M^-1 F - Y lam. */
        const double *a = out + MB_OFFSET_CONSTRAINT_MATRIX;
        double y[$len_cu], s[$len_cc], lam[MB_N_CONSTRAINTS];
        for (int i = 0; i < MB_N_CONSTRAINTS; ++i) {
            memcpy(y + i * MB_N_U, a + i * MB_N_U, sizeof(double) * MB_N_U);
            mb_cholesky_solve(l, MB_N_U, y + i * MB_N_U);
            lam[i] = mb_dot(a + i * MB_N_U, udot, MB_N_U) + out[MB_OFFSET_ACCELERATION_BIAS + i];
        }
        for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
            for (int j = 0; j <= i; ++j)
                s[i * MB_N_CONSTRAINTS + j] = mb_dot(a + i * MB_N_U, y + j * MB_N_U, MB_N_U);
        if (mb_cholesky(s, MB_N_CONSTRAINTS))
            return 2;
        mb_cholesky_solve(s, MB_N_CONSTRAINTS, lam);
        for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
            for (int k = 0; k < MB_N_U; ++k)
                udot[k] -= lam[i] * y[i * MB_N_U + k];
    }
""")
