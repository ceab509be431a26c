/* Output: OSU-compatible text and the mpistack-bench/1 JSON document. */
#include "bench.h"

#include <math.h>
#include <string.h>

#ifndef MB_BUILD_CC
#define MB_BUILD_CC "unknown"
#endif
#ifndef MB_BUILD_CFLAGS
#define MB_BUILD_CFLAGS ""
#endif

static int is_lat(const testdef_t *d)
{
    return d->kind == K_LATENCY || d->kind == K_MULTI_LAT || d->family == F_COLL;
}

int metric_count(const testdef_t *d)
{
    return d->kind == K_MBW_MR ? 2 : 1;
}

const char *metric_name(const testdef_t *d, int i)
{
    if (is_lat(d))
        return "latency";
    return i == 0 ? "bandwidth" : "message_rate";
}

static const char *metric_unit(const testdef_t *d, int i)
{
    if (is_lat(d))
        return "us";
    return i == 0 ? "MB/s" : "messages/s";
}

static const char *accel_suffix(const run_t *r)
{
    switch (r->o->device) {
    case DEV_CUDA: return "-CUDA";
    case DEV_ROCM: return "-ROCM";
    default: return "";
    }
}

static void title(const run_t *r, char *buf, size_t n)
{
    const char *t = r->def->title, *p = strstr(t, "%s");
    if (p)
        snprintf(buf, n, "%.*s%s%s", (int)(p - t), t, accel_suffix(r), p + 2);
    else
        snprintf(buf, n, "%s", t);
}

static const char *place_name(char p)
{
    return p == 'D' ? "DEVICE (D)" : p == 'M' ? "MANAGED (M)" : "HOST (H)";
}

void print_header(const run_t *r)
{
    const opts_t *o = r->o;
    const testdef_t *d = r->def;
    if (r->rank != 0 || o->format_json)
        return;
    char t[160];
    title(r, t, sizeof t);
    printf("\n# %s (%s %s)\n", t, MB_NAME, MB_VERSION);
    if (d->kind == K_MBW_MR)
        printf("# [ pairs: %d ] [ window size: %d ]\n", r->nranks / 2, o->window);
    if (d->kind != K_BARRIER)
        printf("# Datatype: MPI_CHAR.\n");
    if (d->pt2pt && o->device != DEV_NONE)
        printf("# Send Buffer on %s and Receive Buffer on %s\n", place_name(o->src),
               place_name(o->dst));
    if (d->kind == K_BARRIER) {
        printf("# Avg Latency(us)");
    } else {
        printf("%-*s", 10, "# Size");
        if (d->kind == K_MBW_MR)
            printf("%*s%*s", FIELD_WIDTH, "MB/s", FIELD_WIDTH, "Messages/s");
        else if (is_lat(d))
            printf("%*s", FIELD_WIDTH, "Avg Latency(us)");
        else
            printf("%*s", FIELD_WIDTH, "Bandwidth (MB/s)");
    }
    if (o->full) {
        if (is_lat(d))
            printf("%*s%*s", FIELD_WIDTH, "Min Latency(us)", FIELD_WIDTH, "Max Latency(us)");
        else
            printf("%*s%*s", FIELD_WIDTH, "Min BW (MB/s)", FIELD_WIDTH, "Max BW (MB/s)");
        printf("%*s", ITER_WIDTH, "Iterations");
    }
    if (o->validate && d->kind != K_BARRIER)
        printf("%*s", FIELD_WIDTH, "Validation");
    printf("\n");
    fflush(stdout);
}

