/* Point-to-point tests: latency, bw, bibw, mbw_mr, multi_lat (OSU 7.x method). */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    run_t *r;
    enum kind kind;
    size_t size;
    int window, pairs;
    int role; /* 0: initiator (timed), 1: responder */
    int peer;
    char place;
    unsigned char *s, *rb;
    MPI_Request *req;
    MPI_Status *stat; /* array: MPICH's MPI_STATUSES_IGNORE upsets gcc -Wstringop-overflow */
} p2p_t;

/* ---- one iteration of each kernel; returns the timed seconds ---- */

static double it_latency(void *vc)
{
    p2p_t *c = vc;
    if (c->role == 0) {
        double t0 = MPI_Wtime();
        MPI_Send(c->s, (int)c->size, MPI_CHAR, c->peer, 1, c->r->comm);
        MPI_Recv(c->rb, (int)c->size, MPI_CHAR, c->peer, 1, c->r->comm, MPI_STATUS_IGNORE);
        return MPI_Wtime() - t0;
    }
    MPI_Recv(c->rb, (int)c->size, MPI_CHAR, c->peer, 1, c->r->comm, MPI_STATUS_IGNORE);
    MPI_Send(c->s, (int)c->size, MPI_CHAR, c->peer, 1, c->r->comm);
    return 0.0;
}

static double it_multi_lat(void *vc)
{
    p2p_t *c = vc;
    MPI_Barrier(c->r->comm); /* untimed, as OSU 7.x */
    return it_latency(vc);
}

static double it_bw(void *vc)
{
    p2p_t *c = vc;
    int w = c->window;
    if (c->role == 0) {
        double t0 = MPI_Wtime();
        for (int j = 0; j < w; j++)
            MPI_Isend(c->s, (int)c->size, MPI_CHAR, c->peer, 100, c->r->comm, &c->req[j]);
        MPI_Waitall(w, c->req, c->stat);
        MPI_Recv(c->rb, ACK_BYTES, MPI_CHAR, c->peer, 101, c->r->comm, MPI_STATUS_IGNORE);
        return MPI_Wtime() - t0;
    }
    for (int j = 0; j < w; j++)
        MPI_Irecv(c->rb, (int)c->size, MPI_CHAR, c->peer, 100, c->r->comm, &c->req[j]);
    MPI_Waitall(w, c->req, c->stat);
    MPI_Send(c->s, ACK_BYTES, MPI_CHAR, c->peer, 101, c->r->comm);
    return 0.0;
}

static double it_mbw_mr(void *vc)
{
    p2p_t *c = vc;
    MPI_Barrier(c->r->comm); /* untimed, as OSU 7.x */
    return it_bw(vc);
}

static double it_bibw(void *vc)
{
    p2p_t *c = vc;
    int w = c->window;
    MPI_Request *rr = c->req, *sr = c->req + w;
    double t0 = MPI_Wtime();
    int rtag = c->role == 0 ? 10 : 100, stag = c->role == 0 ? 100 : 10;
    for (int j = 0; j < w; j++)
        MPI_Irecv(c->rb, (int)c->size, MPI_CHAR, c->peer, rtag, c->r->comm, &rr[j]);
    for (int j = 0; j < w; j++)
        MPI_Isend(c->s, (int)c->size, MPI_CHAR, c->peer, stag, c->r->comm, &sr[j]);
    if (c->role == 0) {
        MPI_Waitall(w, sr, c->stat);
        MPI_Waitall(w, rr, c->stat);
        return MPI_Wtime() - t0;
    }
    MPI_Waitall(w, rr, c->stat);
    MPI_Waitall(w, sr, c->stat);
    return 0.0;
}

/* ---- per-iteration primary metric ---- */

static double m_latency(void *vc, double dt)
{
    (void)vc;
    return dt * 1e6 / 2.0;
}

static double m_bw(void *vc, double dt)
{
    p2p_t *c = vc;
    double bytes = (double)c->size * c->window;
    if (c->kind == K_BIBW)
        bytes *= 2.0;
    if (c->kind == K_MBW_MR)
        bytes *= c->pairs;
    return dt > 0.0 ? bytes / 1e6 / dt : 0.0;
}

/* ---- validation pass (untimed, after the timed iterations of a size) ---- */

