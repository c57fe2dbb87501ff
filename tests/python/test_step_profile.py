"""train/bench/step_profile.py on Nsight Compute CSV written here: the last whole step
found between optimizer updates, every kernel's time summed by kind and by name, and
bad input refused with exit status 2."""
import csv
import io
import json
import lzma
import os
import subprocess
import sys

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
OPT = "void at::multi_tensor_apply_kernel<FusedAdam>(T1, T2)"
GEMM = "void detail::wgmma_gemm_kernel<wgmma::TileShape<128>, 16, 0, 1>(detail::Args)"
QUANT = "void cuda::quantize_tile_kernel<0, 0, 1, 3>(cuda::QuantizeArgs)"
LN = "train::add_layer_norm_backward_rows_kernel<24, 1>(const float *)"
MISC = "void my_kernel(int)"


def ncu_csv(kernels, unit="ns"):
    out = io.StringIO()
    out.write("==PROF== Connected to process 1234 (nibble)\n==PROF== Profiling \"kernel\": 0%\n")
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(HEADER)
    for i, (name, t) in enumerate(kernels):
        w.writerow([i, 1234, "nibble", "host", name, 1, 7, "(256, 1, 1)", "(132, 1, 1)", 0, "9.0",
                    "Command line profiler metrics", "gpu__time_duration.sum", unit, f"{t:,}"])
    return out.getvalue()


def profile(source_dir, path, *args):
    return subprocess.run([sys.executable, os.path.join(source_dir, "train", "bench", "step_profile.py"),
                           str(path), *args], capture_output=True, text=True)


def test_last_step_by_kind_and_kernel(source_dir, rng, tmp_path, cases):
    # Three steps: the first's kernels (and its optimizer update) must not count.
    first = [(GEMM, 999_999), (OPT, 5_000), (OPT, 5_000)]
    times = {GEMM: rng.integers(1_000, 100_000, 5), QUANT: rng.integers(1_000, 9_000, 7),
             LN: rng.integers(1_000, 9_000, 3), MISC: rng.integers(1_000, 9_000, 2)}
    step = [(name, int(t)) for name in (GEMM, QUANT, LN, MISC) for t in times[name]]
    order = rng.permutation(len(step))
    step = [step[i] for i in order] + [(OPT, 2_000), (OPT, 3_000)]
    path = tmp_path / "ncu.csv.xz"
    with lzma.open(path, "wt") as f:
        f.write(ncu_csv(first + [(QUANT, 777_777), (OPT, 4_000)] + step))
    out = tmp_path / "s.json"
    p = profile(source_dir, path, "--json", str(out), "--top", "3")
    cases.check(p.returncode == 0, p.stdout + p.stderr)
    s = json.loads(out.read_text())
    cases.check(s["kernels"] == len(step), f"{s['kernels']} kernels, expected {len(step)}")
    total_ns = sum(t for _, t in step)
    cases.check(abs(s["total_us"] - total_ns / 1e3) < 1e-6, f"total {s['total_us']}")
    want = {"quantized GEMM": times[GEMM].sum(), "quantize": times[QUANT].sum(), "LayerNorm": times[LN].sum(),
            "other": times[MISC].sum(), "optimizer": 5_000}
    got = {k["kind"]: k["us"] for k in s["kinds"]}
    cases.check(set(got) == set(want), f"kinds {sorted(got)}")
    for k, ns in want.items():
        cases.check(abs(got[k] - ns / 1e3) < 1e-6, f"{k}: {got[k]} us, expected {ns / 1e3}")
    calls = {k["kernel"]: k["count"] for k in s["by_kernel"]}
    cases.check(calls["void detail::wgmma_gemm_kernel<wgmma::TileShape<128>, 16, 0, 1>"] == 5, str(calls))
    cases.check(calls["void at::multi_tensor_apply_kernel<FusedAdam>"] == 2, str(calls))
    shares = sum(k["share"] for k in s["kinds"])
    cases.check(abs(shares - 1.0) < 1e-9, f"shares sum to {shares}")
    table = [l for l in p.stdout.splitlines() if l.startswith("| ") and "µs a call" not in l and "kind" not in l]
    cases.check(len(table) == len(want) + 3, p.stdout)


def test_bad_input_exits_2(source_dir, tmp_path, cases):
    one_step = tmp_path / "one.csv"
    one_step.write_text(ncu_csv([(GEMM, 10), (OPT, 1)]))
    not_ncu = tmp_path / "other.csv"
    not_ncu.write_text('"a","b"\n"1","2"\n')
    bad_unit = tmp_path / "unit.csv"
    bad_unit.write_text(ncu_csv([(GEMM, 10), (OPT, 1), (GEMM, 10), (OPT, 1)], unit="cycle"))
    corrupt = tmp_path / "x.csv.xz"
    corrupt.write_bytes(b"not xz at all")
    for path, args, message in [(tmp_path / "missing.csv", [], "cannot read"),
                                (corrupt, [], "cannot read"),
                                (not_ncu, [], "is not Nsight Compute's --csv output"),
                                (one_step, [], "holds 1 optimizer update(s)"),
                                (bad_unit, [], "has duration '10 cycle'"),
                                (one_step, ["--top", "-1"], "--top must be 0 or more")]:
        p = profile(source_dir, path, *args)
        cases.check(p.returncode == 2 and "step_profile: error: " in p.stderr and message in p.stderr,
                    f"{path.name} {args}: exit {p.returncode}: {p.stderr}")
