/*
 * A stand-in for libnccl.so.2 with NCCL's exact prototypes, for the facade tests. It records
 * what every call received (function name, then each argument's bytes; the 128 id bytes in
 * full) and answers like NCCL would. FAKE_VERSION (an NCCL_VERSION_CODE) selects which
 * symbols exist, so variants prove the facade's version gating:
 *   23203 -> 2.32.3 (everything), 21803 -> 2.18.3, 2708 -> 2.7.8 (old version formula).
 * fake_fail_next(code, text) makes the next call fail with `code` and last-error `text`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 23203
#endif
#define AT_LEAST(code) (FAKE_VERSION >= 10000 ? FAKE_VERSION >= (code) : 0)

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm { int nranks, rank, device; int async; } *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;
typedef enum { ncclSuccess = 0, ncclInvalidArgument = 4, ncclInProgress = 7 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclNumTypes = 12 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;
typedef struct { size_t size; unsigned magic, version; } ncclConfig_t; /* header only: bytes recorded by size */
typedef void *ncclWindow_t;

static unsigned char rec[1 << 16];
static size_t rec_len;
static int fail_code;
static char last_error[256];

void fake_log_reset(void) { rec_len = 0; }
const unsigned char *fake_log_data(void) { return rec; }
size_t fake_log_size(void) { return rec_len; }
void fake_fail_next(int code, const char *text) {
    fail_code = code;
    strncpy(last_error, text, sizeof last_error - 1);
}

static void put(const void *p, size_t n) {
    if (rec_len + n > sizeof rec) return; /* long runs (the command's perf) stop recording */
    memcpy(rec + rec_len, p, n);
    rec_len += n;
}
static void name(const char *s) { put(s, strlen(s) + 1); }
#define ARG(x) put(&(x), sizeof(x))

/* The result of the current call: a pending failure, else success. */
static ncclResult_t result(void) {
    int c = fail_code;
    fail_code = 0;
    if (c == 0) last_error[0] = 0;
    return (ncclResult_t)c;
}

ncclResult_t ncclGetVersion(int *version) { name("ncclGetVersion"); *version = FAKE_VERSION; return ncclSuccess; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    name("ncclGetUniqueId");
    ncclResult_t r = result();
    static unsigned serial; /* every id differs, as NCCL's do */
    if (r == ncclSuccess) {
        for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
        serial++;
        memcpy(id->internal + 124, &serial, sizeof serial);
    }
    return r;
}

static ncclResult_t init(ncclComm_t *comm, int nranks, int rank) {
    ncclResult_t r = result();
    if (r != ncclSuccess) return r;
    *comm = calloc(1, sizeof **comm);
    (*comm)->nranks = nranks;
    (*comm)->rank = rank;
    (*comm)->device = rank;
    return r;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    name("ncclCommInitRank"); ARG(nranks); put(commId.internal, 128); ARG(rank);
    memset(&commId, 0xA5, sizeof commId); /* the callee owns its copy */
    return init(comm, nranks, rank);
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
    name("ncclCommInitAll"); ARG(ndev); put(devlist, sizeof(int) * (size_t)ndev);
    ncclResult_t r = result();
    for (int i = 0; r == ncclSuccess && i < ndev; i++) {
        if (devlist && devlist[i] < 0) { /* as NCCL: "Invalid device" */
            strcpy(last_error, "invalid device (stand-in)");
            return ncclInvalidArgument;
        }
    }
    for (int i = 0; r == ncclSuccess && i < ndev; i++) init(&comms[i], ndev, i);
    return r;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { name("ncclCommDestroy"); ARG(comm->rank); free(comm); return result(); }
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) { name("ncclCommCount"); *count = comm->nranks; return result(); }
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) { name("ncclCommCuDevice"); *device = comm->device; return result(); }
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) { name("ncclCommUserRank"); *rank = comm->rank; return result(); }

const char *ncclGetErrorString(ncclResult_t code) {
    switch ((int)code) {
    case 0: return "no error";
    case 4: return "invalid argument (stand-in)";
    default: return "unknown result code";
    }
}


/*
 * Executing collectives (only with FAKE_NCCL_EXECUTE=1, for the command's perf tests; the
 * facade tests pass made-up pointers). Device memory is host memory (tests/c/fake_cuda.c).
 * Calls are queued and run when the outermost group ends (or at once outside a group); one
 * collective is nranks consecutive calls of one kind, in rank order. Types: the integer ones,
 * float32 and float64 (others fail with ncclInvalidArgument). FAKE_NCCL_CORRUPT=1 spoils the
 * first element of every result.
 */
enum kind { K_ALLREDUCE, K_REDUCESCATTER, K_BROADCAST, K_REDUCE, K_ALLGATHER };
struct op { enum kind kind; const char *s; char *d; size_t n; int type, op, root, nranks; };
static struct op queue[256];
static int queued, group_depth;

