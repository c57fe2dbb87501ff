"""The module's golden functions against golden's C API, bit for bit.

Exhaustive over format x scale mode x block shape x rounding x RHT (off, 16,
16 rounded to bf16) on seeded random tensors with boundary values mixed in;
every 4-bit code of every format; seeded random GEMMs, dot products and block
steps across formats and scale modes.
"""
import ctypes
import itertools

import numpy as np
import pytest

import nibble
from golden_c import GoldenC


@pytest.fixture(scope="module")
def golden_c(golden_c_path):
    return GoldenC(golden_c_path)


def tensor(rng, rows, cols):
    """Gaussian values of assorted magnitudes, with zero, tiny, huge and non-finite blocks and elements."""
    x = (rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-8, 8, (rows, 1)))).astype(np.float32)
    x[0, :16] = 0.0                                   # an all-zero block
    x[1, 3] = np.nan                                  # a NaN block
    x[2, 5] = np.inf                                  # an Inf block
    x[3, :16] = np.float32(1e-42)                     # subnormal block amax
    x[4, 7] = np.float32(3e38)                        # near FLT_MAX
    x[5, :8] = -0.0                                   # negative zeros
    return x


RHT_SETTINGS = [(0, False), (16, False), (16, True)]


def all_configs():
    for f, s, b, r, (rht, bf16) in itertools.product(nibble.formats, nibble.scale_modes, nibble.block_shapes,
                                                       nibble.roundings, RHT_SETTINGS):
        yield dict(format=f, scale=s, block=b, rounding=r, rht=rht, rht_bf16=bf16)


def test_enumerations_are_golden_tables(golden_c, cases):
    cases.equal(nibble.formats, golden_c.names("format"), "formats")
    cases.equal(nibble.scale_formats, golden_c.names("scale_format"), "scale formats")
    cases.equal(nibble.scale_modes, golden_c.names("scale_mode"), "scale modes")
    cases.equal(nibble.roundings, golden_c.names("rounding"), "roundings")
    cases.equal(nibble.block_shapes, golden_c.names("block_shape"), "block shapes")
    cases.equal(nibble.zero_policies, golden_c.names("zero_policy"), "zero policies")
    cases.equal(nibble.nonfinite_policies, golden_c.names("nonfinite_policy"), "non-finite policies")
    cases.check(nibble.rht_sizes == (16, 32, 64, 128), f"rht sizes {nibble.rht_sizes}")
    for f in nibble.formats:
        info = nibble.format_info(f)
        cases.check(info["name"] == f and len(info["levels"]) == 7, f"format_info({f}) = {info}")
        cases.check(max(info["levels"]) == info["max_value"], f"{f}: largest level is max_value")


def test_quantize_every_configuration(golden_c, rng, cases):
    x = tensor(rng, 37, 48)  # partial 16x16 block rows; 48 = 3 RHT16 groups, 1.5 1x32 blocks
    for settings in all_configs():
        seed = int(rng.integers(0, 2**63))
        sr_bits = int(rng.integers(1, 9))
        cfg = nibble.QuantConfig(**settings, seed=seed, sr_bits=sr_bits, stream=int(rng.integers(0, 2**32)))
        q = nibble.quantize(x, cfg)
        qc, codes, scales = golden_c.quantize(x, cfg.to_dict())
        what = repr(cfg)
        cases.equal(q.codes, codes, f"codes {what}")
        cases.equal(q.scales.ravel(), scales, f"scales {what}")
        cases.equal(np.array(q.tensor_scale, np.float32), np.array([qc.tensor_encode, qc.tensor_decode], np.float32),
                    f"tensor scale {what}")
        cases.equal(q.dequantize(), golden_c.dequantize(qc), f"dequantize {what}")
        cases.equal(nibble.dequantize(q), q.dequantize(), f"nibble.dequantize {what}")
        cases.check(q.config == cfg and q.shape == (37, 48), f"config and shape {what}")
        sf = nibble.scale_format_of(cfg.scale)
        if sf != "fp32":
            want = np.array([golden_c.scale_code(sf, float(v)) for v in q.scale_values.ravel()], np.uint32)
            cases.equal(want, q.scales.ravel(), f"scale_values encode back to the scale codes {what}")


