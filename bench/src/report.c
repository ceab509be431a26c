/* Output: OSU-compatible text and the mpistack-bench/1 JSON document (one writer per section). */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef MB_BUILD_CC
#define MB_BUILD_CC "unknown"
#endif
#ifndef MB_BUILD_CFLAGS
#define MB_BUILD_CFLAGS ""
#endif
#ifdef __VERSION__
#define MB_COMPILER __VERSION__
#else
#define MB_COMPILER "unknown"
#endif
#ifdef MPISTACK_BENCH_CORRUPT
#define MB_CORRUPT 1
#else
#define MB_CORRUPT 0
#endif

static const char *accel_suffix(const options_t *o)
{
    switch (o->device) {
    case DEV_CUDA: return "-CUDA";
    case DEV_ROCM: return "-ROCM";
    default: return "";
    }
}

static const char *device_name(const options_t *o)
{
    return o->device == DEV_CUDA ? "cuda" : o->device == DEV_ROCM ? "rocm" : "none";
}

static const char *place_name(char p)
{
    return p == 'D' ? "DEVICE (D)" : p == 'M' ? "MANAGED (M)" : "HOST (H)";
}

static int shows_validation(const run_t *run)
{
    return run->opts->validate && run->bench->validate;
}

/* ---------------------------------------------------------------- OSU text */

static void print_preamble(const run_t *run, const void *state)
{
    const options_t *o = run->opts;
    const benchmark_t *b = run->bench;
    char title[160];
    format_title(b, accel_suffix(o), title, sizeof title);
    if (b->family == FAMILY_LOCAL) /* not an OSU test: its title names the suite already */
        printf("\n# %s\n", title);
    else
        printf("\n# %s (%s %s)\n", title, MB_NAME, MB_VERSION);
    if (b->reports_pairs)
        printf("# [ pairs: %d ] [ window size: %d ]\n", run->nranks / 2, o->window);
    if (b->describe)
        b->describe(state, stdout);
    if (b->has_sizes && b->family != FAMILY_LOCAL)
        printf("# Datatype: MPI_CHAR.\n");
    if (b->family == FAMILY_PT2PT && o->device != DEV_NONE)
        printf("# Send Buffer on %s and Receive Buffer on %s\n", place_name(o->src),
               place_name(o->dst));
}

void print_header(const run_t *run, const void *state)
{
    const figures_t *fig = run->bench->figures;
    if (run->rank != 0 || run->opts->format_json)
        return;
    print_preamble(run, state);
    if (!run->bench->has_sizes) {
        printf("# %s", fig->metrics[0].column);
    } else {
        printf("%-*s", 10, "# Size");
        for (int i = 0; i < fig->count; i++)
            printf("%*s", column_width(fig->metrics[i].column), fig->metrics[i].column);
    }
    if (run->opts->full)
        printf("%*s%*s%*s", column_width(fig->min_column), fig->min_column,
               column_width(fig->max_column), fig->max_column, ITER_WIDTH,
               "Iterations");
    if (shows_validation(run))
        printf("%*s", FIELD_WIDTH, "Validation");
    printf("\n");
    fflush(stdout);
}

void print_row(const run_t *run, const size_result_t *s)
{
    if (run->rank != 0 || run->opts->format_json)
        return;
    if (s->has_size) {
        printf("%-*zu", 10, s->size);
        for (int i = 0; i < s->nvalues; i++)
            printf("%*.*f", column_width(run->bench->figures->metrics[i].column), FLOAT_PRECISION,
                   s->values[i]);
    } else {
        printf("%*.*f", 17, FLOAT_PRECISION, s->values[0]);
    }
    if (run->opts->full) {
        /* collectives: OSU's min/max over ranks; point-to-point: over iterations */
        double mn = s->has_rank ? s->rank_min : s->st.min;
        double mx = s->has_rank ? s->rank_max : s->st.max;
        const figures_t *fig = run->bench->figures;
        printf("%*.*f%*.*f%*ld", column_width(fig->min_column), FLOAT_PRECISION, mn,
               column_width(fig->max_column), FLOAT_PRECISION, mx, ITER_WIDTH, s->iters);
    }
    if (shows_validation(run))
        printf("%*s", FIELD_WIDTH, s->validation == 1 ? "Fail" : "Pass");
    printf("\n");
    fflush(stdout);
}

