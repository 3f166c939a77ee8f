/*
 * A stand-in for the CUDA driver (libcuda.so.1) for the command's tests: the functions
 * src/bin/nccl-trampoline/cuda.rs calls, with "device memory" in host memory, so that `perf`
 * runs on a machine without a GPU. FAKE_CUDA_DEVICES sets the device count (default 2).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

static int devices(void) {
    const char *s = getenv("FAKE_CUDA_DEVICES");
    return s ? atoi(s) : 2;
}

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = devices(); return 0; }
CUresult cuDeviceGet(int *d, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *d = ordinal;
    return 0;
}
CUresult cuDeviceGetName(char *name, int len, int d) { snprintf(name, (size_t)len, "Stand-in GPU %d", d); return 0; }
CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) { (void)d; *bytes = (size_t)1 << 30; return 0; }
CUresult cuDeviceGetPCIBusId(char *id, int len, int d) { snprintf(id, (size_t)len, "0000:%02x:00.0", d + 1); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { *ctx = (void *)(uintptr_t)(0x1000 + d); return 0; }
CUresult cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
    void *m = malloc(n);
    if (!m) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = (uint64_t)(uintptr_t)m;
    return 0;
}
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return 0; }
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = malloc(1); return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuGetErrorString(CUresult e, const char **text) {
    *text = e == 101 ? "invalid device ordinal (stand-in)" : "stand-in error";
    return 0;
}
