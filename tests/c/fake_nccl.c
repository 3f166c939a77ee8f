/*
 * A stand-in for libnccl.so.2 with NCCL's exact prototypes, for the facade and command tests.
 * It records what every call received (function name, then each argument's bytes; the 128 id
 * bytes in full) and answers like NCCL would. FAKE_VERSION (an NCCL_VERSION_CODE) selects which
 * symbols exist and which behaviour is modelled:
 *   23203 -> 2.32.3 (everything), 23102 -> 2.31.2 (64-byte ncclCollConfig_t), 22803 -> 2.28.3
 *   (the device API's first host helpers), 21803 -> 2.18.3, 21701 -> 2.17.1 (non-blocking init
 *   writes the handle late), 2708 -> 2.7.8 (old version formula).
 *
 * Besides answering, it models what NCCL does that a caller can get wrong. Every behaviour cites
 * the NCCL source it models (tag v2.30.7-1 unless another is named; file:line):
 *  - Blocking mode: config.blocking (UNDEF means blocking), overridden by NCCL_COMM_BLOCKING=0|1
 *    in the environment (src/init.cc:60 NCCL_PARAM(CommBlocking), :1998-1999 in parseCommConfig).
 *    A child split or shrunk without a config copies its parent's mode (copyCommConfig, :3127).
 *  - Non-blocking creation and collectives: the call returns ncclInProgress; the work runs on
 *    NCCL's own thread (src/group.cc:826-857), which then stores the new handle through the
 *    caller's out-pointer (src/init.cc:1959-1962, job->newcomm set at :3139 for split/shrink)
 *    and sets the result into the async state of the job's communicator (src/group.cc:728-731):
 *    the new one for init, the PARENT for split and shrink. `late_ms` (default 100) is how long
 *    that thread takes. Non-blocking init returns ncclInProgress (src/init.cc:2681-2684), but
 *    split and shrink return ncclSuccess with the child still being made: their NCCLCHECK
 *    passes ncclInProgress through (src/include/checks.h:148-156, src/init.cc:3400-3411), so
 *    only the parent's async state tells. Before 2.18 (FAKE_VERSION 21701) non-blocking init also keeps the
 *    caller's out-pointer: the job reads *newcomm late and writes NULL there on failure
 *    (v2.17.1-1 src/init.cc:1091-1092, 1272-1273).
 *  - A communicator not yet ready (async state ncclInProgress) refuses further calls with
 *    ncclInvalidArgument (ncclCommEnsureReady, src/init.cc:422-438; used by ncclEnqueueCheck,
 *    src/enqueue.cc:3141, and by destroy, :2901). The rank queries (ncclCommCount,
 *    ncclCommCuDevice, ncclCommUserRank: :3485-3522) go through it too, so a communicator in
 *    error answers them with its error.
 *  - ncclCommShrink sorts the caller's exclude list IN PLACE (src/init.cc:3088) and, with
 *    NCCL_SHRINK_ABORT, first aborts the parent's in-flight work (:3184-3188).
 *  - ncclCommAbort sets the abort flags (its own and an in-progress child's, setCommAbortFlags
 *    :2915-2926), joins NCCL's group thread (src/group.cc:902-913), lets hung kernels exit, and
 *    frees the communicator (:3025-3060). Aborting a parent stops its child's creation.
 *  - ncclCommDestroy and a blocking ncclCommFinalize wait for the communicator's kernels
 *    (commDestroySync, src/init.cc:2730-2745): behind a hung kernel they never return.
 *  - ncclCommRevoke (2.28.7) sets the abort flags, waits for the kernels to exit, and leaves the
 *    communicator allocated for shrink (src/init.cc:2965-3022).
 *  - Before 2.27 a non-blocking group's job lives in the thread-local storage of the thread that
 *    ended the group (v2.26.6-1 src/group.cc:20-23 `__thread struct ncclGroupJob
 *    ncclGroupJobMain`, its address handed to NCCL's thread at :575), and NCCL's thread writes
 *    into it until it ends (groupLaunch's tail: v2.17.1-1 src/group.cc:350-368, `gjob->doneFlag`,
 *    `*gjob->groupErrorPtr`, `*gjob->groupCommHeadPtr`). A thread that exits while its job runs
 *    leaves NCCL writing freed memory. Before 2.19 ncclCommAbort joins only the CALLING thread's
 *    job (ncclCommEnsureReady -> ncclGroupJobAbort() on `__thread ncclGroupJobMainPtr`:
 *    v2.18.3-1 src/init.cc ncclCommEnsureReady, src/group.cc ncclGroupJobAbort); from any other
 *    thread it reclaims the communicator under its running job. 2.19 to 2.26 join through
 *    `comm->groupJob` (v2.19.3-1), which still points into the starting thread's storage; 2.27
 *    allocates the group job on the heap (v2.27.3-1 src/group.cc). The stand-in counts each such
 *    use of freed or foreign memory as a violation (fake_violations) instead of crashing, and
 *    its job still writes the starting thread's storage at its end, as NCCL's does, for
 *    AddressSanitizer to see.
 *
 * Fault modes, set with fake_set(name, value) (all 0 by default):
 *   late_ms              how long NCCL's thread takes for non-blocking work (default 100)
 *   hang_init            creation (init, init_all, split, shrink) never completes: a peer that
 *                        never arrives. A blocking call never returns; a non-blocking one stays
 *                        in progress until the communicator (or its parent) is aborted.
 *   hang_collective      collectives' kernels never finish (a peer died mid-loop) until the
 *                        communicator is aborted, revoked or shrunk with NCCL_SHRINK_ABORT
 *   hang_destroy         ncclCommDestroy never returns (a dead peer behind destroy's barrier)
 *   hang_finalize        ncclCommFinalize never completes
 *   block_ms             a blocking creation takes this long before it completes (a slow peer)
 *   abort_ms             ncclCommAbort takes this long after its kernels exited: NCCL sets the
 *                        abort flags first, then joins its threads and frees the communicator
 *                        (NCCL v2.28.3-1 src/init.cc:2344 setCommAbortFlags, :2348
 *                        ncclCommEnsureReady, :2363 commReclaim launched as a group job)
 *   late_handle          NOT NCCL's behaviour (NCCL stores the handle before its job starts,
 *                        src/init.cc:2515), but a library the facade loads can do it: a
 *                        non-blocking init returns ncclInProgress without writing *comm and
 *                        stores the handle from its thread when done
 * fake_hang_in(name) makes the entry point `name` block inside the call (a peer that never
 * answers, a lock NCCL never gets) until fake_hang_in(NULL); fake_live_comms() and
 * fake_live_jobs() count communicators not yet freed and NCCL threads still running;
 * fake_violations() counts the uses of freed or foreign memory described above.
 * fake_set_async(comm, code) sets a communicator's async error (e.g. ncclRemoteError, as the
 * proxy thread does when a network peer dies). fake_fail_next(code, text) makes the next call
 * fail with `code` and last-error `text`. fake_set_cuda_hooks(launch, release) connects the
 * stand-in CUDA driver (tests/c/fake_cuda.c), whose streams then carry the kernels.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 23203
#endif
#define AT_LEAST(code) (FAKE_VERSION >= 10000 ? FAKE_VERSION >= (code) : 0)
#define HAS_CONFIG AT_LEAST(21403)

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct CUstream_st *cudaStream_t;
typedef enum { ncclSuccess = 0, ncclSystemError = 2, ncclInternalError = 3, ncclInvalidArgument = 4, ncclInvalidUsage = 5,
               ncclInProgress = 7 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclNumTypes = 12 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;
typedef struct { size_t size; unsigned magic, version; int blocking; } ncclConfig_t; /* bytes recorded by size */
typedef void *ncclWindow_t;

#define COMM_MAGIC 0x4e43434cu
#define MAX_HUNG 8
typedef struct ncclComm {
    unsigned magic;
    int nranks, rank, device;
    int blocking;
    _Atomic int async;         /* comm->asyncResult */
    _Atomic int abort_flag;    /* *comm->abortFlag */
    _Atomic int *child_abort;  /* comm->childAbortFlag while a child is being made */
    int revoked, finalized;
    pthread_t job;             /* NCCL's group thread (comm->groupJob) */
    int has_job;
    _Atomic int job_running;   /* that thread has not finished */
    pthread_t job_starter;     /* the thread whose group started it (before 2.27: its storage) */
    void *hung[MAX_HUNG];      /* streams holding this communicator's hung kernels */
    int nhung;
    struct fake_shm *shm;      /* peers in other processes (fake_nccl_shm.c) */
    double premul;             /* the scalar of the PreMulSum op made last (one live at a time) */
} *ncclComm_t;

/* ---- recording and controls ---------------------------------------------------------------- */

static unsigned char rec[1 << 16];
static size_t rec_len;
static int fail_code;
static char last_error[256];
static int late_ms = 100, hang_init, hang_collective, hang_destroy, hang_finalize, block_ms, late_handle, abort_ms;
static char hang_name[64];
static _Atomic int live_comms, live_jobs, violations;
static long (*cuda_launch)(void *stream, int hang);
static void (*cuda_release)(void *stream);

