/* The harness: runs any benchmark descriptor over its sizes with OSU's counts, turns the timed
 * samples into OSU's figures and statistics, validates, and hands each row to the report. */
#include "bench.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void fatal(int rank, const char *msg)
{
    fprintf(stderr, "%s: rank %d: %s\n", MB_NAME, rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ---------------------------------------------------------------- the run */

/* OSU's counts for small and large sizes; -i and -x replace both */
static void osu_counts(const benchmark_t *b, const options_t *o, counts_t *small, counts_t *large)
{
    switch (b->counts) {
    case COUNTS_LATENCY:
        *small = (counts_t){LAT_LOOP_SMALL, LAT_SKIP_SMALL};
        *large = (counts_t){LAT_LOOP_LARGE, LAT_SKIP_LARGE};
        break;
    case COUNTS_BANDWIDTH:
        *small = (counts_t){BW_LOOP_SMALL, BW_SKIP_SMALL};
        *large = (counts_t){BW_LOOP_LARGE, BW_SKIP_LARGE};
        break;
    default:
        *small = (counts_t){COLL_LOOP_SMALL, COLL_SKIP_SMALL};
        *large = (counts_t){COLL_LOOP_LARGE, COLL_SKIP_LARGE};
        break;
    }
    if (o->iters_set)
        small->iters = large->iters = o->iters;
    if (o->warmup_set)
        small->warmup = large->warmup = o->warmup;
}

void init_run(run_t *run, const benchmark_t *b, const options_t *o, const meta_t *m, MPI_Comm comm)
{
    long pagesize = sysconf(_SC_PAGESIZE);
    memset(run, 0, sizeof(*run));
    run->bench = b;
    run->opts = o;
    run->meta = m;
    run->comm = comm;
    MPI_Comm_rank(comm, &run->rank);
    MPI_Comm_size(comm, &run->nranks);
    run->pagesize = pagesize > 0 ? (size_t)pagesize : 4096;
    if (b->has_sizes) {
        run->max_size = o->max_set ? o->max_size
                        : b->family == FAMILY_COLLECTIVE ? MAX_SIZE_COLL : MAX_SIZE_PT2PT;
        run->min_size = o->min_set ? o->min_size : 1;
        if (run->min_size > run->max_size)
            run->min_size = run->max_size;
    }
    osu_counts(b, o, &run->small, &run->large);
}

/* ---------------------------------------------------------------- samples */

/* The largest number of timed iterations any size of this run may take. */
long sample_capacity(const run_t *run)
{
    const options_t *o = run->opts;
    long cap = run->small.iters > run->large.iters ? run->small.iters : run->large.iters;
    if (o->stop_ci > 0 && o->stop_max_set && o->stop_max > cap)
        cap = o->stop_max;
    return cap > 1 ? cap : 1;
}

/* 0 when an array could not be allocated */
static int alloc_samples(const run_t *run, samples_t *s)
{
    size_t bytes = sizeof(double) * (size_t)sample_capacity(run);
    s->seconds = malloc(bytes);
    s->metric = malloc(bytes);
    s->scratch = malloc(bytes);
    s->rank_sum = run->bench->family == FAMILY_COLLECTIVE ? malloc(bytes) : NULL;
    return s->seconds && s->metric && s->scratch &&
           (s->rank_sum || run->bench->family != FAMILY_COLLECTIVE);
}

static void free_samples(samples_t *s)
{
    free(s->seconds);
    free(s->metric);
    free(s->scratch);
    free(s->rank_sum);
}

/* ---------------------------------------------------------------- figures of a size */

static double total_seconds(const samples_t *s, long n)
{
    double total = 0.0;
    for (long i = 0; i < n; i++)
        total += s->seconds[i];
    return total;
}

/* point-to-point and local: rank 0's clock; the kernel knows what the time means */
static void summarize_on_root(const run_t *run, void *state, const samples_t *s, long n,
                              size_result_t *out)
{
    if (run->rank != 0)
        return;
    out->nvalues = run->bench->summarize(state, n, total_seconds(s, n), out->values);
    compute_stats(s->metric, n, s->scratch, &out->st);
    out->has_stats = 1;
}

/* collectives: OSU's average over ranks of the per-rank mean latency, and its min and max */
static void summarize_over_ranks(const run_t *run, const samples_t *s, long n, size_result_t *out)
{
    double total = total_seconds(s, n);
    double lat = n > 0 ? total * 1e6 / (double)n : 0.0, mn = 0, mx = 0, sum = 0;
    MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, run->comm);
    MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, run->comm);
    MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, run->comm);
    if (run->rank != 0)
        return;
    out->values[0] = sum / run->nranks;
    out->nvalues = 1;
    out->rank_min = mn;
    out->rank_max = mx;
    out->has_rank = 1;
    compute_stats(s->metric, n, s->scratch, &out->st);
    out->has_stats = 1;
}

