/* memcpy: the single-core copy bandwidth that bounds intra-node MPI bandwidth (Hoefler and Belli,
 * SC15, rule 11: show upper performance bounds). Rank 0 measures; the other ranks take no part
 * (each iteration returns at once on them) and wait in the harness' barrier before the next size.
 *
 * One timed iteration is two batches of copies of one size, each timed with MPI_Wtime:
 *   in cache:    the same source and destination copied again and again (warm);
 *   from memory: each copy at the next cache-line-aligned offset of a source and a destination
 *                region that together span several times the last-level cache, so the data of
 *                every copy was evicted since the walk last touched it and comes from DRAM.
 * A batch copies at least BATCH_BYTES (at least one copy) so that short copies are timed over
 * many calls. The figures of a size are the medians over the timed batches, in MB/s (1e6 B/s). */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define BATCH_BYTES (256UL * 1024)
#define CACHE_LINE 64
#define REGION_DEFAULT (256UL * 1024 * 1024) /* last-level cache size unknown */
#define REGION_MIN (64UL * 1024 * 1024)
#define LLC_FACTOR 2 /* each region is twice the LLC: one walk through both moves 4x the LLC */

typedef struct {
    const run_t *run;
    size_t size, stride, reps;
    unsigned char *src, *dst;          /* in cache: max_size bytes each */
    unsigned char *far_src, *far_dst;  /* from memory: region bytes each */
    size_t region, llc, cursor;
    double cache_seconds, memory_seconds; /* the last iteration's batches */
    double *cache_bw, *memory_bw;         /* MB/s of each timed iteration */
    double *scratch;
    long capacity;
} copy_t;

/* the compiler must not drop or merge copies whose result is never read */
static inline void keep_copy(void *dst)
{
    __asm__ __volatile__("" : : "r"(dst) : "memory");
}

