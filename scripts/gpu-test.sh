#!/usr/bin/env bash
# Builds the GPU test binary (x86-64, release, with 16-bit float support) and the cudarc
# examples here, and stages them in .device-bin/ (git-ignored) for the GPU machine, which has
# CUDA and NCCL but no Rust. Carry .device-bin there and run `scripts/gpu-run.sh` from the
# repository root: it runs everything against each NCCL build and saves the logs; then
# `scripts/gpu-perf.sh` for the performance comparison of docs/perf.md,
# `scripts/gpu-faults.sh` for the fault-model runs (a dead peer, the watchdog, shrink), and
# `scripts/gpu-launchers.sh` for the examples and perf under torchrun (one rank per process);
# `scripts/gpu-verify.sh` for the quickstart, the ordering race and the abandoned creations.
# docs/gpu-results.md records a run and its results.
set -euo pipefail
cd "$(dirname "$0")/.."
# executable NAME: the path of target NAME's executable in cargo's JSON messages on stdin.
executable() {
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}
mkdir -p .device-bin
cp "$(cargo test --release --features half --test gpu --no-run --message-format=json 2>/dev/null | executable gpu)" \
    .device-bin/gpu
# Creations given up on the real NCCL (one GPU): aborted, no NCCL thread left.
cp "$(cargo test --release --test gpu_creation --no-run --message-format=json 2>/dev/null | executable gpu_creation)" \
    .device-bin/gpu_creation
cargo build --release --quiet --features cudarc --example init_all --example allreduce --example cudarc_streams
# survive, and world (each rank's place, route and id digest under a launcher): no features.
cargo build --release --quiet --example survive --example world
cp target/release/examples/{init_all,allreduce,cudarc_streams,survive,world} .device-bin/
# The command-line tool and the cudarc comparison program of scripts/gpu-perf.sh.
cargo build --release --quiet --features cli --bin nccl-trampoline
cargo build --release --quiet --features cudarc-nccl --example cudarc_allreduce_perf
cp target/release/nccl-trampoline target/release/examples/cudarc_allreduce_perf .device-bin/
benches=$(cargo bench --features bench --no-run --message-format=json 2>/dev/null)
cp "$(executable call_overhead <<<"$benches")" .device-bin/call_overhead
cp "$(executable event_record <<<"$benches")" .device-bin/event_record
cp "$(executable facade_call <<<"$benches")" .device-bin/facade_call
# scripts/gpu-enqueue.sh's set "after": this tree's facade benchmarks.
mkdir -p .device-bin/after
cp "$(executable facade_call <<<"$benches")" "$(executable gpu_enqueue <<<"$benches")" .device-bin/after/
strip .device-bin/after/*
find .device-bin -maxdepth 1 -type f -exec strip {} +
ls -l .device-bin/
echo "carried: $(du -sh .device-bin | cut -f1) (.device-bin, at most 64 MiB with the tree)"
