#!/usr/bin/env python3
"""Nibble's area flow: one Yosys run of one top with one parameter set, mapped to a Liberty
library; prints (or writes) a JSON record of area, cells, flops and logic depth.

  nibble_synth.py --top nibble_dpu --param FormatMask=3'b001 --param Lanes=16
  nibble_synth.py --top nibble_tile --param Rows=2 --param Cols=2 --param FormatMask=7
  nibble_synth.py --top nibble_quantizer --param FormatMask=3'b001 --param Lanes=16
  nibble_synth.py --top nibble_rht16
  nibble_synth.py --top rca --source tests/synth/calib.v --param N=8
  nibble_synth.py --top nibble_dpu --param FormatMask=7 --param LaneDesign=0 --hier

Sources: by default the files of rtl/ the top needs (packages first: DATAPATH for the DPU
and tile, UNITS for nibble_quantizer and nibble_rht16), passed through sv_compat.py into a
work directory (Yosys 0.23 cannot read them as written; see
docs/area-energy.md). --source FILE (repeatable) reads plain Verilog/SystemVerilog files
instead, as they are.

The Yosys script (written to WORK/synth.ys, run with `yosys -q -s`):
  read_liberty -lib LIB                       cell port directions (for stat/ltp)
  read_verilog -sv -I rtl/pkg SOURCES...
  chparam -set NAME VALUE ... TOP
  hierarchy -check -top TOP
  synth -flatten                              generic synthesis of that top, flattened
                                              (-noshare for the quantizer and RHT units)
  dfflibmap -liberty LIB                      flops -> the library's DFF/DFFR/DFFS
  abc -liberty LIB -script +<Yosys' default liberty script>;topo;stime,-p
                                              logic -> library cells; stime reports the
                                              mapped network's critical-path delay
  opt_clean
  stat -liberty LIB                           cells per type, chip area
Reported: area (the Liberty area unit: NAND2 equivalents for nibble_generic.lib, um^2 for a
real library), cells, flops (instances of Liberty cells with an ff group), depth = ABC's
stime delay of the combinational network between flops and ports, in library time units:
with nibble_generic.lib every cell has unit delay, so it is the number of cell levels.

--hier keeps the hierarchy (`synth` without -flatten; ABC then maps each module on its own,
so nothing is optimized across module boundaries and the total differs a little from the
flattened netlist's) and adds `modules`: per RTL module its instance count in the top, its
area per instance with its submodules and without them, and the area of its own flops. Its
--netlist is the mapped netlist flattened after that per-module mapping, every cell named by
the instance path it came from (`nibble energy --breakdown` groups the energy by it).
"""
import argparse
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RTL_DIR = os.path.dirname(HERE)
GENERIC_LIB = os.path.join(HERE, "nibble_generic.lib")

# The datapath of nibble_dpu / nibble_tile, packages first (the order rtl/CMakeLists.txt uses).
DATAPATH = [
    "pkg/nibble_f32_pkg.sv", "pkg/nibble_pkg.sv",
    "nibble_f32_round.sv", "nibble_f32_mul.sv", "nibble_f32_add.sv",
    "nibble_decode.sv", "nibble_lane.sv", "nibble_adder_tree.sv", "nibble_scale_decode.sv",
    "nibble_dpu_core.sv", "nibble_dpu.sv", "nibble_tile.sv",
]

# The quantizer and the RHT unit (nibble_quantizer, nibble_rht16), packages first.
UNITS = [
    "pkg/nibble_f32_pkg.sv", "pkg/nibble_pkg.sv", "pkg/nibble_quant_pkg.sv",
    "nibble_f32_round.sv", "nibble_f32_mul.sv", "nibble_f32_add.sv", "nibble_pipe.sv",
    "nibble_f32_div.sv", "nibble_scale_decode.sv", "nibble_grid_round.sv", "nibble_minifloat_encode.sv",
    "nibble_e4m3_encode.sv", "nibble_block_scale.sv", "nibble_elem_quant.sv",
    "nibble_quantizer.sv", "nibble_rht16.sv",
]
# The tensor core's operand staging (nibble_operand_rf), on its own so that adding it changes
# no DPU, tile or quantizer cache key.
STAGING = ["pkg/nibble_f32_pkg.sv", "pkg/nibble_pkg.sv", "nibble_operand_rf.sv"]
STAGING_TOPS = ("nibble_operand_rf",)
UNIT_TOPS = ("nibble_quantizer", "nibble_rht16", "nibble_block_scale", "nibble_elem_quant",
             "nibble_f32_div", "nibble_grid_round", "nibble_e4m3_encode")


