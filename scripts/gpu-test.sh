#!/usr/bin/env bash
# Builds the GPU test binary here (x86-64, release, with 16-bit float support) and stages it in
# .device-bin/ (git-ignored) for the GPU machine, which has CUDA and NCCL but no Rust. Run it
# there with, for each NCCL build to test:
#   NCCL_NVLS_ENABLE=0 NCCL_TRAMPOLINE_GPU_TESTS=1 NCCL_TRAMPOLINE_LIBRARY=<libnccl.so.2> \
#   NCCL_TRAMPOLINE_CUDART=<libcudart.so> .device-bin/gpu --nocapture --test-threads=1
# docs/gpu-results.md records the exact command used and its results.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo test --release --features half --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["executable"])')
mkdir -p .device-bin
cp "$bin" .device-bin/gpu
strip .device-bin/gpu
ls -l .device-bin/gpu