/* ---------------------------------------------------------------- JSON sections */

static void write_tool(FILE *f)
{
    char header_version[32];
    snprintf(header_version, sizeof header_version, "%d.%d", MPI_VERSION, MPI_SUBVERSION);
    json_key(f, "tool"); fputc('{', f);
    json_key(f, "name"); json_string(f, MB_NAME); fputc(',', f);
    json_key(f, "version"); json_string(f, MB_VERSION); fputc(',', f);
    json_key(f, "build"); fputc('{', f);
    json_key(f, "compiler"); json_string(f, MB_COMPILER); fputc(',', f);
    json_key(f, "mpicc"); json_string(f, MB_BUILD_CC); fputc(',', f);
    json_key(f, "cflags"); json_string(f, MB_BUILD_CFLAGS); fputc(',', f);
    json_key(f, "mpi_header_version"); json_string(f, header_version); fputc(',', f);
    json_key(f, "cuda"); json_bool(f, device_compiled(DEV_CUDA)); fputc(',', f);
    json_key(f, "rocm"); json_bool(f, device_compiled(DEV_ROCM)); fputc(',', f);
    json_key(f, "corrupt"); json_bool(f, MB_CORRUPT);
    fputs("}}", f);
}

static void write_mpi(FILE *f, const run_t *run)
{
    const meta_t *m = run->meta;
    char version[32];
    snprintf(version, sizeof version, "%d.%d", m->mpi_major, m->mpi_minor);
    json_key(f, "mpi"); fputc('{', f);
    json_key(f, "library_version"); json_string(f, m->lib_version); fputc(',', f);
    json_key(f, "version"); json_string(f, version); fputc(',', f);
    json_key(f, "ranks"); fprintf(f, "%d,", run->nranks);
    json_key(f, "hosts"); fputc('[', f);
    for (int i = 0; i < run->nranks; i++) {
        if (i)
            fputc(',', f);
        json_string(f, m->hosts + (size_t)i * (size_t)m->hostlen);
    }
    fputs("],", f);
    json_key(f, "confinement"); fputc('[', f); /* per rank: namespaces' inodes, uid, CapEff, boot id */
    for (int i = 0; i < run->nranks; i++) {
        const confinement_t *c = &m->ranks[i];
        char caps[32];
        fputs(i ? ",{" : "{", f);
        for (int k = 0; k < NAMESPACE_COUNT; k++) {
            json_key(f, NAMESPACE_NAMES[k]);
            fprintf(f, "%llu,", c->ns[k]);
        }
        snprintf(caps, sizeof caps, "%016llx", c->cap_eff);
        json_key(f, "uid"); fprintf(f, "%lld,", c->uid);
        json_key(f, "cap_eff"); json_string(f, caps);
        if (c->boot[0]) {
            fputc(',', f);
            json_key(f, "boot_id"); json_string(f, c->boot);
        }
        fputc('}', f);
    }
    fputs("],", f);
    json_key(f, "wtick"); json_number(f, m->wtick, 9);
    if (m->fabric_version[0]) {
        fputc(',', f);
        json_key(f, "libfabric"); fputc('{', f);
        json_key(f, "version"); json_string(f, m->fabric_version); fputc(',', f);
        json_key(f, "path"); json_string(f, m->fabric_path);
        fputc('}', f);
    }
    fputc('}', f);
}

static void write_environment(FILE *f, const meta_t *m)
{
    json_key(f, "environment"); fputc('{', f);
    for (int i = 0; i < m->nenv; i++) {
        const char *e = m->env[i], *eq = strchr(e, '=');
        char key[512];
        size_t kl = eq ? (size_t)(eq - e) : strlen(e);
        if (kl >= sizeof key)
            kl = sizeof key - 1;
        memcpy(key, e, kl);
        key[kl] = 0;
        if (i)
            fputc(',', f);
        json_key(f, key);
        json_string(f, eq ? eq + 1 : "");
    }
    fputc('}', f);
}

