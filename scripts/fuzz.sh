#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/Cargo.toml) from its committed corpus for a bounded time:
# FUZZ_SECONDS each (default 10). A crash, panic, leak or timeout fails the run and leaves the
# input under fuzz/artifacts/<target>/. New inputs the run finds go to a scratch corpus, not
# into the committed one (grow that by hand: see fuzz/README.md).
# Needs a nightly toolchain with cargo-fuzz: FUZZ_TOOLCHAIN (default: the test command's
# pinned nightly).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
toolchain=${FUZZ_TOOLCHAIN:-nightly-2026-10-29}
seconds=${FUZZ_SECONDS:-10}
mapfile -t targets < <(cargo +"$toolchain" fuzz list)
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets" >&2; exit 1; }
cargo +"$toolchain" fuzz build
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t" "corpus/$t"
    start=$SECONDS
    # -rss_limit_mb: an unbounded allocation fails the target; -timeout: so does a hang.
    cargo +"$toolchain" fuzz run "$t" "$scratch/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 2>"$scratch/$t.log" ||
        { tail -40 "$scratch/$t.log" >&2; echo "fuzz target $t failed" >&2; exit 1; }
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t.log" | tail -1)
    echo "  $t: ${runs:-?} inputs in $((SECONDS - start)) s, no failure"
done
