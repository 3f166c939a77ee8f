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

#define COLL7(fn, t5) \
    ncclResult_t fn(const void *s, void *d, size_t n, ncclDataType_t t, t5 x, ncclComm_t c, cudaStream_t st) { \
        name(#fn); ARG(s); ARG(d); ARG(n); ARG(t); ARG(x); ARG(c->rank); ARG(st); return result(); }
COLL7(ncclAllReduce, ncclRedOp_t)
COLL7(ncclReduceScatter, ncclRedOp_t)
COLL7(ncclBroadcast, int)

ncclResult_t ncclReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st) {
    name("ncclReduce"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(op); ARG(root); ARG(c->rank); ARG(st); return result();
}

ncclResult_t ncclAllGather(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
    name("ncclAllGather"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(c->rank); ARG(st); return result();
}

ncclResult_t ncclGroupStart(void) { name("ncclGroupStart"); return result(); }
ncclResult_t ncclGroupEnd(void) { name("ncclGroupEnd"); return result(); }

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
COLL7(ncclGather, int)
COLL7(ncclScatter, int)
#endif
