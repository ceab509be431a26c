/* Test-only stand-in for the CUDA runtime header: declares exactly what mpistack-bench calls, with the
 * toolkit's signatures, so that the CUDA code path is compiled (not run) on machines without CUDA. */
#ifndef MPISTACK_TEST_CUDA_RUNTIME_H
#define MPISTACK_TEST_CUDA_RUNTIME_H
#include <stddef.h>
typedef enum { cudaSuccess = 0 } cudaError_t;
enum cudaMemcpyKind { cudaMemcpyDefault = 4 };
#define cudaMemAttachGlobal 0x01
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaMalloc(void **ptr, size_t size);
cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemset(void *ptr, int value, size_t count);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaDeviceSynchronize(void);
#endif
