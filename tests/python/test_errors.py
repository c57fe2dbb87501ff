"""Every bad input raises a Python exception with golden's (or the CLI's) words;
none crashes the interpreter. Each case runs in this process: a crash would
end the suite and fail it."""
import json

import numpy as np
import pytest

import nibble

X = np.ones((4, 32), np.float32)


def q(**settings):
    return nibble.quantize(X, **settings)


BAD_CONFIG = [
    (dict(format="e3m0"), ValueError, "unknown format 'e3m0'; valid: e2m1, e1m2, int4"),
    (dict(scale="nvfp8"), ValueError, "unknown scale mode 'nvfp8'; valid: fp32, nvfp4, mx-floor, mx-ceil"),
    (dict(block="2x16"), ValueError, "unknown block shape '2x16'; valid: 1x16, 1x32, 16x16"),
    (dict(rounding="rtz"), ValueError, "unknown rounding 'rtz'; valid: rne, sr"),
    (dict(sr_bits=0), ValueError, "stochastic-rounding bits must be in 1..8"),
    (dict(sr_bits=9), ValueError, "stochastic-rounding bits must be in 1..8"),
    (dict(sr_bits=2**40), ValueError, "sr_bits must be in"),
    (dict(rht=8), ValueError, "RHT size must be 16, 32, 64 or 128, got 8"),
    (dict(rht=-16), ValueError, "RHT size must be 16, 32, 64 or 128, got -16"),
    (dict(seed=-1), ValueError, "seed must be in 0..18446744073709551615, got -1"),
    (dict(seed=2**64), ValueError, "seed must be in 0..18446744073709551615"),
    (dict(stream=2**32), ValueError, "stream must be in 0..4294967295"),
    (dict(seed=1.5), TypeError, "seed must be an int"),
    (dict(sr_bits=True), TypeError, "sr_bits must be an int"),
    (dict(rht="16"), TypeError, "rht must be an int"),
    (dict(format=3), TypeError, ""),
    (dict(colour="red"), TypeError, ""),
]


@pytest.mark.parametrize("settings,error,message", BAD_CONFIG, ids=[str(c[0]) for c in BAD_CONFIG])
def test_bad_configuration(settings, error, message, cases):
    with pytest.raises(error) as e:
        nibble.QuantConfig(**settings)
    cases.check(message in str(e.value), f"{settings}: {e.value}")
    with pytest.raises(error):
        q(**settings)


BAD_ARRAYS = [
    (np.ones((4, 32), np.int32), TypeError, "x must hold real floating-point numbers"),
    (np.ones((4, 32), np.complex64), TypeError, "got dtype complex64"),
    (np.array([["a"] * 16]), TypeError, "x must hold real floating-point numbers"),
    (np.array([None] * 16), TypeError, "x must hold real floating-point numbers"),
    ([[1, 2, 3]], TypeError, "got dtype int64"),
    ("text", TypeError, "x must hold real floating-point numbers"),
    (np.zeros((0, 16), np.float32), ValueError, "quantize: empty tensor"),
    (np.zeros((4, 0), np.float32), ValueError, "quantize: empty tensor"),
]


@pytest.mark.parametrize("x,error,message", BAD_ARRAYS, ids=[f"case{i}" for i in range(len(BAD_ARRAYS))])
def test_bad_array(x, error, message, cases):
    with pytest.raises(error) as e:
        nibble.quantize(x)
    cases.check(message in str(e.value), f"{e.value}")


def expect(cases, error, message, fn, *args, **kwargs):
    with pytest.raises(error) as e:
        fn(*args, **kwargs)
    cases.check(message in str(e.value), f"{fn.__name__}: {e.value!r} does not say {message!r}")


def test_bad_shapes_for_golden(cases):
    expect(cases, ValueError, "RHT16 needs the contraction axis", nibble.quantize, np.ones((2, 40), np.float32),
           rht=16)
    a = q()
    b = nibble.quantize(np.ones((4, 48), np.float32))
    expect(cases, ValueError, "gemm: contraction lengths differ (32 vs 48)", nibble.gemm, a, b)
    expect(cases, ValueError, "gemm: operands must share the RHT size", nibble.gemm, a, q(rht=16))
    expect(cases, ValueError, "gemm: operands must share the RHT size", nibble.gemm, q(rht=16, seed=1), q(rht=16))
    expect(cases, ValueError, "dot_rows: contraction lengths differ", nibble.dot_rows, a, 0, b, 0)
    expect(cases, IndexError, "ra = 4 is not a row of a", nibble.dot_rows, a, 4, a, 0)
    expect(cases, IndexError, "rb = -1 is not a row of b", nibble.dot_rows, a, 0, a, -1)
    expect(cases, TypeError, "", nibble.gemm, a, X)
    expect(cases, TypeError, "", nibble.dequantize, X)


