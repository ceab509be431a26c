/* What the JSON document records about the launch: MPI library, hosts, environment,
 * command line. */
#include "bench.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static void *checked(void *p)
{
    if (!p)
        fatal(-1, "allocation failed");
    return p;
}

static void collect_library(meta_t *m)
{
    int len = 0;
    MPI_Get_library_version(m->lib_version, &len);
    m->lib_version[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = 0;
    for (int i = (int)strlen(m->lib_version) - 1; i >= 0 && strchr(" \t\r\n", m->lib_version[i]);
         i--)
        m->lib_version[i] = 0; /* trailing whitespace */
    MPI_Get_version(&m->mpi_major, &m->mpi_minor);
    m->wtick = MPI_Wtick();
}

/* The libfabric this process really runs with, asked of the loaded library itself: a deployment may
 * have swapped the host's in for the image's, and the build must not depend on libfabric. MPICH links it
 * (global scope: RTLD_DEFAULT finds it); an MPI plug-in may have opened it privately, which RTLD_NOLOAD
 * finds without ever loading a libfabric that is not already there. fi_version() returns
 * FI_VERSION(major, minor) = major << 16 | minor (fi_version(3), libfabric man pages). */
static void collect_libfabric(meta_t *m)
{
    typedef uint32_t (*fi_version_fn)(void);
    void *symbol = dlsym(RTLD_DEFAULT, "fi_version");
    void *handle = NULL;
    if (!symbol && (handle = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_NOLOAD)) != NULL)
        symbol = dlsym(handle, "fi_version");
    if (symbol) {
        fi_version_fn fi_version;
        Dl_info info;
        memcpy(&fi_version, &symbol, sizeof fi_version); /* object to function pointer, as POSIX allows */
        uint32_t version = fi_version();
        snprintf(m->fabric_version, sizeof m->fabric_version, "%u.%u", (unsigned)(version >> 16),
                 (unsigned)(version & 0xffffu));
        if (dladdr(symbol, &info) && info.dli_fname)
            snprintf(m->fabric_path, sizeof m->fabric_path, "%s", info.dli_fname);
    }
    if (handle)
        dlclose(handle);
}

/* rank 0 receives every rank's processor name */
static void collect_hosts(meta_t *m, MPI_Comm comm, int nranks)
{
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    int len = 0;
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    m->hostlen = MPI_MAX_PROCESSOR_NAME + 1;
    m->hosts = checked(calloc((size_t)nranks, (size_t)m->hostlen));
    MPI_Gather(name, m->hostlen, MPI_CHAR, m->hosts, m->hostlen, MPI_CHAR, 0, comm);
}

/* the variables that tune the MPI and its fabric */
static int is_tuning_variable(const char *entry)
{
    static const char *prefixes[] = {"FI_", "UCX_", "MPIR_CVAR_", "OMPI_MCA_", "PMIX_"};
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++)
        if (strncmp(entry, prefixes[p], strlen(prefixes[p])) == 0)
            return 1;
    return 0;
}

static void collect_environment(meta_t *m)
{
    int cap = 16;
    m->env = checked(malloc(sizeof(char *) * (size_t)cap));
    for (char **e = environ; e && *e; e++) {
        if (!is_tuning_variable(*e))
            continue;
        if (m->nenv == cap) {
            cap *= 2;
            m->env = checked(realloc(m->env, sizeof(char *) * (size_t)cap));
        }
        m->env[m->nenv++] = *e;
    }
}

static void collect_command_line(meta_t *m, int argc, char **argv)
{
    size_t total = 1;
    for (int i = 0; i < argc; i++)
        total += strlen(argv[i]) + 1;
    m->cmdline = checked(calloc(total, 1));
    for (int i = 0; i < argc; i++) {
        if (i)
            strcat(m->cmdline, " ");
        strcat(m->cmdline, argv[i]);
    }
}

/* rank 0 receives every rank's confinement (as bytes: the struct is the same on every rank of one build) */
static void collect_confinement(meta_t *m, MPI_Comm comm, int nranks, const confinement_t *self)
{
    m->self = *self;
    m->ranks = checked(calloc((size_t)nranks, sizeof(confinement_t)));
    MPI_Gather(&m->self, (int)sizeof(confinement_t), MPI_BYTE, m->ranks, (int)sizeof(confinement_t), MPI_BYTE, 0,
               comm);
}

/* Collective over comm; hosts, confinements, environment and command line are kept on rank 0 only. */
void collect_meta(meta_t *m, MPI_Comm comm, int argc, char **argv, const confinement_t *self)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    memset(m, 0, sizeof(*m));
    collect_confinement(m, comm, nranks, self);
    collect_library(m);
    collect_libfabric(m);
    collect_hosts(m, comm, nranks);
    if (rank == 0) {
        collect_environment(m);
        collect_command_line(m, argc, argv);
    }
}
