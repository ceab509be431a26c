/* Blocking collectives (OSU 7.x method): each iteration is timed on every rank, followed by an
 * untimed MPI_Barrier; the harness averages the per-rank mean latency over ranks (min/max for -f).
 * Roots are rank 0. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

typedef struct coll coll_t;

/* what sets one collective apart besides its MPI call */
typedef struct {
    int send_per_rank, recv_per_rank; /* the buffer holds one block of the size per rank */
    void (*fill)(coll_t *c, long iter); /* validation: this rank's send data into c->stage */
    long (*check)(coll_t *c, long iter); /* validation: errors in what this rank received */
} coll_op_t;

struct coll {
    const run_t *run;
    const coll_op_t *op;
    MPI_Comm comm;
    size_t size;
    char place;
    unsigned char *s, *rb, *stage;
    int *counts; /* reduce_scatter: each rank's share of the elements */
};

/* ---------------------------------------------------------------- iterations */

/* the time since t0; the barrier that separates iterations is not timed */
static double timed_since(MPI_Comm comm, double t0)
{
    double t1 = MPI_Wtime();
    MPI_Barrier(comm);
    return t1 - t0;
}

static double barrier(void *vc)
{
    coll_t *c = vc;
    double t0 = MPI_Wtime();
    MPI_Barrier(c->comm);
    return MPI_Wtime() - t0; /* OSU: no extra barrier between barriers */
}

static double bcast(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Bcast(c->s, n, MPI_CHAR, 0, c->comm);
    return timed_since(c->comm, t0);
}

static double reduce(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Reduce(c->s, c->rb, n, MPI_CHAR, MPI_SUM, 0, c->comm);
    return timed_since(c->comm, t0);
}

static double allreduce(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Allreduce(c->s, c->rb, n, MPI_CHAR, MPI_SUM, c->comm);
    return timed_since(c->comm, t0);
}

static double gather(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Gather(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, 0, c->comm);
    return timed_since(c->comm, t0);
}

static double scatter(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Scatter(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, 0, c->comm);
    return timed_since(c->comm, t0);
}

static double allgather(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Allgather(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, c->comm);
    return timed_since(c->comm, t0);
}

static double alltoall(void *vc)
{
    coll_t *c = vc;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    MPI_Alltoall(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, c->comm);
    return timed_since(c->comm, t0);
}

static double reduce_scatter(void *vc)
{
    coll_t *c = vc;
    double t0 = MPI_Wtime();
    MPI_Reduce_scatter(c->s, c->rb, c->counts, MPI_CHAR, MPI_SUM, c->comm);
    return timed_since(c->comm, t0);
}

/* ---------------------------------------------------------------- buffers */

static size_t send_bytes(const coll_t *c, size_t size)
{
    return c->op->send_per_rank ? size * (size_t)c->run->nranks : size;
}

static size_t recv_bytes(const coll_t *c, size_t size)
{
    return c->op->recv_per_rank ? size * (size_t)c->run->nranks : size;
}

static void teardown(void *vc)
{
    coll_t *c = vc;
    buf_free(c->place, c->s);
    buf_free(c->place, c->rb);
    buf_free('H', c->stage);
    free(c->counts);
    free(c);
}

/* One block per rank must fit the memory limit, as in OSU (with its warning). */
static void *setup(const run_t *run, size_t *max_size)
{
    int np = run->nranks;
    coll_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->run = run;
    c->op = run->bench->params;
    c->comm = run->comm;
    c->place = run->opts->device == DEV_NONE ? 'H' : run->opts->managed ? 'M' : 'D';
    if ((c->op->send_per_rank || c->op->recv_per_rank) && *max_size * (size_t)np > MAX_MEM_LIMIT) {
        *max_size = MAX_MEM_LIMIT / (size_t)np;
        if (run->rank == 0)
            fprintf(stderr, "Warning! Limiting max message size to: %zu.\n", *max_size);
    }
    size_t slen = send_bytes(c, *max_size), rlen = recv_bytes(c, *max_size);
    c->s = buf_alloc(c->place, slen, run->pagesize);
    c->rb = buf_alloc(c->place, rlen, run->pagesize);
    c->stage = buf_alloc('H', slen > rlen ? slen : rlen, run->pagesize);
    c->counts = malloc(sizeof(int) * (size_t)np);
    if (!c->s || !c->rb || !c->stage || !c->counts) {
        teardown(c);
        return NULL;
    }
    return c;
}

