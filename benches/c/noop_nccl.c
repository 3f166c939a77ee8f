/* A library with NCCL's prototypes whose functions do nothing: the callee of benches/facade_call.rs,
 * which measures what the facade itself costs per call (its checks, the communicator's call lock,
 * the call core). It models none of NCCL's behaviour and is never used as a stand-in in tests
 * (tests/c/fake_nccl.c is that): every function succeeds at once and touches only its out-
 * parameters. Prototypes as in NCCL 2.32.3's nccl.h. */
#include <stddef.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct noop_comm *ncclComm_t;
typedef void *cudaStream_t;

/* The one communicator this library hands out. */
struct noop_comm { int nranks, rank; };
static struct noop_comm the_comm;

ncclResult_t ncclGetVersion(int *version) { *version = 23203; return 0; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { memset(id, 0, sizeof *id); return 0; }
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    (void)id;
    the_comm.nranks = nranks;
    the_comm.rank = rank;
    *comm = &the_comm;
    return 0;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { (void)comm; return 0; }
ncclResult_t ncclCommAbort(ncclComm_t comm) { (void)comm; return 0; }
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) { *count = comm->nranks; return 0; }
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) { (void)comm; *device = 0; return 0; }
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) { *rank = comm->rank; return 0; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) { (void)comm; *state = 0; return 0; }
const char *ncclGetErrorString(ncclResult_t result) { (void)result; return "no-op"; }
const char *ncclGetLastError(ncclComm_t comm) { (void)comm; return ""; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
    (void)s; (void)r; (void)n; (void)t; (void)op; (void)c; (void)st;
    return 0;
}
ncclResult_t ncclSend(const void *s, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
    (void)s; (void)n; (void)t; (void)peer; (void)c; (void)st;
    return 0;
}
ncclResult_t ncclRecv(void *r, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
    (void)r; (void)n; (void)t; (void)peer; (void)c; (void)st;
    return 0;
}
ncclResult_t ncclGroupStart(void) { return 0; }
ncclResult_t ncclGroupEnd(void) { return 0; }