def rtl_files(top):
    """The RTL files a top is synthesized from: UNITS for the quantizer, the RHT unit and
    their submodules, DATAPATH otherwise (so the DPU's and tile's netlists do not depend on
    the quantizer's files); STAGING for the operand register file."""
    if top in STAGING_TOPS:
        return STAGING
    return UNITS if top in UNIT_TOPS else DATAPATH


ABC_SCRIPT = ("+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put;"
              "topo;stime,-p")


def abc_script(delay_target_ps=None):
    """The ABC script: area-oriented (Yosys' default liberty script: &nf with no target) or,
    with a delay target in ps, timing-driven: the same logic optimization, then the
    delay-aware mapper `map -D` (it recovers area only on paths with slack against the target)
    and `buffer; upsize -D; dnsize -D` (Yosys' own -D -constr steps: buffer high fanout, upsize
    gates on the critical paths, downsize the rest). `&nf -D` is not used: on SKY130 HD it
    returns the area mapping's netlist whatever the target (a 16x16 multiplier: 5.96 ns either
    way; map -D: 3.90 ns at a tight target, 8213 um^2 < &nf's 8431 at a loose one)."""
    if delay_target_ps is None:
        return ABC_SCRIPT
    d = "%d" % round(delay_target_ps)
    # cleanup: `map` can leave a gate without fanout, on which `buffer` aborts ("node N has no
    # fanout"; the split-late-sign DPU at all formats, 20 ns)
    return ("+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;strash;dch,-f;map,-D,%s;cleanup;"
            "buffer;upsize,-D,%s;dnsize,-D,%s;topo;stime,-p" % (d, d, d))


class FlowError(Exception):
    pass


