#!/usr/bin/env python3
"""The shrinkage-bias table of your own tensor.

    PYTHONPATH=build/python python3 examples/shrinkage_bias.py weights.npy [--scale nvfp4 --block 1x16 --rht 16]

Quantizes the tensor (.npy, or one tensor of a .safetensors file: --name) with
golden under each format with round-to-nearest-even, prints SQNR, the
attenuation alpha = <Q(x),x>/||x||^2, the mean relative magnitude change and
B_eff, then each format's per-level bias: the flat-density prediction beside
what the tensor's values did at that level, in the scaled domain (units of the
format's grid). A negative bias at a level pulls magnitudes down there: E2M1
does it at 2 and 4, where its grid spacing doubles; E1M2 and INT4 do not.
"""
import argparse
import math

import nibble


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tensor", help=".npy or .safetensors file, seen as [rows, last axis]")
    p.add_argument("--name", default="", help="the tensor of a .safetensors file holding several")
    p.add_argument("--formats", default=",".join(nibble.formats))
    p.add_argument("--scale", default="nvfp4", choices=nibble.scale_modes)
    p.add_argument("--block", default="1x16", choices=nibble.block_shapes)
    p.add_argument("--rht", type=int, default=0, help="RHT size along the last axis, 0 for none")
    a = p.parse_args()

    x = nibble.read_tensor(a.tensor, a.name)
    formats = a.formats.split(",")
    print(f"{a.tensor}{' ' + a.name if a.name else ''} {list(x.shape)}: scale {a.scale}, block {a.block}, "
          f"RHT {a.rht or 'off'}, rne")
    print(f"{'format':7} {'SQNR dB':>8} {'alpha':>8} {'|q|/|x|-1':>10} {'B_eff':>6}")
    measured = {}
    for f in formats:
        m = nibble.measure(x, format=f, scale=a.scale, block=a.block, rht=a.rht)
        measured[f] = m
        print(f"{f:7} {m['sqnr_db']:8.3f} {m['alpha']:8.5f} {m['rel_mag_error']:10.5f} {m['b_eff']:6.3f}")
    if measured[formats[0]]["nonfinite_zeroed"]:
        print(f"({measured[formats[0]]['nonfinite_zeroed']} non-finite values set to 0)")

    for f in formats:
        print(f"\n{f}: bias per level (predicted for a flat density; measured on this tensor)")
        print(f"{'level':>6} {'predicted':>10} {'measured':>10} {'count':>8}")
        levels = {round(float(r['level']), 6): r for r in measured[f]["level_bias"]}
        for g in nibble.grid_level_bias(f):
            r = levels.get(round(float(g["level"]), 6))
            bias = "" if r is None or math.isnan(r["bias"]) else f"{r['bias']:10.5f}"
            count = 0 if r is None else int(r["count"])
            print(f"{g['level']:6g} {g['bias']:10.5f} {bias:>10} {count:8d}")


if __name__ == "__main__":
    try:
        main()
    except (ValueError, OSError) as e:  # nibble's errors name the file or setting at fault
        raise SystemExit(f"shrinkage_bias.py: error: {e}")
