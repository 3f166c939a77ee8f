#!/usr/bin/env python3
"""Turns the JSON of scripts/gpu-perf.sh into the tables of docs/perf.md.

Usage: scripts/perf-report.py LOG_DIR

Reads <impl>-<round>.json (the sweeps) and enqueue-<impl>-<round>.json (host enqueue time)
for impl in trampoline, c, cudarc. Per size and implementation it reports the median over the
rounds of the per-iteration time (and the minimum), the busbw of that median, and the ratios
to C; then the host enqueue time per iteration. Lines before the first "{" (NCCL's version
banner on stdout) are skipped.
"""
import glob
import json
import os
import statistics
import sys

IMPLS = [("trampoline", "nccl-trampoline"), ("c", "C"), ("cudarc", "cudarc")]


def load(path):
    text = open(path).read()
    return json.JSONDecoder().raw_decode(text[text.index("{"):])[0]


def rounds(log, prefix):
    out = {}
    for key, _ in IMPLS:
        files = sorted(glob.glob(os.path.join(log, f"{prefix}{key}-[0-9]*.json")))
        out[key] = [load(f) for f in files]
    return out


def per_size(docs, placement):
    """size -> list over rounds of (time_us, cpu_us)."""
    table = {}
    for d in docs:
        for r in d["results"]:
            m = r[placement]
            # perf's -J document (nccl-tests' version 3: "time", or "cpu_time" with -C 1) or the
            # comparison programs' own ("time_us", "cpu_us").
            if "time_us" in m:
                t, c = m["time_us"], m["cpu_us"]
            else:
                t = m.get("time", m.get("cpu_time"))
                c = m.get("cpu_time", t)
            table.setdefault(r["size"], []).append((t, c))
    return table


def busbw(size, time_us, nranks=2):
    return size / 1e9 / (time_us * 1e-6) * 2 * (nranks - 1) / nranks


def human(n):
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s:
            return f"{n // s} {unit}"
    return f"{n} B"


def sweep_table(log, placement):
    docs = rounds(log, "")
    data = {k: per_size(v, placement) for k, v in docs.items()}
    sizes = sorted(data["c"])
    n = len(docs["c"])
    print(f"\n#### {placement.replace('_', '-')}: median of {n} rounds (min in brackets), time in us\n")
    print("| size | C time | nccl-trampoline time | cudarc time | trampoline / C | cudarc / C "
          "| C busbw | trampoline busbw | cudarc busbw |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = []
    for s in sizes:
        med = {k: statistics.median(t for t, _ in data[k][s]) for k in data}
        mn = {k: min(t for t, _ in data[k][s]) for k in data}
        rt, rc = med["trampoline"] / med["c"], med["cudarc"] / med["c"]
        worst.append((s, rt, med["trampoline"] / med["cudarc"]))
        print(f"| {human(s)} | {med['c']:.2f} ({mn['c']:.2f}) | {med['trampoline']:.2f} ({mn['trampoline']:.2f}) "
              f"| {med['cudarc']:.2f} ({mn['cudarc']:.2f}) | {rt:.3f} | {rc:.3f} "
              f"| {busbw(s, med['c']):.2f} | {busbw(s, med['trampoline']):.2f} | {busbw(s, med['cudarc']):.2f} |")
    big = [w for w in worst if w[0] >= 64 << 20]
    print(f"\nFrom 64 MiB up, busbw of nccl-trampoline / C: "
          f"{min(1 / w[1] for w in big):.4f} .. {max(1 / w[1] for w in big):.4f}. "
          f"Time ratio to C over all sizes: {min(w[1] for w in worst):.3f} .. {max(w[1] for w in worst):.3f}; "
          f"sizes above 1.02: {sum(1 for w in worst if w[1] > 1.02)} of {len(worst)}. "
          f"Time ratio to cudarc: {min(w[2] for w in worst):.3f} .. {max(w[2] for w in worst):.3f}.")


def enqueue_table(log):
    docs = rounds(log, "enqueue-")
    n = len(docs["c"])
    print(f"\n#### Host enqueue time: 8 B, 5000 iterations per round, {n} rounds (one iteration: "
          "ncclGroupStart, two ncclAllReduce, ncclGroupEnd)\n")
    print("| implementation | per round, us per iteration | min | median | median - C's, ns per iteration |")
    print("|---|---|---:|---:|---:|")
    def cpu(m):
        return m["cpu_us"] if "cpu_us" in m else m["cpu_time"]
    cpus = {key: [cpu(d["results"][0]["out_of_place"]) for d in docs[key]] for key, _ in IMPLS}
    med = {key: statistics.median(v) for key, v in cpus.items()}
    for key, name in IMPLS:
        per_round = " ".join(f"{c:.3f}" for c in cpus[key])
        diff = "" if key == "c" else f"{(med[key] - med['c']) * 1000:+.0f}"
        print(f"| {name} | {per_round} | {min(cpus[key]):.3f} | {med[key]:.3f} | {diff} |")


if __name__ == "__main__":
    log = sys.argv[1] if len(sys.argv) > 1 else "perf-logs"
    sweep_table(log, "out_of_place")
    sweep_table(log, "in_place")
    enqueue_table(log)
