/*
 * The all-reduce sweep of `nccl-trampoline perf all_reduce`, calling NCCL directly from C:
 * the reference of docs/perf.md. The same loop as the CLI and as
 * examples/cudarc_allreduce_perf.rs: one process, every GPU (-g), one ncclGroupStart/End per
 * iteration, -w warm-up iterations, -n timed iterations on the host clock from the first
 * enqueue to the end of every stream (the enqueue loop alone is the cputime); out-of-place
 * then in-place; float32 sum; a check run on defined data. Prints the CLI's JSON document.
 *
 * Built on the GPU machine against its headers (scripts/gpu-perf.sh does this):
 *   gcc -O2 -o allreduce_perf benches/c/allreduce_perf.c -I$CUDA/include -L$CUDA/lib64 \
 *       -lcudart -lnccl
 *   allreduce_perf -b 8 -e 1G -f 2 -g 2 -n 20 -w 5 [-c 0]
 * (-c 0: no check run; "wrong" is then -1.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define NCCL(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); exit(1); } } while (0)

#define MAX_GPUS 16

static int ngpus = 2, iters = 20, warmup = 5, check = 1;
static size_t min_bytes = 8, max_bytes = 1 << 30, factor = 2;
static ncclComm_t comms[MAX_GPUS];
static cudaStream_t streams[MAX_GPUS];
static float *sendbuf[MAX_GPUS], *recvbuf[MAX_GPUS];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t parse_size(const char *s) {
    char *end;
    size_t n = strtoull(s, &end, 10);
    switch (*end) {
    case 'K': return n << 10;
    case 'M': return n << 20;
    case 'G': return n << 30;
    default: return n;
    }
}

static void launch(size_t count, int in_place) {
    NCCL(ncclGroupStart());
    for (int g = 0; g < ngpus; g++) {
        const void *src = in_place ? (const void *)recvbuf[g] : (const void *)sendbuf[g];
        NCCL(ncclAllReduce(src, recvbuf[g], count, ncclFloat32, ncclSum, comms[g], streams[g]));
    }
    NCCL(ncclGroupEnd());
}

static void sync_all(void) {
    for (int g = 0; g < ngpus; g++) CUDA(cudaStreamSynchronize(streams[g]));
}

static float value(int rank, size_t i) { return (float)((rank * 7 + i * 3 + 1) % 5); }

/* Times one placement and checks one run: writes time, cputime (s per iteration), wrong. */
static void measure(size_t count, int in_place, double *time, double *cpu, long *wrong) {
    for (int i = 0; i < warmup; i++) launch(count, in_place);
    sync_all();
    double start = now();
    for (int i = 0; i < iters; i++) launch(count, in_place);
    double enqueued = now();
    sync_all();
    double end = now();
    *time = (end - start) / iters;
    *cpu = (enqueued - start) / iters;

    *wrong = -1;
    if (!check) return;
    float *host = malloc(count * sizeof(float) + 1);
    for (int g = 0; g < ngpus; g++) {
        for (size_t i = 0; i < count; i++) host[i] = value(g, i);
        CUDA(cudaSetDevice(g));
        CUDA(cudaMemcpy(in_place ? recvbuf[g] : sendbuf[g], host, count * sizeof(float), cudaMemcpyHostToDevice));
    }
    launch(count, in_place);
    sync_all();
    *wrong = 0;
    for (int g = 0; g < ngpus; g++) {
        CUDA(cudaSetDevice(g));
        CUDA(cudaMemcpy(host, recvbuf[g], count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < ngpus; r++) want += value(r, i);
            if (host[i] != want) (*wrong)++;
        }
    }
    free(host);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "-b")) min_bytes = parse_size(v);
        else if (!strcmp(o, "-e")) max_bytes = parse_size(v);
        else if (!strcmp(o, "-f")) factor = parse_size(v);
        else if (!strcmp(o, "-g")) ngpus = atoi(v);
        else if (!strcmp(o, "-n")) iters = atoi(v);
        else if (!strcmp(o, "-w")) warmup = atoi(v);
        else if (!strcmp(o, "-c")) check = atoi(v);
        else { fprintf(stderr, "unknown option %s\n", o); return 2; }
    }
    if (ngpus < 1 || ngpus > MAX_GPUS || factor < 2 || iters < 1) { fprintf(stderr, "bad options\n"); return 2; }
    int devs[MAX_GPUS];
    for (int g = 0; g < ngpus; g++) devs[g] = g;
    NCCL(ncclCommInitAll(comms, ngpus, devs));
    for (int g = 0; g < ngpus; g++) {
        CUDA(cudaSetDevice(g));
        CUDA(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
        CUDA(cudaMalloc((void **)&sendbuf[g], max_bytes));
        CUDA(cudaMalloc((void **)&recvbuf[g], max_bytes));
    }
    int version;
    NCCL(ncclGetVersion(&version));
    printf("{\n  \"tool\": \"C (nccl.h %d.%d.%d, runtime %d)\",\n  \"collective\": \"all_reduce\",\n"
           "  \"nranks\": %d,\n  \"iters\": %d,\n  \"warmup_iters\": %d,\n  \"results\": [\n",
           NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, version, ngpus, iters, warmup);
    double n = ngpus;
    for (size_t size = min_bytes; size <= max_bytes; size *= factor) {
        size_t count = size / sizeof(float);
        printf("%s    {\"size\": %zu, \"count\": %zu, \"type\": \"float\", \"redop\": \"sum\", \"root\": -1",
               size == min_bytes ? "" : ",\n", count * sizeof(float), count);
        for (int in_place = 0; in_place < 2; in_place++) {
            double t, cpu;
            long wrong;
            measure(count, in_place, &t, &cpu, &wrong);
            double algbw = (double)(count * sizeof(float)) / 1e9 / t;
            printf(", \"%s\": {\"time_us\": %.4f, \"cpu_us\": %.4f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %ld}",
                   in_place ? "in_place" : "out_of_place", t * 1e6, cpu * 1e6, algbw, algbw * 2 * (n - 1) / n, wrong);
        }
        printf("}");
        fflush(stdout);
    }
    printf("\n  ]\n}\n");
    for (int g = 0; g < ngpus; g++) {
        CUDA(cudaSetDevice(g));
        CUDA(cudaFree(sendbuf[g]));
        CUDA(cudaFree(recvbuf[g]));
        NCCL(ncclCommDestroy(comms[g]));
    }
    return 0;
}
