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
    int feed_forward = 0;
    for (int r = 0; r < n; ++r)
        feed_forward |= servo[1 + r * MB_SERVO_WIDTH + 7] != 0.0;
    for (int r = 0; r < n; ++r) {  /* the reference accelerations, where read */
        const double *row = servo + 1 + r * MB_SERVO_WIDTH;
        a[r] = feed_forward ? mb_polynomial(row + 19, 4, t - row[6]) : 0.0;
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
        effort[r] = mb_fmin(mb_fmax(e, -row[5]), row[5]);
    }
    for (int r = 0; r < n; ++r) {  /* after every row read F: the feed-forward is F without servos */
        const double *row = servo + 1 + r * MB_SERVO_WIDTH;
        const int k = (int)row[0], j = (int)row[2];
        out[MB_OFFSET_FORCING + j] += effort[r] - inputs[k];
        if (applied != NULL)
            applied[k] = effort[r];
    }
}

#if MB_HAS_DISSIPATION
/* The coefficients d, f, v_s of row k of mb_dissipation (see mb_sim.codegen.dissipation: speed,
 * then the parameter indices of d, f, v_s, -1 for zero); whether it has friction. */
static int mb_dissipation_row(int k, const double *params, double *d, double *f, double *v)
{
    const int *row = mb_dissipation + k * MB_DISSIPATION_WIDTH;
    *d = row[1] >= 0 ? params[row[1]] : 0.0;
    *f = row[2] >= 0 ? params[row[2]] : 0.0;
    *v = row[3] >= 0 ? params[row[3]] : 0.0;
    return *f != 0.0 && *v > 0.0;
}

/* Row k's resistance r = d w + f tanh(w / v_s) at speed w and its slope dr/dw. */
static void mb_resistance(int k, const double *params, double w, double *r, double *slope)
{
    double d, f, v;
    const int friction = mb_dissipation_row(k, params, &d, &f, &v);
    *r = d * w;
    *slope = d;
    if (friction) {
        const double th = tanh(w / v);
        *r += f * th;
        *slope += f / v * (1.0 - th * th);
    }
}

/* Row k's potential rho = d w^2 / 2 + f v_s log cosh(w / v_s) (rho' = r), without overflow. */
static double mb_resistance_potential(int k, const double *params, double w)
{
    double d, f, v;
    const int friction = mb_dissipation_row(k, params, &d, &f, &v);
    double rho = 0.5 * d * w * w;
    if (friction) {
        const double ax = fabs(w / v);
        rho += f * v * (ax + log1p(exp(-2.0 * ax)) - 0.69314718055994530942);
    }
    return rho;
}

/* In F (out), the rows of mb_dissipation flagged in stiff put up rstar in place of their
 * damping and friction (F holds -r(u) for them); stiff NULL: none. */
static void mb_replace_resistance(const double *u, const double *params, const int *stiff,
                                  const double *rstar, double *out)
{
    for (int k = 0; stiff != NULL && k < MB_N_DISSIPATION; ++k)
        if (stiff[k]) {
            double r, slope;
            mb_resistance(k, params, u[mb_dissipation[k * MB_DISSIPATION_WIDTH]], &r, &slope);
            out[MB_OFFSET_FORCING + mb_dissipation[k * MB_DISSIPATION_WIDTH]] += r - rstar[k];
        }
}
#endif

/* From out, the dynamics outputs with F as it is to be taken: q', u' and z', with constraints
 * also the multipliers lam of [M A^T; A 0][u'; lam] = [F; -c] over the enabled rows (disabled
 * rows get lam = 0), so the generalized constraint forces are -A^T lam (lam is untouched without
 * constraints); M is factorized in place.  Returns 0, 1 if M is not positive definite, 2 if
 * A M^-1 A^T is not finite (a row dependent on the others here gets lam = 0, see mb_cholesky),
 * 5 if a spring-damper is shorter than MB_SPRING_MIN_LENGTH.  factor: M's factor if the caller
 * has it (then copied in, not recomputed), else NULL. */