def test_bad_elements(cases):
    expect(cases, ValueError, "codes[1] = 16 is not a 4-bit code", nibble.decode, "e2m1", [3, 16])
    expect(cases, ValueError, "is not a 4-bit code", nibble.decode, "int4", [-1])
    expect(cases, TypeError, "integer array of 4-bit codes", nibble.decode, "int4", [0.5])
    expect(cases, ValueError, "unknown format 'fp4'", nibble.decode, "fp4", [1])
    expect(cases, ValueError, "values[1] is NaN", nibble.encode, [1.0, np.nan], "e2m1")
    expect(cases, ValueError, "stochastic rounding needs `random`", nibble.encode, [1.0], "e2m1", rounding="sr")
    expect(cases, ValueError, "does not fit in 2 bits", nibble.encode, [1.0], "e2m1", rounding="sr", random=[4],
           sr_bits=2)
    expect(cases, ValueError, "one entry per value", nibble.encode, [1.0, 2.0], "e2m1", rounding="sr", random=[1])
    expect(cases, ValueError, "sr_bits must be in 1..8", nibble.encode, [1.0], "e2m1", sr_bits=0)
    expect(cases, ValueError, "same length", nibble.block_dot, [1, 2], [1])
    expect(cases, ValueError, "a block holds 1..32 code pairs, got 33", nibble.block_dot, [1] * 33, [1] * 33)
    expect(cases, ValueError, "a block holds 1..32 code pairs, got 0", nibble.block_dot, np.zeros(0, np.uint8),
           np.zeros(0, np.uint8))
    expect(cases, ValueError, "codes_b[0] = 99", nibble.block_dot, [1], [99])
    expect(cases, ValueError, "unknown scale format 'e5m2'", nibble.scale_format_info, "e5m2")


def test_bad_diagnostics(cases):
    expect(cases, ValueError, "tensor has no finite values", nibble.measure, np.full((2, 16), np.nan, np.float32))
    expect(cases, ValueError, "tensor has no finite values", nibble.quant_matrix, np.full((2, 16), np.inf, np.float32))
    expect(cases, ValueError, "x is empty", nibble.measure, np.zeros((0, 16), np.float32))
    expect(cases, ValueError, "the list of formats is empty", nibble.quant_matrix, X, formats=())
    expect(cases, ValueError, "the list of RHT sizes is empty", nibble.quant_matrix, X, rht=())
    expect(cases, ValueError, "unknown block shape 'row'", nibble.quant_matrix, X, blocks=("row",))
    expect(cases, ValueError, "RHT64 needs the contraction axis", nibble.quant_matrix, X, rht=(0, 64))
    expect(cases, ValueError, "RHT size must be 16, 32, 64 or 128, got 3", nibble.quant_matrix, X, rht=(3,))
    expect(cases, ValueError, "stochastic-rounding bits must be in 1..8", nibble.quant_matrix, X, sr_bits=12)
    expect(cases, ValueError, "unknown distribution 'cauchy'", nibble.synthetic, "cauchy", 4, 4)
    expect(cases, ValueError, "rows must be in 1..", nibble.synthetic, "gaussian", 0, 4)
    expect(cases, ValueError, "more than the limit of 2^28 elements", nibble.synthetic, "gaussian", 2**20, 2**10)
    cfg = nibble.QuantConfig()
    expect(cases, ValueError, "5000 layers is more than the limit of 4096", nibble.chain, cfg, layers=5000)
    expect(cases, ValueError, "exceed the limit of 2^28 elements", nibble.chain, cfg, layers=4096, width=4096)
    expect(cases, ValueError, "layers must be in 1..", nibble.chain, cfg, layers=0)
    expect(cases, ValueError, "RHT16 needs the contraction axis", nibble.chain, nibble.QuantConfig(rht=16), width=24,
           layers=1)
    expect(cases, ValueError, "chain needs at least one configuration", nibble.chain, [])
    expect(cases, TypeError, "", nibble.chain, ["e2m1"])


def test_bad_files(tmp_path, cases):
    expect(cases, FileNotFoundError, "no such file", nibble.read_tensor, tmp_path / "absent.npy")
    expect(cases, FileNotFoundError, "no such file", nibble.read_quantized, tmp_path / "absent.safetensors")
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    expect(cases, nibble.TensorFileError, "junk.npy", nibble.read_tensor, tmp_path / "junk.npy")
    (tmp_path / "x.txt").write_text("1 2 3")
    expect(cases, nibble.TensorFileError, "x.txt", nibble.read_tensor, tmp_path / "x.txt")
    header = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}).encode()
    st = tmp_path / "two.safetensors"
    st.write_bytes(len(header).to_bytes(8, "little") + header + bytes(16))
    expect(cases, nibble.TensorFileError, "two.safetensors", nibble.read_tensor, st)  # no name: which one?
    expect(cases, nibble.TensorFileError, "'c'", nibble.read_tensor, st, "c")
    expect(cases, nibble.TensorFileError, "two.safetensors", nibble.read_quantized, st)  # not a quantized file
    cases.check(issubclass(nibble.TensorFileError, ValueError), "TensorFileError is a ValueError")
    expect(cases, FileNotFoundError, "area-energy.json", nibble.area_energy, tmp_path)
    (tmp_path / "area-energy.json").write_text("{ not json")
    expect(cases, ValueError, "not valid JSON", nibble.area_energy, tmp_path)
    expect(cases, nibble.TensorFileError, "", nibble.write_quantized, str(tmp_path / "no" / "dir.safetensors"),
           {"q": q()})
