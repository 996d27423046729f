/* mb_sim's hand-written C runtime: the contract between a generated model and the runtime files.
 *
 * A generated model is one translation unit: it defines the macros and tables below, includes
 * this header, defines its straight-line functions (mb_dynamics, mb_other_outputs, and where the
 * model has them mb_decay and mb_constraints), then includes the runtime files in this order:
 *
 *   mb_linalg.c     tree-sparse L^T L factorization of M, dense Cholesky, Schur complement,
 *                   least-norm correction;
 *   mb_dynamics.c   introspection (mb_n_*, mb_output_*), user force laws, mb_evaluate, the joint
 *                   servos, forward dynamics;
 *   mb_project.c    projection onto the constraints;
 *   mb_integrate.c  RK4 (ETDRK4 for the electrical states) and the packed entry points;
 *   mb_linearize.c  (standalone export only: mb-sim export-c) the numerical linearization.
 *
 * Macros the model defines (all integers unless noted):
 *   MB_N_Q, MB_N_U, MB_N_Z, MB_N_STATE (= MB_N_Q + MB_N_U + MB_N_Z), MB_N_INPUTS, MB_N_PARAMS,
 *   MB_N_CONSTRAINTS, MB_N_HOLONOMIC, MB_N_SPRINGS, MB_SPRING_MIN_LENGTH (double), MB_N_OUT,
 *   MB_N_BLOCKS, MB_PROJECTION_TOLERANCE (double), MB_PROJECTION_ITERATIONS,
 *   MB_DEPENDENT_PIVOT (double: a constraint row whose Cholesky pivot is at most this fraction of its
 *   diagonal entry is dependent on the rows before it there), MB_SERVO_WIDTH,
 *   MB_N_DISSIPATION, MB_DISSIPATION_WIDTH, MB_DISSIPATION_ITERATIONS, MB_DISSIPATION_TOLERANCE,
 *   MB_DISSIPATION_STIFF, MB_DISSIPATION_NEWTON_REGION, the table mb_dissipation (the joints with damping or friction),
 *   MB_N_QUATERNIONS, MB_N_POSITION_SPEEDS, MB_LEN_CHAIN (length of mb_chain, at least 1),
 *   MB_OFFSET_<BLOCK> for every output block (MB_OFFSET_MASS_MATRIX, MB_OFFSET_FORCING, ...);
 *   feature flags, 0 or 1: MB_HAS_CONSTRAINTS, MB_HAS_HOLONOMIC, MB_HAS_ELECTRICAL_STATES,
 *   MB_HAS_SPRINGS, MB_HAS_FORCE_LAW, MB_HAS_QUATERNIONS; MB_UNROLLED_MASS where the model prints
 *   mb_mass_factor and mb_mass_solve itself, unrolled for its tree (mb_sim.codegen.mass_factor).
 * Tables it defines (static const int, before including the runtime files):
 *   mb_offsets[MB_N_BLOCKS + 1], mb_rows[MB_N_BLOCKS], mb_cols[MB_N_BLOCKS];
 *   mb_chain_start[MB_N_U + 1], mb_chain[MB_LEN_CHAIN]: the tree of M's sparsity, speed k's
 *   chain of parents is mb_chain[mb_chain_start[k] .. mb_chain_start[k + 1]);
 *   mb_quaternion_starts[MB_N_QUATERNIONS] if MB_HAS_QUATERNIONS;
 *   mb_position_speeds[MB_N_POSITION_SPEEDS] if MB_HAS_HOLONOMIC.
 *
 * MB_SEPARATE_COMPILATION (defined by the warning check that compiles each runtime file on its
 * own, with a test header defining the macros): the runtime's internal functions get external
 * linkage and the tables are declared extern, so each file is a complete translation unit.
 * Without it (a generated model) they are static, and the compiler sees the whole model at once.
 */
#ifndef MB_RUNTIME_H
#define MB_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#ifndef MB_N_Q
#error "mb_runtime.h: define the model's macros (MB_N_Q, ...) before including it"
#endif

#define MB_LEN_STATE (MB_N_STATE > 0 ? MB_N_STATE : 1)
#define MB_LEN_U (MB_N_U > 0 ? MB_N_U : 1)
#define MB_LEN_DISSIPATION (MB_N_DISSIPATION > 0 ? MB_N_DISSIPATION : 1)
#define MB_LEN_CONSTRAINTS (MB_N_CONSTRAINTS > 0 ? MB_N_CONSTRAINTS : 1)
#define MB_HAS_PROJECTION (MB_HAS_QUATERNIONS || MB_HAS_CONSTRAINTS)

/* A part of a long generated function (mb_sim.codegen.parts): optimized on its own, never inlined
 * back into the function that calls the parts in order; linked across translation units (a large
 * function's parts are compiled side by side: mb_sim.codegen.units), not exported from the library. */
#if defined(__GNUC__)
#define MB_PART __attribute__((noinline, visibility("hidden")))
#else
#define MB_PART
#endif

#ifdef MB_SEPARATE_COMPILATION
#define MB_INTERNAL
extern const int mb_offsets[], mb_rows[], mb_cols[], mb_chain_start[], mb_chain[];
#if MB_HAS_QUATERNIONS
extern const int mb_quaternion_starts[];
#endif
#if MB_HAS_HOLONOMIC
extern const int mb_position_speeds[];
#endif
#if MB_HAS_DISSIPATION
extern const int mb_dissipation[];
#endif
#else
#define MB_INTERNAL static
#endif

