/* Command line: a table of options, each with the function that applies it. Parsing prints
 * nothing: it returns what was asked for, or the error message, and main() decides who prints
 * (rank 0 only, after MPI_Init; --list needs no MPI at all). */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COUNT 100000000L /* -i, -x, --stop-max */

typedef struct {
    options_t *o;
    int want_help, want_version, want_list;
    int placement_given; /* SRC DST on the command line */
    char *error;
    size_t errlen;
} parse_state_t;

/* Each returns 0, or an enum parse_result after writing the message to ps->error. */
typedef int (*option_handler_t)(parse_state_t *ps, const char *arg);

typedef struct {
    const char *long_name;
    char short_name; /* 0: long option only */
    int takes_argument;
    option_handler_t apply;
} option_spec_t;

void usage(FILE *f)
{
    fprintf(f,
        "Usage: %s TEST [options] [SRC DST]\n"
        "       %s --suite TEST[,TEST...] [options] [SRC DST]\n"
        "       %s --list\n"
        "\n"
        "OSU-compatible MPI micro-benchmarks (OSU 7.x method; see docs/methodology.md).\n"
        "\n"
        "TEST (point-to-point): latency bw bibw mbw_mr multi_lat\n"
        "TEST (collectives):    barrier bcast reduce allreduce gather scatter allgather\n"
        "                       alltoall reduce_scatter\n"
        "TEST (local):          memcpy (rank 0's copy bandwidth, in cache and from memory)\n"
        "SRC DST (point-to-point): H, D or M each: buffers of rank 0 (SRC) and rank 1 (DST)\n"
        "         in host, device or managed memory (D and M need a CUDA/ROCm build), as\n"
        "         OSU's: mpistack-bench latency -d cuda D D\n"
        "\n"
        "Options:\n"
        "  -m, --message-size [MIN:]MAX  sizes from MIN to MAX bytes, doubling (default 1:%lu\n"
        "                                point-to-point, 1:%lu collectives); MIN: and :MAX too\n"
        "  -i, --iterations ITER         timed iterations for every size (default: OSU's)\n"
        "  -x, --warmup WARMUP           warm-up iterations for every size (default: OSU's)\n"
        "  -W, --window-size WINDOW      messages in flight for bw, bibw, mbw_mr (default %d)\n"
        "  -f, --full                    extra columns: Min, Max, Iterations\n"
        "  -c, --validation              check received data in an untimed pass\n"
        "  -d, --accelerator TYPE        device buffers: cuda, rocm, or managed (CUDA managed\n"
        "                                memory; M M point-to-point) (needs a CUDA/ROCm build)\n"
        "      --json FILE               also write the JSON document(s) to FILE\n"
        "      --format osu|json         standard output: OSU text (default) or JSON\n"
        "      --suite LIST              run several tests in one launch\n"
        "      --stop ci:REL             adaptive: stop a size once the 95%% CI of the median\n"
        "                                is within +-REL of the median (e.g. ci:0.02)\n"
        "      --stop-min N              adaptive: minimum timed iterations (default %d)\n"
        "      --stop-max N              adaptive: maximum timed iterations (default: OSU's count)\n"
        "      --stop-check N            before each size, N pairs of a fixed-count and an adaptive\n"
        "                                block in alternating order, their medians in the JSON\n"
        "      --list                    describe every test as JSON and exit (needs no mpiexec)\n"
        "      --check                   validate the rest of the command line and exit: status\n"
        "                                0 and 'ok', or 2 and the error (needs no mpiexec)\n"
        "  -h, --help                    this message\n"
        "  -v, --version                 version\n",
        MB_NAME, MB_NAME, MB_NAME, MAX_SIZE_PT2PT, MAX_SIZE_COLL, WINDOW_SIZE, STOP_MIN_DEFAULT);
}

__attribute__((format(printf, 3, 4))) static int fail(parse_state_t *ps, enum parse_result result,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->error, ps->errlen, fmt, ap);
    va_end(ap);
    return result;
}

/* ---------------------------------------------------------------- values */

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* MAX, MIN:MAX, MIN: or :MAX */
static int parse_sizes(options_t *o, const char *arg)
{
    const char *colon = strchr(arg, ':');
    if (!colon) {
        if (parse_size(arg, &o->max_size))
            return -1;
        o->max_set = 1;
    } else {
        char lo[64];
        size_t n = (size_t)(colon - arg);
        if (n >= sizeof lo || strchr(colon + 1, ':') || (!n && !colon[1]))
            return -1;
        memcpy(lo, arg, n);
        lo[n] = 0;
        if (n) {
            if (parse_size(lo, &o->min_size))
                return -1;
            o->min_set = 1;
        }
        if (colon[1]) {
            if (parse_size(colon + 1, &o->max_size))
                return -1;
            o->max_set = 1;
        }
    }
    if ((o->min_set && o->min_size < 1) || (o->max_set && o->max_size < 1))
        return -1;
    if (o->max_set && o->max_size > (1UL << 30))
        return -1;
    return 0;
}

