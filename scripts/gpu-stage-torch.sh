#!/usr/bin/env bash
# Builds (x86-64, release) what scripts/gpu-torch-from-raw.sh runs on the GPU machine and stages
# it in .device-bin/torch/ (git-ignored; carried with `run`): the PyTorch recipe's library,
# examples/torch_allreduce.rs, checked to export its C functions. CARGO_BUILD_JOBS limits the
# build's jobs (e.g. 1 on a shared machine).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.device-bin/torch
mkdir -p "$dest"
cargo build --quiet --release --example torch_allreduce
cp target/release/examples/libtorch_allreduce.so "$dest/"
for symbol in nt_torch_all_reduce nt_torch_describe; do
    nm -D --defined-only "$dest/libtorch_allreduce.so" | grep -q " T $symbol\$" || { echo "$symbol is not exported" >&2; exit 1; }
done
du -sh "$dest"
