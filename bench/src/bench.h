/* mpistack-bench: OSU-compatible MPI micro-benchmarks (shared declarations). */
#ifndef MPISTACK_BENCH_H
#define MPISTACK_BENCH_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#define MB_NAME "mpistack-bench"
#define MB_VERSION "0.1"

/* OSU 7.x constants (see docs/methodology.md) */
#define LARGE_MESSAGE_SIZE 8192
#define LAT_LOOP_SMALL 10000
#define LAT_SKIP_SMALL 100
#define LAT_LOOP_LARGE 1000
#define LAT_SKIP_LARGE 10
#define BW_LOOP_SMALL 100
#define BW_SKIP_SMALL 10
#define BW_LOOP_LARGE 20
#define BW_SKIP_LARGE 2
#define COLL_LOOP_SMALL 1000
#define COLL_SKIP_SMALL 100
#define COLL_LOOP_LARGE 100
#define COLL_SKIP_LARGE 10
#define WINDOW_SIZE 64
#define ACK_BYTES 4
#define MAX_SIZE_PT2PT (1UL << 22)
#define MAX_SIZE_COLL (1UL << 20)
#define MAX_MEM_LIMIT (512UL * 1024 * 1024)
#define FIELD_WIDTH 18
#define ITER_WIDTH 12
#define FLOAT_PRECISION 2

/* adaptive-mode defaults */
#define STOP_MIN_DEFAULT 10
#define VALIDATION_ITERS 2

#define MAX_TESTS 32
#define MAX_SIZES 64

enum family { F_LAT, F_BW, F_COLL };
enum kind {
    K_LATENCY, K_BW, K_BIBW, K_MBW_MR, K_MULTI_LAT,
    K_BARRIER, K_BCAST, K_REDUCE, K_ALLREDUCE, K_GATHER, K_SCATTER,
    K_ALLGATHER, K_ALLTOALL, K_REDUCE_SCATTER
};
enum device { DEV_NONE = 0, DEV_CUDA, DEV_ROCM };
enum ranks_rule { R_EXACT2, R_EVEN, R_ATLEAST2 };

typedef struct {
    const char *name;  /* OSU name without osu_ */
    const char *title; /* contains %s where OSU puts -CUDA/-ROCM, or none */
    enum kind kind;
    enum family family;
    enum ranks_rule ranks;
    int pt2pt;
} testdef_t;

typedef struct {
    size_t min_size, max_size;
    int min_set, max_set;
    long iters, warmup; /* -i / -x (apply to small and large sizes, as OSU) */
    int iters_set, warmup_set;
    int window;
    int full, validate;
    char src, dst; /* 'H', 'D', 'M' */
    int device;
    const char *json_path;
    int format_json;
    double stop_ci; /* 0: adaptive mode off */
    long stop_min, stop_max;
    int stop_min_set, stop_max_set;
    const testdef_t *tests[MAX_TESTS];
    int ntests;
    int suite;
    char *argv_line; /* for JSON options */
} opts_t;

typedef struct {
    double mean, min, median, p90, p99, max, stddev, ci_lo, ci_hi;
    long samples;
} stats_t;

typedef struct {
    size_t size;
    int has_size;
    long iters, warmup;
    double values[2];
    int nvalues;
    double rank_min, rank_max;
    int has_rank;
    stats_t st;
    int has_stats;
    int validation; /* -1: not run, 0: pass, 1: fail */
} size_result_t;

typedef struct {
    const testdef_t *def;
    const opts_t *o;
    MPI_Comm comm;
    int rank, nranks;
    size_t pagesize;
    /* results */
    size_result_t res[MAX_SIZES];
    int nres;
    int any_fail;
    char started[32], finished[32];
} run_t;

typedef struct {
    char lib_version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int mpi_major, mpi_minor;
    char *hosts;     /* rank 0: nranks names of MPI_MAX_PROCESSOR_NAME+1 bytes */
    int hostlen;
    double wtick;
    char **env;      /* rank 0: FI_*, UCX_*, MPIR_CVAR_*, OMPI_MCA_*, PMIX_* entries */
    int nenv;
    char *cmdline;
} meta_t;

/* main.c */
extern meta_t META;
extern const testdef_t TESTS[];
extern const int NTESTS;
void effective_counts(const run_t *r, size_t size, long *iters, long *warmup);
long sample_capacity(const run_t *r);

/* stats.c */
int cmp_double(const void *a, const void *b);
void median_ci_ranks(long n, long *lo, long *hi);
void compute_stats(const double *x, long n, double *scratch, stats_t *st);
int ci_converged(const double *x, long n, double *scratch, double rel);

/* buffers.c */
void *buf_alloc(char place, size_t size, size_t align);
void buf_free(char place, void *p);
void buf_set(char place, void *p, int byte, size_t n);
void buf_put(char place, void *dst, const void *host, size_t n);
const unsigned char *buf_view(char place, const void *p, void *stage, size_t n);
unsigned char pattern_byte(size_t i, size_t size, long iter, long seed);
void fill_pattern(unsigned char *h, size_t n, size_t size, long iter, long seed);
long check_pattern(const unsigned char *h, size_t n, size_t size, long iter, long seed);
int device_init(int device, char *err, size_t errlen);
void device_finalize(int device);
int device_compiled(int device);

/* pt2pt.c / coll.c */
int run_pt2pt(run_t *r);
int run_coll(run_t *r);

/* report.c */
void print_header(const run_t *r);
void print_row(const run_t *r, const size_result_t *s);
int write_json(const run_t *r, FILE *f);
const char *metric_name(const testdef_t *d, int i);
int metric_count(const testdef_t *d);

/* common driver (driver.c) */
typedef struct {
    double (*fn)(void *ctx);                  /* one iteration; returns its timed seconds */
    void *ctx;
    int coll;                                 /* sample = mean over ranks of the iteration time */
    double (*to_metric)(void *ctx, double dt); /* point-to-point: seconds -> primary metric */
    size_t size;                              /* message size of the current run */
} kernel_t;
long drive_size(run_t *r, const kernel_t *k, long nfixed, long warmup, double *dt,
                double *metric, double *scratch, double *red);
void now_iso(char *buf, size_t n);
void fatal(run_t *r, const char *msg);

#endif