static void prepare(void *vc, size_t size)
{
    coll_t *c = vc;
    int n = c->run->nranks;
    size_t portion = size / (size_t)n, rem = size % (size_t)n;
    c->size = size;
    for (int i = 0; i < n; i++)
        c->counts[i] = (int)(portion + ((size_t)i < rem ? 1 : 0));
    if (size) { /* barrier has no data */
        buf_set(c->place, c->s, 1, send_bytes(c, size));
        buf_set(c->place, c->rb, 0, recv_bytes(c, size));
    }
}

/* ---------------------------------------------------------------- validation */

/* reduction operand: small values so that the MPI_CHAR sum never overflows */
static int red_value(size_t i, long iter, int rank, int nranks)
{
    int maxv = 127 / nranks;
    return (int)((i + (size_t)iter * 3u + (size_t)rank) % (size_t)(maxv + 1));
}

static long check_reduced(const unsigned char *v, size_t off, size_t len, long iter, int nranks)
{
    long errors = 0;
    for (size_t k = 0; k < len; k++) {
        int sum = 0;
        for (int q = 0; q < nranks; q++)
            sum += red_value(off + k, iter, q, nranks);
        if (v[k] != (unsigned char)sum)
            errors++;
    }
    return errors;
}

/* the first len bytes of buffer p as this rank received them */
static unsigned char *received(coll_t *c, const void *p, size_t len)
{
    return corrupt_in_test_build((unsigned char *)buf_view(c->place, p, c->stage, len), len);
}

static void fill_bcast(coll_t *c, long iter)
{
    if (c->run->rank == 0)
        fill_pattern(c->stage, c->size, c->size, iter, 0);
    else
        memset(c->stage, 0, c->size);
}

static long check_bcast(coll_t *c, long iter)
{
    return check_pattern(received(c, c->s, c->size), c->size, c->size, iter, 0);
}

static void fill_reduction(coll_t *c, long iter)
{
    for (size_t i = 0; i < c->size; i++)
        c->stage[i] = (unsigned char)red_value(i, iter, c->run->rank, c->run->nranks);
}

static long check_allreduce(coll_t *c, long iter)
{
    return check_reduced(received(c, c->rb, c->size), 0, c->size, iter, c->run->nranks);
}

static long check_reduce(coll_t *c, long iter)
{
    return c->run->rank == 0 ? check_allreduce(c, iter) : 0;
}

static long check_reduce_scatter(coll_t *c, long iter)
{
    size_t off = 0, len = (size_t)c->counts[c->run->rank];
    for (int q = 0; q < c->run->rank; q++)
        off += (size_t)c->counts[q];
    return check_reduced(received(c, c->rb, len), off, len, iter, c->run->nranks);
}

static void fill_own_block(coll_t *c, long iter)
{
    fill_pattern(c->stage, c->size, c->size, iter, c->run->rank);
}

static long check_allgather(coll_t *c, long iter)
{
    int np = c->run->nranks;
    const unsigned char *view = received(c, c->rb, recv_bytes(c, c->size));
    long errors = 0;
    for (int q = 0; q < np; q++)
        errors += check_pattern(view + (size_t)q * c->size, c->size, c->size, iter, q);
    return errors;
}

static long check_gather(coll_t *c, long iter)
{
    return c->run->rank == 0 ? check_allgather(c, iter) : 0;
}

/* the root sends block q to rank q; the other ranks' send buffers are not read */
static void fill_scatter(coll_t *c, long iter)
{
    for (int q = 0; q < c->run->nranks; q++)
        fill_pattern(c->stage + (size_t)q * c->size, c->size, c->size, iter,
                     c->run->rank == 0 ? q : -1);
}

static long check_scatter(coll_t *c, long iter)
{
    return check_pattern(received(c, c->rb, c->size), c->size, c->size, iter, c->run->rank);
}

