#!/usr/bin/env bash
# The public API listing, docs/public-api.txt, regenerated from rustdoc's JSON with the pinned
# nightly and compared with the committed file (scripts/test.sh runs this). It is made with
# the library features that add items (half, cudarc): a superset of the default API, so one
# listing sees a change to either.
#
#   scripts/public-api.sh           regenerate and `diff -u`; fails if the API changed
#   scripts/public-api.sh --bless   regenerate and write the committed file
#
# The nightly is scripts/test.sh's NIGHTLY (NCCL_TRAMPOLINE_NIGHTLY overrides it). The listing
# is that of an x86-64 Linux build; scripts/public-api.py says what it holds.
set -euo pipefail
cd "$(dirname "$0")/.."

bless=0
case "${1:-}" in
    --bless) bless=1 ;;
    "") ;;
    *) echo "usage: scripts/public-api.sh [--bless]" >&2; exit 2 ;;
esac

NIGHTLY=${NCCL_TRAMPOLINE_NIGHTLY:-$(sed -n 's/^NIGHTLY=\${NCCL_TRAMPOLINE_NIGHTLY:-\(.*\)}$/\1/p' scripts/test.sh)}
# Apart from the other builds: the nightly's artefacts would not be shared with them anyway.
export CARGO_TARGET_DIR=target/public-api
out=$CARGO_TARGET_DIR/listings
mkdir -p "$out"

cargo +"$NIGHTLY" rustdoc --quiet --lib --features half,cudarc -- -Z unstable-options --output-format json
python3 scripts/public-api.py "$CARGO_TARGET_DIR/doc/nccl_trampoline.json" >"$out/public-api.txt"
if [ "$bless" = 1 ]; then
    cp "$out/public-api.txt" docs/public-api.txt
    echo "wrote docs/public-api.txt ($(wc -l <docs/public-api.txt) items)"
elif ! diff -u docs/public-api.txt "$out/public-api.txt"; then
    echo "the public API changed: review the diff, then run scripts/public-api.sh --bless" >&2
    exit 1
fi
