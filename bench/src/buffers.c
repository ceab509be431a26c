/* Buffer placement (host, device, managed), validation patterns. The device a buffer lives on
 * is the one device.c selected. */
#include "bench.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(MPISTACK_BENCH_CUDA)
#include <cuda_runtime.h>
#endif
#if defined(MPISTACK_BENCH_ROCM)
#include <hip/hip_runtime.h>
#endif

void *buf_alloc(char place, size_t size, size_t align)
{
    void *p = NULL;
    if (size == 0)
        size = 1;
    if (place == 'H') {
        size_t rounded = (size + align - 1) / align * align;
        if (posix_memalign(&p, align, rounded) != 0)
            return NULL;
        memset(p, 0, rounded);
        return p;
    }
#if defined(MPISTACK_BENCH_CUDA)
    if (device_active() == DEV_CUDA) {
        cudaError_t e = place == 'M' ? cudaMallocManaged(&p, size, cudaMemAttachGlobal)
                                     : cudaMalloc(&p, size);
        return e == cudaSuccess ? p : NULL;
    }
#endif
#if defined(MPISTACK_BENCH_ROCM)
    if (device_active() == DEV_ROCM) {
        hipError_t e = place == 'M' ? hipMallocManaged(&p, size, hipMemAttachGlobal)
                                    : hipMalloc(&p, size);
        return e == hipSuccess ? p : NULL;
    }
#endif
    return NULL;
}

void buf_free(char place, void *p)
{
    if (!p)
        return;
    if (place == 'H') {
        free(p);
        return;
    }
#if defined(MPISTACK_BENCH_CUDA)
    if (device_active() == DEV_CUDA)
        cudaFree(p);
#endif
#if defined(MPISTACK_BENCH_ROCM)
    if (device_active() == DEV_ROCM)
        hipFree(p);
#endif
}

void buf_set(char place, void *p, int byte, size_t n)
{
    if (place == 'H') {
        memset(p, byte, n);
        return;
    }
#if defined(MPISTACK_BENCH_CUDA)
    if (device_active() == DEV_CUDA) {
        cudaMemset(p, byte, n);
        cudaDeviceSynchronize();
    }
#endif
#if defined(MPISTACK_BENCH_ROCM)
    if (device_active() == DEV_ROCM) {
        hipMemset(p, byte, n);
        hipDeviceSynchronize();
    }
#endif
}

void buf_put(char place, void *dst, const void *host, size_t n)
{
    if (place == 'H') {
        if (dst != host)
            memcpy(dst, host, n);
        return;
    }
#if defined(MPISTACK_BENCH_CUDA)
    if (device_active() == DEV_CUDA) {
        cudaMemcpy(dst, host, n, cudaMemcpyDefault);
        cudaDeviceSynchronize();
    }
#endif
#if defined(MPISTACK_BENCH_ROCM)
    if (device_active() == DEV_ROCM) {
        hipMemcpy(dst, host, n, hipMemcpyDefault);
        hipDeviceSynchronize();
    }
#endif
}

/* Host-readable view of a buffer: the buffer itself for host memory,
 * otherwise a copy in the host staging area. */
const unsigned char *buf_view(char place, const void *p, void *stage, size_t n)
{
    if (place == 'H')
        return (const unsigned char *)p;
#if defined(MPISTACK_BENCH_CUDA)
    if (device_active() == DEV_CUDA) {
        cudaMemcpy(stage, p, n, cudaMemcpyDefault);
        cudaDeviceSynchronize();
    }
#endif
#if defined(MPISTACK_BENCH_ROCM)
    if (device_active() == DEV_ROCM) {
        hipMemcpy(stage, p, n, hipMemcpyDefault);
        hipDeviceSynchronize();
    }
#endif
    (void)n;
    return (const unsigned char *)stage;
}

/* Validation pattern: a byte that depends on the position in the buffer,
 * the message size, the validation iteration and a seed (sender rank or
 * block id), so misplaced, stale or foreign data is detected. */
unsigned char pattern_byte(size_t i, size_t size, long iter, long seed)
{
    uint32_t h = (uint32_t)(i + 1) * 2654435761u;
    h ^= (uint32_t)size * 40503u + (uint32_t)iter * 977u + (uint32_t)seed * 7919u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (unsigned char)(h & 0xffu);
}

void fill_pattern(unsigned char *h, size_t n, size_t size, long iter, long seed)
{
    for (size_t i = 0; i < n; i++)
        h[i] = pattern_byte(i, size, iter, seed);
}

long check_pattern(const unsigned char *h, size_t n, size_t size, long iter, long seed)
{
    long errors = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] != pattern_byte(i, size, iter, seed))
            errors++;
    return errors;
}

/* The test-only build (make CORRUPT=1) flips one received byte, so the tests can see -c fail. */
unsigned char *corrupt_in_test_build(unsigned char *received, size_t n)
{
#ifdef MPISTACK_BENCH_CORRUPT
    if (n)
        received[n / 2] ^= 0x5a;
#else
    (void)n;
#endif
    return received;
}
