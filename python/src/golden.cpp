// Golden on NumPy arrays: the quantizer's configuration, quantize and
// dequantize, element encode/decode, the block dot-product step, dot_rows and
// GEMM. Every number comes from golden's own functions; this file converts
// arguments, checks what golden leaves to its callers (indices, code ranges,
// the sizes the CLI bounds) and converts results.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "names.h"
#include "nibble/dot.h"
#include "nibble/formats.h"
#include "nibble/limits.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/stats.h"

namespace nibble::python {
namespace {

QuantConfig make_config(const std::string& format, const std::string& block, const std::string& scale,
                        const std::string& rounding, const py::object& sr_bits, const py::object& rht, bool rht_bf16,
                        const py::object& seed, const py::object& stream, const std::string& zero,
                        const std::string& nonfinite) {
  QuantConfig c;
  c.format = format_named(format);
  c.block = block_named(block);
  c.scale = scale_mode_named(scale);
  c.rounding = rounding_named(rounding);
  c.sr_bits = static_cast<int>(checked_int(sr_bits, "sr_bits", INT32_MIN, INT32_MAX));
  c.rht.size = static_cast<int>(checked_int(rht, "rht", INT32_MIN, INT32_MAX));
  c.rht.round_bf16 = rht_bf16;
  c.seed = checked_uint(seed, "seed", UINT64_MAX);
  c.stream = static_cast<uint32_t>(checked_uint(stream, "stream", UINT32_MAX));
  c.policy = QuantPolicy{zero_policy_named(zero), nonfinite_policy_named(nonfinite)};
  validate(c);
  return c;
}

py::dict config_dict(const QuantConfig& c) {
  py::dict d;
  d["format"] = std::string(name(c.format));
  d["block"] = std::string(name(c.block));
  d["scale"] = std::string(name(c.scale));
  d["rounding"] = std::string(name(c.rounding));
  d["sr_bits"] = c.sr_bits;
  d["rht"] = c.rht.size;
  d["rht_bf16"] = c.rht.round_bf16;
  d["seed"] = c.seed;
  d["stream"] = c.stream;
  d["zero"] = std::string(name(c.policy.zero));
  d["nonfinite"] = std::string(name(c.policy.nonfinite));
  return d;
}

std::string config_repr(const QuantConfig& c) {
  return "QuantConfig(format='" + std::string(name(c.format)) + "', block='" + std::string(name(c.block)) +
         "', scale='" + std::string(name(c.scale)) + "', rounding='" + std::string(name(c.rounding)) +
         "', sr_bits=" + std::to_string(c.sr_bits) + ", rht=" + std::to_string(c.rht.size) +
         ", rht_bf16=" + (c.rht.round_bf16 ? "True" : "False") + ", seed=" + std::to_string(c.seed) +
         ", stream=" + std::to_string(c.stream) + ", zero='" + std::string(name(c.policy.zero)) + "', nonfinite='" +
         std::string(name(c.policy.nonfinite)) + "')";
}

bool same_config(const QuantConfig& a, const QuantConfig& b) { return a == b; }

QuantizedTensor quantize_array(const py::handle& x, const QuantConfig& cfg) {
  const py::array_t<float, py::array::c_style> v = float32_view(x, "x");
  const MatrixShape s = matrix_shape(v);
  const float* data = v.data();
  py::gil_scoped_release unlocked;
  return quantize(data, s.rows, s.cols, cfg);
}

py::array_t<float> dequantize_tensor(const QuantizedTensor& q) {
  std::vector<float> out;
  {
    py::gil_scoped_release unlocked;
    out = dequantize(q);
  }
  return to_numpy(std::move(out), {q.rows, q.cols});
}

py::array_t<float> scale_values(const QuantizedTensor& q) {
  const ScaleFormat f = scale_format(q.config.scale);
  std::vector<float> v(q.scales.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = decode_scale(f, q.scales[i]);
  return to_numpy(std::move(v), {q.block_grid_rows(), q.block_grid_cols()});
}

float dot_rows_checked(const QuantizedTensor& a, const py::object& ra, const QuantizedTensor& b,
                       const py::object& rb) {
  check_dot_operands(a, b, "dot_rows");
  const int64_t i = checked_int(ra, "ra", INT64_MIN, INT64_MAX);
  const int64_t j = checked_int(rb, "rb", INT64_MIN, INT64_MAX);
  if (i < 0 || i >= a.rows) throw py::index_error("ra = " + std::to_string(i) + " is not a row of a");
  if (j < 0 || j >= b.rows) throw py::index_error("rb = " + std::to_string(j) + " is not a row of b");
  return dot_rows(a, i, b, j);
}

py::array_t<float> gemm_checked(const QuantizedTensor& a, const QuantizedTensor& b) {
  if (!limits::checked_product({a.rows, b.rows}, limits::kMaxWorkElements)) {
    throw py::value_error("gemm: C [M x N] = [" + std::to_string(a.rows) + " x " + std::to_string(b.rows) +
                          "] is more than the limit of 2^28 elements");
  }
  if (!limits::checked_product({a.rows, b.rows, a.cols}, limits::kMaxMacs)) {
    throw py::value_error("gemm: the multiply-accumulates (M x N x K) are more than the limit of 2^40");
  }
  std::vector<float> c;
  {
    py::gil_scoped_release unlocked;
    c = gemm(a, b);  // checks the operands (check_dot_operands)
  }
  return to_numpy(std::move(c), {a.rows, b.rows});
}

// An array of 4-bit codes: integers in 0..15, as bytes in C order.
std::vector<uint8_t> codes_of(const py::handle& codes, const char* what) {
  const py::array a = py::array::ensure(codes);
  if (!a || (a.dtype().kind() != 'i' && a.dtype().kind() != 'u')) {
    throw py::type_error(std::string(what) + " must be an integer array of 4-bit codes");
  }
  const auto v = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  std::vector<uint8_t> out(static_cast<size_t>(v.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t c = v.data()[i];
    if (c < 0 || c > 15) {
      throw py::value_error(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(c) +
                            " is not a 4-bit code (0..15)");
    }
    out[i] = static_cast<uint8_t>(c);
  }
  return out;
}

std::vector<int64_t> shape_of(const py::array& a) {
  return std::vector<int64_t>(a.shape(), a.shape() + a.ndim());
}

py::array_t<float> decode_codes(const std::string& format, const py::handle& codes) {
  const Format f = format_named(format);
  const std::vector<uint8_t> c = codes_of(codes, "codes");
  std::vector<float> v(c.size());
  for (size_t i = 0; i < c.size(); ++i) v[i] = decode_value(f, c[i]);
  return to_numpy(std::move(v), shape_of(py::array::ensure(codes)));
}

py::array_t<uint8_t> encode_values(const py::handle& values, const std::string& format, const std::string& rounding,
                                   const py::object& random, const py::object& sr_bits_arg) {
  const Format f = format_named(format);
  const Rounding r = rounding_named(rounding);
  const int sr_bits = static_cast<int>(checked_int(sr_bits_arg, "sr_bits", 1, 8));
  const py::array_t<float, py::array::c_style> v = float32_view(values, "values");
  std::vector<uint32_t> bits(static_cast<size_t>(v.size()), 0);
  if (r == Rounding::kStochastic) {
    if (random.is_none()) throw py::value_error("stochastic rounding needs `random`: sr_bits random bits per value");
    const py::array ra = py::array::ensure(random);
    if (!ra || (ra.dtype().kind() != 'i' && ra.dtype().kind() != 'u')) {
      throw py::type_error("random must be an integer array");
    }
    const auto rv = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(ra);
    if (rv.size() != v.size()) throw py::value_error("random must have one entry per value");
    for (size_t i = 0; i < bits.size(); ++i) {
      const int64_t b = rv.data()[i];
      if (b < 0 || b >= (int64_t{1} << sr_bits)) {
        throw py::value_error("random[" + std::to_string(i) + "] = " + std::to_string(b) + " does not fit in " +
                              std::to_string(sr_bits) + " bits");
      }
      bits[i] = static_cast<uint32_t>(b);
    }
  }
  std::vector<uint8_t> out(bits.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(v.data()[i])) throw py::value_error("values[" + std::to_string(i) + "] is NaN: it has no code");
    out[i] = convert_to_format(v.data()[i], f, r, bits[i], sr_bits);
  }
  return to_numpy(std::move(out), shape_of(v));
}

float block_dot(const py::handle& codes_a, const py::handle& codes_b, const std::string& format_a,
                const std::string& format_b, float scale_a, float scale_b, float acc) {
  const Format fa = format_named(format_a), fb = format_named(format_b);
  const std::vector<uint8_t> a = codes_of(codes_a, "codes_a");
  const std::vector<uint8_t> b = codes_of(codes_b, "codes_b");
  if (a.size() != b.size()) throw py::value_error("codes_a and codes_b must have the same length");
  if (a.empty() || a.size() > 32) {
    throw py::value_error("a block holds 1..32 code pairs, got " + std::to_string(a.size()));
  }
  const int32_t p = block_partial_sum(a.data(), fa, b.data(), fb, a.size());
  return accumulate(acc, block_product(p, fa, fb, scale_a, scale_b));
}

py::dict format_info_dict(Format f) {
  const FormatInfo& i = info(f);
  py::dict d;
  d["name"] = std::string(i.name);
  d["encoding"] = i.encoding == Encoding::kTwosComplement ? "twos-complement" : "sign-magnitude-float";
  d["exp_bits"] = i.exp_bits;
  d["man_bits"] = i.man_bits;
  d["bias"] = i.bias;
  d["lsb_exp"] = lsb_exp(f);
  d["max_units"] = max_units(f);
  d["max_value"] = max_value(f);
  d["emax"] = emax(f);
  d["levels"] = positive_levels(f);
  return d;
}

py::dict scale_format_info_dict(ScaleFormat f) {
  const ScaleFormatInfo& i = info(f);
  py::dict d;
  d["name"] = std::string(i.name);
  d["bits"] = i.bits;
  d["exp_bits"] = i.exp_bits;
  d["man_bits"] = i.man_bits;
  d["bias"] = i.bias;
  d["nan_code"] = i.nan_code;
  return d;
}

}  // namespace

void bind_golden(py::module_& m) {
  m.attr("formats") = names_of(kAllFormats);
  m.attr("scale_formats") = names_of(kAllScaleFormats);
  m.attr("scale_modes") = names_of(kAllScaleModes);
  m.attr("block_shapes") = names_of(kAllBlockShapes);
  m.attr("roundings") = names_of(kAllRoundings);
  m.attr("zero_policies") = names_of(kAllZeroPolicies);
  m.attr("nonfinite_policies") = names_of(kAllNonFinitePolicies);
  py::tuple rht_sizes(kRhtSizes.size());
  for (size_t i = 0; i < kRhtSizes.size(); ++i) rht_sizes[i] = kRhtSizes[i];
  m.attr("rht_sizes") = rht_sizes;

  m.def("format_info", [](const std::string& f) { return format_info_dict(format_named(f)); }, py::arg("format"),
        "The format table's row for `format`, and what golden derives from it.");
  m.def(
      "scale_format_info",
      [](const std::string& s) {
        return scale_format_info_dict(parse_named(kAllScaleFormats, parse_scale_format, s, "scale format"));
      },
      py::arg("scale_format"), "The scale-format table's row for `scale_format`.");
  m.def(
      "scale_format_of", [](const std::string& mode) { return std::string(name(scale_format(scale_mode_named(mode)))); },
      py::arg("scale_mode"), "The scale format a scale mode stores.");

  const QuantConfig d;
  py::class_<QuantConfig>(m, "QuantConfig", "Golden's quantizer settings (nibble::QuantConfig), checked by golden.")
      .def(py::init(&make_config), py::kw_only(), py::arg("format") = std::string(name(d.format)),
           py::arg("block") = std::string(name(d.block)), py::arg("scale") = std::string(name(d.scale)),
           py::arg("rounding") = std::string(name(d.rounding)), py::arg("sr_bits") = d.sr_bits,
           py::arg("rht") = d.rht.size, py::arg("rht_bf16") = d.rht.round_bf16, py::arg("seed") = d.seed,
           py::arg("stream") = d.stream, py::arg("zero") = std::string(name(d.policy.zero)),
           py::arg("nonfinite") = std::string(name(d.policy.nonfinite)))
      .def_property_readonly("format", [](const QuantConfig& c) { return std::string(name(c.format)); })
      .def_property_readonly("block", [](const QuantConfig& c) { return std::string(name(c.block)); })
      .def_property_readonly("scale", [](const QuantConfig& c) { return std::string(name(c.scale)); })
      .def_property_readonly("rounding", [](const QuantConfig& c) { return std::string(name(c.rounding)); })
      .def_property_readonly("sr_bits", [](const QuantConfig& c) { return c.sr_bits; })
      .def_property_readonly("rht", [](const QuantConfig& c) { return c.rht.size; })
      .def_property_readonly("rht_bf16", [](const QuantConfig& c) { return c.rht.round_bf16; })
      .def_property_readonly("seed", [](const QuantConfig& c) { return c.seed; })
      .def_property_readonly("stream", [](const QuantConfig& c) { return c.stream; })
      .def_property_readonly("zero", [](const QuantConfig& c) { return std::string(name(c.policy.zero)); },
                             "The zero policy: 'positive' (a value rounding to zero is code 0) or 'signed' (its "
                             "sign kept: 0x8 in e2m1/e1m2, as IEEE, OCP MX, CUDA and Transformer Engine).")
      .def_property_readonly("nonfinite", [](const QuantConfig& c) { return std::string(name(c.policy.nonfinite)); },
                             "The non-finite policy: 'finite' (finite amax, NaN block scale) or 'propagate' "
                             "(Transformer Engine's NVFP4 reference: NaN and Inf through the scale rules).")
      .def_property_readonly("scale_format", [](const QuantConfig& c) { return std::string(name(scale_format(c.scale))); })
      .def("to_dict", &config_dict, "The settings as keyword arguments of QuantConfig().")
      .def("__repr__", &config_repr)
      .def("__eq__", &same_config, py::is_operator());

  py::class_<QuantizedTensor>(m, "QuantizedTensor",
                              "A quantized [rows, cols] tensor: 4-bit codes, block scale codes and the tensor scale.")
      .def_property_readonly("rows", [](const QuantizedTensor& q) { return q.rows; })
      .def_property_readonly("cols", [](const QuantizedTensor& q) { return q.cols; })
      .def_property_readonly("shape", [](const QuantizedTensor& q) { return py::make_tuple(q.rows, q.cols); })
      .def_property_readonly("config", [](const QuantizedTensor& q) { return q.config; })
      .def_property_readonly(
          "codes", [](const QuantizedTensor& q) { return to_numpy(std::vector<uint8_t>(q.codes), {q.rows, q.cols}); },
          "uint8 [rows, cols]: one 4-bit code per element (unpacked).")
      .def_property_readonly(
          "scales",
          [](const QuantizedTensor& q) {
            return to_numpy(std::vector<uint32_t>(q.scales), {q.block_grid_rows(), q.block_grid_cols()});
          },
          "uint32 [block rows, block cols]: the block scale codes (E4M3/UE8M0 codes, or binary32 bit patterns).")
      .def_property_readonly("scale_values", &scale_values,
                             "float32 [block rows, block cols]: the decoded block scales the dot product uses.")
      .def_property_readonly("tensor_scale",
                             [](const QuantizedTensor& q) { return py::make_tuple(q.tensor.encode, q.tensor.decode); },
                             "(S_enc, g): the per-tensor encode and decode scales, (1, 1) unless nvfp4.")
      .def("dequantize", &dequantize_tensor, "float32 [rows, cols]: fl(fl(q * s) * g) per element.")
      .def("__repr__", [](const QuantizedTensor& q) {
        return "<nibble.QuantizedTensor [" + std::to_string(q.rows) + ", " + std::to_string(q.cols) + "] " +
               config_repr(q.config) + ">";
      });

  m.def("_quantize", &quantize_array, py::arg("x"), py::arg("config"));
  m.def("dequantize", &dequantize_tensor, py::arg("q"), "float32 [rows, cols]: golden's dequantization of q.");
  m.def("gemm", &gemm_checked, py::arg("a"), py::arg("b"),
        "C = A * B^T (float32 [M, N]) by golden's block-scaled dot-product contract; A [M, K], B [N, K].");
  m.def("dot_rows", &dot_rows_checked, py::arg("a"), py::arg("ra"), py::arg("b"), py::arg("rb"),
        "Row ra of a times row rb of b, per-tensor scales included.");
  m.def("block_dot", &block_dot, py::arg("codes_a"), py::arg("codes_b"), py::kw_only(),
        py::arg("format_a") = std::string(name(d.format)), py::arg("format_b") = std::string(name(d.format)),
        py::arg("scale_a") = 1.0f, py::arg("scale_b") = 1.0f, py::arg("acc") = 0.0f,
        "One block step of the dot product: fl(acc + fl(P * 2^(lsb_a + lsb_b) * fl(scale_a * scale_b))), P the exact "
        "sum of code products (1..32 pairs); scales are decoded binary32 values.");
  m.def("decode", &decode_codes, py::arg("format"), py::arg("codes"), "float32 values of 4-bit codes.");
  m.def("encode", &encode_values, py::arg("values"), py::arg("format"), py::kw_only(),
        py::arg("rounding") = std::string(name(d.rounding)), py::arg("random") = py::none(),
        py::arg("sr_bits") = d.sr_bits,
        "uint8 codes of values rounded onto the format's grid (golden convert_to_format): unscaled, saturating, "
        "the sign of zero kept; `random` holds sr_bits random bits per value for stochastic rounding.");
}

}  // namespace nibble::python
