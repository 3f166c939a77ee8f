/*
 * A stand-in for the CUDA driver (libcuda.so.1): the functions src/cuda/ calls, with "device
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
 * a queue on first use. Handle 0 is the legacy default stream of the current context (one per
 * device).
 *
 * Writes to device memory land late, as CUDA documents they may (CUDA Driver API, section "API
 * synchronization behavior"), so that a launch not ordered after them reads stale data here
 * every time instead of once in a while on a GPU:
 *  - cuMemcpyHtoD from pageable memory (all host memory is pageable here) stages the bytes and
 *    returns; "the DMA to final destination may not have completed". A stream sync of the
 *    legacy stream is performed before the copy starts.
 *  - cuMemsetD32 on device memory is "asynchronous with respect to the host".
 *  - cuMemcpyHtoDAsync and cuMemsetD32Async queue on their stream (pageable sources are staged
 *    at the call: "the driver may synchronize with the stream and stage the copy").
 *  - Device-to-host copies to pageable memory "return only once the copy has completed".
 * A write is work on its stream (the legacy stream for the synchronous forms) and lands when
 * that work is known to have completed: the stream is synchronised or queried idle, an event
 * recorded after it is synchronised or queried complete, the context is synchronised, or work
 * ordered after it starts. What is ordered after what follows "Stream synchronization
 * behavior": work on the legacy stream waits for every blocking stream's earlier work and
 * blocking streams' work waits for the legacy stream's; a stream made with
 * CU_STREAM_NON_BLOCKING waits for neither. Kernels are the stand-in NCCL's: it calls
 * fake_cuda_kernel(stream, device) right before a collective reads and writes "device" memory (it
 * finds this library as real NCCL finds the driver, by dlopen of libcuda.so.1 with
 * RTLD_NOLOAD). A write still pending then lands later, over what the kernel wrote: the late
 * DMA of the race.
 *
 * cudarc (the crate's `cudarc` feature) loads this library as libcuda.so when it stands in:
 * the functions only it calls are here too (device attributes, stream-ordered allocation,
 * events it records and waits for).
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

/* A write to "device" memory that has not landed: a copy's staged bytes, or a 32-bit fill. */
struct write {
    char *dst;
    char *staged; /* NULL: a fill of `value` */
    size_t bytes;
    unsigned value;
    long ticket;
    struct write *next;
};

#define STREAM_NON_BLOCKING 1u

/* One stream: work tickets 1..enqueued; work before `blocked_at` has completed, except writes
 * still in `writes` (oldest first), which land when their completion is observed. */
struct stream {
    uintptr_t handle;
    long enqueued;
    long blocked_at; /* first hung ticket, or LONG_MAX */
    int device;
    unsigned flags; /* CU_STREAM_NON_BLOCKING or 0 */
    struct write *writes;
};
#define MAX_STREAMS 256
static struct stream streams[MAX_STREAMS];
static int nstreams;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int current_ctx_device = -1;

/* The stream `handle` of `device` (which matters for handle 0, each context's legacy stream). */
static struct stream *find_on(uintptr_t handle, int device) {
    for (int i = 0; i < nstreams; i++)
        if (streams[i].handle == handle && (handle != 0 || streams[i].device == device)) return &streams[i];
    if (nstreams == MAX_STREAMS) return NULL;
    struct stream *s = &streams[nstreams++];
    *s = (struct stream){handle, 0, __LONG_MAX__, device, 0, NULL};
    return s;
}

static struct stream *find(uintptr_t handle) {
    return find_on(handle, current_ctx_device < 0 ? 0 : current_ctx_device);
}

/* --- writes that land late (the lock is held) ------------------------------------------- */

static void apply(const struct write *w) {
    if (w->staged) {
        memcpy(w->dst, w->staged, w->bytes);
    } else {
        for (size_t i = 0; i < w->bytes / 4; i++) ((unsigned *)(void *)w->dst)[i] = w->value;
    }
}

/* Lands the writes of `s` up to ticket `upto` that no hung work holds back. */
static void land(struct stream *s, long upto) {
    while (s && s->writes && s->writes->ticket <= upto && s->writes->ticket < s->blocked_at) {
        struct write *w = s->writes;
        s->writes = w->next;
        apply(w);
        free(w->staged);
        free(w);
    }
}

static void land_all(struct stream *s) { if (s) land(s, s->enqueued); }

/* Lands what new work on `s` is ordered after on OTHER streams of its context ("Stream
 * synchronization behavior"): for the legacy stream, every blocking stream's work; for a
 * blocking stream, the legacy stream's; for a non-blocking stream, nothing. */