/* errors of every rank in the untimed validation pass: 0 pass, 1 fail */
static int validation_outcome(const run_t *run, void *state)
{
    long errors = run->bench->validate(state), total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, run->comm);
    return total ? 1 : 0;
}

/* ---------------------------------------------------------------- sizes */

/* --stop-check: the stop rule against the fixed count in one launch, block by block in alternating order
 * (ABBA), so that both see the same machine state: launches fall into modes for seconds, which a comparison
 * of separate launches attributes to whichever arm drew them. Each block is a size's measurement as a launch
 * makes it (a barrier, the warm-up, the timed iterations); only its median is kept. */
static void check_stop_rule(const run_t *run, void *state, size_t size, const counts_t *counts, samples_t *s,
                            size_result_t *row)
{
    options_t fixed_opts = *run->opts;
    run_t fixed = *run;
    fixed_opts.stop_ci = 0.0;
    fixed.opts = &fixed_opts;
    row->check_pairs = (int)run->opts->stop_check;
    for (int k = 0; k < row->check_pairs; k++) {
        for (int half = 0; half < 2; half++) {
            int adaptive = (k + half) % 2; /* fixed first in even pairs, adaptive first in odd ones */
            long n = measure_size(adaptive ? run : &fixed, state, size, counts, s);
            stats_t st;
            if (run->rank == 0)
                compute_stats(s->metric, n, s->scratch, &st);
            (adaptive ? row->check_adaptive : row->check_fixed)[k] = run->rank == 0 ? st.median : 0.0;
        }
    }
}

static void run_size(const run_t *run, void *state, size_t size, samples_t *s, results_t *out)
{
    const benchmark_t *b = run->bench;
    const counts_t *counts = size > LARGE_MESSAGE_SIZE ? &run->large : &run->small;
    size_result_t *row = &out->res[out->nres++];

    b->prepare(state, size);
    memset(row, 0, sizeof(*row));
    if (run->opts->stop_check > 0)
        check_stop_rule(run, state, size, counts, s, row);
    long n = measure_size(run, state, size, counts, s);

    row->size = size;
    row->has_size = b->has_sizes;
    row->iters = n;
    row->warmup = counts->warmup;
    row->validation = -1;
    if (b->family == FAMILY_COLLECTIVE)
        summarize_over_ranks(run, s, n, row);
    else
        summarize_on_root(run, state, s, n, row);
    if (run->opts->validate && b->validate) {
        row->validation = validation_outcome(run, state);
        if (row->validation)
            out->any_fail = 1;
    }
    print_row(run, row);
    if (b->family == FAMILY_COLLECTIVE)
        MPI_Barrier(run->comm); /* OSU separates the sizes of a collective by a barrier */
}

/* sizes from min to max, doubling; one size-less row for a benchmark without sizes */
void run_benchmark(const run_t *run, results_t *out)
{
    const benchmark_t *b = run->bench;
    size_t max_size = run->max_size;
    samples_t s;

    memset(out, 0, sizeof(*out));
    now_iso(out->started, sizeof out->started);
    void *state = b->setup(run, &max_size);
    int have_samples = alloc_samples(run, &s);
    if (!state || !have_samples)
        fatal(run->rank, "buffer allocation failed");

    print_header(run, state);
    if (!b->has_sizes)
        run_size(run, state, 0, &s, out);
    for (size_t size = run->min_size; b->has_sizes && size <= max_size && out->nres < MAX_SIZES;
         size *= 2) {
        run_size(run, state, size, &s, out);
        if (size > SIZE_MAX / 2)
            break;
    }

    b->teardown(state);
    free_samples(&s);
    now_iso(out->finished, sizeof out->finished);
}
