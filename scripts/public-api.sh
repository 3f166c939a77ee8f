#!/usr/bin/env bash
# The public API listings, docs/public-api.txt (default features) and
# docs/public-api-features.txt (--features half,cudarc), regenerated from rustdoc's JSON with
# the pinned nightly and compared with the committed files (scripts/test.sh runs this).
#
#   scripts/public-api.sh           regenerate and `diff -u`; fails if the API changed
#   scripts/public-api.sh --bless   regenerate and write the committed files
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

changed=0
for entry in "public-api.txt|" "public-api-features.txt|half,cudarc"; do
    IFS='|' read -r file features <<<"$entry"
    cargo +"$NIGHTLY" rustdoc --quiet --lib ${features:+--features "$features"} -- \
        -Z unstable-options --output-format json
    python3 scripts/public-api.py "$CARGO_TARGET_DIR/doc/nccl_trampoline.json" >"$out/$file"
    if [ "$bless" = 1 ]; then
        cp "$out/$file" "docs/$file"
        echo "wrote docs/$file ($(wc -l <"docs/$file") items)"
    elif ! diff -u "docs/$file" "$out/$file"; then
        changed=1
    fi
done
if [ "$changed" = 1 ]; then
    echo "the public API changed: review the diff, then run scripts/public-api.sh --bless" >&2
    exit 1
fi
