"""The module against the `nibble` command, bit for bit: quantized-tensor files
written by one and checked or read by the other, dequantization and GEMM
outputs, and the diagnostics JSON of `nibble quant` (matrix, per-level bias,
compounding chain, synthetic inputs).
"""
import json
import math
import os
import struct
import subprocess

import numpy as np
import pytest

import nibble


def run(cli, *args, expect=0):
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    assert p.returncode == expect, f"nibble {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}{p.stderr}"
    return p.stdout


def user_tensor(rng, rows, cols):
    x = (rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-4, 4, (rows, 1)))).astype(np.float32)
    x[1, 2] = np.nan  # the CLI zeroes non-finite values for diagnostics; golden-quant marks the block
    return x


def safetensors_entry(path, name):
    """(offset in the file, length) of tensor `name`'s bytes in a .safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    begin, end = header[name]["data_offsets"]
    return 8 + n + begin, end - begin


def test_module_files_check_bit_exact_with_the_cli(cli, rng, tmp_path, cases):
    x = user_tensor(rng, 20, 96)
    np.save(tmp_path / "x.npy", x)
    for i, (f, s) in enumerate((f, s) for f in nibble.formats for s in nibble.scale_modes):
        cfg = nibble.QuantConfig(format=f, scale=s, block=nibble.block_shapes[i % 3], rounding=nibble.roundings[i % 2],
                                 rht=(0, 16, 32)[i % 3], rht_bf16=i % 4 == 1, sr_bits=1 + i % 8,
                                 seed=int(rng.integers(0, 2**63)), stream=i)
        path = tmp_path / f"q{i}.safetensors"
        nibble.write_quantized(str(path), {"py": nibble.quantize(x, cfg)})
        out = run(cli, "golden-quant", "--tensor", tmp_path / "x.npy", "--check", path)
        cases.check("py [20 x 96]" in out and "bit-exact" in out, f"{cfg}: {out}")
    # The check can fail: one code changed in the last file.
    offset, _ = safetensors_entry(path, "py.codes")
    with open(path, "r+b") as fh:
        fh.seek(offset + 5)
        b = fh.read(1)[0]
        fh.seek(offset + 5)
        fh.write(bytes([b ^ 0x01]))
    out = run(cli, "golden-quant", "--tensor", tmp_path / "x.npy", "--check", path, expect=1)
    cases.check("DIFFERS" in out, f"a changed code is found: {out}")


def test_cli_files_read_as_the_module_computes(cli, rng, tmp_path, cases):
    x = user_tensor(rng, 48, 32)
    y = user_tensor(rng, 24, 32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    settings = dict(format="e1m2", scale="mx-floor", rounding="sr", rht=16, seed=9, sr_bits=5, block="16x16")
    run(cli, "golden-quant", "--tensor", tmp_path / "x.npy", "--format", "e1m2", "--scale", "mx-floor", "--rounding",
        "sr", "--rht", 16, "--seed", 9, "--sr-bits", 5, "--block", "16x16", "--colwise", "--out", tmp_path / "qx.safetensors")
    run(cli, "golden-quant", "--tensor", tmp_path / "y.npy", "--format", "int4", "--scale", "nvfp4", "--rht", 16,
        "--seed", 9, "--out", tmp_path / "qy.safetensors")
    files = nibble.read_quantized(str(tmp_path / "qx.safetensors"))
    cases.check(sorted(files) == ["colwise", "rowwise"], f"entries {sorted(files)}")
    qx = nibble.quantize(x, **settings)
    cases.check(files["rowwise"].config == qx.config, f"{files['rowwise'].config} vs {qx.config}")
    cases.equal(files["rowwise"].codes, qx.codes, "golden-quant rowwise codes")
    cases.equal(files["rowwise"].scales, qx.scales, "golden-quant rowwise scales")
    cases.equal(files["colwise"].codes, nibble.quantize(np.ascontiguousarray(x.T), **settings).codes,
                "golden-quant colwise codes")
    qy = nibble.quantize(y, format="int4", scale="nvfp4", rht=16, seed=9)
    cases.equal(nibble.read_quantized(str(tmp_path / "qy.safetensors"))["rowwise"].scales, qy.scales, "nvfp4 scales")
    cases.equal(np.array(nibble.read_quantized(str(tmp_path / "qy.safetensors"))["rowwise"].tensor_scale),
                np.array(qy.tensor_scale), "nvfp4 tensor scale")

    run(cli, "golden-dequant", "--quantized", tmp_path / "qx.safetensors", "--name", "rowwise", "--out",
        tmp_path / "dx.npy")
    cases.equal(qx.dequantize(), np.load(tmp_path / "dx.npy"), "golden-dequant")
    run(cli, "golden-gemm", "--a", tmp_path / "qx.safetensors", "--a-name", "rowwise", "--b",
        tmp_path / "qy.safetensors", "--out", tmp_path / "c.npy")
    cases.equal(nibble.gemm(qx, qy), np.load(tmp_path / "c.npy"), "golden-gemm")


def same_value(got, want):
    """A value of the module against the CLI's JSON, where NaN and infinities are null."""
    if want is None:
        return isinstance(got, float) and not math.isfinite(got)
    if isinstance(want, float) or isinstance(got, float):
        return float(got) == float(want)
    return got == want


