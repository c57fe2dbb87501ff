#!/usr/bin/env python3
"""tests/synth: checks of the area flow (rtl/synth), run by CTest (label synth).

  synth_tests.py calibration        generic library: adders, a 4x4 multiplier, flops
  synth_tests.py sky130              the same adder on SKY130 HD (skips without the PDK)
  synth_tests.py tree_twin          rtl/synth/twins/nibble_adder_tree.sv == the exact sum (SAT)
  synth_tests.py lane_miter         every lane design == LaneCommonUnit, per format mask: a lane's
                                    product at one scale (tests/synth/lane_value.sv) proven equal
                                    for every input (Yosys miter -equiv + sat), and a broken
                                    design shown to fail the same proof
  synth_tests.py dpu_monotonic      nibble_dpu, 16 lanes, default lane design: all formats >=
                                    E2M1-only > 0
  synth_tests.py netlists           fixture: nibble_dpu netlists (lane design:mask[:scale-format
                                    mask] NIBBLE_NETLIST_CONFIGS, e.g. 4:1,4:7,0:7,4:7:3) and cell
                                    models into NIBBLE_NETLIST_DIR
  synth_tests.py energy_cli         `nibble energy` (NIBBLE_CLI) on E2M1-only and all formats,
                                    synthetic and a user .npy tensor, JSON/CSV, bad input; the
                                    energy per sub-block and the energy-per-action file
  synth_tests.py area_cli           `nibble area` (NIBBLE_CLI): every lane design at all formats
                                    (the fixture's netlists), JSON/CSV, the default design's area
                                    per sub-block adding up to its hierarchical total, bad input
  synth_tests.py sta_cli            `nibble area --sta` (NIBBLE_CLI): the E2M1-only DPU on SKY130 HD
                                    timed by OpenSTA, slack and Fmax consistent, --strict; the same
                                    DPU with --map timing at half its area-mapped path: shorter,
                                    verdict fields consistent; bad input (skips without the PDK or
                                    `sta`)
  synth_tests.py timing             timing-driven mapping (nibble_synth.py --delay-target) on SKY130
                                    HD: an 8x8 multiplier mapped for a tight target is faster than
                                    the area mapping (ABC's delay and OpenSTA's), one for a loose
                                    target smaller than the tight one; targets in the cache key;
                                    bad targets and a unit-delay library refused (skips without
                                    the PDK)
  synth_tests.py cells              liberty_cells.py: truth tables of the generic cells,
                                    SKY130 HD flops and full adder (SKY130 part skips without it)
  synth_tests.py units              the quantizer's rewrite (rtl/synth/sv_compat.py): E4M3 encoder
                                    and element quantizer evaluated on known values; the element
                                    quantizer synthesized, all formats >= E2M1-only; flow errors
  synth_tests.py units_full         (not in CI: ~5 min CPU each) nibble_quantizer (16 lanes,
                                    E2M1-only) and nibble_rht16 through the flow: area, flops =
                                    the RTL's register bits, cells, depth
Syntheses go through the result cache NIBBLE_SYNTH_CACHE (when set), shared by the tests.

Exit 0 pass, 1 fail, 77 skip (CTest SKIP_RETURN_CODE).
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(SRC, "rtl", "synth"))
import nibble_synth  # noqa: E402

CALIB = os.path.join(HERE, "calib.v")
CALIB_BLOCKS = os.path.join(SRC, "rtl", "synth", "calib_blocks.v")
YOSYS = os.environ.get("NIBBLE_YOSYS", "yosys")


def format_set(name):
    # golden's format sets (golden/include/nibble/format_sets.h), which CTest passes
    # (tests/synth/CMakeLists.txt, cmake/NibbleFormatSets.cmake)
    value = os.environ.get(name)
    if value is None:
        sys.exit("synth_tests.py: %s is not set (CTest sets it from golden's format sets)" % name)
    return int(value)


FORMAT_COUNT = format_set("NIBBLE_FORMAT_COUNT")
SCALE_FORMAT_COUNT = format_set("NIBBLE_SCALE_FORMAT_COUNT")
MASK_ALL = format_set("NIBBLE_FORMAT_MASK_ALL")            # every format
MASK_BASELINE = format_set("NIBBLE_FORMAT_MASK_BASELINE")  # E2M1 alone
SCALE_MASK_ALL = format_set("NIBBLE_SCALE_FORMAT_MASK_ALL")


def sv_mask(mask, width=FORMAT_COUNT):
    # a FormatMask (or, width SCALE_FORMAT_COUNT, ScaleFormatMask) as SystemVerilog: 3'b011
    return "%d'b%s" % (width, format(mask, "0%db" % width))


def sv_mask_value(literal):
    return int(literal.split("'b")[1], 2)
FAILS = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def within(x, ref, lo=0.5, hi=2.0):
    return lo * ref <= x <= hi * ref


def calibration():
    # Textbook gate counts in NAND2 equivalents (GE): a full adder is 9 NAND2 (the classic
    # all-NAND full adder), so an N-bit ripple-carry adder with carry in is 9N GE; a 4x4
    # array multiplier is 16 AND2 (4/3 GE each) + 4 half adders (XOR2 2 + AND2 4/3) + 8 full
    # adders = 21.3 + 13.3 + 72 = 106.7 GE. The flow must land within 2x either way.
    for n in (8, 16):
        r = nibble_synth.run_flow("rca", [("N", str(n))], nibble_synth.GENERIC_LIB, [CALIB],
                                  yosys=YOSYS)
        print("      rca N=%d: %.1f GE, %d cells, depth %s (%.1f s)" % (
            n, r["area"], r["cells"], r["depth"], r["seconds"]))
        check(within(r["area"], 9.0 * n), "rca N=%d area %.1f GE within 2x of %d" % (n, r["area"], 9 * n))
        check(r["flops"] == 0, "rca N=%d has no flops" % n)
        check(r["depth"] is not None and n <= r["depth"] <= 3 * n + 4,
              "rca N=%d depth %s between N and 3N+4 levels" % (n, r["depth"]))
    r = nibble_synth.run_flow("mul4", [], nibble_synth.GENERIC_LIB, [CALIB], yosys=YOSYS)
    ref = 16 * 4 / 3 + 4 * (2 + 4 / 3) + 8 * 9
    print("      mul4: %.1f GE, %d cells, depth %s" % (r["area"], r["cells"], r["depth"]))
    check(within(r["area"], ref), "mul4 area %.1f GE within 2x of %.1f" % (r["area"], ref))
    r = nibble_synth.run_flow("regr", [("N", "8")], nibble_synth.GENERIC_LIB, [CALIB], yosys=YOSYS)
    print("      regr N=8: %.2f GE, cells %s" % (r["area"], r["cells_by_type"]))
    check(r["flops"] == 8 and r["cells_by_type"].get("DFFR") == 8, "regr: 8 DFFR flops")
    check(abs(r["area"] - 8 * 5.320 / 0.798) < 0.01, "regr area = 8 DFFR (%.3f GE)" % r["area"])


def pdk_dir():
    return os.environ.get("NIBBLE_PDK_DIR", os.path.join(os.path.dirname(SRC), "shared", "pdk"))


def sky130():
    lib = os.path.join(pdk_dir(), "sky130hd", "sky130_fd_sc_hd__tt_025C_1v80.lib.gz")
    if not os.path.isfile(lib):
        print("SKIP: no SKY130 HD library at %s (set NIBBLE_PDK_DIR)" % lib)
        return 77
    # sky130_fd_sc_hd__fa_1 is 20.02 um^2: an 8-bit adder is about 8 of them.
    r = nibble_synth.run_flow("rca", [("N", "8")], lib, [CALIB], yosys=YOSYS)
    print("      rca N=8 on SKY130 HD: %.1f um^2, %d cells, depth %s ns" % (
        r["area"], r["cells"], r["depth"]))
    check(r["area_unit"] == "um^2", "SKY130 areas are um^2")
    check(within(r["area"], 8 * 20.0192), "rca N=8 area %.1f um^2 within 2x of 8 fa_1" % r["area"])
    r = nibble_synth.run_flow("regr", [("N", "8")], lib, [CALIB], yosys=YOSYS)
    check(r["flops"] == 8, "regr on SKY130: 8 flops (%s)" % r["cells_by_type"])
    return 0


def sta_comb_path(netlist, top):
    """OpenSTA's worst input-to-output delay (ns) of a combinational netlist (Yosys JSON) on
    SKY130 HD, or None without `sta`."""
    if shutil.which("sta") is None:
        return None
    lib = os.path.join(pdk_dir(), "sky130hd", "sky130_fd_sc_hd__tt_025C_1v80.lib.gz")
    with tempfile.TemporaryDirectory() as d:
        plain, v, tcl = (os.path.join(d, f) for f in ("sky.lib", "n.v", "t.tcl"))
        with nibble_synth.gzip.open(lib, "rt") as f, open(plain, "w") as g:
            g.write(f.read())
        subprocess.run([YOSYS, "-q", "-p", "read_json %s; write_verilog -noattr %s" % (netlist, v)], check=True)
        with open(tcl, "w") as f:
            f.write("read_liberty %s\nread_verilog %s\nlink_design %s\n"
                    "create_clock -name v -period 100\n"
                    "set_input_delay 0 -clock v [all_inputs]\nset_output_delay 0 -clock v [all_outputs]\n"
                    "report_checks -path_delay max -digits 3\n" % (plain, v, top))
        out = subprocess.run(["sta", "-no_init", "-no_splash", "-exit", tcl], capture_output=True,
                             text=True).stdout
    for line in out.splitlines():
        if line.strip().endswith("data arrival time"):
            return float(line.split()[0])
    check(False, "OpenSTA reported a path (%s)" % out[-300:])
    return None


def timing():
    lib = os.path.join(pdk_dir(), "sky130hd", "sky130_fd_sc_hd__tt_025C_1v80.lib.gz")
    # Bad targets and a library without real delays are refused before Yosys runs.
    for bad in (0, -1, float("nan"), float("inf")):
        try:
            nibble_synth.run_flow("calib_mul", [("N", "8")], lib, [CALIB_BLOCKS], yosys=YOSYS,
                                  delay_target_ps=bad)
            check(False, "delay target %r refused" % bad)
        except nibble_synth.FlowError as e:
            check("delay target" in str(e), "delay target %r refused (%s)" % (bad, e))
    try:
        nibble_synth.run_flow("calib_mul", [("N", "8")], nibble_synth.GENERIC_LIB, [CALIB_BLOCKS],
                              yosys=YOSYS, delay_target_ps=5)
        check(False, "a delay target on the unit-delay library refused")
    except nibble_synth.FlowError as e:
        check("unit delays" in str(e), "a delay target on the unit-delay library refused (%s)" % e)
    if not os.path.isfile(lib):
        print("SKIP: no SKY130 HD library at %s (set NIBBLE_PDK_DIR)" % lib)
        return 77
    text = nibble_synth.liberty_text(lib)
    keys = {nibble_synth.cache_key("calib_mul", [("N", "8")], text, [CALIB_BLOCKS], delay_target_ps=t)
            for t in (None, 1000, 2000)}
    check(len(keys) == 3, "area mapping and two delay targets have three cache keys")
    with tempfile.TemporaryDirectory() as d:
        def one(target):
            net = os.path.join(d, "%s.json" % target)
            r = nibble_synth.run_flow("calib_mul", [("N", "8")], lib, [CALIB_BLOCKS], yosys=YOSYS,
                                      netlist=net, delay_target_ps=target)
            r["sta"] = sta_comb_path(net, "calib_mul")
            print("      calib_mul N=8, target %s ps: %.0f um^2, ABC %.3f ns, OpenSTA %s ns" % (
                target, r["area"], r["depth"], r["sta"]))
            return r
        area = one(None)
        # tight: half the area mapping's delay (not reachable); loose: twice it
        tight = one(round(area["depth"] * 500))
        loose = one(round(area["depth"] * 2000))
    check(tight["depth"] < 0.9 * area["depth"],
          "mapped for a tight target: ABC's delay %.3f < 0.9 x the area mapping's %.3f ns" % (
              tight["depth"], area["depth"]))
    if area["sta"] is not None:
        check(tight["sta"] < 0.9 * area["sta"],
              "mapped for a tight target: OpenSTA's path %.3f < 0.9 x the area mapping's %.3f ns" % (
                  tight["sta"], area["sta"]))
    check(loose["area"] < tight["area"],
          "a loose target recovers area: %.0f < %.0f um^2" % (loose["area"], tight["area"]))
    check(loose["depth"] <= area["depth"] * 2, "a loose target is met (ABC: %.3f ns)" % loose["depth"])
    return 0


def tree_twin():
    # The twin against a behavioural reference, the sum of Lanes sign-extended operands,
    # proven equal by SAT for every input at small sizes (SAT on a 16-lane tree of wide
    # operands is too slow: differently associated adders are hard for it).
    for lanes, w in ((4, 3), (8, 2), (2, 5)):
        out = w + (lanes - 1).bit_length()
        ref = ["module tree_ref (input [%d:0] operands_i, output signed [%d:0] sum_o);" % (
            lanes * w - 1, out - 1)]
        ref.append("  assign sum_o = " + " + ".join(
            "%d'($signed(operands_i[%d +: %d]))" % (out, i * w, w) for i in range(lanes)) + ";")
        ref.append("endmodule")
        with tempfile.TemporaryDirectory() as d:
            refv = os.path.join(d, "tree_ref.sv")
            with open(refv, "w") as f:
                f.write("\n".join(ref) + "\n")
            twin = os.path.join(SRC, "rtl", "synth", "twins", "nibble_adder_tree.sv")
            script = ("read_verilog -sv %s %s; chparam -set Lanes %d -set InWidth %d "
                      "nibble_adder_tree; rename nibble_adder_tree gold_twin; proc; flatten; opt; "
                      "miter -equiv -flatten -make_outputs gold_twin tree_ref miter; "
                      "hierarchy -top miter; sat -verify -prove trigger 0 miter" % (twin, refv, lanes, w))
            r = subprocess.run([YOSYS, "-q", "-p", script], capture_output=True, text=True, cwd=d,
                               timeout=120)
            if r.returncode != 0:
                print((r.stdout + r.stderr)[-2000:])
            check(r.returncode == 0, "adder-tree twin (%d lanes x %d bits) == exact signed sum "
                  "(SAT, all inputs)" % (lanes, w))


def lane_design_names():
    """power/include/nibble/power/lane_design.h's kLaneDesignTable names, by value."""
    import re
    with open(os.path.join(SRC, "power", "include", "nibble", "power", "lane_design.h")) as f:
        return re.findall(r'\{LaneDesign::k\w+,\s*"([\w-]+)"', f.read())


