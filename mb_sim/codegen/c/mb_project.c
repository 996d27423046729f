/* mb_sim runtime: projection of the state onto the constraints (see mb_sim.codegen.projection
 * and mb_runtime.h for the model's macros and tables): unit quaternions, the dependent
 * coordinates onto Phi = 0, all speeds onto A u + b = 0 by the mass-weighted impulse.
 */
#include "mb_runtime.h"

#if MB_HAS_CONSTRAINTS
/* Zero electrical states, for mb_constraints (no constraint depends on them). */
static const double mb_no_states[MB_N_Z > 0 ? MB_N_Z : 1];
#endif

#if MB_HAS_QUATERNIONS
/* Scale each quaternion block of q to unit norm.  Returns 0, or 4 at a zero or non-finite one. */
static int mb_normalize_quaternions(double *q)
{
    for (int k = 0; k < MB_N_QUATERNIONS; ++k) {
        double *e = q + mb_quaternion_starts[k];
        const double norm = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        if (!(norm > 0.0) || !isfinite(norm))
            return 4;
        for (int i = 0; i < 4; ++i)
            e[i] /= norm;
    }
    return 0;
}
#endif /* MB_HAS_QUATERNIONS */

#if MB_HAS_HOLONOMIC
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
                                        mb_position_speeds, MB_N_POSITION_SPEEDS, r, enabled))
            return 4;
        for (int i = 0; i < MB_N_Q; ++i)
            q[i] += mb_dot(out + MB_OFFSET_KINEMATIC_MAP + i * MB_N_U, du, MB_N_U);
#if MB_HAS_QUATERNIONS
        if (mb_normalize_quaternions(q))
            return 4;
#endif
    }
}
#endif /* MB_HAS_HOLONOMIC */

#if MB_HAS_CONSTRAINTS
/* Mass-weighted projection of the speeds onto the enabled rows of A u + b = 0, in place, with M,
 * A and b from out[]: the impulse du = -M^-1 A^T (A M^-1 A^T)^-1 (A u + b), the velocity change
 * smallest in the kinetic-energy norm (so an engaging constraint is an inelastic impact that
 * keeps the momentum it does not act on).  Returns 0, or 4 if M is not positive definite or
 * A M^-1 A^T not finite (rows dependent on the others here are left to them, see mb_cholesky). */
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
#endif /* MB_HAS_CONSTRAINTS */

#if MB_HAS_PROJECTION
/* Project (q, u) in place onto the constraints: quaternions to unit norm, the dependent
 * coordinates onto Phi = 0, the dependent speeds onto A u + b = 0.  Returns 0, or 4 with q and
 * u partly corrected. */
MB_INTERNAL int mb_project_state(double *q, double *u, const double *inputs, const double *params,
                                 double t, const double *enabled)
{
#if MB_HAS_CONSTRAINTS
    double out[MB_N_OUT];
#endif
    (void)q; (void)u; (void)inputs; (void)params; (void)t; (void)enabled;
#if MB_HAS_QUATERNIONS
    if (mb_normalize_quaternions(q))
        return 4;
#endif
#if MB_HAS_HOLONOMIC
    if (mb_project_coordinates(q, u, inputs, params, t, out, enabled))
        return 4;
#elif MB_HAS_CONSTRAINTS
    mb_constraints(q, u, mb_no_states, inputs, params, t, out);
#endif
#if MB_HAS_CONSTRAINTS
    return mb_project_speeds(u, out, enabled);
#else
    return 0;
#endif
}

/* mb_project_state, all or nothing: returns 0, or 4 leaving q and u unchanged. */
int mb_project(double *q, double *u, const double *inputs, const double *params, double t,
               const double *enabled)
{
    double x[MB_LEN_STATE];
    int status;
    memcpy(x, q, sizeof(double) * MB_N_Q);
    memcpy(x + MB_N_Q, u, sizeof(double) * MB_N_U);
    if ((status = mb_project_state(x, x + MB_N_Q, inputs, params, t, enabled)))
        return status;
    memcpy(q, x, sizeof(double) * MB_N_Q);
    memcpy(u, x + MB_N_Q, sizeof(double) * MB_N_U);
    return 0;
}
#else
/* Nothing to project: the model has no constraints and no quaternions. */
MB_INTERNAL int mb_project_state(double *q, double *u, const double *inputs, const double *params,
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
#endif /* MB_HAS_PROJECTION */
