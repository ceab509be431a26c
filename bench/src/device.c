/* The accelerator of a launch, CUDA or ROCm, each compiled only under its build flag (a host-only
 * build keeps none of it): the device each rank takes (its rank among the ranks of its node, round
 * robin over the node's devices), what that device is (name, PCI address, driver and runtime
 * versions), and whether the MPI library says it takes device buffers. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#if defined(MPISTACK_BENCH_CUDA)
#include <cuda_runtime.h>
#endif
#if defined(MPISTACK_BENCH_ROCM)
#include <hip/hip_runtime.h>
#endif
#if (defined(MPISTACK_BENCH_CUDA) || defined(MPISTACK_BENCH_ROCM)) && defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* Open MPI's MPIX_Query_cuda_support (and MPIX_Query_rocm_support in 5.x) */
#endif

static int active_device = DEV_NONE;
static device_info_t info;
static device_rank_t *ranks; /* rank 0: every rank's device */

int device_active(void)
{
    return active_device;
}

const device_info_t *device_info(void)
{
    return &info;
}

const device_rank_t *device_ranks(void)
{
    return ranks;
}

int device_compiled(int device)
{
    switch (device) {
    case DEV_NONE:
        return 1;
#if defined(MPISTACK_BENCH_CUDA)
    case DEV_CUDA:
        return 1;
#endif
#if defined(MPISTACK_BENCH_ROCM)
    case DEV_ROCM:
        return 1;
#endif
    default:
        return 0;
    }
}

#if defined(MPISTACK_BENCH_CUDA) || defined(MPISTACK_BENCH_ROCM)
/* This rank's index among the ranks of its node, as the MPI library sees the node (any launcher,
 * inside containers too); the launcher's variables (Open MPI, MPICH Hydra, Slurm) only when the
 * library cannot split. */
static int local_rank(MPI_Comm comm, char *from, size_t fromlen)
{
    MPI_Comm node;
    int rank = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &rank);
        MPI_Comm_free(&node);
        snprintf(from, fromlen, "MPI_Comm_split_type");
        return rank;
    }
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *value = getenv(names[i]);
        if (value) {
            snprintf(from, fromlen, "%s", names[i]);
            return atoi(value);
        }
    }
    snprintf(from, fromlen, "none");
    return 0;
}

/* What the MPI library says about device buffers: Open MPI's extension (mpi-ext.h) where the
 * library has it, MPICH's MPIX_GPU_query_support (4.0 and later); -1 where it has no way to say. */
static void query_mpi_support(int device)
{
    info.mpi_support = -1;
#if defined(OPEN_MPI) && OPEN_MPI
#if defined(MPISTACK_BENCH_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT)
    if (device == DEV_CUDA) {
        info.mpi_support = MPIX_Query_cuda_support() ? 1 : 0;
        snprintf(info.mpi_query, sizeof info.mpi_query, "MPIX_Query_cuda_support");
    }
#endif
#if defined(MPISTACK_BENCH_ROCM) && defined(MPIX_ROCM_AWARE_SUPPORT)
    if (device == DEV_ROCM) {
        info.mpi_support = MPIX_Query_rocm_support() ? 1 : 0;
        snprintf(info.mpi_query, sizeof info.mpi_query, "MPIX_Query_rocm_support");
    }
#endif
#elif defined(MPICH) && defined(MPIX_GPU_SUPPORT_CUDA) && defined(MPIX_GPU_SUPPORT_HIP)
    int supported = 0;
    if (MPIX_GPU_query_support(device == DEV_CUDA ? MPIX_GPU_SUPPORT_CUDA : MPIX_GPU_SUPPORT_HIP,
                               &supported) == MPI_SUCCESS) {
        info.mpi_support = supported ? 1 : 0;
        snprintf(info.mpi_query, sizeof info.mpi_query, "MPIX_GPU_query_support");
    }
#endif
    (void)device;
}
#endif

