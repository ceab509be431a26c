/* mpistack-bench: command line, metadata, test dispatch and suite mode. */
#include "bench.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

meta_t META;

const testdef_t TESTS[] = {
    {"latency", "OSU MPI%s Latency Test", K_LATENCY, F_LAT, R_EXACT2, 1},
    {"bw", "OSU MPI%s Bandwidth Test", K_BW, F_BW, R_EXACT2, 1},
    {"bibw", "OSU MPI%s Bi-Directional Bandwidth Test", K_BIBW, F_BW, R_EXACT2, 1},
    {"mbw_mr", "OSU MPI Multiple Bandwidth / Message Rate Test", K_MBW_MR, F_BW, R_EVEN, 1},
    {"multi_lat", "OSU MPI Multi Latency Test", K_MULTI_LAT, F_LAT, R_EVEN, 1},
    {"barrier", "OSU MPI%s Barrier Latency Test", K_BARRIER, F_COLL, R_ATLEAST2, 0},
    {"bcast", "OSU MPI%s Broadcast Latency Test", K_BCAST, F_COLL, R_ATLEAST2, 0},
    {"reduce", "OSU MPI%s Reduce Latency Test", K_REDUCE, F_COLL, R_ATLEAST2, 0},
    {"allreduce", "OSU MPI%s Allreduce Latency Test", K_ALLREDUCE, F_COLL, R_ATLEAST2, 0},
    {"gather", "OSU MPI%s Gather Latency Test", K_GATHER, F_COLL, R_ATLEAST2, 0},
    {"scatter", "OSU MPI%s Scatter Latency Test", K_SCATTER, F_COLL, R_ATLEAST2, 0},
    {"allgather", "OSU MPI%s Allgather Latency Test", K_ALLGATHER, F_COLL, R_ATLEAST2, 0},
    {"alltoall", "OSU MPI%s All-to-All Personalized Exchange Latency Test", K_ALLTOALL, F_COLL, R_ATLEAST2, 0},
    {"reduce_scatter", "OSU MPI%s Reduce_scatter Latency Test", K_REDUCE_SCATTER, F_COLL, R_ATLEAST2, 0},
};
const int NTESTS = (int)(sizeof(TESTS) / sizeof(TESTS[0]));

static int g_rank = 0;

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: %s TEST [options] [SRC DST]\n"
        "       %s --suite TEST[,TEST...] [options] [SRC DST]\n"
        "\n"
        "OSU-compatible MPI micro-benchmarks (OSU 7.x method; see docs/methodology.md).\n"
        "\n"
        "TEST (point-to-point): latency bw bibw mbw_mr multi_lat\n"
        "TEST (collectives):    barrier bcast reduce allreduce gather scatter allgather\n"
        "                       alltoall reduce_scatter\n"
        "SRC DST (point-to-point): H, D or M each: buffers of rank 0 (SRC) and rank 1 (DST)\n"
        "         in host, device or managed memory (D and M need -d and a CUDA/ROCm build)\n"
        "\n"
        "Options:\n"
        "  -m, --message-size [MIN:]MAX  sizes from MIN to MAX bytes, doubling (default 1:%lu\n"
        "                                point-to-point, 1:%lu collectives); MIN: and :MAX too\n"
        "  -i, --iterations ITER         timed iterations for every size (default: OSU's)\n"
        "  -x, --warmup WARMUP           warm-up iterations for every size (default: OSU's)\n"
        "  -W, --window-size WINDOW      messages in flight for bw, bibw, mbw_mr (default %d)\n"
        "  -f, --full                    extra columns: Min, Max, Iterations\n"
        "  -c, --validation              check received data in an untimed pass\n"
        "  -d, --accelerator cuda|rocm   device buffers (needs a CUDA/ROCm build)\n"
        "      --json FILE               also write the JSON document(s) to FILE\n"
        "      --format osu|json         standard output: OSU text (default) or JSON\n"
        "      --suite LIST              run several tests in one launch\n"
        "      --stop ci:REL             adaptive: stop a size once the 95%% CI of the median\n"
        "                                is within +-REL of the median (e.g. ci:0.02)\n"
        "      --stop-min N              adaptive: minimum timed iterations (default %d)\n"
        "      --stop-max N              adaptive: maximum timed iterations (default: OSU's count)\n"
        "  -h, --help                    this message\n"
        "  -v, --version                 version\n",
        MB_NAME, MB_NAME, MAX_SIZE_PT2PT, MAX_SIZE_COLL, WINDOW_SIZE, STOP_MIN_DEFAULT);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    if (g_rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: error: ", MB_NAME);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n\n");
        usage(stderr);
        fflush(stderr);
    }
    return 2;
}