static long validate_size(p2p_t *c, const kernel_t *k, unsigned char *stage)
{
    run_t *r = c->r;
    long errors = 0;
    /* who checks its receive buffer: everyone that received whole messages */
    int checks = 1;
    if ((c->kind == K_BW || c->kind == K_MBW_MR) && c->role == 0)
        checks = 0; /* initiator only receives the acknowledgement */
    for (long v = 0; v < VALIDATION_ITERS; v++) {
        fill_pattern(stage, c->size, c->size, v, r->rank);
        buf_put(c->place, c->s, stage, c->size);
        buf_set(c->place, c->rb, 0, c->size);
        MPI_Barrier(r->comm);
        (void)k->fn(k->ctx);
        if (checks) {
            unsigned char *view = (unsigned char *)buf_view(c->place, c->rb, stage, c->size);
#ifdef MPISTACK_BENCH_CORRUPT
            view[c->size / 2] ^= 0x5a;
#endif
            errors += check_pattern(view, c->size, c->size, v, c->peer);
        }
    }
    long total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, r->comm);
    return total;
}

int run_pt2pt(run_t *r)
{
    const opts_t *o = r->o;
    enum kind kind = r->def->kind;
    p2p_t c;
    memset(&c, 0, sizeof(c));
    c.r = r;
    c.kind = kind;
    c.window = (kind == K_BW || kind == K_BIBW || kind == K_MBW_MR) ? o->window : 1;
    c.pairs = r->nranks / 2;
    if (r->rank < c.pairs) {
        c.role = 0;
        c.peer = r->rank + c.pairs;
        c.place = o->src;
    } else {
        c.role = 1;
        c.peer = r->rank - c.pairs;
        c.place = o->dst;
    }

    size_t bytes = o->max_size > ACK_BYTES ? o->max_size : ACK_BYTES;
    c.s = buf_alloc(c.place, bytes, r->pagesize);
    c.rb = buf_alloc(c.place, bytes, r->pagesize);
    unsigned char *stage = buf_alloc('H', bytes, r->pagesize);
    c.req = malloc(sizeof(MPI_Request) * 2 * (size_t)c.window);
    c.stat = malloc(sizeof(MPI_Status) * 2 * (size_t)c.window);

    long cap = sample_capacity(r);
    double *dt = malloc(sizeof(double) * (size_t)cap);
    double *metric = malloc(sizeof(double) * (size_t)cap);
    double *scratch = malloc(sizeof(double) * (size_t)cap);
    if (!c.s || !c.rb || !stage || !c.req || !c.stat || !dt || !metric || !scratch)
        fatal(r, "buffer allocation failed");

    kernel_t k = {0};
    k.ctx = &c;
    k.coll = 0;
    switch (kind) {
    case K_LATENCY: k.fn = it_latency; k.to_metric = m_latency; break;
    case K_MULTI_LAT: k.fn = it_multi_lat; k.to_metric = m_latency; break;
    case K_BW: k.fn = it_bw; k.to_metric = m_bw; break;
    case K_BIBW: k.fn = it_bibw; k.to_metric = m_bw; break;
    case K_MBW_MR: k.fn = it_mbw_mr; k.to_metric = m_bw; break;
    default: fatal(r, "not a point-to-point test");
    }

    print_header(r);
    for (size_t size = o->min_size; size <= o->max_size && r->nres < MAX_SIZES; size *= 2) {
        long iters, warmup;
        effective_counts(r, size, &iters, &warmup);
        c.size = size;
        buf_set(c.place, c.s, 'a', size);
        buf_set(c.place, c.rb, 'b', size);

        k.size = size;
        long n = drive_size(r, &k, iters, warmup, dt, metric, scratch, NULL);

        size_result_t *s = &r->res[r->nres++];
        memset(s, 0, sizeof(*s));
        s->size = size;
        s->has_size = 1;
        s->iters = n;
        s->warmup = warmup;
        s->validation = -1;
        if (r->rank == 0) {
            double total = 0.0;
            for (long i = 0; i < n; i++)
                total += dt[i];
            if (kind == K_LATENCY || kind == K_MULTI_LAT) {
                s->values[0] = total * 1e6 / (2.0 * n);
                s->nvalues = 1;
            } else {
                double mb = (double)size / 1e6 * (double)n * c.window;
                if (kind == K_BIBW)
                    mb *= 2.0;
                if (kind == K_MBW_MR)
                    mb *= c.pairs;
                s->values[0] = total > 0.0 ? mb / total : 0.0;
                s->nvalues = 1;
                if (kind == K_MBW_MR) {
                    s->values[1] = s->values[0] * 1e6 / (double)size;
                    s->nvalues = 2;
                }
            }
            compute_stats(metric, n, scratch, &s->st);
            s->has_stats = 1;
        }
        if (o->validate) {
            long errs = validate_size(&c, &k, stage);
            s->validation = errs ? 1 : 0;
            if (errs)
                r->any_fail = 1;
        }
        print_row(r, s);
        if (size > ((size_t)-1) / 2)
            break;
    }

    buf_free(c.place, c.s);
    buf_free(c.place, c.rb);
    buf_free('H', stage);
    free(c.req);
    free(c.stat);
    free(dt);
    free(metric);
    free(scratch);
    return 0;
}
