"""QuantizedTensors built from a design's own arrays, and compared with golden's."""
import numpy as np
import pytest

import nibble


def test_arrays_round_trip_through_golden(rng, cases):
    for f in nibble.formats:
        for s in nibble.scale_modes:
            x = rng.standard_normal((20, 48)).astype(np.float32)
            y = rng.standard_normal((12, 48)).astype(np.float32)
            q = nibble.quantize(x, format=f, scale=s, block="16x16", rounding="sr", seed=3)
            r = nibble.quantize(y, format=f, scale=s, rht=0)
            own = nibble.quantized_tensor(q.codes, q.scales, q.config, q.tensor_scale)
            cases.equal(own.dequantize(), q.dequantize(), f"{f} {s}: dequantize of the same arrays")
            cases.equal(nibble.gemm(own, r), nibble.gemm(q, r), f"{f} {s}: gemm of the same arrays")
            same = nibble.compare_quantized(own, q)
            cases.check(same["same"] and same["description"] == "bit-exact", f"{f} {s}: {same}")
            codes = q.codes.copy()
            codes[3, 7] ^= 0x1
            scales = q.scales.copy()
            scales[1, 2] ^= 0x1
            diff = nibble.compare_quantized(nibble.quantized_tensor(codes, scales, q.config, q.tensor_scale), q)
            cases.check(not diff["same"] and diff["codes"] == 1 and diff["first_code"] == 3 * 48 + 7 and
                        diff["scales"] == 1 and diff["first_scale"] == 1 * 3 + 2 and not diff["tensor_scale"],
                        f"{f} {s}: {diff}")
            cases.check(diff["description"].startswith("1 of 960 codes (first at [3, 7]"), diff["description"])


BAD = [
    (lambda q: (q.codes + 16, q.scales, q.config, q.tensor_scale), ValueError, "is not 4 bits"),
    (lambda q: (q.codes, q.scales[:, :1], q.config, q.tensor_scale), ValueError, "2 block scales for a grid of 2 x 2"),
    (lambda q: (q.codes, q.scales + 0x100, q.config, q.tensor_scale), ValueError, "is not 8 bits"),
    (lambda q: (q.codes, -q.scales.astype(np.int64) - 1, q.config, q.tensor_scale), ValueError, "is not 32 bits"),
    (lambda q: (q.codes, q.scales, nibble.QuantConfig(scale="mx-floor"), (2.0, 0.5)), ValueError,
     "only nvfp4 has one"),
    (lambda q: (q.codes, q.scales, nibble.QuantConfig(scale="nvfp4", rht=128), q.tensor_scale), ValueError,
     "not a whole number of RHT128 transforms"),
    (lambda q: (q.codes.astype(np.float32), q.scales, q.config, q.tensor_scale), TypeError, "codes must be an integer"),
    (lambda q: (np.uint8(3), q.scales, q.config, q.tensor_scale), TypeError, "at least one axis"),
    (lambda q: (q.codes, q.scales, "nvfp4", q.tensor_scale), TypeError, ""),
]


@pytest.mark.parametrize("make,error,message", BAD, ids=[f"case{i}" for i in range(len(BAD))])
def test_bad_arrays(make, error, message, cases):
    q = nibble.quantize(np.ones((2, 32), np.float32), scale="nvfp4")
    with pytest.raises(error) as e:
        nibble.quantized_tensor(*make(q))
    cases.check(message in str(e.value), f"{e.value}")


def test_compare_needs_the_same_shape(cases):
    a = nibble.quantize(np.ones((2, 32), np.float32))
    b = nibble.quantize(np.ones((2, 16), np.float32))
    with pytest.raises(ValueError) as e:
        nibble.compare_quantized(a, b)
    cases.check("diff_quantized" in str(e.value), str(e.value))
