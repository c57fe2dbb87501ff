#!/usr/bin/env python3
"""`nibble report` end to end.

1. Runs `nibble report` twice: on the repository's recorded results, and on
   tests/report/fixture (made-up training and area records that exercise the
   readers, the training and hardware sections and the trade-off plot).
2. Renders each page in headless Chromium: the screenshot exists and is not
   blank; in the dumped DOM every figure listed in report.json is an <svg> with
   plotted paths, every table has rows, and sections without data say so.
3. Checks the data behind the figures against the commands that produce them:
   `nibble quant` with the report's equivalent command gives the same matrix and
   chain numbers; the figure CSVs equal the JSON; `nibble gemm` gives the cycle
   counts of the sweep; the trade-off CSV holds the fixture's loss gaps; the
   training step on the array (section 9) is what `nibble workload` gives for
   the same model, recipe, mask and energy file, beside the study's loss gap.
4. Checks the templates: every prose fragment the report's sources ask for is
   defined in its template, and no page holds an unrendered tag or text escaped twice.
Exit 77 (skipped) with a message where chromium or gnuplot is not installed.
"""
import argparse
import csv
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser

failures = []
checks = 0


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


class Dom(HTMLParser):
    """Figures (with their <svg> path counts), tables (with body row counts), sections."""

    def __init__(self):
        super().__init__()
        self.figures, self.tables, self.absent, self.sources = {}, {}, [], {}
        self.fig = self.table = None
        self.in_svg = self.in_tbody = False
        self.section = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("data-section")
        if "data-source" in a and self.section:
            self.sources[self.section] = a["data-source"]
        if "data-absent" in a:
            self.absent.append(a["data-absent"])
        if tag == "figure" and "data-figure" in a:
            self.fig = a["data-figure"]
            self.figures[self.fig] = {"svg": 0, "paths": 0}
        elif tag == "svg" and self.fig:
            self.figures[self.fig]["svg"] += 1
            self.in_svg = True
        elif tag == "path" and self.in_svg and len(a.get("d", "").split()) >= 4:
            self.figures[self.fig]["paths"] += 1
        elif tag == "table" and "data-table" in a:
            self.table = a["data-table"]
            self.tables[self.table] = 0
        elif tag == "tbody":
            self.in_tbody = True
        elif tag == "tr" and self.table and self.in_tbody:
            self.tables[self.table] += 1

    def handle_endtag(self, tag):
        if tag == "figure":
            self.fig = None
        elif tag == "svg":
            self.in_svg = False
        elif tag == "table":
            self.table = None
        elif tag == "tbody":
            self.in_tbody = False


