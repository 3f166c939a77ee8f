#!/usr/bin/env bash
# Runs on the GPU machine (torch, CUDA; no Rust), from the repository root: PyTorch's own NCCL
# communicator adopted as borrowed and all-reduced through nccl-trampoline
# (scripts/gpu-torch-from-raw.py, examples/torch_allreduce.rs,
# docs/adr/0029-adopting-communicators.md), under torchrun with one process, and with two when
# two GPUs are visible; each both with torch's default (blocking) communicator and with
# TORCH_NCCL_USE_COMM_NONBLOCKING=1.
#
# The library is built on the development machine and carried over:
#   cargo build --release --example torch_allreduce
#   mkdir -p .device-bin/torch && cp target/release/examples/libtorch_allreduce.so .device-bin/torch/
# (or pass its path as $1, or set TORCH_ALLREDUCE_LIB). PYTHON picks the interpreter (default
# python3); RUN_LIMIT the seconds one torchrun may take (default 150: a rank whose call failed
# while its peer's went through leaves that peer waiting in NCCL, ended by this limit). Logs
# under ${OUT:-gpu-logs}/torch-from-raw/, bundled into ${OUT:-gpu-logs}/torch-from-raw.tar.gz.
# NVLink multicast stays off.
# Prints one line per run and SKIP (no torch, no GPU) or PASS/FAIL; exit status non-zero only
# when a run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
top=${OUT:-gpu-logs}
out=$top/torch-from-raw
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
python=${PYTHON:-python3}
lib=${1:-${TORCH_ALLREDUCE_LIB:-}}
for c in "$lib" .device-bin/torch/libtorch_allreduce.so target/release/examples/libtorch_allreduce.so; do
    if [ -n "$c" ] && [ -f "$c" ]; then lib=$(cd "$(dirname "$c")" && pwd)/$(basename "$c"); break; fi
done
bundle() { tar czf "$top/torch-from-raw.tar.gz" -C "$top" torch-from-raw && echo "logs: $top/torch-from-raw.tar.gz"; }

{
    date -u
    nvidia-smi -L 2>&1
    "$python" -c 'import torch, torch.distributed as d; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count(), "nccl backend", d.is_nccl_available())' 2>&1
    "$python" -m pip list 2>/dev/null | grep -i -E '^(torch|nvidia-nccl)' 
    ldconfig -p | grep -E 'libnccl\.so' 
    echo "library: ${lib:-not found}"
    [ -f "$lib" ] && nm -D "$lib" | grep nt_torch
} >"$out/machine.txt" 2>&1

if ! "$python" -c 'import torch' >/dev/null 2>&1; then
    echo "SKIP: $python cannot import torch"; bundle; exit 0
fi
gpus=$("$python" -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
if [ "${gpus:-0}" -lt 1 ]; then
    echo "SKIP: torch sees no CUDA GPU"; bundle; exit 0
fi
if [ ! -f "$lib" ]; then
    echo "FAIL: libtorch_allreduce.so not found (build: cargo build --release --example torch_allreduce; stage it in .device-bin/torch/ or pass its path)"
    bundle; exit 1
fi

failed=0
# A verdict line, as the script prints it or behind a "[rankN]:" prefix a launcher may add.
verdict='(^|\]: ?)'
run() { # name nproc [VAR=value...]
    local name=$1 nproc=$2; shift 2
    local start=$SECONDS
    env "$@" timeout "${RUN_LIMIT:-150}" "$python" -m torch.distributed.run --standalone --nproc_per_node "$nproc" \
        scripts/gpu-torch-from-raw.py "$lib" >"$out/$name.log" 2>&1
    local status=$?
    local verdicts
    verdicts=$(grep -E "$verdict(PASS|FAIL|SKIP) rank" "$out/$name.log" | sort | paste -sd ';' - | sed 's/;/; /g')
    local passed
    passed=$(grep -c -E "${verdict}PASS rank" "$out/$name.log")
    if [ $status -eq 0 ] && [ "$passed" -eq "$nproc" ] && ! grep -q -E "${verdict}FAIL rank" "$out/$name.log"; then
        echo "pass  $name ($((SECONDS - start)) s): $verdicts"
    elif [ $status -eq 0 ] && grep -q -E "${verdict}SKIP rank" "$out/$name.log" && ! grep -q -E "${verdict}FAIL rank" "$out/$name.log"; then
        echo "skip  $name: $(grep -m1 -E "${verdict}SKIP rank" "$out/$name.log")"
    else
        echo "FAIL  $name (status $status, $((SECONDS - start)) s, see $name.log): ${verdicts:-no verdict}"
        failed=1
    fi
}
for n in 1 2; do
    if [ "$n" -gt "$gpus" ]; then echo "skip  $n ranks: $gpus GPU(s) visible"; continue; fi
    run "ranks$n-blocking" "$n"
    run "ranks$n-nonblocking" "$n" TORCH_NCCL_USE_COMM_NONBLOCKING=1
done
grep -E 'adopted:|ms with|destroy_process_group|NCCL files mapped' "$out"/ranks*.log 2>/dev/null | sed "s|^$out/|    |"
bundle
exit $failed