void fake_log_reset(void) { rec_len = 0; }
const unsigned char *fake_log_data(void) { return rec; }
size_t fake_log_size(void) { return rec_len; }
void fake_fail_next(int code, const char *text) {
    fail_code = code;
    strncpy(last_error, text, sizeof last_error - 1);
}
int fake_set(const char *key, int value) {
    if (!strcmp(key, "late_ms")) late_ms = value;
    else if (!strcmp(key, "hang_init")) hang_init = value;
    else if (!strcmp(key, "hang_collective")) hang_collective = value;
    else if (!strcmp(key, "hang_destroy")) hang_destroy = value;
    else if (!strcmp(key, "hang_finalize")) hang_finalize = value;
    else if (!strcmp(key, "block_ms")) block_ms = value;
    else if (!strcmp(key, "late_handle")) late_handle = value;
    else if (!strcmp(key, "abort_ms")) abort_ms = value;
    else return -1;
    return 0;
}
void fake_reset_modes(void) {
    late_ms = 100;
    hang_init = hang_collective = hang_destroy = hang_finalize = block_ms = late_handle = abort_ms = 0;
    hang_name[0] = 0;
}
void fake_hang_in(const char *fn) {
    if (fn) strncpy(hang_name, fn, sizeof hang_name - 1);
    else hang_name[0] = 0;
}
int fake_live_comms(void) { return live_comms; }
int fake_live_jobs(void) { return live_jobs; }
int fake_violations(void) { return violations; }
void fake_set_async(ncclComm_t comm, int code) { comm->async = code; }

/* The AddressSanitizer run's negative control: a store through `out` after `ms`, from another
 * thread, as NCCL's late handle store does (src/init.cc:1959-1962). */
struct late_store { void **out; int ms; };
static void *late_store_main(void *arg) {
    struct late_store *l = arg;
    for (int i = 0; i < l->ms; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
    __atomic_store_n(l->out, (void *)l, __ATOMIC_RELEASE);
    return NULL;
}
void fake_store_late(void **out, int ms) {
    static struct late_store l;
    l = (struct late_store){out, ms};
    pthread_t t;
    pthread_create(&t, NULL, late_store_main, &l);
    pthread_detach(t);
}
void fake_set_cuda_hooks(long (*launch)(void *, int), void (*release)(void *)) {
    cuda_launch = launch;
    cuda_release = release;
}

/* Calls come from several threads (the facade's bounded calls, its watchdog): one lock. */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static void put(const void *p, size_t n) {
    pthread_mutex_lock(&rec_lock);
    if (rec_len + n <= sizeof rec) { /* long runs (the command's perf) stop recording */
        memcpy(rec + rec_len, p, n);
        rec_len += n;
    }
    pthread_mutex_unlock(&rec_lock);
}
static void nap(void);
/* The entry points called since fake_seen_reset (the hang table's dry run), and the threads
 * blocked in a hang now. */
#define MAX_SEEN 128
static const char *seen[MAX_SEEN];
static int nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t hung[16];
static int nhung_threads;
void fake_seen_reset(void) { pthread_mutex_lock(&seen_lock); nseen = 0; pthread_mutex_unlock(&seen_lock); }
int fake_seen_count(void) { return nseen; }
const char *fake_seen_at(int i) { return i < nseen ? seen[i] : NULL; }
unsigned long fake_thread_self(void) { return (unsigned long)pthread_self(); }
/* Whether `thread` (fake_thread_self's value) is blocked in a hang now. */
int fake_hung_on(unsigned long thread) {
    pthread_mutex_lock(&seen_lock);
    int found = 0;
    for (int i = 0; i < nhung_threads; i++) found |= (unsigned long)hung[i] == thread;
    pthread_mutex_unlock(&seen_lock);
    return found;
}

/* fake_hang_in: the named entry point blocks here until released. */
static void maybe_hang(const char *fn) {
    pthread_mutex_lock(&seen_lock);
    int known = 0;
    for (int i = 0; i < nseen; i++) known |= !strcmp(seen[i], fn);
    if (!known && nseen < MAX_SEEN) seen[nseen++] = fn; /* fn: a string literal */
    pthread_mutex_unlock(&seen_lock);
    if (!(hang_name[0] && !strcmp(fn, hang_name))) return;
    pthread_mutex_lock(&seen_lock);
    int me = nhung_threads < 16 ? nhung_threads++ : -1;
    if (me >= 0) hung[me] = pthread_self();
    pthread_mutex_unlock(&seen_lock);
    while (hang_name[0] && !strcmp(fn, hang_name)) nap();
    pthread_mutex_lock(&seen_lock);
    for (int i = 0; i < nhung_threads; i++)
        if (pthread_equal(hung[i], pthread_self())) { hung[i] = hung[--nhung_threads]; break; }
    pthread_mutex_unlock(&seen_lock);
}
/* An entry point's name (a string literal: the hang table's list keeps the pointer). */
static void name(const char *s) { maybe_hang(s); put(s, strlen(s) + 1); }
/* A caller's string argument, recorded with its NUL (the caller may free it after the call). */
static void text(const char *s) { put(s, strlen(s) + 1); }
#define ARG(x) put(&(x), sizeof(x))

/* The result of the current call: a pending failure, else success. */
static ncclResult_t result(void) {
    int c = fail_code;
    fail_code = 0;
    if (c == 0) last_error[0] = 0;
    return (ncclResult_t)c;
}

static void nap(void) { nanosleep(&(struct timespec){0, 1000000}, NULL); }

/* A call on a freed or never-made communicator is the caller's use-after-free: make it loud. */
static ncclComm_t live(ncclComm_t comm) {
    if (!comm || comm->magic != COMM_MAGIC) abort();
    return comm;
}

/* ncclCommEnsureReady (src/init.cc:422-438): an operation still in progress refuses new calls. */
static ncclResult_t ensure_ready(ncclComm_t comm) {
    if (comm->async == ncclInProgress) {
        strcpy(last_error, "Attempt to use communicator before the previous operation returned ncclSuccess");
        return ncclInvalidArgument;
    }
    return comm->async;
}

/* ---- kernels on the stand-in CUDA streams ----------------------------------------------------- */

static void launch(ncclComm_t comm, cudaStream_t stream) {
    if (!cuda_launch) return;
    int hang = hang_collective != 0;
    cuda_launch(stream, hang);
    if (hang && comm->nhung < MAX_HUNG) comm->hung[comm->nhung++] = stream;
}

/* The abort flag makes every kernel of the communicator exit. */
static void kernels_exit(ncclComm_t comm) {
    for (int i = 0; i < comm->nhung; i++)
        if (cuda_release) cuda_release(comm->hung[i]);
    comm->nhung = 0;
}

/* commDestroySync waits for the communicator's kernels; behind a hung one it never returns. */
static void wait_kernels(ncclComm_t comm) {
    while (comm->nhung > 0) nap();
}

/* ---- NCCL's thread for non-blocking work -------------------------------------------------------- */

enum job_kind { JOB_INIT, JOB_CHILD, JOB_COLLECTIVE, JOB_FINALIZE, JOB_REVOKE };
struct job {
    enum job_kind kind;
    ncclComm_t owner;      /* job->comm: its async state gets the result */
    ncclComm_t made;       /* the communicator being made (init, child) */
    ncclComm_t *out;       /* job->newcomm: the caller's out-pointer, written when done */
    int hang;
    cudaStream_t stream;   /* a collective's stream */
    struct group_job *group; /* before 2.27: the starting thread's group job */
};

/* NCCL's group job before 2.27: in the starting thread's storage (see the header). */
#define THREAD_LOCAL_GROUP_JOB (FAKE_VERSION >= 21400 && FAKE_VERSION < 22700)
struct group_job { int running; }; /* read and written with __atomic builtins */
static __thread struct group_job thread_group_job;
static pthread_key_t thread_exit_key;
static pthread_once_t thread_exit_once = PTHREAD_ONCE_INIT;
/* Runs when a thread exits: a job still running there will write its freed storage. */
static void thread_exit(void *arg) {
    if (__atomic_load_n(&((struct group_job *)arg)->running, __ATOMIC_ACQUIRE)) violations++;
}
static void thread_exit_key_make(void) { pthread_key_create(&thread_exit_key, thread_exit); }

static int aborted(const struct job *j) {
    return j->owner->abort_flag || (j->made && j->made->abort_flag);
}

static void *job_main(void *arg) {
    struct job *j = arg;
    /* Before 2.18, the init job reads the handle back through the caller's out-pointer. */
    if (j->kind == JOB_INIT && j->out) (void)*(volatile ncclComm_t *)j->out;
    ncclResult_t res = ncclSuccess;
    for (int waited = 0;; waited++) {
        if (j->kind != JOB_REVOKE && aborted(j)) { res = ncclInternalError; break; }
        int done = !j->hang && waited >= late_ms;
        if (j->kind == JOB_FINALIZE) done = done && j->owner->nhung == 0; /* commDestroySync */
        if (done) break;
        nap();
    }
    if (j->kind == JOB_COLLECTIVE && res == ncclSuccess) launch(j->owner, j->stream);
    if (j->kind == JOB_REVOKE) { kernels_exit(j->owner); j->owner->abort_flag = 0; }
    if (j->made) j->made->async = res; /* comm->initState */
    if (j->out) {
        /* Before 2.18 the job (re)writes the handle (commAlloc) and clears it on failure (undo). */
        if (j->kind == JOB_INIT) __atomic_store_n(j->out, res == ncclSuccess ? j->made : NULL, __ATOMIC_RELEASE);
        else if (j->kind == JOB_CHILD) __atomic_store_n(j->out, j->made, __ATOMIC_RELEASE);
    }
    if (j->kind == JOB_CHILD) j->owner->child_abort = NULL;
    j->owner->async = res; /* src/group.cc:728-731 */
    j->owner->job_running = 0;
    /* groupLaunch's tail writes the starting thread's storage (before 2.27). */
    if (j->group) __atomic_store_n(&j->group->running, 0, __ATOMIC_RELEASE);
    live_jobs--;
    free(j);
    return NULL;
}

/* Starts NCCL's group thread for `j`; the job's communicator reports ncclInProgress meanwhile. */
static ncclResult_t start_job(struct job j) {
    struct job *heap = malloc(sizeof j);
    *heap = j;
    ncclComm_t owner = j.owner;
    if (owner->has_job) pthread_join(owner->job, NULL); /* the previous group job */
    owner->async = ncclInProgress;
    if (j.made) j.made->async = ncclInProgress;
    if (THREAD_LOCAL_GROUP_JOB) {
        pthread_once(&thread_exit_once, thread_exit_key_make);
        thread_group_job.running = 1;
        pthread_setspecific(thread_exit_key, &thread_group_job);
        heap->group = &thread_group_job;
    }
    owner->job_running = 1;
    owner->job_starter = pthread_self();
    live_jobs++;
    pthread_create(&owner->job, NULL, job_main, heap);
    owner->has_job = 1;
    return ncclInProgress;
}

/* ---- creation ------------------------------------------------------------------------------------- */

/* Creation inside the caller's group is deferred to the outermost ncclGroupEnd (ncclAsyncLaunch
 * queues the job while ncclGroupDepth > 0: src/group.cc:35-72); the out-pointer is written then. */
static struct job deferred[64];
static int ndeferred;
static int group_depth;

static int env_blocking(int from_config) {
    const char *e = getenv("NCCL_COMM_BLOCKING");
    if (HAS_CONFIG && e && (!strcmp(e, "0") || !strcmp(e, "1"))) return *e == '1';
    return from_config;
}

/* parseCommConfig: blocking from the config (INT_MIN: NCCL's default, blocking), then the env. */
__attribute__((unused)) static int config_blocking(const ncclConfig_t *config) {
    int b = (config && config->size >= 20 && config->blocking != (int)0x80000000) ? config->blocking != 0 : 1;
    return env_blocking(b);
}

static ncclComm_t new_comm(int nranks, int rank, int device, int blocking) {
    ncclComm_t c = calloc(1, sizeof *c);
    c->magic = COMM_MAGIC;
    c->nranks = nranks;
    c->rank = rank;
    c->device = device;
    c->blocking = blocking;
    live_comms++;
    return c;
}

static void leave_peers(ncclComm_t comm);

static void free_comm(ncclComm_t comm) {
    if (comm->has_job) pthread_join(comm->job, NULL);
    leave_peers(comm);
    comm->magic = 0;
    live_comms--;
    free(comm);
}

/* A blocking creation that never completes: a peer that never arrives, nothing to abort it. */
static void blocked_forever(void) {
    for (;;) nap();
}

/* A blocking creation: a slow peer (block_ms), or one that never arrives (hang_init). */
static void blocking_creation(void) {
    if (hang_init) blocked_forever();
    for (int i = 0; i < block_ms; i++) nap();
}

/* ncclCommInitRankDev: the handle is stored before the work starts (src/init.cc:2515). */
static ncclResult_t init(ncclComm_t *comm, int nranks, int rank, int blocking, int grouped) {
    ncclResult_t r = result();
    if (r != ncclSuccess) return r;
    ncclComm_t c = new_comm(nranks, rank, rank, blocking);
    int late = late_handle && !blocking && grouped && group_depth == 0;
    if (!late) *comm = c;
    if (group_depth > 0 && ndeferred < 64) {
        deferred[ndeferred++] = (struct job){JOB_INIT, c, c, comm, hang_init, NULL};
        return ncclSuccess;
    }
    /* Plain ncclCommInitRank runs its job at once, outside any group (src/group.cc:39-43). */
    if (blocking || !grouped) {
        blocking_creation();
        return ncclSuccess;
    }
    struct job j = {JOB_INIT, c, c, FAKE_VERSION < 21800 || late ? comm : NULL, hang_init, NULL, NULL};
    return start_job(j);
}

/* ncclGetVersion came in NCCL 2.3.4 (release notes; the source mirror begins at v2.3.5-5, whose
 * src/nccl.h.in:44 declares it): a stand-in built as an older NCCL lacks it. */
#if FAKE_VERSION >= 2304
ncclResult_t ncclGetVersion(int *version) { name("ncclGetVersion"); *version = FAKE_VERSION; return ncclSuccess; }
#endif

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    name("ncclGetUniqueId");
    ncclResult_t r = result();
    /* NCCL_COMM_ID=host:port: every process gets the same id, the constant magic and that
     * address (NCCL v2.30.7-1 src/bootstrap.cc:433-446, NCCL_MAGIC from src/include/comm.h:504);
     * here the address as text. */
    const char *env = getenv("NCCL_COMM_ID");
    if (r == ncclSuccess && env) {
        unsigned long long magic = 0x0280028002800280ull;
        memset(id->internal, 0, 128);
        memcpy(id->internal, &magic, sizeof magic);
        strncpy(id->internal + 8, env, 119);
        return r;
    }
    static unsigned serial; /* every id differs, as NCCL's do */
    if (r == ncclSuccess) {
        for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
        serial++;
        memcpy(id->internal + 124, &serial, sizeof serial);
        /* ... and ids of different processes differ too (they name shared memory). */
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        int pid = getpid();
        memcpy(id->internal + 112, &pid, sizeof pid);
        memcpy(id->internal + 116, &t.tv_nsec, sizeof(int));
        memcpy(id->internal + 120, &t.tv_sec, sizeof(int));
    }
    return r;
}

