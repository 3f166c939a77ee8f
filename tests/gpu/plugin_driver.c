/* The profiler plugin's GPU driver: one-rank NCCL work whose profiler events are known
 * (/work/notes/profiler-one-rank.md; examples/profiler_plugin.rs counts them).
 *
 *   plugin_driver N M [COUNT]
 *
 * On GPU 0: ncclGetUniqueId, ncclCommInitRank(nranks 1, rank 0), N ncclAllReduce (float sum,
 * out of place), M ncclBroadcast (root 0, out of place), one ncclGroupStart / ncclSend(to self) /
 * ncclRecv(from self) / ncclGroupEnd with distinct buffers (NCCL drops an in-place self pair
 * before planning it), a stream synchronize, a check of the data, ncclCommDestroy. COUNT floats
 * per operation (default 1024, at least 1). It prints what it issued and the communicator's
 * hash as NCCL computes it, the value a profiler's init receives as commId.
 *
 * NCCL and the CUDA runtime are opened with dlopen, so one binary runs against any NCCL 2.x:
 *   NCCL_TRAMPOLINE_NCCL_LIB   the NCCL library (default libnccl.so.2)
 *   NCCL_TRAMPOLINE_CUDART     the CUDA runtime (default: libcudart.so, .so.13, .so.12, .so.11.0)
 * No CUDA or NCCL header is needed:
 *   gcc -std=gnu11 -O2 -Wall -o plugin_driver tests/gpu/plugin_driver.c -ldl
 * Exit status 0 when every call succeeded and the data is right.
 *
 * Two ranks (NCCL_TRAMPOLINE_DRIVER_RANKS=2, NCCL_TRAMPOLINE_DRIVER_RANK=0|1,
 * NCCL_TRAMPOLINE_DRIVER_ID=<file>): two processes, rank 0 writes the unique id to the file and
 * rank 1 reads it; N all-reduces and M broadcasts, checked; no self send/recv. On a machine of
 * one GPU both ranks use GPU 0, each under an NCCL_HOSTID of its own, so that NCCL sees two
 * hosts (it refuses two ranks on one GPU of one host) and connects them through its network
 * transport: the collectives are then planned, and a tuner consulted, as across two nodes. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* NCCL's ABI, the parts used (nccl.h): results, ids, comms and the enums are ints/pointers. */
typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
enum { ncclFloat32 = 7 };
enum { ncclSum = 0 };

/* The CUDA runtime's, the parts used: errors are ints, streams pointers. */
typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };

static struct {
  ncclResult_t (*GetVersion)(int *);
  const char *(*GetErrorString)(ncclResult_t);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Broadcast)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
} nccl;

static struct {
  cudaError_t (*SetDevice)(int);
  cudaError_t (*Malloc)(void **, size_t);
  cudaError_t (*Free)(void *);
  cudaError_t (*Memcpy)(void *, const void *, size_t, int);
  cudaError_t (*StreamCreate)(cudaStream_t *);
  cudaError_t (*StreamSynchronize)(cudaStream_t);
  cudaError_t (*StreamDestroy)(cudaStream_t);
  const char *(*GetErrorString)(cudaError_t);
} cuda;

