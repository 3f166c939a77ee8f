#!/usr/bin/env bash
# Builds (x86-64, release) what scripts/gpu-plugins.sh runs on the GPU machine and stages it in
# .device-bin/plugins/ (git-ignored; carried with `run`): the Rust tuner and profiler plugins,
# the nccl-trampoline command and the plugin layout test.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.device-bin/plugins
mkdir -p "$dest"
cargo build --quiet --release --example tuner_plugin --example profiler_plugin
cargo build --quiet --release --features cli --bin nccl-trampoline
cp target/release/examples/libtuner_plugin.so target/release/examples/libprofiler_plugin.so target/release/nccl-trampoline "$dest/"
layouts=$(cargo test --quiet --release --test plugin_layouts --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("executable") and m.get("target",{}).get("name")=="plugin_layouts": print(m["executable"])')
cp "$layouts" "$dest/plugin_layouts"
strip "$dest/nccl-trampoline" "$dest/plugin_layouts" 2>/dev/null || true
du -sh "$dest"
