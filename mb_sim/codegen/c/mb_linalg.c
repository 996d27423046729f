/* mb_sim runtime: linear algebra (see mb_runtime.h for the model's macros and tables).
 *
 * The tree-sparse factorization M = L^T L of the mass matrix and its solves; with constraints also
 * the dense Cholesky factorization of their small matrices, the Schur complement correction and,
 * with holonomic constraints, the least-norm correction the projection uses.
 */
#include "mb_runtime.h"

#ifndef MB_UNROLLED_MASS  /* else the generated model prints both unrolled (mb_sim.codegen.mass_factor) */
/* In-place factorization M = L^T L of the row-major MB_N_U x MB_N_U mass matrix along the chains,
 * from the last speed up, so there is no fill-in (Featherstone, RBDA, table 6.3, with a square
 * root: the cost is the sum over speeds of their depth squared).  L is left in the lower triangle
 * (only the chain entries); returns 0, or 1 at a non-positive pivot. */
MB_INTERNAL int mb_mass_factor(double *h)
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
#endif

#if !defined(MB_UNROLLED_MASS) || MB_HAS_CONSTRAINTS || MB_HAS_DISSIPATION
/* Solve L^T x = b with L from mb_mass_factor; x overwrites b.  Zeros of b are skipped: a
 * constraint row is sparse, and only its entries' chains fill in. */
MB_INTERNAL void mb_mass_solve_upper(const double *l, double *b)
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

#endif

#if !defined(MB_UNROLLED_MASS) || MB_HAS_CONSTRAINTS
/* Solve L x = b with L from mb_mass_factor; x overwrites b. */
MB_INTERNAL void mb_mass_solve_lower(const double *l, double *b)
{
    for (int i = 0; i < MB_N_U; ++i) {
        const double *row = l + i * MB_N_U;
        double s = b[i];
        for (int a = mb_chain_start[i]; a < mb_chain_start[i + 1]; ++a)
            s -= row[mb_chain[a]] * b[mb_chain[a]];
        b[i] = s / row[i];
    }
}

#endif

#ifndef MB_UNROLLED_MASS
/* Solve M x = L^T L x = b; x overwrites b. */
MB_INTERNAL void mb_mass_solve(const double *l, double *b)
{
    mb_mass_solve_upper(l, b);
    mb_mass_solve_lower(l, b);
}
#endif

#if MB_HAS_CONSTRAINTS
/* In-place Cholesky factorization a = L L^T of the row-major n x n Gram matrix a of constraint
 * rows (lower triangle read and overwritten), revealing its rank: a row whose pivot is at most
 * MB_DEPENDENT_PIVOT times its diagonal entry is a linear combination of the rows before it at this
 * configuration (a redundant constraint row: two wheels on one axle, a loop over-determined here),
 * and so is a row whose diagonal entry is at most MB_DEPENDENT_PIVOT times the largest (a row
 * vanishing here, as a second-order condition does on its solution set: left alone it would be
 * taken first and push the rows it is parallel to out).
 * Its column of L is set to the unit vector and b[j] to 0, so the solve gives it a zero multiplier
 * and the rows it depends on carry its share: which rows are independent is judged at every call,
 * where the robot is, never once for all configurations.  A dependent row's residual is not lost:
 * the projection checks every enabled row.  Returns 0, or 1 at a non-finite pivot. */
MB_INTERNAL int mb_cholesky(double *a, int n, double *b)
{
    double largest = 0.0;
    for (int j = 0; j < n; ++j)
        largest = fmax(largest, a[j * n + j]);
    for (int j = 0; j < n; ++j) {
        double d = a[j * n + j];
        const double diagonal = d;
        for (int k = 0; k < j; ++k)
            d -= a[j * n + k] * a[j * n + k];
        if (!isfinite(d))
            return 1;
        if (!(d > MB_DEPENDENT_PIVOT * diagonal) || !(diagonal > MB_DEPENDENT_PIVOT * largest)) {
            for (int k = 0; k < j; ++k)
                a[j * n + k] = 0.0;
            for (int i = j + 1; i < n; ++i)
                a[i * n + j] = 0.0;
            a[j * n + j] = 1.0;
            b[j] = 0.0;  /* dependent here: left to the rows before it */
            continue;
        }
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
MB_INTERNAL void mb_cholesky_solve(const double *l, int n, double *b)
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

MB_INTERNAL double mb_dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; ++i)
        s += a[i] * b[i];
    return s;
}

/* Whether constraint row i is enabled (enabled == NULL: every row is). */
MB_INTERNAL int mb_enabled(const double *enabled, int i)
{
    return enabled == NULL || enabled[i] != 0.0;
}

#if MB_HAS_HOLONOMIC
/* x[S] -= M_S^T (M_S M_S^T)^-1 r for the row-major rows x cols matrix m, S = index[0..n_index)
 * and M_S its columns S: the least-norm change of x[S] with M dx = -r, over the enabled rows
 * only (a disabled row gets a unit row and column in the Gram matrix and a zero residual, so it
 * contributes nothing; a row dependent on the rows before it here is left to them, see
 * mb_cholesky).  r is overwritten.  Returns 0, or 4 at a non-finite Gram matrix. */
MB_INTERNAL int mb_least_norm_correction(double *x, const double *m, int rows, int cols,
                                         const int *index, int n_index, double *r,
                                         const double *enabled)
{
    double g[MB_N_HOLONOMIC * MB_N_HOLONOMIC];
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
    if (mb_cholesky(g, rows, r))
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
#endif /* MB_HAS_HOLONOMIC */

/* With l from mb_mass_factor (M = L^T L) and the rows a_i of A (row-major, MB_N_CONSTRAINTS x
 * MB_N_U): x := S^-1 x for S = A M^-1 A^T = Z^T Z, Z = L^-T A^T, over the enabled rows (a disabled
 * row gets a unit row and column in S and x_i = 0), then v -= M^-1 A^T x = L^-1 (Z x) over the
 * enabled rows (skipped, not multiplied by zero: a disabled row may hold inf, and 0 * inf is
 * NaN).  Each column of Z is one half solve of a sparse row.  Rows dependent on the rows before
 * them at this configuration get x_i = 0 (see mb_cholesky).  Returns 0, or 1 if S is not finite. */
MB_INTERNAL int mb_schur_correction(const double *l, const double *a, double *x, double *v,
                                    const double *enabled)
{
    double z[MB_N_CONSTRAINTS * MB_N_U], s[MB_N_CONSTRAINTS * MB_N_CONSTRAINTS], w[MB_N_U];
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
    if (mb_cholesky(s, MB_N_CONSTRAINTS, x))
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
#endif /* MB_HAS_CONSTRAINTS */