static const testdef_t *find_test(const char *name)
{
    if (strncmp(name, "osu_", 4) == 0)
        name += 4;
    for (int i = 0; i < NTESTS; i++)
        if (strcmp(TESTS[i].name, name) == 0)
            return &TESTS[i];
    return NULL;
}

static int parse_long(const char *s, long lo, long *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo)
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

static int parse_sizes(opts_t *o, const char *arg)
{
    const char *colon = strchr(arg, ':');
    if (!colon) {
        if (parse_size(arg, &o->max_size))
            return -1;
        o->max_set = 1;
    } else {
        char lo[64];
        size_t n = (size_t)(colon - arg);
        if (n >= sizeof lo || strchr(colon + 1, ':'))
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
        if (!n && !colon[1])
            return -1;
    }
    if (o->min_set && o->min_size < 1)
        return -1;
    if (o->max_set && o->max_size < 1)
        return -1;
    if (o->max_set && o->max_size > (1UL << 30))
        return -1;
    return 0;
}

static int add_tests(opts_t *o, const char *list)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const testdef_t *t = find_test(tok);
        if (!t)
            return usage_error("unknown test '%s'", tok);
        if (o->ntests >= MAX_TESTS)
            return usage_error("too many tests");
        o->tests[o->ntests++] = t;
    }
    if (o->ntests == 0)
        return usage_error("empty test list");
    return 0;
}

enum { O_JSON = 1000, O_FORMAT, O_SUITE, O_STOP, O_STOP_MIN, O_STOP_MAX };

