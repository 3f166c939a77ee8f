/*
 * A stand-in for the CUDA driver (libcuda.so.1): the functions src/cuda.rs calls, with "device
 * memory" in host memory, so that the facade's tests and the command's `perf` run on a machine
 * without a GPU. FAKE_CUDA_DEVICES sets the device count (default 2).
 *
 * Streams are modelled as in-order queues of work items, which is what the facade's stream waits
 * and watchdog observe through events. Work completes at once unless the stand-in NCCL launched
 * it as "hung" (a kernel spinning on a peer that died); hung work, and everything queued after
 * it, completes only when that communicator is aborted (NCCL's kernels poll the abort flag,
 * comm->abortFlagDev, and exit: NCCL v2.30.7-1 src/init.cc:2939-2950 setCommAbortFlags). The
 * stand-in NCCL reaches these hooks with dlopen(RTLD_NOLOAD) on this library's soname, as real
 * NCCL reaches the driver.
 *
 * Stream handles may be any value (the facade tests pass made-up ones): each distinct value gets
 * a queue on first use. Handle 0 is the legacy default stream.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2,
       CUDA_ERROR_INVALID_DEVICE = 101, CUDA_ERROR_INVALID_HANDLE = 400, CUDA_ERROR_NOT_READY = 600 };

static int devices(void) {
    const char *s = getenv("FAKE_CUDA_DEVICES");
    return s ? atoi(s) : 2;
}

/* One stream: work tickets 1..enqueued; work before `blocked_at` has completed. */
struct stream {
    uintptr_t handle;
    long enqueued;
    long blocked_at; /* first hung ticket, or LONG_MAX */
    int device;
};
#define MAX_STREAMS 256
static struct stream streams[MAX_STREAMS];
static int nstreams;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int current_ctx_device = -1;

static struct stream *find(uintptr_t handle) {
    for (int i = 0; i < nstreams; i++)
        if (streams[i].handle == handle) return &streams[i];
    if (nstreams == MAX_STREAMS) return NULL;
    struct stream *s = &streams[nstreams++];
    *s = (struct stream){handle, 0, __LONG_MAX__, current_ctx_device < 0 ? 0 : current_ctx_device};
    return s;
}

/* --- hooks for the stand-in NCCL ------------------------------------------------------- */

/* Queues one work item on `stream`; a hung one blocks the stream until released. */
long fake_cuda_launch(void *stream, int hang) {
    pthread_mutex_lock(&lock);
    struct stream *s = find((uintptr_t)stream);
    long t = s ? ++s->enqueued : 0;
    if (s && hang && s->blocked_at == __LONG_MAX__) s->blocked_at = t;
    pthread_mutex_unlock(&lock);
    return t;
}

/* The hung work on `stream` exits (its communicator was aborted). */
void fake_cuda_release(void *stream) {
    pthread_mutex_lock(&lock);
    struct stream *s = find((uintptr_t)stream);
    if (s) s->blocked_at = __LONG_MAX__;
    pthread_mutex_unlock(&lock);
}

static int stream_idle(uintptr_t handle) {
    pthread_mutex_lock(&lock);
    struct stream *s = find(handle);
    int idle = !s || s->blocked_at > s->enqueued;
    pthread_mutex_unlock(&lock);
    return idle;
}

static void nap(void) { nanosleep(&(struct timespec){0, 1000000}, NULL); }

/* --- the driver API ------------------------------------------------------------------------ */

CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = devices(); return CUDA_SUCCESS; }
CUresult cuDeviceGet(int *d, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, int d) { snprintf(name, (size_t)len, "Stand-in GPU %d", d); return CUDA_SUCCESS; }
CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) { (void)d; *bytes = (size_t)1 << 30; return CUDA_SUCCESS; }
CUresult cuDeviceGetPCIBusId(char *id, int len, int d) { snprintf(id, (size_t)len, "0000:%02x:00.0", d + 1); return CUDA_SUCCESS; }
/* A context is its device's primary context: the value 0x1000 + device. */
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { *ctx = (void *)(uintptr_t)(0x1000 + d); return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(void *ctx) {
    current_ctx_device = ctx ? (int)((uintptr_t)ctx - 0x1000) : -1;
    return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(void **ctx) {
    *ctx = current_ctx_device < 0 ? NULL : (void *)(uintptr_t)(0x1000 + current_ctx_device);
    return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(int *d) {
    if (current_ctx_device < 0) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
    *d = current_ctx_device;
    return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
    void *m = malloc(n ? n : 1);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (uint64_t)(uintptr_t)m;
    return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemsetD32_v2(uint64_t d, unsigned value, size_t n) {
    for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = value;
    return CUDA_SUCCESS;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
    (void)flags;
    *s = malloc(1);
    pthread_mutex_lock(&lock);
    find((uintptr_t)*s);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuStreamQuery(void *s) { return stream_idle((uintptr_t)s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY; }
/* Blocks while the stream has hung work, as cuStreamSynchronize does behind a spinning kernel. */
CUresult cuStreamSynchronize(void *s) {
    while (!stream_idle((uintptr_t)s)) nap();
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(void *s) { free(s); return CUDA_SUCCESS; }
CUresult cuStreamGetCtx(void *s, void **ctx) {
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)s);
    int d = st ? st->device : 0;
    pthread_mutex_unlock(&lock);
    *ctx = (void *)(uintptr_t)(0x1000 + d);
    return CUDA_SUCCESS;
}

/* An event marks the work queued on a stream when it was recorded. */
struct event { uintptr_t stream; long ticket; int recorded; };
CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    *e = calloc(1, sizeof(struct event));
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventRecord(void *e, void *s) {
    struct event *ev = e;
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)s);
    ev->stream = (uintptr_t)s;
    ev->ticket = st ? st->enqueued : 0;
    ev->recorded = 1;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuEventQuery(void *e) {
    struct event *ev = e;
    if (!ev->recorded) return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct stream *st = find(ev->stream);
    int done = !st || st->blocked_at > ev->ticket;
    pthread_mutex_unlock(&lock);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return CUDA_SUCCESS; }
/* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (9): host memory posing as device memory is on the
 * current context's device. */
CUresult cuPointerGetAttribute(void *data, int attribute, uint64_t ptr) {
    (void)ptr;
    if (attribute != 9) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = current_ctx_device < 0 ? 0 : current_ctx_device;
    return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **text) {
    switch (e) {
    case CUDA_ERROR_INVALID_DEVICE: *text = "invalid device ordinal (stand-in)"; break;
    case CUDA_ERROR_NOT_READY: *text = "device not ready (stand-in)"; break;
    default: *text = "stand-in error";
    }
    return CUDA_SUCCESS;
}
