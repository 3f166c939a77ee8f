#!/usr/bin/env bash
# Runs on the GPU machine (CUDA, NCCL, gcc; no Rust), from the repository root, after
# scripts/gpu-stage-plugins.sh staged the Rust plugins and tools in .device-bin/plugins/ and
# they were carried there. For each NCCL build found (the system libnccl.so.2 and the Python
# environment's wheel), NCCL itself loads the Rust tuner and profiler plugins
# (examples/tuner_plugin.rs, examples/profiler_plugin.rs) and the checks are:
#   1. one rank: both plugins' init lines appear in NCCL's log (through NCCL's logger), the
#      profiler's counts are exactly those NCCL's source predicts for a one-rank communicator
#      (docs/adr/0026-plugins.md; the same for any number of collectives), for the default
#      activation mask and three controls, and the tuner is never consulted (calls=0);
#   2. two ranks on the one GPU, each process under an NCCL_HOSTID of its own (NCCL refuses two
#      ranks on one GPU of one host): the tuner is consulted, its choice (tree/LL, then
#      ring/simple) is the algorithm and protocol NCCL's TUNING lines report, and the profiler
#      counts one CollApi and one Coll event per collective issued;
#   3. doctor (the crate's host) finds, loads and initialises both plugins, and the project's
#      TCP network plugin, there;
#   4. the plugin layouts against the NCCL headers installed there, if there are any.
# Logs under ${OUT:-gpu-logs}/plugins/. NVLink multicast stays off. Exit status non-zero if
# a check failed.
set -uo pipefail
out=${OUT:-gpu-logs}/plugins
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=.device-bin/plugins
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_TRAMPOLINE_CUDART=${NCCL_TRAMPOLINE_CUDART:-$(ldconfig -p | awk '/libcudart\.so/{print $NF; exit}')}
tuner=$PWD/$bin/libtuner_plugin.so profiler=$PWD/$bin/libprofiler_plugin.so
failed=0
pass() { echo "pass  $*"; }
fail() { echo "FAIL  $*"; failed=1; }
gcc -std=gnu11 -O2 -Wall -o "$out/plugin_driver" tests/gpu/plugin_driver.c -ldl || { fail "driver build"; exit 1; }
gcc -shared -fPIC -O2 -std=gnu11 -I tests/c/plugin_abi -o "$out/libnccl-net-tcp.so" tests/c/plugins/net_tcp.c || fail "tcp plugin build"
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv; } > "$out/machine.txt" 2>&1
libs=()
sys=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}'); [ -n "$sys" ] && libs+=("system:$sys")
whl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib","libnccl.so.2"))' 2>/dev/null)
[ -n "$whl" ] && [ -f "$whl" ] && libs+=("wheel:$whl")

# The profiler's line for the one-rank work (the hash is the communicator's).
expect_one_rank() { # mask -> the counts part of the line
    case $1 in
        0xfff) echo "GroupApi=1 CollApi=0 P2pApi=2 KernelLaunch=1 Group=1 Coll=0 P2p=2 ProxyOp=0 ProxyStep=0 ProxyCtrl=0 KernelCh=0 NetPlugin=0 other=0 stops=7 records=2" ;;
        0x4) echo "GroupApi=1 CollApi=0 P2pApi=2 KernelLaunch=0 Group=1 Coll=0 P2p=2 ProxyOp=0 ProxyStep=0 ProxyCtrl=0 KernelCh=0 NetPlugin=0 other=0 stops=6 records=2" ;;
        0x800) echo "GroupApi=1 CollApi=0 P2pApi=0 KernelLaunch=1 Group=0 Coll=0 P2p=0 ProxyOp=0 ProxyStep=0 ProxyCtrl=0 KernelCh=0 NetPlugin=0 other=0 stops=2 records=2" ;;
        0) echo "GroupApi=0 CollApi=0 P2pApi=0 KernelLaunch=0 Group=0 Coll=0 P2p=0 ProxyOp=0 ProxyStep=0 ProxyCtrl=0 KernelCh=0 NetPlugin=0 other=0 stops=0 records=0" ;;
    esac
}