def png_is_nontrivial(path):
    """A PNG whose decoded pixels are not one colour (stdlib only)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return False, "not a PNG"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 4
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
            bpp = {2: 3, 6: 4, 0: 1, 4: 2}.get(body[9], 4)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp + 1
    # Unfilter only filter type 0/1/2 rows is not needed: count distinct bytes of
    # the filtered stream and the share of rows that are not pure filler.
    distinct = len(set(raw))
    busy_rows = sum(1 for y in range(height) if len(set(raw[y * stride + 1:(y + 1) * stride])) > 1)
    return distinct > 16 and busy_rows > height // 20, f"{width}x{height}, {distinct} distinct bytes, {busy_rows} busy rows"


def render(chromium, out, page):
    shot = os.path.join(out, "screenshot.png")
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    url = "file://" + os.path.abspath(page)
    run(base + [f"--screenshot={shot}", "--window-size=1200,3000", url])
    dom = run(base + ["--dump-dom", url]).stdout
    return shot, dom


def close(a, b, rel=1e-12):
    if a is None or b is None:
        return a is None and b is None
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def check_page(chromium, out, expect_sections):
    report = json.load(open(os.path.join(out, "report.json")))
    shot, dom_text = render(chromium, out, os.path.join(out, "index.html"))
    check(os.path.exists(shot) and os.path.getsize(shot) > 20000, f"{out}: screenshot missing or tiny")
    ok, why = png_is_nontrivial(shot)
    print("screenshot:", why)
    check(ok, f"{out}: screenshot looks blank ({why})")
    page = open(os.path.join(out, "index.html")).read()
    check("{{" not in page and "}}" not in page, f"{out}: a template tag was left unrendered")
    for twice in ("&amp;amp;", "&amp;lt;", "&amp;gt;", "&amp;quot;"):
        check(twice not in page, f"{out}: text escaped twice ({twice})")
    dom = Dom()
    dom.feed(dom_text)
    figs = [f["id"] for s in report["sections"] for f in s["figures"]]
    data = [f["data"] for s in report["sections"] for f in s["figures"]]
    tables = [t["id"] for s in report["sections"] for t in s["tables"]]
    check(len(figs) > 0 and len(tables) > 0, f"{out}: report.json lists no figures or tables")
    for f in figs:
        got = dom.figures.get(f)
        check(got is not None, f"{out}: figure {f} missing from the page")
        if got:
            check(got["svg"] == 1 and got["paths"] >= 3, f"{out}: figure {f} has no plotted paths ({got})")
    for d in data:
        check(os.path.exists(os.path.join(out, d)) and os.path.getsize(os.path.join(out, d)) > 0, f"{out}: {d} empty")
    for t in tables:
        check(dom.tables.get(t, 0) > 0, f"{out}: table {t} missing or empty")
    for sid, want in expect_sections.items():
        check(dom.sources.get(sid) == want, f"{out}: section {sid} source is {dom.sources.get(sid)}, expected {want}")
        if want == "absent":
            check(any(True for _ in dom.absent), f"{out}: absent section {sid} without a note")
    print(f"{out}: {len(figs)} figures, {len(tables)} tables checked in the DOM")
    return report


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def check_quant(nibble, out, work):
    q = json.load(open(os.path.join(out, "data", "quant.json")))
    args = q["equivalent_command"].split()[1:]
    args[args.index("FILE")] = os.path.join(work, "quant.json")
    run([nibble] + args)
    ref = json.load(open(os.path.join(work, "quant.json")))
    check(len(q["rows"]) == len(ref["rows"]) > 0, "quant rows differ in number")
    keys = ["sqnr_db", "delta_sqnr_rht", "nmse", "alpha", "rel_mag_error", "code_entropy_bits", "b_eff"]
    n = 0
    for a, b in zip(q["rows"], ref["rows"]):
        for k in ["input", "format", "scale", "block", "rht", "rounding"]:
            check(a[k] == b[k], f"quant row label {k}: {a[k]} vs {b[k]}")
        for k in keys:
            check(close(a[k], b[k]), f"quant {a['input']} {a['format']} {a['rht']} {a['rounding']} {k}: {a[k]} vs {b[k]}")
            n += 1
    print(f"quant matrix: {n} numbers equal to `nibble quant`")
    check(len(q["chain"]["runs"]) == len(ref["chain"]["runs"]) > 0, "chain runs differ in number")
    for a, b in zip(q["chain"]["runs"], ref["chain"]["runs"]):
        for da, db in zip(a["depths"], b["depths"]):
            check(close(da["eta"], db["eta"]) and close(da["cosine"], db["cosine"]), f"chain {a['format']} {a['rht']}")
    # The figure CSVs are the JSON's numbers.
    eta = read_csv(os.path.join(out, "data", "chain_eta.csv"))
    for run_ in q["chain"]["runs"]:
        col = run_["format"] + (" no-rht" if run_["rht"] == "off" else " rht" + run_["rht"])
        for d, row in zip(run_["depths"], eta):
            check(close(float(row[col]), d["eta"], 1e-8), f"chain_eta.csv {col} depth {d['depth']}")
    alpha = {r["input"]: r for r in read_csv(os.path.join(out, "data", "alpha_by_input.csv"))}
    for r in q["rows"]:
        if r["scale"] == "nvfp4" and r["rounding"] == "rne":
            col = r["format"] + (" no-rht" if r["rht"] == "off" else " rht" + r["rht"])
            check(close(float(alpha[r["input"]][col]), r["alpha"], 1e-8), f"alpha_by_input.csv {r['input']} {col}")
    mag = {r["input"]: r for r in read_csv(os.path.join(out, "data", "mag_error.csv"))}
    for r in q["rows"]:
        if r["scale"] == "nvfp4" and r["rht"] == "off":
            col = r["format"] + " " + r["rounding"]
            check(close(float(mag[r["input"]][col]), 100 * r["rel_mag_error"], 1e-8), f"mag_error.csv {r['input']} {col}")


def check_cycles(nibble, out, work):
    help_text = subprocess.run([nibble, "--help"], text=True, capture_output=True).stdout
    path = os.path.join(out, "data", "cycles.csv")
    if "gemm" not in help_text or not os.path.exists(path):
        print("cycles: this build has no SystemC model; not compared")
        return
    rows = read_csv(path)
    check(len(rows) >= 12, "cycle sweep too small")
    for r in rows:
        check(int(r["mismatches"]) == 0 and int(r["compared"]) > 0, f"sweep point {r['rows']}x{r['cols']} not checked")
    for r in (rows[1], rows[len(rows) // 2], rows[-1]):
        j = os.path.join(work, "gemm.json")
        run([nibble, "gemm", "--backend", "systemc", "--rows", r["rows"], "--cols", r["cols"], "--lanes", r["lanes"],
             "--bandwidth", r["bandwidth"], "--m", r["m"], "--n", r["n"], "--k", r["k"], "--format-a", "e2m1",
             "--format-b", "e2m1", "--scale", "nvfp4", "--block", "1x16", "--json", j])
        g = json.load(open(j))
        check(g["cycles"] == int(r["cycles"]), f"cycles {r['rows']}x{r['cols']} bw {r['bandwidth']}: "
                                              f"report {r['cycles']}, nibble gemm {g['cycles']}")
        check(close(g["utilization"], float(r["utilization"]), 1e-8), "utilization differs from nibble gemm")
    v = json.load(open(os.path.join(out, "data", "verification.json")))
    check(len(v["live"]) > 0 and all(l["compared"] > 0 and l["mismatches"] == 0 for l in v["live"]),
          f"live verification: {v['live']}")
    check(len(v["recorded"].get("checks", [])) > 0, "verification.json has no recorded checks")


def check_workload(nibble, out, work, results, source):
    """Section 9's numbers are `nibble workload`'s for the same model, recipe, masks and energy file."""
    help_text = subprocess.run([nibble, "--help"], text=True, capture_output=True).stdout
    if "workload" not in help_text:
        print("workload: this build has no cycle simulator; not compared")
        return
    report = json.load(open(os.path.join(out, "report.json")))
    check(any(s["id"] == "workload" for s in report["sections"]), f"{out}: no workload section")
    data = json.load(open(os.path.join(out, "data", "workload.json")))
    study = json.load(open(os.path.join(results, "training", "study", "summary.json")))
    rows = [r for r in data["rows"] if r["on_array"]]
    sizes = [z["name"] for z in study["sizes"]]
    check(len(rows) > 0 and {r["size"] for r in data["rows"]} == set(sizes), f"workload rows: {sizes}")
    energy = os.path.join(results, "energy-actions.json")
    priced = os.path.exists(energy)
    check(all((r["dpu_energy_pj"] is not None) == priced for r in rows), f"{out}: DPU energy priced iff recorded")
    memory = os.path.join(results, "energy-memory-cited.json")
    memory_priced = priced and os.path.exists(memory)
    check(all((r["memory_energy_pj"] is not None) == memory_priced for r in rows),
          f"{out}: SRAM and DRAM energy priced iff both files are recorded")
    # The largest size, every recipe on the array, all its masks in one call each.
    size = sizes[-1]
    compared = 0
    for recipe in sorted({r["recipe"] for r in rows if r["size"] == size}):
        mine = [r for r in rows if r["size"] == size and r["recipe"] == recipe]
        m = mine[0]["model"]
        j = os.path.join(work, "workload.json")
        cmd = [nibble, "workload", "--arch", data["arch"], "--layers", str(m["layers"]), "--d-model", str(m["d_model"]),
               "--ctx", str(m["ctx"]), "--batch", str(m["batch"]), "--mlp-mult", str(m["mlp_mult"]),
               "--recipe", recipe, "--json", j]
        for r in mine:
            cmd += ["--mask", r["mask"].replace("+", ",")]
        if priced:
            # The recorded file in place of the architecture's, with the architecture's choice of entries.
            cmd += ["--energy", energy] + (["--energy", memory] if memory_priced else [])
            choice = json.load(open(data["arch"])).get("energy", {})
            for key, flag in (("lane_design", "--energy-lane-design"), ("operands", "--energy-operands"),
                              ("scale_formats", "--energy-scale-formats")):
                if key in choice:
                    cmd += [flag, choice[key]]
        run(cmd)
        ref = {c["mask"]: c["total"] for c in json.load(open(j))["configurations"]}
        arm = [a for z in study["sizes"] if z["name"] == size for a in z["arms"] if a["recipe"] == recipe][0]
        for r in mine:
            t = ref[r["mask"]]
            what = f"workload {size} {recipe} {r['mask']}"
            check(r["gemm_cycles"] == t["gemm_cycles"], f"{what}: cycles {r['gemm_cycles']} vs {t['gemm_cycles']}")
            check(close(r["utilization"], t["utilization"]), f"{what}: utilization")
            check(r["quantizer_cycles"] == t["quantizer_cycles"], f"{what}: quantizer cycles")
            check(r["array_macs"] == t["array_macs"] and r["bf16_macs"] == t["bf16_macs"], f"{what}: MACs")
            check(r["dpu_block_ops"] == t["actions"]["dpu_block_op"] > 0, f"{what}: DPU operations")
            if priced:
                check(close(r["dpu_energy_pj"], t["energy"]["by_action_pj"]["dpu_block_op"]) and r["dpu_energy_pj"] > 0,
                      f"{what}: DPU energy {r['dpu_energy_pj']} vs {t['energy']['by_action_pj']['dpu_block_op']}")
            if memory_priced:
                by = t["energy"]["by_action_pj"]
                want = sum(by[a] for a in ("sram_read", "sram_write", "dram_read", "dram_write"))
                check(close(r["memory_energy_pj"], want) and want > 0,
                      f"{what}: SRAM and DRAM energy {r['memory_energy_pj']} vs {want}")
            check(r["gap"] == arm.get("gap"), f"{what}: the loss gap is not the study's")
            compared += 1
    check(compared >= 2, f"{out}: only {compared} workload rows compared")
    csv_rows = read_csv(os.path.join(out, "data", "workload.csv"))
    check(len(csv_rows) == len(data["rows"]), "workload.csv and workload.json differ in rows")
    print(f"workload: {compared} rows of {size} equal to `nibble workload`")


def check_fixture(out, fixture):
    summary = json.load(open(os.path.join(fixture, "training", "summary.json")))
    trade = read_csv(os.path.join(out, "data", "tradeoff.csv"))
    gaps = {r["name"]: r["gap"]["mean"] for r in summary["recipes"] if "gap" in r}
    seen = 0
    for r in trade:
        if r["series"] == "0":
            check(close(float(r["quality"]), 100 * gaps[r["recipe"]], 1e-8), f"trade-off gap of {r['recipe']}")
            seen += 1
    check(seen > 0, "trade-off has no training points")
    loss = read_csv(os.path.join(out, "data", "training_loss.csv"))
    check(len(loss) == 20 and set(loss[0]) == {"step", "bf16", "e2m1", "ufp4"}, "training_loss.csv shape")


def check_study(chromium, nibble, fx, fixture, work):
    """The scaling study beside the 6.4 M sweep while no size is complete, and alone once one is."""
    study = json.load(open(os.path.join(fixture, "training", "study", "summary.json")))
    report = json.load(open(os.path.join(fx, "report.json")))
    tables = {t["id"] for s in report["sections"] for t in s["tables"]}
    check({"training_study_gap", "training_study_pairs", "training_gap"} <= tables, f"study tables: {tables}")
    page = open(os.path.join(fx, "index.html")).read()
    check("No size of the study is complete yet" in page, "the kept 6.4 M sweep is not explained")
    first = study["sizes"][0]["pairs"][0]
    check(first["verdict"] in page and "inside the interval" in page, "the primary verdict or the paper's effect is missing")
    check(f"{study['runs']['planned']} runs planned" in page, "the run count is missing")
    gap = read_csv(os.path.join(fx, "data", "training_study_gap.csv"))
    e2m1 = [r for r in gap if r["size"] == "s5m" and r["recipe"] == "e2m1"]
    want = [a for a in study["sizes"][0]["arms"] if a["recipe"] == "e2m1"][0]["gap"]["mean"]
    check(len(e2m1) == 1 and close(float(e2m1[0]["g_pp"]), 100 * want, 1e-8), "training_study_gap.csv e2m1 at s5m")

    # A complete size retires the 6.4 M sweep; the trade-off then takes the study's gaps.
    done = os.path.join(work, "fixture-study-done")
    shutil.rmtree(done, ignore_errors=True)
    shutil.copytree(fixture, done)
    study["sizes"][0]["complete"] = True
    # ... and a size run on fewer seeds than the study's minimum says so, with its reason.
    check("fewer than the study's" not in page, "a reduction stated where no size is reduced")
    study["sizes"][0]["seeds"] = {"main": [0, 1, 2], "study_min": 5, "reduced_reason": "a fixture's reason."}
    study["runs"]["outside_plan"] = 2
    json.dump(study, open(os.path.join(done, "training", "study", "summary.json"), "w"))
    out = os.path.join(work, "study-done")
    run([nibble, "report", "--out", out, "--results", done, "--quiet"])
    check_page(chromium, out, {"training": "recorded", "tradeoff": "recorded"})
    report = json.load(open(os.path.join(out, "report.json")))
    tables = {t["id"] for s in report["sections"] for t in s["tables"]}
    check("training_gap" not in tables and "training_study_gap" in tables, f"6.4 M sweep not retired: {tables}")
    done_page = open(os.path.join(out, "index.html")).read()
    check("is retired from this section" in done_page, "retirement not stated")
    check("s5m runs seeds 0, 1, 2, fewer than the study's 5, because a fixture's reason." in done_page,
          "the reduced size's seeds and reason are missing")
    check("besides them 2 run(s) of seeds outside" in done_page, "the runs outside the plan are not counted")
    gaps = {a["recipe"]: a["gap"]["mean"] for a in study["sizes"][0]["arms"] if "gap" in a}
    trade = [r for r in read_csv(os.path.join(out, "data", "tradeoff.csv")) if r["series"] == "0"]
    check(len(trade) > 0, "the trade-off has no study points")
    for r in trade:
        check(close(float(r["quality"]), 100 * gaps[r["recipe"]], 1e-8), f"trade-off gap of {r['recipe']}")


def kernel_rows(results):
    """The recorded bench-kernels runs under results/kernels, by device: {device: [run, ...]}."""
    runs = {}
    d = os.path.join(results, "kernels")
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        try:
            j = json.load(open(os.path.join(d, f)))
        except ValueError:
            continue
        if j.get("schema") == "nibble-bench-kernels" and j.get("schema_version") == 1:
            runs.setdefault(j["device"]["name"], []).append(j)
    return runs


def check_kernels(out, results):
    """The GPU-kernels figure's bars are the recorded runs' mean ratios, recomputed here from the files."""
    runs = kernel_rows(results)
    check(len(runs) > 0, f"{results}: no recorded kernel runs to check against")
    device = json.load(open(os.path.join(out, "data", "kernels.json")))["gemm"][0]["gpu"]
    fig = read_csv(os.path.join(out, "data", "kernels_gemm.csv"))
    seen = 0
    for row in fig:
        for col, value in row.items():
            if not col.startswith("bit-exact "):
                continue
            recipe = col[len("bit-exact "):].replace(";", ",")
            want = [r["vs_baseline"] for j in runs[device] for r in j["rows"]
                    if r["section"] == "gemm" and r["library_default"] and r["recipe"] == recipe
                    and " × ".join(str(v) for v in r["shape"]) == row["shape"]]
            check(len(want) == len(runs[device]), f"kernels_gemm.csv {row['shape']} {recipe}: {len(want)} runs")
            check(close(float(value), sum(want) / len(want), 1e-8), f"kernels_gemm.csv {row['shape']} {recipe}")
            seen += 1
    check(seen > 0, f"{out}: kernels_gemm.csv has no bit-exact bars")
    tables = [s for s in json.load(open(os.path.join(out, "report.json")))["sections"] if s["id"] == "gpu-kernels"][0]["tables"]
    gemm_rows = [t["rows"] for t in tables if t["id"] == "kernels_gemm"]
    # Per device and shape: cuBLAS, both bounds, one default path per recipe, the emulation.
    want_rows = 0
    for dev, js in runs.items():
        for shape in {tuple(r["shape"]) for r in js[0]["rows"] if r["section"] == "gemm"}:
            rows = [r for r in js[0]["rows"] if r["section"] == "gemm" and tuple(r["shape"]) == shape]
            want_rows += sum(1 for r in rows if r["kind"] in ("yardstick", "bound") or
                             (r["kind"] == "kernel" and r["library_default"]))
            want_rows += any(r["kind"] == "emulation" for r in rows)
    check(gemm_rows == [want_rows], f"{out}: kernels_gemm has {gemm_rows} rows, expected {want_rows}")
    print(f"{out}: {seen} GPU-kernel bars checked against the recorded runs")


def check_fragments(source):
    """Every prose("template", "fragment") of report/src names a fragment its template defines: a rare
    path (an unreadable energy file, a bad architecture) would otherwise fail only when it happens."""
    import glob
    import re
    templates = {os.path.basename(t)[:-len(".mustache")]: open(t).read()
                 for t in glob.glob(os.path.join(source, "report", "templates", "*.mustache"))}
    used = set()
    for src in glob.glob(os.path.join(source, "report", "src", "*.*")):
        text = open(src).read()
        used |= set(re.findall(r'prose\(\s*"([a-z_]+)",\s*"([a-z_]+)"', text))
        for name in re.findall(r'render_template\(\s*"([a-z_]+)"', text):
            check(name in templates, f"{src}: no template {name}")
    check(len(used) > 50, f"only {len(used)} prose fragments found in report/src")
    for name, fragment in sorted(used):
        check("{{#" + fragment + "}}" in templates.get(name, ""), f"template {name} has no fragment {fragment}")
    print(f"prose: {len(used)} fragments used, each defined in its template")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nibble", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIPPED: chromium not found (scripts/setup.sh installs it); the report was not rendered")
        return 77
    if not shutil.which("gnuplot"):
        print("SKIPPED: gnuplot not found (scripts/setup.sh installs gnuplot-nox)")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    check_fragments(a.source)
    recorded = os.path.join(a.work, "recorded")
    run([a.nibble, "report", "--out", recorded, "--results", os.path.join(a.source, "docs", "results")])
    expect = {"formats": "computed", "compounding": "computed"}
    if os.path.exists(os.path.join(a.source, "docs", "results", "area-energy.json")):
        expect["hardware"] = "recorded"
    if kernel_rows(os.path.join(a.source, "docs", "results")):
        expect["gpu-kernels"] = "recorded"
    if "workload" in subprocess.run([a.nibble, "--help"], text=True, capture_output=True).stdout:
        expect["workload"] = "computed"
    check_page(chromium, recorded, expect)
    if "gpu-kernels" in expect:
        check_kernels(recorded, os.path.join(a.source, "docs", "results"))
    check_quant(a.nibble, recorded, a.work)
    ae = os.path.join(a.source, "docs", "results", "area-energy.json")
    if os.path.exists(ae):
        rec = json.load(open(ae))
        def table(r):
            return r["library"] + ("" if r.get("level", "dpu") == "dpu" else " " + r["level"])
        want = {(table(r), r["config"]): r["percent_vs_e2m1"] for r in rec.get("area", [])}
        got = read_csv(os.path.join(recorded, "data", "area.csv"))
        check(len(got) == len(want) > 0, "area.csv rows differ from area-energy.json")
        for r in got:
            check(close(float(r["percent_vs_e2m1"]), want[(r["table"], r["config"])], 1e-8), f"area.csv {r}")
        # The format overhead per level of the tensor core: every recorded level and
        # configuration, the percent as recorded and as its two areas give it.
        def levels_table(L):
            return L["library"] + (f" {L['rows']}x{L['cols']}" if "rows" in L and "cols" in L else "")
        want = {(levels_table(L), lv["level"], c): (lv["area"]["e2m1"], lv["area"][c], lv["percent_vs_e2m1"][c])
                for L in rec.get("levels", []) for lv in L["levels"] for c in lv["area"] if c != "e2m1"}
        check(len(want) == sum(1 for L in rec.get("levels", []) for lv in L["levels"] for c in lv["area"]
                               if c != "e2m1"), "area-energy.json records one level twice")
        check(len(want) > 0, "area-energy.json records no levels")
        if want:
            got = read_csv(os.path.join(recorded, "data", "levels.csv"))
            check(len(got) == len(want), f"levels.csv has {len(got)} rows, area-energy.json {len(want)}")
            for r in got:
                base, area, pc = want[(r["library"], r["level"], r["config"])]
                check(close(float(r["e2m1_area"]), base, 1e-8) and close(float(r["area"]), area, 1e-8),
                      f"levels.csv areas {r}")
                check(close(float(r["percent_vs_e2m1"]), pc, 1e-8), f"levels.csv percent {r}")
                check(close(pc, 100 * (area - base) / base, 1e-6), f"area-energy.json percent of {r} is not its areas'")
        # Energy per MAC, of the DPU and of the tensor core with its operand staging: the
        # gaussian rows of energy.csv are the file's, each percent against E2M1-only
        # running E2M1 in the same library.
        rows = [e for e in rec.get("energy", []) if e.get("level", "dpu") == "dpu" and e["operands"] == "gaussian"]
        check(any(e.get("tensor_core_energy_per_mac") is not None for e in rows),
              "area-energy.json records no gaussian energy rows with a tensor-core energy per MAC")
        if rows:
            got = read_csv(os.path.join(recorded, "data", "energy.csv"))
            check(len(got) == len(rows), f"energy.csv has {len(got)} rows, area-energy.json {len(rows)} gaussian ones")
            for key in ("energy_per_mac", "tensor_core_energy_per_mac"):
                base = {e["library"]: e.get(key) for e in rows if e["config"] == "e2m1" and e["format"] == "e2m1"}
                for g, e in zip(got, rows):
                    check((g["library"], g["config"], g["format"]) == (e["library"], e["config"], e["format"]),
                          f"energy.csv row {g} is not the file's {e}")
                    pc = "percent_vs_e2m1_only" if key == "energy_per_mac" else "tensor_core_percent_vs_e2m1_only"
                    if e.get(key) is None:
                        check(g[key] == "NaN" and g[pc] == "NaN", f"energy.csv {key} of {g} without a record")
                        continue
                    check(close(float(g[key]), e[key], 1e-8), f"energy.csv {key} {g}")
                    check(close(float(g[pc]), 100 * (e[key] - base[e["library"]]) / base[e["library"]], 1e-6),
                          f"energy.csv {pc} {g}")
    check_cycles(a.nibble, recorded, a.work)
    check_workload(a.nibble, recorded, a.work, os.path.join(a.source, "docs", "results"), a.source)

    fixture = os.path.join(a.source, "tests", "report", "fixture")
    fx = os.path.join(a.work, "fixture")
    run([a.nibble, "report", "--out", fx, "--results", fixture, "--seed", "3"])
    check_page(chromium, fx, {"training": "recorded", "hardware": "recorded", "tradeoff": "recorded",
                              "gpu-kernels": "recorded"})
    check_fixture(fx, fixture)
    check_kernels(fx, fixture)
    check_workload(a.nibble, fx, a.work, fixture, a.source)
    page = open(os.path.join(fx, "index.html")).read()
    check("broken.json: schema_version 9" in page, "an unreadable kernel run is not named on the page")
    check_study(chromium, a.nibble, fx, fixture, a.work)

    empty = os.path.join(a.work, "empty-results")
    os.makedirs(empty)
    none = os.path.join(a.work, "none")
    run([a.nibble, "report", "--out", none, "--results", empty, "--quiet"])
    check_page(chromium, none, {"training": "absent", "hardware": "absent", "tradeoff": "absent",
                                "gpu-kernels": "absent", "workload": "absent"})
    page = open(os.path.join(none, "index.html")).read()
    check("No recorded training results" in page, "absent training results are not stated")

    bad = subprocess.run([a.nibble, "report", "--out", none, "--gnuplot", "/nonexistent/gnuplot"], text=True,
                         capture_output=True)
    check(bad.returncode == 2 and "gnuplot not found" in bad.stderr, f"missing gnuplot: exit {bad.returncode}")
    other = os.path.join(a.work, "not-a-report")
    os.makedirs(other)
    open(os.path.join(other, "notes.txt"), "w").write("unrelated\n")
    src = subprocess.run([a.nibble, "report", "--out", other, "--quiet"], text=True, capture_output=True)
    check(src.returncode == 2 and "holds no earlier report" in src.stderr,
          f"writing into a non-report directory: exit {src.returncode}")
    check(sorted(os.listdir(other)) == ["notes.txt"], "a refused run left files behind")
    for args, message in ((["--training", "bogus"], "want auto, recorded or fresh"),
                          (["--train-steps", "0"], "--train-steps: want >= 1")):
        r = subprocess.run([a.nibble, "report", "--out", none, "--quiet"] + args, text=True, capture_output=True)
        check(r.returncode == 2 and message in r.stderr, f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    # Without a GPU (or libtorch) a fresh sweep is refused with the reason; with one, a
    # one-step sweep per recipe runs and the page reads it.
    fr = subprocess.run([a.nibble, "report", "--out", none, "--quiet", "--training", "fresh", "--train-steps", "2",
                         "--train-seeds", "0", "--train-data", os.path.join(a.source, "data", "brown")],
                        text=True, capture_output=True)
    if fr.returncode == 2 and "cannot train here" in fr.stderr:
        print(f"note: --training fresh refused as expected here: {fr.stderr.strip()}")
        check(True, "")
    else:
        check(fr.returncode == 0 and os.path.exists(os.path.join(none, "training", "summary.json")),
              f"--training fresh on a GPU: exit {fr.returncode}: {fr.stderr.strip()[-400:]}")
        page = open(os.path.join(none, "index.html")).read()
        check("run now by this report" in page, "a fresh sweep is not marked as run now")
    print(f"{checks} checks, {len(failures)} failures")
    if checks == 0:
        print("FAIL: no checks ran")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
