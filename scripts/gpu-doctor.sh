#!/usr/bin/env bash
# `nccl-trampoline doctor`'s checks against a real driver and real NCCL builds, on the GPU
# machine (CUDA driver, NCCL in the system and in the Python environment's wheel, PyTorch;
# no Rust, no internet), from the repository root with .device-bin/ carried there
# (scripts/gpu-test.sh stages .device-bin/nccl-trampoline). For each NCCL build (the system
# loader's libnccl.so.2 and the nvidia-nccl wheel's), with NCCL_TRAMPOLINE_LIBRARY naming it:
#   plain      `doctor` and `doctor --json`: the CUDA check is `ok` against the real driver,
#              the socket check passes, and torch's NCCL is compared (ok for the file torch
#              maps, a warning for another);
#   ifname     NCCL_SOCKET_IFNAME==nonexistent0: the socket check is FAILED (text and JSON) and
#              doctor exits 1;
#   mismatch   a copy of the library whose banner (`NCCL version X+cudaM.m`) says a CUDA major
#              above the driver's (same length: cuda13 -> cuda99): the CUDA check is FAILED.
# Logs in $OUT/doctor/ (one file per run, summary.txt). Exit status: non-zero if an
# expectation failed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/.device-bin/nccl-trampoline
dest=${OUT:-gpu-logs}/doctor
mkdir -p "$dest"
summary=$dest/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=0
if [ ! -x "$bin" ]; then
    say "FAIL  no $bin: stage it with scripts/gpu-test.sh where Rust is"
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run LOG EXPECTED_STATUS VAR=VALUE... -- ARGS...: one doctor run, its output in $dest/LOG.
run() {
    local log=$dest/$1 want=$2 status=0
    shift 2
    local env=()
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    env "${env[@]}" timeout 300 "$bin" doctor "$@" > "$log" 2>&1 || status=$?
    if [ "$status" = "$want" ]; then
        say "  pass  $(basename "$log"): exit status $status"
    else
        say "  FAIL  $(basename "$log"): exit status $status, expected $want"
        failed=1
    fi
}

# expect LOG WHAT PATTERN: the log has a line matching the extended regex PATTERN.
expect() {
    if grep -Eq -- "$3" "$dest/$1"; then
        say "  pass  $1: $2"
    else
        say "  FAIL  $1: $2 (no line matching /$3/)"
        grep -E 'cuda-compat|socket-ifname|torch-nccl|nccl-params|GPUs|driver' "$dest/$1" | sed 's/^/          /' | tee -a "$summary" || true
        failed=1
    fi
}

# A path as an extended regex.
quote() { printf '%s' "$1" | sed 's/[][\.*^$(){}?+|/]/\\&/g'; }

