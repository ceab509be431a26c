/* Point-to-point kernels (OSU 7.x method): latency, bw, bibw, mbw_mr, multi_lat.
 * Ranks pair up as (r, r + N/2); the first half initiates and is timed. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

/* how a pair exchanges data in one iteration */
typedef struct {
    int directions;       /* data flows one way (bw, mbw_mr) or both ways (bibw); 1 for ping-pong */
    int initiator_checks; /* the initiator receives whole messages (not only an acknowledgement) */
} exchange_t;

static const exchange_t PING_PONG = {1, 1}, ONE_WAY = {1, 0}, TWO_WAY = {2, 1};

typedef struct {
    const run_t *run;
    const exchange_t *exchange;
    size_t size;
    int window, pairs;
    int role; /* 0: initiator (timed), 1: responder */
    int peer;
    char place;
    unsigned char *s, *rb, *stage;
    MPI_Request *req;
    MPI_Status *stat; /* array: MPICH's MPI_STATUSES_IGNORE upsets gcc -Wstringop-overflow */
} p2p_t;

/* ---------------------------------------------------------------- iterations */

static double ping_pong(void *vc)
{
    p2p_t *c = vc;
    MPI_Comm comm = c->run->comm;
    if (c->role == 0) {
        double t0 = MPI_Wtime();
        MPI_Send(c->s, (int)c->size, MPI_CHAR, c->peer, 1, comm);
        MPI_Recv(c->rb, (int)c->size, MPI_CHAR, c->peer, 1, comm, MPI_STATUS_IGNORE);
        return MPI_Wtime() - t0;
    }
    MPI_Recv(c->rb, (int)c->size, MPI_CHAR, c->peer, 1, comm, MPI_STATUS_IGNORE);
    MPI_Send(c->s, (int)c->size, MPI_CHAR, c->peer, 1, comm);
    return 0.0;
}

static double multi_ping_pong(void *vc)
{
    p2p_t *c = vc;
    MPI_Barrier(c->run->comm); /* untimed, as OSU 7.x */
    return ping_pong(vc);
}

/* a window of messages one way, then an acknowledgement back */
static double window_one_way(void *vc)
{
    p2p_t *c = vc;
    MPI_Comm comm = c->run->comm;
    int w = c->window;
    if (c->role == 0) {
        double t0 = MPI_Wtime();
        for (int j = 0; j < w; j++)
            MPI_Isend(c->s, (int)c->size, MPI_CHAR, c->peer, 100, comm, &c->req[j]);
        MPI_Waitall(w, c->req, c->stat);
        MPI_Recv(c->rb, ACK_BYTES, MPI_CHAR, c->peer, 101, comm, MPI_STATUS_IGNORE);
        return MPI_Wtime() - t0;
    }
    for (int j = 0; j < w; j++)
        MPI_Irecv(c->rb, (int)c->size, MPI_CHAR, c->peer, 100, comm, &c->req[j]);
    MPI_Waitall(w, c->req, c->stat);
    MPI_Send(c->s, ACK_BYTES, MPI_CHAR, c->peer, 101, comm);
    return 0.0;
}

static double multi_window_one_way(void *vc)
{
    p2p_t *c = vc;
    MPI_Barrier(c->run->comm); /* untimed, as OSU 7.x */
    return window_one_way(vc);
}

/* Both ways at once. Each window starts after an untimed barrier: nothing else ties the two ranks
 * together (bw has its acknowledgement), and free-running windows carry the ranks' relative timing
 * and the MPI library's shared-memory state over from whatever ran before in the process, so that a
 * second sweep of sizes (in a suite, a later test) read 5-15% low at 1-64 B under MPICH
 * (docs/methodology.md section 7). With the barrier every window starts as a fresh launch's first. */
static double window_two_way(void *vc)
{
    p2p_t *c = vc;
    MPI_Comm comm = c->run->comm;
    int w = c->window;
    MPI_Request *rr = c->req, *sr = c->req + w;
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    int rtag = c->role == 0 ? 10 : 100, stag = c->role == 0 ? 100 : 10;
    for (int j = 0; j < w; j++)
        MPI_Irecv(c->rb, (int)c->size, MPI_CHAR, c->peer, rtag, comm, &rr[j]);
    for (int j = 0; j < w; j++)
        MPI_Isend(c->s, (int)c->size, MPI_CHAR, c->peer, stag, comm, &sr[j]);
    if (c->role == 0) {
        MPI_Waitall(w, sr, c->stat);
        MPI_Waitall(w, rr, c->stat);
        return MPI_Wtime() - t0;
    }
    MPI_Waitall(w, rr, c->stat);
    MPI_Waitall(w, sr, c->stat);
    return 0.0;
}

/* ---------------------------------------------------------------- figures */

static double latency_sample(void *vc, double seconds)
{
    return seconds * 1e6 / 2.0;
}

static int latency_figures(void *vc, long n, double total, double *values)
{
    values[0] = total * 1e6 / (2.0 * n);
    return 1;
}

/* messages that cross in parallel: every pair, in each direction */
static double streams(const p2p_t *c)
{
    return (double)(c->pairs * c->exchange->directions);
}

static double bandwidth_sample(void *vc, double seconds)
{
    p2p_t *c = vc;
    double bytes = (double)c->size * c->window * streams(c);
    return seconds > 0.0 ? bytes / 1e6 / seconds : 0.0;
}

static int bandwidth_figures(void *vc, long n, double total, double *values)
{
    p2p_t *c = vc;
    double mb = (double)c->size / 1e6 * (double)n * c->window * streams(c);
    values[0] = total > 0.0 ? mb / total : 0.0;
    return 1;
}

