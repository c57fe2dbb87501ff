"""Golden's C API (golden/capi/include/nibble/nibble_golden.h) through ctypes.

The second way to golden that the tests compare the module against: the
shared library nibble_golden_c, called with plain C types. Enumerations are
passed as the C API's integers, found by name with nibble_*_name().
"""
import ctypes

import numpy as np

NIBBLE_OK = 0


class QuantConfigC(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("block_shape", ctypes.c_int), ("scale_mode", ctypes.c_int),
                ("rounding", ctypes.c_int), ("sr_bits", ctypes.c_int), ("rht_size", ctypes.c_int),
                ("rht_round_bf16", ctypes.c_int), ("seed", ctypes.c_uint64), ("stream", ctypes.c_uint32)]


class QuantPolicyC(ctypes.Structure):
    _fields_ = [("zero", ctypes.c_int), ("nonfinite", ctypes.c_int)]


class QuantizedC(ctypes.Structure):
    _fields_ = [("config", QuantConfigC), ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
                ("codes", ctypes.POINTER(ctypes.c_uint8)), ("codes_len", ctypes.c_size_t),
                ("scales", ctypes.POINTER(ctypes.c_uint32)), ("scales_len", ctypes.c_size_t),
                ("tensor_encode", ctypes.c_float), ("tensor_decode", ctypes.c_float)]


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


class GoldenC:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.nibble_last_error.restype = ctypes.c_char_p
        for f in ("format", "scale_format", "scale_mode", "rounding", "block_shape", "zero_policy",
                  "nonfinite_policy"):
            getattr(self.lib, f"nibble_{f}_name").restype = ctypes.c_char_p
        self.lib.nibble_block_dot.argtypes = [
            ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint8), ctypes.c_uint32, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_uint8), ctypes.c_uint32, ctypes.c_size_t, ctypes.c_float,
            ctypes.POINTER(ctypes.c_float)]
        self.lib.nibble_element_encode.argtypes = [ctypes.c_int, ctypes.c_float, ctypes.c_int, ctypes.c_uint32,
                                                   ctypes.c_int, ctypes.POINTER(ctypes.c_uint8)]
        self.lib.nibble_scale_encode.argtypes = [ctypes.c_int, ctypes.c_float, ctypes.POINTER(ctypes.c_uint32)]

    def _ok(self, status, what):
        if status != NIBBLE_OK:
            raise RuntimeError(f"{what}: status {status}: {self.lib.nibble_last_error().decode()}")

    def names(self, kind):
        """The names of one enumeration, in the C API's order (until the first "")."""
        out, i = [], 0
        while True:
            n = getattr(self.lib, f"nibble_{kind}_name")(i).decode()
            if not n:
                return tuple(out)
            out.append(n)
            i += 1

    def index(self, kind, name):
        return self.names(kind).index(name)

    def config(self, c):
        """A C config from a nibble.QuantConfig's dict."""
        cc = QuantConfigC()
        self._ok(self.lib.nibble_quant_config_init(ctypes.byref(cc)), "config_init")
        cc.format = self.index("format", c["format"])
        cc.block_shape = self.index("block_shape", c["block"])
        cc.scale_mode = self.index("scale_mode", c["scale"])
        cc.rounding = self.index("rounding", c["rounding"])
        cc.sr_bits, cc.rht_size, cc.rht_round_bf16 = c["sr_bits"], c["rht"], int(c["rht_bf16"])
        cc.seed, cc.stream = c["seed"], c["stream"]
        return cc

    def policy(self, c):
        """The C policies of a config dict (the defaults where it names none)."""
        return QuantPolicyC(self.index("zero_policy", c.get("zero", "positive")),
                            self.index("nonfinite_policy", c.get("nonfinite", "finite")))

    def quantize(self, x, c):
        """(codes [rows, cols], scales [n], tensor_encode, tensor_decode, handle) of x under config dict c
        (nibble_quantize_with_policy, with the dict's policies)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        rows, cols = x.shape
        cc = self.config(c)
        codes_len, scales_len = ctypes.c_size_t(), ctypes.c_size_t()
        self._ok(self.lib.nibble_quantized_sizes(ctypes.byref(cc), ctypes.c_int64(rows), ctypes.c_int64(cols),
                                                 ctypes.byref(codes_len), ctypes.byref(scales_len)), "sizes")
        codes = np.zeros(codes_len.value, np.uint8)
        scales = np.zeros(scales_len.value, np.uint32)
        q = QuantizedC(cc, rows, cols, _ptr(codes, ctypes.c_uint8), codes.size, _ptr(scales, ctypes.c_uint32),
                       scales.size, 0.0, 0.0)
        policy = self.policy(c)
        self._ok(self.lib.nibble_quantize_with_policy(_ptr(x, ctypes.c_float), ctypes.byref(q), ctypes.byref(policy)),
                 "quantize")
        q._keep = (codes, scales)
        return q, codes.reshape(rows, cols), scales

    def dequantize(self, q):
        out = np.zeros(q.rows * q.cols, np.float32)
        self._ok(self.lib.nibble_dequantize(ctypes.byref(q), _ptr(out, ctypes.c_float), ctypes.c_size_t(out.size)),
                 "dequantize")
        return out.reshape(q.rows, q.cols)

    def gemm(self, a, b):
        c = np.zeros(a.rows * b.rows, np.float32)
        self._ok(self.lib.nibble_gemm(ctypes.byref(a), ctypes.byref(b), _ptr(c, ctypes.c_float),
                                      ctypes.c_size_t(c.size)), "gemm")
        return c.reshape(a.rows, b.rows)

    def scale_code(self, scale_format, value):
        code = ctypes.c_uint32()
        self._ok(self.lib.nibble_scale_encode(self.index("scale_format", scale_format), value, ctypes.byref(code)),
                 "scale_encode")
        return code.value

    def block_dot(self, fa, sfa, ca, sa, fb, sfb, cb, sb, acc):
        ca = np.ascontiguousarray(ca, np.uint8)
        cb = np.ascontiguousarray(cb, np.uint8)
        out = ctypes.c_float()
        self._ok(self.lib.nibble_block_dot(self.index("format", fa), self.index("scale_format", sfa),
                                           _ptr(ca, ctypes.c_uint8), sa, self.index("format", fb),
                                           self.index("scale_format", sfb), _ptr(cb, ctypes.c_uint8), sb,
                                           ca.size, acc, ctypes.byref(out)), "block_dot")
        return np.float32(out.value)

    def decode(self, fmt, code):
        v = ctypes.c_float()
        self._ok(self.lib.nibble_element_decode(self.index("format", fmt), ctypes.c_uint8(code), ctypes.byref(v)),
                 "decode")
        return np.float32(v.value)

    def encode(self, fmt, value, rounding, random, sr_bits):
        code = ctypes.c_uint8()
        self._ok(self.lib.nibble_element_encode(self.index("format", fmt), value, self.index("rounding", rounding),
                                                random, sr_bits, ctypes.byref(code)), "encode")
        return code.value
