#!/usr/bin/env bash
# Runs on the GPU machine (one GPU is enough; no Rust), from the repository root: the facade's
# cost per call (docs/perf.md, "The facade's cost per call"), before and after a change.
#   - benches/facade_call.rs: the facade into a no-op NCCL against a direct call, on this CPU;
#   - benches/gpu_enqueue.rs: enqueueing an 8-float all-reduce on GPU 0 through the raw and
#     the safe forms against a direct ncclAllReduce, and what a watchdog adds per operation,
#     with every NCCL build here (the system's and the Python environment's wheel).
# Each binary set is a folder of .device-bin holding `facade_call` and `gpu_enqueue`; SETS
# (default "after") names them (e.g. "before after": the two alternate, so drift hits both).
# scripts/gpu-test.sh stages this tree's as "after"; another commit's: check it out in a
# worktree, copy this tree's benches/facade_call.rs, benches/gpu_enqueue.rs and their
# Cargo.toml entries there, `cargo bench --bench facade_call --bench gpu_enqueue --no-run`, and
# copy the two binaries into .device-bin/before (docs/perf.md, "Issue 24").
# ROUNDS (default 15) per run, RUNS (default 2) runs per set and library; pinned to core
# ${CORE:-2}. Logs in ${OUT:-enqueue-logs}/.
set -uo pipefail
out=${OUT:-enqueue-logs}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
bin=.device-bin
pin=(taskset -c "${CORE:-2}")
libs=()
sys=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}'); [ -n "$sys" ] && libs+=("system:$sys")
whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null)
[ -n "$whl" ] && [ -f "$whl" ] && libs+=("wheel:$whl")
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv; lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-200
  printf 'library: %s\n' "${libs[@]}"; } > "$out/machine.txt" 2>&1

failed=0
run() { # name command... (stdout and stderr to $out/name)
    local name=$1; shift
    if timeout 240 "$@" > "$out/$name" 2>&1; then echo "pass  $name"; else echo "FAIL  $name"; failed=1; fi
}
for r in $(seq 1 "${RUNS:-2}"); do
    for set in ${SETS:-after}; do
        run "facade-call-$set-$r.txt" "${pin[@]}" "$bin/$set/facade_call" "${ROUNDS:-15}"
    done
done
for l in "${libs[@]}"; do
    for r in $(seq 1 "${RUNS:-2}"); do
        for set in ${SETS:-after}; do
            run "gpu-enqueue-$set-${l%%:*}-$r.txt" "${pin[@]}" env NCCL_TRAMPOLINE_NCCL="${l#*:}" \
                "$bin/$set/gpu_enqueue" "${ROUNDS:-15}"
        done
    done
done
grep -H "" "$out"/facade-call-*.txt "$out"/gpu-enqueue-*.txt | grep -v "^.*: *variant" | sed 's/^/    /'
exit $failed
