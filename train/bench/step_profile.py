"""Where one training step's GPU time goes, from Nsight Compute's per-kernel durations.

Reads the CSV of

    ncu --csv --metrics gpu__time_duration.sum -c 12000 nibble train ... --steps 2 > ncu.csv

(plain or .xz), takes the last whole step (the kernels after one optimizer
update up to and with the next: the optimizer's multi-tensor kernels mark
the updates, so the profile must hold at least two steps), and prints its
kernel time by kind and by kernel, with counts. Nsight Compute runs the
kernels one at a time at base clocks, so the total exceeds the step's wall
time; the shares are what to read.

    python3 train/bench/step_profile.py ncu.csv.xz [--top 30] [--json out.json]
"""
import argparse
import collections
import csv
import io
import json
import lzma
import os
import signal
import sys

# Kind of a kernel by the first pattern its name holds (lower case), in this order.
KINDS = [
    ("quantized GEMM", ("wgmma_gemm", "mma_sync_gemm", "gemm_kernel<")),
    ("B decoded once", ("predecode_b",)),
    ("quantize", ("quantize",)),
    ("attention", ("flash",)),
    ("LayerNorm", ("layer_norm", "gammabeta")),
    ("GELU", ("gelu",)),
    ("optimizer", ("multi_tensor_apply",)),
    ("cuBLAS", ("nvjet", "sgemm", "cutlass")),
    ("fill", ("fillfunctor",)),
    ("copy, cast", ("copy", "catarray")),
    ("add", ("functor_add",)),
]
OPTIMIZER = "multi_tensor_apply"


def fail(message):
    sys.stderr.write(f"step_profile: error: {message}\n")
    sys.exit(2)


def kind(name):
    low = name.lower()
    for k, patterns in KINDS:
        if any(p in low for p in patterns):
            return k
    return "other"


def read_kernels(path):
    """[(name, microseconds)] in launch order."""
    try:
        opener = lzma.open if path.endswith(".xz") else open
        with opener(path, "rt") as f:
            text = f.read()
    except (OSError, lzma.LZMAError, UnicodeDecodeError) as e:
        fail(f"cannot read {path}: {e}")
    # ncu prints its own log lines before the CSV; the CSV's lines are quoted.
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"')))))
    if not rows or not {"Kernel Name", "Metric Name", "Metric Unit", "Metric Value"} <= set(rows[0]):
        fail(f"{path} is not Nsight Compute's --csv output")
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6, "nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
    kernels = []
    for r in rows:
        if r["Metric Name"] != "gpu__time_duration.sum":
            continue
        unit = scale.get(r["Metric Unit"])
        try:
            value = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            unit = None
        if unit is None:
            fail(f"{path}: kernel {r['Kernel Name'][:60]} has duration '{r['Metric Value']} {r['Metric Unit']}'")
        kernels.append((r["Kernel Name"], value * unit))
    if not kernels:
        fail(f"{path} holds no gpu__time_duration.sum values")
    return kernels


def last_step(kernels):
    """The kernels after the second-to-last optimizer update, through the last one."""
    groups = []  # [first, last] index of each run of consecutive optimizer kernels
    for i, (name, _) in enumerate(kernels):
        if OPTIMIZER in name:
            if groups and groups[-1][1] == i - 1:
                groups[-1][1] = i
            else:
                groups.append([i, i])
    if len(groups) < 2:
        fail(f"the profile holds {len(groups)} optimizer update(s); profile at least two steps (--steps 2)")
    return kernels[groups[-2][1] + 1:groups[-1][1] + 1]


def summarize(step):
    total = sum(t for _, t in step)
    by_kind, by_name, count = collections.Counter(), collections.Counter(), collections.Counter()
    for name, t in step:
        by_kind[kind(name)] += t
        short = name.split("(")[0] if "(" in name else name
        by_name[short] += t
        count[short] += 1
    return {
        "kernels": len(step),
        "total_us": total,
        "kinds": [{"kind": k, "us": v, "share": v / total} for k, v in by_kind.most_common()],
        "by_kernel": [{"kernel": k, "us": v, "count": count[k], "share": v / total} for k, v in by_name.most_common()],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --csv output (plain or .xz)")
    ap.add_argument("--top", type=int, default=30, help="kernels listed by name (default 30)")
    ap.add_argument("--json", help="write the summary here too")
    a = ap.parse_args()
    if a.top < 0:
        fail(f"--top must be 0 or more, got {a.top}")
    s = summarize(last_step(read_kernels(a.csv)))
    print(f"last whole step: {s['kernels']} kernels, {s['total_us'] / 1e3:.2f} ms of kernel time\n")
    print("| kind | ms | share |\n|---|---|---|")
    for k in s["kinds"]:
        print(f"| {k['kind']} | {k['us'] / 1e3:.2f} | {100 * k['share']:.1f} % |")
    if a.top:
        print("\n| kernel | calls | ms | µs a call | share |\n|---|---|---|---|---|")
        for k in s["by_kernel"][:a.top]:
            print(f"| {k['kernel'][:90]} | {k['count']} | {k['us'] / 1e3:.3f} | {k['us'] / k['count']:.1f} "
                  f"| {100 * k['share']:.1f} % |")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump(dict(s, source=os.path.basename(a.csv)), f, indent=2)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a reader that stops early (| head) ends the table quietly
    main()
