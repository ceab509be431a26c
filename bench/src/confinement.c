/* What confines this process: the inode of each namespace that decides how ranks of one node can talk
 * (/proc/self/ns/{user,ipc,pid,mnt,net}, namespaces(7)), its uid and its effective capabilities (CapEff in
 * /proc/self/status, proc(5)). Two ranks of a node in different user namespaces cannot use cross-memory
 * attach nor open each other's /proc/PID/fd (ptrace(2) access checks); in different IPC namespaces they
 * cannot attach each other's segments. Read before MPI_Init, and said on stderr when MPISTACK_CONFINEMENT
 * is set, so that a launch that aborts or hangs in MPI_Init still leaves it. With them the host name and the
 * kernel's boot id (/proc/sys/kernel/random/boot_id, random(4)): "nodes" that are namespaces of one machine
 * have names of their own and one boot id, which UCX takes as one system (ucs_get_system_id) and so offers
 * its shared-memory transports between them. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const NAMESPACE_NAMES[NAMESPACE_COUNT] = {"user", "ipc", "pid", "mnt", "net"};

void read_confinement(confinement_t *c)
{
    char path[64], line[256];
    struct stat st;
    memset(c, 0, sizeof *c);
    for (int i = 0; i < NAMESPACE_COUNT; i++) {
        snprintf(path, sizeof path, "/proc/self/ns/%s", NAMESPACE_NAMES[i]);
        c->ns[i] = stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
    }
    c->uid = (long long)getuid();
    FILE *status = fopen("/proc/self/status", "r");
    while (status && fgets(line, sizeof line, status))
        if (sscanf(line, "CapEff: %llx", &c->cap_eff) == 1)
            break;
    if (status)
        fclose(status);
    if (gethostname(c->host, sizeof c->host - 1) != 0)
        c->host[0] = 0;
    FILE *boot = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!boot || fscanf(boot, "%39s", c->boot) != 1)
        c->boot[0] = 0;
    if (boot)
        fclose(boot);
}

void say_confinement(const confinement_t *c)
{
    const char *asked = getenv("MPISTACK_CONFINEMENT");
    if (!asked || !*asked || strcmp(asked, "0") == 0)
        return;
    char text[512];
    int n = snprintf(text, sizeof text, "%s: confinement host=%s pid=%ld uid=%lld cap_eff=%llx", MB_NAME,
                     c->host, (long)getpid(), c->uid, c->cap_eff);
    for (int i = 0; i < NAMESPACE_COUNT && n > 0 && n < (int)sizeof text; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, " ns_%s=%llu", NAMESPACE_NAMES[i], c->ns[i]);
    if (c->boot[0] && n > 0 && n < (int)sizeof text)
        snprintf(text + n, sizeof text - (size_t)n, " boot=%s", c->boot);
    fprintf(stderr, "%s\n", text); /* one write per line: the ranks' lines do not interleave */
}