static void land_ordered_before(struct stream *s) {
    if (!s) return;
    if (s->handle == 0) {
        for (int i = 0; i < nstreams; i++)
            if (&streams[i] != s && streams[i].device == s->device && !(streams[i].flags & STREAM_NON_BLOCKING))
                land_all(&streams[i]);
    } else if (!(s->flags & STREAM_NON_BLOCKING)) {
        land_all(find_on(0, s->device));
    }
}

/* Queues a write on `s` (the lock is held): it lands when its completion is observed. */
static void queue_write(struct stream *s, void *dst, const void *src, size_t bytes, unsigned value) {
    struct write *w = calloc(1, sizeof *w);
    if (!w || !s) { /* out of bookkeeping: complete it now */
        if (src) memcpy(dst, src, bytes); else for (size_t i = 0; i < bytes / 4; i++) ((unsigned *)dst)[i] = value;
        free(w);
        return;
    }
    *w = (struct write){dst, NULL, bytes, value, ++s->enqueued, NULL};
    if (src) {
        w->staged = malloc(bytes ? bytes : 1);
        if (w->staged) memcpy(w->staged, src, bytes);
        else { memcpy(dst, src, bytes); free(w); return; }
    }
    struct write **at = &s->writes;
    while (*at) at = &(*at)->next;
    *at = w;
}

/* A kernel of the stand-in NCCL starts on `stream` of `device` (a communicator's device: NCCL
 * makes its context current to launch, so stream 0 is that device's legacy stream) now:
 * everything it is ordered after lands first; writes it is not ordered after stay pending. */
void fake_cuda_kernel(void *stream, int device) {
    pthread_mutex_lock(&lock);
    struct stream *s = find_on((uintptr_t)stream, device);
    land_ordered_before(s);
    land_all(s);
    pthread_mutex_unlock(&lock);
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

/* Whether the stream's work has completed; if so, its writes have landed. */
static int stream_idle(uintptr_t handle) {
    pthread_mutex_lock(&lock);
    struct stream *s = find(handle);
    int idle = !s || s->blocked_at > s->enqueued;
    if (idle) land_all(s);
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
/* Free memory: the 1 GiB less what the stand-in holds allocated (on every device together). */
static size_t allocated_bytes;
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    *total = (size_t)1 << 30;
    *free_bytes = allocated_bytes < *total ? *total - allocated_bytes : 0;
    return CUDA_SUCCESS;
}
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
/* Device memory: host memory after a header holding its size (a free drops the writes still
 * pending into it). */
#define HEADER 64
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
    char *m = malloc(HEADER + (n ? n : 1));
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *(size_t *)(void *)m = n;
    *p = (uint64_t)(uintptr_t)(m + HEADER);
    __atomic_add_fetch(&allocated_bytes, n, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(uint64_t p) {
    if (!p) return CUDA_SUCCESS;
    char *m = (char *)(uintptr_t)p - HEADER;
    size_t n = *(size_t *)(void *)m;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nstreams; i++) {
        for (struct write **at = &streams[i].writes; *at;) {
            struct write *w = *at;
            if (w->dst >= (char *)(uintptr_t)p && w->dst < (char *)(uintptr_t)p + n) {
                *at = w->next;
                free(w->staged);
                free(w);
            } else {
                at = &w->next;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    __atomic_sub_fetch(&allocated_bytes, n, __ATOMIC_RELAXED);
    free(m);
    return CUDA_SUCCESS;
}
/* Stream-ordered allocation (cudarc uses it when memory pools are supported: not here). */
CUresult cuMemAllocAsync(uint64_t *p, size_t n, void *s) { (void)s; return cuMemAlloc_v2(p, n); }
CUresult cuMemFreeAsync(uint64_t p, void *s) { (void)s; return cuMemFree_v2(p); }

/* The legacy stream's pageable copy: its stream sync first, then the bytes staged; the DMA
 * lands later. */
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
    pthread_mutex_lock(&lock);
    struct stream *legacy = find(0);
    land_ordered_before(legacy);
    land_all(legacy);
    queue_write(legacy, (void *)(uintptr_t)d, s, n, 0);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *stream) {
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)stream);
    land_ordered_before(st);
    queue_write(st, (void *)(uintptr_t)d, s, n, 0);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
/* Device to pageable host memory: returns once the copy has completed, after the work it is
 * ordered after. */
static CUresult copy_out(void *d, uint64_t s, size_t n, uintptr_t stream) {
    pthread_mutex_lock(&lock);
    struct stream *st = find(stream);
    land_ordered_before(st);
    land_all(st);
    memcpy(d, (const void *)(uintptr_t)s, n);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { return copy_out(d, s, n, 0); }
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *stream) { return copy_out(d, s, n, (uintptr_t)stream); }
CUresult cuMemsetD32_v2(uint64_t d, unsigned value, size_t n) {
    pthread_mutex_lock(&lock);
    struct stream *legacy = find(0);
    land_ordered_before(legacy);
    queue_write(legacy, (void *)(uintptr_t)d, NULL, n * 4, value);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemsetD32Async(uint64_t d, unsigned value, size_t n, void *stream) {
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)stream);
    land_ordered_before(st);
    queue_write(st, (void *)(uintptr_t)d, NULL, n * 4, value);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
    *s = malloc(1);
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)*s);
    if (st) st->flags = flags;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuStreamQuery(void *s) { return stream_idle((uintptr_t)s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY; }
/* Blocks while the stream has hung work, as cuStreamSynchronize does behind a spinning kernel. */
CUresult cuStreamSynchronize(void *s) {
    while (!stream_idle((uintptr_t)s)) nap();
    return CUDA_SUCCESS;
}
/* A destroyed stream's work still completes ("cuStreamDestroy": resources are released once the
 * device has completed the work in the stream); the writes it can complete land now. */
CUresult cuStreamDestroy_v2(void *s) {
    pthread_mutex_lock(&lock);
    land_all(find((uintptr_t)s));
    pthread_mutex_unlock(&lock);
    free(s);
    return CUDA_SUCCESS;
}
CUresult cuStreamGetCtx(void *s, void **ctx) {
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)s);
    int d = st ? st->device : 0;
    pthread_mutex_unlock(&lock);
    *ctx = (void *)(uintptr_t)(0x1000 + d);
    return CUDA_SUCCESS;
}