static ncclResult_t join_peers(ncclComm_t *comm, const char id[128]);

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    name("ncclCommInitRank"); ARG(nranks); put(commId.internal, 128); ARG(rank);
    ncclResult_t r = init(comm, nranks, rank, env_blocking(1), 0);
    if (r == ncclSuccess) r = join_peers(comm, commId.internal);
    memset(&commId, 0xA5, sizeof commId); /* the callee owns its copy */
    return r;
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
    /* One group over every rank (src/init.cc:2624-2631), with NCCL's default config. */
    int blocking = env_blocking(1);
    ncclResult_t out = ncclSuccess;
    for (int i = 0; r == ncclSuccess && i < ndev; i++) {
        ncclResult_t ri = init(&comms[i], ndev, i, blocking, 1);
        if (ri != ncclSuccess) out = ri;
    }
    return r != ncclSuccess ? r : out;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    name("ncclCommDestroy"); ARG(live(comm)->rank);
    ncclResult_t r = ensure_ready(comm);
    if (r == ncclInvalidArgument) return r;
    if (hang_destroy) blocked_forever();
    if (!comm->finalized) wait_kernels(comm);
    free_comm(comm);
    return result();
}
/* The rank queries answer only for a ready communicator: in progress is ncclInvalidArgument,
 * in error that error, and *out is left alone (NCCLCHECK(ncclCommEnsureReady(comm)) before
 * the read: NCCL v2.30.7-1 src/init.cc:3485-3522; ncclCommEnsureReady :422-438). */
#define RANK_QUERY(fn, field)                                                   \
    ncclResult_t fn(const ncclComm_t comm, int *out) {                          \
        name(#fn);                                                              \
        ncclResult_t r = ensure_ready(live(comm));                              \
        if (r != ncclSuccess) return r;                                         \
        *out = comm->field;                                                     \
        return result();                                                        \
    }
RANK_QUERY(ncclCommCount, nranks)
RANK_QUERY(ncclCommCuDevice, device)
RANK_QUERY(ncclCommUserRank, rank)

const char *ncclGetErrorString(ncclResult_t code) {
    maybe_hang("ncclGetErrorString");
    switch ((int)code) {
    case 0: return "no error";
    case 4: return "invalid argument (stand-in)";
    case 6: return "remote process exited or there was a network error (stand-in)";
    default: return "unknown result code";
    }
}

/*
 * Executing collectives (only with FAKE_NCCL_EXECUTE=1, for the command's perf tests; the
 * facade tests pass made-up pointers). Device memory is host memory (tests/c/fake_cuda.c).
 * Calls are queued and run when the outermost group ends (or at once outside a group); one
 * collective is nranks consecutive calls of one kind, in rank order. Each runs as a kernel on
 * its stream: the stand-in CUDA driver first lands the device-memory writes that kernel is
 * ordered after, and only those (fake_cuda_kernel in tests/c/fake_cuda.c). Types: the integer ones,
 * float32 and float64 (others fail with ncclInvalidArgument). FAKE_NCCL_CORRUPT=1 spoils the
 * first element of every result of a type other than int8. A communicator of ncclCommInitRank with ranks in other
 * processes meets them in shared memory (fake_nccl_shm.c).
 */
enum kind { K_ALLREDUCE, K_REDUCESCATTER, K_BROADCAST, K_REDUCE, K_ALLGATHER };
struct op { enum kind kind; const char *s; char *d; size_t n; int type, op, root, nranks; struct fake_shm *shm; cudaStream_t stream; int device; double scale; };
static struct op queue[256];
static int queued;
/* Communicators with work in the open group (ncclGroupCommHead), for non-blocking group ends. */
static ncclComm_t group_comms[64];
static int group_ncomms;
static cudaStream_t group_streams[64];

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
/* The reduction of column `i` of the nr inputs of `len` elements each in `in`; a PreMulSum op
 * (ids from ncclNumOps = 5) multiplies each rank's input by that rank's scalar, q[k].scale
 * (NCCL: sum(scalar * x), src/enqueue.cc and the device reduction's FuncPreMulSum). */
static double column(const char *in, size_t len, size_t i, int nr, int t, int op, const struct op *q) {
    size_t es = type_size(t);
    double v = load(in + i * es, t) * (op >= 5 ? q[0].scale : 1.0);
    for (int k = 1; k < nr; k++) {
        double w = load(in + ((size_t)k * len + i) * es, t) * (op >= 5 ? q[k].scale : 1.0);
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
            for (size_t i = 0; i < n; i++) store(o->d + i * es, t, column(in, len, i, nr, t, o->op, q));
            break;
        case K_REDUCESCATTER:
            for (size_t i = 0; i < n; i++) store(o->d + i * es, t, column(in, len, (size_t)r * n + i, nr, t, o->op, q));
            break;
        case K_BROADCAST:
            memcpy(o->d, in + (size_t)o->root * len * es, n * es);
            break;
        case K_ALLGATHER:
            memcpy(o->d, in, n * es * (size_t)nr);
            break;
        }
        int has_result = !(o->kind == K_REDUCE && r != o->root);
        /* Not int8: perf's own exchanges between ranks (counts, times) travel as bytes. */
        if (has_result && n && t != 0 && env_on("FAKE_NCCL_CORRUPT")) store(o->d, t, load(o->d, t) + 1);
    }
    free(in);
}