#define NCCLCHECK(call)                                                                                     \
  do {                                                                                                      \
    ncclResult_t r_ = (call);                                                                               \
    if (r_ != 0) {                                                                                          \
      fprintf(stderr, "plugin_driver: %s failed: %d (%s)\n", #call, r_, nccl.GetErrorString(r_));           \
      return 1;                                                                                             \
    }                                                                                                       \
  } while (0)
#define CUDACHECK(call)                                                                                     \
  do {                                                                                                      \
    cudaError_t e_ = (call);                                                                                \
    if (e_ != 0) {                                                                                          \
      fprintf(stderr, "plugin_driver: %s failed: %d (%s)\n", #call, e_, cuda.GetErrorString(e_));           \
      return 1;                                                                                             \
    }                                                                                                       \
  } while (0)

/* dlsym into *slot; 0 on success. */
static int bind(void *lib, const char *libName, const char *symbol, void *slot) {
  void *f = dlsym(lib, symbol);
  if (f == NULL) {
    fprintf(stderr, "plugin_driver: %s has no %s\n", libName, symbol);
    return 1;
  }
  memcpy(slot, &f, sizeof f);
  return 0;
}

/* NCCL's communicator hash of a unique id (NCCL 2.28 src/init.cc:1525 getHash of the id's 128
 * bytes; the hash: src/include/bitops.h:437-478, the same in 2.28.9, accumulators {1, 1}, the size xored in, then
 * per 8-byte little-endian chunk a mix and an add, then a digest). Valid when NCCL_COMM_ID is
 * unset. */
static uint64_t commHash(const ncclUniqueId *id) {
  uint64_t a0 = 1, a1 = 1;
  size_t left = sizeof id->internal;
  const char *p = id->internal;
  a0 ^= left;
  while (left != 0) {
    a0 += a1;
    a1 ^= a0;
    a0 ^= a0 >> 31;
    a0 *= 0x9de62bbc8cef3ce3ULL;
    a1 ^= a1 >> 32;
    a1 *= 0x485cd6311b599e79ULL;
    size_t n = left < 8 ? left : 8;
    uint64_t x = 0;
    memcpy(&x, p, n);
    p += n;
    left -= n;
    a0 += x;
  }
  uint64_t h = a0;
  h ^= h >> 31;
  h *= 0xbac3bd562846de6bULL;
  h += a1;
  h ^= h >> 32;
  h *= 0x995a187a14e7b445ULL;
  return h;
}

static int parseCount(const char *s, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 0 || v > 1000000) return 1;
  *out = v;
  return 0;
}

/* Copies `n` floats back and compares them with `want`; 0 when equal. */
static int expect(const char *what, const float *dev, const float *want, size_t n, float *host) {
  if (cuda.Memcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost) != 0) {
    fprintf(stderr, "plugin_driver: copying the %s result back failed\n", what);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    if (host[i] != want[i]) {
      fprintf(stderr, "plugin_driver: %s: element %zu is %g, want %g\n", what, i, host[i], want[i]);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  long nAllReduce, nBroadcast, count = 1024;
  if (argc < 3 || argc > 4 || parseCount(argv[1], &nAllReduce) || parseCount(argv[2], &nBroadcast) ||
      (argc == 4 && (parseCount(argv[3], &count) || count == 0))) {
    fprintf(stderr, "usage: %s N_ALLREDUCE M_BROADCAST [COUNT]\n", argv[0]);
    return 2;
  }

  const char *ncclName = getenv("NCCL_TRAMPOLINE_NCCL_LIB");
  if (ncclName == NULL || *ncclName == '\0') ncclName = "libnccl.so.2";
  void *ncclLib = dlopen(ncclName, RTLD_NOW | RTLD_LOCAL);
  if (ncclLib == NULL) {
    fprintf(stderr, "plugin_driver: cannot open %s: %s\n", ncclName, dlerror());
    return 1;
  }
  const char *cudartName = getenv("NCCL_TRAMPOLINE_CUDART");
  void *cudartLib = NULL;
  if (cudartName != NULL && *cudartName != '\0') {
    cudartLib = dlopen(cudartName, RTLD_NOW | RTLD_LOCAL);
  } else {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && cudartLib == NULL; i++) {
      cudartName = names[i];
      cudartLib = dlopen(cudartName, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (cudartLib == NULL) {
    fprintf(stderr, "plugin_driver: cannot open the CUDA runtime (%s): %s\n", cudartName, dlerror());
    return 1;
  }

  if (bind(ncclLib, ncclName, "ncclGetVersion", &nccl.GetVersion) ||
      bind(ncclLib, ncclName, "ncclGetErrorString", &nccl.GetErrorString) ||
      bind(ncclLib, ncclName, "ncclGetUniqueId", &nccl.GetUniqueId) ||
      bind(ncclLib, ncclName, "ncclCommInitRank", &nccl.CommInitRank) ||
      bind(ncclLib, ncclName, "ncclCommDestroy", &nccl.CommDestroy) ||
      bind(ncclLib, ncclName, "ncclAllReduce", &nccl.AllReduce) ||
      bind(ncclLib, ncclName, "ncclBroadcast", &nccl.Broadcast) ||
      bind(ncclLib, ncclName, "ncclSend", &nccl.Send) || bind(ncclLib, ncclName, "ncclRecv", &nccl.Recv) ||
      bind(ncclLib, ncclName, "ncclGroupStart", &nccl.GroupStart) ||
      bind(ncclLib, ncclName, "ncclGroupEnd", &nccl.GroupEnd) ||
      bind(cudartLib, cudartName, "cudaSetDevice", &cuda.SetDevice) ||
      bind(cudartLib, cudartName, "cudaMalloc", &cuda.Malloc) || bind(cudartLib, cudartName, "cudaFree", &cuda.Free) ||
      bind(cudartLib, cudartName, "cudaMemcpy", &cuda.Memcpy) ||
      bind(cudartLib, cudartName, "cudaStreamCreate", &cuda.StreamCreate) ||
      bind(cudartLib, cudartName, "cudaStreamSynchronize", &cuda.StreamSynchronize) ||
      bind(cudartLib, cudartName, "cudaStreamDestroy", &cuda.StreamDestroy) ||
      bind(cudartLib, cudartName, "cudaGetErrorString", &cuda.GetErrorString))
    return 1;

  int version = 0;
  NCCLCHECK(nccl.GetVersion(&version));
  printf("plugin_driver: NCCL %d from %s, CUDA runtime %s\n", version, ncclName, cudartName);

  size_t n = (size_t)count, bytes = n * sizeof(float);
  float *pattern = malloc(bytes), *back = malloc(bytes);
  if (pattern == NULL || back == NULL) return 1;
  for (size_t i = 0; i < n; i++) pattern[i] = (float)(i % 1000) + 0.5f;

  CUDACHECK(cuda.SetDevice(0));
  float *src, *dst, *sendBuf, *recvBuf;
  cudaStream_t stream;
  CUDACHECK(cuda.Malloc((void **)&src, bytes));
  CUDACHECK(cuda.Malloc((void **)&dst, bytes));
  CUDACHECK(cuda.Malloc((void **)&sendBuf, bytes));
  CUDACHECK(cuda.Malloc((void **)&recvBuf, bytes));
  CUDACHECK(cuda.StreamCreate(&stream));
  CUDACHECK(cuda.Memcpy(src, pattern, bytes, cudaMemcpyHostToDevice));
  CUDACHECK(cuda.Memcpy(sendBuf, pattern, bytes, cudaMemcpyHostToDevice));

  ncclUniqueId id;
  ncclComm_t comm;
  const char *ranksText = getenv("NCCL_TRAMPOLINE_DRIVER_RANKS");
  int nranks = ranksText ? atoi(ranksText) : 1, rank = 0;
  if (nranks == 2) {
    const char *rankText = getenv("NCCL_TRAMPOLINE_DRIVER_RANK"), *idFile = getenv("NCCL_TRAMPOLINE_DRIVER_ID");
    rank = rankText ? atoi(rankText) : -1;
    if ((rank != 0 && rank != 1) || idFile == NULL) {
      fprintf(stderr, "plugin_driver: two ranks need NCCL_TRAMPOLINE_DRIVER_RANK=0|1 and NCCL_TRAMPOLINE_DRIVER_ID\n");
      return 2;
    }
    if (rank == 0) {
      NCCLCHECK(nccl.GetUniqueId(&id));
      char tmp[4096];
      snprintf(tmp, sizeof tmp, "%s.tmp", idFile);
      FILE *f = fopen(tmp, "wb");
      if (f == NULL || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, idFile) != 0) {
        fprintf(stderr, "plugin_driver: cannot write %s\n", idFile);
        return 1;
      }
    } else {
      int found = 0;
      for (int tries = 0; tries < 600 && !found; tries++) {
        FILE *f = fopen(idFile, "rb");
        if (f != NULL) {
          found = fread(&id, sizeof id, 1, f) == 1;
          fclose(f);
        }
        if (!found) usleep(100000);
      }
      if (!found) {
        fprintf(stderr, "plugin_driver: no unique id in %s after 60 s\n", idFile);
        return 1;
      }
    }
  } else if (nranks == 1) {
    NCCLCHECK(nccl.GetUniqueId(&id));
  } else {
    fprintf(stderr, "plugin_driver: NCCL_TRAMPOLINE_DRIVER_RANKS must be 1 or 2\n");
    return 2;
  }
  NCCLCHECK(nccl.CommInitRank(&comm, nranks, id, rank));
  printf("plugin_driver: comm hash 0x%llx (nranks %d, rank %d, device 0)\n", (unsigned long long)commHash(&id), nranks,
         rank);

  for (long i = 0; i < nAllReduce; i++) NCCLCHECK(nccl.AllReduce(src, dst, n, ncclFloat32, ncclSum, comm, stream));
  CUDACHECK(cuda.StreamSynchronize(stream));
  if (nranks == 2) {
    /* Each rank contributes the pattern: the sum is twice it. */
    float *twice = malloc(bytes);
    if (twice == NULL) return 1;
    for (size_t i = 0; i < n; i++) twice[i] = 2 * pattern[i];
    if (nAllReduce > 0 && expect("allreduce", dst, twice, n, back)) return 1;
    free(twice);
    for (long i = 0; i < nBroadcast; i++) NCCLCHECK(nccl.Broadcast(src, dst, n, ncclFloat32, 0, comm, stream));
    CUDACHECK(cuda.StreamSynchronize(stream));
    if (nBroadcast > 0 && expect("broadcast", dst, pattern, n, back)) return 1;
    NCCLCHECK(nccl.CommDestroy(comm));
    printf("plugin_driver: rank %d issued allreduce=%ld broadcast=%ld count=%ld float32, data ok, comm destroyed\n", rank,
           nAllReduce, nBroadcast, count);
    return 0;
  }
  if (nAllReduce > 0 && expect("allreduce", dst, pattern, n, back)) return 1;
  for (long i = 0; i < nBroadcast; i++) NCCLCHECK(nccl.Broadcast(src, dst, n, ncclFloat32, 0, comm, stream));
  NCCLCHECK(nccl.GroupStart());
  NCCLCHECK(nccl.Send(sendBuf, n, ncclFloat32, 0, comm, stream));
  NCCLCHECK(nccl.Recv(recvBuf, n, ncclFloat32, 0, comm, stream));
  NCCLCHECK(nccl.GroupEnd());
  CUDACHECK(cuda.StreamSynchronize(stream));
  if (nBroadcast > 0 && expect("broadcast", dst, pattern, n, back)) return 1;
  if (expect("send/recv to self", recvBuf, pattern, n, back)) return 1;

  NCCLCHECK(nccl.CommDestroy(comm));
  printf("plugin_driver: issued allreduce=%ld broadcast=%ld grouped_self_sendrecv=1 (send=1 recv=1) count=%ld "
         "float32, data ok, comm destroyed\n",
         nAllReduce, nBroadcast, count);

  CUDACHECK(cuda.StreamDestroy(stream));
  CUDACHECK(cuda.Free(src));
  CUDACHECK(cuda.Free(dst));
  CUDACHECK(cuda.Free(sendBuf));
  CUDACHECK(cuda.Free(recvBuf));
  free(pattern);
  free(back);
  return 0;
}
