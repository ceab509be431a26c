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
 * Thm 2.1 / Table A.1): with n samples sorted x(1) <= ... <= x(n), the interval
 * [x(j), x(k)] with j = floor(n/2 - 0.98 sqrt(n)), k = ceil(n/2 + 1 + 0.98 sqrt(n))
 * covers the true median with probability >= 95% (normal approximation of the
 * binomial; valid for n >= 6). For n < 6 the interval is [min, max].
 * Returned as 0-based indices. */
void median_ci_ranks(long n, long *lo, long *hi)
{
    if (n < 6) {
        *lo = 0;
        *hi = n > 0 ? n - 1 : 0;
        return;
    }
    double s = 0.98 * sqrt((double)n);
    long j = (long)floor(n / 2.0 - s);
    long k = (long)ceil(n / 2.0 + 1.0 + s);
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