/* An event marks the work queued on a stream when it was recorded; the stand-in runs that
 * work at once, so the event's time is when it was recorded. */
struct event { uintptr_t stream; long ticket; int recorded, device; struct timespec at; };
/* How many times each event call was made (fake_cuda_event_calls: 0 create, 1 record, 2 query),
 * for the tests of what the watchdog costs per operation. */
static long event_calls[3];
long fake_cuda_event_calls(int which) { return __atomic_load_n(&event_calls[which], __ATOMIC_SEQ_CST); }
CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    __atomic_add_fetch(&event_calls[0], 1, __ATOMIC_SEQ_CST);
    *e = calloc(1, sizeof(struct event));
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventRecord(void *e, void *s) {
    struct event *ev = e;
    __atomic_add_fetch(&event_calls[1], 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&lock);
    struct stream *st = find((uintptr_t)s);
    ev->stream = (uintptr_t)s;
    ev->device = st ? st->device : 0;
    ev->ticket = st ? st->enqueued : 0;
    ev->recorded = 1;
    clock_gettime(CLOCK_MONOTONIC, &ev->at);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuEventQuery(void *e) {
    struct event *ev = e;
    __atomic_add_fetch(&event_calls[2], 1, __ATOMIC_SEQ_CST);
    if (!ev->recorded) return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct stream *st = find_on(ev->stream, ev->device);
    int done = !st || st->blocked_at > ev->ticket;
    if (done) land(st, ev->ticket);
    pthread_mutex_unlock(&lock);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
    struct event *a = start, *b = end;
    if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_VALUE;
    *ms = (float)((b->at.tv_sec - a->at.tv_sec) * 1e3 + (b->at.tv_nsec - a->at.tv_nsec) / 1e6);
    return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(void *e) {
    while (cuEventQuery(e) == CUDA_ERROR_NOT_READY) nap();
    return CUDA_SUCCESS;
}
/* The stream's later work waits for the event's: modelled by landing, now, the writes the
 * event covers (no later than the real device would; never later). */
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
    (void)s;
    (void)flags;
    struct event *ev = e;
    if (!ev->recorded) return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    land(find_on(ev->stream, ev->device), ev->ticket);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return CUDA_SUCCESS; }
/* Waits for every stream (behind hung work too, as the real call does). */
CUresult cuCtxSynchronize(void) {
    for (;;) {
        pthread_mutex_lock(&lock);
        int busy = 0;
        for (int i = 0; i < nstreams; i++) {
            if (streams[i].blocked_at <= streams[i].enqueued) busy = 1;
            else land_all(&streams[i]);
        }
        pthread_mutex_unlock(&lock);
        if (!busy) return CUDA_SUCCESS;
        nap();
    }
}

/* --- what only cudarc calls ---------------------------------------------------------------- */

/* Every attribute 0 (no memory pools: cudarc then allocates with cuMemAlloc), but the compute
 * capability, 9.0. */
CUresult cuDeviceGetAttribute(int *value, int attribute, int d) {
    if (d < 0 || d >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    *value = attribute == 75 ? 9 : 0; /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return CUDA_SUCCESS; }
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