/* Size in bytes of the highest-level data or unified cache of cpu0, 0 when sysfs does not say. */
static size_t last_level_cache(void)
{
    size_t best = 0;
    int best_level = 0;
    char path[96], text[32];
    for (int i = 0; i < 16; i++) {
        int level = 0;
        unsigned long value = 0;
        char unit = 0, type[16] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (ok && (f = fopen(path, "r"))) {
            ok = fscanf(f, "%15s", type) == 1;
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (ok && (f = fopen(path, "r"))) {
            ok = fgets(text, sizeof text, f) != NULL && sscanf(text, "%lu%c", &value, &unit) >= 1;
            fclose(f);
        }
        if (!ok || strcmp(type, "Instruction") == 0)
            continue;
        size_t bytes = unit == 'K' ? value << 10 : unit == 'M' ? value << 20 : unit == 'G' ? value << 30
                                                                                         : value;
        if (level > best_level || (level == best_level && bytes > best)) {
            best_level = level;
            best = bytes;
        }
    }
    return best;
}

static size_t region_size(size_t llc, size_t max_size)
{
    size_t region = llc ? LLC_FACTOR * llc : REGION_DEFAULT;
    if (region < REGION_MIN)
        region = REGION_MIN;
    if (region < 4 * max_size)
        region = 4 * max_size;
    return region;
}

/* ---------------------------------------------------------------- iterations */

static double median_of(const double *x, long n, double *scratch)
{
    if (n <= 0)
        return 0.0;
    memcpy(scratch, x, (size_t)n * sizeof(double));
    qsort(scratch, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

static double megabytes_per_second(const copy_t *c, double seconds)
{
    return seconds > 0.0 ? (double)c->size * (double)c->reps / 1e6 / seconds : 0.0;
}

static double copy_in_cache(copy_t *c)
{
    double t0 = MPI_Wtime();
    for (size_t r = 0; r < c->reps; r++) {
        memcpy(c->dst, c->src, c->size);
        keep_copy(c->dst);
    }
    return MPI_Wtime() - t0;
}

static double copy_from_memory(copy_t *c)
{
    size_t at = c->cursor;
    double t0 = MPI_Wtime();
    for (size_t r = 0; r < c->reps; r++) {
        if (at + c->size > c->region)
            at = 0;
        memcpy(c->far_dst + at, c->far_src + at, c->size);
        keep_copy(c->far_dst + at);
        at += c->stride;
    }
    double seconds = MPI_Wtime() - t0;
    c->cursor = at; /* the next batch goes on where this one stopped */
    return seconds;
}

/* both batches; returns the in-cache one's seconds (the primary figure's) */
static double iterate(void *vc)
{
    copy_t *c = vc;
    if (c->run->rank != 0)
        return 0.0;
    c->cache_seconds = copy_in_cache(c);
    c->memory_seconds = copy_from_memory(c);
    return c->cache_seconds;
}

static void keep(void *vc, long index)
{
    copy_t *c = vc;
    if (c->run->rank != 0 || index >= c->capacity)
        return;
    c->cache_bw[index] = megabytes_per_second(c, c->cache_seconds);
    c->memory_bw[index] = megabytes_per_second(c, c->memory_seconds);
}

static double sample(void *vc, double seconds)
{
    return megabytes_per_second(vc, seconds);
}

static int summarize(void *vc, long n, double total_seconds, double *values)
{
    copy_t *c = vc;
    if (n > c->capacity)
        n = c->capacity;
    values[0] = median_of(c->cache_bw, n, c->scratch);
    values[1] = median_of(c->memory_bw, n, c->scratch);
    return 2;
}

/* ---------------------------------------------------------------- buffers */

static void teardown(void *vc)
{
    copy_t *c = vc;
    free(c->src);
    free(c->dst);
    free(c->far_src);
    free(c->far_dst);
    free(c->cache_bw);
    free(c->memory_bw);
    free(c->scratch);
    free(c);
}

static void *setup(const run_t *run, size_t *max_size)
{
    copy_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->run = run;
    if (run->rank != 0)
        return c; /* rank 0 alone copies */
    c->llc = last_level_cache();
    c->region = region_size(c->llc, *max_size);
    c->capacity = sample_capacity(run);
    c->src = buf_alloc('H', *max_size, run->pagesize);
    c->dst = buf_alloc('H', *max_size, run->pagesize);
    c->far_src = buf_alloc('H', c->region, run->pagesize);
    c->far_dst = buf_alloc('H', c->region, run->pagesize);
    size_t bytes = sizeof(double) * (size_t)c->capacity;
    c->cache_bw = malloc(bytes);
    c->memory_bw = malloc(bytes);
    c->scratch = malloc(bytes);
    if (!c->src || !c->dst || !c->far_src || !c->far_dst || !c->cache_bw || !c->memory_bw ||
        !c->scratch) {
        teardown(c);
        return NULL;
    }
    /* touch every page now: no page fault is timed */
    memset(c->src, 'a', *max_size);
    memset(c->dst, 'b', *max_size);
    memset(c->far_src, 'a', c->region);
    memset(c->far_dst, 'b', c->region);
    return c;
}

static void prepare(void *vc, size_t size)
{
    copy_t *c = vc;
    c->size = size;
    c->stride = (size + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
    c->reps = size >= BATCH_BYTES ? 1 : (BATCH_BYTES + size - 1) / size;
    c->cursor = 0;
}

/* the copy is exact: a pattern copied in cache and at the walk's position arrives unchanged */
static long validate(void *vc)
{
    copy_t *c = vc;
    long errors = 0;
    if (c->run->rank != 0)
        return 0;
    size_t at = c->cursor + c->size > c->region ? 0 : c->cursor;
    for (long v = 0; v < VALIDATION_ITERS; v++) {
        fill_pattern(c->src, c->size, c->size, v, 0);
        fill_pattern(c->far_src + at, c->size, c->size, v, 0);
        memset(c->dst, 0, c->size);
        memset(c->far_dst + at, 0, c->size);
        memcpy(c->dst, c->src, c->size);
        memcpy(c->far_dst + at, c->far_src + at, c->size);
        keep_copy(c->dst);
        keep_copy(c->far_dst + at);
        errors += check_pattern(corrupt_in_test_build(c->dst, c->size), c->size, c->size, v, 0);
        errors += check_pattern(c->far_dst + at, c->size, c->size, v, 0);
    }
    return errors;
}

/* the lines under the title: where the from-memory copies come from */
static void describe(const void *vc, FILE *f)
{
    const copy_t *c = vc;
    if (c->llc)
        fprintf(f, "# From memory: copies walk 2 x %zu MiB (last-level cache %zu KiB)\n",
                c->region >> 20, c->llc >> 10);
    else
        fprintf(f, "# From memory: copies walk 2 x %zu MiB (last-level cache size unknown)\n",
                c->region >> 20);
}

static const figures_t MEMCPY_FIGURES = {
    2, {{"in_cache", "MB/s", "In-cache (MB/s)"}, {"from_memory", "MB/s", "From-memory (MB/s)"}},
    "Min In-cache (MB/s)", "Max In-cache (MB/s)"};

const benchmark_t LOCAL_BENCHMARKS[] = {
    {.name = "memcpy", .title = "mpistack-bench memcpy",
     .family = FAMILY_LOCAL, .counts = COUNTS_BANDWIDTH, .figures = &MEMCPY_FIGURES,
     .ranks = {RANKS_AT_LEAST, 1}, .has_sizes = 1,
     .setup = setup, .prepare = prepare, .iterate = iterate, .keep = keep, .validate = validate,
     .teardown = teardown, .sample = sample, .summarize = summarize, .describe = describe},
};
const int LOCAL_BENCHMARK_COUNT = (int)(sizeof LOCAL_BENCHMARKS / sizeof LOCAL_BENCHMARKS[0]);
