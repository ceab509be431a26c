/* The benchmarks of this build, gathered from the kernel files; their rank rules; --list. */
#include "bench.h"

#include <string.h>

const figures_t LATENCY_FIGURES = {
    1, {{"latency", "us", "Avg Latency(us)"}}, "Min Latency(us)", "Max Latency(us)"};
const figures_t BANDWIDTH_FIGURES = {
    1, {{"bandwidth", "MB/s", "Bandwidth (MB/s)"}}, "Min BW (MB/s)", "Max BW (MB/s)"};
const figures_t MESSAGE_RATE_FIGURES = {
    2, {{"bandwidth", "MB/s", "MB/s"}, {"message_rate", "messages/s", "Messages/s"}},
    "Min BW (MB/s)", "Max BW (MB/s)"};

int column_width(const char *column)
{
    int wanted = (int)strlen(column) + 2;
    return wanted > FIELD_WIDTH ? wanted : FIELD_WIDTH;
}

static int benchmark_count(void)
{
    return PT2PT_BENCHMARK_COUNT + COLLECTIVE_BENCHMARK_COUNT + LOCAL_BENCHMARK_COUNT;
}

/* point-to-point, collectives, local: the order of --help and --list */
static const benchmark_t *benchmark_at(int i)
{
    if (i < PT2PT_BENCHMARK_COUNT)
        return &PT2PT_BENCHMARKS[i];
    i -= PT2PT_BENCHMARK_COUNT;
    if (i < COLLECTIVE_BENCHMARK_COUNT)
        return &COLLECTIVE_BENCHMARKS[i];
    return &LOCAL_BENCHMARKS[i - COLLECTIVE_BENCHMARK_COUNT];
}

/* OSU's program name (osu_latency) is accepted too */
const benchmark_t *find_benchmark(const char *name)
{
    if (strncmp(name, "osu_", 4) == 0)
        name += 4;
    for (int i = 0; i < benchmark_count(); i++)
        if (strcmp(benchmark_at(i)->name, name) == 0)
            return benchmark_at(i);
    return NULL;
}

/* the title OSU prints, with suffix (-CUDA, -ROCM or nothing) where OSU puts it */
void format_title(const benchmark_t *b, const char *suffix, char *buf, size_t n)
{
    const char *at = strstr(b->title, "%s");
    if (at)
        snprintf(buf, n, "%.*s%s%s", (int)(at - b->title), b->title, suffix, at + 2);
    else
        snprintf(buf, n, "%s", b->title);
}

/* ---------------------------------------------------------------- rank rules */

static const char *family_name(enum family family)
{
    switch (family) {
    case FAMILY_PT2PT: return "pt2pt";
    case FAMILY_COLLECTIVE: return "collective";
    default: return "local";
    }
}

static const char *rule_name(enum rank_rule rule)
{
    switch (rule) {
    case RANKS_EXACTLY: return "exactly";
    case RANKS_EVEN: return "even";
    default: return "at-least";
    }
}

/* 1 when nranks satisfies b's rule; otherwise 0 and OSU's message (the count spelled out) */
int ranks_allowed(const benchmark_t *b, int nranks, char *msg, size_t len)
{
    char count[16];
    int need = b->ranks.count;
    if (need == 1)
        snprintf(count, sizeof count, "one");
    else if (need == 2)
        snprintf(count, sizeof count, "two");
    else
        snprintf(count, sizeof count, "%d", need);
    switch (b->ranks.rule) {
    case RANKS_EXACTLY:
        if (nranks == need)
            return 1;
        snprintf(msg, len, "%s requires exactly %s processes (got %d)", b->name, count, nranks);
        return 0;
    case RANKS_EVEN:
        if (nranks >= need && nranks % 2 == 0)
            return 1;
        snprintf(msg, len, "%s requires an even number of processes, at least %s (got %d)", b->name,
                 count, nranks);
        return 0;
    default:
        if (nranks >= need)
            return 1;
        snprintf(msg, len, "%s requires at least %s processes (got %d)", b->name, count, nranks);
        return 0;
    }
}

/* ---------------------------------------------------------------- --list */

static void write_metric(FILE *f, const metric_t *m)
{
    fputc('{', f);
    json_key(f, "name"); json_string(f, m->name); fputc(',', f);
    json_key(f, "unit"); json_string(f, m->unit);
    fputc('}', f);
}

static void write_benchmark_entry(FILE *f, const benchmark_t *b)
{
    char title[160];
    const figures_t *fig = b->figures;
    format_title(b, "", title, sizeof title);
    fputc('{', f);
    json_key(f, "name"); json_string(f, b->name); fputc(',', f);
    json_key(f, "title"); json_string(f, title); fputc(',', f);
    json_key(f, "family"); json_string(f, family_name(b->family));
    fputc(',', f);
    json_key(f, "metric"); json_string(f, fig->metrics[0].name); fputc(',', f);
    json_key(f, "unit"); json_string(f, fig->metrics[0].unit); fputc(',', f);
    json_key(f, "metrics"); fputc('[', f);
    for (int i = 0; i < fig->count; i++) {
        if (i)
            fputc(',', f);
        write_metric(f, &fig->metrics[i]);
    }
    fputs("],", f);
    json_key(f, "ranks"); fputc('{', f);
    json_key(f, "rule"); json_string(f, rule_name(b->ranks.rule)); fputc(',', f);
    json_key(f, "count"); fprintf(f, "%d},", b->ranks.count);
    json_key(f, "sizes"); json_bool(f, b->has_sizes); fputc(',', f);
    json_key(f, "buffers"); json_bool(f, b->family == FAMILY_PT2PT); fputc(',', f);
    json_key(f, "window"); json_bool(f, b->windowed); fputc(',', f);
    json_key(f, "validation"); json_bool(f, b->validate != NULL);
    fputc('}', f);
}

/* {"suite": ..., "version": ..., "tests": [...]}, one test per line (bench/README.md) */
int write_benchmark_list(FILE *f)
{
    fputc('{', f);
    json_key(f, "suite"); json_string(f, MB_NAME); fputc(',', f);
    json_key(f, "version"); json_string(f, MB_VERSION); fputc(',', f);
    json_key(f, "tests"); fputs("[\n", f);
    for (int i = 0; i < benchmark_count(); i++) {
        write_benchmark_entry(f, benchmark_at(i));
        fputs(i + 1 < benchmark_count() ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
    return ferror(f) ? -1 : 0;
}