def compare_rows(cases, got_rows, want_rows, what):
    cases.check(len(got_rows) == len(want_rows) > 0, f"{what}: {len(got_rows)} rows, CLI {len(want_rows)}")
    for got, want in zip(got_rows, want_rows):
        cases.check(list(got.dtype.names) == list(want.keys()), f"{what}: fields {got.dtype.names} vs {list(want)}")
        for key, value in want.items():
            if key == "level_bias":
                cases.check(len(got[key]) == len(value), f"{what}: level count")
                for g, w in zip(got[key], value):
                    for k in w:
                        cases.check(same_value(g[k].item(), w[k]), f"{what} {want['format']} level {k}: {g[k]} vs {w[k]}")
            else:
                cases.check(same_value(got[key].item(), value),
                            f"{what} {want['format']} {want['scale']} {want['block']} {want['rht']} "
                            f"{want['rounding']}: {key} = {got[key]!r}, CLI {value!r}")


def test_quant_matrix_equals_nibble_quant(cli, rng, tmp_path, cases):
    x = user_tensor(rng, 32, 64)
    np.save(tmp_path / "w.npy", x)
    run(cli, "quant", "--tensor", tmp_path / "w.npy", "--json", tmp_path / "q.json")
    want = json.loads((tmp_path / "q.json").read_text())
    got = nibble.quant_matrix(x, name="w")
    cases.check(got["input"]["nonfinite_zeroed"] == want["inputs"][0]["nonfinite_zeroed"] == 1, "non-finite count")
    compare_rows(cases, got["rows"], want["rows"], "quant --tensor")
    for f in nibble.formats:
        levels = nibble.grid_level_bias(f)
        for g, w in zip(levels, want["grid_level_bias"][f]):
            for k in w:
                cases.check(same_value(g[k].item(), w[k]), f"grid_level_bias {f} {k}")
    row = want["rows"][5]
    m = nibble.measure(x, format=row["format"], scale=row["scale"], block=row["block"], rounding=row["rounding"],
                       rht=0 if row["rht"] == "off" else int(row["rht"]))
    for key in ("sqnr_db", "nmse", "alpha", "rel_mag_error", "code_entropy_bits", "b_eff"):
        cases.check(same_value(m[key], row[key]), f"measure {key}: {m[key]} vs {row[key]}")


def test_synthetic_inputs_and_chain_equal_nibble_quant(cli, tmp_path, cases):
    seed = 7
    run(cli, "quant", "--input", "all", "--rows", 16, "--cols", 64, "--seed", seed, "--formats", "e2m1,int4",
        "--scale", "nvfp4", "--block", "1x16", "--rounding", "rne,sr", "--rht", "off,16", "--chain", 3,
        "--chain-width", 32, "--chain-batch", 8, "--json", tmp_path / "s.json")
    want = json.loads((tmp_path / "s.json").read_text())
    for d in nibble.distributions:
        x = nibble.synthetic(d, 16, 64, seed=seed)
        got = nibble.quant_matrix(x, name=d, formats=("e2m1", "int4"), scales=("nvfp4",), blocks=("1x16",),
                                  rht=(0, 16), seed=seed)
        compare_rows(cases, got["rows"], [r for r in want["rows"] if r["input"] == d], f"quant --input {d}")
    configs = [nibble.QuantConfig(format=f, scale="nvfp4", block="1x16", rht=r, seed=seed)
               for f in ("e2m1", "int4") for r in (0, 16)]
    chain = nibble.chain(configs, layers=3, width=32, batch=8, seed=seed)
    for key in ("layers", "width", "batch"):
        cases.check(chain[key] == want["chain"][key], f"chain {key}")
    for g, w in zip(chain["runs"], want["chain"]["runs"]):
        for key in ("format", "scale", "block", "rht", "rounding"):
            cases.check(g[key] == w[key], f"chain run {key}: {g[key]} vs {w[key]}")
        for gd, wd in zip(g["depths"], w["depths"]):
            for key in ("depth", "eta", "cosine"):
                cases.check(same_value(gd[key].item(), wd[key]), f"chain {g['format']} rht {g['rht']} {key}")