static int mb_solve_out(double *out, double *qdot, double *udot, double *zdot, double *lam,
                        const double *enabled, const double *factor)
{
    double *l = out + MB_OFFSET_MASS_MATRIX;
#if MB_HAS_SPRINGS
    for (int i = 0; i < MB_N_SPRINGS; ++i)  /* the direction of a zero-length spring is undefined */
        if (!(out[MB_OFFSET_SPRING_LENGTHS + i] > MB_SPRING_MIN_LENGTH))
            return 5;
#endif
    memcpy(qdot, out + MB_OFFSET_QDOT, sizeof(double) * MB_N_Q);
    memcpy(zdot, out + MB_OFFSET_ELECTRICAL_RATES, sizeof(double) * MB_N_Z);
    memcpy(udot, out + MB_OFFSET_FORCING, sizeof(double) * MB_N_U);
    if (factor != NULL)
        memcpy(l, factor, sizeof(double) * MB_N_U * MB_N_U);
    else if (mb_mass_factor(l))
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

/* q', u', z' and lam (mb_solve_out) at (q, u, z, t).  With a servo table (NULL: none) the servos'
 * efforts replace their joints' effort inputs in F, and each input's applied effort goes into
 * applied[MB_N_INPUTS] (unless NULL).  With stiff (NULL: none; see mb_first_stage) the flagged
 * rows of mb_dissipation put up rstar in place of their damping and friction, before the servos
 * read F. */
MB_INTERNAL int mb_solve_dynamics(const double *q, const double *u, const double *z, const double *inputs,
    const double *params, double t, double *qdot, double *udot, double *zdot,
                             double *lam, const double *enabled, const double *servo,
                             const int *stiff, const double *rstar, double *applied)
{
    double out[MB_N_OUT];
    mb_dynamics(q, u, z, inputs, params, t, out);
#if MB_HAS_DISSIPATION
    mb_replace_resistance(u, params, stiff, rstar, out);
#else
    (void)stiff; (void)rstar;
#endif
    if (applied != NULL)
        memcpy(applied, inputs, sizeof(double) * MB_N_INPUTS);
    if (servo != NULL && servo[0] > 0.0)
        mb_servo(q, u, inputs, t, servo, out, applied);
    return mb_solve_out(out, qdot, udot, zdot, lam, enabled, NULL);
}

#if MB_HAS_DISSIPATION
/* Phi(du) = du^T M du / 2 - h F^T du + h sum_stiff rho(u + du), what mb_resistance_estimate minimizes. */
static double mb_dissipation_objective(const double *out, const double *u, const double *du, double h,
                                       const double *params, const int *stiff)
{
    const double *m = out + MB_OFFSET_MASS_MATRIX, *f = out + MB_OFFSET_FORCING;
    double phi = 0.0;
    for (int i = 0; i < MB_N_U; ++i) {
        double s = 0.0;
        for (int j = 0; j < MB_N_U; ++j)
            s += m[i * MB_N_U + j] * du[j];
        phi += du[i] * (0.5 * s - h * f[i]);
    }
    for (int k = 0; k < MB_N_DISSIPATION; ++k)
        if (stiff[k]) {
            const int s = mb_dissipation[k * MB_DISSIPATION_WIDTH];
            phi += h * mb_resistance_potential(k, params, u[s] + du[s]);
        }
    return phi;
}

/* The resistance the stiff rows put up over the step h into rstar (see
 * mb_sim.codegen.dissipation): from out (M, A and F without the stiff rows' dissipation, servos
 * applied, at the step's start), the speeds' backward Euler step on the enabled velocity
 * constraints by Newton's method on the convex Phi with a backtracking line search.  Returns 0,
 * 1 if M + h K is not positive definite, 2 if its Schur complement is not finite. */
static int mb_resistance_estimate(const double *out, const double *u, const double *params, double h,
                                  const double *enabled, const int *stiff, double *rstar)
{
    double l[MB_LEN_U * MB_LEN_U], du[MB_LEN_U], g[MB_LEN_U], step[MB_LEN_U], trial[MB_LEN_U];
    const double *m = out + MB_OFFSET_MASS_MATRIX, *f = out + MB_OFFSET_FORCING;
    memset(du, 0, sizeof(double) * MB_N_U);
    for (int iteration = 0; iteration < MB_DISSIPATION_ITERATIONS; ++iteration) {
        double decrement = 0.0, largest_step = 0.0, largest_speed = 0.0, energy = 1e-300;
        memcpy(l, m, sizeof(double) * MB_N_U * MB_N_U);
        for (int i = 0; i < MB_N_U; ++i) {  /* g = M du - h F + h r(u + du), l = M + h K */
            double mu = 0.0;
            g[i] = -h * f[i];
            for (int j = 0; j < MB_N_U; ++j) {
                g[i] += m[i * MB_N_U + j] * du[j];
                mu += m[i * MB_N_U + j] * u[j];
            }
            energy += 0.5 * fabs(u[i] * mu) + h * fabs(f[i] * (u[i] + du[i]));  /* the size of Phi's terms */
        }
        for (int k = 0; k < MB_N_DISSIPATION; ++k)
            if (stiff[k]) {
                const int s = mb_dissipation[k * MB_DISSIPATION_WIDTH];
                double r, slope;
                mb_resistance(k, params, u[s] + du[s], &r, &slope);
                g[s] += h * r;
                l[s * MB_N_U + s] += h * slope;
                energy += h * fabs(r * (u[s] + du[s]));
            }
        for (int i = 0; i < MB_N_U; ++i)
            step[i] = -g[i];
        if (mb_mass_factor(l))
            return 1;
        mb_mass_solve(l, step);
#if MB_HAS_CONSTRAINTS
        {   /* on the constraints: A step = 0 */
            double lam[MB_N_CONSTRAINTS];
            const double *a = out + MB_OFFSET_CONSTRAINT_MATRIX;
            for (int i = 0; i < MB_N_CONSTRAINTS; ++i)
                lam[i] = mb_dot(a + i * MB_N_U, step, MB_N_U);
            if (mb_schur_correction(l, a, lam, step, enabled))
                return 2;
        }
#else
        (void)enabled;
#endif
        for (int i = 0; i < MB_N_U; ++i) {
            decrement -= g[i] * step[i];
            largest_step = fmax(largest_step, fabs(step[i]));
            largest_speed = fmax(largest_speed, fabs(u[i] + du[i]));
        }
        if (!(decrement > 0.0) || largest_step <= MB_DISSIPATION_TOLERANCE * (1.0 + largest_speed))
            break;  /* converged (Newton's steps shrink quadratically) */
        if (decrement <= MB_DISSIPATION_NEWTON_REGION * energy) {  /* that close, the full step */
            for (int i = 0; i < MB_N_U; ++i)
                du[i] += step[i];
        } else {   /* Armijo: halve the step until Phi decreases enough */
            const double start = mb_dissipation_objective(out, u, du, h, params, stiff);
            double fraction = 1.0;
            for (int k = 0; k < 40; ++k, fraction *= 0.5) {
                for (int i = 0; i < MB_N_U; ++i)
                    trial[i] = du[i] + fraction * step[i];
                if (mb_dissipation_objective(out, u, trial, h, params, stiff) <= start - 1e-4 * fraction * decrement)
                    break;
            }
            memcpy(du, trial, sizeof(double) * MB_N_U);
        }
    }
    for (int k = 0; k < MB_N_DISSIPATION; ++k) {
        const int s = mb_dissipation[k * MB_DISSIPATION_WIDTH];
        double slope;
        rstar[k] = 0.0;
        if (stiff[k])
            mb_resistance(k, params, u[s] + du[s], rstar + k, &slope);
    }
    return 0;
}

/* Flag in stiff the rows of mb_dissipation RK4 cannot take explicitly at this step: with I the
 * joint's effective inertia here, 1 / (M^-1)_ss (M's factor l), the resistance's slope at the
 * speed times h / I above MB_DISSIPATION_STIFF, or a friction whose slope at rest is and which
 * can stop the joint within the step (|w| < 2 f h / I).  Returns how many. */
static int mb_stiff_rows(const double *l, const double *u, const double *params, double h, int *stiff)
{
    int n = 0;
    for (int k = 0; k < MB_N_DISSIPATION; ++k) {
        const int s = mb_dissipation[k * MB_DISSIPATION_WIDTH];
        const double w = u[s];
        double e[MB_LEN_U], d, f, v, r, slope, inertia;
        const int friction = mb_dissipation_row(k, params, &d, &f, &v);
        f = fabs(f);
        memset(e, 0, sizeof(double) * MB_N_U);
        e[s] = 1.0;
        mb_mass_solve_upper(l, e);  /* L^-T e_s: (M^-1)_ss = |L^-T e_s|^2 */
        inertia = 0.0;
        for (int i = 0; i < MB_N_U; ++i)
            inertia += e[i] * e[i];
        inertia = 1.0 / inertia;
        mb_resistance(k, params, w, &r, &slope);
        stiff[k] = slope * h > MB_DISSIPATION_STIFF * inertia
                   || (friction && f * h > MB_DISSIPATION_STIFF * v * inertia && fabs(w) < 2.0 * f * h / inertia);
        n += stiff[k];
    }
    return n;
}
#endif /* MB_HAS_DISSIPATION */

/* The first RK4 stage of a step h from (q, u, z, t): q', u', z' (as mb_solve_dynamics), with the
 * rows of mb_dissipation stiff here flagged in stiff and putting up the resistance rstar a
 * backward Euler step gives (mb_resistance_estimate) in place of their damping and friction;
 * the step's other stages take the same stiff and rstar.  Returns as mb_solve_dynamics. */
MB_INTERNAL int mb_first_stage(const double *q, const double *u, const double *z, const double *inputs,
                               const double *params, double t, double h, double *qdot, double *udot,
                               double *zdot, const double *enabled, const double *servo, int *stiff,
                               double *rstar)
{
    double out[MB_N_OUT], lam[MB_LEN_CONSTRAINTS];
    const double *factor = NULL;  /* M's factor, when taken here: the solve reuses it */
    mb_dynamics(q, u, z, inputs, params, t, out);
#if MB_HAS_DISSIPATION
    double l[MB_LEN_U * MB_LEN_U];
    {
        memcpy(l, out + MB_OFFSET_MASS_MATRIX, sizeof(double) * MB_N_U * MB_N_U);
        if (mb_mass_factor(l))
            return 1;
        factor = l;
        for (int k = 0; k < MB_N_DISSIPATION; ++k)
            rstar[k] = 0.0;
        if (mb_stiff_rows(l, u, params, h, stiff) > 0) {
            double bare[MB_N_OUT];  /* F without the stiff rows' dissipation, servos applied */
            int status;
            memcpy(bare, out, sizeof bare);
            mb_replace_resistance(u, params, stiff, rstar, bare);
            if (servo != NULL && servo[0] > 0.0)
                mb_servo(q, u, inputs, t, servo, bare, NULL);
            if ((status = mb_resistance_estimate(bare, u, params, h, enabled, stiff, rstar)))
                return status;
        }
        mb_replace_resistance(u, params, stiff, rstar, out);
    }
#else
    (void)h; (void)stiff; (void)rstar;
#endif
    if (servo != NULL && servo[0] > 0.0)
        mb_servo(q, u, inputs, t, servo, out, NULL);
    return mb_solve_out(out, qdot, udot, zdot, lam, enabled, factor);
}

int mb_forward_dynamics(const double *q, const double *u, const double *z, const double *inputs,
    const double *params, double t, double *qdot, double *udot, double *zdot,
                        double *lam, const double *enabled)
{
    return mb_solve_dynamics(q, u, z, inputs, params, t, qdot, udot, zdot, lam, enabled, NULL, NULL, NULL, NULL);
}