/* "12.4" from CUDA's 1000*major + 10*minor, or from HIP's 10000000*major + 100000*minor + patch;
 * null for 0, which the runtimes report without a driver */
static void write_runtime_version(FILE *f, int device, int v)
{
    char text[32];
    if (v <= 0) {
        fputs("null", f);
        return;
    }
    if (device == DEV_ROCM)
        snprintf(text, sizeof text, "%d.%d", v / 10000000, v / 100000 % 100);
    else
        snprintf(text, sizeof text, "%d.%d", v / 1000, v % 1000 / 10);
    json_string(f, text);
}

/* the device each rank took, and what the MPI library said of device buffers (device.c) */
static void write_accelerator(FILE *f, const run_t *run)
{
    const device_info_t *d = device_info();
    const device_rank_t *r = device_ranks();
    int device = run->opts->device;
    json_key(f, "accelerator"); fputc('{', f);
    json_key(f, "api"); json_string(f, device_name(run->opts)); fputc(',', f);
    json_key(f, "name"); json_string(f, d->name); fputc(',', f);
    json_key(f, "devices_on_node"); fprintf(f, "%d,", d->count);
    json_key(f, "driver_version"); write_runtime_version(f, device, d->driver_version); fputc(',', f);
    json_key(f, "runtime_version"); write_runtime_version(f, device, d->runtime_version); fputc(',', f);
    json_key(f, "mpi_device_buffers");
    fputs(d->mpi_support < 0 ? "null" : d->mpi_support ? "true" : "false", f);
    fputc(',', f);
    json_key(f, "mpi_query"); json_string(f, d->mpi_query); fputc(',', f);
    json_key(f, "local_rank_from"); json_string(f, d->local_rank_from); fputc(',', f);
    json_key(f, "ranks"); fputc('[', f);
    for (int i = 0; r && i < run->nranks; i++) {
        if (i)
            fputc(',', f);
        fputc('{', f);
        json_key(f, "local_rank"); fprintf(f, "%d,", r[i].local_rank);
        json_key(f, "device"); fprintf(f, "%d,", r[i].index);
        json_key(f, "pci_bus_id"); json_string(f, r[i].pci_bus_id);
        fputc('}', f);
    }
    fputs("]}", f);
}

/* "stop": "ci:REL", "stop_min", "stop_max" in adaptive mode, else "stop": null */
static void write_stop_rule(FILE *f, const options_t *o)
{
    char rule[64];
    json_key(f, "stop");
    if (o->stop_ci <= 0) {
        fputs("null", f);
        return;
    }
    snprintf(rule, sizeof rule, "ci:%g", o->stop_ci);
    json_string(f, rule);
    fputc(',', f);
    json_key(f, "stop_min");
    fprintf(f, "%ld,", o->stop_min_set ? o->stop_min : (long)STOP_MIN_DEFAULT);
    json_key(f, "stop_max");
    if (o->stop_max_set)
        fprintf(f, "%ld", o->stop_max);
    else
        fputs("null", f);
}

