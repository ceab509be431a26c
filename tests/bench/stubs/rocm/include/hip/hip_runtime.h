/* Test-only stand-in for the HIP runtime header (see the CUDA stub beside it). */
#ifndef MPISTACK_TEST_HIP_RUNTIME_H
#define MPISTACK_TEST_HIP_RUNTIME_H
#include <stddef.h>
typedef enum { hipSuccess = 0 } hipError_t;
typedef enum { hipMemcpyDefault = 4 } hipMemcpyKind;
#define hipMemAttachGlobal 0x01
hipError_t hipGetDeviceCount(int *count);
hipError_t hipSetDevice(int device);
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags);
hipError_t hipFree(void *ptr);
hipError_t hipMemset(void *ptr, int value, size_t count);
hipError_t hipMemcpy(void *dst, const void *src, size_t count, hipMemcpyKind kind);
hipError_t hipDeviceSynchronize(void);
#endif