/* returns 0 ok, 1 help/version printed (exit 0), 2 usage error */
static int parse_options(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->min_size = 1;
    o->window = WINDOW_SIZE;
    o->src = o->dst = 'H';

    static const struct option lopts[] = {
        {"message-size", required_argument, 0, 'm'},
        {"iterations", required_argument, 0, 'i'},
        {"warmup", required_argument, 0, 'x'},
        {"window-size", required_argument, 0, 'W'},
        {"full", no_argument, 0, 'f'},
        {"validation", no_argument, 0, 'c'},
        {"accelerator", required_argument, 0, 'd'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'v'},
        {"json", required_argument, 0, O_JSON},
        {"format", required_argument, 0, O_FORMAT},
        {"suite", required_argument, 0, O_SUITE},
        {"stop", required_argument, 0, O_STOP},
        {"stop-min", required_argument, 0, O_STOP_MIN},
        {"stop-max", required_argument, 0, O_STOP_MAX},
        {0, 0, 0, 0},
    };

    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        const testdef_t *t = find_test(argv[1]);
        if (!t)
            return usage_error("unknown test '%s' (see --help for the list)", argv[1]);
        o->tests[o->ntests++] = t;
        first = 2;
    }
    int ac = argc - first + 1;
    char **av = argv + first - 1; /* av[0] is a placeholder for getopt */
    opterr = 0;
    optind = 1;
    int c;
    long v;
    int want_help = 0, want_version = 0;
    while ((c = getopt_long(ac, av, ":m:i:x:W:fcd:hv", lopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (parse_sizes(o, optarg))
                return usage_error("invalid message size '%s' (use MAX or MIN:MAX, bytes)", optarg);
            break;
        case 'i':
            if (parse_long(optarg, 1, &v) || v > 100000000L)
                return usage_error("invalid number of iterations '%s'", optarg);
            o->iters = v;
            o->iters_set = 1;
            break;
        case 'x':
            if (parse_long(optarg, 0, &v) || v > 100000000L)
                return usage_error("invalid number of warm-up iterations '%s'", optarg);
            o->warmup = v;
            o->warmup_set = 1;
            break;
        case 'W':
            if (parse_long(optarg, 1, &v) || v > 65536)
                return usage_error("invalid window size '%s'", optarg);
            o->window = (int)v;
            break;
        case 'f': o->full = 1; break;
        case 'c': o->validate = 1; break;
        case 'd':
            if (strcasecmp(optarg, "cuda") == 0)
                o->device = DEV_CUDA;
            else if (strcasecmp(optarg, "rocm") == 0)
                o->device = DEV_ROCM;
            else
                return usage_error("invalid accelerator '%s' (cuda or rocm)", optarg);
            break;
        case 'h': want_help = 1; break;
        case 'v': want_version = 1; break;
        case O_JSON: o->json_path = optarg; break;
        case O_FORMAT:
            if (strcmp(optarg, "json") == 0)
                o->format_json = 1;
            else if (strcmp(optarg, "osu") == 0)
                o->format_json = 0;
            else
                return usage_error("invalid format '%s' (osu or json)", optarg);
            break;
        case O_SUITE: {
            if (o->ntests && !o->suite)
                return usage_error("give either a TEST or --suite LIST");
            o->suite = 1;
            int rc = add_tests(o, optarg);
            if (rc)
                return rc;
            break;
        }
        case O_STOP: {
            char *end;
            if (strncmp(optarg, "ci:", 3) != 0)
                return usage_error("invalid stop rule '%s' (use ci:REL, e.g. ci:0.02)", optarg);
            errno = 0;
            double x = strtod(optarg + 3, &end);
            if (errno || *end || end == optarg + 3 || !(x > 0.0 && x < 1.0))
                return usage_error("invalid stop rule '%s' (use ci:REL, e.g. ci:0.02)", optarg);
            o->stop_ci = x;
            break;
        }
        case O_STOP_MIN:
            if (parse_long(optarg, 1, &v))
                return usage_error("invalid --stop-min '%s'", optarg);
            o->stop_min = v;
            o->stop_min_set = 1;
            break;
        case O_STOP_MAX:
            if (parse_long(optarg, 1, &v) || v > 100000000L)
                return usage_error("invalid --stop-max '%s'", optarg);
            o->stop_max = v;
            o->stop_max_set = 1;
            break;
        case ':': {
            char b[64];
            if (optopt)
                snprintf(b, sizeof b, "-%c", optopt);
            else
                snprintf(b, sizeof b, "%s", av[optind - 1]);
            return usage_error("option '%s' needs an argument", b);
        }
        default: {
            char b[64];
            if (optopt)
                snprintf(b, sizeof b, "-%c", optopt);
            else
                snprintf(b, sizeof b, "%s", av[optind - 1]);
            return usage_error("unknown option '%s'", b);
        }
        }
    }
    if (want_help) {
        if (g_rank == 0)
            usage(stdout);
        return 1;
    }
    if (want_version) {
        if (g_rank == 0)
            printf("%s %s\n", MB_NAME, MB_VERSION);
        return 1;
    }
    /* positional SRC DST */
    int npos = ac - optind;
    if (npos != 0 && npos != 2) {
        return usage_error("expected no buffer placement or two (SRC DST), got '%s'",
                           npos ? av[optind] : "");
    }
    if (npos == 2) {
        for (int i = 0; i < 2; i++) {
            const char *a = av[optind + i];
            if (strlen(a) != 1 || !strchr("HDM", a[0]))
                return usage_error("invalid buffer placement '%s' (H, D or M)", a);
        }
        o->src = av[optind][0];
        o->dst = av[optind + 1][0];
    }
    if (o->ntests == 0)
        return usage_error("no test given");
    if (o->min_set && o->max_set && o->min_size > o->max_size)
        return usage_error("invalid message size range");
    if (o->stop_min_set && o->stop_max_set && o->stop_min > o->stop_max)
        return usage_error("--stop-min is larger than --stop-max");
    /* device support */
    int need_dev = o->src != 'H' || o->dst != 'H';
    if (need_dev && o->device == DEV_NONE) {
        if (device_compiled(DEV_CUDA))
            o->device = DEV_CUDA;
        else if (device_compiled(DEV_ROCM))
            o->device = DEV_ROCM;
        else
            o->device = DEV_CUDA; /* reported below as missing support */
    }
    if (o->device != DEV_NONE && !device_compiled(o->device)) {
        if (g_rank == 0)
            fprintf(stderr, "%s: error: built without %s support (rebuild with %s=<path>)\n",
                    MB_NAME, o->device == DEV_CUDA ? "CUDA" : "ROCm",
                    o->device == DEV_CUDA ? "CUDA" : "ROCM");
        return 2;
    }
    return 0;
}