static int env_on(const char *name) { const char *e = getenv(name); return e && *e == '1'; }
static size_t type_size(int t) {
    switch (t) { case 0: case 1: return 1; case 2: case 3: case 7: return 4; case 4: case 5: case 8: return 8; default: return 0; }
}
static double load(const char *p, int t) {
    switch (t) {
    case 0: return *(const int8_t *)p;
    case 1: return *(const uint8_t *)p;
    case 2: return *(const int32_t *)p;
    case 3: return *(const uint32_t *)p;
    case 4: return (double)*(const int64_t *)p;
    case 5: return (double)*(const uint64_t *)p;
    case 7: return *(const float *)p;
    default: return *(const double *)p;
    }
}
static void store(char *p, int t, double v) {
    switch (t) {
    case 0: *(int8_t *)p = (int8_t)(int64_t)v; break;
    case 1: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
    case 2: *(int32_t *)p = (int32_t)(int64_t)v; break;
    case 3: *(uint32_t *)p = (uint32_t)(int64_t)v; break;
    case 4: *(int64_t *)p = (int64_t)v; break;
    case 5: *(uint64_t *)p = (uint64_t)v; break;
    case 7: *(float *)p = (float)v; break;
    default: *(double *)p = v;
    }
}
/* The reduction of column `i` of the nr inputs of `len` elements each in `in`. */
static double column(const char *in, size_t len, size_t i, int nr, int t, int op) {
    size_t es = type_size(t);
    double v = load(in + i * es, t);
    for (int k = 1; k < nr; k++) {
        double w = load(in + ((size_t)k * len + i) * es, t);
        v = op == 1 ? v * w : op == 2 ? (w > v ? w : v) : op == 3 ? (w < v ? w : v) : v + w;
    }
    if (op == 4) v = (t == 7 || t == 8) ? v / nr : (double)((int64_t)v / nr);
    return v;
}

static void run_collective(const struct op *q) {
    int nr = q[0].nranks, t = q[0].type;
    size_t n = q[0].n, es = type_size(t);
    /* Elements each rank contributes; every input is copied first (in place, outputs overlap). */
    size_t len = (q[0].kind == K_REDUCESCATTER) ? n * (size_t)nr : n;
    char *in = malloc(len * es * (size_t)nr + 1);
    for (int r = 0; r < nr; r++) memcpy(in + (size_t)r * len * es, q[r].s, len * es);
    for (int r = 0; r < nr; r++) {
        const struct op *o = &q[r];
        switch (o->kind) {
        case K_ALLREDUCE:
        case K_REDUCE:
            if (o->kind == K_REDUCE && r != o->root) break;
            for (size_t i = 0; i < n; i++) store(o->d + i * es, t, column(in, len, i, nr, t, o->op));
            break;
        case K_REDUCESCATTER:
            for (size_t i = 0; i < n; i++) store(o->d + i * es, t, column(in, len, (size_t)r * n + i, nr, t, o->op));
            break;
        case K_BROADCAST:
            memcpy(o->d, in + (size_t)o->root * len * es, n * es);
            break;
        case K_ALLGATHER:
            memcpy(o->d, in, n * es * (size_t)nr);
            break;
        }
        int has_result = !(o->kind == K_REDUCE && r != o->root);
        if (has_result && n && env_on("FAKE_NCCL_CORRUPT")) store(o->d, t, load(o->d, t) + 1);
    }
    free(in);
}

static void run_queue(void) {
    /* A collective whose ranks live in other processes (--procs) cannot run here: dropped. */
    for (int i = 0; i < queued && queue[i].nranks > 0 && i + queue[i].nranks <= queued; i += queue[i].nranks)
        run_collective(&queue[i]);
    queued = 0;
}

static ncclResult_t enqueue(enum kind k, const void *s, void *d, size_t n, int t, int op, int root, ncclComm_t c) {
    if (!env_on("FAKE_NCCL_EXECUTE")) return ncclSuccess;
    if (type_size(t) == 0 || queued == (int)(sizeof queue / sizeof queue[0])) {
        strcpy(last_error, "type or queue length not executed by the stand-in");
        return ncclInvalidArgument;
    }
    queue[queued++] = (struct op){k, s, d, n, t, op, root, c->nranks};
    if (group_depth == 0) run_queue();
    return ncclSuccess;
}