/* block d goes from this rank to rank d: seeded by both */
static void fill_alltoall(coll_t *c, long iter)
{
    int np = c->run->nranks;
    for (int d = 0; d < np; d++)
        fill_pattern(c->stage + (size_t)d * c->size, c->size, c->size, iter,
                     (long)c->run->rank * np + d);
}

static long check_alltoall(coll_t *c, long iter)
{
    int np = c->run->nranks;
    const unsigned char *view = received(c, c->rb, recv_bytes(c, c->size));
    long errors = 0;
    for (int q = 0; q < np; q++)
        errors += check_pattern(view + (size_t)q * c->size, c->size, c->size, iter,
                                (long)q * np + c->run->rank);
    return errors;
}

/* Untimed, after the timed iterations of a size: the same collective on known data. */
static long validate(void *vc)
{
    coll_t *c = vc;
    long errors = 0;
    for (long v = 0; v < VALIDATION_ITERS; v++) {
        c->op->fill(c, v);
        buf_put(c->place, c->s, c->stage, send_bytes(c, c->size));
        buf_set(c->place, c->rb, 0, recv_bytes(c, c->size));
        MPI_Barrier(c->comm);
        (void)c->run->bench->iterate(c);
        errors += c->op->check(c, v);
    }
    return errors;
}

/* ---------------------------------------------------------------- descriptors */

static const coll_op_t BARRIER_OP = {0, 0, NULL, NULL},
                       BCAST_OP = {0, 0, fill_bcast, check_bcast},
                       REDUCE_OP = {0, 0, fill_reduction, check_reduce},
                       ALLREDUCE_OP = {0, 0, fill_reduction, check_allreduce},
                       GATHER_OP = {0, 1, fill_own_block, check_gather},
                       SCATTER_OP = {1, 0, fill_scatter, check_scatter},
                       ALLGATHER_OP = {0, 1, fill_own_block, check_allgather},
                       ALLTOALL_OP = {1, 1, fill_alltoall, check_alltoall},
                       REDUCE_SCATTER_OP = {0, 0, fill_reduction, check_reduce_scatter};

#define COLLECTIVE(test_name, test_title, op_iterate, op)                                        \
    {.name = test_name, .title = test_title, .family = FAMILY_COLLECTIVE,                         \
     .counts = COUNTS_COLLECTIVE, .figures = &LATENCY_FIGURES, .ranks = {RANKS_AT_LEAST, 2},      \
     .has_sizes = 1, .params = op, .setup = setup, .prepare = prepare, .iterate = op_iterate,    \
     .validate = validate, .teardown = teardown}

const benchmark_t COLLECTIVE_BENCHMARKS[] = {
    {.name = "barrier", .title = "OSU MPI%s Barrier Latency Test", .family = FAMILY_COLLECTIVE,
     .counts = COUNTS_COLLECTIVE, .figures = &LATENCY_FIGURES, .ranks = {RANKS_AT_LEAST, 2},
     .params = &BARRIER_OP, .setup = setup, .prepare = prepare, .iterate = barrier,
     .teardown = teardown},
    COLLECTIVE("bcast", "OSU MPI%s Broadcast Latency Test", bcast, &BCAST_OP),
    COLLECTIVE("reduce", "OSU MPI%s Reduce Latency Test", reduce, &REDUCE_OP),
    COLLECTIVE("allreduce", "OSU MPI%s Allreduce Latency Test", allreduce, &ALLREDUCE_OP),
    COLLECTIVE("gather", "OSU MPI%s Gather Latency Test", gather, &GATHER_OP),
    COLLECTIVE("scatter", "OSU MPI%s Scatter Latency Test", scatter, &SCATTER_OP),
    COLLECTIVE("allgather", "OSU MPI%s Allgather Latency Test", allgather, &ALLGATHER_OP),
    COLLECTIVE("alltoall", "OSU MPI%s All-to-All Personalized Exchange Latency Test", alltoall,
               &ALLTOALL_OP),
    COLLECTIVE("reduce_scatter", "OSU MPI%s Reduce_scatter Latency Test", reduce_scatter,
               &REDUCE_SCATTER_OP),
};
const int COLLECTIVE_BENCHMARK_COUNT =
    (int)(sizeof COLLECTIVE_BENCHMARKS / sizeof COLLECTIVE_BENCHMARKS[0]);
