/* mpistack-bench: OSU-compatible MPI micro-benchmarks (shared declarations).
 *
 * A benchmark is a descriptor (benchmark_t) exported by its kernel file (pt2pt.c, coll.c): what it
 * is (name, title, family, rank rule, figures) and how to run one iteration (setup, prepare,
 * iterate, validate, teardown). The harness (harness.c, measure.c) runs any descriptor: sizes,
 * iteration counts, timing, statistics, validation; report.c prints what it measured. */
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
#define ACK_BYTES 1 /* bw and mbw_mr: 1 x MPI_CHAR back per window, as OSU 7.4 (osu_bw.c, osu_mbw_mr.c) */
#define MAX_SIZE_PT2PT (1UL << 22)
#define MAX_SIZE_COLL (1UL << 20)
#define MAX_MEM_LIMIT (512UL * 1024 * 1024)
#define FIELD_WIDTH 18
#define ITER_WIDTH 12
#define FLOAT_PRECISION 2

/* adaptive-mode defaults */
#define STOP_CHECK_MAX 64 /* --stop-check pairs */
#define STOP_MIN_DEFAULT 6 /* the fewest samples with a 95% CI of the median, [x(1), x(6)] */
#define VALIDATION_ITERS 2

#define MAX_TESTS 32
#define MAX_SIZES 64
#define MAX_FIGURES 2

enum device { DEV_NONE = 0, DEV_CUDA, DEV_ROCM };

/* ---------------------------------------------------------------- descriptors */

/* Point-to-point: timed on rank 0, the kernel turns the time into its figures.
 * Collective: timed on every rank, the figure is the mean over ranks of the per-rank latency.
 * Local: no communication, rank 0 alone measures (memcpy: the machine's bound); as point-to-point
 * for the harness, but host buffers only. */
enum family { FAMILY_PT2PT, FAMILY_COLLECTIVE, FAMILY_LOCAL };

/* which of OSU's iteration counts apply (LAT_*, BW_*, COLL_*) */
enum count_class { COUNTS_LATENCY, COUNTS_BANDWIDTH, COUNTS_COLLECTIVE };

enum rank_rule { RANKS_EXACTLY, RANKS_EVEN, RANKS_AT_LEAST };

typedef struct {
    enum rank_rule rule;
    int count; /* exactly count; even and at least count; at least count */
} ranks_t;

typedef struct {
    const char *name;   /* JSON name: latency, bandwidth, message_rate */
    const char *unit;   /* us, MB/s, messages/s */
    const char *column; /* OSU column header */
} metric_t;

/* What a row reports: OSU's figures, and the column headers -f adds. */
typedef struct {
    int count;
    metric_t metrics[MAX_FIGURES];
    const char *min_column, *max_column;
} figures_t;

extern const figures_t LATENCY_FIGURES, BANDWIDTH_FIGURES, MESSAGE_RATE_FIGURES;

/* width of a figure's column: OSU's FIELD_WIDTH, wider where the header would touch its neighbour */
int column_width(const char *column);

typedef struct run run_t;

typedef struct benchmark {
    const char *name;  /* OSU name without osu_ */
    const char *title; /* contains %s where OSU puts -CUDA/-ROCM */
    enum family family;
    enum count_class counts;
    const figures_t *figures;
    ranks_t ranks;
    int has_sizes;     /* 0: one row without a size (barrier) */
    int windowed;      /* -W messages in flight per iteration */
    int reports_pairs; /* OSU prints "# [ pairs: N ] [ window size: W ]" (mbw_mr) */
    const void *params; /* the kernel's own parameters, read only by its functions */

    /* Buffers for sizes up to *max_size; may lower *max_size (collectives' memory limit).
     * Returns the kernel state, NULL when out of memory. */
    void *(*setup)(const run_t *run, size_t *max_size);
    void (*prepare)(void *state, size_t size); /* before the iterations of a size */
    double (*iterate)(void *state);            /* one iteration; its timed seconds */
    /* optional: after the index-th timed iteration (not warm-ups), keeps what else it measured */
    void (*keep)(void *state, long index);
    /* point-to-point and local: one iteration's primary figure, and the figures of a size */
    double (*sample)(void *state, double seconds);
    int (*summarize)(void *state, long iterations, double total_seconds, double *values);
    long (*validate)(void *state); /* this rank's errors in an untimed pass; NULL: none to check */
    void (*teardown)(void *state);
    void (*describe)(const void *state, FILE *f); /* optional: lines under the title */
} benchmark_t;

