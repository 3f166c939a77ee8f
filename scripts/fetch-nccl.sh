#!/usr/bin/env bash
# Fetches the real libnccl.so.2 builds the tests load (no GPU needed) from the PyPI wheels
# `nvidia-nccl-cu12` into a cache outside the repository, once:
#   $NCCL_TRAMPOLINE_CACHE (default ~/.cache/nccl-trampoline)/nccl-<version>-<arch>/
#       libnccl.so.2, nccl.h, and the wheel's nvidia_nccl_cu12-<version>.dist-info/ (METADATA,
#       RECORD: the tests lay them out as pip does to check which wheel discovery reports)
# Versions: the newest x86_64 and aarch64 builds when this was written (2.32.3) and an old
# x86_64 build (2.18.3) for version gating. Override with NCCL_NEW / NCCL_OLD.
# Cost, once: about 900 MB downloaded (two 335 MB wheels and an older, smaller one; not kept)
# and 1.2 GB in the cache. On a terminal pip shows a progress bar; otherwise (CI) one line per wheel.
# Prints the three library paths, one per line: new x86_64, new aarch64, old x86_64.
set -euo pipefail

cache=${NCCL_TRAMPOLINE_CACHE:-$HOME/.cache/nccl-trampoline}
new=${NCCL_NEW:-2.32.3}
old=${NCCL_OLD:-2.18.3}
mkdir -p "$cache"

# pip's progress bar on a terminal; quiet otherwise. stdout carries the paths: messages go to
# stderr, and the terminal test is on stderr too.
if [ -t 2 ]; then progress=(--progress-bar on); else progress=(--quiet); fi

fetch() { # version arch
    local version=$1 arch=$2 dir="$cache/nccl-$1-$2"
    if [ -s "$dir/libnccl.so.2" ] && compgen -G "$dir/*.dist-info/RECORD" >/dev/null; then
        echo "$dir/libnccl.so.2"
        return
    fi
    echo "fetching nvidia-nccl-cu12 $version for $arch into $dir (once)" >&2
    local tmp
    tmp=$(mktemp -d "$cache/download.XXXXXX")
    # pip matches --platform tags exactly: list every tag family the wheels have used. No pip
    # cache: the wheel is unpacked and deleted here, a second copy would only take disk.
    python3 -m pip download "${progress[@]}" --no-cache-dir --no-deps --only-binary=:all: --dest "$tmp" \
        --platform "manylinux_2_27_$arch" --platform "manylinux_2_18_$arch" \
        --platform "manylinux2014_$arch" --platform "manylinux1_$arch" \
        "nvidia-nccl-cu12==$version" >&2
    mkdir -p "$dir"
    python3 - "$tmp" "$dir" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(f"{tmp}/*.whl")
with zipfile.ZipFile(wheel) as z:
    wanted = [("nvidia/nccl/lib/libnccl.so.2", "libnccl.so.2"), ("nvidia/nccl/include/nccl.h", "nccl.h")]
    for member in z.namelist():
        top, _, name = member.partition("/")
        if top.endswith(".dist-info") and name in ("METADATA", "RECORD", "WHEEL"):
            os.makedirs(f"{dest}/{top}", exist_ok=True)
            wanted.append((member, member))
    for member, out in wanted:
        with z.open(member) as src, open(f"{dest}/{out}.part", "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    # The library last: its presence marks a complete entry.
    for _, out in sorted(wanted, key=lambda w: w[1] == "libnccl.so.2"):
        os.replace(f"{dest}/{out}.part", f"{dest}/{out}")
PY
    rm -rf "$tmp"
    echo "$dir/libnccl.so.2"
}

fetch "$new" x86_64
fetch "$new" aarch64
fetch "$old" x86_64