#include "fake_nccl_shm.c"

#include <dlfcn.h>
/* The kernel of `o` starts on its stream, its communicator's device current: tells the stand-in
 * CUDA driver, found as real NCCL finds the driver, among the libraries already loaded
 * (libcuda.so.1; libcuda.so when cudarc loaded it). Looked up each time: a driver may be
 * unloaded and loaded again. A real driver has no hook. */
static void kernel_starts(const struct op *o) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (!lib) continue;
        void (*hook)(void *, int) = (void (*)(void *, int))dlsym(lib, "fake_cuda_kernel");
        if (hook) hook((void *)o->stream, o->device);
        dlclose(lib);
        if (hook) return;
    }
}

/* Runs the queued collectives: those of a communicator with ranks elsewhere one by one in
 * shared memory, the others as nranks consecutive calls of this process. */
static ncclResult_t run_queue(void) {
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < queued;) {
        if (queue[i].shm) {
            size_t len = queue[i].kind == K_REDUCESCATTER ? queue[i].n * (size_t)queue[i].nranks : queue[i].n;
            kernel_starts(&queue[i]);
            if (r == ncclSuccess && fake_shm_collective(queue[i].shm, &queue[i], len * type_size(queue[i].type), last_error, sizeof last_error))
                r = ncclSystemError;
            i++;
        } else if (queue[i].nranks > 0 && i + queue[i].nranks <= queued) {
            for (int k = 0; k < queue[i].nranks; k++) kernel_starts(&queue[i + k]);
            run_collective(&queue[i]);
            i += queue[i].nranks;
        } else {
            break; /* an incomplete set of this process's ranks: dropped */
        }
    }
    queued = 0;
    return r;
}

/* A communicator of ncclCommInitRank with ranks elsewhere meets them in shared memory. */
static ncclResult_t join_peers(ncclComm_t *comm, const char id[128]) {
    ncclComm_t c = *comm;
    if (c->nranks < 2 || !env_on("FAKE_NCCL_EXECUTE")) return ncclSuccess;
    c->shm = fake_shm_join(id, c->nranks, c->rank, last_error, sizeof last_error);
    if (c->shm) return ncclSuccess;
    free_comm(c);
    return ncclSystemError;
}

static void leave_peers(ncclComm_t comm) {
    fake_shm_leave(comm->shm);
    comm->shm = NULL;
}

static ncclResult_t execute(enum kind k, const void *s, void *d, size_t n, int t, int op, int root, ncclComm_t c, cudaStream_t st) {
    if (!env_on("FAKE_NCCL_EXECUTE")) return ncclSuccess;
    if (type_size(t) == 0 || queued == (int)(sizeof queue / sizeof queue[0])) {
        strcpy(last_error, "type or queue length not executed by the stand-in");
        return ncclInvalidArgument;
    }
    queue[queued++] = (struct op){k, s, d, n, t, op, root, c->nranks, c->shm, st, c->device, op >= 5 ? c->premul : 1.0};
    return group_depth == 0 ? run_queue() : ncclSuccess;
}

/*
 * ncclEnqueueCheck (src/enqueue.cc:3124-3172): the communicator must be ready; inside a group the
 * work waits for the group's end; outside one it is launched now (blocking) or by NCCL's thread
 * (non-blocking: ncclInProgress).
 */
static ncclResult_t enqueue_work(ncclComm_t comm, cudaStream_t stream) {
    ncclResult_t r = ensure_ready(live(comm));
    if (r != ncclSuccess) return r;
    if (group_depth > 0) {
        if (group_ncomms < 64) { group_comms[group_ncomms] = comm; group_streams[group_ncomms++] = stream; }
        return ncclSuccess;
    }
    if (comm->blocking) { launch(comm, stream); return ncclSuccess; }
    struct job j = {JOB_COLLECTIVE, comm, NULL, NULL, 0, stream};
    return start_job(j);
}

/* `op_arg`/`root_arg`: how the fifth argument feeds the stand-in's execution. */
#define COLL7(fn, t5, kind, op_arg, root_arg) \
    ncclResult_t fn(const void *s, void *d, size_t n, ncclDataType_t t, t5 x, ncclComm_t c, cudaStream_t st) { \
        name(#fn); ARG(s); ARG(d); ARG(n); ARG(t); ARG(x); ARG(live(c)->rank); ARG(st); \
        ncclResult_t r = result(); \
        if (r == ncclSuccess) r = execute(kind, s, d, n, (int)t, op_arg, root_arg, c, st); \
        return r != ncclSuccess ? r : enqueue_work(c, st); }
COLL7(ncclAllReduce, ncclRedOp_t, K_ALLREDUCE, (int)x, 0)
COLL7(ncclReduceScatter, ncclRedOp_t, K_REDUCESCATTER, (int)x, 0)
COLL7(ncclBroadcast, int, K_BROADCAST, 0, x)

ncclResult_t ncclReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st) {
    name("ncclReduce"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(op); ARG(root); ARG(live(c)->rank); ARG(st);
    ncclResult_t r = result();
    if (r == ncclSuccess) r = execute(K_REDUCE, s, d, n, (int)t, (int)op, root, c, st);
    return r != ncclSuccess ? r : enqueue_work(c, st);
}

ncclResult_t ncclAllGather(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
    name("ncclAllGather"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(live(c)->rank); ARG(st);
    ncclResult_t r = result();
    if (r == ncclSuccess) r = execute(K_ALLGATHER, s, d, n, (int)t, 0, 0, c, st);
    return r != ncclSuccess ? r : enqueue_work(c, st);
}

ncclResult_t ncclGroupStart(void) { name("ncclGroupStart"); group_depth++; return result(); }

/* ncclGroupEndInternal (src/group.cc:800-870): blocking groups launch now; a group of
 * non-blocking communicators is launched by NCCL's thread and reports ncclInProgress. */
ncclResult_t ncclGroupEnd(void) {
    name("ncclGroupEnd");
    if (group_depth > 0 && --group_depth == 0) {
        ncclResult_t out = run_queue();
        for (int i = 0; i < ndeferred; i++) {
            struct job *j = &deferred[i];
            if (j->owner->blocking) { /* run here, now */
                if (j->hang) blocked_forever();
                __atomic_store_n(j->out, j->made, __ATOMIC_RELEASE);
                if (j->kind == JOB_CHILD) j->owner->child_abort = NULL;
            } else {
                if (j->kind == JOB_INIT && FAKE_VERSION >= 21800) j->out = NULL;
                out = start_job(*j);
            }
        }
        ndeferred = 0;
        for (int i = 0; i < group_ncomms; i++) {
            ncclComm_t c = group_comms[i];
            if (c->blocking) launch(c, group_streams[i]);
            else out = start_job((struct job){JOB_COLLECTIVE, c, NULL, NULL, 0, group_streams[i]});
        }
        group_ncomms = 0;
        ncclResult_t r = result();
        return r != ncclSuccess ? r : out;
    }
    return result();
}

#if FAKE_VERSION >= 2402
/* ncclCommAbort (src/init.cc:3025-3060). */
ncclResult_t ncclCommAbort(ncclComm_t comm) {
    name("ncclCommAbort"); ARG(live(comm)->rank);
    /* Before 2.19 only the calling thread's group job is joined (see the header): from another
     * thread NCCL reclaims the communicator while its job still runs. */
    if (THREAD_LOCAL_GROUP_JOB && FAKE_VERSION < 21900 && comm->job_running &&
        !pthread_equal(comm->job_starter, pthread_self()))
        violations++;
    comm->abort_flag = 1;
    if (comm->child_abort) *comm->child_abort = 1;
    if (comm->has_job) { pthread_join(comm->job, NULL); comm->has_job = 0; } /* ncclGroupJobAbort */
    kernels_exit(comm);
    for (int i = 0; i < abort_ms; i++) nap();
    free_comm(comm);
    return result();
}
/* Not recorded: the facade polls it (creation, waits, the watchdog) as often as it likes. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *e) {
    maybe_hang("ncclCommGetAsyncError");
    *e = (ncclResult_t)live(comm)->async;
    return ncclSuccess;
}
#endif

#if FAKE_VERSION >= 2703
ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
    name("ncclSend"); ARG(s); ARG(n); ARG(t); ARG(peer); ARG(live(c)->rank); ARG(st);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue_work(c, st);
}
ncclResult_t ncclRecv(void *d, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
    name("ncclRecv"); ARG(d); ARG(n); ARG(t); ARG(peer); ARG(live(c)->rank); ARG(st);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue_work(c, st);
}
#endif

#if AT_LEAST(21104)
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t t, ncclScalarResidence_t res, ncclComm_t c) {
    name("ncclRedOpCreatePreMulSum"); put(scalar, 8); ARG(t); ARG(res); ARG(live(c)->rank);
    /* A host-immediate scalar of the op's type, read now (ncclScalarHostImmediate). */
    if (res == 1 && type_size(t)) c->premul = load(scalar, t);
    *op = (ncclRedOp_t)5;
    return result();
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c) { name("ncclRedOpDestroy"); ARG(op); ARG(live(c)->rank); return result(); }
#endif

#if AT_LEAST(21304)
const char *ncclGetLastError(ncclComm_t comm) { (void)comm; maybe_hang("ncclGetLastError"); return last_error; }
#endif

#if AT_LEAST(21403)
/* ncclCommInitRankConfig (src/init.cc:2657-2691): inside an internal group, so a non-blocking
 * communicator's work runs on NCCL's thread. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config) {
    name("ncclCommInitRankConfig"); ARG(nranks); put(commId.internal, 128); ARG(rank);
    size_t size = config->size;
    ARG(size);
    put(config, size);
    ncclResult_t r = init(comm, nranks, rank, config_blocking(config), 1);
    /* Ranks of other processes meet as in ncclCommInitRank (a blocking creation only). */
    if (r == ncclSuccess) r = join_peers(comm, commId.internal);
    memset(&commId, 0xA5, sizeof commId);
    return r;
}