static int add_tests(parse_state_t *ps, const char *list)
{
    options_t *o = ps->o;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const benchmark_t *b = find_benchmark(tok);
        if (!b)
            return fail(ps, PARSE_USAGE_ERROR, "unknown test '%s'", tok);
        if (o->ntests >= MAX_TESTS)
            return fail(ps, PARSE_USAGE_ERROR, "too many tests");
        o->tests[o->ntests++] = b;
    }
    if (o->ntests == 0)
        return fail(ps, PARSE_USAGE_ERROR, "empty test list");
    return 0;
}

/* ---------------------------------------------------------------- handlers */

static int set_message_size(parse_state_t *ps, const char *arg)
{
    if (parse_sizes(ps->o, arg))
        return fail(ps, PARSE_USAGE_ERROR, "invalid message size '%s' (use MAX or MIN:MAX, bytes)",
                    arg);
    return 0;
}

static int set_iterations(parse_state_t *ps, const char *arg)
{
    if (parse_long(arg, 1, MAX_COUNT, &ps->o->iters))
        return fail(ps, PARSE_USAGE_ERROR, "invalid number of iterations '%s'", arg);
    ps->o->iters_set = 1;
    return 0;
}

static int set_warmup(parse_state_t *ps, const char *arg)
{
    if (parse_long(arg, 0, MAX_COUNT, &ps->o->warmup))
        return fail(ps, PARSE_USAGE_ERROR, "invalid number of warm-up iterations '%s'", arg);
    ps->o->warmup_set = 1;
    return 0;
}

static int set_window(parse_state_t *ps, const char *arg)
{
    long v;
    if (parse_long(arg, 1, 65536, &v))
        return fail(ps, PARSE_USAGE_ERROR, "invalid window size '%s'", arg);
    ps->o->window = (int)v;
    return 0;
}

static int set_full(parse_state_t *ps, const char *arg)
{
    ps->o->full = 1;
    return 0;
}

static int set_validation(parse_state_t *ps, const char *arg)
{
    ps->o->validate = 1;
    return 0;
}

static int set_accelerator(parse_state_t *ps, const char *arg)
{
    ps->o->managed = strcasecmp(arg, "managed") == 0; /* CUDA, managed memory (OSU: -d cuda M M) */
    if (strcasecmp(arg, "cuda") == 0 || ps->o->managed)
        ps->o->device = DEV_CUDA;
    else if (strcasecmp(arg, "rocm") == 0)
        ps->o->device = DEV_ROCM;
    else
        return fail(ps, PARSE_USAGE_ERROR, "invalid accelerator '%s' (cuda, rocm or managed)", arg);
    return 0;
}

static int ask_help(parse_state_t *ps, const char *arg)
{
    ps->want_help = 1;
    return 0;
}

static int ask_version(parse_state_t *ps, const char *arg)
{
    ps->want_version = 1;
    return 0;
}

static int ask_list(parse_state_t *ps, const char *arg)
{
    ps->want_list = 1;
    return 0;
}

static int set_json_path(parse_state_t *ps, const char *arg)
{
    ps->o->json_path = arg;
    return 0;
}

static int set_format(parse_state_t *ps, const char *arg)
{
    if (strcmp(arg, "json") == 0)
        ps->o->format_json = 1;
    else if (strcmp(arg, "osu") == 0)
        ps->o->format_json = 0;
    else
        return fail(ps, PARSE_USAGE_ERROR, "invalid format '%s' (osu or json)", arg);
    return 0;
}

static int set_suite(parse_state_t *ps, const char *arg)
{
    if (ps->o->ntests && !ps->o->suite)
        return fail(ps, PARSE_USAGE_ERROR, "give either a TEST or --suite LIST");
    ps->o->suite = 1;
    return add_tests(ps, arg);
}

static int set_stop(parse_state_t *ps, const char *arg)
{
    char *end = NULL;
    double rel = 0.0;
    if (strncmp(arg, "ci:", 3) == 0) {
        errno = 0;
        rel = strtod(arg + 3, &end);
        if (errno || *end || end == arg + 3)
            rel = 0.0;
    }
    if (!(rel > 0.0 && rel < 1.0))
        return fail(ps, PARSE_USAGE_ERROR, "invalid stop rule '%s' (use ci:REL, e.g. ci:0.02)",
                    arg);
    ps->o->stop_ci = rel;
    return 0;
}

