#!/usr/bin/env bash
# Fetches the real libnccl.so.2 builds the tests load (no GPU needed) from the PyPI wheels
# `nvidia-nccl-cu12` into a cache outside the repository, once:
#   $NCCL_TRAMPOLINE_CACHE (default ~/.cache/nccl-trampoline)/nccl-<version>-<arch>/libnccl.so.2
# Versions: the newest x86_64 and aarch64 builds when this was written (2.32.3) and an old
# x86_64 build (2.18.3) for version gating. Override with NCCL_NEW / NCCL_OLD.
# Prints the three library paths, one per line: new x86_64, new aarch64, old x86_64.
set -euo pipefail

cache=${NCCL_TRAMPOLINE_CACHE:-$HOME/.cache/nccl-trampoline}
new=${NCCL_NEW:-2.32.3}
old=${NCCL_OLD:-2.18.3}
mkdir -p "$cache"

fetch() { # version arch
    local version=$1 arch=$2 dir="$cache/nccl-$1-$2"
    if [ -s "$dir/libnccl.so.2" ]; then
        echo "$dir/libnccl.so.2"
        return
    fi
    local tmp
    tmp=$(mktemp -d "$cache/download.XXXXXX")
    # pip matches --platform tags exactly: list every tag family the wheels have used.
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
        --platform "manylinux_2_27_$arch" --platform "manylinux_2_18_$arch" \
        --platform "manylinux2014_$arch" --platform "manylinux1_$arch" \
        "nvidia-nccl-cu12==$version" >&2
    mkdir -p "$dir"
    python3 - "$tmp" "$dir" <<'PY'
import glob, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(f"{tmp}/*.whl")
with zipfile.ZipFile(wheel) as z:
    for member, out in (("nvidia/nccl/lib/libnccl.so.2", "libnccl.so.2"), ("nvidia/nccl/include/nccl.h", "nccl.h")):
        with z.open(member) as src, open(f"{dest}/{out}.part", "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PY
    mv "$dir/nccl.h.part" "$dir/nccl.h"
    mv "$dir/libnccl.so.2.part" "$dir/libnccl.so.2"
    rm -rf "$tmp"
    echo "$dir/libnccl.so.2"
}

fetch "$new" x86_64
fetch "$new" aarch64
fetch "$old" x86_64
