#!/usr/bin/env bash
# The README's snippets as a newcomer uses them, in new projects outside this repository:
#   - "Use it in your project": the [dependencies] block (its path pointed at this clone) and
#     the minimal program, built and run twice: with NCCL_TRAMPOLINE_LIBRARY naming a file that
#     does not exist (exit 1, one line) and naming the real libnccl.so.2 given as $1;
#   - "Calling your own C functions": each ```rust example as a program of its own, with only
#     the `libloading = "0.8"` the README says to add.
# The Rust blocks are also compiled (and the runnable ones run) as doc tests of src/lib.rs;
# this checks that what the README tells a user to write into their own project is enough.
# scripts/test.sh runs it. Usage: scripts/readme-snippets.sh /path/to/libnccl.so.2
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
real_nccl=${1:?usage: scripts/readme-snippets.sh /path/to/libnccl.so.2}
work=$repo/target/readme-snippets
rm -rf "$work/use" "$work/embed"
mkdir -p "$work"
# The projects share one target folder (and so the crate's build) across runs.
export CARGO_TARGET_DIR=$work/target

# block SECTION INFO [N]: the Nth (default first) ``` block whose info string is INFO under
# "## SECTION"; nothing when there is no such block.
block() {
    awk -v section="## $1" -v info="$2" -v want="${3:-1}" '
        $0 == section { inside_section = 1; next }
        inside_section && /^## / { exit }
        inside_section && !inside && $0 == "```" info { n++; inside = (n == want); next }
        inside && /^```/ { exit }
        inside { print }
    ' README.md
}

new_project() { # dir, then the [dependencies] lines on stdin
    mkdir -p "$1/src"
    { printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n\n' "$(basename "$1")"; cat; } >"$1/Cargo.toml"
}

echo "README \"Use it in your project\": the dependency line and the minimal program"
deps=$(block "Use it in your project" toml)
grep -q '^nccl-trampoline = ' <<<"$deps" || { echo "no nccl-trampoline line in the toml block" >&2; exit 1; }
# The path in the README is where a clone would sit next to the project: point it at this one.
sed "s|path = \"\\.\\./nccl-trampoline\"|path = \"$repo\"|" <<<"$deps" | new_project "$work/use"
block "Use it in your project" "rust,no_run" >"$work/use/src/main.rs"
[ -s "$work/use/src/main.rs" ] || { echo "no minimal program in the README" >&2; exit 1; }
(cd "$work/use" && cargo build --quiet)
app=$CARGO_TARGET_DIR/debug/use
if out=$(NCCL_TRAMPOLINE_LIBRARY=/nonexistent/libnccl.so.2 "$app" 2>&1); then
    echo "the minimal program succeeded without NCCL: $out" >&2
    exit 1
fi
[ "$(wc -l <<<"$out")" = 1 ] || { echo "not one line without NCCL:" >&2; echo "$out" >&2; exit 1; }
echo "  without NCCL: $out"
out=$(NCCL_TRAMPOLINE_LIBRARY=$real_nccl NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} "$app")
grep -q "^NCCL [0-9.]* from $real_nccl" <<<"$out" && grep -q "unique id of 128 bytes" <<<"$out" ||
    { echo "unexpected output with the real NCCL:" >&2; echo "$out" >&2; exit 1; }
sed 's/^/  with the real NCCL: /' <<<"$out"

echo "README \"Calling your own C functions\": each example with libloading as the only addition"
printf 'nccl-trampoline = { path = "%s" }\nlibloading = "0.8"\n' "$repo" |
    { printf '[dependencies]\n'; cat; } | new_project "$work/embed"
n=1
while block "Calling your own C functions through the core" rust $n >"$work/embed/src/main.rs" &&
    [ -s "$work/embed/src/main.rs" ]; do
    # Each example asserts its own results.
    (cd "$work/embed" && cargo run --quiet)
    echo "  example $n ran: $(grep -m1 '^// ' "$work/embed/src/main.rs")"
    n=$((n + 1))
done
[ $n -gt 1 ] || { echo "no example under \"Calling your own C functions\"" >&2; exit 1; }
