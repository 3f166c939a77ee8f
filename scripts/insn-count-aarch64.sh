#!/usr/bin/env bash
# AArch64 instruction counts per call of benches/call_overhead.rs (docs/perf.md), under
# qemu-user with an instruction-count plugin (benches/qemu/insn_count.c, built here with the
# host's gcc; Debian's qemu-user supports plugins but ships none). For every shape and variant
# the benchmark's `count` mode runs N1 and N2 iterations; (insns(N2) - insns(N1)) / (N2 - N1)
# is the cost of one iteration, start-up excluded. qemu counts guest instructions exactly as
# translated: -cpu max, so BTI and PAC instructions are there and executed.
# Usage: scripts/insn-count-aarch64.sh [N1 N2]   (defaults 20000 40000)
set -euo pipefail
cd "$(dirname "$0")/.."
n1=${1:-20000}
n2=${2:-40000}
out=target/insn-count
mkdir -p "$out"
gcc -shared -fPIC -O2 -Wall -Werror -o "$out/libinsn_count.so" benches/qemu/insn_count.c
exe=$(cargo bench --features bench --target aarch64-unknown-linux-gnu --bench call_overhead --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "call_overhead":
        print(m["executable"])')
[ -n "$exe" ] || { echo "the aarch64 benchmark did not build" >&2; exit 1; }
count() { # shape variant iterations -> instructions
    qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu -plugin "$out/libinsn_count.so" "$exe" count "$1" "$2" "$3" 2>&1 >/dev/null |
        awk '/^insns:/ {print $2}'
}
echo "AArch64 instructions per iteration ($exe, qemu-aarch64 -cpu max, ($n2 - $n1) iterations):"
for shape in ints3 comm_init_rank reduce8; do
    line="$shape:"
    direct=0
    for variant in direct typed dynamic; do
        a=$(count "$shape" "$variant" "$n1")
        b=$(count "$shape" "$variant" "$n2")
        per=$(( (b - a) / (n2 - n1) ))
        [ "$variant" = direct ] && direct=$per
        line="$line $variant $per ($(python3 -c "print(f'{$per / $direct:.2f}')")x)"
    done
    echo "$line"
done