static int set_stop_min(parse_state_t *ps, const char *arg)
{
    if (parse_long(arg, 1, LONG_MAX, &ps->o->stop_min))
        return fail(ps, PARSE_USAGE_ERROR, "invalid --stop-min '%s'", arg);
    ps->o->stop_min_set = 1;
    return 0;
}

static int set_stop_check(parse_state_t *ps, const char *arg)
{
    if (parse_long(arg, 1, STOP_CHECK_MAX, &ps->o->stop_check))
        return fail(ps, PARSE_USAGE_ERROR, "invalid --stop-check '%s' (pairs, 1 to %d)", arg, STOP_CHECK_MAX);
    return 0;
}

static int set_stop_max(parse_state_t *ps, const char *arg)
{
    if (parse_long(arg, 1, MAX_COUNT, &ps->o->stop_max))
        return fail(ps, PARSE_USAGE_ERROR, "invalid --stop-max '%s'", arg);
    ps->o->stop_max_set = 1;
    return 0;
}

static const option_spec_t OPTION_SPECS[] = {
    {"message-size", 'm', 1, set_message_size},
    {"iterations", 'i', 1, set_iterations},
    {"warmup", 'x', 1, set_warmup},
    {"window-size", 'W', 1, set_window},
    {"full", 'f', 0, set_full},
    {"validation", 'c', 0, set_validation},
    {"accelerator", 'd', 1, set_accelerator},
    {"help", 'h', 0, ask_help},
    {"version", 'v', 0, ask_version},
    {"list", 0, 0, ask_list},
    {"json", 0, 1, set_json_path},
    {"format", 0, 1, set_format},
    {"suite", 0, 1, set_suite},
    {"stop", 0, 1, set_stop},
    {"stop-min", 0, 1, set_stop_min},
    {"stop-max", 0, 1, set_stop_max},
    {"stop-check", 0, 1, set_stop_check},
};
#define NSPECS ((int)(sizeof OPTION_SPECS / sizeof OPTION_SPECS[0]))
#define LONG_ONLY_BASE 1000 /* getopt value of a long-only option: base + its index */

/* ---------------------------------------------------------------- parsing */

static int getopt_value(int i)
{
    return OPTION_SPECS[i].short_name ? OPTION_SPECS[i].short_name : LONG_ONLY_BASE + i;
}

static const option_spec_t *spec_of(int value)
{
    for (int i = 0; i < NSPECS; i++)
        if (getopt_value(i) == value)
            return &OPTION_SPECS[i];
    return NULL;
}

/* getopt_long's view of OPTION_SPECS: the short option string and the long option array */
static void build_getopt_tables(char *shorts, struct option *longs)
{
    *shorts++ = ':'; /* report a missing argument as ':' */
    for (int i = 0; i < NSPECS; i++) {
        const option_spec_t *s = &OPTION_SPECS[i];
        if (s->short_name) {
            *shorts++ = s->short_name;
            if (s->takes_argument)
                *shorts++ = ':';
        }
        int has_arg = s->takes_argument ? required_argument : no_argument;
        longs[i] = (struct option){s->long_name, has_arg, NULL, getopt_value(i)};
    }
    *shorts = 0;
    longs[NSPECS] = (struct option){0, 0, 0, 0};
}

/* how the user spelled the option getopt stopped at */
static void offending_option(char **av, char *buf, size_t n)
{
    const option_spec_t *s = optopt ? spec_of(optopt) : NULL;
    if (s && !s->short_name)
        snprintf(buf, n, "--%s", s->long_name);
    else if (optopt)
        snprintf(buf, n, "-%c", optopt);
    else
        snprintf(buf, n, "%s", av[optind - 1]);
}

static int apply_options(parse_state_t *ps, int ac, char **av)
{
    char shorts[2 * NSPECS + 2], spelled[64];
    struct option longs[NSPECS + 1];
    int c;
    build_getopt_tables(shorts, longs);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(ac, av, shorts, longs, NULL)) != -1) {
        const option_spec_t *s = spec_of(c);
        if (c == ':' || !s) {
            offending_option(av, spelled, sizeof spelled);
            return fail(ps, PARSE_USAGE_ERROR, c == ':' ? "option '%s' needs an argument"
                                                         : "unknown option '%s'", spelled);
        }
        int rc = s->apply(ps, optarg);
        if (rc)
            return rc;
    }
    return 0;
}