/* `op_arg`/`root_arg`: how the fifth argument feeds the stand-in's execution. */
#define COLL7(fn, t5, kind, op_arg, root_arg) \
    ncclResult_t fn(const void *s, void *d, size_t n, ncclDataType_t t, t5 x, ncclComm_t c, cudaStream_t st) { \
        name(#fn); ARG(s); ARG(d); ARG(n); ARG(t); ARG(x); ARG(c->rank); ARG(st); \
        ncclResult_t r = result(); \
        return r != ncclSuccess ? r : enqueue(kind, s, d, n, (int)t, op_arg, root_arg, c); }
COLL7(ncclAllReduce, ncclRedOp_t, K_ALLREDUCE, (int)x, 0)
COLL7(ncclReduceScatter, ncclRedOp_t, K_REDUCESCATTER, (int)x, 0)
COLL7(ncclBroadcast, int, K_BROADCAST, 0, x)

ncclResult_t ncclReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st) {
    name("ncclReduce"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(op); ARG(root); ARG(c->rank); ARG(st);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue(K_REDUCE, s, d, n, (int)t, (int)op, root, c);
}

ncclResult_t ncclAllGather(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
    name("ncclAllGather"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(c->rank); ARG(st);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue(K_ALLGATHER, s, d, n, (int)t, 0, 0, c);
}

ncclResult_t ncclGroupStart(void) { name("ncclGroupStart"); group_depth++; return result(); }
ncclResult_t ncclGroupEnd(void) {
    name("ncclGroupEnd");
    if (group_depth > 0 && --group_depth == 0) run_queue();
    return result();
}

#if FAKE_VERSION >= 2402
ncclResult_t ncclCommAbort(ncclComm_t comm) { name("ncclCommAbort"); ARG(comm->rank); free(comm); return result(); }
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *e) { name("ncclCommGetAsyncError"); *e = (ncclResult_t)comm->async; return result(); }
#endif

#if FAKE_VERSION >= 2703
ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
    name("ncclSend"); ARG(s); ARG(n); ARG(t); ARG(peer); ARG(c->rank); ARG(st); return result();
}
ncclResult_t ncclRecv(void *d, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
    name("ncclRecv"); ARG(d); ARG(n); ARG(t); ARG(peer); ARG(c->rank); ARG(st); return result();
}
#endif

#if AT_LEAST(21104)
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t t, ncclScalarResidence_t res, ncclComm_t c) {
    name("ncclRedOpCreatePreMulSum"); put(scalar, 8); ARG(t); ARG(res); ARG(c->rank);
    *op = (ncclRedOp_t)5;
    return result();
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c) { name("ncclRedOpDestroy"); ARG(op); ARG(c->rank); return result(); }
#endif

#if AT_LEAST(21304)
const char *ncclGetLastError(ncclComm_t comm) { (void)comm; return last_error; }
#endif

#if AT_LEAST(21403)
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config) {
    name("ncclCommInitRankConfig"); ARG(nranks); put(commId.internal, 128); ARG(rank);
    size_t size = config->size;
    ARG(size);
    put(config, size);
    memset(&commId, 0xA5, sizeof commId);
    ncclResult_t r = init(comm, nranks, rank);
    /* blocking == 0: a non-blocking communicator, still initialising */
    if (r == ncclSuccess && size >= 20 && ((int *)config)[4] == 0) { (*comm)->async = ncclInProgress; return ncclInProgress; }
    return r;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm) { name("ncclCommFinalize"); ARG(comm->rank); return result(); }
#endif

#if AT_LEAST(21801)
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
    name("ncclCommSplit"); ARG(comm->rank); ARG(color); ARG(key); ARG(config);
    ncclResult_t r = result();
    if (r != ncclSuccess) return r;
    if (color == -1) { *newcomm = NULL; return r; }
    return init(newcomm, 1, 0);
}
#endif

#if AT_LEAST(21901)
ncclResult_t ncclMemAlloc(void **ptr, size_t size) { name("ncclMemAlloc"); ARG(size); *ptr = malloc(size); return result(); }
ncclResult_t ncclMemFree(void *ptr) { name("ncclMemFree"); free(ptr); return result(); }
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
    name("ncclCommRegister"); ARG(comm->rank); ARG(buff); ARG(size); *handle = (void *)0x4855; return result();
}
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) { name("ncclCommDeregister"); ARG(comm->rank); ARG(handle); return result(); }
#endif

#if AT_LEAST(22703)
ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int n, ncclComm_t *newcomm, ncclConfig_t *config, int flags) {
    name("ncclCommShrink"); ARG(comm->rank); ARG(n); put(exclude, sizeof(int) * (size_t)n); ARG(config); ARG(flags);
    return init(newcomm, comm->nranks - n, 0);
}
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags) {
    name("ncclCommWindowRegister"); ARG(comm->rank); ARG(buff); ARG(size); ARG(flags); *win = (void *)0x5749; return result();
}
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) { name("ncclCommWindowDeregister"); ARG(comm->rank); ARG(win); return result(); }
#endif

#if AT_LEAST(22803)
ncclResult_t ncclAlltoAll(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
    name("ncclAlltoAll"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(c->rank); ARG(st); return result();
}
/* Recorded only (the stand-in does not execute them). */
#define RECORD7(fn, t5) \
    ncclResult_t fn(const void *s, void *d, size_t n, ncclDataType_t t, t5 x, ncclComm_t c, cudaStream_t st) { \
        name(#fn); ARG(s); ARG(d); ARG(n); ARG(t); ARG(x); ARG(c->rank); ARG(st); return result(); }
RECORD7(ncclGather, int)
RECORD7(ncclScatter, int)
#endif
