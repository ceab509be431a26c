/* One size: warm-up, timed iterations, adaptive stopping; samples -> per-iteration figures. */
#include "bench.h"

/* Turn the samples [from, to) into the primary figure on rank 0. Collectives: the figure of one
 * iteration is the mean over ranks of its time (reduced here, outside any timed region). */
static void to_metrics(const run_t *run, void *state, samples_t *s, long from, long to)
{
    if (to <= from)
        return;
    if (run->bench->family == FAMILY_COLLECTIVE) {
        MPI_Reduce(s->seconds + from, s->rank_sum + from, (int)(to - from), MPI_DOUBLE, MPI_SUM, 0,
                   run->comm);
        if (run->rank == 0)
            for (long i = from; i < to; i++)
                s->metric[i] = s->rank_sum[i] / run->nranks * 1e6;
    } else if (run->rank == 0) {
        for (long i = from; i < to; i++)
            s->metric[i] = run->bench->sample(state, s->seconds[i]);
    }
}

/* Adaptive checkpoint after n samples: rank 0 decides, every rank learns the decision. */
static int stop_here(const run_t *run, const samples_t *s, long n)
{
    int stop = 0;
    if (run->rank == 0)
        stop = ci_converged(s->metric, n, s->scratch, run->opts->stop_ci);
    MPI_Bcast(&stop, 1, MPI_INT, 0, run->comm);
    return stop;
}

/* Returns the number of timed iterations run: counts->iters, or in adaptive mode between
 * --stop-min and --stop-max (default counts->iters). */
long measure_size(const run_t *run, void *state, size_t size, const counts_t *counts, samples_t *s)
{
    const options_t *o = run->opts;
    double (*iterate)(void *) = run->bench->iterate;
    void (*keep)(void *, long) = run->bench->keep;
    int adaptive = o->stop_ci > 0.0;
    long nmax = counts->iters, next = -1, n = 0, done = 0;

    if (adaptive) {
        long nmin = o->stop_min_set ? o->stop_min : STOP_MIN_DEFAULT;
        if (o->stop_max_set)
            nmax = o->stop_max;
        next = nmin < nmax ? nmin : nmax;
    }

    MPI_Barrier(run->comm);
    for (long w = 0; w < counts->warmup; w++)
        (void)iterate(state);

    while (n < nmax) {
        s->seconds[n] = iterate(state);
        if (keep)
            keep(state, n);
        n++;
        if (!adaptive || n != next || n >= nmax)
            continue;
        to_metrics(run, state, s, done, n);
        done = n;
        if (stop_here(run, s, n))
            break;
        next = n + (n / 2 > 4 ? n / 2 : 4);
        /* re-synchronise the ranks after the broadcast (it leaves rank 0 ahead) so the next
         * timed iteration starts as usual: one untimed iteration for small messages, where a
         * skew of a microsecond matters; a barrier for large ones, whose iterations are long */
        if (size <= LARGE_MESSAGE_SIZE)
            (void)iterate(state);
        else
            MPI_Barrier(run->comm);
    }
    to_metrics(run, state, s, done, n);
    return n;
}
