#!/usr/bin/env bash
# Runs on the GPU machine (no Rust needed; gcc for step 3), from the repository root, after
# scripts/gpu-stage-core.sh staged .device-bin/ here. The call core's cost on this CPU
# (docs/perf.md, "The call core on the GPU host's CPU"):
#   1. the machine: CPU model and flags (avx512vl decides the copy width), kernel;
#   2. for each staged build (call_overhead, call_overhead-b): the paired benchmark, ROUNDS
#      rounds (default 7) of about MS ms per variant (default 160), pinned to one core (CORE,
#      default 2), then criterion once on build A;
#   2b. the offset sweep on build A (`sweep SWEEP_ITERATIONS SWEEP_REPS`, default 300 and 3:
#      the by-value call at 256 stack offsets x 128 source offsets through every copy width
#      this CPU has; seconds here, bounded to 2 minutes), the slow combinations and the summary;
#   3. the conformance suite against this machine's gcc, if .device-bin/conformance is staged:
#      with AVX-512VL, the random signatures run the ymm16-19 copy and its coverage is asserted.
# Everything lands in ${OUT:-core-bench-logs}/; the medians are printed at the end.
set -uo pipefail
out=$(realpath -m "${OUT:-core-bench-logs}")
mkdir -p "$out"
bin=.device-bin
core=${CORE:-2}
rounds=${ROUNDS:-7}
ms=${MS:-160}
pin=(taskset -c "$core")
{ lscpu; uname -a; grep -o -w -E 'avx512vl|avx512f|avx2|avx|ibt|user_shstk' /proc/cpuinfo | sort | uniq -c; } \
    > "$out/machine.txt" 2>&1
failed=0
run() { # name command... (stdout to $out/name, stderr to $out/name.stderr)
    local name=$1; shift
    if timeout 900 "$@" > "$out/$name" 2> "$out/$name.stderr"; then echo "pass  $name"; else echo "FAIL  $name"; failed=1; fi
}
for build in call_overhead call_overhead-b; do
    [ -x "$bin/$build" ] || { echo "missing $bin/$build (run scripts/gpu-stage-core.sh here first)"; failed=1; continue; }
    run "$build-paired.txt" "${pin[@]}" "$bin/$build" paired "$rounds" "$ms"
done
[ -x "$bin/call_overhead" ] && run criterion.txt "${pin[@]}" "$bin/call_overhead" --bench --warm-up-time 1 --measurement-time 3
if [ -x "$bin/call_overhead" ]; then
    if timeout 120 "${pin[@]}" "$bin/call_overhead" sweep "${SWEEP_ITERATIONS:-300}" "${SWEEP_REPS:-3}" \
        > "$out/sweep.txt" 2> "$out/sweep.txt.stderr"; then
        echo "pass  sweep.txt"
    else
        echo "FAIL  sweep.txt (over 2 minutes or an error: see sweep.txt.stderr)"; failed=1
    fi
fi
if [ -x "$bin/conformance" ]; then
    mkdir -p "$out/tmp"
    NCCL_TRAMPOLINE_REPO=$PWD NCCL_TRAMPOLINE_TEST_TMPDIR=$out/tmp run conformance.txt "$bin/conformance" --nocapture
    grep -h "random signatures:" "$out/conformance.txt.stderr" "$out/conformance.txt" 2>/dev/null | sed 's/^/    /'
fi
grep -i -h "model name" "$out/machine.txt" | head -1
for build in call_overhead call_overhead-b; do
    [ -f "$out/$build-paired.txt" ] && { echo "== $build"; sed -n '/^median/,$p' "$out/$build-paired.txt"; }
done
[ -f "$out/sweep.txt" ] && { echo "== offset sweep"; sed -n '/^summary/,$p' "$out/sweep.txt"; }
exit $failed