#if defined(MPISTACK_BENCH_CUDA)
static int select_cuda(char *err, size_t errlen)
{
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceCount(&info.count);
    if (e != cudaSuccess || info.count < 1) {
        snprintf(err, errlen, "no CUDA device available (cudaGetDeviceCount: %s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 1;
    }
    info.index = info.local_rank % info.count;
    if ((e = cudaSetDevice(info.index)) != cudaSuccess) {
        snprintf(err, errlen, "cudaSetDevice(%d): %s", info.index, cudaGetErrorString(e));
        return 1;
    }
    if (cudaGetDeviceProperties(&prop, info.index) == cudaSuccess)
        snprintf(info.name, sizeof info.name, "%s", prop.name);
    cudaDeviceGetPCIBusId(info.pci_bus_id, (int)sizeof info.pci_bus_id, info.index);
    cudaDriverGetVersion(&info.driver_version);
    cudaRuntimeGetVersion(&info.runtime_version);
    return 0;
}
#endif

#if defined(MPISTACK_BENCH_ROCM)
static int select_rocm(char *err, size_t errlen)
{
    hipDeviceProp_t prop;
    hipError_t e = hipGetDeviceCount(&info.count);
    if (e != hipSuccess || info.count < 1) {
        snprintf(err, errlen, "no ROCm device available (hipGetDeviceCount: %s)",
                 e != hipSuccess ? hipGetErrorString(e) : "0 devices");
        return 1;
    }
    info.index = info.local_rank % info.count;
    if ((e = hipSetDevice(info.index)) != hipSuccess) {
        snprintf(err, errlen, "hipSetDevice(%d): %s", info.index, hipGetErrorString(e));
        return 1;
    }
    if (hipGetDeviceProperties(&prop, info.index) == hipSuccess)
        snprintf(info.name, sizeof info.name, "%s", prop.name);
    hipDeviceGetPCIBusId(info.pci_bus_id, (int)sizeof info.pci_bus_id, info.index);
    hipDriverGetVersion(&info.driver_version);
    hipRuntimeGetVersion(&info.runtime_version);
    return 0;
}
#endif

/* Collective over comm when a device is asked for: every rank selects its device, then all learn
 * whether every rank could (so that none waits for a rank that gave up), and rank 0 gathers which
 * device each rank took. */
int device_init(int device, MPI_Comm comm, char *err, size_t errlen)
{
    active_device = device;
    memset(&info, 0, sizeof info);
    if (device == DEV_NONE)
        return 0;
    if (!device_compiled(device)) {
        snprintf(err, errlen, "built without %s support", device == DEV_CUDA ? "CUDA" : "ROCm");
        return 1;
    }
#if defined(MPISTACK_BENCH_CUDA) || defined(MPISTACK_BENCH_ROCM)
    int failed = 0, any = 0, rank = 0, nranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    info.local_rank = local_rank(comm, info.local_rank_from, sizeof info.local_rank_from);
    if (rank == 0 && !(ranks = calloc((size_t)nranks, sizeof *ranks))) {
        snprintf(err, errlen, "out of memory");
        failed = 1;
    }
#if defined(MPISTACK_BENCH_CUDA)
    if (device == DEV_CUDA && !failed)
        failed = select_cuda(err, errlen);
#endif
#if defined(MPISTACK_BENCH_ROCM)
    if (device == DEV_ROCM && !failed)
        failed = select_rocm(err, errlen);
#endif
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any) {
        if (!failed)
            snprintf(err, errlen, "another rank could not select its device");
        return 1;
    }
    query_mpi_support(device);
    device_rank_t mine;
    memset(&mine, 0, sizeof mine);
    mine.local_rank = info.local_rank;
    mine.index = info.index;
    memcpy(mine.pci_bus_id, info.pci_bus_id, sizeof mine.pci_bus_id);
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, ranks, (int)sizeof mine, MPI_BYTE, 0, comm);
#else
    (void)comm;
#endif
    return 0;
}

void device_finalize(int device)
{
    (void)device;
    free(ranks);
    ranks = NULL;
}