extern const benchmark_t PT2PT_BENCHMARKS[];
extern const int PT2PT_BENCHMARK_COUNT;
extern const benchmark_t COLLECTIVE_BENCHMARKS[];
extern const int COLLECTIVE_BENCHMARK_COUNT;
extern const benchmark_t LOCAL_BENCHMARKS[];
extern const int LOCAL_BENCHMARK_COUNT;

/* ---------------------------------------------------------------- options, run, results */

typedef struct {
    size_t min_size, max_size;
    int min_set, max_set;
    long iters, warmup; /* -i / -x (apply to small and large sizes, as OSU) */
    int iters_set, warmup_set;
    int window;
    int full, validate;
    char src, dst; /* 'H', 'D', 'M' */
    int device;
    int managed; /* -d managed: CUDA managed memory (collectives; M M by default point-to-point) */
    const char *json_path;
    int format_json;
    double stop_ci; /* 0: adaptive mode off */
    long stop_min, stop_max;
    int stop_min_set, stop_max_set;
    long stop_check; /* > 0: pairs of fixed-count and adaptive blocks per size, in one launch */
    const benchmark_t *tests[MAX_TESTS];
    int ntests;
    int suite;
    int check_only; /* --check: validate the command line and exit, without MPI */
} options_t;

/* one rank's namespaces, uid and effective capabilities (confinement.c) */
#define NAMESPACE_COUNT 5
extern const char *const NAMESPACE_NAMES[NAMESPACE_COUNT]; /* user, ipc, pid, mnt, net */
typedef struct {
    unsigned long long ns[NAMESPACE_COUNT]; /* inode of /proc/self/ns/NAME; 0 when unreadable */
    long long uid;
    unsigned long long cap_eff;
    char host[256];
    char boot[40]; /* the kernel's boot id: ranks with one boot id share one kernel, whatever their host names */
} confinement_t;

void read_confinement(confinement_t *c);
void say_confinement(const confinement_t *c); /* on stderr, when MPISTACK_CONFINEMENT is set */

typedef struct {
    char lib_version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int mpi_major, mpi_minor;
    char *hosts; /* rank 0: nranks names of hostlen bytes */
    int hostlen;
    double wtick;
    char **env;  /* rank 0: FI_*, UCX_*, MPIR_CVAR_*, OMPI_MCA_*, PMIX_* entries */
    int nenv;
    char *cmdline;
    char fabric_version[32]; /* fi_version() of the libfabric this process loaded; "" without one */
    char fabric_path[512];   /* the file it was loaded from */
    confinement_t self;      /* this rank's, read before MPI_Init */
    confinement_t *ranks;    /* rank 0: every rank's */
} meta_t;

typedef struct {
    long iters, warmup;
} counts_t;

/* One benchmark in one launch: what the harness, the kernel and the report read. */
struct run {
    const benchmark_t *bench;
    const options_t *opts;
    const meta_t *meta;
    MPI_Comm comm;
    int rank, nranks;
    size_t pagesize;
    size_t min_size, max_size; /* requested range; 0, 0 without sizes */
    counts_t small, large;     /* sizes <= LARGE_MESSAGE_SIZE, larger ones */
};

typedef struct {
    double mean, min, median, p90, p99, max, stddev, ci_lo, ci_hi;
    long samples;
} stats_t;

typedef struct {
    size_t size;
    int has_size;
    long iters, warmup;
    double values[MAX_FIGURES];
    int nvalues;
    double rank_min, rank_max;
    int has_rank;
    stats_t st;
    int has_stats;
    int validation; /* -1: not run, 0: pass, 1: fail */
    int check_pairs;               /* --stop-check: the blocks' medians, fixed and adaptive */
    double check_fixed[STOP_CHECK_MAX], check_adaptive[STOP_CHECK_MAX];
} size_result_t;

typedef struct {
    size_result_t res[MAX_SIZES];
    int nres;
    int any_fail;
    char started[32], finished[32];
} results_t;

/* Rank 0: the result documents of the tests finished so far (JSON text, separated by ",\n"). */
typedef struct {
    char *text;
    size_t len;
    int count;
} documents_t;