def package_value_enum(name):
    """A `localparam <enum type> Name = <item>;` of rtl/pkg/nibble_pkg.sv, as the item's value."""
    import re
    with open(os.path.join(SRC, "rtl", "pkg", "nibble_pkg.sv")) as f:
        text = f.read()
    item = re.search(r"localparam\s+\w+\s+%s\s*=\s*(\w+)\s*;" % name, text).group(1)
    return int(re.search(r"\b%s\s*=\s*\d+'d(\d+)" % item, text).group(1))


def package_value(name):
    """A `localparam int unsigned Name = <number>;` of rtl/pkg/nibble_pkg.sv."""
    import re
    with open(os.path.join(SRC, "rtl", "pkg", "nibble_pkg.sv")) as f:
        return int(re.search(r"localparam\s+int\s+unsigned\s+%s\s*=\s*(\d+)\s*;" % name,
                             f.read()).group(1))


def lane_miter():
    # Each lane design against the common fixed point (LaneCommonUnit, design 0), for every
    # format mask: decode + lane + the design's unit shift, proven equal by SAT over all code
    # and format-select inputs (select values naming no format included).
    designs = package_value("NumLaneDesigns")
    masks = range(1, MASK_ALL + 1)  # every non-empty set of formats
    files = ["pkg/nibble_f32_pkg.sv", "pkg/nibble_pkg.sv", "nibble_decode.sv", "nibble_lane.sv"]
    sel = package_value("FormatSelWidth") - 1
    ports = ("input [3:0] code_a_i, input [%d:0] format_a_i, input [3:0] code_b_i, "
             "input [%d:0] format_b_i, output [%%d:0] value_o" % (sel, sel))
    proofs = 0
    with tempfile.TemporaryDirectory() as d:
        compat = os.path.join(d, "compat")
        r = subprocess.run([sys.executable, os.path.join(SRC, "rtl", "synth", "sv_compat.py"), compat] +
                           [os.path.join(SRC, "rtl", f) for f in files] + [os.path.join(HERE, "lane_value.sv")],
                           capture_output=True, text=True)
        check(r.returncode == 0, "sv_compat.py rewrites the lane and tests/synth/lane_value.sv (%s)" %
              r.stderr.strip()[:200])
        if r.returncode != 0:
            return 1
        srcs = " ".join(os.path.join(compat, os.path.basename(f)) for f in files + ["lane_value.sv"])

        def prove(mask, design, broken):
            # value width: product_width(mask) + 1 (the wrapper's ValueWidth), read from Yosys
            top = ["module gold_m (%s);" % (ports % 31),
                   "  lane_value #(.FormatMask(%d), .LaneDesign(0)) u (.code_a_i, .format_a_i, "
                   ".code_b_i, .format_b_i, .value_o);" % mask, "endmodule",
                   "module gate_m (%s);" % (ports % 31),
                   "  wire [31:0] v;",
                   "  lane_value #(.FormatMask(%d), .LaneDesign(%d)) u (.code_a_i, .format_a_i, "
                   ".code_b_i, .format_b_i, .value_o(v));" % (mask, design),
                   # the broken variant: wrong whenever both codes are the largest positive one
                   "  assign value_o = v ^ {31'd0, %s(code_a_i == 4'h7 && code_b_i == 4'h7)};"
                   % ("" if broken else "1'b0 & "), "endmodule"]
            wrap = os.path.join(d, "miter_tops.v")
            with open(wrap, "w") as f:
                f.write("\n".join(top) + "\n")
            script = ("read_verilog -sv -I%s %s %s; hierarchy -check; proc; flatten; opt; "
                      "miter -equiv -flatten -make_assert gold_m gate_m miter; hierarchy -top miter; "
                      "sat -verify -prove-asserts -show-inputs miter"
                      % (os.path.join(SRC, "rtl", "pkg"), srcs, wrap))
            return subprocess.run([YOSYS, "-q", "-p", script], capture_output=True, text=True,
                                  cwd=d, timeout=300)

        for design in range(1, designs):
            for mask in masks:
                r = prove(mask, design, False)
                if r.returncode != 0:
                    print((r.stdout + r.stderr)[-2000:])
                check(r.returncode == 0, "lane design %d == design 0 at FormatMask %d (SAT, all inputs)"
                      % (design, mask))
                proofs += r.returncode == 0
        r = prove(MASK_ALL, designs - 1, True)
        check(r.returncode != 0, "a broken lane design fails the proof (the miter can fail)")
    print("      %d equivalence proofs" % proofs)
    check(proofs == (designs - 1) * len(masks) and proofs > 0, "every design x mask proven")
    return 0


