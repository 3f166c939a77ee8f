#!/usr/bin/env python3
"""`nccl-trampoline perf` beside nccl-tests, run with the same arguments and library.

    perf-compare.py THEIRS.txt OURS.txt [THEIRS.json OURS.json]

THEIRS.txt / OURS.txt: the standard output of nccl-tests' `<collective>_perf` and of
`nccl-trampoline perf <collective>`; the .json files: their `-J` documents.

The table: the same lines in the same order; each comment line the same once its numbers,
process ids, host names and paths are masked; each row the same columns ending at the same
character, the same size, count, type, op and root, and no wrong element in either. The JSON
documents: the same keys in the same order at every level, each value of the same JSON type,
the same results (size, count, type, redop, root) and no wrong element. The times are
printed side by side (ours over theirs), for the reader to judge: a benchmark is not a test.

Exit status 1 when anything but the numbers differs, or an element was wrong.
"""

import json
import re
import sys

NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?|\b(inf|nan)\b")


def masked(line):
    """A comment line with what differs between runs masked."""
    line = re.sub(r"Pid +\d+ on +\S+", "Pid P on H", line)
    line = re.sub(r"Writing JSON output to .*", "Writing JSON output to F", line)
    line = re.sub(r"nccl-headers=\d+", "nccl-headers=V", line)
    return NUMBER.sub("N", line)


def ends(line):
    """Where each column ends (right-aligned columns end at the same character)."""
    return [m.end() for m in re.finditer(r"\S+", line)]


def table(theirs, ours):
    problems = []
    a, b = theirs.splitlines(), ours.splitlines()
    if len(a) != len(b):
        problems.append(f"{len(a)} lines beside {len(b)}")
    rows = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x.startswith("#") or not x.strip():
            if masked(x) != masked(y):
                problems.append(f"line {i + 1}:\n  theirs {x!r}\n  ours   {y!r}")
            continue
        tx, ty = x.split(), y.split()
        if ends(x) != ends(y) or len(tx) != len(ty) or tx[:5] != ty[:5]:
            problems.append(f"row {i + 1}:\n  theirs {x!r}\n  ours   {y!r}")
            continue
        # 13 columns; 21 with -I (four more per placement); two more with -S (date, time).
        inp = 13 if len(tx) in (21, 23) else 9
        for t in (tx, ty):
            if any(w not in ("0", "N/A") for w in (t[8], t[inp + 3])):
                problems.append(f"row {i + 1}: wrong elements: {' '.join(t)}")
        rows.append((int(tx[0]), float(tx[5]), float(ty[5]), float(tx[inp]), float(ty[inp])))
    return problems, rows


def shape(x, y, path, problems):
    """The same keys in the same order and the same JSON types, recursively."""
    if type(x) is not type(y) and not (isinstance(x, (int, float)) and isinstance(y, (int, float))):
        problems.append(f"{path}: {type(x).__name__} beside {type(y).__name__}")
        return
    if isinstance(x, dict):
        if list(x) != list(y):
            problems.append(f"{path}: keys {list(x)} beside {list(y)}")
        for k in x:
            if k in y:
                shape(x[k], y[k], f"{path}.{k}", problems)
    elif isinstance(x, list) and path not in ("$.args", "$.env"):
        if len(x) != len(y):
            problems.append(f"{path}: {len(x)} items beside {len(y)}")
        for i, (p, q) in enumerate(zip(x, y)):
            shape(p, q, f"{path}[{i}]", problems)


def documents(theirs, ours):
    problems = []
    shape(theirs, ours, "$", problems)
    for i, (x, y) in enumerate(zip(theirs.get("results", []), ours.get("results", []))):
        for k in ("size", "count", "type", "redop", "root"):
            if x.get(k) != y.get(k):
                problems.append(f"results[{i}].{k}: {x.get(k)!r} beside {y.get(k)!r}")
        for p in ("out_of_place", "in_place"):
            for d in (x, y):
                if (d.get(p) or {}).get("nwrong") not in (0, 0.0, None):
                    problems.append(f"results[{i}].{p}.nwrong = {d[p]['nwrong']}")
    return problems


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    read = lambda p: open(p, encoding="utf-8", errors="replace").read()
    problems, rows = table(read(sys.argv[1]), read(sys.argv[2]))
    if len(sys.argv) == 5:
        problems += documents(json.loads(read(sys.argv[3])), json.loads(read(sys.argv[4])))
    print(f"{'size (B)':>12}  {'theirs (us)':>11}  {'ours (us)':>10}  {'ratio':>6}  "
          f"{'in-place theirs':>15}  {'ours':>10}  {'ratio':>6}")
    for size, t0, o0, t1, o1 in rows:
        r0 = o0 / t0 if t0 else float("nan")
        r1 = o1 / t1 if t1 else float("nan")
        print(f"{size:>12}  {t0:>11.2f}  {o0:>10.2f}  {r0:>6.3f}  {t1:>15.2f}  {o1:>10.2f}  {r1:>6.3f}")
    for p in problems:
        print("DIFFERS  " + p)
    print(f"{'SAME' if not problems else 'DIFFERENT'}: {len(rows)} rows compared, {len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
