/* Cross-memory attach (CMA, process_vm_readv(2)), the single-copy path of MPI libraries, tried between two
 * processes: `cma_check` reads a forked child's memory; `cma_check PID` reads the memory of another
 * `cma_check sleep` (linked static and at a fixed address, so the same variable lies at the same address in
 * both). Prints "ok" or the kernel's refusal. benchmarks/cma_check.py runs it natively and in containers. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static char target[64] = "the bytes another process reads";

int main(int argc, char **argv) {
    pid_t pid;
    if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
        sleep(120);
        return 0;
    }
    if (argc > 1) {
        pid = (pid_t)atoi(argv[1]);
    } else if ((pid = fork()) == 0) {
        sleep(30);
        return 0;
    } else {
        usleep(200000);
    }
    char buffer[sizeof target];
    struct iovec local = {buffer, sizeof buffer}, remote = {target, sizeof target};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n == (ssize_t)sizeof buffer && memcmp(buffer, target, sizeof target) == 0)
        printf("ok\n");
    else
        printf("refused: %s\n", n < 0 ? strerror(errno) : "short read");
    if (argc == 1)
        kill(pid, SIGKILL);
    return 0;
}