/* ncclCommFinalize (src/init.cc:2783-2822): flushes the communicator's work. */
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    name("ncclCommFinalize"); ARG(live(comm)->rank);
    ncclResult_t r = ensure_ready(comm);
    if (r != ncclSuccess) return r;
    if (comm->finalized) return ncclInvalidArgument;
    comm->finalized = 1;
    if (comm->blocking) {
        if (hang_finalize) blocked_forever();
        wait_kernels(comm);
        return result();
    }
    return start_job((struct job){JOB_FINALIZE, comm, NULL, NULL, hang_finalize, NULL});
}
#endif

#if AT_LEAST(21801)
/* ncclCommInitChildComm (src/init.cc:3073-3172), for split and shrink. */
static ncclResult_t child(ncclComm_t parent, ncclComm_t *newcomm, int nranks, int rank, const ncclConfig_t *config) {
    int blocking = config ? config_blocking(config) : parent->blocking;
    *newcomm = NULL; /* "*newcomm should be NCCL_COMM_NULL until comm split fully complete" (:3099) */
    ncclComm_t c = new_comm(nranks, rank, parent->device, blocking);
    if (group_depth > 0 && ndeferred < 64) {
        parent->child_abort = &c->abort_flag;
        deferred[ndeferred++] = (struct job){JOB_CHILD, parent, c, newcomm, hang_init, NULL};
        return ncclSuccess;
    }
    if (parent->blocking) {
        blocking_creation();
        *newcomm = c;
        return ncclSuccess;
    }
    parent->child_abort = &c->abort_flag;
    (void)start_job((struct job){JOB_CHILD, parent, c, newcomm, hang_init, NULL});
    return ncclSuccess; /* not ncclInProgress: see the header */
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
    name("ncclCommSplit"); ARG(live(comm)->rank); ARG(color); ARG(key); ARG(config);
    ncclResult_t r = result();
    if (r != ncclSuccess) return r;
    if ((r = ensure_ready(comm)) != ncclSuccess) return r;
    if (color == -1) { *newcomm = NULL; return r; }
    return child(comm, newcomm, 1, 0, config);
}
#endif

#if AT_LEAST(21901)
/* FAKE_WITHOUT_MEM_ALLOC: a build new enough for ncclMemAlloc/ncclMemFree that leaves them out
 * (as a library built without them, or a partial port, would). */
#ifndef FAKE_WITHOUT_MEM_ALLOC
ncclResult_t ncclMemAlloc(void **ptr, size_t size) { name("ncclMemAlloc"); ARG(size); *ptr = malloc(size); return result(); }
ncclResult_t ncclMemFree(void *ptr) { name("ncclMemFree"); free(ptr); return result(); }
#endif
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
    name("ncclCommRegister"); ARG(live(comm)->rank); ARG(buff); ARG(size); *handle = (void *)0x4855; return result();
}
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) { name("ncclCommDeregister"); ARG(live(comm)->rank); ARG(handle); return result(); }
#endif

#if AT_LEAST(22703)
static int compare_ints(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* ncclCommShrink (src/init.cc:3176-3208). */
ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int n, ncclComm_t *newcomm, ncclConfig_t *config, int flags) {
    name("ncclCommShrink"); ARG(live(comm)->rank); ARG(n); put(exclude, sizeof(int) * (size_t)n); ARG(config); ARG(flags);
    if (flags & 1) { /* NCCL_SHRINK_ABORT: abort in-flight work, wait for the kernels, clear the flags */
        comm->abort_flag = 1;
        kernels_exit(comm);
        comm->abort_flag = 0;
    }
    if (!exclude || n <= 0) return ncclInvalidArgument;
    qsort(exclude, (size_t)n, sizeof(int), compare_ints); /* in place (:3088) */
    int below = 0;
    for (int i = 0; i < n; i++) {
        if (exclude[i] == comm->rank) return ncclInvalidArgument; /* excluded ranks must not call */
        below += exclude[i] < comm->rank;
    }
    ncclResult_t r = result();
    if (r != ncclSuccess) return r;
    if ((r = ensure_ready(comm)) != ncclSuccess) return r;
    return child(comm, newcomm, comm->nranks - n, comm->rank - below, config);
}
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags) {
    name("ncclCommWindowRegister"); ARG(live(comm)->rank); ARG(buff); ARG(size); ARG(flags); *win = (void *)0x5749; return result();
}
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) { name("ncclCommWindowDeregister"); ARG(live(comm)->rank); ARG(win); return result(); }
#endif

#if AT_LEAST(22803)
ncclResult_t ncclAlltoAll(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
    name("ncclAlltoAll"); ARG(s); ARG(d); ARG(n); ARG(t); ARG(live(c)->rank); ARG(st);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue_work(c, st);
}
/* Recorded only (the stand-in does not execute them). */
#define RECORD7(fn, t5) \
    ncclResult_t fn(const void *s, void *d, size_t n, ncclDataType_t t, t5 x, ncclComm_t c, cudaStream_t st) { \
        name(#fn); ARG(s); ARG(d); ARG(n); ARG(t); ARG(x); ARG(live(c)->rank); ARG(st); \
        ncclResult_t r = result(); \
        return r != ncclSuccess ? r : enqueue_work(c, st); }
RECORD7(ncclGather, int)
RECORD7(ncclScatter, int)
#endif

#if AT_LEAST(22807)
/* ncclCommRevoke (src/init.cc:2965-3022): stop in-flight work, keep the communicator for shrink. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
    name("ncclCommRevoke"); ARG(live(comm)->rank); ARG(flags);
    if (flags != 0 || comm->finalized || comm->revoked) return ncclInvalidArgument;
    comm->abort_flag = 1;
    comm->revoked = 1;
    comm->finalized = 1;
    if (comm->blocking) {
        kernels_exit(comm);
        comm->abort_flag = 0;
        return result();
    }
    return start_job((struct job){JOB_REVOKE, comm, NULL, NULL, 0, NULL});
}
#endif

/* ==== The rest of the 2.32.3 host API, part A: group simulation, scalable init, grow,
 * suspend/resume, properties, encryption, runtime parameters. One block, in version order;
 * FAKE_WITHOUT_PARAMS leaves the ncclParam* symbols out (a new-enough library lacking them). */

#if AT_LEAST(22203)
/* ncclGroupSimulateEnd -> ncclGroupEndInternal(simInfo) (v2.30.7-1 src/group.cc:117-124,
 * :766-800, :864): not in a group is ncclInvalidUsage; the caller's struct is read up to
 * min(size, sizeof) and a magic other than 0x74685283 is ncclInvalidArgument; the group's work
 * is planned, not launched (groupLaunch skips the launch with simInfo, :606, :722), and the
 * estimate is copied back over the caller's bytes. The stand-in's estimate: 10 us per queued
 * operation; an empty group leaves NCCL_UNDEF_FLOAT (-1), as the real 2.32.3 does. */
typedef struct { size_t size; unsigned magic, version; float estimatedTime; } fake_sim_info;
ncclResult_t ncclGroupSimulateEnd(fake_sim_info *sim) {
    name("ncclGroupSimulateEnd");
    size_t size = sim->size;
    ARG(size);
    size_t real = size > sizeof(fake_sim_info) ? sizeof(fake_sim_info) : size;
    put(sim, real);
    if (group_depth == 0) return ncclInvalidUsage;
    fake_sim_info internal = {sizeof internal, 0x74685283u, FAKE_VERSION, -1.0f};
    memcpy(&internal, sim, real);
    if (internal.magic != 0x74685283u) { group_depth--; strcpy(last_error, "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER"); return ncclInvalidArgument; }
    if (--group_depth == 0) {
        int ops = group_ncomms;
        if (ops > 0) internal.estimatedTime = 10.0f * (float)ops;
        group_ncomms = 0; /* planned, never launched */
        queued = 0;
    }
    memcpy(sim, &internal, real);
    return result();
}
#endif

#if AT_LEAST(22304)
/* ncclCommInitRankScalable (v2.30.7-1 src/init.cc:2695-2726): ncclCommInitRankDev with nId ids
 * inside an internal group, a NULL config meaning NCCL's defaults (blocking). The ids are
 * recorded in full. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config) {
    name("ncclCommInitRankScalable"); ARG(nranks); ARG(myrank); ARG(nId);
    put(commIds, 128 * (size_t)(nId > 0 ? nId : 0));
    size_t size = config ? config->size : 0;
    ARG(size);
    if (config) put(config, size);
    if (nId < 1 || nId > nranks) return ncclInvalidArgument;
    return init(comm, nranks, myrank, config ? config_blocking(config) : env_blocking(1), 1);
}
#endif

#if AT_LEAST(22902)
/* ncclCommGetUniqueId (v2.30.7-1 src/init.cc:3206-3219): the communicator must be ready; the
 * grow handle is zero-padded to 128 bytes. The stand-in's handle: 0x47 ('G') then the rank. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *id) {
    name("ncclCommGetUniqueId"); ARG(live(comm)->rank);
    ncclResult_t r = ensure_ready(comm);
    if (r != ncclSuccess) return r;
    memset(id, 0, sizeof *id);
    memset(id->internal, 0x47, 16);
    memcpy(id->internal + 16, &comm->rank, sizeof(int));
    return result();
}

/* ncclCommGrow (v2.30.7-1 src/init.cc:3224-3390): checks (nRanks > the current count, existing
 * ranks pass rank -1, new ranks an id and 0 <= rank < nRanks), then a new communicator stored in
 * *newcomm at once (:3321) and made by an init job whose communicator is the NEW one (:3347)
 * and whose out-pointer is the caller's (:3351, stored again by the job when done). An existing
 * rank keeps its number and, without a config, its parent's mode (copyCommConfig, :3305). */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm, ncclConfig_t *config) {
    name("ncclCommGrow");
    int parent_rank = comm ? live(comm)->rank : -1;
    ARG(parent_rank); ARG(nRanks);
    int has_id = uniqueId != NULL;
    ARG(has_id);
    if (uniqueId) put(uniqueId, 128);
    ARG(rank);
    size_t size = config ? config->size : 0;
    ARG(size);
    if (config) put(config, size);
    if (newcomm == NULL || nRanks <= 0) return ncclInvalidArgument;
    if (comm && nRanks <= comm->nranks) return ncclInvalidArgument;
    *newcomm = NULL;
    ncclResult_t r = result();
    if (r != ncclSuccess) return r;
    int blocking, device, myrank;
    if (comm) {
        if ((r = ensure_ready(comm)) != ncclSuccess) return r;
        if (rank != -1) return ncclInvalidArgument;
        blocking = config ? config_blocking(config) : comm->blocking;
        device = comm->device;
        myrank = comm->rank;
    } else {
        if (rank < 0 || !uniqueId || rank >= nRanks) return ncclInvalidArgument;
        blocking = config ? config_blocking(config) : env_blocking(1);
        device = rank;
        myrank = rank;
    }
    ncclComm_t c = new_comm(nRanks, myrank, device, blocking);
    *newcomm = c;
    if (blocking) {
        blocking_creation();
        return ncclSuccess;
    }
    return start_job((struct job){JOB_INIT, c, c, newcomm, hang_init, NULL});
}

