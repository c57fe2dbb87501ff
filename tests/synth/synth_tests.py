#!/usr/bin/env python3
"""tests/synth: checks of the area flow (rtl/synth), run by CTest (label synth).

  synth_tests.py calibration        generic library: adders, a 4x4 multiplier, flops
  synth_tests.py sky130              the same adder on SKY130 HD (skips without the PDK)
  synth_tests.py tree_twin          rtl/synth/twins/nibble_adder_tree.sv == the exact sum (SAT)
  synth_tests.py dpu_monotonic      nibble_dpu, 16 lanes: every mask >= E2M1-only > 0

Exit 0 pass, 1 fail, 77 skip (CTest SKIP_RETURN_CODE).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(SRC, "rtl", "synth"))
import nibble_synth  # noqa: E402

CALIB = os.path.join(HERE, "calib.v")
YOSYS = os.environ.get("NIBBLE_YOSYS", "yosys")
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


def dpu_monotonic():
    area = {}
    for mask in ("3'b001", "3'b111"):
        r = nibble_synth.run_flow("nibble_dpu", [("FormatMask", mask), ("Lanes", "16")],
                                  nibble_synth.GENERIC_LIB, yosys=YOSYS)
        area[mask] = r["area"]
        print("      nibble_dpu 16 lanes FormatMask=%s: %.1f GE, %d cells, %d flops, depth %s "
              "(%.1f s)" % (mask, r["area"], r["cells"], r["flops"], r["depth"], r["seconds"]))
    check(area["3'b001"] > 0, "E2M1-only area > 0")
    check(area["3'b111"] >= area["3'b001"], "all three formats >= E2M1-only")


def main():
    what = sys.argv[1]
    rc = {"calibration": calibration, "sky130": sky130, "tree_twin": tree_twin,
          "dpu_monotonic": dpu_monotonic}[what]()
    if rc == 77:
        return 77
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
