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
# STAGES (default "check sweep enqueue extras") picks the parts to run.
# Everything lands in ${OUT:-perf-logs}/; scripts/perf-report.py turns the JSON into the
# tables of docs/perf.md.
set -uo pipefail
out=${OUT:-perf-logs}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
ROUNDS=${ROUNDS:-5}
SWEEP=(-b 8 -e 1G -f 2 -g 2 -n "${ITERS:-100}" -w "${WARMUP:-20}")
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
run() { # name command... (stdout to $out/name, stderr to $out/name.stderr)
    local name=$1; shift
    if timeout 300 "$@" > "$out/$name" 2> "$out/$name.stderr"; then echo "pass  $name"; else echo "FAIL  $name"; failed=1; fi
}
# One set of cores for every run: small sizes are bound by the host, whose speed otherwise
# varies with where the scheduler puts the process.
pin=(taskset -c "${CORES:-0-7}")
tr=("${pin[@]}" "$bin/nccl-trampoline")
c=("${pin[@]}" "$bin/allreduce_perf_c")
rc=("${pin[@]}" env LD_LIBRARY_PATH=/tmp/nccl-link "$bin/cudarc_allreduce_perf")
stage() { [[ " ${STAGES:-check sweep enqueue extras} " == *" $1 "* ]]; }
if stage check; then
    run doctor.txt "$bin/nccl-trampoline" doctor
    run selftest.txt "$bin/nccl-trampoline" selftest
    # Correctness of the two comparison programs (every element checked).
    run check-c.json "${c[@]}" -b 8 -e 64M -f 8 -g 2
    run check-cudarc.json "${rc[@]}" -b 8 -e 64M -f 8 -g 2
fi
if stage sweep; then
    # The comparison: interleaved rounds, no check runs (they do not change the timings).
    for r in $(seq 1 "$ROUNDS"); do
        run "trampoline-$r.json" "${tr[@]}" perf all_reduce "${SWEEP[@]}" -c 0 --json
        run "c-$r.json" "${c[@]}" "${SWEEP[@]}" -c 0
        run "cudarc-$r.json" "${rc[@]}" "${SWEEP[@]}" -c 0
    done
fi
if stage enqueue; then
    # Host enqueue time: many iterations of the smallest size, where the host is the
    # bottleneck; pinned to two cores, many short interleaved rounds (the time per
    # iteration is bimodal from run to run; the minimum over rounds is the stable statistic).
    pin2=(taskset -c "${ENQUEUE_CORES:-2-3}")
    for r in $(seq 1 "${ENQUEUE_ROUNDS:-12}"); do
        run "enqueue-trampoline-$r.json" "${pin2[@]}" "$bin/nccl-trampoline" perf all_reduce -b 8 -e 8 -g 2 -n 5000 -w 500 -c 0 -C 1 --json
        run "enqueue-c-$r.json" "${pin2[@]}" "$bin/allreduce_perf_c" -b 8 -e 8 -g 2 -n 5000 -w 500 -c 0
        run "enqueue-cudarc-$r.json" "${pin2[@]}" env LD_LIBRARY_PATH=/tmp/nccl-link "$bin/cudarc_allreduce_perf" -b 8 -e 8 -g 2 -n 5000 -w 500 -c 0
    done
    # The call core's own cost on this CPU (benches/call_overhead.rs), if it was staged.
    [ -x "$bin/call_overhead" ] && run call-overhead.txt "${pin2[@]}" "$bin/call_overhead" --bench --warm-up-time 1 --measurement-time 3 'call/'
    # The facade's own cost per call into a no-op NCCL (benches/facade_call.rs), if staged.
    [ -x "$bin/facade_call" ] && run facade-call.txt "${pin2[@]}" "$bin/facade_call"
fi
if stage extras; then
    # The table as nccl-tests prints it (checked), the host-enqueue mode, one process per GPU,
    # and every other collective over every type and reduction.
    run table.txt "${tr[@]}" perf all_reduce -b 8 -e 256M -f 2 -g 2
    run cputime.txt "${tr[@]}" perf all_reduce -b 8 -e 128M -f 4 -g 2 -C 1
    run procs.txt "${tr[@]}" perf all_reduce -b 8 -e 256M -f 2 --procs 2
    run all-collectives.txt bash -c "for c in all_gather broadcast reduce reduce_scatter alltoall gather scatter sendrecv; do $bin/nccl-trampoline perf \$c -b 1K -e 4M -f 16 -g 2 -d all -o all || exit 1; done"
fi
exit $failed
