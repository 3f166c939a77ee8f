#!/usr/bin/env bash
# The README's "On a GPU machine" section, followed as a newcomer would, on a GPU machine that
# has CUDA's driver, Python with an NCCL wheel, maybe a system NCCL, but no Rust and no
# internet. Run from the repository root, with .device-bin/ carried there (scripts/gpu-test.sh
# builds it on a machine with Rust):
#
#     scripts/gpu-quickstart.sh            # logs under ${OUT:-gpu-logs}/quickstart/
#
# Step 1 (get NCCL) cannot run without internet: it reports what the machine has instead (the
# wheels pip knows, the library the system loader knows). Step 2 is read from README.md, the
# first ```sh block under "**2. Run", and run line by line as written, with `cargo` standing
# for the prebuilt binaries:
#     cargo run ... -- ARGS                  -> .device-bin/nccl-trampoline ARGS
#     cargo run ... --example NAME [-- ARGS] -> .device-bin/NAME ARGS
#     cargo test ... --test gpu -- ARGS      -> .device-bin/gpu ARGS
# Twice: first with what discovery finds (an active or PATH-first environment's wheel before
# the system library), then, as the README says for "the other build", with
# NCCL_TRAMPOLINE_LIBRARY naming the system library (when there is one and it is another
# file). The block ends on a machine of one GPU as on one of several. Exit status: non-zero if
# any command failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# Multicast off whatever the README block says (a shared host's operator asks for it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-gpu-logs}/quickstart
mkdir -p "$out"
bin=.device-bin

# The step-2 block of README.md, one command per element (comments and blank lines dropped).
mapfile -t block < <(awk '
    /^## On a GPU machine/ { section = 1; next }
    section && /^## / { exit }
    section && /^\*\*2\. Run/ { want = 1; next }
    want && /^```sh/ { inside = 1; next }
    inside && /^```/ { exit }
    inside && !/^[[:space:]]*(#|$)/ { print }
' README.md)
[ ${#block[@]} -gt 0 ] || { echo "no step-2 block under \"On a GPU machine\" in README.md" >&2; exit 1; }

cargo() { # the prebuilt binary for one README cargo command
    local sub=$1 example="" test="" after=0 args=()
    shift
    while [ $# -gt 0 ]; do
        if [ $after = 1 ]; then args+=("$1"); shift; continue; fi
        case $1 in
            --) after=1 ;;
            --release) ;;
            --features) shift ;;
            --example) example=$2; shift ;;
            --test) test=$2; shift ;;
            *) echo "gpu-quickstart: no prebuilt binary for cargo option $1" >&2; return 2 ;;
        esac
        shift
    done
    local exe
    case $sub in
        run) exe=$bin/${example:-nccl-trampoline} ;;
        test) exe=$bin/$test ;;
        *) echo "gpu-quickstart: cargo $sub has no prebuilt binary" >&2; return 2 ;;
    esac
    [ -x "$exe" ] || { echo "gpu-quickstart: $exe is missing (run scripts/gpu-test.sh where Rust is)" >&2; return 2; }
    timeout 900 "$exe" "${args[@]}"
}

failed=0
pass() { # name: runs the README block, one log per command
    local name=$1 i=0 line log
    echo "== $name${NCCL_TRAMPOLINE_LIBRARY:+ (NCCL_TRAMPOLINE_LIBRARY=$NCCL_TRAMPOLINE_LIBRARY)}"
    for line in "${block[@]}"; do
        i=$((i + 1))
        log="$out/$name-$i.log"
        local start=$SECONDS
        # As written in the README, in this shell (its `export` lines hold for the lines after).
        if { echo "\$ $line"; eval "$line"; } >"$log" 2>&1; then
            echo "  pass  $line ($((SECONDS - start)) s)"
        else
            echo "  FAIL  $line ($((SECONDS - start)) s, see $log)"
            failed=1
        fi
        grep -hE "^Loaded:|wheel|passed, [0-9]+ failed|verified|test result|skipped|wrong elements" "$log" | sed 's/^/        /'
    done
}

echo "== step 1: NCCL on this machine (installed beforehand; no internet here)"
{
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
    for wheel in nvidia-nccl-cu12 nvidia-nccl-cu13; do
        python3 -m pip show "$wheel" 2>/dev/null | grep -E "^(Name|Version|Location):"
    done
    ldconfig -p | grep -E "libnccl\.so"
} 2>&1 | tee "$out/step1-machine.txt" | sed 's/^/  /'

(
    unset NCCL_TRAMPOLINE_LIBRARY
    pass discovered
    exit $failed
) || failed=1

system=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
found=$(grep -h "^Loaded:" "$out"/discovered-*.log 2>/dev/null | head -1)
if [ -n "$system" ] && [[ $found != *"$(readlink -f "$system")"* && $found != *"$system"* ]]; then
    (
        export NCCL_TRAMPOLINE_LIBRARY=$system
        pass system
        exit $failed
    ) || failed=1
else
    echo "== system library: ${system:-none}, the one already used above: not run again"
fi
exit $failed