/* ncclCommQueryProperties (v2.30.7-1 src/dev_runtime.cc:1459-1496): a wrong magic is
 * ncclInvalidUsage, so is a version newer than the library (getNcclVersionCompat, :1420-1430);
 * the fields after ginType only for a version newer than 2.29.3 (:1480). The stand-in records
 * the header and answers: no device API, no multimem, GIN none, one LSA team. */
struct fake_props { size_t size; unsigned magic, version; int rank, nRanks, cudaDev, nvmlDev; _Bool deviceApi, multimem; int ginType, nLsaTeams; _Bool hostRma; int railedGinType; };
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, struct fake_props *props) {
    name("ncclCommQueryProperties"); ARG(live(comm)->rank); put(props, 16);
    ncclResult_t r = ensure_ready(comm);
    if (r != ncclSuccess) return r;
    if (props->magic != 0xcafebeefu || (int)props->version > FAKE_VERSION) return ncclInvalidUsage;
    props->rank = comm->rank;
    props->nRanks = comm->nranks;
    props->cudaDev = comm->device;
    props->nvmlDev = comm->device + 100;
    props->deviceApi = 1;
    props->multimem = 0;
    props->ginType = 0;
    if (props->version > 22903) {
        props->hostRma = 1;
        props->ginType = 2;
        props->railedGinType = 3;
        props->nLsaTeams = 1;
    }
    return result();
}
#endif

#if AT_LEAST(22907)
/* ncclCommSuspend / ncclCommResume / ncclCommMemStats (v2.30.7-1 src/mem_manager.cc:926-1048):
 * the communicator must be ready; suspend with NCCL_SUSPEND_MEM releases the dynamic memory,
 * resume brings it back; the statistics read the memory manager (here: 4096 bytes that can be
 * suspended, 1024 that cannot); an unknown statistic is ncclInvalidArgument. Blocking
 * communicators only in the stand-in (a non-blocking one would finish on NCCL's thread). */
static int fake_suspended;
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
    name("ncclCommSuspend"); ARG(live(comm)->rank); ARG(flags);
    ncclResult_t r = ensure_ready(comm);
    if (r != ncclSuccess) return r;
    if (flags & 1) fake_suspended = 1;
    return result();
}
ncclResult_t ncclCommResume(ncclComm_t comm) {
    name("ncclCommResume"); ARG(live(comm)->rank);
    ncclResult_t r = ensure_ready(comm);
    if (r != ncclSuccess) return r;
    fake_suspended = 0;
    return result();
}
ncclResult_t ncclCommMemStats(ncclComm_t comm, int stat, uint64_t *value) {
    name("ncclCommMemStats"); ARG(live(comm)->rank); ARG(stat);
    ncclResult_t r = ensure_ready(comm);
    if (r != ncclSuccess) return r;
    if (!value) return ncclInvalidArgument;
    uint64_t scratch = fake_suspended ? 0 : 4096, persist = 1024;
    switch (stat) {
    case 0: *value = scratch; break;
    case 1: *value = (uint64_t)fake_suspended; break;
    case 2: *value = persist; break;
    case 3: *value = scratch + persist; break;
    default: return ncclInvalidArgument;
    }
    return result();
}
#endif

#if AT_LEAST(23004) && !defined(FAKE_WITHOUT_PARAMS)
/* The ncclParam* API (v2.30.7-1 src/param/c_api.cc): handles point into NCCL's registry and are
 * never freed (:55-66); an unknown key is ncclInvalidArgument (:59-62, :166-171); a typed read of
 * another type is ncclInvalidArgument (:72-82); strings and the key table live in thread-local
 * buffers reused by the next call on the thread (:104-112, :123-153, :160-165); ncclParamGet
 * refuses a buffer smaller than the value with len 0 (src/include/param/param.h:93-103,
 * :207-218). The stand-in's registry: one parameter of each type, values from the environment
 * where set (FAKE_PARAM_I32, FAKE_PARAM_STR), a string that names its thread-local buffer's
 * reuse: each ncclParamGetStr overwrites the previous result. */
enum { P_I8, P_I16, P_I32, P_I64, P_U8, P_U16, P_U32, P_U64, P_STR };
struct fake_param { const char *key; int type; int64_t value; };
static struct fake_param fake_params[] = {
    {"FAKE_PARAM_I8", P_I8, -8}, {"FAKE_PARAM_I16", P_I16, -1616}, {"FAKE_PARAM_I32", P_I32, -323232},
    {"FAKE_PARAM_I64", P_I64, -6464646464646464}, {"FAKE_PARAM_U8", P_U8, 200}, {"FAKE_PARAM_U16", P_U16, 60000},
    {"FAKE_PARAM_U32", P_U32, 4000000000}, {"FAKE_PARAM_U64", P_U64, (int64_t)0x7766554433221100}, {"FAKE_PARAM_STR", P_STR, 0},
};
#define NPARAMS (int)(sizeof fake_params / sizeof fake_params[0])
static struct fake_param *fake_param_find(const char *key) {
    for (int i = 0; i < NPARAMS; i++) if (!strcmp(fake_params[i].key, key)) return &fake_params[i];
    return NULL;
}
static int64_t fake_param_value(const struct fake_param *p) {
    const char *e = getenv(p->key);
    return e && p->type != P_STR ? strtoll(e, NULL, 0) : p->value;
}
static const char *fake_param_str(void) {
    const char *e = getenv("FAKE_PARAM_STR");
    return e ? e : "stand-in default";
}
/* What the recording shows of a handle (its index in the registry, -1 for another pointer) and
 * of an out-pointer (1 if given): the addresses themselves are the caller's stack. */
static int fake_param_index(const void *h) {
    for (int i = 0; i < NPARAMS; i++) if (h == &fake_params[i]) return i;
    return -1;
}
#define ARG_HANDLE(h) do { int index_ = fake_param_index(h); ARG(index_); } while (0)
#define ARG_GIVEN(p) do { int given_ = (p) != NULL; ARG(given_); } while (0)
static size_t fake_param_size(int type) {
    static const size_t sizes[] = {1, 2, 4, 8, 1, 2, 4, 8, 0};
    return sizes[type];
}
ncclResult_t ncclParamBind(void **out, const char *key) {
    name("ncclParamBind"); ARG_GIVEN(out); if (key) text(key);
    if (!out || !key) return ncclInvalidArgument;
    struct fake_param *p = fake_param_find(key);
    if (!p) return ncclInvalidArgument;
    *out = p;
    return ncclSuccess;
}
#define FAKE_GETTER(suffix, ctype, tid) \
    ncclResult_t ncclParamGet##suffix(void *h, ctype *out) { \
        name("ncclParamGet" #suffix); ARG_HANDLE(h); ARG_GIVEN(out); \
        struct fake_param *p = h; \
        if (!p || !out) return ncclInvalidArgument; \
        if (p->type != (tid)) return ncclInvalidArgument; \
        *out = (ctype)fake_param_value(p); \
        return ncclSuccess; }