/* Largest number of timed iterations any size of this run may take: the per-iteration sample arrays
 * are allocated once with this capacity. */
long sample_capacity(const run_t *r)
{
    long cap = 1;
    for (int large = 0; large < 2; large++) {
        long it, wu;
        effective_counts(r, large ? LARGE_MESSAGE_SIZE + 1 : 1, &it, &wu);
        if (it > cap)
            cap = it;
    }
    if (r->o->stop_ci > 0 && r->o->stop_max_set && r->o->stop_max > cap)
        cap = r->o->stop_max;
    return cap;
}

void effective_counts(const run_t *r, size_t size, long *iters, long *warmup)
{
    const opts_t *o = r->o;
    int large = size > LARGE_MESSAGE_SIZE;
    switch (r->def->family) {
    case F_LAT:
        *iters = large ? LAT_LOOP_LARGE : LAT_LOOP_SMALL;
        *warmup = large ? LAT_SKIP_LARGE : LAT_SKIP_SMALL;
        break;
    case F_BW:
        *iters = large ? BW_LOOP_LARGE : BW_LOOP_SMALL;
        *warmup = large ? BW_SKIP_LARGE : BW_SKIP_SMALL;
        break;
    default:
        *iters = large ? COLL_LOOP_LARGE : COLL_LOOP_SMALL;
        *warmup = large ? COLL_SKIP_LARGE : COLL_SKIP_SMALL;
        break;
    }
    if (o->iters_set)
        *iters = o->iters;
    if (o->warmup_set)
        *warmup = o->warmup;
}

static void collect_meta(MPI_Comm comm, int rank, int nranks, int argc, char **argv)
{
    int len = 0;
    MPI_Get_library_version(META.lib_version, &len);
    META.lib_version[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = 0;
    /* trim trailing whitespace */
    for (int i = (int)strlen(META.lib_version) - 1; i >= 0 && strchr(" \t\r\n", META.lib_version[i]); i--)
        META.lib_version[i] = 0;
    MPI_Get_version(&META.mpi_major, &META.mpi_minor);
    META.wtick = MPI_Wtick();

    char name[MPI_MAX_PROCESSOR_NAME + 1];
    memset(name, 0, sizeof name);
    int nl = 0;
    MPI_Get_processor_name(name, &nl);
    META.hostlen = MPI_MAX_PROCESSOR_NAME + 1;
    META.hosts = calloc((size_t)nranks, (size_t)META.hostlen);
    if (!META.hosts)
        fatal(NULL, "allocation failed");
    MPI_Gather(name, META.hostlen, MPI_CHAR, META.hosts, META.hostlen, MPI_CHAR, 0, comm);

    if (rank == 0) {
        static const char *prefixes[] = {"FI_", "UCX_", "MPIR_CVAR_", "OMPI_MCA_", "PMIX_"};
        int cap = 16;
        META.env = malloc(sizeof(char *) * (size_t)cap);
        for (char **e = environ; e && *e; e++) {
            for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
                if (strncmp(*e, prefixes[p], strlen(prefixes[p])) == 0) {
                    if (META.nenv == cap) {
                        cap *= 2;
                        META.env = realloc(META.env, sizeof(char *) * (size_t)cap);
                    }
                    if (!META.env)
                        fatal(NULL, "allocation failed");
                    META.env[META.nenv++] = *e;
                    break;
                }
            }
        }
        size_t total = 1;
        for (int i = 0; i < argc; i++)
            total += strlen(argv[i]) + 1;
        META.cmdline = calloc(total, 1);
        if (!META.cmdline)
            fatal(NULL, "allocation failed");
        for (int i = 0; i < argc; i++) {
            if (i)
                strcat(META.cmdline, " ");
            strcat(META.cmdline, argv[i]);
        }
    }
}