/* Per-iteration arrays of one size, allocated once per run with the largest count it may take. */
typedef struct {
    double *seconds;  /* this rank's timed seconds of each iteration */
    double *metric;   /* rank 0: the primary figure of each iteration */
    double *scratch;  /* sorting space */
    double *rank_sum; /* collectives, rank 0: seconds summed over ranks */
} samples_t;

/* ---------------------------------------------------------------- functions, by file */

/* options.c: command line */
enum parse_result {
    PARSE_OK, PARSE_HELP, PARSE_VERSION, PARSE_LIST, /* --check: PARSE_OK with o->check_only */
    PARSE_USAGE_ERROR, /* message, then the usage */
    PARSE_ERROR        /* message only */
};
enum parse_result parse_options(int argc, char **argv, options_t *o, char *error, size_t errlen);
void usage(FILE *f);

/* catalog.c: every benchmark, rank rules, --list */
const benchmark_t *find_benchmark(const char *name);
void format_title(const benchmark_t *b, const char *suffix, char *buf, size_t n);
int ranks_allowed(const benchmark_t *b, int nranks, char *msg, size_t len);
int write_benchmark_list(FILE *f);

/* meta.c: what the JSON document records about the launch */
void collect_meta(meta_t *m, MPI_Comm comm, int argc, char **argv, const confinement_t *self);

/* harness.c: one benchmark over its sizes */
void init_run(run_t *run, const benchmark_t *b, const options_t *o, const meta_t *m, MPI_Comm comm);
void run_benchmark(const run_t *run, results_t *out);
long sample_capacity(const run_t *run);
void fatal(int rank, const char *msg);

/* measure.c: one size (warm-up, timed iterations, adaptive stop) */
long measure_size(const run_t *run, void *state, size_t size, const counts_t *counts, samples_t *s);

/* stats.c */
int cmp_double(const void *a, const void *b);
void median_ci_ranks(long n, long *lo, long *hi);
void compute_stats(const double *x, long n, double *scratch, stats_t *st);
int ci_converged(const double *x, long n, double *scratch, double rel);

/* buffers.c: buffer placement, validation patterns */
void *buf_alloc(char place, size_t size, size_t align);
void buf_free(char place, void *p);
void buf_set(char place, void *p, int byte, size_t n);
void buf_put(char place, void *dst, const void *host, size_t n);
const unsigned char *buf_view(char place, const void *p, void *stage, size_t n);
unsigned char pattern_byte(size_t i, size_t size, long iter, long seed);
void fill_pattern(unsigned char *h, size_t n, size_t size, long iter, long seed);
long check_pattern(const unsigned char *h, size_t n, size_t size, long iter, long seed);
unsigned char *corrupt_in_test_build(unsigned char *received, size_t n);

/* device.c: the accelerator (CUDA or ROCm builds only): device per local rank, what it is, and
 * whether the MPI library says it takes device buffers */
typedef struct {
    int local_rank;           /* this rank's index on its node */
    char local_rank_from[32]; /* MPI_Comm_split_type, or the launcher variable it came from */
    int index, count;         /* the device taken, of count on the node */
    char name[256];
    char pci_bus_id[32];
    int driver_version, runtime_version; /* as the runtime encodes them (CUDA: 1000*major + 10*minor) */
    int mpi_support;          /* the MPI library takes device buffers: 1, 0, or -1 when it cannot say */
    char mpi_query[40];       /* the call that answered */
} device_info_t;

typedef struct {
    int local_rank, index;
    char pci_bus_id[32];
} device_rank_t;

int device_compiled(int device);
int device_init(int device, MPI_Comm comm, char *err, size_t errlen); /* collective with a device */
int device_active(void);
const device_info_t *device_info(void);
const device_rank_t *device_ranks(void); /* rank 0: one per rank; NULL without a device */
void device_finalize(int device);

/* json.c: JSON writing */
void json_string(FILE *f, const char *s);
void json_key(FILE *f, const char *k);
void json_number(FILE *f, double x, int digits);
void json_figure(FILE *f, double x);
void json_bool(FILE *f, int b);

/* report.c: OSU text and the result document */
void print_header(const run_t *run, const void *state);
void print_row(const run_t *run, const size_result_t *s);
int publish_json(const run_t *run, const results_t *res, documents_t *docs);
void free_documents(documents_t *docs);

#endif