static void write_options(FILE *f, const run_t *run)
{
    const options_t *o = run->opts;
    const benchmark_t *b = run->bench;
    char buffers[8];
    snprintf(buffers, sizeof buffers, "%c %c", o->src, o->dst);
    json_key(f, "options"); fputc('{', f);
    json_key(f, "min_size"); fprintf(f, "%zu,", run->min_size);
    json_key(f, "max_size"); fprintf(f, "%zu,", run->max_size);
    json_key(f, "iterations"); fprintf(f, "%ld,", run->small.iters);
    json_key(f, "warmup"); fprintf(f, "%ld,", run->small.warmup);
    json_key(f, "iterations_large"); fprintf(f, "%ld,", run->large.iters);
    json_key(f, "warmup_large"); fprintf(f, "%ld,", run->large.warmup);
    json_key(f, "large_message_size"); fprintf(f, "%d,", LARGE_MESSAGE_SIZE);
    json_key(f, "window"); fprintf(f, "%d,", b->windowed ? o->window : 1);
    json_key(f, "validation"); json_bool(f, o->validate); fputc(',', f);
    json_key(f, "full"); json_bool(f, o->full); fputc(',', f);
    json_key(f, "buffers");
    json_string(f, b->family == FAMILY_PT2PT ? buffers
                   : b->family != FAMILY_COLLECTIVE || !o->device ? "H" : o->managed ? "M" : "D");
    fputc(',', f);
    json_key(f, "device"); json_string(f, device_name(o)); fputc(',', f);
    write_stop_rule(f, o);
    fputc(',', f);
    json_key(f, "suite"); json_bool(f, o->suite); fputc(',', f);
    json_key(f, "command_line"); json_string(f, run->meta->cmdline);
    fputc('}', f);
}

static void write_metrics(FILE *f, const figures_t *fig)
{
    json_key(f, "metrics"); fputc('[', f);
    for (int i = 0; i < fig->count; i++) {
        if (i)
            fputc(',', f);
        fputc('{', f);
        json_key(f, "name"); json_string(f, fig->metrics[i].name); fputc(',', f);
        json_key(f, "unit"); json_string(f, fig->metrics[i].unit);
        fputc('}', f);
    }
    fputc(']', f);
}

static void write_stats(FILE *f, const stats_t *st)
{
    fputc('{', f);
    json_key(f, "mean"); json_number(f, st->mean, 9); fputc(',', f);
    json_key(f, "min"); json_number(f, st->min, 9); fputc(',', f);
    json_key(f, "median"); json_number(f, st->median, 9); fputc(',', f);
    json_key(f, "p90"); json_number(f, st->p90, 9); fputc(',', f);
    json_key(f, "p99"); json_number(f, st->p99, 9); fputc(',', f);
    json_key(f, "max"); json_number(f, st->max, 9); fputc(',', f);
    json_key(f, "stddev"); json_number(f, st->stddev, 9); fputc(',', f);
    json_key(f, "ci95_low"); json_number(f, st->ci_lo, 9); fputc(',', f);
    json_key(f, "ci95_high"); json_number(f, st->ci_hi, 9); fputc(',', f);
    json_key(f, "samples"); fprintf(f, "%ld", st->samples);
    fputc('}', f);
}

static void write_rank_extreme(FILE *f, const char *key, const size_result_t *s, double value)
{
    json_key(f, key);
    if (s->has_rank)
        json_number(f, value, 12);
    else
        fputs("null", f);
}

/* --stop-check: "stop_check": {"fixed": [...], "adaptive": [...]}, one median per block, pair by pair */
static void write_stop_check(FILE *f, const size_result_t *s)
{
    const double *arms[2] = {s->check_fixed, s->check_adaptive};
    const char *names[2] = {"fixed", "adaptive"};
    fputc(',', f);
    json_key(f, "stop_check");
    fputc('{', f);
    for (int a = 0; a < 2; a++) {
        if (a)
            fputc(',', f);
        json_key(f, names[a]);
        fputc('[', f);
        for (int k = 0; k < s->check_pairs; k++) {
            if (k)
                fputc(',', f);
            json_figure(f, arms[a][k]);
        }
        fputc(']', f);
    }
    fputc('}', f);
}

