/* mpistack-bench: parse the command line, run the selected benchmarks, report, exit status. */
#include "bench.h"

/* Exit status: 0 ok; 1 validation failure; 2 usage error; 3 wrong number of ranks;
 * 4 JSON file not writable. */
enum { EXIT_VALIDATION = 1, EXIT_USAGE = 2, EXIT_RANKS = 3, EXIT_JSON = 4 };

/* rank 0 says what the parse asked for or why it failed; returns the exit status */
static int answer_parse(enum parse_result result, const char *error, int rank)
{
    if (rank != 0)
        return result == PARSE_HELP || result == PARSE_VERSION ? 0 : EXIT_USAGE;
    switch (result) {
    case PARSE_HELP:
        usage(stdout);
        return 0;
    case PARSE_VERSION:
        printf("%s %s\n", MB_NAME, MB_VERSION);
        return 0;
    case PARSE_USAGE_ERROR:
        fprintf(stderr, "%s: error: %s\n\n", MB_NAME, error);
        usage(stderr);
        fflush(stderr);
        return EXIT_USAGE;
    default:
        fprintf(stderr, "%s: error: %s\n", MB_NAME, error);
        return EXIT_USAGE;
    }
}

/* --check: 'ok' and the tests on stdout, or the error on stderr; no usage text, no MPI */
static int answer_check(enum parse_result result, const options_t *o, const char *error)
{
    if (result == PARSE_HELP || result == PARSE_VERSION)
        return answer_parse(result, error, 0);
    if (result != PARSE_OK) {
        fprintf(stderr, "%s: error: %s\n", MB_NAME, error);
        return EXIT_USAGE;
    }
    printf("ok:");
    for (int i = 0; i < o->ntests; i++)
        printf(" %s", o->tests[i]->name);
    printf("\n");
    return 0;
}

/* One benchmark; returns the status it leaves: a validation failure does not hide an earlier
 * problem, a wrong number of ranks or an unwritable JSON file is reported whatever came before. */
static int run_one(const benchmark_t *b, const options_t *o, const meta_t *meta, documents_t *docs,
                   int status)
{
    run_t run;
    results_t res;
    char msg[256];
    init_run(&run, b, o, meta, MPI_COMM_WORLD);
    if (!ranks_allowed(b, run.nranks, msg, sizeof msg)) {
        if (run.rank == 0)
            fprintf(stderr, "%s: error: %s\n", MB_NAME, msg);
        return EXIT_RANKS; /* a suite skips this test and goes on */
    }
    run_benchmark(&run, &res);
    if (res.any_fail && status == 0)
        status = EXIT_VALIDATION;
    if (publish_json(&run, &res, docs) != 0)
        status = EXIT_JSON;
    return status;
}

int main(int argc, char **argv)
{
    options_t o;
    meta_t meta;
    char error[2048];
    int rank, status = 0, all = 0;
    documents_t docs = {0};

    enum parse_result parsed = parse_options(argc, argv, &o, error, sizeof error);
    if (parsed == PARSE_LIST) /* no MPI: a plain command describes the suite */
        return write_benchmark_list(stdout) ? 1 : 0;
    if (o.check_only) /* no MPI: would a launch accept this command line? */
        return answer_check(parsed, &o, error);

    confinement_t confinement;
    read_confinement(&confinement); /* before MPI_Init: a launch that fails in it still says this */
    say_confinement(&confinement);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (parsed != PARSE_OK) {
        status = answer_parse(parsed, error, rank);
        MPI_Finalize();
        return status;
    }
    if (device_init(o.device, MPI_COMM_WORLD, error, sizeof error)) {
        if (rank == 0)
            fprintf(stderr, "%s: error: %s\n", MB_NAME, error);
        MPI_Finalize();
        return EXIT_USAGE;
    }

    collect_meta(&meta, MPI_COMM_WORLD, argc, argv, &confinement);
    for (int i = 0; i < o.ntests; i++)
        status = run_one(o.tests[i], &o, &meta, &docs, status);
    free_documents(&docs);

    /* every rank returns the same status */
    MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    device_finalize(o.device);
    MPI_Finalize();
    return all;
}
