// The diagnostics of `nibble quant` on NumPy arrays: synthetic tensors, the
// measurement of one configuration, the format x scale x block x rounding x RHT
// matrix, the per-level grid bias and the compounding chain. The analysis
// library computes; its JSON renderings (the `--json` of `nibble quant`) name
// the fields, so a row here and a row of the CLI's file have the same keys.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "names.h"
#include "nibble/analysis/chain.h"
#include "nibble/analysis/quant_matrix.h"
#include "nibble/analysis/render.h"
#include "nibble/analysis/synthetic.h"
#include "nibble/limits.h"

namespace nibble::python {
namespace {

using analysis::NamedTensor;

// x as the CLI's --tensor sees it: [rows, last axis], non-finite values zeroed and counted.
NamedTensor named_tensor(const py::handle& x, const std::string& tensor_name, size_t* nonfinite) {
  const py::array_t<float, py::array::c_style> v = float32_view(x, "x");
  const MatrixShape s = matrix_shape(v);
  if (s.rows <= 0 || s.cols <= 0) throw py::value_error("x is empty");
  NamedTensor t{tensor_name, s.rows, s.cols, std::vector<float>(v.data(), v.data() + v.size())};
  *nonfinite = analysis::zero_nonfinite(t);
  return t;
}

py::dict input_dict(const NamedTensor& t, size_t nonfinite) {
  py::dict d;
  d["name"] = t.name;
  d["rows"] = t.rows;
  d["cols"] = t.cols;
  d["nonfinite_zeroed"] = nonfinite;
  return d;
}

py::array_t<float> synthetic(const std::string& distribution, const py::object& rows_arg, const py::object& cols_arg,
                             const py::object& seed, const py::object& stream) {
  const analysis::Distribution d =
      parse_named(analysis::kAllDistributions, analysis::parse_distribution, distribution, "distribution");
  const int64_t rows = checked_int(rows_arg, "rows", 1, INT64_MAX);
  const int64_t cols = checked_int(cols_arg, "cols", 1, INT64_MAX);
  if (!limits::checked_product({rows, cols}, limits::kMaxWorkElements)) {
    throw py::value_error("rows x cols is more than the limit of 2^28 elements");
  }
  const uint64_t s = checked_uint(seed, "seed", UINT64_MAX);
  const auto st = static_cast<uint32_t>(checked_uint(stream, "stream", UINT32_MAX));
  std::vector<float> v;
  {
    py::gil_scoped_release unlocked;
    v = analysis::synthetic_tensor(d, rows, cols, s, st);
  }
  return to_numpy(std::move(v), {rows, cols});
}

py::dict measure(const py::handle& x, const QuantConfig& cfg) {
  size_t nonfinite = 0;
  const NamedTensor t = named_tensor(x, "x", &nonfinite);
  analysis::MatrixRow row{t.name, cfg, {}, std::numeric_limits<double>::quiet_NaN()};
  {
    py::gil_scoped_release unlocked;
    row.measurement = analysis::measure_quantization(t.values.data(), t.rows, t.cols, cfg);
  }
  py::dict out = from_json(analysis::matrix_row_json(row)).cast<py::dict>();
  out["nonfinite_zeroed"] = nonfinite;
  return out;
}

template <typename E, size_t N, typename Parse>
std::vector<E> parse_list(const std::vector<std::string>& given, const std::array<E, N>& all, Parse parse,
                          const char* what) {
  if (given.empty()) throw py::value_error(std::string("the list of ") + what + "s is empty");
  std::vector<E> out;
  for (const std::string& g : given) out.push_back(parse_named(all, parse, g, what));
  return out;
}

py::dict quant_matrix(const py::handle& x, const std::string& tensor_name, const std::vector<std::string>& formats,
                      const std::vector<std::string>& scales, const std::vector<std::string>& blocks,
                      const std::vector<int>& rht, const std::vector<std::string>& roundings,
                      const py::object& sr_bits, const py::object& seed, const std::string& zero,
                      const std::string& nonfinite) {
  analysis::MatrixSpec spec;
  spec.formats = parse_list(formats, kAllFormats, parse_format, "format");
  spec.scales = parse_list(scales, kAllScaleModes, parse_scale_mode, "scale mode");
  spec.blocks = parse_list(blocks, kAllBlockShapes, parse_block_shape, "block shape");
  spec.roundings = parse_list(roundings, kAllRoundings, parse_rounding, "rounding");
  if (rht.empty()) throw py::value_error("the list of RHT sizes is empty");
  spec.rht_sizes = rht;
  spec.sr_bits = static_cast<int>(checked_int(sr_bits, "sr_bits", INT32_MIN, INT32_MAX));
  spec.seed = checked_uint(seed, "seed", UINT64_MAX);
  spec.policy = QuantPolicy{zero_policy_named(zero), nonfinite_policy_named(nonfinite)};
  size_t nonfinite_count = 0;
  const NamedTensor t = named_tensor(x, tensor_name, &nonfinite_count);
  std::vector<analysis::MatrixRow> rows;
  {
    py::gil_scoped_release unlocked;
    rows = analysis::run_quant_matrix(t, spec);
  }
  py::list list;
  for (const analysis::MatrixRow& r : rows) list.append(from_json(analysis::matrix_row_json(r)));
  py::dict out;
  out["input"] = input_dict(t, nonfinite_count);
  out["rows"] = list;
  return out;
}

py::object chain(const std::vector<QuantConfig>& configs, const py::object& layers, const py::object& width,
               const py::object& batch, const py::object& seed) {
  if (configs.empty()) throw py::value_error("chain needs at least one configuration");
  analysis::ChainShape shape;
  shape.layers = static_cast<int>(checked_int(layers, "layers", 1, INT32_MAX));
  shape.width = checked_int(width, "width", 1, INT64_MAX);
  shape.batch = checked_int(batch, "batch", 1, INT64_MAX);
  const uint64_t s = checked_uint(seed, "seed", UINT64_MAX);
  std::vector<analysis::ChainRun> runs;
  {
    py::gil_scoped_release unlocked;
    const analysis::ChainProblem problem = analysis::make_chain_problem(shape, s);
    for (const QuantConfig& c : configs) runs.push_back({c, analysis::run_chain(problem, c)});
  }
  return from_json(analysis::chain_json(shape, runs));
}

}  // namespace

void bind_analysis(py::module_& m) {
  m.attr("distributions") = names_of(analysis::kAllDistributions);
  m.def("synthetic", &synthetic, py::arg("distribution"), py::arg("rows"), py::arg("cols"), py::kw_only(),
        py::arg("seed") = 0, py::arg("stream") = 0,
        "float32 [rows, cols]: the synthetic tensor `nibble quant --input` uses (unit variance).");
  m.def("grid_level_bias", [](const std::string& f) { return from_json(analysis::grid_level_bias_json(format_named(f))); },
        py::arg("format"), "The predicted RNE bias at each positive level of the format's grid (flat density).");
  m.def("_measure", &measure, py::arg("x"), py::arg("config"));
  m.def("_quant_matrix", &quant_matrix, py::arg("x"), py::arg("name"), py::arg("formats"), py::arg("scales"),
        py::arg("blocks"), py::arg("rht"), py::arg("roundings"), py::arg("sr_bits"), py::arg("seed"),
        py::arg("zero"), py::arg("nonfinite"));
  m.def("_chain", &chain, py::arg("configs"), py::arg("layers"), py::arg("width"), py::arg("batch"), py::arg("seed"));
}

}  // namespace nibble::python
