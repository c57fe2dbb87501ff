#!/usr/bin/env python3
"""Per-layer attenuation of a .safetensors checkpoint under each 4-bit format.

    PYTHONPATH=build/python python3 examples/checkpoint_alpha.py model.safetensors [--rht 16] [--scale nvfp4]

Reads every tensor of the checkpoint with Nibble's own .safetensors reader
(F32, F16, BF16 or F64), quantizes each weight matrix (two or more axes; the
last is the contraction axis) with golden under each format, and prints
alpha = <Q(w),w>/||w||^2 per layer and format: below 1, the format shrinks
that layer's weights. The last line is each format's product of alphas over
the layers, what a forward pass compounds when every layer shrinks alike.
Tensors with fewer than two axes (biases, norms) are listed as skipped.
"""
import argparse
import math

import nibble


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help=".safetensors file")
    p.add_argument("--formats", default=",".join(nibble.formats))
    p.add_argument("--scale", default="nvfp4", choices=nibble.scale_modes)
    p.add_argument("--block", default="1x16", choices=nibble.block_shapes)
    p.add_argument("--rounding", default="rne", choices=nibble.roundings)
    p.add_argument("--rht", type=int, default=0, help="RHT size along the last axis, 0 for none")
    p.add_argument("--seed", type=int, default=0, help="seeds the SR bits and RHT signs")
    a = p.parse_args()

    formats = a.formats.split(",")
    print(f"{a.checkpoint}: scale {a.scale}, block {a.block}, rounding {a.rounding}, RHT {a.rht or 'off'}")
    print(f"{'tensor':32} {'shape':>14} " + " ".join(f"{'alpha ' + f:>11}" for f in formats))
    product = {f: 1.0 for f in formats}
    layers = 0
    for name in nibble.list_safetensors(a.checkpoint):
        w = nibble.read_tensor(a.checkpoint, name)
        shape = "x".join(map(str, w.shape))
        if w.ndim < 2:
            print(f"{name:32} {shape:>14} (skipped: fewer than two axes)")
            continue
        if a.rht and w.shape[-1] % a.rht:
            print(f"{name:32} {shape:>14} (skipped: last axis not a multiple of RHT {a.rht})")
            continue
        alphas = [nibble.measure(w, format=f, scale=a.scale, block=a.block, rounding=a.rounding, rht=a.rht,
                                 seed=a.seed)["alpha"] for f in formats]
        for f, alpha in zip(formats, alphas):
            product[f] *= alpha
        layers += 1
        print(f"{name:32} {shape:>14} " + " ".join(f"{v:11.5f}" for v in alphas))
    if layers == 0:
        raise SystemExit(f"{a.checkpoint}: no tensor with two or more axes")
    print(f"{'product over ' + str(layers) + ' layers':47} " +
          " ".join(f"{product[f]:11.5f}" if math.isfinite(product[f]) else f"{'nan':>11}" for f in formats))


if __name__ == "__main__":
    try:
        main()
    except (ValueError, OSError) as e:  # nibble's errors name the file or setting at fault
        raise SystemExit(f"checkpoint_alpha.py: error: {e}")