/* In suite mode, --json FILE writes one document per test to FILE with the
 * test name inserted before the extension: out.json -> out.latency.json. */
static void json_path_for(const opts_t *o, const testdef_t *t, char *buf, size_t n)
{
    if (!o->suite) {
        snprintf(buf, n, "%s", o->json_path);
        return;
    }
    const char *slash = strrchr(o->json_path, '/');
    const char *dot = strrchr(o->json_path, '.');
    if (dot && (!slash || dot > slash) && dot != (slash ? slash + 1 : o->json_path))
        snprintf(buf, n, "%.*s.%s%s", (int)(dot - o->json_path), o->json_path, t->name, dot);
    else
        snprintf(buf, n, "%s.%s.json", o->json_path, t->name);
}

static int rank_rule_ok(const testdef_t *t, int n, char *msg, size_t len)
{
    switch (t->ranks) {
    case R_EXACT2:
        if (n != 2) {
            snprintf(msg, len, "%s requires exactly two processes (got %d)", t->name, n);
            return 0;
        }
        break;
    case R_EVEN:
        if (n < 2 || n % 2) {
            snprintf(msg, len, "%s requires an even number of processes, at least two (got %d)",
                     t->name, n);
            return 0;
        }
        break;
    default:
        if (n < 2) {
            snprintf(msg, len, "%s requires at least two processes (got %d)", t->name, n);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    g_rank = rank;

    opts_t o;
    int rc = parse_options(argc, argv, &o);
    if (rc) {
        MPI_Finalize();
        return rc == 1 ? 0 : 2;
    }

    char err[256] = "";
    if (device_init(o.device, err, sizeof err)) {
        if (rank == 0)
            fprintf(stderr, "%s: error: %s\n", MB_NAME, err);
        MPI_Finalize();
        return 2;
    }

    collect_meta(MPI_COMM_WORLD, rank, nranks, argc, argv);
    long pg = sysconf(_SC_PAGESIZE);

    int status = 0;
    for (int ti = 0; ti < o.ntests; ti++) {
        const testdef_t *t = o.tests[ti];
        char msg[256];
        if (!rank_rule_ok(t, nranks, msg, sizeof msg)) {
            if (rank == 0)
                fprintf(stderr, "%s: error: %s\n", MB_NAME, msg);
            status = 3;
            continue;
        }
        run_t *r = calloc(1, sizeof(run_t));
        if (!r)
            fatal(NULL, "allocation failed");
        opts_t eo = o; /* per-test effective options */
        if (!eo.max_set)
            eo.max_size = t->pt2pt ? MAX_SIZE_PT2PT : MAX_SIZE_COLL;
        if (!eo.min_set)
            eo.min_size = 1;
        if (eo.min_size > eo.max_size)
            eo.min_size = eo.max_size;
        r->def = t;
        r->o = &eo;
        r->comm = MPI_COMM_WORLD;
        r->rank = rank;
        r->nranks = nranks;
        r->pagesize = pg > 0 ? (size_t)pg : 4096;
        now_iso(r->started, sizeof r->started);
        if (t->pt2pt)
            run_pt2pt(r);
        else
            run_coll(r);
        now_iso(r->finished, sizeof r->finished);
        if (r->any_fail && status == 0)
            status = 1;
        if (rank == 0) {
            if (o.format_json) {
                write_json(r, stdout);
                fflush(stdout);
            }
            if (o.json_path) {
                char path[4096];
                json_path_for(&o, t, path, sizeof path);
                FILE *f = fopen(path, "w");
                if (!f || write_json(r, f) != 0) {
                    fprintf(stderr, "%s: error: cannot write %s: %s\n", MB_NAME, path,
                            strerror(errno));
                    status = 4;
                }
                if (f)
                    fclose(f);
            }
        }
        free(r);
    }
    /* every rank returns the same status */
    int all = 0;
    MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    device_finalize(o.device);
    MPI_Finalize();
    return all;
}