libs=()
sys=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
[ -n "$sys" ] && libs+=("system:$(readlink -f "$sys")")
whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null || true)
[ -n "$whl" ] && [ -f "$whl" ] && libs+=("wheel:$whl")
torch_nccl=$(python3 -c 'import torch;print(".".join(map(str,torch.cuda.nccl.version())))' 2>/dev/null || true)
say "NCCL builds: ${libs[*]:-none}; torch's NCCL: ${torch_nccl:-none}"
if [ ${#libs[@]} -eq 0 ]; then
    say "FAIL  no NCCL found (ldconfig, python3 -c 'import nvidia.nccl')"
    exit 1
fi

for entry in "${libs[@]}"; do
    kind=${entry%%:*} lib=${entry#*:}
    q=$(quote "$lib")
    say "== $kind: $lib"
    run "$kind.txt" 0 NCCL_TRAMPOLINE_LIBRARY="$lib" -- --probe-timeout 120
    expect "$kind.txt" "a driver is found" '^  driver .*, CUDA [0-9]+\.[0-9]+$'
    expect "$kind.txt" "the CUDA check is ok" "^  ok +cuda-compat \\($q\\): built for CUDA [0-9]+ \\(its banner says CUDA"
    expect "$kind.txt" "the socket check passes" '^  (ok|warning) +socket-ifname \(NCCL_SOCKET_IFNAME unset\)'
    if [ -n "$torch_nccl" ]; then
        # The wheel is torch's (the same file: ok); the system's is another file (a warning).
        if [ "$kind" = wheel ]; then
            expect "$kind.txt" "torch's NCCL is this file" '^  ok +torch-nccl \(torch .*the same file this program chose'
        else
            expect "$kind.txt" "torch's NCCL is another file" '^  warning +torch-nccl \(torch .*NCCL_TRAMPOLINE_LIBRARY='
        fi
    else
        expect "$kind.txt" "the torch check ran" '^  [a-zA-Z]+ +torch-nccl '
    fi
    expect "$kind.txt" "nothing failed" '^No check failed\.$'
    run "$kind.json" 0 NCCL_TRAMPOLINE_LIBRARY="$lib" -- --probe-timeout 120 --json
    expect "$kind.json" "JSON: the CUDA check is ok" "\"id\":\"cuda-compat\",\"subject\":\"$q\",\"verdict\":\"ok\""
    expect "$kind.json" "JSON: the driver's CUDA version" '"cuda_version":"[0-9]+\.[0-9]+"'
    expect "$kind.json" "JSON: nothing failed" '"failed":0,"ok":true}$'

    run "$kind-ifname.txt" 1 NCCL_TRAMPOLINE_LIBRARY="$lib" NCCL_SOCKET_IFNAME==nonexistent0 -- --probe-timeout 120
    expect "$kind-ifname.txt" "the socket check FAILED" '^  FAILED +socket-ifname \(NCCL_SOCKET_IFNAME==nonexistent0\): matches no usable interface.*; fix: '
    run "$kind-ifname.json" 1 NCCL_TRAMPOLINE_LIBRARY="$lib" NCCL_SOCKET_IFNAME==nonexistent0 -- --probe-timeout 120 --json
    expect "$kind-ifname.json" "JSON: the socket check FAILED" '"id":"socket-ifname","subject":"NCCL_SOCKET_IFNAME==nonexistent0","verdict":"FAILED"'

    # The banner patched to a CUDA major above the driver's, the same number of digits.
    mkdir -p "$work/$kind"
    patched=$work/$kind/libnccl.so.2
    python3 - "$lib" "$patched" > "$dest/$kind-patch.txt" 2>&1 <<'PY' || { say "  FAIL  patching $lib's banner"; failed=1; continue; }
import re, sys
data = bytearray(open(sys.argv[1], "rb").read())
m = re.search(rb"NCCL version [0-9]+\.[0-9]+\.[0-9]+\+cuda([0-9]+)\.[0-9]+\0", data)
if not m:
    sys.exit("no NCCL version banner")
old = bytes(data[m.start():m.end() - 1])
data[m.start(1):m.end(1)] = b"9" * (m.end(1) - m.start(1))
open(sys.argv[2], "wb").write(data)
print("banner", old.decode(), "->", bytes(data[m.start():m.end() - 1]).decode())
PY
    cat "$dest/$kind-patch.txt" >> "$summary"
    qp=$(quote "$patched")
    run "$kind-mismatch.txt" 1 NCCL_TRAMPOLINE_LIBRARY="$patched" -- --probe-timeout 120
    expect "$kind-mismatch.txt" "the CUDA check FAILED" "^  FAILED +cuda-compat \\($qp\\): built for CUDA 9+ .*but the driver supports CUDA [0-9]+\\.[0-9]+.*; fix: update the driver to one for CUDA 9+"
    run "$kind-mismatch.json" 1 NCCL_TRAMPOLINE_LIBRARY="$patched" -- --probe-timeout 120 --json
    expect "$kind-mismatch.json" "JSON: the CUDA check FAILED" "\"id\":\"cuda-compat\",\"subject\":\"$qp\",\"verdict\":\"FAILED\""
done

if [ "$failed" = 0 ]; then say "gpu-doctor: every expectation held"; else say "gpu-doctor: FAILED (see $dest)"; fi
exit "$failed"