def liberty_text(path):
    if not os.path.isfile(path):
        raise FlowError("liberty file not found: %s" % path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return f.read()


def flop_cells(lib_text):
    """Names of the cells with an ff (or latch) group."""
    names = set()
    for m in re.finditer(r'\bcell\s*\(\s*"?([\w$]+)"?\s*\)\s*\{', lib_text):
        # the cell's body up to the next cell
        nxt = re.search(r'\bcell\s*\(', lib_text[m.end():])
        body = lib_text[m.end(): m.end() + nxt.start()] if nxt else lib_text[m.end():]
        if re.search(r"\b(ff|latch|ff_bank|latch_bank)\s*\(", body):
            names.add(m.group(1))
    return names


def area_unit(lib_text):
    return "GE" if re.search(r"library\s*\(\s*nibble_generic\s*\)", lib_text) else "um^2"


def norm_value(v):
    """A parameter value as a number where it is one (3'b011 and 3 are the same key)."""
    m = re.fullmatch(r"\s*(?:\d+)?'([bdhoBDHO])([0-9a-fA-F_]+)\s*", v)
    if m:
        return int(m.group(2).replace("_", ""), {"b": 2, "d": 10, "h": 16, "o": 8}[m.group(1).lower()])
    return int(v) if re.fullmatch(r"\s*\d+\s*", v) else v


def cache_key(top, params, lib_text, sources, hier=False, delay_target_ps=None):
    """Everything a synthesis result depends on: the flow's own files, the RTL (or given
    sources), the library text, the top, the parameters and the mapping (area, or timing
    against a delay target)."""
    h = hashlib.sha256()
    own = [os.path.join(HERE, f) for f in ("nibble_synth.py", "sv_compat.py")] + \
        sorted(os.path.join(HERE, "twins", f) for f in os.listdir(os.path.join(HERE, "twins")))
    files = own + (sources or [os.path.join(RTL_DIR, f) for f in rtl_files(top)])
    for p in files:
        # the path inside the source tree, not the checkout's: a cache copied to another
        # checkout of the same sources still hits
        h.update(os.path.relpath(p, RTL_DIR).encode() if sources is None else b"")
        with open(p, "rb") as f:
            h.update(f.read())
    h.update(lib_text.encode())
    h.update(json.dumps([top, [(k, norm_value(v)) for k, v in params]]).encode())
    if hier:
        h.update(b"hier")
    if delay_target_ps is not None:  # area mapping keeps the keys it had before timing mode
        h.update(("timing:%d" % round(delay_target_ps)).encode())
    return h.hexdigest()[:24]


def module_name(ident):
    """The RTL module a Yosys module name stands for: `\\nibble_lane`,
    `$paramod\\nibble_lane\\FormatMask=...` and `$paramod$<hash>\\nibble_lane` -> nibble_lane."""
    parts = ident.split("\\")
    if ident.startswith("$paramod") and len(parts) >= 2:
        return parts[1]
    return parts[-1]


def cell_areas(lib_text):
    """Cell name -> its Liberty area."""
    areas = {}
    for m in re.finditer(r'\bcell\s*\(\s*"?([\w$]+)"?\s*\)\s*\{', lib_text):
        a = re.search(r"\barea\s*:\s*([\d.eE+-]+)", lib_text[m.end(): m.end() + 2000])
        if a:
            areas[m.group(1)] = float(a.group(1))
    return areas


def hier_modules(stat, top, flops, areas):
    """Per-module areas from a hierarchical `stat -liberty`: {RTL module: {count, area (per
    instance, with submodules), own_area, own_flop_area}}, counts being instances in top."""
    mods = {}
    for sec in re.split(r"^=== ", stat, flags=re.M)[1:]:
        ident = sec.split(" ===", 1)[0].strip()
        if ident == "design hierarchy":
            continue
        cells = {}
        cm = re.search(r"Number of cells:\s*\d+\n((?:\s+\S+\s+\d+\n)*)", sec)
        for line in (cm.group(1).splitlines() if cm else []):
            name, count = line.split()
            cells[name] = int(count)
        am = re.search(r"Chip area for module .*:\s*([\d.eE+-]+)\s*$", sec, flags=re.M)
        mods[ident] = {"own": float(am.group(1)) if am else 0.0, "cells": cells}
    incl = {}

    def inclusive(ident):
        if ident not in incl:
            a = mods[ident]["own"]
            for c, n in mods[ident]["cells"].items():
                if c in mods:
                    a += n * inclusive(c)
            incl[ident] = a
        return incl[ident]

    counts = {}

    def visit(ident, n):
        counts[ident] = counts.get(ident, 0) + n
        for c, k in mods[ident]["cells"].items():
            if c in mods:
                visit(c, n * k)

    tops = [i for i in mods if module_name(i) == top]
    if tops:
        visit(tops[0], 1)
    out = {}
    for ident, n in counts.items():
        name = module_name(ident)
        e = out.setdefault(name, {"count": 0, "area": 0.0, "own_area": 0.0, "own_flop_area": 0.0})
        e["count"] += n
        e["area"] += n * inclusive(ident)
        e["own_area"] += n * mods[ident]["own"]
        e["own_flop_area"] += n * sum(k * areas.get(c, 0.0) for c, k in mods[ident]["cells"].items()
                                      if c in flops)
    return out


def private_temp(directory, name):
    """An empty file of this process's own beside `name` in `directory`, for an atomic rename."""
    fd, path = tempfile.mkstemp(prefix=name + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    return path


def run_flow(top, params, liberty, sources=None, work=None, yosys="yosys", keep=False,
             netlist=None, cache=None, hier=False, delay_target_ps=None):
    """One synthesis. netlist: also write the mapped netlist (Yosys JSON) there. cache: a
    directory of earlier results (record + netlist, keyed by cache_key); a hit skips Yosys.
    delay_target_ps: map for that combinational delay (timing-driven) instead of area."""
    if delay_target_ps is not None and not (delay_target_ps > 0 and math.isfinite(delay_target_ps)):
        raise FlowError("delay target must be a positive number of ps, got %r" % delay_target_ps)
    t0 = time.time()
    key = None
    if cache:
        lib_text0 = liberty_text(liberty)
        for s in sources or []:
            if not os.path.isfile(s):
                raise FlowError("source not found: %s" % s)
        key = cache_key(top, params, lib_text0,
                        [os.path.abspath(s) for s in sources] if sources else None, hier,
                        delay_target_ps)
        rec_path = os.path.join(cache, key + ".json")
        net_path = os.path.join(cache, key + ".netlist.json")
        if os.path.isfile(rec_path) and os.path.isfile(net_path):
            with open(rec_path) as f:
                rec = json.load(f)
            rec["cached"] = True
            if netlist:
                shutil.copyfile(net_path, netlist)
            return rec
        os.makedirs(cache, exist_ok=True)
        # Several flows (parallel ctest, two users) may synthesize the same key at once: each
        # writes its own temporary file and renames it into place, so the last identical
        # result wins and no reader sees a partial file.
        net_tmp = private_temp(cache, key + ".netlist.json")
        rec_tmp = private_temp(cache, key + ".json")
        try:
            rec = run_flow(top, params, liberty, sources, work, yosys, keep, net_tmp,
                           hier=hier, delay_target_ps=delay_target_ps)
            with open(rec_tmp, "w") as f:
                json.dump(rec, f, indent=1, sort_keys=True)
            os.replace(net_tmp, net_path)
            os.replace(rec_tmp, rec_path)
        finally:
            for t in (net_tmp, rec_tmp):
                if os.path.exists(t):
                    os.unlink(t)
        if netlist:
            shutil.copyfile(net_path, netlist)
        return rec
    own_work = work is None
    work = work or tempfile.mkdtemp(prefix="nibble_synth_")
    os.makedirs(work, exist_ok=True)
    try:
        lib_text = liberty_text(liberty)
        if delay_target_ps is not None and area_unit(lib_text) == "GE":
            raise FlowError("a delay target needs a library with delays (%s has unit delays)" % liberty)
        lib = liberty
        if liberty.endswith(".gz"):  # Yosys and ABC read plain text only
            lib = os.path.join(work, os.path.basename(liberty)[:-3])
            with open(lib, "w") as f:
                f.write(lib_text)
        if sources:
            files = [os.path.abspath(s) for s in sources]
            for s in files:
                if not os.path.isfile(s):
                    raise FlowError("source not found: %s" % s)
        else:
            compat_dir = os.path.join(work, "compat")
            rtl = rtl_files(top)
            cmd = [sys.executable, os.path.join(HERE, "sv_compat.py"), compat_dir] + \
                  [os.path.join(RTL_DIR, f) for f in rtl]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise FlowError("sv_compat.py failed: %s" % (r.stderr.strip() or r.stdout.strip()))
            # nibble_tile.sv only for the tile (Yosys parses every file it is given)
            files = [os.path.join(compat_dir, os.path.basename(f)) for f in rtl
                     if top == "nibble_tile" or f != "nibble_tile.sv"]
        # chparam, not `hierarchy -chparam` (which trips a Yosys 0.23 assertion on nibble_tile)
        chparam = ("chparam %s %s" % (" ".join("-set %s %s" % (k, v) for k, v in params), top)
                   if params else "")
        script = "\n".join([
            "read_liberty -lib %s" % lib,
            "read_verilog -sv -I%s %s" % (os.path.join(RTL_DIR, "pkg"), " ".join(files)),
            chparam,
            "hierarchy -check -top %s" % top,
            # the top hierarchy marked (chparam may rename it). No SAT-based resource sharing
            # for the quantizer and RHT units: `share` runs for hours on their hundreds of
            # binary32 operators (the DPU keeps it, so its netlists are unchanged).
            ("synth -noshare" if top in UNIT_TOPS else "synth") if hier else
            ("synth -flatten -noshare" if top in UNIT_TOPS else "synth -flatten"),
            "dfflibmap -liberty %s" % lib,
            "abc -liberty %s -script %s" % (lib, abc_script(delay_target_ps)),
            "opt_clean",
            ("write_json %s" % os.path.abspath(netlist)) if netlist and not hier else "",
            "tee -o %s stat -liberty %s%s" % (os.path.join(work, "stat.txt"), lib,
                                              (" -top %s" % top) if hier else ""),
            # hierarchical: the netlist flattened after mapping, each cell named after the
            # instance path it came from (`$flatten\u_core.u_acc_add.$abc$...`)
            ("flatten\nopt_clean\nwrite_json %s" % os.path.abspath(netlist)) if netlist and hier else "",
            "",
        ])
        ys = os.path.join(work, "synth.ys")
        with open(ys, "w") as f:
            f.write(script)
        log = os.path.join(work, "yosys.log")
        try:
            r = subprocess.run([yosys, "-s", ys, "-l", log], cwd=work, capture_output=True,
                               text=True)
        except FileNotFoundError:
            raise FlowError("yosys not found (%s); install Yosys or pass its path" % yosys)
        if r.returncode != 0:
            err = [l for l in (r.stdout + r.stderr).splitlines() if "ERROR" in l]
            raise FlowError("yosys failed on %s %s: %s (log: %s)" % (
                top, " ".join("%s=%s" % p for p in params), err[-1] if err else "exit %d" %
                r.returncode, log))
        with open(os.path.join(work, "stat.txt")) as f:
            stat = f.read()
        with open(log) as f:
            log_text = f.read()
        flops = flop_cells(lib_text)
        modules = None
        if hier:
            modules = hier_modules(stat, top, flops, cell_areas(lib_text))
            stat = stat[stat.index("=== design hierarchy ==="):]
        area = float(re.search(r"Chip area for (?:module|top module) '[^']*':\s*([\d.eE+-]+)",
                               stat).group(1))
        cells_by_type = {}
        m = re.search(r"Number of cells:\s*(\d+)\n((?:\s+\S+\s+\d+\n)*)", stat)
        ncells = int(m.group(1))
        for line in m.group(2).splitlines():
            name, count = line.split()
            cells_by_type[name] = int(count)
        nflops = sum(c for n, c in cells_by_type.items() if n in flops)
        delays = [float(x) for x in re.findall(r"Delay\s*=\s*([\d.]+)\s*ps", log_text)]
        depth = max(delays) / 1000.0 if delays else None  # ps -> library time unit (ns)
        return {
            "top": top,
            "params": {k: v for k, v in params},
            "liberty": os.path.abspath(liberty),
            "area": area,
            "area_unit": area_unit(lib_text),
            "cells": ncells,
            "flops": nflops,
            "depth": depth,
            "depth_unit": "levels" if area_unit(lib_text) == "GE" else "ns",
            "delay_target_ps": delay_target_ps,
            "cells_by_type": cells_by_type,
            "seconds": round(time.time() - t0, 2),
            "work": work if keep else None,
        } if modules is None else {
            "top": top, "params": {k: v for k, v in params}, "liberty": os.path.abspath(liberty),
            "area": area, "area_unit": area_unit(lib_text), "hier": True, "modules": modules,
            "seconds": round(time.time() - t0, 2), "work": work if keep else None,
        }
    finally:
        if own_work and not keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", required=True)
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--liberty", default=GENERIC_LIB)
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--work", help="keep intermediate files here")
    ap.add_argument("--yosys", default=os.environ.get("NIBBLE_YOSYS", "yosys"))
    ap.add_argument("--json", help="write the record here (default: stdout)")
    ap.add_argument("--netlist", help="also write the mapped netlist (Yosys JSON) here")
    ap.add_argument("--cache", help="reuse/store results (record + netlist) in this directory")
    ap.add_argument("--hier", action="store_true",
                    help="keep the hierarchy and report per-module areas (no flattening)")
    ap.add_argument("--delay-target", type=float, metavar="PS",
                    help="timing-driven mapping: ABC maps for this combinational delay (ps; needs "
                         "a library with delays) instead of the least area")
    a = ap.parse_args()
    params = []
    for p in a.param:
        if "=" not in p:
            ap.error("--param wants NAME=VALUE, got %r" % p)
        k, v = p.split("=", 1)
        params.append((k, v))
    try:
        rec = run_flow(a.top, params, a.liberty, a.source or None, a.work, a.yosys,
                       keep=a.work is not None, netlist=a.netlist, cache=a.cache, hier=a.hier,
                       delay_target_ps=a.delay_target)
    except FlowError as e:
        print("nibble_synth: error: %s" % e, file=sys.stderr)
        return 2
    text = json.dumps(rec, indent=2, sort_keys=True)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