void print_row(const run_t *r, const size_result_t *s)
{
    const opts_t *o = r->o;
    const testdef_t *d = r->def;
    if (r->rank != 0 || o->format_json)
        return;
    if (s->has_size) {
        printf("%-*zu", 10, s->size);
        for (int i = 0; i < s->nvalues; i++)
            printf("%*.*f", FIELD_WIDTH, FLOAT_PRECISION, s->values[i]);
    } else {
        printf("%*.*f", 17, FLOAT_PRECISION, s->values[0]);
    }
    if (o->full) {
        double mn = s->has_rank ? s->rank_min : s->st.min;
        double mx = s->has_rank ? s->rank_max : s->st.max;
        printf("%*.*f%*.*f%*ld", FIELD_WIDTH, FLOAT_PRECISION, mn, FIELD_WIDTH, FLOAT_PRECISION,
               mx, ITER_WIDTH, s->iters);
    }
    if (o->validate && d->kind != K_BARRIER)
        printf("%*s", FIELD_WIDTH, s->validation == 1 ? "Fail" : "Pass");
    printf("\n");
    fflush(stdout);
}

/* ---------------- JSON ---------------- */

/* Valid UTF-8 sequences are copied; control characters, quotes and
 * backslashes are escaped; bytes that are not valid UTF-8 become \u00XX
 * (their Latin-1 reading), so the document is always valid JSON. */