/* [SRC DST] after the options */
static int apply_placement(parse_state_t *ps, int npos, char **pos)
{
    if (npos != 0 && npos != 2)
        return fail(ps, PARSE_USAGE_ERROR,
                    "expected no buffer placement or two (SRC DST), got '%s'", npos ? pos[0] : "");
    if (npos == 0)
        return 0;
    for (int i = 0; i < 2; i++)
        if (strlen(pos[i]) != 1 || !strchr("HDM", pos[i][0]))
            return fail(ps, PARSE_USAGE_ERROR, "invalid buffer placement '%s' (H, D or M)", pos[i]);
    ps->o->src = pos[0][0];
    ps->o->dst = pos[1][0];
    ps->placement_given = 1;
    return 0;
}

/* device buffers need a device; without -d, the one this build supports */
static int resolve_device(parse_state_t *ps)
{
    options_t *o = ps->o;
    if (o->managed && !ps->placement_given)
        o->src = o->dst = 'M';
    if ((o->src != 'H' || o->dst != 'H') && o->device == DEV_NONE) {
        if (device_compiled(DEV_CUDA))
            o->device = DEV_CUDA;
        else if (device_compiled(DEV_ROCM))
            o->device = DEV_ROCM;
        else
            o->device = DEV_CUDA; /* reported below as missing support */
    }
    if (o->device != DEV_NONE && !device_compiled(o->device)) {
        int cuda = o->device == DEV_CUDA;
        return fail(ps, PARSE_ERROR, "built without %s support (rebuild with %s=<path>)",
                    cuda ? "CUDA" : "ROCm", cuda ? "CUDA" : "ROCM");
    }
    return 0;
}

static int check_consistency(parse_state_t *ps)
{
    const options_t *o = ps->o;
    if (o->ntests == 0)
        return fail(ps, PARSE_USAGE_ERROR, "no test given");
    if (o->min_set && o->max_set && o->min_size > o->max_size)
        return fail(ps, PARSE_USAGE_ERROR, "invalid message size range");
    if (o->stop_min_set && o->stop_max_set && o->stop_min > o->stop_max)
        return fail(ps, PARSE_USAGE_ERROR, "--stop-min is larger than --stop-max");
    if (o->stop_check && o->stop_ci <= 0)
        return fail(ps, PARSE_USAGE_ERROR, "--stop-check compares a stop rule: give --stop ci:REL too");
    return resolve_device(ps);
}

/* the command line proper, without --check */
static enum parse_result parse_checked(int argc, char **argv, options_t *o, char *error,
                                       size_t errlen)
{
    parse_state_t ps = {.o = o, .error = error, .errlen = errlen};
    int first = 1, rc;
    memset(o, 0, sizeof(*o));
    o->min_size = 1;
    o->window = WINDOW_SIZE;
    o->src = o->dst = 'H';
    if (argc > 1 && argv[1][0] != '-') {
        const benchmark_t *b = find_benchmark(argv[1]);
        if (!b)
            return fail(&ps, PARSE_USAGE_ERROR, "unknown test '%s' (see --help for the list)",
                        argv[1]);
        o->tests[o->ntests++] = b;
        first = 2;
    }
    /* getopt sees the arguments after TEST, behind a placeholder for the program name */
    int ac = argc - first + 1;
    char **av = argv + first - 1;
    if ((rc = apply_options(&ps, ac, av)))
        return rc;
    if (ps.want_help)
        return PARSE_HELP;
    if (ps.want_version)
        return PARSE_VERSION;
    if (ps.want_list)
        return PARSE_LIST;
    if ((rc = apply_placement(&ps, ac - optind, av + optind)))
        return rc;
    if ((rc = check_consistency(&ps)))
        return rc;
    return PARSE_OK;
}

/* --check may stand anywhere before "--": it is taken out, and said in o->check_only */
enum parse_result parse_options(int argc, char **argv, options_t *o, char *error, size_t errlen)
{
    char **kept = malloc(((size_t)argc + 1) * sizeof *kept);
    int n = 0, check = 0, past_options = 0;
    if (!kept) {
        snprintf(error, errlen, "out of memory");
        return PARSE_ERROR;
    }
    for (int i = 0; i < argc; i++) {
        past_options |= strcmp(argv[i], "--") == 0;
        if (i > 0 && !past_options && strcmp(argv[i], "--check") == 0)
            check = 1;
        else
            kept[n++] = argv[i];
    }
    kept[n] = NULL;
    enum parse_result result = parse_checked(n, kept, o, error, errlen);
    o->check_only = check; /* set after the parse, which clears o */
    free(kept);
    return result;
}
