#!/usr/bin/env bash
# The example and `perf` under real launchers on this machine, no GPU needed:
#   - Open MPI (`mpirun.openmpi`) and MPICH (`mpirun.mpich`), `-np 2` and `-np 4` each;
#   - Slurm: `srun -n 2` and `srun -n 4` on a one-host cluster (scripts/slurm-single-host.sh),
#     when run as root with the slurm-wlm and munge packages (skipped, and said so, otherwise).
# With the real libnccl.so.2 (first argument): every rank of examples/world prints the same id
# digest (never the id) and fails ncclCommInitRank with NCCL's own CUDA error. With the
# stand-ins (tests/c/fake_nccl.c executing collectives in host memory, ranks of other
# processes meeting in shared memory; tests/c/fake_cuda.c as libcuda.so.1): `perf` runs to
# completion with every element checked, and a run with spoiled results exits non-zero.
#
# Usage: scripts/launchers.sh /path/to/libnccl.so.2
# Needs target/debug/examples/world and target/debug/nccl-trampoline (feature cli) built.
# Exit status: non-zero if any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
real_nccl=${1:?usage: $0 /path/to/libnccl.so.2}
world=target/debug/examples/world
cli=target/debug/nccl-trampoline
for b in "$world" "$cli"; do [ -x "$b" ] || { echo "missing $b: cargo build --features cli --examples --bins" >&2; exit 1; }; done

# The stand-ins, built with this machine's C compiler.
stand_ins=target/stand-ins
mkdir -p "$stand_ins"
cc -shared -fPIC -O1 -std=gnu11 -Wall -o "$stand_ins/libnccl-stand-in.so" tests/c/fake_nccl.c
cc -shared -fPIC -O1 -std=gnu11 -Wall -o "$stand_ins/libcuda.so.1" tests/c/fake_cuda.c

# NCCL's bootstrap stays on loopback.
export NCCL_SOCKET_IFNAME=lo
# Open MPI refuses root unless told; a 2-core machine runs 4 ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log=target/launchers
mkdir -p "$log"
failed=0
pass() { echo "pass  $*"; }
fail() { echo "FAIL  $*"; failed=1; }

# check_world NAME N FILE: N ranks, one digest, N times NCCL's CUDA error.
check_world() {
    local name=$1 n=$2 file=$3
    local ranks digests errors
    ranks=$(grep -cE '^rank [0-9]+/'"$n"' local .* id-digest [0-9a-f]{16}$' "$file")
    digests=$(grep -oE 'id-digest [0-9a-f]{16}' "$file" | sort -u | wc -l)
    errors=$(grep -oE "rank [0-9]+/$n: init failed: ncclCommInitRank failed: ncclUnhandledCudaError \(1\): Cuda failure" "$file" | wc -l)
    if [ "$ranks" -eq "$n" ] && [ "$digests" -eq 1 ] && [ "$errors" -eq "$n" ]; then
        pass "$name: $n ranks, one id ($(grep -oE 'id-digest [0-9a-f]{16}' "$file" | head -1)), NCCL's CUDA error on each"
    else
        fail "$name: $ranks rank lines, $digests distinct digests, $errors NCCL CUDA errors (want $n, 1, $n); see $file"
    fi
}

# check_perf NAME N STATUS FILE: the one table of N ranks, every element right.
check_perf() {
    local name=$1 n=$2 status=$3 file=$4
    local rows
    rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float ' "$file")
    if [ "$status" -eq 0 ] && [ "$(grep -c '^#  Rank ' "$file")" -eq "$n" ] && grep -q '# Out of bounds values : 0 OK' "$file" &&
        [ "$rows" -gt 0 ] && [ "$(grep -c '^# nccl-tests version ' "$file")" -eq 1 ]; then
        pass "$name: perf, $n ranks in $n processes, $rows rows, 0 wrong elements"
    else
        fail "$name: perf exit status $status, $rows rows; see $file"
    fi
}