FAKE_GETTER(I8, int8_t, P_I8)
FAKE_GETTER(I16, int16_t, P_I16)
FAKE_GETTER(I32, int32_t, P_I32)
FAKE_GETTER(I64, int64_t, P_I64)
FAKE_GETTER(U8, uint8_t, P_U8)
FAKE_GETTER(U16, uint16_t, P_U16)
FAKE_GETTER(U32, uint32_t, P_U32)
FAKE_GETTER(U64, uint64_t, P_U64)
static _Thread_local char fake_str_buf[256];
ncclResult_t ncclParamGetStr(void *h, const char **out) {
    name("ncclParamGetStr"); ARG_HANDLE(h); ARG_GIVEN(out);
    struct fake_param *p = h;
    if (!p || !out) return ncclInvalidArgument;
    if (p->type != P_STR) return ncclInvalidArgument;
    strncpy(fake_str_buf, fake_param_str(), sizeof fake_str_buf - 1);
    *out = fake_str_buf;
    return ncclSuccess;
}
ncclResult_t ncclParamGet(void *h, void *out, int maxLen, int *len) {
    name("ncclParamGet"); ARG_HANDLE(h); ARG_GIVEN(out); ARG(maxLen); ARG_GIVEN(len);
    struct fake_param *p = h;
    if (!p || !out || !len || maxLen <= 0) return ncclInvalidArgument;
    int64_t v = fake_param_value(p);
    const void *src = &v; /* little-endian scalars: the low bytes */
    int sz = (int)fake_param_size(p->type);
    if (p->type == P_STR) { src = fake_param_str(); sz = (int)strlen(src) + 1; }
    if (sz > maxLen) { *len = 0; return ncclInvalidArgument; }
    memcpy(out, src, (size_t)sz);
    *len = sz;
    return ncclSuccess;
}
static _Thread_local char fake_value_buf[256];
ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen) {
    name("ncclParamGetParameter"); if (key) text(key); ARG_GIVEN(value); ARG_GIVEN(valueLen);
    if (!key || !value || !valueLen) return ncclInvalidArgument;
    struct fake_param *p = fake_param_find(key);
    if (!p) { *value = NULL; *valueLen = 0; return ncclInvalidArgument; }
    if (p->type == P_STR) strncpy(fake_value_buf, fake_param_str(), sizeof fake_value_buf - 1);
    else if (p->type >= P_U8) snprintf(fake_value_buf, sizeof fake_value_buf, "%llu", (unsigned long long)fake_param_value(p));
    else snprintf(fake_value_buf, sizeof fake_value_buf, "%lld", (long long)fake_param_value(p));
    *value = fake_value_buf;
    *valueLen = (int)strlen(fake_value_buf);
    return ncclSuccess;
}
static _Thread_local const char *fake_key_table[NPARAMS];
ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen) {
    name("ncclParamGetAllParameterKeys"); ARG_GIVEN(table); ARG_GIVEN(tableLen);
    if (!table || !tableLen) return ncclInvalidArgument;
    for (int i = 0; i < NPARAMS; i++) fake_key_table[i] = fake_params[i].key;
    *table = fake_key_table;
    *tableLen = NPARAMS;
    return ncclSuccess;
}
void ncclParamDumpAll(void) { name("ncclParamDumpAll"); }
#endif

#if AT_LEAST(23203)
/* ncclSetEncryption (2.32.3; no source yet: the behaviour of the real 2.32.3 library, whose
 * refusals carry these last-error texts): a wrong magic, an unknown mode, a PSK mode without a
 * key or with one shorter than 32 bytes are ncclInvalidArgument; the key is copied (strlen,
 * calloc, memcpy in its ncclSetEncryption). The stand-in records the header, the mode and the
 * key's length, never the key. */
typedef struct { size_t size; unsigned magic, version; int mode; const char *psk; } fake_encryption;
static size_t fake_psk_len;
size_t fake_psk_length(void) { return fake_psk_len; }
ncclResult_t ncclSetEncryption(const fake_encryption *c) {
    name("ncclSetEncryption"); put(c, 24);
    size_t len = c->psk ? strlen(c->psk) : 0;
    ARG(len);
    if (c->magic != 0xcafebeefu) { strcpy(last_error, "ncclSetEncryption: config not initialized via NCCL_ENCRYPTION_CONFIG_INITIALIZER"); return ncclInvalidArgument; }
    if (c->mode != 0 && c->mode != 1) { strcpy(last_error, "ncclSetEncryption: config->mode is not a supported encryption mode"); return ncclInvalidArgument; }
    if (c->mode == 1 && !c->psk) { strcpy(last_error, "ncclSetEncryption: NCCL_ENCRYPTION_MODE_PSK requires config->psk"); return ncclInvalidArgument; }
    if (c->mode == 1 && len < 32) { strcpy(last_error, "ncclSetEncryption: config->psk must be at least 32 bytes"); return ncclInvalidArgument; }
    fake_psk_len = c->mode == 1 ? len : 0;
    return result();
}
#endif
/* ==== end of part A. */

/* ==== The device-API host helpers (2.28.3+), one-sided calls (2.29.2) and per-collective
 * configs (2.31.2): one block, so that other blocks appended to this file merge by
 * concatenation. Each records its name and every argument's bytes (structs passed BY VALUE in
 * full: ncclTeam's 12 bytes, ncclMultimemHandle's 8), and answers as the NCCL source cited. The
 * stand-in's windows (0x5749 from ncclCommWindowRegister) do not know their communicator, so
 * the window queries read a "device world" the tests set with fake_set_device_world(nranks,
 * rank, lsaSize): NCCL finds it from the window (findCommAndHostWindowFromDeviceWindow). */
#if AT_LEAST(22803)
typedef struct ncclTeam { int nRanks, rank, stride; } ncclTeam_t;
typedef struct { void *mcBasePtr; } ncclMultimemHandle_t;
/* ncclDevResourceRequirements_t as 2.28.7-2.32.3 declare it (nccl_device/host.h). */
typedef struct ncclDevResourceRequirements {
    struct ncclDevResourceRequirements *next;
    size_t bufferSize, bufferAlign;
    uint32_t *outBufferHandle;
    int ginSignalCount, ginCounterCount;
    uint32_t *outGinSignalStart, *outGinCounterStart;
} ncclDevResourceRequirements_t;
typedef struct { uint32_t bufHandle; int nBarriers; } ncclLsaBarrierHandle_t;
typedef struct { uint32_t bufHandle; uint32_t nSlots; } ncclLLA2AHandle_t;
typedef struct { uint32_t signal0; uint32_t unused; } ncclGinBarrierHandle_t;

static int dev_nranks = 1, dev_rank, dev_lsa_size; /* dev_lsa_size 0: every rank (one node) */
static void *win_user_ptr;
void fake_set_device_world(int nranks, int rank, int lsa_size) { dev_nranks = nranks; dev_rank = rank; dev_lsa_size = lsa_size; }
void fake_set_win_user_ptr(void *p) { win_user_ptr = p; }
static int lsa_size(ncclComm_t c) { return dev_lsa_size > 0 ? dev_lsa_size : c->nranks; }

/* v2.30.7-1 src/nccl_device/core.cc:13-19: every rank, stride 1. */
ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
    name("ncclTeamWorld"); ARG(live(comm)->rank);
    return (ncclTeam_t){comm->nranks, comm->rank, 1};
}
/* core.cc:22-33: the load/store domain (devrState.lsaSize, lsaSelf). The stand-in's domains are
 * consecutive blocks of lsa_size ranks. */
ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
    name("ncclTeamLsa"); ARG(live(comm)->rank);
    int n = lsa_size(comm);
    return (ncclTeam_t){n, comm->rank % n, 1};
}
/* core.cc:36-45: one rank per domain, stride lsaSize. */
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
    name("ncclTeamRail"); ARG(live(comm)->rank);
    int n = lsa_size(comm);
    return (ncclTeam_t){comm->nranks / n, comm->rank / n, n};
}
/* core.cc:48-51. */
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
    name("ncclTeamRankToWorld"); ARG(live(comm)->rank); ARG(team); ARG(rank);
    int answer = comm->rank + (rank - team.rank) * team.stride;
    memset(&team, 0xA5, sizeof team); /* the callee owns its copy */
    return answer;
}
/* core.cc:53-58: lsaSelf + (rank - team.rank) * team.stride. */
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
    name("ncclTeamRankToLsa"); ARG(live(comm)->rank); ARG(team); ARG(rank);
    return comm->rank % lsa_size(comm) + (rank - team.rank) * team.stride;
}
/* v2.30.7-1 src/nccl_device/lsa_barrier.cc:13-21. */
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle,
                                             ncclDevResourceRequirements_t *outReq) {
    name("ncclLsaBarrierCreateRequirement"); ARG(team); ARG(nBarriers);
    memset(outReq, 0, sizeof *outReq);
    outHandle->nBarriers = nBarriers;
    outReq->bufferSize = (size_t)(3 * nBarriers + nBarriers * team.nRanks) * sizeof(uint32_t);
    outReq->bufferAlign = sizeof(uint32_t);
    outReq->outBufferHandle = &outHandle->bufHandle;
    return result();
}
/* v2.30.7-1 src/nccl_device/ll_a2a.cc:12-14 and 18-26. */
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
    name("ncclLLA2ACalcSlots"); ARG(maxElts); ARG(maxEltSize);
    return maxElts * ((maxEltSize + 7) / 8);
}
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                        ncclDevResourceRequirements_t *outReq) {
    name("ncclLLA2ACreateRequirement"); ARG(nBlocks); ARG(nSlots);
    outHandle->nSlots = (uint32_t)nSlots;
    memset(outReq, 0, sizeof *outReq);
    outReq->bufferSize = (size_t)(nBlocks * (1 + 2 * nSlots) * 16);
    outReq->bufferAlign = 16;
    outReq->outBufferHandle = &outHandle->bufHandle;
    return result();
}
/* ncclDevCommCreate/Destroy: recorded only. The stand-in has no device runtime to build an
 * ncclDevComm_t from, so create answers ncclInvalidUsage (the stand-in's choice, not a model). */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm) {
    name("ncclDevCommCreate"); ARG(live(comm)->rank); ARG(reqs); ARG(outDevComm);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : ncclInvalidUsage;
}
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm) {
    name("ncclDevCommDestroy"); ARG(live(comm)->rank); ARG(devComm);
    return result();
}
#endif

