#!/usr/bin/env bash
# Runs on the GPU machine (CUDA's nvcc, NCCL, python3; no Rust, no internet), from the
# repository root, with .device-bin/ carried there: scripts/gpu-test.sh staged the binaries and
# scripts/nccl-tests-src.sh nccl-tests 2.19.6's source (.device-bin/nccl-tests-src/).
#
# `nccl-trampoline perf` beside nccl-tests 2.19.6, same arguments, same library, interleaved:
#   1. builds all_reduce_perf, all_gather_perf and broadcast_perf (MPI=0) with
#      $CUDA_HOME/bin/nvcc against the system's nccl.h (/usr/include), for this GPU's
#      architecture only, into .device-bin/nccl-tests-build/ (kept: a later run reuses it);
#   2. for each NCCL build found (the system libnccl.so.2, the Python environment's wheel),
#      each collective and each of ROUNDS rounds: nccl-tests (the library chosen with
#      LD_LIBRARY_PATH; its header line names the headers' and the library's versions), then
#      `perf` (--library), both with ARGS (default `-b 8 -e 256M -f 4 -g 1 -n 100 -w 10`);
#      with 2 GPUs or more the same again with -g set to every GPU;
#   3. summary.txt: per run the exit status, wrong elements out of place and in place, the
#      average bus bandwidth, and per size perf's out-of-place time over nccl-tests'.
# Logs under ${OUT:-gpu-logs}/nccl-tests/. Multicast stays off. Exit status: non-zero if a run
# failed or reported a wrong element.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}/nccl-tests
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
bin=.device-bin
src=$bin/nccl-tests-src
build=$PWD/$bin/nccl-tests-build
cuda=${CUDA_HOME:-/usr/local/cuda}
read -r -a ARGS <<< "${ARGS:--b 8 -e 256M -f 4 -g 1 -n 100 -w 10}"
COLLECTIVES=${COLLECTIVES:-all_reduce all_gather broadcast}
ROUNDS=${ROUNDS:-1}
[ -x "$bin/nccl-trampoline" ] || { echo "missing $bin/nccl-trampoline: run scripts/gpu-test.sh where Rust is" >&2; exit 1; }
[ -f "$src/src/common.h" ] || { echo "missing $src: run scripts/nccl-tests-src.sh where the source is" >&2; exit 1; }
gpus=$(nvidia-smi -L | wc -l)

libs=()
sys=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}'); [ -n "$sys" ] && libs+=("system:$sys")
whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null)
[ -n "$whl" ] && [ -f "$whl" ] && libs+=("wheel:$whl")
[ ${#libs[@]} -gt 0 ] || { echo "no NCCL found" >&2; exit 1; }
{
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv
    "$cuda/bin/nvcc" --version | tail -2
    echo "nccl-tests: $(cat "$src/COMMIT" 2>/dev/null) ($(grep '^#define NCCL_TESTS_VERSION' "$src/src/common.h"))"
    grep -E '^#define NCCL_(MAJOR|MINOR|PATCH) ' /usr/include/nccl.h
    printf 'library %s\n' "${libs[@]}"
    echo "ARGS: ${ARGS[*]}"
} > "$out/machine.txt" 2>&1

# 1. Build, once.
if [ ! -x "$build/broadcast_perf" ]; then
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
    gencode=${NVCC_GENCODE:--gencode=arch=compute_$cc,code=sm_$cc}
    start=$SECONDS
    if make -C "$src" -j"$(nproc)" src.build MPI=0 CUDA_HOME="$cuda" NVCC_GENCODE="$gencode" \
        BUILDDIR="$build" BIN_FILES_LIST="all_reduce all_gather broadcast" > "$out/build.log" 2>&1; then
        echo "built nccl-tests 2.19.6 for $gencode in $((SECONDS - start)) s"
    else
        echo "FAIL  building nccl-tests (see $out/build.log)"; tail -20 "$out/build.log"; exit 1
    fi
fi

# 2. The runs.
failed=0
run() { # log command...
    local log=$1; shift
    local start=$SECONDS
    if timeout "${RUN_LIMIT:-300}" "$@" > "$out/$log" 2>&1; then
        echo "pass  $log ($((SECONDS - start)) s)"
    else
        echo "FAIL  $log (exit $?, $((SECONDS - start)) s)"; failed=1
    fi
}
passes=("${ARGS[*]}")
[ "$gpus" -ge 2 ] && passes+=("$(sed -E "s/(^| )-g [0-9]+/\1-g $gpus/" <<< "${ARGS[*]}")")
for pass in "${passes[@]}"; do
    read -r -a args <<< "$pass"
    g=$(grep -oE -- '-g [0-9]+' <<< "$pass" | cut -d' ' -f2)
    for round in $(seq 1 "$ROUNDS"); do
        for c in $COLLECTIVES; do
            for entry in "${libs[@]}"; do
                kind=${entry%%:*} lib=${entry#*:}
                run "$kind-g$g-$c-nccl-tests-$round.log" env LD_LIBRARY_PATH="$(dirname "$lib"):$cuda/lib64:${LD_LIBRARY_PATH:-}" \
                    "$build/${c}_perf" "${args[@]}"
                run "$kind-g$g-$c-trampoline-$round.log" "$bin/nccl-trampoline" perf "$c" "${args[@]}" --library "$lib"
            done
        done
    done
done

# 3. The summary.
python3 - "$out" > "$out/summary.txt" <<'EOF'
import glob, os, re, sys
out = sys.argv[1]
def rows(path):
    r = {}
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) >= 13 and f[0].isdigit():
            r[int(f[0])] = f
    return r
def wrong(r, col):
    return sum(int(f[col]) for f in r.values() if f[col].isdigit())
def header(path):
    for line in open(path, errors="replace"):
        if "nccl-tests version" in line or line.startswith("# NCCL ") or "Avg bus bandwidth" in line:
            yield line.strip()
print("run | rows | wrong out of place | wrong in place | avg busbw | header")
for path in sorted(glob.glob(os.path.join(out, "*.log"))):
    name = os.path.basename(path)
    if name == "build.log":
        continue
    r = rows(path)
    h = list(header(path))
    bw = next((l.split(":")[-1].strip() for l in h if "Avg bus bandwidth" in l), "?")
    head = next((l for l in h if "Avg bus" not in l), "")
    print(f"{name} | {len(r)} | {wrong(r, 8)} | {wrong(r, 12)} | {bw} | {head}")
print()
print("perf's time over nccl-tests' per size (out of place / in place), same library and arguments")
for path in sorted(glob.glob(os.path.join(out, "*-trampoline-*.log"))):
    ref = path.replace("-trampoline-", "-nccl-tests-")
    if not os.path.exists(ref):
        continue
    a, b = rows(path), rows(ref)
    cells = []
    for size in sorted(set(a) & set(b)):
        try:
            cells.append(f"{size}:{float(a[size][5]) / float(b[size][5]):.2f}/{float(a[size][9]) / float(b[size][9]):.2f}")
        except (ValueError, ZeroDivisionError):
            cells.append(f"{size}:?")
    print(os.path.basename(path).replace("-trampoline", ""), " ".join(cells))
EOF
cat "$out/summary.txt"
# A wrong element anywhere fails the run, whichever program saw it.
awk -F' [|] ' 'NR > 1 && NF >= 4 && ($3 + 0 > 0 || $4 + 0 > 0) { bad = 1 } END { exit bad }' "$out/summary.txt" || failed=1
exit $failed