static void write_result(FILE *f, const figures_t *fig, const size_result_t *s)
{
    fputc('{', f);
    json_key(f, "size");
    if (s->has_size)
        fprintf(f, "%zu,", s->size);
    else
        fputs("null,", f);
    json_key(f, "iterations"); fprintf(f, "%ld,", s->iters);
    json_key(f, "warmup"); fprintf(f, "%ld,", s->warmup);
    json_key(f, "values"); fputc('{', f);
    for (int m = 0; m < s->nvalues; m++) {
        if (m)
            fputc(',', f);
        json_key(f, fig->metrics[m].name);
        json_figure(f, s->values[m]);
    }
    fputs("},", f);
    write_rank_extreme(f, "rank_min", s, s->rank_min);
    fputc(',', f);
    write_rank_extreme(f, "rank_max", s, s->rank_max);
    fputc(',', f);
    json_key(f, "stats");
    if (s->has_stats)
        write_stats(f, &s->st);
    else
        fputs("null", f);
    fputc(',', f);
    json_key(f, "validation");
    fputs(s->validation < 0 ? "null" : s->validation ? "\"fail\"" : "\"pass\"", f);
    if (s->check_pairs)
        write_stop_check(f, s);
    fputc('}', f);
}

/* ---------------------------------------------------------------- documents */

static int write_json(const run_t *run, const results_t *res, FILE *f)
{
    const benchmark_t *b = run->bench;
    char title[160];
    format_title(b, accel_suffix(run->opts), title, sizeof title);
    fputc('{', f);
    json_key(f, "schema"); json_string(f, "mpistack-bench/1"); fputc(',', f);
    json_key(f, "benchmark"); json_string(f, b->name); fputc(',', f);
    json_key(f, "title"); json_string(f, title); fputc(',', f);
    write_tool(f); fputc(',', f);
    write_mpi(f, run); fputc(',', f);
    write_environment(f, run->meta); fputc(',', f);
    if (run->opts->device != DEV_NONE) { /* host-only documents stay as they were */
        write_accelerator(f, run);
        fputc(',', f);
    }
    write_options(f, run); fputc(',', f);
    write_metrics(f, b->figures); fputc(',', f);
    json_key(f, "status"); json_string(f, res->any_fail ? "validation-failed" : "ok");
    fputc(',', f);
    json_key(f, "started"); json_string(f, res->started); fputc(',', f);
    json_key(f, "finished"); json_string(f, res->finished); fputc(',', f);
    json_key(f, "results"); fputc('[', f);
    for (int i = 0; i < res->nres; i++) {
        if (i)
            fputc(',', f);
        write_result(f, b->figures, &res->res[i]);
    }
    fputs("]}", f);
    return ferror(f) ? -1 : 0;
}

/* Rank 0 keeps every finished test's document (docs) and rewrites FILE after each test, so that
 * FILE always holds the whole launch so far: the document, or in suite mode an array of them,
 * one document per line (what the parser reads, src/mpistack/parsers/bench_json.py). */
static int keep_document(const run_t *run, const results_t *res, documents_t *docs)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return -1;
    int failed = write_json(run, res, m) != 0;
    failed |= fclose(m) != 0;
    const char *sep = docs->count ? ",\n" : "";
    char *joined = failed ? NULL : realloc(docs->text, docs->len + strlen(sep) + len + 1);
    if (joined) {
        docs->text = joined;
        docs->len += (size_t)sprintf(joined + docs->len, "%s%s", sep, text);
        docs->count++;
    }
    free(text);
    return joined ? 0 : -1;
}

static int write_documents(const char *path, const documents_t *docs, int suite)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, suite ? "[%s]\n" : "%s\n", docs->text);
    int failed = ferror(f);
    return fclose(f) != 0 || failed ? -1 : 0;
}

/* Rank 0: the document on stdout (--format json, one per line) and in FILE (--json).
 * Returns 0, or -1 when FILE could not be written (reported on stderr). */
int publish_json(const run_t *run, const results_t *res, documents_t *docs)
{
    const options_t *o = run->opts;
    if (run->rank != 0)
        return 0;
    if (o->format_json) {
        write_json(run, res, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    if (!o->json_path)
        return 0;
    errno = 0;
    if (keep_document(run, res, docs) == 0 && write_documents(o->json_path, docs, o->suite) == 0)
        return 0;
    fprintf(stderr, "%s: error: cannot write %s: %s\n", MB_NAME, o->json_path,
            errno ? strerror(errno) : "out of memory");
    return -1;
}

void free_documents(documents_t *docs)
{
    free(docs->text);
    memset(docs, 0, sizeof(*docs));
}
