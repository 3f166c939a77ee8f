#!/usr/bin/env python3
"""Writes the seed inputs of the structured fuzz targets into corpus/<target>/: valid inputs
spelled the way each target decodes its bytes (arbitrary's Unstructured: a choice among n < 256
options is one byte taken modulo n, a bool is a byte's low bit, an integer its little-endian
bytes). Run it from fuzz/ after changing a target's decoding; it overwrites only the files it
names. The text targets (slurm_hostlist, unique_id) keep hand-written seeds."""

import hashlib
import hmac
import os
import struct


def write(target, name, data):
    os.makedirs(f"corpus/{target}", exist_ok=True)
    with open(f"corpus/{target}/{name}", "wb") as f:
        f.write(bytes(data))


def i32(v):
    return list(struct.pack("<i", v))


def u64(v):
    return list(struct.pack("<Q", v))


# launcher_world: [secret?] [count] then per variable [name index] [value kind] [value index]
NAMES = [
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID",
    "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NNODES", "SLURM_STEP_NUM_NODES",
    "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "PMI_KVSNAME", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_SIZE", "MPIRUN_ID", "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE",
    "PET_MASTER_ADDR", "PET_MASTER_PORT", "NCCL_TRAMPOLINE_RANK", "NCCL_TRAMPOLINE_WORLD_SIZE",
    "NCCL_TRAMPOLINE_LOCAL_RANK", "NCCL_TRAMPOLINE_LOCAL_SIZE", "NCCL_TRAMPOLINE_ROOT", "NCCL_TRAMPOLINE_PORT",
    "NCCL_TRAMPOLINE_ID_ROUTE", "NCCL_TRAMPOLINE_ID_FILE", "NCCL_TRAMPOLINE_MPI_LIBRARY", "NCCL_COMM_ID",
]
VALUES = [
    "0", "1", "2", "3", "7", "8", "-1", "2147483647", "2147483648", "4294967295", "4294967296", "29500", "65535",
    "65536", "node0", "node0:29600", "[::1]:80", "[fe80::1]", "fe80::2", "gpu[01-03],cpu9",
    "n[0-18446744073709551615]", "2(x3),1", "1(x4)", "tcp", "file", "none",
]


def world(name, pairs, secret=False):
    data = [int(secret), len(pairs)]
    for var, value in pairs:
        data.append(NAMES.index(var))
        if value in VALUES:
            data += [0, VALUES.index(value)]
        else:
            data += [2, int(value)]  # a digit 0-9
    write("launcher_world", name, data)


world("torchrun", [("RANK", "5"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "1"), ("LOCAL_WORLD_SIZE", "4"),
                   ("MASTER_ADDR", "node0"), ("MASTER_PORT", "29500")], secret=True)
world("slurm-step", [("SLURM_STEP_ID", "0"), ("SLURM_PROCID", "5"), ("SLURM_STEP_NUM_TASKS", "7"),
                     ("SLURM_LOCALID", "1"), ("SLURM_NODEID", "2"), ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
                     ("SLURM_STEP_NODELIST", "gpu[01-03],cpu9")])
world("open-mpi", [("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4"),
                   ("OMPI_COMM_WORLD_LOCAL_RANK", "1"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "2")])
world("mpich", [("PMI_RANK", "1"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "2")])
world("kubeflow", [("PET_NNODES", "4"), ("PET_NODE_RANK", "2"), ("PET_NPROC_PER_NODE", "1"),
                   ("PET_MASTER_ADDR", "node0"), ("PET_MASTER_PORT", "29500")])
world("explicit", [("NCCL_TRAMPOLINE_RANK", "1"), ("NCCL_TRAMPOLINE_WORLD_SIZE", "2"),
                   ("NCCL_TRAMPOLINE_LOCAL_RANK", "1"), ("NCCL_TRAMPOLINE_LOCAL_SIZE", "2"),
                   ("NCCL_TRAMPOLINE_ROOT", "node0:29600")], secret=True)

# rendezvous_root: [start 0-4] [len 0-4] [write chunk 0-48] then steps:
#   0 bytes [len] ..., 1 hello [in range?] [rank], 2 proof [valid], 3 ack [valid], 4 pause
HONEST = [1, 1, 3, 4, 2, 1, 4, 3, 1]
write("rendezvous_root", "served", [1, 3, 0] + HONEST)
write("rendezvous_root", "served-in-pieces", [1, 3, 5] + HONEST)
write("rendezvous_root", "wrong-proof", [1, 3, 0, 1, 1, 3, 4, 2, 0])
write("rendezvous_root", "wrong-rank", [1, 3, 0, 1, 1, 9])
write("rendezvous_root", "not-the-protocol", [1, 3, 0, 0, 44] + list(b"GET / HTTP/1.1\r\n\r\n".ljust(44, b" ")))

# rendezvous_rank: [small rank?] [rank 0-9] then steps: 1 challenge, 2 wrong rank, 3 deny, 4 id [valid]
write("rendezvous_rank", "served", [1, 5, 1, 4, 1])
write("rendezvous_rank", "denied", [1, 5, 1, 3])
write("rendezvous_rank", "wrong-rank", [1, 5, 2])
write("rendezvous_rank", "forged-id", [1, 5, 1, 4, 0])

