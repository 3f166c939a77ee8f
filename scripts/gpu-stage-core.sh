#!/usr/bin/env bash
# Builds here what scripts/gpu-bench-core.sh runs on the GPU machine (which has no Rust), and
# stages it in .device-bin/ (git-ignored; carry it there):
#   call_overhead     benches/call_overhead.rs, the bench profile (build A)
#   call_overhead-b   the same source with codegen-units=1 and fat LTO (build B: another code
#                     layout, so that a result is not an accident of one build's alignment)
#   conformance       tests/conformance.rs, release: on a CPU with AVX-512VL it runs the
#                     ymm16-19 copy handlers that the development host cannot run
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
a=$(cargo bench --features bench --bench call_overhead --no-run --message-format=json 2>/dev/null | executable call_overhead)
b=$(CARGO_TARGET_DIR=target/bench-b CARGO_PROFILE_BENCH_CODEGEN_UNITS=1 CARGO_PROFILE_BENCH_LTO=fat \
    cargo bench --features bench --bench call_overhead --no-run --message-format=json 2>/dev/null | executable call_overhead)
c=$(cargo test --release --test conformance --no-run --message-format=json 2>/dev/null | executable conformance)
cp "$a" .device-bin/call_overhead
cp "$b" .device-bin/call_overhead-b
cp "$c" .device-bin/conformance
strip .device-bin/call_overhead .device-bin/call_overhead-b .device-bin/conformance
ls -l .device-bin/call_overhead .device-bin/call_overhead-b .device-bin/conformance
