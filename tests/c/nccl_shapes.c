/*
 * Stand-ins with NCCL's exact prototypes (nccl.h, 2.14 and later), for the conformance tests:
 * each records every byte it receives into the oracle runtime's buffer, writes into its own
 * copy of the by-value ncclUniqueId (as NCCL's own code may), and returns the runtime's
 * return bytes. Each has a C caller giving the reference recording.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern unsigned char nt_rec[];
extern size_t nt_rec_len;
extern unsigned char nt_ret_src[];
void nt_scribble(void *p, size_t n);

static void rec_put(const void *p, size_t n) {
    memcpy(nt_rec + nt_rec_len, p, n);
    nt_rec_len += n;
}

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;
typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
               ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
               ncclNumResults = 8 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclFloat64 = 8, ncclNumTypes = 12 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef struct ncclConfig_v21700 ncclConfig_t;

static ncclResult_t ret_code(void) {
    ncclResult_t r;
    memcpy(&r, nt_ret_src, sizeof r);
    return r;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    rec_put(&comm, sizeof comm);
    rec_put(&nranks, sizeof nranks);
    rec_put(commId.internal, sizeof commId.internal);
    rec_put(&rank, sizeof rank);
    nt_scribble(&commId, sizeof commId);
    return ret_code();
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config) {
    rec_put(&comm, sizeof comm);
    rec_put(&nranks, sizeof nranks);
    rec_put(commId.internal, sizeof commId.internal);
    rec_put(&rank, sizeof rank);
    rec_put(&config, sizeof config);
    nt_scribble(&commId, sizeof commId);
    return ret_code();
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    rec_put(&sendbuff, sizeof sendbuff);
    rec_put(&recvbuff, sizeof recvbuff);
    rec_put(&count, sizeof count);
    rec_put(&datatype, sizeof datatype);
    rec_put(&op, sizeof op);
    rec_put(&root, sizeof root);
    rec_put(&comm, sizeof comm);
    rec_put(&stream, sizeof stream);
    return ret_code();
}

/* Reference callers: same argument bytes, called by the C compiler. */
void ref_ncclCommInitRank(void *const *a, void *ret) {
    ncclComm_t *comm; int nranks; ncclUniqueId id; int rank;
    memcpy(&comm, a[0], sizeof comm); memcpy(&nranks, a[1], sizeof nranks);
    memcpy(&id, a[2], sizeof id); memcpy(&rank, a[3], sizeof rank);
    ncclResult_t r = ncclCommInitRank(comm, nranks, id, rank);
    memcpy(ret, &r, sizeof r);
}

void ref_ncclCommInitRankConfig(void *const *a, void *ret) {
    ncclComm_t *comm; int nranks; ncclUniqueId id; int rank; ncclConfig_t *config;
    memcpy(&comm, a[0], sizeof comm); memcpy(&nranks, a[1], sizeof nranks);
    memcpy(&id, a[2], sizeof id); memcpy(&rank, a[3], sizeof rank); memcpy(&config, a[4], sizeof config);
    ncclResult_t r = ncclCommInitRankConfig(comm, nranks, id, rank, config);
    memcpy(ret, &r, sizeof r);
}

void ref_ncclReduce(void *const *a, void *ret) {
    const void *s; void *d; size_t n; ncclDataType_t t; ncclRedOp_t op; int root; ncclComm_t c; cudaStream_t st;
    memcpy(&s, a[0], sizeof s); memcpy(&d, a[1], sizeof d); memcpy(&n, a[2], sizeof n);
    memcpy(&t, a[3], sizeof t); memcpy(&op, a[4], sizeof op); memcpy(&root, a[5], sizeof root);
    memcpy(&c, a[6], sizeof c); memcpy(&st, a[7], sizeof st);
    ncclResult_t r = ncclReduce(s, d, n, t, op, root, c, st);
    memcpy(ret, &r, sizeof r);
}