CACHE = os.environ.get("NIBBLE_SYNTH_CACHE") or None


def dpu_monotonic():
    area = {}
    design = str(package_value_enum("DefaultLaneDesign"))
    base, every = sv_mask(MASK_BASELINE), sv_mask(MASK_ALL)
    for mask in (base, every):
        r = nibble_synth.run_flow("nibble_dpu", [("FormatMask", mask), ("Lanes", "16"),
                                                 ("LaneDesign", design)],
                                  nibble_synth.GENERIC_LIB, yosys=YOSYS, cache=CACHE)
        area[mask] = r["area"]
        print("      nibble_dpu 16 lanes FormatMask=%s: %.1f GE, %d cells, %d flops, depth %s "
              "(%.1f s)" % (mask, r["area"], r["cells"], r["flops"], r["depth"], r["seconds"]))
    check(area[base] > 0, "E2M1-only area > 0")
    check(area[every] >= area[base], "all formats >= E2M1-only")


def netlists():
    out = os.environ["NIBBLE_NETLIST_DIR"]
    os.makedirs(out, exist_ok=True)
    # design:mask or design:mask:scale-format mask (the RTL's default, all, when left out)
    configs = [tuple(int(x) for x in (c + ":%d" % SCALE_MASK_ALL).split(":")[:3])
               for c in os.environ["NIBBLE_NETLIST_CONFIGS"].split(",")]
    r = subprocess.run([sys.executable, os.path.join(SRC, "rtl", "synth", "liberty_cells.py"),
                        nibble_synth.GENERIC_LIB, os.path.join(out, "generic.cells.json")])
    check(r.returncode == 0, "cell models of the generic library")

    def name(config):
        design, mask, scales = config
        return "dpu16_d%d_m%d%s.netlist.json" % (design, mask, "" if scales == SCALE_MASK_ALL else "_s%d" % scales)

    def one(config):
        design, mask, scales = config
        params = [("FormatMask", sv_mask(mask)), ("Lanes", "16"), ("LaneDesign", str(design))]
        if scales != SCALE_MASK_ALL:  # the default is not passed: the same cache key as nibble area's
            params.append(("ScaleFormatMask", sv_mask(scales, SCALE_FORMAT_COUNT)))
        return nibble_synth.run_flow("nibble_dpu", params, nibble_synth.GENERIC_LIB, yosys=YOSYS, cache=CACHE,
                                     netlist=os.path.join(out, name(config)))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for config, rec in zip(configs, ex.map(one, configs)):
            print("      nibble_dpu 16 lanes lane design %d mask %d scale formats %d: %d cells (%.1f s%s)" % (
                config + (rec["cells"], rec["seconds"], ", cached" if rec.get("cached") else "")))
            check(os.path.isfile(os.path.join(out, name(config))),
                  "netlist of lane design %d mask %d scale formats %d written" % config)


def cells():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        lc = os.path.join(SRC, "rtl", "synth", "liberty_cells.py")
        r = subprocess.run([sys.executable, lc, nibble_synth.GENERIC_LIB, out])
        check(r.returncode == 0, "liberty_cells.py reads nibble_generic.lib")
        with open(out) as f:
            c = json.load(f)["cells"]
        # truth tables: bit i = output for the input assignment i (bit j = inputs[j])
        want = {"NAND2": 0b0111, "NOR2": 0b0001, "XOR2": 0b0110, "XNOR2": 0b1001, "INV": 0b01,
                "AOI21": None, "MUX2": None}
        for name, lut in want.items():
            if lut is not None:
                check(c[name]["outputs"][0]["lut"] == lut, "%s truth table" % name)
        o = c["AOI21"]["outputs"][0]
        ins = o["inputs"]
        ok = all(((o["lut"] >> i) & 1) == (1 - ((((i >> ins.index("A1")) & (i >> ins.index("A2")))
                                               | (i >> ins.index("B"))) & 1)) for i in range(8))
        check(ok, "AOI21 truth table over %s" % ins)
        o = c["MUX2"]["outputs"][0]
        ins = o["inputs"]
        ok = all(((o["lut"] >> i) & 1) == ((i >> ins.index("B")) & 1 if (i >> ins.index("S")) & 1
                                             else (i >> ins.index("A")) & 1) for i in range(8))
        check(ok, "MUX2 truth table over %s" % ins)
        check(c["DFFR"]["ff"]["clear"] is not None and c["DFFR"]["outputs"][0]["ff_out"] == "IQ",
              "DFFR: async clear, Q = IQ")
        lib = os.path.join(pdk_dir(), "sky130hd", "sky130_fd_sc_hd__tt_025C_1v80.lib.gz")
        if not os.path.isfile(lib):
            print("SKIP (part): no SKY130 HD library at %s" % lib)
            return 0
        r = subprocess.run([sys.executable, lc, lib, out])
        check(r.returncode == 0, "liberty_cells.py reads SKY130 HD")
        with open(out) as f:
            c = json.load(f)["cells"]
        fa = c["sky130_fd_sc_hd__fa_1"]
        for o in fa["outputs"]:
            ins = o["inputs"]
            for i in range(8):
                a, b, ci = ((i >> ins.index(p)) & 1 for p in ("A", "B", "CIN"))
                want = (a + b + ci) >> 1 if o["name"] == "COUT" else (a + b + ci) & 1
                if ((o["lut"] >> i) & 1) != want:
                    check(False, "fa_1 %s at %d%d%d" % (o["name"], a, b, ci))
                    break
        check(True, "fa_1 SUM/COUT truth tables checked")
        d = c["sky130_fd_sc_hd__dfrtp_1"]
        check(d["ff"]["clock"] == "CLK" and d["ff"]["clear"]["inputs"] == ["RESET_B"]
              and d["ff"]["clear"]["lut"] == 1, "dfrtp_1: rising CLK, clear = !RESET_B")
        clk = [p for p in d["inputs"] if p["name"] == "CLK"][0]
        check(0.001 < clk["energy"] < 0.1, "dfrtp_1 clock pin energy %.4f pJ per edge in (1 fJ, 100 fJ)"
              % clk["energy"])
    return 0


