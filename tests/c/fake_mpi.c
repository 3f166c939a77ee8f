/*
 * A stand-in for an MPI library, built three times with the handle types of three ABIs, so
 * that the C compiler checks the handles the crate passes (tests/mpi.rs):
 *   -DFAKE_ABI_OMPI      Open MPI's mpi.h: MPI_Comm is `struct ompi_communicator_t *` and
 *                        MPI_COMM_WORLD is `&ompi_mpi_comm_world` (an exported object);
 *   -DFAKE_ABI_MPICH     MPICH's mpi.h: `typedef int MPI_Comm`, MPI_COMM_WORLD 0x44000000,
 *                        MPI_BYTE 0x4c00010d;
 *   -DFAKE_ABI_STANDARD  the MPI-5 standard ABI (the MPI Forum's reference mpi.h,
 *                        mpiwg-abi/header_and_stub_library): `struct MPI_ABI_Comm *`,
 *                        MPI_COMM_WORLD (MPI_Comm)0x101, MPI_BYTE (MPI_Datatype)0x247, and
 *                        MPI_Abi_get_version.
 * A wrong handle is answered with an MPI error code, as a real library's error handler would
 * see it. One process plays rank `fake_mpi_configure`'s rank of its size; the broadcast fills a
 * non-root buffer with the bytes (i * 5 + 1). Everything but the MPI functions is static, so
 * that three flavours loaded with RTLD_GLOBAL into one test process do not interpose.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MPI_SUCCESS 0
#define MPI_ERR_TYPE 3
#define MPI_ERR_COMM 5
#define MPI_ERR_OTHER 15

#if defined(FAKE_ABI_OMPI)
typedef struct ompi_communicator_t *MPI_Comm;
typedef struct ompi_datatype_t *MPI_Datatype;
typedef struct ompi_request_t *MPI_Request;
typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled; size_t _ucount; } MPI_Status;
/* Open MPI's predefined objects: exported, and their addresses are the handles. */
struct ompi_predefined_communicator_t { char opaque[512]; } ompi_mpi_comm_world;
struct ompi_predefined_datatype_t { char opaque[512]; } ompi_mpi_byte;
#define MPI_COMM_WORLD ((MPI_Comm)&ompi_mpi_comm_world)
#define MPI_BYTE ((MPI_Datatype)&ompi_mpi_byte)
#define VERSION "Open MPI v9.9.9 (stand-in)"
#elif defined(FAKE_ABI_MPICH)
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Request;
typedef struct { int count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;
#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)
#define MPI_BYTE ((MPI_Datatype)0x4c00010d)
#define VERSION "MPICH Version:\t9.9.9 (stand-in)\nMPICH Release date:\tnever"
#elif defined(FAKE_ABI_STANDARD)
typedef struct MPI_ABI_Comm *MPI_Comm;
typedef struct MPI_ABI_Datatype *MPI_Datatype;
typedef struct MPI_ABI_Request *MPI_Request;
typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR, reserved[5]; } MPI_Status;
#define MPI_COMM_WORLD ((MPI_Comm)0x00000101)
#define MPI_BYTE ((MPI_Datatype)0x00000247)
#define VERSION "Stand-in MPI with the standard ABI 1.0"
int MPI_Abi_get_version(int *major, int *minor) { *major = 1; *minor = 0; return MPI_SUCCESS; }
#elif defined(FAKE_ABI_UNKNOWN)
typedef void *MPI_Comm;
typedef void *MPI_Datatype;
typedef void *MPI_Request;
typedef struct { int a[8]; } MPI_Status;
#define MPI_COMM_WORLD ((MPI_Comm)0)
#define MPI_BYTE ((MPI_Datatype)0)
#define VERSION "Some MPI nobody has heard of"
#else
#error "define one FAKE_ABI_*"
#endif

static int rank_, size_ = 1, initialized, finalized, stall, init_calls, finalize_calls, pending;
static unsigned char *bcast_buf;
static int bcast_count;

/* Test controls (not MPI): the process's rank and size, whether the program "already"
 * initialised MPI, whether a broadcast never completes; then the call counts. */
void fake_mpi_configure(int rank, int size, int already_initialized, int never_complete) {
    rank_ = rank;
    size_ = size;
    initialized = already_initialized;
    finalized = 0;
    stall = never_complete;
    init_calls = finalize_calls = pending = 0;
}
void fake_mpi_counts(int *inits, int *finalizes, int *pending_requests) {
    *inits = init_calls;
    *finalizes = finalize_calls;
    *pending_requests = pending;
}

int MPI_Get_library_version(char *version, int *len) {
    strcpy(version, VERSION);
    *len = (int)strlen(VERSION);
    return MPI_SUCCESS;
}
int MPI_Error_string(int code, char *s, int *len) {
    *len = snprintf(s, 64, "stand-in MPI error %d", code);
    return MPI_SUCCESS;
}
int MPI_Initialized(int *flag) { *flag = initialized; return MPI_SUCCESS; }
int MPI_Finalized(int *flag) { *flag = finalized; return MPI_SUCCESS; }
int MPI_Init(int *argc, char ***argv) {
    (void)argc; (void)argv;
    if (initialized) return MPI_ERR_OTHER; /* MPI_Init twice is erroneous */
    initialized = 1;
    init_calls++;
    return MPI_SUCCESS;
}
int MPI_Finalize(void) {
    if (!initialized || finalized) return MPI_ERR_OTHER;
    finalized = 1;
    finalize_calls++;
    return MPI_SUCCESS;
}
int MPI_Comm_rank(MPI_Comm comm, int *rank) {
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    *rank = rank_;
    return MPI_SUCCESS;
}
int MPI_Comm_size(MPI_Comm comm, int *size) {
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    *size = size_;
    return MPI_SUCCESS;
}
int MPI_Type_size(MPI_Datatype type, int *size) {
    if (type != MPI_BYTE) return MPI_ERR_TYPE;
    *size = 1;
    return MPI_SUCCESS;
}
int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *request) {
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    if (type != MPI_BYTE) return MPI_ERR_TYPE;
    if (!initialized || finalized || root < 0 || root >= size_) return MPI_ERR_OTHER;
    bcast_buf = buf;
    bcast_count = rank_ == root ? 0 : count;
    pending++;
    memset(request, 0x5a, sizeof *request);
    return MPI_SUCCESS;
}
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    (void)status;
    *flag = 0;
    if (stall) return MPI_SUCCESS;
    for (int i = 0; i < bcast_count; i++) bcast_buf[i] = (unsigned char)(i * 5 + 1);
    memset(status, 0, sizeof *status);
    memset(request, 0, sizeof *request); /* MPI_REQUEST_NULL in every flavour */
    pending--;
    *flag = 1;
    return MPI_SUCCESS;
}
