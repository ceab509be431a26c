/* Test-only double of the CUDA runtime library, compiled against the runtime's real header: one "device"
 * whose memory is host memory, so that mpistack-bench's device code runs end to end on a machine without
 * a GPU (device selection, placements, validation copied back from the device, the accelerator JSON
 * section). It measures nothing about a GPU; tests/bench/test_device_code_compiles.py builds it. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

static int current = -1;

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device != 0)
        return cudaErrorInvalidDevice;
    current = device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    memset(prop, 0, sizeof *prop);
    strcpy(prop->name, "mpistack test double");
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device)
{
    strncpy(bus, "0000:00:00.0", (size_t)len);
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = 12040;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    return error == cudaSuccess ? "no error" : "test double error";
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    return current == 0 && (*p = malloc(size)) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
    (void)flags;
    return cudaMalloc(p, size);
}

cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t count)
{
    memset(p, value, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)kind;
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}
