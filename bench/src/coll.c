/* Blocking collectives (OSU 7.x method): each iteration is timed on every
 * rank, followed by an untimed MPI_Barrier; the figure is the mean over ranks
 * of the per-rank mean iteration time; min/max over ranks for -f. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    run_t *r;
    enum kind kind;
    size_t size;
    char place;
    unsigned char *s, *rb;
    int *counts;
} coll_t;

static double it_coll(void *vc)
{
    coll_t *c = vc;
    MPI_Comm comm = c->r->comm;
    int n = (int)c->size;
    double t0 = MPI_Wtime();
    switch (c->kind) {
    case K_BARRIER:
        MPI_Barrier(comm);
        return MPI_Wtime() - t0; /* OSU: no extra barrier between barriers */
    case K_BCAST: MPI_Bcast(c->s, n, MPI_CHAR, 0, comm); break;
    case K_REDUCE: MPI_Reduce(c->s, c->rb, n, MPI_CHAR, MPI_SUM, 0, comm); break;
    case K_ALLREDUCE: MPI_Allreduce(c->s, c->rb, n, MPI_CHAR, MPI_SUM, comm); break;
    case K_GATHER: MPI_Gather(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, 0, comm); break;
    case K_SCATTER: MPI_Scatter(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, 0, comm); break;
    case K_ALLGATHER: MPI_Allgather(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, comm); break;
    case K_ALLTOALL: MPI_Alltoall(c->s, n, MPI_CHAR, c->rb, n, MPI_CHAR, comm); break;
    case K_REDUCE_SCATTER:
        MPI_Reduce_scatter(c->s, c->rb, c->counts, MPI_CHAR, MPI_SUM, comm);
        break;
    default: break;
    }
    double t1 = MPI_Wtime();
    MPI_Barrier(comm);
    return t1 - t0;
}

/* reduction operand: small values so that the MPI_CHAR sum never overflows */
static int red_value(size_t i, long iter, int rank, int nranks)
{
    int maxv = 127 / nranks;
    return (int)((i + (size_t)iter * 3u + (size_t)rank) % (size_t)(maxv + 1));
}

static void set_counts(coll_t *c)
{
    int n = c->r->nranks;
    size_t portion = c->size / (size_t)n, rem = c->size % (size_t)n;
    for (int i = 0; i < n; i++)
        c->counts[i] = (int)(portion + ((size_t)i < rem ? 1 : 0));
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

static unsigned char *corrupt(unsigned char *v, size_t len)
{
#ifdef MPISTACK_BENCH_CORRUPT
    if (len)
        v[len / 2] ^= 0x5a;
#else
    (void)len;
#endif
    return v;
}

static long validate_size(coll_t *c, const kernel_t *k, unsigned char *stage)
{
    run_t *r = c->r;
    int rank = r->rank, np = r->nranks;
    size_t sz = c->size;
    long errors = 0;
    for (long v = 0; v < VALIDATION_ITERS; v++) {
        size_t sendlen = sz, recvlen = sz;
        /* fill send buffers */
        switch (c->kind) {
        case K_BCAST:
            if (rank == 0)
                fill_pattern(stage, sz, sz, v, 0);
            else
                memset(stage, 0, sz);
            break;
        case K_REDUCE: case K_ALLREDUCE: case K_REDUCE_SCATTER:
            for (size_t i = 0; i < sz; i++)
                stage[i] = (unsigned char)red_value(i, v, rank, np);
            break;
        case K_GATHER: case K_ALLGATHER:
            fill_pattern(stage, sz, sz, v, rank);
            recvlen = sz * (size_t)np;
            break;
        case K_SCATTER:
            sendlen = sz * (size_t)np;
            for (int q = 0; q < np; q++)
                fill_pattern(stage + (size_t)q * sz, sz, sz, v, rank == 0 ? q : -1);
            break;
        case K_ALLTOALL:
            sendlen = recvlen = sz * (size_t)np;
            for (int d = 0; d < np; d++)
                fill_pattern(stage + (size_t)d * sz, sz, sz, v, (long)rank * np + d);
            break;
        default:
            return 0;
        }
        buf_put(c->place, c->s, stage, sendlen);
        if (c->kind != K_BCAST)
            buf_set(c->place, c->rb, 0, recvlen);
        MPI_Barrier(r->comm);
        (void)k->fn(k->ctx);

        unsigned char *view;
        switch (c->kind) {
        case K_BCAST:
            view = corrupt((unsigned char *)buf_view(c->place, c->s, stage, sz), sz);
            errors += check_pattern(view, sz, sz, v, 0);
            break;
        case K_REDUCE: case K_ALLREDUCE:
            if (c->kind == K_REDUCE && rank != 0)
                break;
            view = corrupt((unsigned char *)buf_view(c->place, c->rb, stage, sz), sz);
            errors += check_reduced(view, 0, sz, v, np);
            break;
        case K_REDUCE_SCATTER: {
            size_t off = 0, len = (size_t)c->counts[rank];
            for (int q = 0; q < rank; q++)
                off += (size_t)c->counts[q];
            view = corrupt((unsigned char *)buf_view(c->place, c->rb, stage, len), len);
            errors += check_reduced(view, off, len, v, np);
            break;
        }
        case K_GATHER: case K_ALLGATHER:
            if (c->kind == K_GATHER && rank != 0)
                break;
            view = corrupt((unsigned char *)buf_view(c->place, c->rb, stage, recvlen), recvlen);
            for (int q = 0; q < np; q++)
                errors += check_pattern(view + (size_t)q * sz, sz, sz, v, q);
            break;
        case K_SCATTER:
            view = corrupt((unsigned char *)buf_view(c->place, c->rb, stage, sz), sz);
            errors += check_pattern(view, sz, sz, v, rank);
            break;
        case K_ALLTOALL:
            view = corrupt((unsigned char *)buf_view(c->place, c->rb, stage, recvlen), recvlen);
            for (int q = 0; q < np; q++)
                errors += check_pattern(view + (size_t)q * sz, sz, sz, v, (long)q * np + rank);
            break;
        default:
            break;
        }
    }
    long total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, r->comm);
    return total;
}