#if AT_LEAST(22807)
/* ncclGinBarrierCreateRequirement (v2.30.7-1 src/nccl_device/gin_barrier.cc:13-19): no buffer,
 * nBarriers * team.nRanks GIN signals, their start stored into the handle. */
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq) {
    name("ncclGinBarrierCreateRequirement"); ARG(live(comm)->rank); ARG(team); ARG(nBarriers);
    memset(outReq, 0, sizeof *outReq);
    outReq->ginSignalCount = team.nRanks * nBarriers;
    outReq->outGinSignalStart = &outHandle->signal0;
    return result();
}
#endif

#if AT_LEAST(22902)
/* ncclWinGetUserPtr (v2.30.7-1 src/dev_runtime.cc:1593-1620): PtrCheck on the out-pointer;
 * without symmetric support the answer is NULL with success. */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr) {
    name("ncclWinGetUserPtr"); ARG(live(comm)->rank); ARG(win);
    if (!outUserPtr || !win) return ncclInvalidArgument;
    *outUserPtr = win_user_ptr;
    return result();
}
/* ncclPutSignal, ncclSignal, ncclWaitSignal (v2.30.7-1 src/collectives.cc:318-400): enqueued
 * through ncclEnqueueCheck like the collectives. */
ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
    name("ncclPutSignal"); ARG(localbuff); ARG(count); ARG(datatype); ARG(peer); ARG(peerWin); ARG(peerWinOffset);
    ARG(sigIdx); ARG(ctx); ARG(flags); ARG(live(comm)->rank); ARG(stream);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue_work(comm, stream);
}
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
    name("ncclSignal"); ARG(peer); ARG(sigIdx); ARG(ctx); ARG(flags); ARG(live(comm)->rank); ARG(stream);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue_work(comm, stream);
}
typedef struct { int opCnt, peer, sigIdx, ctx; } ncclWaitSignalDesc_t;
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream) {
    name("ncclWaitSignal"); ARG(nDesc); put(signalDescs, sizeof *signalDescs * (size_t)(nDesc > 0 ? nDesc : 0));
    ARG(live(comm)->rank); ARG(stream);
    ncclResult_t r = result();
    return r != ncclSuccess ? r : enqueue_work(comm, stream);
}
/* dev_runtime.cc:1700-1721: a NULL mcBasePtr is invalid; base + window offset + offset. The
 * stand-in's windows sit at offset 0 of every mapping; NVLS is supported. */
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem, void **outPtr) {
    name("ncclGetMultimemDevicePointer"); ARG(window); ARG(offset); ARG(multimem);
    if (!window || !outPtr || !multimem.mcBasePtr) return ncclInvalidArgument;
    *outPtr = (char *)multimem.mcBasePtr + offset;
    return result();
}
/* The stand-in's multicast mapping of a window is at 0x4d430000 (dev_runtime.cc:1724-1741). */
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr) {
    name("ncclGetLsaMultimemDevicePointer"); ARG(window); ARG(offset);
    if (!window || !outPtr) return ncclInvalidArgument;
    *outPtr = (void *)(0x4d430000u + offset);
    return result();
}
/* dev_runtime.cc:1744-1765: lsaRank outside [0, lsaSize) is ncclInvalidArgument; load/store
 * peer p's buffer of the window is at 0x10000000 * (p + 1) in the stand-in. */
static int dev_lsa(void) { return dev_lsa_size > 0 ? dev_lsa_size : dev_nranks; }
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr) {
    name("ncclGetLsaDevicePointer"); ARG(window); ARG(offset); ARG(lsaRank);
    if (!window || !outPtr) return ncclInvalidArgument;
    if (lsaRank < 0 || lsaRank >= dev_lsa()) return ncclInvalidArgument;
    *outPtr = (void *)(0x10000000ul * (unsigned long)(lsaRank + 1) + offset);
    return result();
}
/* dev_runtime.cc:1768-1800: peer outside the world is ncclInvalidArgument; a peer outside this
 * rank's load/store domain gives NULL with success. */
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr) {
    name("ncclGetPeerDevicePointer"); ARG(window); ARG(offset); ARG(peer);
    if (!window || !outPtr) return ncclInvalidArgument;
    if (peer < 0 || peer >= dev_nranks) return ncclInvalidArgument;
    int n = dev_lsa(), lsa = peer - (dev_rank - dev_rank % n);
    *outPtr = lsa < 0 || lsa >= n ? NULL : (void *)(0x10000000ul * (unsigned long)(lsa + 1) + offset);
    return result();
}
#endif

#if AT_LEAST(23102)
/* 2.31.2 and later: the mirror's tags end at v2.30.7-1, so these follow the 2.31.2/2.32.3
 * headers only. ncclTeamCft and ncclTeamCftMultimem answer the load/store team (recorded with
 * their mode); the LE-info queries answer engine 0 at the offset. */
ncclTeam_t ncclTeamCft(ncclComm_t comm, int mode) {
    name("ncclTeamCft"); ARG(live(comm)->rank); ARG(mode);
    int n = lsa_size(comm);
    return (ncclTeam_t){n, comm->rank % n, 1};
}
ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm) {
    name("ncclTeamCftMultimem"); ARG(live(comm)->rank);
    int n = lsa_size(comm);
    return (ncclTeam_t){n, comm->rank % n, 1};
}
ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, uint32_t *leId, size_t *leOffset) {
    name("ncclGetMultimemDeviceLeInfo"); ARG(window); ARG(offset);
    if (!window || !leId || !leOffset) return ncclInvalidArgument;
    *leId = 0; *leOffset = offset;
    return result();
}
ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam, uint32_t *leId,
                                    size_t *leOffset) {
    name("ncclGetCftDeviceLeInfo"); ARG(window); ARG(offset); ARG(peerCft); ARG(cftTeam);
    if (!window || !leId || !leOffset || peerCft < 0 || peerCft >= cftTeam.nRanks) return ncclInvalidArgument;
    *leId = (uint32_t)peerCft; *leOffset = offset;
    return result();
}
ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld, uint32_t *leId, size_t *leOffset) {
    name("ncclGetPeerDeviceLeInfo"); ARG(window); ARG(offset); ARG(peerWorld);
    if (!window || !leId || !leOffset || peerWorld < 0 || peerWorld >= dev_nranks) return ncclInvalidArgument;
    *leId = (uint32_t)peerWorld; *leOffset = offset;
    return result();
}

/* ncclCollConfig_t: 64 bytes in 2.31.2 (ncclCollConfig_v23100), 72 in 2.32.3 (_v23200). The
 * library's own copy is read as ncclConfig_t is (v2.30.7-1 src/init.cc:2258-2268, the model
 * here): the caller's size clamped to the library's sizeof, bytes copied, a magic other than
 * NCCL_API_MAGIC refused with ncclInvalidArgument ("An uninitialized config will result in a
 * NCCL error", nccl.h). Recorded: the size field, then the bytes the library read. */
#define COLL_CONFIG_SIZE (AT_LEAST(23203) ? 72u : 64u)
static ncclResult_t read_coll_config(const void *config) {
    size_t size = 0;
    unsigned char copy[72] = {0};
    if (!config) return ncclInvalidArgument;
    memcpy(&size, config, sizeof size);
    ARG(size);
    size_t real = size > COLL_CONFIG_SIZE ? COLL_CONFIG_SIZE : size;
    memcpy(copy, config, real);
    put(copy, real);
    unsigned magic;
    memcpy(&magic, copy + 8, sizeof magic);
    return magic == 0xcafebeefu ? ncclSuccess : ncclInvalidArgument;
}
#define COLL_CONFIG(fn, params, record) \
    ncclResult_t fn params { \
        name(#fn); record; \
        ncclResult_t r = read_coll_config(config); \
        if (r == ncclSuccess) r = result(); \
        return r != ncclSuccess ? r : enqueue_work(c, st); }
COLL_CONFIG(ncclAllReduceConfig, (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(op), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclBroadcastConfig, (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(root), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclReduceConfig, (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(op), ARG(root), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclAllGatherConfig, (const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclReduceScatterConfig, (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(op), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclAlltoAllConfig, (const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclGatherConfig, (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(root), ARG(live(c)->rank), ARG(st)))
COLL_CONFIG(ncclScatterConfig, (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st, const void *config),
            (ARG(s), ARG(d), ARG(n), ARG(t), ARG(root), ARG(live(c)->rank), ARG(st)))
#endif
/* ==== end of the device-API, one-sided and per-collective-config block ==== */
