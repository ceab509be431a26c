/* Per-size driver: warm-up, timed iterations, adaptive stopping. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void fatal(run_t *r, const char *msg)
{
    fprintf(stderr, "%s: rank %d: %s\n", MB_NAME, r ? r->rank : -1, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Convert raw samples [from, to) into the primary metric on rank 0.
 * Collectives: the sample of one iteration is the mean over ranks of the
 * per-rank iteration time (reduced here, outside any timed region). */
static void to_metrics(run_t *r, const kernel_t *k, const double *dt, double *red,
                       double *metric, long from, long to)
{
    if (to <= from)
        return;
    if (k->coll) {
        MPI_Reduce(dt + from, red + from, (int)(to - from), MPI_DOUBLE, MPI_SUM, 0, r->comm);
        if (r->rank == 0)
            for (long i = from; i < to; i++)
                metric[i] = red[i] / r->nranks * 1e6;
    } else if (r->rank == 0) {
        for (long i = from; i < to; i++)
            metric[i] = k->to_metric(k->ctx, dt[i]);
    }
}

long drive_size(run_t *r, const kernel_t *k, long nfixed, long warmup, double *dt,
                double *metric, double *scratch, double *red)
{
    const opts_t *o = r->o;
    int adaptive = o->stop_ci > 0.0;
    long nmax = nfixed, nmin = 0, next = -1, n = 0, done = 0;

    if (adaptive) {
        if (o->stop_max_set)
            nmax = o->stop_max;
        nmin = o->stop_min_set ? o->stop_min : STOP_MIN_DEFAULT;
        if (nmin > nmax)
            nmin = nmax;
        next = nmin;
    }

    MPI_Barrier(r->comm);
    for (long w = 0; w < warmup; w++)
        (void)k->fn(k->ctx);

    while (n < nmax) {
        dt[n] = k->fn(k->ctx);
        n++;
        if (adaptive && n == next && n < nmax) {
            int stop = 0;
            to_metrics(r, k, dt, red, metric, done, n);
            done = n;
            if (r->rank == 0)
                stop = ci_converged(metric, n, scratch, o->stop_ci);
            MPI_Bcast(&stop, 1, MPI_INT, 0, r->comm);
            if (stop)
                break;
            next = n + (n / 2 > 4 ? n / 2 : 4);
            /* re-synchronise the ranks after the broadcast (it leaves rank 0
             * ahead) so the next timed iteration starts as usual: one untimed
             * iteration for small messages, where a skew of a microsecond
             * matters; a barrier for large ones, whose iterations are long */
            if (k->size <= LARGE_MESSAGE_SIZE)
                (void)k->fn(k->ctx);
            else
                MPI_Barrier(r->comm);
        }
    }
    to_metrics(r, k, dt, red, metric, done, n);
    return n;
}
