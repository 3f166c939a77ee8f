#!/usr/bin/env bash
# Runs on the GPU machine (2+ GPUs, CUDA and NCCL, no Rust), from the repository root, with
# the binaries scripts/gpu-test.sh staged in .device-bin/. The fault model of
# docs/adr/0009-fault-model.md on real GPUs, one log per run under ${OUT:-gpu-logs}/:
#   (a) a rank killed before init: the other's init times out within its deadline + 10 %;
#   (b) a rank killed mid-loop of 256 MiB all-reduces: the watchdog reports the stalled
#       all-reduce within its timeout + 10 %, abort and drop return, the survivor exits 0;
#   (c) survive: a rank killed mid-loop, the survivor shrinks and goes on, every element
#       checked (blocking and non-blocking communicators);
#   (c') split by color, checked all-reduces in child and parent, every teardown order;
#   (d) cudarc: 10 in-place all-reduces on stream A, read on stream B: no stale element;
#   (e) NCCL_COMM_BLOCKING=0 in the environment: the GPU tests, the examples and survive;
#   and the watchdog's cost per operation: perf -C 1 at small sizes, with and without it.
# NCCL: $NCCL_TRAMPOLINE_LIBRARY, else the Python environment's wheel. NVLink multicast stays
# off. ONLY (an extended regular expression) runs only the cases whose names match it, e.g.
# ONLY='overhead|event' for the cost alone; ROUNDS (default 3) sets the overhead's rounds.
# Exit status: non-zero if any run failed.
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
if [ -z "${NCCL_TRAMPOLINE_LIBRARY:-}" ]; then
    NCCL_TRAMPOLINE_LIBRARY=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))')
fi
export NCCL_TRAMPOLINE_LIBRARY
bin=.device-bin
failed=0
run() { # name limit command...
    local name=$1 limit=$2; shift 2
    [[ $name =~ ${ONLY:-.} ]] || return 0
    local start=$SECONDS
    if timeout "$limit" "$@" >"$out/$name.log" 2>&1; then
        echo "pass  $name ($((SECONDS - start)) s)"
    else
        echo "FAIL  $name ($((SECONDS - start)) s, see $name.log)"; failed=1
    fi
}
echo "NCCL: $NCCL_TRAMPOLINE_LIBRARY"
run a-killed-before-init 120 $bin/survive --scenario before-init --ranks 2 --kill 1 --timeout 10
run b-watchdog-256MiB 180 $bin/survive --scenario watchdog --ranks 2 --kill 1 --at 5 --count 67108864 --timeout 10
run c-survive-blocking 180 $bin/survive --ranks 2 --kill 1 --at 5 --count 67108864 --timeout 5
run c-survive-nonblocking 180 $bin/survive --ranks 2 --kill 1 --at 5 --count 67108864 --timeout 5 --nonblocking
run c-split-teardown-orders 180 $bin/survive --scenario split --ranks 2
run d-cudarc-streams 120 $bin/cudarc_streams
NCCL_COMM_BLOCKING=0 run e-env-gpu-tests 300 $bin/gpu --ignored --nocapture --test-threads=1
NCCL_COMM_BLOCKING=0 run e-env-init_all 120 $bin/init_all
NCCL_COMM_BLOCKING=0 run e-env-allreduce 120 $bin/allreduce
NCCL_COMM_BLOCKING=0 run e-env-cudarc-streams 120 $bin/cudarc_streams
NCCL_COMM_BLOCKING=0 run e-env-survive 180 $bin/survive --ranks 2 --kill 1 --at 3 --count 16777216 --timeout 5
# The watchdog's cost: host time of the enqueue loop at small sizes, alternating without and
# with it, three rounds each.
for round in $(seq "${ROUNDS:-3}"); do
    for mode in plain watchdog; do
        extra=(); [ $mode = watchdog ] && extra=(--watchdog 60)
        run "overhead-$mode-$round" 120 $bin/nccl-trampoline perf all_reduce -b 8 -e 64K -f 4 --procs 2 -n 500 -w 50 -C 1 -c 0 --json "${extra[@]}"
    done
done
run event-record-floor 60 $bin/event_record
grep -h "PASS\|FAIL\|detected\|shrunk\|watchdog:\|failed as expected\|stale\|dropped in\|passed, [0-9]* failed\|event_record\|teardown\|: [0-9.]*[mµ]*s$" "$out"/*.log | sed 's/^/    /'
exit $failed
