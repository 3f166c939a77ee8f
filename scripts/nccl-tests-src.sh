#!/usr/bin/env bash
# Exports nccl-tests 2.19.6 (tag v2.19.6, commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432,
# "NCCL_TESTS_VERSION 2.19.6") into .device-bin/nccl-tests-src/ (git-ignored; 0.4 MB), for the
# GPU machine, which has nvcc but no internet: scripts/gpu-nccl-tests.sh builds it there.
# nccl-tests' code is never committed here.
#
# From a git repository of https://github.com/NVIDIA/nccl-tests: $NCCL_TESTS_GIT (a work tree
# or a bare git directory), else a bare clone kept in $NCCL_TRAMPOLINE_CACHE (default
# ~/.cache/nccl-trampoline; the network is needed once). The commit is checked, not only the
# tag's name.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=a0b82b2260cf5152b9f8c061bbf7eaf0ba096432
out=.device-bin/nccl-tests-src
git_dir=${NCCL_TESTS_GIT:-}
if [ -z "$git_dir" ]; then
    git_dir=${NCCL_TRAMPOLINE_CACHE:-$HOME/.cache/nccl-trampoline}/nccl-tests.git
    [ -d "$git_dir" ] || git clone --quiet --bare https://github.com/NVIDIA/nccl-tests "$git_dir"
    git --git-dir="$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null || git --git-dir="$git_dir" fetch --quiet --tags
fi
gd=$(git -C "$git_dir" rev-parse --absolute-git-dir 2>/dev/null || echo "$git_dir")
git --git-dir="$gd" cat-file -e "$commit^{commit}" 2>/dev/null || {
    echo "nccl-tests-src: $git_dir has no commit $commit (v2.19.6); fetch the repository's tags" >&2
    exit 1
}
tagged=$(git --git-dir="$gd" rev-parse -q --verify 'v2.19.6^{commit}' || true)
[ -z "$tagged" ] || [ "$tagged" = "$commit" ] || {
    echo "nccl-tests-src: tag v2.19.6 is $tagged here, not $commit" >&2
    exit 1
}
rm -rf "$out"
mkdir -p "$out"
git --git-dir="$gd" archive "$commit" | tar -x -C "$out"
echo "$commit" > "$out/COMMIT"
grep -q '^#define NCCL_TESTS_VERSION "2.19.6"' "$out/src/common.h"
echo "nccl-tests v2.19.6 ($commit) in $out: $(du -sh "$out" | cut -f1)"
