#!/usr/bin/env bash
# One run on the GPU machine (one GPU or more; CUDA, NCCL, python3; no Rust, no internet), from
# the repository root, with .device-bin/ carried there (scripts/gpu-test.sh builds it where Rust
# is):
#   quickstart  the README's "On a GPU machine" block, line by line, with the NCCL discovery
#               finds and with the system's (scripts/gpu-quickstart.sh);
#   race        for each NCCL build, the GPU test of device memory written and then read at once
#               by a launch on a non-blocking stream (8-64 MiB pageable uploads, every element;
#               docs/adr/0022), on every GPU and, where there are several, on one;
#   creation    for each NCCL build, creations given up on the real NCCL (a dropped non-blocking
#               pending init, an init past its deadline in both modes): NCCL's abort ran and no
#               NCCL thread is left (tests/gpu_creation.rs; docs/adr/0023).
# STAGES picks them (default all three, in that order). The logs go into ONE archive,
# $OUT/gpu-verify.tar.gz, beside $OUT/summary.txt (what passed, what failed, the lines that
# matter), so that they come back from a machine that returns few files. A stage that would
# start after DEADLINE seconds (default 540) is skipped and says so, so the run ends inside a
# 10-minute command. Multicast stays off. Exit status: non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
dest=${OUT:-gpu-logs}
mkdir -p "$dest"
logs=$(mktemp -d)/gpu-verify
mkdir -p "$logs"
summary=$logs/summary.txt
say() { echo "$*" | tee -a "$summary"; }
failed=0
started=$SECONDS
stage() { # NAME: whether to run it (chosen, and time left)
    [[ " ${STAGES:-quickstart race creation} " == *" $1 "* ]] || return 1
    if [ $((SECONDS - started)) -ge "${DEADLINE:-540}" ]; then
        say "== $1: skipped, $((SECONDS - started)) s used of DEADLINE=${DEADLINE:-540}"
        failed=1
        return 1
    fi
    say "== $1 (at $((SECONDS - started)) s)"
}

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    git log -1 --format='%H %s' 2>/dev/null || true
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
    nvidia-smi topo -m
    ls -l .device-bin/
} > "$logs/machine.txt" 2>&1
say "GPUs: $(nvidia-smi -L | wc -l) ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs))"

if stage quickstart; then
    OUT=$logs scripts/gpu-quickstart.sh > "$logs/quickstart.txt" 2>&1 || failed=1
    sed 's/^/  /' "$logs/quickstart.txt" | tee -a "$summary"
fi

# Every NCCL build here: the system's and the Python environment's wheel.
libs=()
sys=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}'); [ -n "$sys" ] && libs+=("system:$sys")
whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null)
[ -n "$whl" ] && [ -f "$whl" ] && libs+=("wheel:$whl")

if stage race; then
    mkdir -p "$logs/race"
    for entry in "${libs[@]}"; do
        kind=${entry%%:*}
        visible_sets=(all)
        [ "$(nvidia-smi -L | wc -l)" -ge 2 ] && visible_sets+=(one)
        for visible in "${visible_sets[@]}"; do
            log=$logs/race/$kind-$visible-gpus.log
            env=(NCCL_TRAMPOLINE_LIBRARY="${entry#*:}")
            [ $visible = one ] && env+=(CUDA_VISIBLE_DEVICES=0)
            start=$SECONDS
            if env "${env[@]}" timeout 300 .device-bin/gpu --ignored --exact \
                gpu_uploads_are_ordered_before_a_launch_on_a_non_blocking_stream --nocapture --test-threads=1 > "$log" 2>&1; then
                say "  pass  race, $kind NCCL, $visible GPU(s) ($((SECONDS - start)) s)"
            else
                say "  FAIL  race, $kind NCCL, $visible GPU(s) ($((SECONDS - start)) s, see race/$(basename "$log"))"
                failed=1
            fi
            grep -E "wrong elements|test result" "$log" | sed 's/^/        /' | tee -a "$summary"
        done
    done
fi

if stage creation; then
    mkdir -p "$logs/creation"
    for entry in "${libs[@]}"; do
        kind=${entry%%:*}
        log=$logs/creation/$kind.log
        start=$SECONDS
        if NCCL_TRAMPOLINE_LIBRARY="${entry#*:}" timeout 180 .device-bin/gpu_creation --ignored --nocapture \
            --test-threads=1 > "$log" 2>&1; then
            say "  pass  creations given up, $kind NCCL ($((SECONDS - start)) s)"
        else
            say "  FAIL  creations given up, $kind NCCL ($((SECONDS - start)) s, see creation/$(basename "$log"))"
            failed=1
        fi
        grep -E "^NCCL [0-9]|dropped pending|past its deadline|Abort START|test result" "$log" | sed 's/^/        /' | tee -a "$summary"
        cp /tmp/nccl-debug-*.log "$logs/creation/" 2>/dev/null
    done
fi

say "== done in $((SECONDS - started)) s: $([ $failed = 0 ] && echo "everything passed" || echo "something FAILED")"
cp "$summary" "$dest/summary.txt"
tar -czf "$dest/gpu-verify.tar.gz" -C "$(dirname "$logs")" gpu-verify
echo "logs: $dest/gpu-verify.tar.gz ($(du -h "$dest/gpu-verify.tar.gz" | cut -f1))"
exit $failed
