/* Statistics of per-iteration samples; distribution-free CI of the median. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 95% confidence interval of the median from order statistics
 * (Le Boudec, "Performance Evaluation of Computer and Communication Systems",
 * Thm 2.1 and Table A.1): with n samples sorted x(1) <= ... <= x(n), [x(j), x(n+1-j)] covers the
 * true median with probability 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2). Up to EXACT_CI_MAX
 * samples j is the largest index with P(B <= j-1) <= 2.5%, computed exactly (Table A.1: n = 6
 * gives [x(1), x(6)], n = 10 gives [x(2), x(9)], n = 20 gives [x(6), x(15)]); the normal
 * approximation j = floor(n/2 - 0.98 sqrt(n)), k = ceil(n/2 + 1 + 0.98 sqrt(n)), one rank
 * wider at small n, is used beyond. For n < 6 no interval reaches 95%: [min, max].
 * Returned as 0-based indices. */
#define EXACT_CI_MAX 70

void median_ci_ranks(long n, long *lo, long *hi)
{
    if (n < 6) {
        *lo = 0;
        *hi = n > 0 ? n - 1 : 0;
        return;
    }
    long j, k;
    if (n <= EXACT_CI_MAX) {
        /* P(B = i) from P(B = 0) = 2^-n, multiplied by (n - i) / (i + 1); exact in doubles */
        double p = ldexp(1.0, (int)-n), below = p;
        j = 1;
        for (long i = 0; below + p * (double)(n - i) / (double)(i + 1) <= 0.025; i++) {
            p *= (double)(n - i) / (double)(i + 1);
            below += p;
            j = i + 2;
        }
        k = n + 1 - j;
    } else {
        double s = 0.98 * sqrt((double)n);
        j = (long)floor(n / 2.0 - s);
        k = (long)ceil(n / 2.0 + 1.0 + s);
    }
    if (j < 1)
        j = 1;
    if (k > n)
        k = n;
    *lo = j - 1;
    *hi = k - 1;
}

static double quantile_sorted(const double *x, long n, double q)
{
    /* nearest-rank definition: smallest x(i) with i >= q*n */
    long i = (long)ceil(q * (double)n);
    if (i < 1)
        i = 1;
    if (i > n)
        i = n;
    return x[i - 1];
}

static double median_sorted(const double *x, long n)
{
    return (n % 2) ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void compute_stats(const double *x, long n, double *scratch, stats_t *st)
{
    memset(st, 0, sizeof(*st));
    st->samples = n;
    if (n <= 0)
        return;
    memcpy(scratch, x, (size_t)n * sizeof(double));
    qsort(scratch, (size_t)n, sizeof(double), cmp_double);
    double sum = 0.0;
    for (long i = 0; i < n; i++)
        sum += scratch[i];
    st->mean = sum / (double)n;
    double ss = 0.0;
    for (long i = 0; i < n; i++)
        ss += (scratch[i] - st->mean) * (scratch[i] - st->mean);
    st->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    st->min = scratch[0];
    st->max = scratch[n - 1];
    st->median = median_sorted(scratch, n);
    st->p90 = quantile_sorted(scratch, n, 0.90);
    st->p99 = quantile_sorted(scratch, n, 0.99);
    long lo, hi;
    median_ci_ranks(n, &lo, &hi);
    st->ci_lo = scratch[lo];
    st->ci_hi = scratch[hi];
}

/* Adaptive stop rule: both ends of the 95% CI of the median lie within
 * +-rel of the median. */
int ci_converged(const double *x, long n, double *scratch, double rel)
{
    if (n < 6)
        return 0;
    memcpy(scratch, x, (size_t)n * sizeof(double));
    qsort(scratch, (size_t)n, sizeof(double), cmp_double);
    long lo, hi;
    median_ci_ranks(n, &lo, &hi);
    double med = median_sorted(scratch, n);
    if (!(med > 0.0))
        return 0;
    return scratch[lo] >= med * (1.0 - rel) && scratch[hi] <= med * (1.0 + rel);
}
