/* Test-only stand-in for the HIP runtime header: declares exactly what mpistack-bench calls, with
 * HIP's signatures, so that the ROCm code path is compiled (not run) on machines without ROCm. HIP's
 * headers come with ROCm only (no package this project can install carries them); the CUDA path is
 * compiled against the CUDA runtime's real headers instead (tests/bench/test_device_code_compiles.py). */
#ifndef MPISTACK_TEST_HIP_RUNTIME_H
#define MPISTACK_TEST_HIP_RUNTIME_H
#include <stddef.h>
typedef enum { hipSuccess = 0 } hipError_t;
typedef enum { hipMemcpyDefault = 4 } hipMemcpyKind;
typedef struct { char name[256]; } hipDeviceProp_t;
#define hipMemAttachGlobal 0x01
hipError_t hipGetDeviceCount(int *count);
hipError_t hipSetDevice(int device);
hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int device);
hipError_t hipDeviceGetPCIBusId(char *pciBusId, int len, int device);
hipError_t hipDriverGetVersion(int *driverVersion);
hipError_t hipRuntimeGetVersion(int *runtimeVersion);
const char *hipGetErrorString(hipError_t error);
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags);
hipError_t hipFree(void *ptr);
hipError_t hipMemset(void *ptr, int value, size_t count);
hipError_t hipMemcpy(void *dst, const void *src, size_t count, hipMemcpyKind kind);
hipError_t hipDeviceSynchronize(void);
#endif