static int message_rate_figures(void *vc, long n, double total, double *values)
{
    p2p_t *c = vc;
    bandwidth_figures(vc, n, total, values);
    values[1] = values[0] * 1e6 / (double)c->size;
    return 2;
}

/* ---------------------------------------------------------------- buffers */

static void teardown(void *vc)
{
    p2p_t *c = vc;
    buf_free(c->place, c->s);
    buf_free(c->place, c->rb);
    buf_free('H', c->stage);
    free(c->req);
    free(c->stat);
    free(c);
}

static void *setup(const run_t *run, size_t *max_size)
{
    const options_t *o = run->opts;
    p2p_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->run = run;
    c->exchange = run->bench->params;
    c->window = run->bench->windowed ? o->window : 1;
    c->pairs = run->nranks / 2;
    c->role = run->rank < c->pairs ? 0 : 1;
    c->peer = c->role == 0 ? run->rank + c->pairs : run->rank - c->pairs;
    c->place = c->role == 0 ? o->src : o->dst;

    size_t bytes = *max_size > ACK_BYTES ? *max_size : ACK_BYTES;
    c->s = buf_alloc(c->place, bytes, run->pagesize);
    c->rb = buf_alloc(c->place, bytes, run->pagesize);
    c->stage = buf_alloc('H', bytes, run->pagesize);
    c->req = malloc(sizeof(MPI_Request) * 2 * (size_t)c->window);
    c->stat = malloc(sizeof(MPI_Status) * 2 * (size_t)c->window);
    if (!c->s || !c->rb || !c->stage || !c->req || !c->stat) {
        teardown(c);
        return NULL;
    }
    return c;
}

static void prepare(void *vc, size_t size)
{
    p2p_t *c = vc;
    c->size = size;
    buf_set(c->place, c->s, 'a', size);
    buf_set(c->place, c->rb, 'b', size);
}

/* ---------------------------------------------------------------- validation */

/* Untimed, after the timed iterations of a size: every rank that receives whole messages checks
 * its receive buffer against its peer's pattern. */
static long validate(void *vc)
{
    p2p_t *c = vc;
    const run_t *run = c->run;
    long errors = 0;
    int checks = c->role == 1 || c->exchange->initiator_checks;
    for (long v = 0; v < VALIDATION_ITERS; v++) {
        fill_pattern(c->stage, c->size, c->size, v, run->rank);
        buf_put(c->place, c->s, c->stage, c->size);
        buf_set(c->place, c->rb, 0, c->size);
        MPI_Barrier(run->comm);
        (void)run->bench->iterate(c);
        if (checks) {
            unsigned char *view = (unsigned char *)buf_view(c->place, c->rb, c->stage, c->size);
            errors += check_pattern(corrupt_in_test_build(view, c->size), c->size, c->size, v,
                                    c->peer);
        }
    }
    return errors;
}

/* ---------------------------------------------------------------- descriptors */

const benchmark_t PT2PT_BENCHMARKS[] = {
    {.name = "latency", .title = "OSU MPI%s Latency Test",
     .family = FAMILY_PT2PT, .counts = COUNTS_LATENCY, .figures = &LATENCY_FIGURES,
     .ranks = {RANKS_EXACTLY, 2}, .has_sizes = 1, .params = &PING_PONG,
     .setup = setup, .prepare = prepare, .iterate = ping_pong, .validate = validate,
     .teardown = teardown, .sample = latency_sample, .summarize = latency_figures},
    {.name = "bw", .title = "OSU MPI%s Bandwidth Test",
     .family = FAMILY_PT2PT, .counts = COUNTS_BANDWIDTH, .figures = &BANDWIDTH_FIGURES,
     .ranks = {RANKS_EXACTLY, 2}, .has_sizes = 1, .windowed = 1, .params = &ONE_WAY,
     .setup = setup, .prepare = prepare, .iterate = window_one_way, .validate = validate,
     .teardown = teardown, .sample = bandwidth_sample, .summarize = bandwidth_figures},
    {.name = "bibw", .title = "OSU MPI%s Bi-Directional Bandwidth Test",
     .family = FAMILY_PT2PT, .counts = COUNTS_BANDWIDTH, .figures = &BANDWIDTH_FIGURES,
     .ranks = {RANKS_EXACTLY, 2}, .has_sizes = 1, .windowed = 1, .params = &TWO_WAY,
     .setup = setup, .prepare = prepare, .iterate = window_two_way, .validate = validate,
     .teardown = teardown, .sample = bandwidth_sample, .summarize = bandwidth_figures},
    {.name = "mbw_mr", .title = "OSU MPI Multiple Bandwidth / Message Rate Test",
     .family = FAMILY_PT2PT, .counts = COUNTS_BANDWIDTH, .figures = &MESSAGE_RATE_FIGURES,
     .ranks = {RANKS_EVEN, 2}, .has_sizes = 1, .windowed = 1, .reports_pairs = 1,
     .params = &ONE_WAY,
     .setup = setup, .prepare = prepare, .iterate = multi_window_one_way, .validate = validate,
     .teardown = teardown, .sample = bandwidth_sample, .summarize = message_rate_figures},
    {.name = "multi_lat", .title = "OSU MPI Multi Latency Test",
     .family = FAMILY_PT2PT, .counts = COUNTS_LATENCY, .figures = &LATENCY_FIGURES,
     .ranks = {RANKS_EVEN, 2}, .has_sizes = 1, .params = &PING_PONG,
     .setup = setup, .prepare = prepare, .iterate = multi_ping_pong, .validate = validate,
     .teardown = teardown, .sample = latency_sample, .summarize = latency_figures},
};
const int PT2PT_BENCHMARK_COUNT = (int)(sizeof PT2PT_BENCHMARKS / sizeof PT2PT_BENCHMARKS[0]);