int run_coll(run_t *r)
{
    const opts_t *o = r->o;
    enum kind kind = r->def->kind;
    int np = r->nranks;
    coll_t c;
    memset(&c, 0, sizeof(c));
    c.r = r;
    c.kind = kind;
    c.place = o->device != DEV_NONE ? 'D' : 'H';

    size_t maxsz = o->max_size;
    int multi = kind == K_GATHER || kind == K_SCATTER || kind == K_ALLGATHER || kind == K_ALLTOALL;
    if (multi && maxsz * (size_t)np > MAX_MEM_LIMIT) {
        maxsz = MAX_MEM_LIMIT / (size_t)np;
        if (r->rank == 0)
            fprintf(stderr, "Warning! Limiting max message size to: %zu.\n", maxsz);
    }
    size_t slen = maxsz, rlen = maxsz;
    if (kind == K_SCATTER || kind == K_ALLTOALL)
        slen = maxsz * (size_t)np;
    if (kind == K_GATHER || kind == K_ALLGATHER || kind == K_ALLTOALL)
        rlen = maxsz * (size_t)np;
    if (kind == K_BARRIER)
        slen = rlen = 1;
    c.s = buf_alloc(c.place, slen, r->pagesize);
    c.rb = buf_alloc(c.place, rlen, r->pagesize);
    unsigned char *stage = buf_alloc('H', slen > rlen ? slen : rlen, r->pagesize);
    c.counts = malloc(sizeof(int) * (size_t)np);

    long cap = sample_capacity(r);
    double *dt = malloc(sizeof(double) * (size_t)cap);
    double *metric = malloc(sizeof(double) * (size_t)cap);
    double *scratch = malloc(sizeof(double) * (size_t)cap);
    double *red = malloc(sizeof(double) * (size_t)cap);
    if (!c.s || !c.rb || !stage || !c.counts || !dt || !metric || !scratch || !red)
        fatal(r, "buffer allocation failed");

    kernel_t k = {0};
    k.fn = it_coll;
    k.ctx = &c;
    k.coll = 1;

    print_header(r);
    size_t first = kind == K_BARRIER ? 0 : o->min_size;
    size_t last = kind == K_BARRIER ? 0 : maxsz;
    for (size_t size = first; size <= last && r->nres < MAX_SIZES; size = size ? size * 2 : 1) {
        long iters, warmup;
        effective_counts(r, size, &iters, &warmup);
        c.size = size;
        if (kind == K_REDUCE_SCATTER)
            set_counts(&c);
        if (kind != K_BARRIER) {
            size_t sl = (kind == K_SCATTER || kind == K_ALLTOALL) ? size * (size_t)np : size;
            size_t rl = (kind == K_GATHER || kind == K_ALLGATHER || kind == K_ALLTOALL)
                            ? size * (size_t)np : size;
            buf_set(c.place, c.s, 1, sl);
            buf_set(c.place, c.rb, 0, rl);
        }

        k.size = size;
        long n = drive_size(r, &k, iters, warmup, dt, metric, scratch, red);

        size_result_t *s = &r->res[r->nres++];
        memset(s, 0, sizeof(*s));
        s->size = size;
        s->has_size = kind != K_BARRIER;
        s->iters = n;
        s->warmup = warmup;
        s->validation = -1;
        double total = 0.0;
        for (long i = 0; i < n; i++)
            total += dt[i];
        double lat = n > 0 ? total * 1e6 / (double)n : 0.0, mn = 0, mx = 0, sum = 0;
        MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, r->comm);
        MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, r->comm);
        MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, r->comm);
        if (r->rank == 0) {
            s->values[0] = sum / np;
            s->nvalues = 1;
            s->rank_min = mn;
            s->rank_max = mx;
            s->has_rank = 1;
            compute_stats(metric, n, scratch, &s->st);
            s->has_stats = 1;
        }
        if (o->validate && kind != K_BARRIER) {
            long errs = validate_size(&c, &k, stage);
            s->validation = errs ? 1 : 0;
            if (errs)
                r->any_fail = 1;
        }
        print_row(r, s);
        MPI_Barrier(r->comm);
        if (kind == K_BARRIER)
            break;
    }

    buf_free(c.place, c.s);
    buf_free(c.place, c.rb);
    buf_free('H', stage);
    free(c.counts);
    free(dt);
    free(metric);
    free(scratch);
    free(red);
    return 0;
}
