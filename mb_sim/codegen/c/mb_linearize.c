/* mb_sim runtime, standalone export only: the numerical linearization of the full state
 * derivative (see mb_runtime.h for the model's macros and tables).
 *
 * Included by an exported model after the other runtime files; not part of the models mb_sim
 * compiles for itself (its exact linearization in minimal coordinates is `mb-sim linearize`).
 */
#include "mb_runtime.h"

/* Relative step of the central differences: the cube root of the machine epsilon (6.1e-6),
 * which balances truncation (h^2) against rounding (eps / h); each coordinate's step is
 * MB_LINEARIZE_STEP * max(1, |x_j|). */
#define MB_LINEARIZE_STEP 6.055454452393343e-06

/* x' = [q'; u'; z'] of the state x = [q; u; z] at (inputs, t); the forward dynamics' status. */
static int mb_full_derivative(const double *x, const double *inputs, const double *params, double t,
                              const double *enabled, double *xdot)
{
    double lam[MB_LEN_CONSTRAINTS];
    return mb_forward_dynamics(x, x + MB_N_Q, x + MB_N_Q + MB_N_U, inputs, params, t, xdot,
                               xdot + MB_N_Q, xdot + MB_N_Q + MB_N_U, lam, enabled);
}

/* Column j of a row-major rows x cols matrix m: (plus - minus) / (2 h). */
static void mb_difference_column(double *m, int cols, int j, const double *plus, const double *minus,
                                 double h)
{
    for (int i = 0; i < MB_N_STATE; ++i)
        m[i * cols + j] = (plus[i] - minus[i]) / (2.0 * h);
}

/* A = dx'/dx (MB_N_STATE x MB_N_STATE) and B = dx'/d inputs (MB_N_STATE x MB_N_INPUTS), both
 * row-major, of the full state x = [q; u; z] at (q, u, z, inputs, t), by central differences
 * (second order; step MB_LINEARIZE_STEP * max(1, |value|), so about 1e-10 relative error).  The
 * coordinates are perturbed independently: with constraints or quaternions A describes the
 * full (not the minimal) state, the directions off the constraints included.  Returns 0, or the
 * first non-zero status of mb_forward_dynamics (A and B then incomplete). */
int mb_linearize_full(const double *q, const double *u, const double *z, const double *inputs,
                      const double *params, double t, const double *enabled, double *A, double *B)
{
    double x[MB_LEN_STATE], in[MB_N_INPUTS > 0 ? MB_N_INPUTS : 1];
    double plus[MB_LEN_STATE], minus[MB_LEN_STATE];
    int status;
    memcpy(x, q, sizeof(double) * MB_N_Q);
    memcpy(x + MB_N_Q, u, sizeof(double) * MB_N_U);
    memcpy(x + MB_N_Q + MB_N_U, z, sizeof(double) * MB_N_Z);
    memcpy(in, inputs, sizeof(double) * MB_N_INPUTS);
    for (int j = 0; j < MB_N_STATE; ++j) {
        const double saved = x[j], h = MB_LINEARIZE_STEP * fmax(1.0, fabs(saved));
        x[j] = saved + h;
        if ((status = mb_full_derivative(x, in, params, t, enabled, plus)))
            return status;
        x[j] = saved - h;
        if ((status = mb_full_derivative(x, in, params, t, enabled, minus)))
            return status;
        x[j] = saved;
        mb_difference_column(A, MB_N_STATE, j, plus, minus, h);
    }
    for (int j = 0; j < MB_N_INPUTS; ++j) {
        const double saved = in[j], h = MB_LINEARIZE_STEP * fmax(1.0, fabs(saved));
        in[j] = saved + h;
        if ((status = mb_full_derivative(x, in, params, t, enabled, plus)))
            return status;
        in[j] = saved - h;
        if ((status = mb_full_derivative(x, in, params, t, enabled, minus)))
            return status;
        in[j] = saved;
        mb_difference_column(B, MB_N_INPUTS, j, plus, minus, h);
    }
    return 0;
}
