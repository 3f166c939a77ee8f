#!/usr/bin/env bash
# A Slurm cluster of one host, for tests: munged, slurmctld and slurmd from the Debian packages
# (slurm-wlm, munge), with their configuration, state and logs in a private directory, so the
# system's own Slurm setup (if any) is not touched. Needs root (slurmd runs tasks as users).
#
#   scripts/slurm-single-host.sh start      # prints the directory; export SLURM_CONF from it
#   SLURM_CONF=$dir/slurm.conf srun -n 2 hostname
#   scripts/slurm-single-host.sh stop
#
# Environment: SLURM_TEST_DIR (default /tmp/nccl-trampoline-slurm), SLURM_TEST_PORT (the
# first of two free ports; default 16817). The node has this host's name and CPU count;
# OverSubscribe lets a 2-core CI machine run 4 tasks.
set -euo pipefail
dir=${SLURM_TEST_DIR:-/tmp/nccl-trampoline-slurm}
port=${SLURM_TEST_PORT:-16817}
host=$(hostname -s)
conf=$dir/slurm.conf

alive() { # NAME: the daemon of that pid file runs
    local pid
    pid=$(cat "$dir/$1.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

start() {
    [ "$(id -u)" -eq 0 ] || { echo "slurm-single-host.sh: needs root" >&2; exit 1; }
    stop # a cluster left by an interrupted run
    mkdir -p "$dir"/state "$dir"/spool "$dir"/log
    # munge: the key the package made, its socket directory, the daemon as the munge user.
    if ! munge -n >/dev/null 2>&1; then
        [ -s /etc/munge/munge.key ] || { mungekey --create >/dev/null; chown munge:munge /etc/munge/munge.key; }
        mkdir -p /run/munge && chown munge:munge /run/munge
        runuser -u munge -- /usr/sbin/munged
        for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
        munge -n | unmunge >/dev/null
    fi
    cat > "$conf" <<EOF
ClusterName=ntlocal
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=30
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
    export SLURM_CONF=$conf
    /usr/sbin/slurmctld -i -f "$conf"
    /usr/sbin/slurmd -f "$conf"
    # The node is up when sinfo says idle.
    for _ in $(seq 100); do
        sinfo -h -o %T 2>/dev/null | grep -qx idle && break
        sleep 0.2
    done
    sinfo -h -o %T | grep -qx idle || { echo "slurm did not come up; logs in $dir/log" >&2; tail -20 "$dir"/log/*.log >&2; exit 1; }
    echo "$dir"
}

stop() {
    for d in slurmd slurmctld; do
        alive "$d" && kill "$(cat "$dir/$d.pid")" 2>/dev/null
    done
    # Until the daemons are gone and their ports closed (a restart binds them again).
    for _ in $(seq 100); do
        alive slurmd || alive slurmctld || listening "$port" || listening $((port + 1)) || break
        sleep 0.1
    done
    return 0
}

listening() { # PORT: something accepts connections on it here
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

case ${1:-} in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