def test_quantize_every_policy(golden_c, rng, cases):
    """Every format x scale mode x block shape under each zero and non-finite policy, against the C API's
    nibble_quantize_with_policy: codes (signed zeros included), scales, tensor scales, dequantized values."""
    x = tensor(rng, 37, 48)
    x_inf = np.where(np.isnan(x), np.float32(-1.5), x)  # +Inf but no NaN: the propagate policy's S_enc = 1
    negative_zeros = 0
    for f, s, b, zero, nonfinite in itertools.product(nibble.formats, nibble.scale_modes, nibble.block_shapes,
                                                      nibble.zero_policies, nibble.nonfinite_policies):
        cfg = nibble.QuantConfig(format=f, scale=s, block=b, rounding="sr", seed=int(rng.integers(0, 2**63)),
                                 zero=zero, nonfinite=nonfinite)
        cases.check(cfg.zero == zero and cfg.nonfinite == nonfinite, f"policy properties {cfg!r}")
        cases.check(nibble.QuantConfig(**cfg.to_dict()) == cfg, f"to_dict round trip {cfg!r}")
        for data in (x, x_inf):
            q = nibble.quantize(data, cfg)
            qc, codes, scales = golden_c.quantize(data, cfg.to_dict())
            cases.equal(q.codes, codes, f"codes {cfg!r}")
            cases.equal(q.scales.ravel(), scales, f"scales {cfg!r}")
            cases.equal(np.array(q.tensor_scale, np.float32),
                        np.array([qc.tensor_encode, qc.tensor_decode], np.float32), f"tensor scale {cfg!r}")
            cases.equal(q.dequantize(), golden_c.dequantize(qc), f"dequantize {cfg!r}")
            if f != "int4":
                negative_zeros += int(np.count_nonzero(q.codes == 8))
    cases.check(negative_zeros > 0, "no negative-zero code was compared")
    cases.check(nibble.QuantConfig() != nibble.QuantConfig(zero="signed"), "configs differing in policy differ")
    with pytest.raises(ValueError, match="unknown zero policy 'keep'"):
        nibble.QuantConfig(zero="keep")
    with pytest.raises(ValueError, match="unknown non-finite policy 'te'"):
        nibble.QuantConfig(nonfinite="te")


def test_non_finite_blocks_get_the_nan_scale(golden_c, cases):
    x = np.full((2, 32), np.nan, np.float32)
    x[1, 3] = np.inf
    for s in nibble.scale_modes:
        q = nibble.quantize(x, scale=s)
        nan_code = nibble.scale_format_info(nibble.scale_format_of(s))["nan_code"]
        cases.check((q.scales == nan_code).all(), f"{s}: scales {q.scales}")
        _, codes, scales = golden_c.quantize(x, q.config.to_dict())
        cases.equal(q.codes, codes, f"{s}: codes of non-finite blocks")


def test_quantize_settings_by_keyword_equal_config(rng, cases):
    x = tensor(rng, 16, 32)
    a = nibble.quantize(x, format="e1m2", scale="mx-ceil", rounding="sr", seed=5, sr_bits=3)
    b = nibble.quantize(x, nibble.QuantConfig(format="e1m2", scale="mx-ceil", rounding="sr", seed=5, sr_bits=3))
    cases.equal(a.codes, b.codes, "keywords vs QuantConfig")
    cases.check(nibble.QuantConfig(**a.config.to_dict()) == a.config, "to_dict round trip")
    cases.check(a.config != nibble.QuantConfig(format="e1m2", scale="mx-ceil", rounding="sr", seed=5, sr_bits=4),
                "configs that differ in one setting differ")
    cases.check((a.config == "e1m2") is False, "a config is not equal to another type")


def test_input_conversions(rng, cases):
    x = tensor(rng, 24, 64)
    want = nibble.quantize(x, scale="nvfp4")
    as64 = nibble.quantize(x.astype(np.float64), scale="nvfp4")
    cases.equal(as64.codes, want.codes, "float64 input (exact in float32) = float32")
    wide = np.zeros((24, 128), np.float32)
    wide[:, ::2] = x
    cases.equal(nibble.quantize(wide[:, ::2], scale="nvfp4").codes, want.codes, "strided view = contiguous copy")
    cases.equal(nibble.quantize(np.asfortranarray(x), scale="nvfp4").codes, want.codes, "Fortran order = C order")
    x3 = x.reshape(2, 12, 64)
    cases.equal(nibble.quantize(x3, scale="nvfp4").codes, want.codes, "3-d input = [rows, last axis]")
    h = rng.standard_normal((8, 32)).astype(np.float16)
    cases.equal(nibble.quantize(h).codes, nibble.quantize(h.astype(np.float32)).codes, "float16 input")
    d = rng.standard_normal((8, 16))
    cases.equal(nibble.quantize(d).codes, nibble.quantize(d.astype(np.float32)).codes, "float64 rounds to float32")
    one = nibble.quantize(np.float32(2.5))
    cases.check(one.shape == (1, 1), "a 0-d array is 1 x 1")
    vec = nibble.quantize(x[0])
    cases.check(vec.shape == (1, 64), "a 1-d array is 1 x N")


