#!/usr/bin/env bash
# Checks every `since (a, b, c)` of NCCL's table (src/nccl/library/functions.rs) against an NCCL source
# mirror: the first release tag (vX.Y.Z-N) whose src/nccl.h.in (or src/nccl.h) declares the
# function must be that version. The mirror begins at v2.3.5-5 (NCCL 2.0-2.3.4 were not
# published as source): a function it already declares there must have a since at or before
# 2.3.5, which the mirror cannot pin further (those come from NVIDIA's release notes; see
# docs/adr/0017-one-table-mechanism.md). Not part of the test command (the mirror is not
# fetched there); run by hand when lines are added:
#
#   scripts/check-since.sh /path/to/nccl.git      (a clone with tags, bare or not)
#
# A since after the mirror's last tag is reported as `later` (its release's headers, from the
# wheel, are the evidence). Exit status: non-zero if any since disagrees with the mirror.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=${1:?usage: $0 /path/to/nccl.git}
tags=$(git -C "$repo" tag | grep -E '^v2\.[0-9]+\.[0-9]+-[0-9]+$' | sort -V)
first_tag=$(head -n1 <<<"$tags")
last_tag=$(tail -n1 <<<"$tags")
# nccl.h(.in) and, from 2.28 on, the device API's public headers (host helpers such as
# ncclTeamWorld and ncclCommQueryProperties are declared there).
header() {
    git -C "$repo" show "$1:src/nccl.h.in" 2>/dev/null || git -C "$repo" show "$1:src/nccl.h" 2>/dev/null
    git -C "$repo" ls-tree -r --name-only "$1" -- src/include/nccl_device.h src/include/nccl_device 2>/dev/null |
        grep -E '\.h$' | while read -r f; do git -C "$repo" show "$1:$f"; done
}
# Every header once, in tag order.
declare -A headers
for t in $tags; do headers[$t]=$(header "$t"); done
version_of() { sed -E 's/^v([0-9]+)\.([0-9]+)\.([0-9]+)-.*/\1 \2 \3/' <<<"$1"; }
le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }
failed=0
# `field: Sym = "ncclName" since (a, b, c)`, possibly with the prototype on the next lines.
grep -oE '"nccl[A-Za-z0-9]+" since \([0-9]+, [0-9]+, [0-9]+\)' src/nccl/library/functions.rs |
    sed -E 's/"(nccl[A-Za-z0-9]+)" since \(([0-9]+), ([0-9]+), ([0-9]+)\)/\1 \2.\3.\4/' >/tmp/check-since.$$
while read -r name since; do
    found=""
    for t in $tags; do
        if grep -qE "(^|[^A-Za-z_])$name *\(" <<<"${headers[$t]}"; then found=$t; break; fi
    done
    if [ -z "$found" ]; then
        read -r ma mi pa < <(version_of "$last_tag")
        if le "$ma.$mi.$pa" "$since" && [ "$since" != "$ma.$mi.$pa" ]; then
            echo "later $name: since $since, after the mirror's last tag $last_tag (checked against that release's headers by hand)"
        else
            echo "FAIL  $name: no tag of the mirror declares it (since $since)"; failed=1
        fi
        continue
    fi
    read -r ma mi pa < <(version_of "$found")
    tagged="$ma.$mi.$pa"
    if [ "$found" = "$first_tag" ]; then
        if le "$since" "$tagged"; then
            echo "ok    $name: since $since, already in the mirror's first tag $found"
        else
            echo "FAIL  $name: since $since, but the first tag $found declares it"; failed=1
        fi
    elif [ "$since" = "$tagged" ]; then
        echo "ok    $name: since $since = $found"
    else
        echo "FAIL  $name: since $since, first declared in $found"; failed=1
    fi
done </tmp/check-since.$$
rm -f /tmp/check-since.$$
exit $failed