for entry in "${libs[@]}"; do
    kind=${entry%%:*} lib=${entry#*:}
    echo "== $kind NCCL: $lib"
    for run in "5 3 0xfff" "20 7 0xfff" "5 3 0x4" "5 3 0x800" "5 3 0"; do
        read -r n m mask <<<"$run"
        name="$kind-one-rank-n$n-m$m-mask$mask"
        rm -f "$out/$name.counts" "$out/$name.tuner"
        NCCL_TRAMPOLINE_NCCL_LIB=$lib NCCL_TUNER_PLUGIN=$tuner NCCL_PROFILER_PLUGIN=$profiler \
        NCCL_TRAMPOLINE_PROFILER_MASK=$mask NCCL_TRAMPOLINE_PROFILER_OUT=$out/$name.counts \
        NCCL_TRAMPOLINE_TUNER_OUT=$out/$name.tuner NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING \
            timeout 120 "$out/plugin_driver" "$n" "$m" > "$out/$name.log" 2>&1 || { fail "$name (driver, see $name.log)"; continue; }
        hash=$(sed -n 's/^plugin_driver: comm hash \(0x[0-9a-f]*\).*/\1/p' "$out/$name.log")
        want="comm=$hash rank=0 nranks=1 $(expect_one_rank "$mask")"
        got=$(cat "$out/$name.counts" 2>/dev/null)
        [ "$got" = "$want" ] && pass "$name profiler: $got" || fail "$name profiler: got [$got] want [$want]"
        grep -q "rust profiler: init comm $hash" "$out/$name.log" && grep -q "rust tuner: init nRanks=1 nNodes=1" "$out/$name.log" &&
            pass "$name: both plugins' init lines in NCCL's log" || fail "$name: an init line is missing from NCCL's log"
        grep -q "^calls=0 " "$out/$name.tuner" 2>/dev/null && pass "$name tuner: $(cat "$out/$name.tuner")" || fail "$name tuner: $(cat "$out/$name.tuner" 2>/dev/null)"
    done
    # Two ranks on the one GPU, as two hosts.
    for choice in tree,ll ring,simple; do
        name="$kind-two-ranks-$choice"
        id=$out/$name.id; rm -f "$id" "$out/$name".{counts,tuner}
        pids=()
        for r in 0 1; do
            NCCL_TRAMPOLINE_NCCL_LIB=$lib NCCL_TUNER_PLUGIN=$tuner NCCL_PROFILER_PLUGIN=$profiler \
            NCCL_TRAMPOLINE_PROFILER_OUT=$out/$name.counts NCCL_TRAMPOLINE_TUNER_OUT=$out/$name.tuner \
            NCCL_TRAMPOLINE_TUNER_CHOICE=$choice NCCL_HOSTID=plugin-host-$r NCCL_DEBUG=INFO \
            NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING NCCL_TRAMPOLINE_DRIVER_RANKS=2 NCCL_TRAMPOLINE_DRIVER_RANK=$r \
            NCCL_TRAMPOLINE_DRIVER_ID=$id timeout 180 "$out/plugin_driver" 8 4 262144 > "$out/$name-rank$r.log" 2>&1 &
            pids+=($!)
        done
        ok=1; for p in "${pids[@]}"; do wait "$p" || ok=0; done
        if [ $ok = 0 ]; then fail "$name (see $name-rank*.log)"; continue; fi
        pass "$name: both ranks' data right"
        echo "    tuner: $(tr '\n' ' ' < "$out/$name.tuner")"
        echo "    profiler: $(tr '\n' ' ' < "$out/$name.counts")"
        echo "    NCCL's choices (rank 0): $(grep -oE '(AllReduce|Broadcast):.*(Algo|algorithm) [A-Za-z_]+.*(proto|protocol) [A-Za-z0-9_]+' "$out/$name-rank0.log" | sort | uniq -c | head -4 | tr '\n' ';')"
        grep -c "rust tuner: " "$out/$name-rank0.log" | sed 's/^/    rust tuner lines in rank 0 log: /'
        # The tuner's choice is NCCL's for every all-reduce (broadcast has only ring).
        want=$(echo "$choice" | tr 'a-z,' 'A-Z ' | awk '{print "Algo " $1 " proto " $2}')
        total=$(grep -c "AllReduce: .* -> Algo" "$out/$name-rank0.log")
        chosen=$(grep -c "AllReduce: .* -> $want" "$out/$name-rank0.log")
        [ "$total" -gt 0 ] && [ "$chosen" = "$total" ] && pass "$name tuner: NCCL ran all $total all-reduces with $want" ||
            fail "$name tuner: $chosen of $total all-reduces with $want"
        grep -q "^calls=12 choice=$choice" "$out/$name.tuner" || fail "$name tuner: $(cat "$out/$name.tuner")"
        # 8 all-reduces and 4 broadcasts per rank: one CollApi and one Coll event each.
        n_ok=$(grep -c "CollApi=12 .*Coll=12 " "$out/$name.counts")
        [ "$n_ok" = 2 ] && pass "$name profiler: CollApi=12 Coll=12 on both ranks" || fail "$name profiler counts: $(cat "$out/$name.counts")"
    done
    # doctor: the crate's own host, with NCCL's environment variables naming the plugins.
    NCCL_TRAMPOLINE_LIBRARY=$lib NCCL_NET_PLUGIN=$out/libnccl-net-tcp.so NCCL_TUNER_PLUGIN=$tuner \
    NCCL_PROFILER_PLUGIN=$profiler timeout 300 $bin/nccl-trampoline doctor > "$out/$kind-doctor.log" 2>&1
    grep -c "result: init (" "$out/$kind-doctor.log" | grep -qx 3 && pass "$kind doctor: net, tuner and profiler initialised" ||
        fail "$kind doctor (see $kind-doctor.log)"
done
[ ${#libs[@]} -gt 0 ] || fail "no NCCL found"

# NCCL's own plugin headers, if its packages installed any.
find / -xdev \( -name 'nccl_net.h' -o -name 'nccl_tuner.h' -o -name 'nccl_profiler.h' -o -name 'nccl_env.h' \
    -o -name 'nccl_gin.h' -o -name 'nccl_common.h' \) 2>/dev/null | grep -v "^$PWD" > "$out/installed-headers.txt"
if [ -s "$out/installed-headers.txt" ]; then
    while read -r dir; do
        NCCL_TRAMPOLINE_PLUGIN_HEADERS=$dir NCCL_TRAMPOLINE_REPO=$PWD $bin/plugin_layouts --nocapture \
            every_plugin_layout_matches_nccls_own_headers_where_named > "$out/layouts-$(echo "$dir" | tr / _).log" 2>&1 &&
            pass "layouts against $dir" || fail "layouts against $dir"
    done < <(xargs -n1 dirname < "$out/installed-headers.txt" | sort -u)
else
    echo "note  no NCCL plugin header is installed here (nccl_net.h, nccl_tuner.h, ...): the transcriptions are the reference"
fi
exit $failed