/* The generated straight-line functions: outputs of the model into out[MB_N_OUT]. */
#define MB_ARGUMENTS const double *q, const double *u, const double *z, const double *inputs, \
    const double *params, double t
void mb_dynamics(MB_ARGUMENTS, double *out);
void mb_other_outputs(MB_ARGUMENTS, double *out);
#if MB_HAS_ELECTRICAL_STATES
void mb_decay(MB_ARGUMENTS, double *out);
#endif
#if MB_HAS_CONSTRAINTS
void mb_constraints(MB_ARGUMENTS, double *out);
#endif

/* x^p for a parameter p (a contact law's exponent): exactly x and x * x, without a library call,
 * for the usual p = 1 and 2 (what pow gives there, correctly rounded). */
static inline double mb_pow(double x, double p)
{
    return p == 1.0 ? x : p == 2.0 ? x * x : pow(x, p);
}

/* fmax and fmin, inline (without -ffinite-math-only they are library calls): the larger (smaller)
 * of a and b, the other where one is NaN. */
static inline double mb_fmax(double a, double b)
{
    return a > b || b != b ? a : b;
}

static inline double mb_fmin(double a, double b)
{
    return a < b || b != b ? a : b;
}

/* Public entry points (see mb_sim/codegen/c_source.py for their documentation). */
int mb_n_q(void);
int mb_n_u(void);
int mb_n_z(void);
int mb_n_inputs(void);
int mb_n_params(void);
int mb_n_constraints(void);
int mb_output_offset(int which);
int mb_output_rows(int which);
int mb_output_cols(int which);
void mb_evaluate(MB_ARGUMENTS, double *out);
int mb_forward_dynamics(MB_ARGUMENTS, double *qdot, double *udot, double *zdot, double *lam,
                        const double *enabled);
int mb_project(double *q, double *u, const double *inputs, const double *params, double t,
               const double *enabled);
int mb_rk4(double *q, double *u, double *z, const double *inputs, const double *params, double *t,
           double dt, int n_steps, const double *enabled);
void mb_evaluate_packed(double *const *a);
int mb_forward_dynamics_packed(double *const *a);
int mb_project_packed(double *const *a);
int mb_rk4_packed(double *const *a, double dt, int n_steps);
int mb_rollout(double *states, const double *inputs, int inputs_per_step, const double *params,
               int params_per_state, double t0, double dt, int n_steps, int n_states, const double *enabled,
               const double *servo, int *status, double *times, double *record);
/* Only in a standalone export (mb_linearize.c): */
int mb_linearize_full(const double *q, const double *u, const double *z, const double *inputs,
                      const double *params, double t, const double *enabled, double *A, double *B);

#if MB_HAS_FORCE_LAW
/* User force laws of spring-dampers: law(index, t, deltaL, deltaL_t, stiffness, damping, force,
 * active) -> scalar force (mb_dynamics.c). */
typedef double (*mb_force_law_t)(int, double, double, double, double, double, double, double);
void mb_set_force_law(mb_force_law_t law);
MB_INTERNAL double mb_force_law(int spring, double t, double deltaL, double deltaL_t,
                                double stiffness, double damping, double force, double active);
#endif

#ifndef MB_OUTPUTS_ONLY  /* (the outputs' own translation unit: mb_sim.codegen.units) */
/* mb_linalg.c */
MB_INTERNAL int mb_mass_factor(double *h);
#if !defined(MB_UNROLLED_MASS) || MB_HAS_CONSTRAINTS || MB_HAS_DISSIPATION  /* else unused */
MB_INTERNAL void mb_mass_solve_upper(const double *l, double *b);
#endif
#if !defined(MB_UNROLLED_MASS) || MB_HAS_CONSTRAINTS
MB_INTERNAL void mb_mass_solve_lower(const double *l, double *b);
#endif
MB_INTERNAL void mb_mass_solve(const double *l, double *b);
#if MB_HAS_CONSTRAINTS
MB_INTERNAL int mb_cholesky(double *a, int n, double *b);
MB_INTERNAL void mb_cholesky_solve(const double *l, int n, double *b);
MB_INTERNAL double mb_dot(const double *a, const double *b, int n);
MB_INTERNAL int mb_enabled(const double *enabled, int i);
MB_INTERNAL int mb_schur_correction(const double *l, const double *a, double *x, double *v,
                                    const double *enabled);
#endif
#if MB_HAS_HOLONOMIC
MB_INTERNAL int mb_least_norm_correction(double *x, const double *m, int rows, int cols,
                                         const int *index, int n_index, double *r,
                                         const double *enabled);
#endif

/* mb_dynamics.c */
MB_INTERNAL int mb_solve_dynamics(MB_ARGUMENTS, double *qdot, double *udot, double *zdot,
                                  double *lam, const double *enabled, const double *servo,
                                  const int *stiff, const double *rstar, double *applied);
MB_INTERNAL int mb_first_stage(MB_ARGUMENTS, double h, double *qdot, double *udot, double *zdot,
                               const double *enabled, const double *servo, int *stiff, double *rstar);

/* mb_project.c */
MB_INTERNAL int mb_project_state(double *q, double *u, const double *inputs, const double *params,
                                 double t, const double *enabled);

#endif /* MB_OUTPUTS_ONLY */

#endif /* MB_RUNTIME_H */