static void jstr(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        unsigned char ch = *p;
        if (ch == '"' || ch == '\\') {
            fputc('\\', f);
            fputc(ch, f);
            p++;
        } else if (ch == '\n') {
            fputs("\\n", f);
            p++;
        } else if (ch == '\t') {
            fputs("\\t", f);
            p++;
        } else if (ch == '\r') {
            fputs("\\r", f);
            p++;
        } else if (ch < 0x20 || ch == 0x7f) {
            fprintf(f, "\\u%04x", ch);
            p++;
        } else if (ch < 0x80) {
            fputc(ch, f);
            p++;
        } else {
            int len = (ch & 0xe0) == 0xc0 ? 2 : (ch & 0xf0) == 0xe0 ? 3 : (ch & 0xf8) == 0xf0 ? 4 : 0;
            int ok = len > 0;
            for (int i = 1; ok && i < len; i++)
                ok = (p[i] & 0xc0) == 0x80;
            if (ok && len == 2 && ch < 0xc2)
                ok = 0; /* overlong */
            if (ok && len == 3) {
                unsigned cp = ((ch & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
                ok = cp >= 0x800 && !(cp >= 0xd800 && cp <= 0xdfff);
            }
            if (ok && len == 4) {
                unsigned cp = ((ch & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) |
                              ((p[2] & 0x3fu) << 6) | (p[3] & 0x3fu);
                ok = cp >= 0x10000 && cp <= 0x10ffff;
            }
            if (ok) {
                fwrite(p, 1, (size_t)len, f);
                p += len;
            } else {
                fprintf(f, "\\u%04x", ch);
                p++;
            }
        }
    }
    fputc('"', f);
}

static void jnum(FILE *f, double x, int digits)
{
    if (!isfinite(x))
        x = 0.0;
    fprintf(f, "%.*g", digits, x);
}

/* figure exactly as printed in the text (two decimals) */
static void jfig(FILE *f, double x)
{
    char b[64];
    if (!isfinite(x))
        x = 0.0;
    snprintf(b, sizeof b, "%.*f", FLOAT_PRECISION, x);
    fputs(b, f);
}

static void jkey(FILE *f, const char *k)
{
    jstr(f, k);
    fputc(':', f);
}

int write_json(const run_t *r, FILE *f)
{
    const opts_t *o = r->o;
    const testdef_t *d = r->def;
    char t[160];
    title(r, t, sizeof t);
    fputc('{', f);
    jkey(f, "schema"); jstr(f, "mpistack-bench/1"); fputc(',', f);
    jkey(f, "benchmark"); jstr(f, d->name); fputc(',', f);
    jkey(f, "title"); jstr(f, t); fputc(',', f);

    jkey(f, "tool"); fputc('{', f);
    jkey(f, "name"); jstr(f, MB_NAME); fputc(',', f);
    jkey(f, "version"); jstr(f, MB_VERSION); fputc(',', f);
    jkey(f, "build"); fputc('{', f);
    jkey(f, "compiler");
#ifdef __VERSION__
    jstr(f, __VERSION__);
#else
    jstr(f, "unknown");
#endif
    fputc(',', f);
    jkey(f, "mpicc"); jstr(f, MB_BUILD_CC); fputc(',', f);
    jkey(f, "cflags"); jstr(f, MB_BUILD_CFLAGS); fputc(',', f);
    char hv[32];
    snprintf(hv, sizeof hv, "%d.%d", MPI_VERSION, MPI_SUBVERSION);
    jkey(f, "mpi_header_version"); jstr(f, hv); fputc(',', f);
    jkey(f, "cuda"); fputs(device_compiled(DEV_CUDA) ? "true" : "false", f); fputc(',', f);
    jkey(f, "rocm"); fputs(device_compiled(DEV_ROCM) ? "true" : "false", f); fputc(',', f);
    jkey(f, "corrupt");
#ifdef MPISTACK_BENCH_CORRUPT
    fputs("true", f);
#else
    fputs("false", f);
#endif
    fputs("}},", f);

    jkey(f, "mpi"); fputc('{', f);
    jkey(f, "library_version"); jstr(f, META.lib_version); fputc(',', f);
    snprintf(hv, sizeof hv, "%d.%d", META.mpi_major, META.mpi_minor);
    jkey(f, "version"); jstr(f, hv); fputc(',', f);
    jkey(f, "ranks"); fprintf(f, "%d,", r->nranks);
    jkey(f, "hosts"); fputc('[', f);
    for (int i = 0; i < r->nranks; i++) {
        if (i)
            fputc(',', f);
        jstr(f, META.hosts + (size_t)i * (size_t)META.hostlen);
    }
    fputs("],", f);
    jkey(f, "wtick"); jnum(f, META.wtick, 9);
    fputs("},", f);

    jkey(f, "environment"); fputc('{', f);
    for (int i = 0; i < META.nenv; i++) {
        const char *e = META.env[i];
        const char *eq = strchr(e, '=');
        char key[512];
        size_t kl = eq ? (size_t)(eq - e) : strlen(e);
        if (kl >= sizeof key)
            kl = sizeof key - 1;
        memcpy(key, e, kl);
        key[kl] = 0;
        if (i)
            fputc(',', f);
        jkey(f, key);
        jstr(f, eq ? eq + 1 : "");
    }
    fputs("},", f);

    long it_s, wu_s, it_l, wu_l;
    effective_counts(r, 1, &it_s, &wu_s);
    effective_counts(r, LARGE_MESSAGE_SIZE + 1, &it_l, &wu_l);
    jkey(f, "options"); fputc('{', f);
    jkey(f, "min_size"); fprintf(f, "%zu,", d->kind == K_BARRIER ? 0 : o->min_size);
    jkey(f, "max_size"); fprintf(f, "%zu,", d->kind == K_BARRIER ? 0 : o->max_size);
    jkey(f, "iterations"); fprintf(f, "%ld,", it_s);
    jkey(f, "warmup"); fprintf(f, "%ld,", wu_s);
    jkey(f, "iterations_large"); fprintf(f, "%ld,", it_l);
    jkey(f, "warmup_large"); fprintf(f, "%ld,", wu_l);
    jkey(f, "large_message_size"); fprintf(f, "%d,", LARGE_MESSAGE_SIZE);
    jkey(f, "window"); fprintf(f, "%d,", (d->kind == K_BW || d->kind == K_BIBW || d->kind == K_MBW_MR) ? o->window : 1);
    jkey(f, "validation"); fputs(o->validate ? "true," : "false,", f);
    jkey(f, "full"); fputs(o->full ? "true," : "false,", f);
    char bufs[8];
    snprintf(bufs, sizeof bufs, "%c %c", o->src, o->dst);
    jkey(f, "buffers"); jstr(f, d->pt2pt ? bufs : (o->device ? "D" : "H")); fputc(',', f);
    jkey(f, "device"); jstr(f, o->device == DEV_CUDA ? "cuda" : o->device == DEV_ROCM ? "rocm" : "none"); fputc(',', f);
    jkey(f, "stop");
    if (o->stop_ci > 0) {
        char sb[64];
        snprintf(sb, sizeof sb, "ci:%g", o->stop_ci);
        jstr(f, sb);
        fputc(',', f);
        jkey(f, "stop_min"); fprintf(f, "%ld,", o->stop_min_set ? o->stop_min : (long)STOP_MIN_DEFAULT);
        jkey(f, "stop_max");
        if (o->stop_max_set)
            fprintf(f, "%ld", o->stop_max);
        else
            fputs("null", f);
    } else {
        fputs("null", f);
    }
    fputc(',', f);
    jkey(f, "suite"); fputs(o->suite ? "true," : "false,", f);
    jkey(f, "command_line"); jstr(f, META.cmdline);
    fputs("},", f);

    jkey(f, "metrics"); fputc('[', f);
    for (int i = 0; i < metric_count(d); i++) {
        if (i)
            fputc(',', f);
        fputc('{', f);
        jkey(f, "name"); jstr(f, metric_name(d, i)); fputc(',', f);
        jkey(f, "unit"); jstr(f, metric_unit(d, i));
        fputc('}', f);
    }
    fputs("],", f);

    jkey(f, "status"); jstr(f, r->any_fail ? "validation-failed" : "ok"); fputc(',', f);
    jkey(f, "started"); jstr(f, r->started); fputc(',', f);
    jkey(f, "finished"); jstr(f, r->finished); fputc(',', f);

    jkey(f, "results"); fputc('[', f);
    for (int i = 0; i < r->nres; i++) {
        const size_result_t *s = &r->res[i];
        if (i)
            fputc(',', f);
        fputc('{', f);
        jkey(f, "size");
        if (s->has_size)
            fprintf(f, "%zu", s->size);
        else
            fputs("null", f);
        fputc(',', f);
        jkey(f, "iterations"); fprintf(f, "%ld,", s->iters);
        jkey(f, "warmup"); fprintf(f, "%ld,", s->warmup);
        jkey(f, "values"); fputc('{', f);
        for (int m = 0; m < s->nvalues; m++) {
            if (m)
                fputc(',', f);
            jkey(f, metric_name(d, m));
            jfig(f, s->values[m]);
        }
        fputs("},", f);
        jkey(f, "rank_min");
        if (s->has_rank) jnum(f, s->rank_min, 12); else fputs("null", f);
        fputc(',', f);
        jkey(f, "rank_max");
        if (s->has_rank) jnum(f, s->rank_max, 12); else fputs("null", f);
        fputc(',', f);
        jkey(f, "stats");
        if (s->has_stats) {
            const stats_t *st = &s->st;
            fputc('{', f);
            jkey(f, "mean"); jnum(f, st->mean, 9); fputc(',', f);
            jkey(f, "min"); jnum(f, st->min, 9); fputc(',', f);
            jkey(f, "median"); jnum(f, st->median, 9); fputc(',', f);
            jkey(f, "p90"); jnum(f, st->p90, 9); fputc(',', f);
            jkey(f, "p99"); jnum(f, st->p99, 9); fputc(',', f);
            jkey(f, "max"); jnum(f, st->max, 9); fputc(',', f);
            jkey(f, "stddev"); jnum(f, st->stddev, 9); fputc(',', f);
            jkey(f, "ci95_low"); jnum(f, st->ci_lo, 9); fputc(',', f);
            jkey(f, "ci95_high"); jnum(f, st->ci_hi, 9); fputc(',', f);
            jkey(f, "samples"); fprintf(f, "%ld", st->samples);
            fputc('}', f);
        } else {
            fputs("null", f);
        }
        fputc(',', f);
        jkey(f, "validation");
        fputs(s->validation < 0 ? "null" : s->validation ? "\"fail\"" : "\"pass\"", f);
        fputc('}', f);
    }
    fputs("]}\n", f);
    return ferror(f) ? -1 : 0;
}
