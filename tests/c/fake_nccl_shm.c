/*
 * The stand-in libnccl's ranks in other processes (or threads): a communicator made by
 * ncclCommInitRank with more than one rank meets its peers in a POSIX shared-memory segment
 * named after the unique id, and runs each collective there, so that `perf` under mpirun,
 * srun or torchrun (one rank per process) runs to completion on a machine without a GPU.
 *
 * What it models of NCCL (tag v2.30.7-1):
 *  - ncclCommInitRank returns only once every rank of the id has joined: the bootstrap root
 *    collects one handle per rank before anyone proceeds (src/bootstrap.cc:372,
 *    `} while (c < nrecv);`). Here: a join counter in the segment.
 *  - Collectives of one communicator are matched across ranks by their order of issue: each
 *    plan numbers them (src/enqueue.cc:642, `plan->collOpCount++`), which is why every rank
 *    must call them in the same order. Here: a per-rank sequence number; collective k of a
 *    rank meets collective k of every other rank.
 * It does not model time: a peer that never comes makes a call fail after FAKE_NCCL_SHM_WAIT
 * seconds (default 60) with ncclSystemError, instead of hanging as NCCL would.
 *
 * Each rank copies its input into its slot, waits until every rank has posted the same
 * collective, computes its own result from all the slots (the same arithmetic as the
 * in-process stand-in: run_collective), and marks it done; a slot is reused only once every
 * rank is done with the previous collective.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Included by fake_nccl.c after `struct op` and run_collective(), whose arithmetic it reuses. */

#define MAX_RANKS 64

struct segment {
    _Atomic int joined;
    _Atomic uint64_t posted[MAX_RANKS];
    _Atomic uint64_t finished[MAX_RANKS];
    /* then nranks slots of slot_bytes */
};

struct fake_shm {
    struct segment *seg;
    size_t map_bytes, slot_bytes;
    int rank, nranks;
    uint64_t count; /* collectives this rank has issued */
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double wait_limit(void) {
    const char *e = getenv("FAKE_NCCL_SHM_WAIT");
    return e ? atof(e) : 60.0;
}

/* Spins (yielding) until `*v >= want` or the limit passes: 0 or -1. */
static int wait_for(_Atomic uint64_t *v, uint64_t want, double until) {
    while (atomic_load_explicit(v, memory_order_acquire) < want) {
        if (now() > until) return -1;
        sched_yield();
    }
    return 0;
}

static char *slot(struct fake_shm *s, int r) {
    return (char *)(s->seg + 1) + (size_t)r * s->slot_bytes;
}

static struct fake_shm *fake_shm_join(const char id[128], int nranks, int rank, char *error, size_t error_len) {
    if (nranks > MAX_RANKS) {
        snprintf(error, error_len, "the stand-in joins at most %d ranks across processes", MAX_RANKS);
        return NULL;
    }
    /* The name: a hash of the whole id (ids differ per job: see ncclGetUniqueId). */
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 128; i++) h = (h ^ (unsigned char)id[i]) * 1099511628211ull;
    char name[64];
    snprintf(name, sizeof name, "/fake-nccl-%016llx", (unsigned long long)h);
    const char *b = getenv("FAKE_NCCL_SHM_BYTES");
    size_t slot_bytes = b ? strtoull(b, NULL, 0) : (size_t)16 << 20;
    size_t bytes = sizeof(struct segment) + (size_t)nranks * slot_bytes;
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        snprintf(error, error_len, "shared memory %s: cannot create", name);
        if (fd >= 0) close(fd);
        return NULL;
    }
    struct segment *seg = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        snprintf(error, error_len, "shared memory %s: cannot map", name);
        return NULL;
    }
    /* ftruncate zero-fills a new segment: counters start at 0. Every rank has the same
     * FAKE_NCCL_SHM_BYTES, hence the same layout. */
    atomic_fetch_add(&seg->joined, 1);
    double until = now() + wait_limit();
    while (atomic_load(&seg->joined) < nranks) {
        if (now() > until) {
            snprintf(error, error_len, "only %d of %d ranks joined within %.0f s (stand-in)", atomic_load(&seg->joined), nranks, wait_limit());
            munmap(seg, bytes);
            return NULL;
        }
        sched_yield();
    }
    /* Everyone has it mapped: the name can go (rank 0 removes it). */
    if (rank == 0) shm_unlink(name);
    struct fake_shm *s = calloc(1, sizeof *s);
    s->seg = seg;
    s->map_bytes = bytes;
    s->slot_bytes = slot_bytes;
    s->rank = rank;
    s->nranks = nranks;
    return s;
}

static int fake_shm_collective(struct fake_shm *s, const struct op *mine, size_t in_bytes, char *error, size_t error_len) {
    if (in_bytes > s->slot_bytes) {
        snprintf(error, error_len, "%zu bytes exceed the stand-in's %zu-byte slots (FAKE_NCCL_SHM_BYTES)", in_bytes, s->slot_bytes);
        return -1;
    }
    uint64_t k = ++s->count;
    double until = now() + wait_limit();
    /* The slot still holds collective k-1 until every rank has finished it. */
    for (int q = 0; q < s->nranks; q++)
        if (wait_for(&s->seg->finished[q], k - 1, until)) goto late;
    memcpy(slot(s, s->rank), mine->s, in_bytes);
    atomic_store_explicit(&s->seg->posted[s->rank], k, memory_order_release);
    for (int q = 0; q < s->nranks; q++)
        if (wait_for(&s->seg->posted[q], k, until)) goto late;
    {
        /* The in-process arithmetic over one op per rank: the peers' inputs are their slots,
         * their outputs go to scratch (only this rank's result is kept). */
        struct op q[MAX_RANKS];
        size_t out_bytes = in_bytes * (size_t)s->nranks + 1;
        char *scratch = malloc(out_bytes);
        for (int r = 0; r < s->nranks; r++) {
            q[r] = *mine;
            q[r].s = slot(s, r);
            q[r].d = r == s->rank ? mine->d : scratch;
        }
        run_collective(q);
        free(scratch);
    }
    atomic_store_explicit(&s->seg->finished[s->rank], k, memory_order_release);
    return 0;
late:
    snprintf(error, error_len, "a peer never issued collective %llu within %.0f s (stand-in)", (unsigned long long)k, wait_limit());
    return -1;
}

static void fake_shm_leave(struct fake_shm *s) {
    if (!s) return;
    munmap(s->seg, s->map_bytes);
    free(s);
}
