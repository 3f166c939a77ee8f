#!/usr/bin/env bash
# Runs on the GPU machine (CUDA, NCCL, python3 with torch so that `torchrun` exists; no Rust,
# no internet), from the repository root, with .device-bin/ staged here by
# scripts/gpu-test.sh and carried there. Under `torchrun --standalone --nproc_per_node N`
# (N = visible GPUs, at least 2), one process per GPU, each finding its rank in torchrun's
# variables and the unique id over the crate's authenticated TCP rendezvous (never on
# torchrun's MASTER_PORT):
#   1. examples/world: every rank's place, route, GPU and id digest; the communicator;
#   2. examples/allreduce: an all-reduce of rank+1 over 1 Mi floats, verified on every rank;
#   3. nccl-trampoline perf all_reduce -b 8 -e 1G -f 2: one table from rank 0, every element
#      checked on every rank;
# first as NCCL chooses (NVLink / P2P), then again with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
# so that NCCL takes its network path, as between hosts. Logs (NCCL_DEBUG=INFO: the transport
# of every channel) and a summary go to ${OUT:-gpu-logs}/launchers/. NVLink multicast stays off.
# MODES="default net" (the default) picks the passes: `MODES=net scripts/gpu-launchers.sh` runs
# only the network path, so the two fit two calls of a time-limited runner.
# Exit status: non-zero if any run failed.
set -uo pipefail
out=${OUT:-gpu-logs}/launchers
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-INFO} NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
bin=.device-bin
for b in world allreduce nccl-trampoline; do
    [ -x "$bin/$b" ] || { echo "missing $bin/$b: run scripts/gpu-test.sh where Rust is, carry .device-bin" >&2; exit 1; }
done
command -v torchrun >/dev/null || { echo "torchrun not found (python3 with torch)" >&2; exit 1; }
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 2 ] || { echo "needs 2 GPUs, $gpus visible" >&2; exit 1; }
# The NCCL the programs load: NCCL_TRAMPOLINE_LIBRARY if set, else torch's wheel, else the
# system's (the crate's discovery order would also find them; naming it puts it in the logs).
if [ -z "${NCCL_TRAMPOLINE_LIBRARY:-}" ]; then
    whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null)
    if [ -n "$whl" ] && [ -f "$whl" ]; then
        export NCCL_TRAMPOLINE_LIBRARY=$whl
    else
        export NCCL_TRAMPOLINE_LIBRARY=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
    fi
fi
{
    echo "NCCL: $NCCL_TRAMPOLINE_LIBRARY"
    python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
    torchrun --help 2>&1 | head -1
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
    nvidia-smi topo -m
} > "$out/machine.txt" 2>&1

failed=0
summary=$out/summary.txt
: >> "$summary"
note() { echo "$*" | tee -a "$summary"; }
run() { # NAME COMMAND...
    local name=$1; shift
    local start=$SECONDS
    if timeout 900 torchrun --standalone --nproc_per_node "$gpus" --no_python "$@" > "$out/$name.log" 2>&1; then
        note "pass  $name ($((SECONDS - start)) s)"
    else
        note "FAIL  $name ($((SECONDS - start)) s, see $out/$name.log)"
        failed=1
    fi
    # What ran: the ranks' own lines, the table's summary, the transports NCCL chose.
    grep -hE "^rank [0-9]+|Out of bounds|Avg bus bandwidth|every rank verified" "$out/$name.log" | sed 's/^/    /' | tee -a "$summary"
    grep -ohE "via (P2P|SHM|NET)/[A-Za-z0-9/_]+" "$out/$name.log" | sort | uniq -c | sed 's/^/    channels /' | tee -a "$summary"
}

for mode in ${MODES:-default net}; do
    if [ "$mode" = net ]; then
        export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
        note "== NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: the network path"
    else
        unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE
        note "== as NCCL chooses"
    fi
    run "$mode-world" "$bin/world"
    run "$mode-allreduce" "$bin/allreduce"
    run "$mode-perf-all_reduce" "$bin/nccl-trampoline" perf all_reduce -b 8 -e 1G -f 2
    # The table itself (rank 0's stdout), for docs/gpu-results.md.
    grep -vE "^(NCCL|\[|[a-z0-9-]+:[0-9]+:[0-9]+ )" "$out/$mode-perf-all_reduce.log" | grep -E "^#|^ +[0-9]" > "$out/$mode-perf-all_reduce.table" || true
done
exit $failed