# rendezvous_file: a record made with the harness's key, as it is (parsed whole); and an id, a
# time, [bit to flip], [file holds the record?], [job starts at that time?] [or at this one]
key = hmac.new(b"nccl-trampoline rendezvous key v2", b"nccl-trampoline harness", hashlib.sha256).digest()
ident = bytes((i * 37 & 0xff) ^ 0x5a for i in range(128))
when = struct.pack(">Q", 1_700_000_000_000_000_000)
tag = hmac.new(key, b"file" + when + ident, hashlib.sha256).digest()
record = list(b"NTRVFIL2" + when + ident + tag)
write("rendezvous_file", "record", record)
write("rendezvous_file", "through-the-file", list(ident) + u64(1_700_000_000_000_000_000) + [0, 7, 1, 1])
write("rendezvous_file", "older-than-the-job", list(ident) + u64(5) + [1, 0, 1, 0] + u64(6))

# config_encode: [version kind] [version index] [config?] then [count] and per setting
#   config: 0 blocking [b], 1 ctas [min] [max], 4 trafficClass [x], 5 splitShare [b],
#           7 field [from the table?] [index] [x]
#   collective config: 0 ctas, 1 nvlsCTAs, 2 cgaClusterSize, 4 forceAlgSelection [b],
#           5 CTAPolicy, 6 userProfilerTag [u64], 7 launchCompletionEvent [u64]
VERSIONS = [(2, 13, 4), (2, 14, 3), (2, 16, 5), (2, 17, 1), (2, 18, 3), (2, 26, 2), (2, 27, 3), (2, 28, 3),
            (2, 29, 2), (2, 30, 3), (2, 30, 7), (2, 31, 2), (2, 32, 3), (2, 33, 0), (3, 0, 0)]
NVLS_CTAS = 11  # index of nvlsCTAs in ncclConfig_t's table
write("config_encode", "config-2.28.3", [0, VERSIONS.index((2, 28, 3)), 1, 3, 0, 0, 1] + i32(1) + i32(4)
      + [7, 1, NVLS_CTAS] + i32(16))
write("config_encode", "config-2.18.3-traffic-class", [0, VERSIONS.index((2, 18, 3)), 1, 1, 4] + i32(3))
write("config_encode", "config-2.13.4", [0, VERSIONS.index((2, 13, 4)), 1, 0])
write("config_encode", "coll-config-2.32.3", [0, VERSIONS.index((2, 32, 3)), 0, 4, 0] + i32(2) + i32(8)
      + [4, 0, 6] + u64(0x1234) + [7] + u64(0x7000_0000))
write("config_encode", "coll-config-2.31.2-event", [0, VERSIONS.index((2, 31, 2)), 0, 1, 7] + u64(0x7000_0000))

# cli_options: [perf?] [count] then per word [1-3: a known word] [index]; [nranks kind]
WORDS = [
    "perf", "doctor", "selftest", "probe", "all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter",
    "alltoall", "gather", "scatter", "sendrecv", "-b", "-e", "-i", "-f", "-g", "-t", "-n", "-w", "-m", "-c", "-o",
    "-d", "-r", "-z", "-a", "-C", "-G", "-J", "--json", "--procs", "--library", "--watchdog", "--procs-rank",
    "--no-gpu", "--count", "--help", "--version", "all", "float", "int8", "double", "bfloat16", "sum", "avg", "0",
    "1", "2", "8", "1K", "1M", "1G", "1T", "256T", "257T", "18446744073709551615", "1e300", "1e-9", "inf", "NaN",
]


def cli(name, perf, words, nranks_kind, text=b""):
    data = [int(perf), len(words)]
    for w in words:
        data += [0, WORDS.index(w)]
    write("cli_options", name, data + [nranks_kind] + list(text))


cli("perf-all-reduce", True, ["all_reduce", "-b", "8", "-e", "1G", "-f", "2", "-g", "2"], 1, b"64K")
cli("perf-all-gather-all-types", True, ["all_gather", "-d", "all", "-o", "all", "-b", "1K"], 2, b"2.5")
cli("perf-broadcast-watchdog", True, ["broadcast", "-r", "1", "--watchdog", "1e-9"], 1)
cli("selftest", False, ["selftest", "--no-gpu", "--count", "8"], 0)
cli("doctor", False, ["doctor"], 0)

# aggregate_layout: [aggregates 1-3] then per aggregate [builder?] and, for the builder,
#   [members] per member [kind: 0 field, 1 array, 2 aligned array] [inner?] [type] ...,
#   [struct attribute?]; then [args] per argument [inner?] [type]; [returned?]
I8, I32, I64, F32, F64, LONG_DOUBLE = 0, 4, 6, 9, 10, 13
# (a struct attribute or an inner struct is taken on a ratio byte of 0: write 1 for "no")
write("aggregate_layout", "ldiv-t", [0, 1, 2, 0, I64, 0, I64, 1, 2, 1, I32, 1, I64, 1])
write("aggregate_layout", "hfa-of-doubles", [0, 1, 3, 0, F64, 0, F64, 0, F64, 1, 1, 1, F32, 1])
write("aggregate_layout", "nested-long-double", [1, 1, 2, 0, I8, 0, LONG_DOUBLE, 1,
                                                 1, 2, 0, 0, 0, 0, 1, I8, 1, 1, 1, F64, 0])
