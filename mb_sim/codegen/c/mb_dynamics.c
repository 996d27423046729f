/* mb_sim runtime: introspection, user force laws, mb_evaluate, the joint servos and the forward
 * dynamics (see mb_runtime.h for the model's macros and tables).
 */
#include "mb_runtime.h"

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

#if MB_HAS_FORCE_LAW
/* User force laws of spring-dampers call back into the host: law(index, t, deltaL, deltaL_t,
 * stiffness, damping, force, active) -> scalar force.  Not called (zero force) when active is 0;
 * NaN while no callback is set, so the integrator stops with a non-finite state. */
static mb_force_law_t mb_force_law_callback = NULL;

void mb_set_force_law(mb_force_law_t law)
{
    mb_force_law_callback = law;
}

MB_INTERNAL double mb_force_law(int spring, double t, double deltaL, double deltaL_t,
                                double stiffness, double damping, double force, double active)
{
    if (active == 0.0)
        return 0.0;
    if (mb_force_law_callback == NULL)
        return NAN;
    return mb_force_law_callback(spring, t, deltaL, deltaL_t, stiffness, damping, force, active);
}
#endif /* MB_HAS_FORCE_LAW */

/* Every output of the model into out[] (the dynamics blocks are compiled once, in mb_dynamics). */
void mb_evaluate(const double *q, const double *u, const double *z, const double *inputs,
    const double *params, double t, double *out)
{
    mb_dynamics(q, u, z, inputs, params, t, out);
    mb_other_outputs(q, u, z, inputs, params, t, out);
}

/* Joint servos (see mb_sim.codegen.servo): servo[0] active rows of MB_SERVO_WIDTH values
 * {input, coordinate, speed, kp, kd, limit, t0, feed_forward, p0..p5, v0..v4, a0..a3}; each row's
 * effort clamp(ff + kp (p - q) + kd (v - u) [+ (M a)_j - (F_j - ff)], +-limit) replaces its input ff
 * in F (the bracket, the computed-torque feed-forward over the servoed speeds' reference
 * accelerations a, where the row asks for it). */
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

/* q', u' and z' at (q, u, z, t); with constraints also the multipliers lam of
 * [M A^T; A 0][u'; lam] = [F; -c] over the enabled rows (disabled rows get lam = 0), so the
 * generalized constraint forces are -A^T lam (lam is untouched without constraints).  With a servo
 * table (NULL: none) the servos' efforts replace their joints' effort inputs in F, and each
 * input's applied effort goes into applied[MB_N_INPUTS] (unless NULL).  Returns 0, 1 if M is not
 * positive definite, 2 if A M^-1 A^T is not finite (a row dependent on
 * the others here gets lam = 0, see mb_cholesky), 5 if a spring-damper is shorter than
 * MB_SPRING_MIN_LENGTH. */
MB_INTERNAL int mb_solve_dynamics(const double *q, const double *u, const double *z, const double *inputs,
    const double *params, double t, double *qdot, double *udot, double *zdot,
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
#if MB_HAS_SPRINGS
    for (int i = 0; i < MB_N_SPRINGS; ++i)  /* the direction of a zero-length spring is undefined */
        if (!(out[MB_OFFSET_SPRING_LENGTHS + i] > MB_SPRING_MIN_LENGTH))
            return 5;
#endif
    memcpy(qdot, out + MB_OFFSET_QDOT, sizeof(double) * MB_N_Q);
    memcpy(zdot, out + MB_OFFSET_ELECTRICAL_RATES, sizeof(double) * MB_N_Z);
    memcpy(udot, out + MB_OFFSET_FORCING, sizeof(double) * MB_N_U);
    if (mb_mass_factor(l))
        return 1;
    mb_mass_solve(l, udot);
#if MB_HAS_CONSTRAINTS
    {   /* lam = S^-1 (A M^-1 F + c) over the enabled rows, u' = M^-1 F - M^-1 A^T lam. */
        const double *a = out + MB_OFFSET_CONSTRAINT_MATRIX;
        for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
            lam[i] = mb_dot(a + i * MB_N_U, udot, MB_N_U) + out[MB_OFFSET_ACCELERATION_BIAS + i];
        if (mb_schur_correction(l, a, lam, udot, enabled))
            return 2;
    }
#else
    (void)lam; (void)enabled;
#endif
    return 0;
}

int mb_forward_dynamics(const double *q, const double *u, const double *z, const double *inputs,
    const double *params, double t, double *qdot, double *udot, double *zdot,
                        double *lam, const double *enabled)
{
    return mb_solve_dynamics(q, u, z, inputs, params, t, qdot, udot, zdot, lam, enabled, NULL, NULL);
}
