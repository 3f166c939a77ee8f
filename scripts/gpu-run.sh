#!/usr/bin/env bash
# Runs on the GPU machine (CUDA and NCCL, no Rust), from the repository root, after
# scripts/gpu-test.sh has staged the binaries in .device-bin/ here and they were carried there.
# For each NCCL build found (the system libnccl.so.2 and the Python environment's wheel), runs
# the examples, the GPU tests on all GPUs and on one GPU, and saves every log under
# ${OUT:-gpu-logs}/. NVLink multicast stays off. Exit status: non-zero if
# any run failed.
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_TRAMPOLINE_CUDART=${NCCL_TRAMPOLINE_CUDART:-$(ldconfig -p | awk '/libcudart\.so/{print $NF; exit}')}
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv; nvidia-smi topo -m; } > "$out/machine.txt" 2>&1
libs=()
sys=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}'); [ -n "$sys" ] && libs+=("system:$sys")
whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null)
[ -n "$whl" ] && [ -f "$whl" ] && libs+=("wheel:$whl")
failed=0
run() { # name command...
    local name=$1; shift
    if timeout 300 "$@" > "$out/$name.log" 2>&1; then echo "pass  $name"; else echo "FAIL  $name (see $out/$name.log)"; failed=1; fi
}
for entry in "${libs[@]}"; do
    kind=${entry%%:*}; export NCCL_TRAMPOLINE_LIBRARY=${entry#*:}
    echo "== $kind NCCL: $NCCL_TRAMPOLINE_LIBRARY"
    [ -x .device-bin/init_all ] && run "$kind-example-init_all" .device-bin/init_all
    [ -x .device-bin/allreduce ] && run "$kind-example-allreduce" .device-bin/allreduce
    # The GPU tests are #[ignore]d (they need GPUs): --ignored runs them. On one GPU the
    # two-process test says it is skipped.
    run "$kind-tests-all-gpus" .device-bin/gpu --ignored --nocapture --test-threads=1
    CUDA_VISIBLE_DEVICES=0 run "$kind-tests-one-gpu" .device-bin/gpu --ignored --nocapture --test-threads=1
    grep -hE "^NCCL [0-9]|passed, [0-9]+ failed|verified" "$out/$kind"-*.log | sed 's/^/    /'
done
[ ${#libs[@]} -gt 0 ] || { echo "no NCCL found"; failed=1; }
exit $failed