# launcher NAME N: the command line that starts N ranks (environment passed through).
launcher() {
    case $1 in
    openmpi) echo "mpirun.openmpi --oversubscribe --mca orte_abort_on_non_zero_status 0 -x NCCL_SOCKET_IFNAME -x NCCL_TRAMPOLINE_LIBRARY -x LD_LIBRARY_PATH -x FAKE_NCCL_EXECUTE -x FAKE_CUDA_DEVICES -x FAKE_NCCL_CORRUPT -np $2" ;;
    mpich) echo "mpirun.mpich -np $2" ;;
    slurm) echo "srun --overcommit -n $2" ;;
    esac
}

perf_args=(all_reduce -b 8 -e 64K -f 8 -n 3 -w 1)
run_all() { # NAME
    local name=$1 n status
    for n in 2 4; do
        local out="$log/$name-np$n-world.log"
        # shellcheck disable=SC2046
        NCCL_TRAMPOLINE_LIBRARY=$real_nccl LD_LIBRARY_PATH= FAKE_NCCL_EXECUTE= FAKE_CUDA_DEVICES= FAKE_NCCL_CORRUPT= \
            timeout 120 $(launcher "$name" "$n") "$world" --timeout 60 >"$out" 2>&1
        check_world "$name -np $n, real NCCL $(basename "$(dirname "$real_nccl")")" "$n" "$out"
        out="$log/$name-np$n-perf.log"
        # shellcheck disable=SC2046
        NCCL_TRAMPOLINE_LIBRARY=$PWD/$stand_ins/libnccl-stand-in.so LD_LIBRARY_PATH=$PWD/$stand_ins FAKE_NCCL_EXECUTE=1 \
            FAKE_CUDA_DEVICES=$n FAKE_NCCL_CORRUPT= timeout 300 $(launcher "$name" "$n") "$cli" perf "${perf_args[@]}" >"$out" 2>&1
        status=$?
        check_perf "$name -np $n, stand-in NCCL" "$n" "$status" "$out"
    done
    # A spoiled element on every rank: the table says FAILED and every rank exits 1 (each
    # rank reports its own status: Open MPI's mpirun does not, when told not to abort).
    local out="$log/$name-np2-perf-corrupt.log"
    # shellcheck disable=SC2046
    NCCL_TRAMPOLINE_LIBRARY=$PWD/$stand_ins/libnccl-stand-in.so LD_LIBRARY_PATH=$PWD/$stand_ins FAKE_NCCL_EXECUTE=1 \
        FAKE_CUDA_DEVICES=2 FAKE_NCCL_CORRUPT=1 timeout 120 $(launcher "$name" 2) \
        sh -c '"$0" "$@"; echo "rank exit status $?"' "$cli" perf all_reduce -b 32 -e 32 -n 1 -w 0 >"$out" 2>&1
    if grep -q "Out of bounds values : 4 FAILED" "$out" && [ "$(grep -c '^rank exit status 1$' "$out")" -eq 2 ]; then
        pass "$name -np 2: wrong elements make every rank exit 1"
    else
        fail "$name -np 2: wrong elements did not fail every rank; see $out"
    fi
}

echo "== Open MPI: $(mpirun.openmpi --version 2>&1 | head -1)"
run_all openmpi
echo "== MPICH: $(mpirun.mpich --version 2>&1 | grep -m1 Version)"
run_all mpich

if [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
    dir=$(scripts/slurm-single-host.sh start) || { fail "slurm did not start"; exit 1; }
    export SLURM_CONF=$dir/slurm.conf
    echo "== Slurm: $(srun --version)"
    run_all slurm
    scripts/slurm-single-host.sh stop
    cp "$dir"/log/*.log "$log/" 2>/dev/null || true
else
    echo "skip  Slurm: needs root and the slurm-wlm and munge packages"
fi
exit $failed
