#!/usr/bin/env bash
# Runs on the GPU machine (CUDA, NCCL and gcc; no Rust), from the repository root, after
# scripts/gpu-test.sh staged .device-bin/ here. The measurement of docs/perf.md:
#   - `nccl-trampoline doctor` and `selftest` on this machine;
#   - `perf all_reduce -b 8 -e 1G -f 2 -g 2` through the call core, against the same sweep in
#     C (benches/c/allreduce_perf.c, compiled here with gcc against this machine's nccl.h) and
#     with cudarc's NCCL module (examples/cudarc_allreduce_perf.rs); all three load the same
#     libnccl.so.2 (the system one, whose nccl.h the C program is compiled against), and run
#     interleaved, ROUNDS times each, so drift hits all three alike;
#   - the one-process-per-GPU mode (--procs 2) and the host-enqueue mode (-C 1).
# Everything lands in ${OUT:-perf-logs}/; scripts/perf-report.py turns the JSON into tables.
set -uo pipefail
out=${OUT:-perf-logs}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
ROUNDS=${ROUNDS:-4}
SWEEP=(-b 8 -e 1G -f 2 -g 2 -n "${ITERS:-50}" -w "${WARMUP:-10}")
bin=.device-bin
lib=${NCCL_LIB:-$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')}
[ -n "$lib" ] || { echo "no system libnccl.so.2" >&2; exit 1; }
header=$(for d in /usr/include /usr/local/cuda/include /usr/local/include; do [ -f "$d/nccl.h" ] && echo "$d/nccl.h" && break; done)
cuda=${CUDA_HOME:-/usr/local/cuda}
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv; nvidia-smi topo -m
  echo "libnccl: $lib"; echo "nccl.h: $header"; grep -E '^#define NCCL_(MAJOR|MINOR|PATCH)' "$header"
  gcc --version | head -1; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$out/machine.txt" 2>&1

# The C reference, against this machine's headers and the same library.
gcc -O2 -o "$bin/allreduce_perf_c" benches/c/allreduce_perf.c -I"$(dirname "$header")" -I"$cuda/include" \
    -L"$cuda/lib64" -L"$(dirname "$lib")" -lcudart -l:"$(basename "$lib")" -Wl,-rpath,"$(dirname "$lib")" \
    > "$out/build-c.log" 2>&1 || { cat "$out/build-c.log"; exit 1; }
# cudarc opens `libnccl.so`: point it at the same file.
mkdir -p /tmp/nccl-link && ln -sf "$lib" /tmp/nccl-link/libnccl.so
export NCCL_TRAMPOLINE_LIBRARY=$lib

failed=0
run() { # name command... (stdout to name.json or name.log)
    local name=$1; shift
    if timeout 300 "$@" > "$out/$name" 2> "$out/$name.stderr"; then echo "pass  $name"; else echo "FAIL  $name"; failed=1; fi
}
run doctor.txt "$bin/nccl-trampoline" doctor
run selftest.txt "$bin/nccl-trampoline" selftest
for r in $(seq 1 "$ROUNDS"); do
    run "trampoline-$r.json" "$bin/nccl-trampoline" perf all_reduce "${SWEEP[@]}" --json
    run "c-$r.json" "$bin/allreduce_perf_c" "${SWEEP[@]}"
    run "cudarc-$r.json" env LD_LIBRARY_PATH=/tmp/nccl-link "$bin/cudarc_allreduce_perf" "${SWEEP[@]}"
done
# Host enqueue time: many iterations of the smallest size, where the host is the bottleneck.
for r in $(seq 1 "$ROUNDS"); do
    run "enqueue-trampoline-$r.json" "$bin/nccl-trampoline" perf all_reduce -b 8 -e 8 -g 2 -n 5000 -w 500 --json
    run "enqueue-c-$r.json" "$bin/allreduce_perf_c" -b 8 -e 8 -g 2 -n 5000 -w 500
    run "enqueue-cudarc-$r.json" env LD_LIBRARY_PATH=/tmp/nccl-link "$bin/cudarc_allreduce_perf" -b 8 -e 8 -g 2 -n 5000 -w 500
done
# The table as nccl-tests prints it, the host-enqueue mode, and one process per GPU.
run table.txt "$bin/nccl-trampoline" perf all_reduce -b 8 -e 1G -f 2 -g 2
run cputime.txt "$bin/nccl-trampoline" perf all_reduce -b 8 -e 128M -f 4 -g 2 -C 1
run procs.txt "$bin/nccl-trampoline" perf all_reduce -b 8 -e 1G -f 2 --procs 2
run all-collectives.txt bash -c "for c in all_gather broadcast reduce reduce_scatter alltoall gather scatter sendrecv; do $bin/nccl-trampoline perf \$c -b 1K -e 4M -f 16 -g 2 -d all -o all || exit 1; done"
exit $failed
