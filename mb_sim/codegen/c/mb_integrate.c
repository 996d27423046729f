/* mb_sim runtime: the integrator (classic RK4 for q and u, ETDRK4 for the electrical states z)
 * and the packed entry points (see mb_runtime.h for the model's macros and tables).
 */
#include "mb_runtime.h"

/* Whether the n values of x are all finite (no NaN, no inf). */
static int mb_all_finite(const double *x, int n)
{
    for (int i = 0; i < n; ++i)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* Check and project the state x = [q; u; z] reached at the end of a step, at time t, then (a
 * model with a ground's stiction anchors: MB_HAS_STATE_UPDATES, generated mb_state_updates) move
 * the anchors as the step's end says (kept, dragged to the friction cone, or at the contact
 * point off the ground).  Returns 0, 3 if it is not finite (checked first, so a diverging model
 * reports 3 rather than a failing projection, and again after the projection), or 4 if the
 * projection fails. */
static int mb_finish_step(double *x, const double *inputs, const double *params, double t,
                          const double *enabled)
{
    int status;
    if (!mb_all_finite(x, MB_N_STATE))
        return 3;
    if ((status = mb_project_state(x, x + MB_N_Q, inputs, params, t, enabled)))
        return status;
#ifdef MB_HAS_STATE_UPDATES
    {
        double updated[MB_N_Z];
        mb_state_updates(x, x + MB_N_Q, x + MB_N_Q + MB_N_U, inputs, params, t, updated);
        memcpy(x + MB_N_Q + MB_N_U, updated, sizeof(double) * MB_N_Z);
    }
#endif
    return mb_all_finite(x, MB_N_STATE) ? 0 : 3;
}

/* x' at a stage (the stiff rows of mb_dissipation putting up the step's resistance rstar in
 * place of their damping and friction); 3 if x is not finite (reported as such, not as the
 * factorization it breaks). */
static int mb_state_derivative(const double *x, const double *inputs, const double *params,
                               double t, double *xdot, const double *enabled, const double *servo,
                               const int *stiff, const double *rstar)
{
    double lam[MB_LEN_CONSTRAINTS];
    if (!mb_all_finite(x, MB_N_STATE))
        return 3;
    return mb_solve_dynamics(x, x + MB_N_Q, x + MB_N_Q + MB_N_U, inputs, params, t, xdot,
                             xdot + MB_N_Q, xdot + MB_N_Q + MB_N_U, lam, enabled, servo, stiff,
                             rstar, NULL);
}

#if MB_HAS_ELECTRICAL_STATES
/* phi_1, phi_2, phi_3 of the exponential integrator: phi_k(x) = sum_j x^j / (j + k)!, by the
 * series for |x| < 1 (the closed forms cancel there), else by the closed forms. */
static void mb_phi(double x, double *p1, double *p2, double *p3)
{
    if (x == 0.0) {  /* no linear part (a stiction anchor): classic RK4's weights, without the series */
        *p1 = 1.0; *p2 = 0.5; *p3 = 1.0 / 6.0;
    } else if (fabs(x) < 1.0) {
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
#endif /* MB_HAS_ELECTRICAL_STATES */

/* n_steps steps of x = [q; u; z] from *t, inputs held, each followed by mb_finish_step: classic
 * RK4 for q and u; for the electrical states z, whose rates hold a stiff linear part lambda z
 * (-R/L of a motor), the exponential integrator ETDRK4 (Cox and Matthews 2002), which takes that
 * part exactly and reduces to classic RK4 where lambda = 0, so an L/R far below dt is stable
 * and accurate.  The joints of mb_dissipation stiff at a step (mb_first_stage) put up, through
 * it, the resistance a backward Euler step from its start gives in place of their damping and
 * friction: stable however stiff, however light the link.  Returns 0 or the failing step's code
 * (1, 2, 5 from mb_forward_dynamics, 3, 4),
 * leaving q, u, z and *t at the start of that step. */
static int mb_integrate_here(double *q, double *u, double *z, const double *inputs, const double *params,
                             double *t, double dt, int n_steps, const double *enabled, const double *servo);

/* mb_integrate_here on copies of the inputs, parameters and servo table in this frame: the steps
 * then read them beside their own work arrays, not from the caller's buffers, whose distance
 * from the stack varies from process to process (Solo12's step took 9.1 or 13-14 us by where
 * they fell: loads from them against the stores of the spilled temporaries). */
static int mb_integrate(double *q, double *u, double *z, const double *inputs, const double *params,
                        double *t, double dt, int n_steps, const double *enabled, const double *servo)
{
    double in[MB_N_INPUTS > 0 ? MB_N_INPUTS : 1] = {0.0}, p[MB_N_PARAMS > 0 ? MB_N_PARAMS : 1] = {0.0};
    double table[1 + (MB_N_INPUTS > 0 ? MB_N_INPUTS : 1) * MB_SERVO_WIDTH];
    memcpy(in, inputs, sizeof(double) * MB_N_INPUTS);
    memcpy(p, params, sizeof(double) * MB_N_PARAMS);
    if (servo != NULL)
        memcpy(table, servo, sizeof(double) * (1 + (size_t)servo[0] * MB_SERVO_WIDTH));
    return mb_integrate_here(q, u, z, in, p, t, dt, n_steps, enabled, servo != NULL ? table : NULL);
}

static int mb_integrate_here(double *q, double *u, double *z, const double *inputs, const double *params,
                             double *t, double dt, int n_steps, const double *enabled, const double *servo)
{
    enum { N = MB_N_Q + MB_N_U };
    int stiff[MB_LEN_DISSIPATION];  /* the rows of mb_dissipation stiff at a step */
    double rstar[MB_LEN_DISSIPATION];  /* and the resistances they put up through it */
    double x[MB_LEN_STATE], xs[MB_LEN_STATE], k1[MB_LEN_STATE], k2[MB_LEN_STATE], k3[MB_LEN_STATE],
        k4[MB_LEN_STATE];
    const double t0 = *t;
    int status = 0;
#if MB_HAS_ELECTRICAL_STATES
    double lambda[MB_N_Z], e[MB_N_Z], e2[MB_N_Z], half[MB_N_Z], f1[MB_N_Z], f2[MB_N_Z], f3[MB_N_Z];
    double n1[MB_N_Z], n2[MB_N_Z], n3[MB_N_Z], a2[MB_N_Z];
    {   /* the decay rates depend on parameters only, fixed during the call */
        double out[MB_N_OUT];
        mb_decay(q, u, z, inputs, params, t0, out);
        memcpy(lambda, out + MB_OFFSET_ELECTRICAL_DECAY, sizeof(double) * MB_N_Z);
        mb_etd_coefficients(lambda, dt, e, e2, half, f1, f2, f3);
    }
#endif
    memcpy(x, q, sizeof(double) * MB_N_Q);
    memcpy(x + MB_N_Q, u, sizeof(double) * MB_N_U);
    memcpy(x + N, z, sizeof(double) * MB_N_Z);
    for (int step = 0; step < n_steps; ++step) {
        const double ts = t0 + step * dt, te = t0 + (step + 1) * dt;
        if (!mb_all_finite(x, MB_N_STATE)) {
            status = 3;
            break;
        }
        if ((status = mb_first_stage(x, x + MB_N_Q, x + N, inputs, params, ts, dt, k1, k1 + MB_N_Q, k1 + N,
                                     enabled, servo, stiff, rstar)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + 0.5 * dt * k1[i];
#if MB_HAS_ELECTRICAL_STATES
        for (int k = 0; k < MB_N_Z; ++k) {  /* n: the rates without their linear part */
            n1[k] = k1[N + k] - lambda[k] * x[N + k];  /* xs holds the stage's state until replaced */
            xs[N + k] = a2[k] = e2[k] * x[N + k] + half[k] * n1[k];
        }
#endif
        if ((status = mb_state_derivative(xs, inputs, params, ts + 0.5 * dt, k2, enabled, servo, stiff, rstar)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + 0.5 * dt * k2[i];
#if MB_HAS_ELECTRICAL_STATES
        for (int k = 0; k < MB_N_Z; ++k) {
            n2[k] = k2[N + k] - lambda[k] * xs[N + k];
            xs[N + k] = e2[k] * x[N + k] + half[k] * n2[k];
        }
#endif
        if ((status = mb_state_derivative(xs, inputs, params, ts + 0.5 * dt, k3, enabled, servo, stiff, rstar)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + dt * k3[i];
#if MB_HAS_ELECTRICAL_STATES
        for (int k = 0; k < MB_N_Z; ++k) {
            n3[k] = k3[N + k] - lambda[k] * xs[N + k];
            xs[N + k] = e2[k] * a2[k] + half[k] * (2.0 * n3[k] - n1[k]);
        }
#endif
        if ((status = mb_state_derivative(xs, inputs, params, ts + dt, k4, enabled, servo, stiff, rstar)))
            break;
        for (int i = 0; i < N; ++i)
            xs[i] = x[i] + dt / 6.0 * (k1[i] + 2.0 * (k2[i] + k3[i]) + k4[i]);
#if MB_HAS_ELECTRICAL_STATES
        for (int k = 0; k < MB_N_Z; ++k) {
            const double n4 = k4[N + k] - lambda[k] * xs[N + k];
            xs[N + k] = e[k] * x[N + k] + f1[k] * n1[k] + 2.0 * f2[k] * (n2[k] + n3[k]) + f3[k] * n4;
        }
#endif
        if ((status = mb_finish_step(xs, inputs, params, te, enabled)))
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
                             a[9], a[12], NULL, NULL, a[13]);
}

int mb_project_packed(double *const *a)
{
    return mb_project(a[0], a[1], a[2], a[3], a[4][0], a[9]);
}

int mb_rk4_packed(double *const *a, double dt, int n_steps)
{
    return mb_integrate(a[0], a[1], a[10], a[2], a[3], a[4], dt, n_steps, a[9], a[12]);
}

/* Independent rollouts (mb_sim.sweep.rollout): each of n_states states x_k = [q; u; z] (rows of
 * states, MB_N_STATE each, advanced in place) takes n_steps RK4 steps of dt from t0 under its own
 * inputs (a row of inputs per state, or with inputs_per_step one per state and step) and
 * parameters (params' row k with params_per_state, else its one row), the servo table and enabled
 * flags shared.  status[k] is 0 or the failing step's code (the state then at that step's start),
 * times[k] the time reached; with record (n_states x n_steps x MB_N_STATE, or NULL) the state
 * after every step (zeros after a failure).  Touches nothing else: threads may run batches at once
 * (the caller releases the GIL).  Returns how many states failed. */
int mb_rollout(double *states, const double *inputs, int inputs_per_step, const double *params,
               int params_per_state, double t0, double dt, int n_steps, int n_states, const double *enabled,
               const double *servo, int *status, double *times, double *record)
{
    int failed = 0;
    for (int k = 0; k < n_states; ++k) {
        double *x = states + (size_t)k * MB_N_STATE;
        const double *p = params + (params_per_state ? (size_t)k * MB_N_PARAMS : 0);
        double t = t0;
        status[k] = 0;
        if (!inputs_per_step && record == NULL) {
            status[k] = mb_integrate(x, x + MB_N_Q, x + MB_N_Q + MB_N_U, inputs + (size_t)k * MB_N_INPUTS, p, &t,
                                     dt, n_steps, enabled, servo);
        } else {
            for (int s = 0; s < n_steps && status[k] == 0; ++s) {
                const double *in = inputs + (inputs_per_step ? ((size_t)k * n_steps + s) : (size_t)k) * MB_N_INPUTS;
                double ts = t0 + s * dt;  /* each step timed from t0, as one call times them */
                status[k] = mb_integrate(x, x + MB_N_Q, x + MB_N_Q + MB_N_U, in, p, &ts, dt, 1, enabled, servo);
                if (status[k] == 0) {
                    t = ts;
                    if (record != NULL)
                        memcpy(record + ((size_t)k * n_steps + s) * MB_N_STATE, x, sizeof(double) * MB_N_STATE);
                }
            }
        }
        times[k] = t;
        failed += status[k] != 0;
    }
    return failed;
}