def yosys_eval(top, params, cases, outs):
    """The sv_compat rewrite of the RTL (nibble_synth.UNITS) read by Yosys, `top` elaborated
    with `params` and evaluated (Yosys `eval`) on each case {input: value}: the outputs, per
    case, as {output: int}."""
    import re
    with tempfile.TemporaryDirectory() as d:
        files = [os.path.join(SRC, "rtl", f) for f in nibble_synth.UNITS]
        r = subprocess.run([sys.executable, os.path.join(SRC, "rtl", "synth", "sv_compat.py"), d]
                           + files, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("sv_compat.py: " + r.stderr)
        script = ["read_verilog -sv -I%s %s" % (os.path.join(SRC, "rtl", "pkg"), " ".join(
            os.path.join(d, os.path.basename(f)) for f in files))]
        if params:
            script.append("chparam %s %s" % (" ".join("-set %s %s" % p for p in params), top))
        script += ["hierarchy -check -top %s" % top, "proc", "flatten", "opt -fast"]
        for c in cases:
            script.append("eval %s %s" % (" ".join("-set %s %s" % kv for kv in c.items()),
                                          " ".join("-show %s" % o for o in outs)))
        ys = os.path.join(d, "eval.ys")
        with open(ys, "w") as f:
            f.write("\n".join(script) + "\n")
        r = subprocess.run([YOSYS, "-q", "-s", ys], capture_output=True, text=True, cwd=d)
        if r.returncode != 0:
            raise RuntimeError("yosys: " + (r.stdout + r.stderr)[-2000:])
        r = subprocess.run([YOSYS, "-s", ys], capture_output=True, text=True, cwd=d)
        vals = re.findall(r"Eval result: \\(\w+) = (\d+)'([01x]+)\.", r.stdout)
        res = []
        for i in range(len(cases)):
            one = {}
            for name, _, bits in vals[i * len(outs):(i + 1) * len(outs)]:
                one[name] = int(bits, 2) if "x" not in bits else None
            res.append(one)
        return res


def netlist_eval(netlist, cells_json, cases, outs):
    """A combinational mapped netlist (Yosys write_json, one flattened module) evaluated cell by
    cell from the library's functions (liberty_cells.py truth tables) on each case
    {input port: int}: [{output port: int}]."""
    with open(netlist) as f:
        mods = json.load(f)["modules"].values()  # the top, beside the library's blackboxes
    mod = [m for m in mods if int(str(m.get("attributes", {}).get("top", "0")), 2)][0]
    with open(cells_json) as f:
        lib = json.load(f)["cells"]
    gates = []  # (output bit, [input bits], lut)
    for c in mod["cells"].values():
        model = lib[c["type"]]
        if model.get("ff"):
            raise RuntimeError("netlist_eval: %s is sequential" % c["type"])
        for o in model["outputs"]:
            gates.append((c["connections"][o["name"]][0],
                          [c["connections"][i][0] for i in o["inputs"]], o["lut"]))
    driver = {g[0]: g for g in gates}
    order, seen = [], set()

    def visit(bit):  # depth-first topological order (iterative: deep netlists)
        stack = [(bit, False)]
        while stack:
            b, done = stack.pop()
            if done:
                order.append(driver[b])
                continue
            if b in seen or b not in driver:
                continue
            seen.add(b)
            stack.append((b, True))
            stack.extend((i, False) for i in driver[b][1])

    for name in outs:
        for b in mod["ports"][name]["bits"]:
            visit(b)
    res = []
    for case in cases:
        val = {"0": 0, "1": 1}
        for name, v in case.items():
            for k, b in enumerate(mod["ports"][name]["bits"]):
                val[b] = (v >> k) & 1
        for out, ins, lut in order:
            val[out] = (lut >> sum(val[i] << j for j, i in enumerate(ins))) & 1
        res.append({name: sum(val[b] << k for k, b in enumerate(mod["ports"][name]["bits"]))
                    for name in outs})
    return res


def units():
    # Rewritten RTL evaluated on known values (golden's rules, docs/numerics.md): binary32
    # inputs -> E4M3 block-scale codes (RNE, saturating to 448, NaN code 0x7F) and element codes
    # of nibble_elem_quant with all three formats (RNE ties to the even code, SR with B = 1).
    e4m3 = [(0x3F800000, 0x38), (0x43E00000, 0x7E), (0x43FA0000, 0x7E), (0x7FC00000, 0x7F),
            (0x00000000, 0x00), (0xC0000000, 0xC0), (0x3B000000, 0x01), (0x41100000, 0x51)]
    got = yosys_eval("nibble_e4m3_encode", [], [{"f32_i": "32'h%08x" % x} for x, _ in e4m3],
                     ["code_o"])
    for (x, want), g in zip(e4m3, got):
        check(g.get("code_o") == want, "E4M3 encode of 0x%08x = 0x%02x (got %s)" % (
            x, want, g.get("code_o")))
    #         x           encode      format rounding rand B  zero code
    elem = [(0x3FC00000, 0x3F800000, 0, 0, 0, 1, 0, 0x3),  # E2M1 1.5
            (0x40E00000, 0x3F800000, 0, 0, 0, 1, 0, 0x7),  # E2M1 7 saturates to 6
            (0xBF000000, 0x3F800000, 0, 0, 0, 1, 0, 0x9),  # E2M1 -0.5
            (0x3E800000, 0x3F800000, 0, 0, 0, 1, 0, 0x0),  # E2M1 0.25: tie to code 0
            (0x40200000, 0x3F800000, 0, 0, 0, 1, 0, 0x4),  # E2M1 2.5: tie to even code (2)
            (0x40200000, 0x3F800000, 0, 1, 1, 1, 0, 0x5),  # SR, B = 1, rand 1: up to 3
            (0x40200000, 0x3F800000, 0, 1, 0, 1, 0, 0x4),  # SR, rand 0: down to 2
            (0x3F400000, 0x40000000, 0, 0, 0, 1, 0, 0x3),  # E2M1 0.75 * 2 = 1.5
            (0xBE000000, 0x3F800000, 0, 0, 0, 1, 0, 0x0),  # E2M1 -0.125 rounds to 0: code 0
            (0xBE000000, 0x3F800000, 0, 0, 0, 1, 1, 0x8),  # ... signed zero policy: 0x8
            (0x3F800000, 0x3F800000, 1, 0, 0, 1, 0, 0x4),  # E1M2 1.0
            (0x3E800000, 0x3F800000, 1, 0, 0, 1, 0, 0x1),  # E1M2 0.25 subnormal
            (0xBD800000, 0x3F800000, 1, 0, 0, 1, 1, 0x8),  # E1M2 -0.0625, signed zero: 0x8
            (0x7FC00000, 0x3F800000, 1, 0, 0, 1, 1, 0x0),  # E1M2 NaN v: code 0
            (0x40600000, 0x3F800000, 2, 0, 0, 1, 0, 0x4),  # INT4 3.5: tie to even 4
            (0xBE000000, 0x3F800000, 2, 0, 0, 1, 1, 0x0),  # INT4 -0.125, signed: no -0, code 0
            (0xC0FCCCCD, 0x3F800000, 2, 0, 0, 1, 0, 0x9)]  # INT4 -7.9 saturates to -7
    got = yosys_eval("nibble_elem_quant", [("FormatMask", sv_mask(MASK_ALL))],
                     [{"x_i": "32'h%08x" % x, "encode_i": "32'h%08x" % e, "format_i": f,
                       "rounding_i": r, "rand_i": rnd, "sr_bits_i": b, "zero_i": z}
                      for x, e, f, r, rnd, b, z, _ in elem], ["code_o"])
    for c, g in zip(elem, got):
        check(g.get("code_o") == c[-1], "elem_quant x=0x%08x e=0x%08x format %d %s zero %d: code %d "
              "(got %s)" % (c[0], c[1], c[2], "SR" if c[3] else "RNE", c[6], c[-1], g.get("code_o")))

    # The element quantizer synthesized and mapped: the netlist computes the same codes (each
    # cell evaluated from the library's function); more formats are not smaller than fewer.
    area = {}
    with tempfile.TemporaryDirectory() as d:
        cells_json = os.path.join(d, "generic.cells.json")
        r = subprocess.run([sys.executable, os.path.join(SRC, "rtl", "synth", "liberty_cells.py"),
                            nibble_synth.GENERIC_LIB, cells_json])
        check(r.returncode == 0, "cell models of the generic library")
        base, every = sv_mask(MASK_BASELINE), sv_mask(MASK_ALL)
        for mask in (base, every):
            net = os.path.join(d, "eq.netlist.json")
            r = nibble_synth.run_flow("nibble_elem_quant", [("FormatMask", mask)],
                                      nibble_synth.GENERIC_LIB, yosys=YOSYS, cache=CACHE,
                                      netlist=net)
            area[mask] = r["area"]
            print("      nibble_elem_quant FormatMask=%s: %.1f GE, %d cells, depth %s" % (
                mask, r["area"], r["cells"], r["depth"]))
            check(r["flops"] == 0, "nibble_elem_quant %s is combinational" % mask)
            enabled = [c for c in elem if (sv_mask_value(mask) >> c[2]) & 1]
            got = netlist_eval(net, cells_json, [
                {"x_i": x, "encode_i": e, "format_i": f, "rounding_i": rr, "rand_i": rnd,
                 "sr_bits_i": b, "zero_i": z} for x, e, f, rr, rnd, b, z, _ in enabled], ["code_o"])
            bad = [(c, g["code_o"]) for c, g in zip(enabled, got) if g["code_o"] != c[-1]]
            check(not bad, "mapped nibble_elem_quant %s netlist: %d known codes (wrong: %s)" % (
                mask, len(enabled), bad))
    check(area[every] >= area[base] > 0, "elem_quant all formats >= E2M1-only > 0")
    flow_errors()
    return 0


def units_full():
    # The whole units. Flops: the RTL's register bits. quantizer, 16 lanes: stage 1 valid,
    # nan_block, format 2, mode 2, rounding, zero policy, sr_bits 4, S_enc 32, g 32, amax 31,
    # x 16*32, rand 16*8 = 747; stage 2 valid, nan_block, format 2, rounding, zero policy,
    # sr_bits 4, scale 32, encode 32, x 512, rand 128 = 714; stage 3 valid, scale 32, codes 64
    # = 97; less the scale code's bit 31 in stages 2 and 3, always 0 (amax >= 0, the NaN codes
    # are positive): 1556.
    # RHT16: four stage registers of valid, bf16 and 16 x 32 bits, the output valid and 512.
    want_flops = {"nibble_quantizer": 747 + 714 + 97 - 2, "nibble_rht16": 4 * (2 + 512) + 513}

    def one(job):
        top, params = job
        return nibble_synth.run_flow(top, params, nibble_synth.GENERIC_LIB, yosys=YOSYS,
                                     cache=CACHE)

    jobs = [("nibble_quantizer", [("FormatMask", sv_mask(MASK_BASELINE)), ("Lanes", "16")]),
            ("nibble_rht16", [])]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for (top, params), r in zip(jobs, ex.map(one, jobs)):
            print("      %s %s: %.1f GE, %d cells, %d flops, depth %s (%.1f s%s)" % (
                top, " ".join("%s=%s" % p for p in params), r["area"], r["cells"], r["flops"],
                r["depth"], r["seconds"], ", cached" if r.get("cached") else ""))
            check(r["area_unit"] == "GE" and r["area"] > 0, "%s: area > 0 GE" % top)
            check(r["flops"] == want_flops[top], "%s: %d flops = the RTL's %d register bits" % (
                top, r["flops"], want_flops[top]))
            check(r["flops"] < r["cells"] < 1000000, "%s: flops < %d cells < 10^6" % (
                top, r["cells"]))
            per_cell = r["area"] / r["cells"]
            check(0.667 <= per_cell <= 6.667, "%s: %.2f GE per cell, within the library's cell "
                  "sizes" % (top, per_cell))
            # at least one binary32 multiply (or add) between registers: tens of levels
            check(r["depth"] is not None and 20 <= r["depth"] <= 2000, "%s: depth %s levels" % (
                top, r["depth"]))
    return 0


def flow_errors():
    # Errors surface: a top that does not exist, and a function the rewrite cannot express.
    try:
        nibble_synth.run_flow("nibble_no_such_unit", [], nibble_synth.GENERIC_LIB, yosys=YOSYS)
        check(False, "an unknown top raises FlowError")
    except nibble_synth.FlowError as e:
        check("nibble_no_such_unit" in str(e), "an unknown top raises FlowError (%s)" % str(e)[:80])
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad_pkg.sv")
        with open(bad, "w") as f:
            f.write("package bad_pkg;\n  function automatic int f(int a);\n    if (a > 0) return 1;"
                    "\n    a = a + 1;\n    return a;\n  endfunction\nendpackage\n")
        r = subprocess.run([sys.executable, os.path.join(SRC, "rtl", "synth", "sv_compat.py"),
                            os.path.join(d, "out"), bad], capture_output=True, text=True)
        check(r.returncode != 0 and "return" in r.stderr,
              "sv_compat.py refuses a `return` it cannot rewrite (%s)" % r.stderr.strip()[:80])
    cache_race()
    return 0


def cache_race():
    # Flows that synthesize the same key at once (parallel tests share one cache) all succeed
    # with the same record, and the cache ends with one record and one netlist, no temporaries.
    import threading
    with tempfile.TemporaryDirectory() as d:
        cache = os.path.join(d, "cache")
        results, errors = [], []
        # Every flow's synthesis finishes before any of them stores its result: the worst
        # interleaving, every time.
        flow = nibble_synth.run_flow
        barrier = threading.Barrier(4, timeout=300)

        def synthesis_then_wait(*args, **kwargs):
            rec = flow(*args, **kwargs)
            barrier.wait()
            return rec

        def one(i):
            try:
                net = os.path.join(d, "net%d.json" % i)
                rec = flow("nibble_e4m3_encode", [], nibble_synth.GENERIC_LIB, yosys=YOSYS,
                           cache=cache, netlist=net)
                results.append((rec["area"], rec["cells"], os.path.getsize(net)))
            except Exception as e:  # reported below, with the others' results
                errors.append(repr(e))

        nibble_synth.run_flow = synthesis_then_wait  # the cached flow's own call to Yosys
        try:
            threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            nibble_synth.run_flow = flow
        check(not errors and len(results) == 4 and len(set(results)) == 1,
              "4 flows of one key at once: all succeed alike (%s, errors %s)" % (results, errors))
        left = sorted(os.listdir(cache))
        check(len(left) == 2 and sum(f.endswith(".netlist.json") for f in left) == 1,
              "the cache holds one record and one netlist after them (%s)" % left)


def write_npy(path, rows, cols, seed):
    """A float32 .npy (format 1.0) without numpy: Laplace-distributed values."""
    import random
    import struct
    rng = random.Random(seed)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        for _ in range(rows * cols):
            f.write(struct.pack("<f", rng.expovariate(1.0) * rng.choice((-1, 1))))


def with_cache(cmd):
    """A `nibble area`/`nibble energy` command with the tests' shared synthesis cache, if any."""
    return cmd + ["--cache", CACHE] if CACHE else cmd


def flow_json(cmd, what):
    """Runs a `nibble area`/`nibble energy` command and prints its output. Returns its --json
    document (None, after a failed check naming `what`, where it does not exit 0) and its output."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout)
    check(r.returncode == 0, "%s exits 0 (%s)" % (what, r.stderr[-500:]))
    if r.returncode != 0:
        return None, r.stdout
    with open(cmd[cmd.index("--json") + 1]) as f:
        return json.load(f), r.stdout


def energy_cli():
    cli = os.environ["NIBBLE_CLI"]
    with tempfile.TemporaryDirectory() as d:
        npy = os.path.join(d, "t.npy")
        write_npy(npy, 4, 64, 7)
        js, csv = os.path.join(d, "e.json"), os.path.join(d, "e.csv")
        j, _ = flow_json(with_cache([cli, "energy", "--configs", "e2m1,all", "--dists", "gaussian,rht", "--blocks",
                                     "64", "--k", "64", "--tensor", npy, "--json", js, "--csv", csv]),
                         "nibble energy")
        if j is None:
            return 1
        res = j["results"]
        got = {(e["config"], e["format"], e["operands"]) for e in res}
        want = {("e2m1", "e2m1", o) for o in ("gaussian", "rht", "user")} | \
            {("all", f, o) for f in ("e2m1", "e1m2", "int4") for o in ("gaussian", "rht", "user")}
        check(got == want, "one result per configuration x format x operands (%d)" % len(got))
        check(all(e["energy_per_block"] > 0 and abs(e["energy_per_mac"] * 16 - e["energy_per_block"])
                  < 1e-9 * e["energy_per_block"] for e in res), "energies > 0, per MAC = per block / 16")
        check(all(abs(e["logic_per_block"] + e["flops_per_block"] + e["clock_per_block"] +
                      e["leakage_per_block"] - e["energy_per_block"]) < 1e-6 * e["energy_per_block"]
                  for e in res), "logic + flops + clock + leakage = total")
        check(all(0 < e["toggle_rate"] < 1 for e in res), "toggle rates in (0, 1)")
        # the clock term is flops x 1 E_NAND2 per cycle with the generic library
        check(all(e["flops"] > 100 and abs(e["clock_per_block"] - e["flops"]) < 1e-9 for e in res),
              "generic clock energy = flops x 1 E_NAND2 per block")
        check(all(e["lane_design"] == lane_design_names()[package_value_enum("DefaultLaneDesign")]
                  for e in res), "the default lane design")
        with open(csv) as f:
            check(len(f.read().strip().splitlines()) == len(res) + 1, "CSV: header + one row each")
        for bad in (["--configs", "e3m0"], ["--lane-design", "no-such-design"], ["--k", "17"],
                    ["--dists", "cauchy"], ["--scales", "e8m0"], ["--scales", "fp32,fp32"],
                    ["--actions", os.path.join(d, "no-such-dir", "a.json")],
                    ["--tensor", os.path.join(d, "missing.npy")], ["--liberty", "/nonexistent.lib"],
                    ["--tile", "0x2"], ["--tile", "4x4x4"], ["--tile", "2x2", "--calibration"]):
            r = subprocess.run([cli, "energy"] + bad, capture_output=True, text=True)
            check(r.returncode == 2 and "error" in r.stderr, "bad input %s: exit 2 with a message" % bad)
        # the energy per sub-block (the hierarchical synthesis nibble area --breakdown shares) and
        # the energy-per-action file
        acts = os.path.join(d, "actions.json")
        ej, _ = flow_json(with_cache([cli, "energy", "--configs", "all", "--dists", "gaussian", "--blocks", "64",
                                   "--k", "64", "--breakdown", "--tile", "3x2", "--json", js, "--actions", acts]),
                       "nibble energy --breakdown --actions")
        if ej is None:
            return 1
        res = ej["results"]
        # the tensor core's operand staging: its netlist stores and returns every block (the flow
        # checks each read), the generic clock is one E_NAND2 per flop per cycle, and the per-MAC
        # figures compose as documented
        st = ej["staging"]
        streams = {(s["format"], s["operands"]): s for s in st["streams"]}
        check(set(streams) == {(f, "gaussian") for f in ("e2m1", "e1m2", "int4")},
              "staging: one run per operand stream (%s)" % sorted(streams))
        flops = (st["depth"] + 1) * st["entry_bits"]
        check(st["entry_bits"] == 16 * 4 + 32 and st["depth"] == 8, "staging: 16 codes + a 32-bit scale, 8 entries")
        check(all(abs(s["clock_per_cycle_a"] - flops) < 1e-9 and abs(s["clock_per_cycle_b"] - flops) < 1e-9
                  for s in streams.values()), "staging: generic clock = (depth + 1) x entry bits flops x 1 E_NAND2")
        check(all(s["energy_per_cycle_a"] > flops and s["energy_per_cycle_b"] > flops and s["cycles"] > 0
                  for s in streams.values()), "staging: data toggles on top of the clock")
        rows, cols = st["array_rows"], st["array_cols"]
        check((rows, cols) == (3, 2), "--tile 3x2: the staging's array is 3 rows x 2 columns (%s x %s)" % (rows, cols))
        for e in res:
            s = streams[(e["format"], e["operands"])]
            want = (rows * s["energy_per_cycle_a"] + cols * s["energy_per_cycle_b"]) / (16.0 * rows * cols)
            check(abs(e["staging_energy_per_mac"] - want) < 1e-9 * want and
                  abs(e["tensor_core_energy_per_mac"] - e["energy_per_mac"] - want) < 1e-9 * want,
                  "tensor core per MAC = DPU per MAC + (rows x A file + cols x B file) / (16 rows cols)")
        for e in res:
            parts = e["sub_blocks_per_mac"]
            check(len(parts) == 10 and all(v >= 0 for v in parts.values()) and
                  sum(v > 0 for v in parts.values()) >= 9, "ten sub-blocks, nine > 0 (%s)" % parts)
            check(abs(sum(parts.values()) - e["hier_energy_per_mac"]) < 1e-6 * e["hier_energy_per_mac"],
                  "sub-blocks add up to the hierarchical netlist's energy")
            check(0.8 < e["hier_energy_per_mac"] / e["energy_per_mac"] < 1.5,
                  "hierarchical and flattened energies within 0.8-1.5x (%.4g vs %.4g)" %
                  (e["hier_energy_per_mac"], e["energy_per_mac"]))
        with open(acts) as f:
            a = json.load(f)
        check(a["schema"] == "nibble-energy-actions/1" and a["energy_unit"] == "E_NAND2", "actions: schema, unit")
        blocks = [x for x in a["actions"] if x["action"] == "block"]
        idle = [x for x in a["actions"] if x["action"] == "idle_cycle"]
        check(len(blocks) == len(res) and len(idle) == 1, "actions: one block per result, one idle cycle")
        rf = [x for x in a["actions"] if x["component"] == "nibble_operand_rf"]
        check(len(rf) == 2 * len(streams) and all(x["action"] == "write_read_cycle" for x in rf),
              "actions: a write + read cycle of the A and of the B file per operand stream")
        check(all(abs(x["energy_per_byte"] * a["components"]["nibble_operand_rf"]["entry_bits"] / 8 - x["energy"])
                  < 1e-9 * x["energy"] for x in rf), "actions: staging energy per byte x entry bytes = per cycle")
        check(all(abs(x["energy"] - e["energy_per_block"]) < 1e-9 * x["energy"] for x, e in zip(blocks, res)),
              "actions: block energies = the results'")
        # generic library: an idle cycle is the flops' clocks, 1 E_NAND2 each
        check(abs(idle[0]["energy"] - res[0]["flops"]) < 1e-9, "actions: idle cycle = flops x 1 E_NAND2 (%s)" %
              idle[0]["energy"])
    return 0


def area_cli():
    cli = os.environ["NIBBLE_CLI"]
    names = lane_design_names()
    default = names[package_value_enum("DefaultLaneDesign")]
    with tempfile.TemporaryDirectory() as d:
        js, csv = os.path.join(d, "a.json"), os.path.join(d, "a.csv")
        doc, _ = flow_json(with_cache([cli, "area", "--lane-design", "all", "--configs", "all", "--json", js,
                                       "--csv", csv]), "nibble area --lane-design all")
        if doc is None:
            return 1
        rows = doc["configs"]
        check([e["lane_design"] for e in rows] == names, "one row per lane design, in table order")
        check(all(e["area"] > 0 and e["format_mask"] == sv_mask(MASK_ALL) for e in rows), "areas > 0, all formats")
        common = [e for e in rows if e["lane_design"] == "common-unit"][0]
        best = min(rows, key=lambda e: e["area"])
        check(best["lane_design"] == default, "the default lane design (%s) is the smallest at all formats "
              "(smallest: %s)" % (default, best["lane_design"]))
        check(best["area"] < common["area"], "an own-unit design is smaller than the common unit")
        with open(csv) as f:
            lines = f.read().strip().splitlines()
        check(len(lines) == len(rows) + 1 and "lane_design" in lines[0].split(","), "CSV: header + one row each")
        # the default design's area per sub-block (one hierarchical synthesis)
        doc, _ = flow_json(with_cache([cli, "area", "--configs", "all", "--breakdown", "--json", js]),
                        "nibble area --breakdown")
        if doc is None:
            return 1
        e = doc["configs"][0]
        blocks = e["sub_blocks"]
        check(len(blocks) == 9 and all(v > 0 for v in blocks.values()), "nine sub-blocks, each > 0 (%s)" % blocks)
        check(abs(sum(blocks.values()) - e["hier_area"]) < 1e-6 * e["hier_area"],
              "sub-blocks add up to the hierarchical total (%.1f vs %.1f)" % (sum(blocks.values()), e["hier_area"]))
        for bad in (["--lane-design", "no-such-design"], ["--lane-design", "split,split"],
                    ["--unit", "rht16", "--lane-design", "split"], ["--tile", "2x2", "--breakdown"],
                    ["--scales", "e8m0"], ["--scales", "all,all"], ["--unit", "rht16", "--scales", "fp32"]):
            r = subprocess.run([cli, "area"] + bad, capture_output=True, text=True)
            check(r.returncode == 2 and r.stderr.startswith("nibble: error:"),
                  "bad input %s: exit 2 with 'nibble: error:' (%s)" % (bad, r.stderr.strip()[:100]))
    return 0


def levels_cli():
    # nibble area --level: every level is a sum of synthesized parts. The quantizer and RHT
    # records (minutes of synthesis each) are planted in a scratch cache under the flow's own
    # keys with areas no synthesis would give, so the tensor-core figure must carry them
    # through; every other part is synthesized (small shapes) or reused from CACHE.
    import random
    cli = os.environ["NIBBLE_CLI"]
    for bad in (["--level", "die"], ["--level", "tensor-core", "--unit", "quantizer"],
                ["--level", "lane", "--tile", "2x2"], ["--rf-depth", "4"], ["--level", "dpu", "--gemm-k", "64"],
                ["--level", "tensor-core", "--gemm-k", "24"], ["--level", "tensor-core", "--rf-depth", "1"],
                ["--level", "dpu", "--breakdown"], ["--level", "dpu", "--lane-design", "all"],
                ["--level", "array", "--tile", "0x2"], ["--level", "dpu", "--strict"]):
        r = subprocess.run([cli, "area"] + bad, capture_output=True, text=True)
        check(r.returncode == 2 and r.stderr.startswith("nibble: error:"),
              "bad input %s: exit 2 with 'nibble: error:' (%s)" % (bad, r.stderr.strip()[:100]))
    lanes, rows, cols, depth, k = 16, 1, 1, 2, 16
    design = str(package_value_enum("DefaultLaneDesign"))
    masks = [MASK_BASELINE, MASK_ALL]
    lib_text = nibble_synth.liberty_text(nibble_synth.GENERIC_LIB)
    rng = random.Random(2026)
    with tempfile.TemporaryDirectory() as d:
        cache = os.path.join(d, "cache")
        os.makedirs(cache)
        if CACHE and os.path.isdir(CACHE):
            for f in os.listdir(CACHE):
                os.symlink(os.path.join(CACHE, f), os.path.join(cache, f))
        planted = {}
        for top, params in [("nibble_quantizer", [("FormatMask", sv_mask(m)), ("Lanes", str(lanes))]) for m in masks] + \
                           [("nibble_rht16", [])]:
            key = nibble_synth.cache_key(top, params, lib_text, None)
            area = round(rng.uniform(1e4, 1e5), 3)
            planted[(top, tuple(params))] = area
            for suffix in (".json", ".netlist.json"):
                path = os.path.join(cache, key + suffix)
                if os.path.lexists(path):
                    os.remove(path)
            with open(os.path.join(cache, key + ".json"), "w") as f:
                json.dump({"top": top, "params": dict(params), "liberty": nibble_synth.GENERIC_LIB, "area": area,
                           "area_unit": "GE", "cells": 1, "flops": 0, "depth": 1.0, "depth_unit": "levels",
                           "cells_by_type": {}, "seconds": 0.0}, f)
            with open(os.path.join(cache, key + ".netlist.json"), "w") as f:
                f.write("{}\n")
        js, csv = os.path.join(d, "l.json"), os.path.join(d, "l.csv")
        j, out = flow_json([cli, "area", "--level", "tensor-core", "--tile", "%dx%d" % (rows, cols), "--rf-depth",
                       str(depth), "--gemm-k", str(k), "--configs", "e2m1,all", "--cache", cache, "--json", js,
                       "--csv", csv], "nibble area --level tensor-core")
        if j is None:
            return 1

        def rec(top, params, hier=False):
            # the flow's record for this part: a cache hit on what the command synthesized
            return nibble_synth.run_flow(top, params, nibble_synth.GENERIC_LIB, yosys=YOSYS, cache=cache, hier=hier)

        dpu = [("Lanes", str(lanes)), ("LaneDesign", design)]
        want = {}
        for m, name in zip(masks, ("e2m1", "all")):
            fm = [("FormatMask", sv_mask(m))]
            h = rec("nibble_dpu", fm + dpu, hier=True)["modules"]
            want[name] = {
                # all 2 x Lanes decoders and Lanes lanes; the lane level is 1/Lanes of them
                "lane": h["nibble_decode"]["area"] + h["nibble_lane"]["area"],
                "dpu": rec("nibble_dpu", fm + dpu)["area"],
                "array": rec("nibble_tile", fm + dpu + [("Rows", str(rows)), ("Cols", str(cols))])["area"],
                "staging": rec("nibble_operand_rf", [("Lanes", str(lanes)), ("Depth", str(depth))])["area"],
                "quantizer": planted[("nibble_quantizer", (("FormatMask", sv_mask(m)), ("Lanes", str(lanes))))],
                "rht16": planted[("nibble_rht16", ())],
            }
        share = rows * cols / k
        check(abs(j["quantizer_share"] - share) < 1e-12, "quantizer share = rows x cols / K = %g" % share)
        parts = {p["part"]: p for p in j["parts"]}
        check(sorted(parts) == sorted(want["e2m1"]), "one part each: %s" % sorted(parts))
        for name in ("e2m1", "all"):
            for p, area in want[name].items():
                check(abs(parts[p]["area"][name] - area) <= 1e-9 * area,
                      "%s %s: %.3f = the flow's record (%.3f)" % (p, name, parts[p]["area"][name], area))
        check(parts["staging"]["count"] == rows + cols and parts["quantizer"]["count"] == share and
              parts["lane"]["count"] == 1.0 / lanes,
              "multiplicities: 1/%d of the lanes, %d register files, %g quantizer" % (lanes, rows + cols, share))
        w = want
        levels = {l["level"]: l for l in j["levels"]}
        check(list(levels) == ["lane", "DPU", "array %dx%d" % (rows, cols), "array + staging", "tensor core"],
              "the five levels in order (%s)" % list(levels))
        for name in ("e2m1", "all"):
            expect = {
                "lane": w[name]["lane"] / lanes, "DPU": w[name]["dpu"], "array %dx%d" % (rows, cols): w[name]["array"],
                "array + staging": w[name]["array"] + (rows + cols) * w[name]["staging"],
                "tensor core": w[name]["array"] + (rows + cols) * w[name]["staging"] +
                share * (w[name]["quantizer"] + w[name]["rht16"]),
            }
            for lv, area in expect.items():
                check(abs(levels[lv]["area"][name] - area) <= 1e-9 * area,
                      "%s, %s: %.3f = the sum of its parts (%.3f)" % (lv, name, levels[lv]["area"][name], area))
        for lv, l in levels.items():
            pct = 100.0 * (l["area"]["all"] - l["area"]["e2m1"]) / l["area"]["e2m1"]
            check(abs(l["percent_vs_e2m1"]["all"] - pct) < 1e-9 and l["percent_vs_e2m1"]["e2m1"] == 0,
                  "%s: %+.2f%% vs E2M1" % (lv, pct))
        # the staging stores 4-bit codes, the same in every format
        check(w["e2m1"]["staging"] == w["all"]["staging"], "the register file does not depend on the format mask")
        rf = rec("nibble_operand_rf", [("Lanes", str(lanes)), ("Depth", str(depth))])
        entry = lanes * package_value("CodeWidth") + 32  # the codes + a binary32-wide scale slot
        check(rf["flops"] == (depth + 1) * entry, "register file: %d flops = %d entries + the read register of "
              "%d bits" % (rf["flops"], depth, entry))
        check(w["e2m1"]["array"] > w["e2m1"]["dpu"], "a %dx%d array (with its output buffer) is larger than one DPU" % (rows, cols))
        check(j["mixfp4_area_percent"] > 0 and "MixFP4" in out, "MixFP4's published figure beside ours")
        with open(csv) as f:
            lines = f.read().strip().splitlines()
        check(len(lines) == 1 + 2 * len(levels), "CSV: header + one line per level and configuration")
    return 0


def sta_cli():
    # nibble area --sta: the E2M1-only DPU mapped to SKY130 HD and timed by OpenSTA.
    cli = os.environ["NIBBLE_CLI"]
    def refused(args, says):
        r = subprocess.run([cli, "area"] + args, capture_output=True, text=True)
        # (after any "synthesizing" progress lines: the unit-delay library is refused by the flow)
        error = r.stderr[r.stderr.find("nibble: error:"):] if "nibble: error:" in r.stderr else ""
        check(r.returncode == 2 and error.startswith("nibble: error:") and says in error,
              "bad input %s: exit 2 with 'nibble: error: ...%s' (%s)" % (args, says, r.stderr.strip()[-160:]))
    for bad, says in ((["--sta"], "--liberty"), (["--clock-ns", "0"], "--clock-ns"), (["--clock-ns", "-3"], "--clock-ns"),
                      (["--clock-ns", "nan"], "--clock-ns"), (["--strict"], "--strict"), (["--map", "fast"], "--map"),
                      (["--map", "timing"], "--liberty"), (["--level", "dpu", "--map", "timing"], "--map")):
        refused(bad, says)
    lib = os.path.join(pdk_dir(), "sky130hd", "sky130_fd_sc_hd__tt_025C_1v80.lib.gz")
    if not os.path.isfile(lib) or shutil.which("sta") is None:
        print("SKIP: needs the SKY130 HD library (%s) and OpenSTA (`sta`)" % lib)
        return 77
    with tempfile.TemporaryDirectory() as d:
        # Libraries a clock cannot be timed with: no delays, not readable, unit delays.
        nodelay, corrupt = os.path.join(d, "nodelay.lib"), os.path.join(d, "corrupt.lib.gz")
        with open(nodelay, "w") as f:
            f.write("library (nodelay) {\n  cell (inv) {\n    area : 1 ;\n  }\n}\n")
        with open(corrupt, "wb") as f:
            f.write(b"not gzip")
        timing_args = ["--map", "timing", "--configs", "e2m1", "--liberty"]
        refused(timing_args + [nodelay], "no delays")
        refused(timing_args + [corrupt], "cannot be read")
        refused(timing_args + [nibble_synth.GENERIC_LIB], "unit delays")
        refused(timing_args + [lib, "--breakdown"], "--breakdown")
        js = os.path.join(d, "a.json")
        cmd = with_cache([cli, "area", "--liberty", lib, "--configs", "e2m1", "--sta", "--clock-ns", "25",
                          "--json", js])
        doc, _ = flow_json(cmd, "nibble area --sta")
        if doc is None:
            return 1
        e = doc["configs"][0]["sta"]
        # the DPU's stages are tens of ns in SKY130 HD (ABC's estimate: the depth column)
        check(5 < e["critical_path_ns"] < 200, "a critical path of 5-200 ns (%s)" % e)
        check(abs(e["slack_ns"] - (25 - e["critical_path_ns"])) < 0.01, "slack = clock - path (%s)" % e)
        check(abs(e["fmax_mhz"] * e["critical_path_ns"] - 1000) < 1e-6, "Fmax = 1 / path")
        check("clocked by clk" in e["endpoint"] and "rst_ni" not in e["startpoint"],
              "a clocked endpoint, not the reset (%s -> %s)" % (e["startpoint"], e["endpoint"]))
        # --strict: a missed clock is an error (exit 2, no output file), a met one is not
        os.remove(js)
        for clock, rc in ((e["critical_path_ns"] / 2, 2), (e["critical_path_ns"] * 2, 0)):
            r = subprocess.run(cmd[:cmd.index("--clock-ns")] + ["--clock-ns", "%.3f" % clock, "--strict"] +
                               cmd[cmd.index("--clock-ns") + 2:], capture_output=True, text=True)
            check(r.returncode == rc and (rc == 0 or "--strict" in r.stderr),
                  "--strict at %.1f ns: exit %d (%s)" % (clock, rc, r.stderr.strip()[-160:]))
            check(os.path.exists(js) == (rc == 0), "--strict at %.1f ns: the JSON written only when met" % clock)
        # --map timing at half the area-mapped path (whole ns, so a results run shares the cache):
        # mapped for that clock, the path is shorter
        # (met or not), and the verdict fields agree with the slack.
        clock = float(round(e["critical_path_ns"] / 2))
        tcmd = with_cache([cli, "area", "--liberty", lib, "--configs", "e2m1", "--map", "timing", "--clock-ns",
                           str(clock), "--json", js])
        doc, _ = flow_json(tcmd, "nibble area --map timing")
        if doc is None:
            return 1
        t = doc["configs"][0]["sta"]
        check(doc["mapping"] == "timing" and doc["clock_ns"] == clock and 0 < t["delay_target_ps"] <= clock * 1000,
              "JSON: mapping timing for %s ns (%s)" % (clock, {k: doc.get(k) for k in ("mapping", "clock_ns")}))
        check(t["critical_path_ns"] < e["critical_path_ns"],
              "mapped for %.1f ns: path %.2f < the area mapping's %.2f ns" % (clock, t["critical_path_ns"],
                                                                               e["critical_path_ns"]))
        check(abs(t["slack_ns"] - (clock - t["critical_path_ns"])) < 0.01, "slack = clock - path (%s)" % t)
        check(1 <= t["mappings"] <= 4 and (t["mappings"] > 1 or t["delay_target_ps"] == clock * 1000),
              "one to four targets, the first the period (%s)" % t)
        check(t["meets_clock"] == (t["slack_ns"] >= 0) and abs(t["misses_by_ns"] - max(0, -t["slack_ns"])) < 1e-9,
              "meets_clock / misses_by_ns from the slack (%s)" % t)
        stages = t["stages_at_clock"]
        check(stages >= 1 and (stages - 1) * clock < t["critical_path_ns"] <= stages * clock + 1e-9,
              "stages_at_clock = path / clock rounded up (%s)" % t)
        r = subprocess.run(tcmd + ["--strict"], capture_output=True, text=True)
        check(r.returncode == (0 if t["meets_clock"] else 2), "--map timing --strict: exit 0 iff met (%s)" % r.stderr[-160:])
    return 0


def main():
    what = sys.argv[1]
    rc = {"calibration": calibration, "sky130": sky130, "tree_twin": tree_twin, "lane_miter": lane_miter,
          "dpu_monotonic": dpu_monotonic, "netlists": netlists, "cells": cells, "energy_cli": energy_cli,
          "units": units, "units_full": units_full, "area_cli": area_cli, "sta_cli": sta_cli,
          "timing": timing,
          "levels_cli": levels_cli}[what]()
    if rc == 77:
        return 77
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