def test_elements(golden_c, rng, cases):
    for f in nibble.formats:
        codes = np.arange(16, dtype=np.uint8)
        want = np.array([golden_c.decode(f, int(c)) for c in codes], np.float32)
        cases.equal(nibble.decode(f, codes), want, f"decode {f}")
        values = np.concatenate([nibble.decode(f, codes), (rng.standard_normal(200) * 3).astype(np.float32),
                                 np.array([np.inf, -np.inf, 0.0, -0.0, 1e-30, 1e30], np.float32)])
        for r in nibble.roundings:
            bits = int(rng.integers(1, 9))
            random = rng.integers(0, 2**bits, values.size)
            got = nibble.encode(values, f, rounding=r, random=random if r == "sr" else None, sr_bits=bits)
            want = np.array([golden_c.encode(f, float(v), r, int(b) if r == "sr" else 0, bits)
                             for v, b in zip(values, random)], np.uint8)
            cases.equal(got, want, f"encode {f} {r} sr_bits={bits}")


def test_gemm_and_dot_rows(golden_c, rng, cases):
    for fa, fb in itertools.product(nibble.formats, repeat=2):
        for scale, block in [("nvfp4", "1x16"), ("fp32", "1x32"), ("mx-floor", "16x16"), ("mx-ceil", "1x16")]:
            m, n, k = (int(v) for v in rng.integers(1, 40, 3))
            k *= 16
            rht = int(rng.choice([0, 16]))
            seed = int(rng.integers(0, 2**32))
            a_x, b_x = tensor(rng, max(m, 6), k), tensor(rng, max(n, 6), k)
            a = nibble.quantize(a_x, format=fa, scale=scale, block=block, rht=rht, seed=seed)
            b = nibble.quantize(b_x, format=fb, scale=scale, block="1x16", rht=rht, seed=seed, rounding="sr")
            qa, _, _ = golden_c.quantize(a_x, a.config.to_dict())
            qb, _, _ = golden_c.quantize(b_x, b.config.to_dict())
            c = nibble.gemm(a, b)
            what = f"gemm {fa} x {fb} {scale} {block} rht={rht} [{a.rows}x{b.rows}x{k}]"
            cases.equal(c, golden_c.gemm(qa, qb), what)
            i, j = int(rng.integers(0, a.rows)), int(rng.integers(0, b.rows))
            cases.equal(np.float32(nibble.dot_rows(a, i, b, j)), c[i, j], f"dot_rows [{i}, {j}] of {what}")


def test_block_dot(golden_c, rng, cases):
    for fa, fb in itertools.product(nibble.formats, repeat=2):
        for sfa, sfb in itertools.product(nibble.scale_formats, repeat=2):
            n = int(rng.integers(1, 33))
            ca, cb = rng.integers(0, 16, n), rng.integers(0, 16, n)
            code_a, code_b = random_scale_code(rng, sfa), random_scale_code(rng, sfb)
            va, vb = float(decode_scale(golden_c, sfa, code_a)), float(decode_scale(golden_c, sfb, code_b))
            acc = np.float32(rng.standard_normal() * 100)
            got = nibble.block_dot(ca, cb, format_a=fa, format_b=fb, scale_a=va, scale_b=vb, acc=float(acc))
            want = golden_c.block_dot(fa, sfa, ca, code_a, fb, sfb, cb, code_b, acc)
            cases.equal(np.float32(got), want, f"block_dot {fa}/{sfa} x {fb}/{sfb}, {n} pairs")


def random_scale_code(rng, sf):
    """A finite, non-negative scale code of scale format sf."""
    if sf == "fp32":
        return int(np.float32(rng.standard_normal() * 2.0 ** int(rng.integers(-20, 20))).view(np.uint32))
    return int(rng.integers(0, 0x7F if sf == "e4m3" else 0xFF))


def decode_scale(golden_c, sf, code):
    v = ctypes.c_float()
    golden_c._ok(golden_c.lib.nibble_scale_decode(golden_c.index("scale_format", sf), ctypes.c_uint32(code),
                                                  ctypes.byref(v)), "scale_decode")
    return np.float32(v.value)
