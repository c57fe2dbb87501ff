// Quantized tensors from a design's own arrays, and where two quantized tensors
// differ: what `nibble golden-quant --check` does with files, on arrays. The
// checks and the comparison are io's (nibble/io/quantized_file.h), the ones
// the quantized-tensor files go through.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "nibble/io/quantized_file.h"

namespace nibble::python {
namespace {

std::vector<int64_t> integers_of(const py::handle& x, const char* what) {
  const py::array a = py::array::ensure(x);
  if (!a || (a.dtype().kind() != 'i' && a.dtype().kind() != 'u')) {
    throw py::type_error(std::string(what) + " must be an integer array");
  }
  const auto v = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  return std::vector<int64_t>(v.data(), v.data() + v.size());
}

QuantizedTensor from_arrays(const py::handle& codes, const py::handle& scales, const QuantConfig& config,
                            const std::pair<float, float>& tensor_scale) {
  const py::array c = py::array::ensure(codes);
  if (!c || c.ndim() == 0) throw py::type_error("codes must be an array of at least one axis");
  const MatrixShape shape = matrix_shape(c);
  QuantizedTensor q;
  q.rows = shape.rows;
  q.cols = shape.cols;
  q.config = config;
  q.tensor = {tensor_scale.first, tensor_scale.second};
  for (const int64_t v : integers_of(codes, "codes")) {
    if (v < 0 || v > 0xF) throw py::value_error("code " + std::to_string(v) + " is not 4 bits");
    q.codes.push_back(static_cast<uint8_t>(v));
  }
  for (const int64_t v : integers_of(scales, "scales")) {
    if (v < 0 || v > UINT32_MAX) throw py::value_error("block scale code " + std::to_string(v) + " is not 32 bits");
    q.scales.push_back(static_cast<uint32_t>(v));
  }
  if (const auto defect = io::quantized_defect(q)) throw py::value_error(*defect);
  return q;
}

py::dict compare(const QuantizedTensor& got, const QuantizedTensor& want) {
  const io::QuantizedDiff d = io::diff_quantized(got, want);
  py::dict out;
  out["same"] = d.same();
  out["codes"] = d.codes;
  out["first_code"] = d.first_code;
  out["scales"] = d.scales;
  out["first_scale"] = d.first_scale;
  out["tensor_scale"] = d.tensor_scale;
  out["description"] = io::describe(d, got, want);
  return out;
}

}  // namespace

void bind_quantized(py::module_& m) {
  m.def("quantized_tensor", &from_arrays, py::arg("codes"), py::arg("scales"), py::arg("config"),
        py::arg("tensor_scale") = std::make_pair(1.0f, 1.0f),
        "A QuantizedTensor from a design's own arrays: codes [rows, cols] (0..15), block scale codes in "
        "block-row-major order (E4M3/UE8M0 codes, or binary32 bit patterns for fp32), the QuantConfig that made "
        "them and (S_enc, g); checked as quantized-tensor files are. Golden's dequantize, gemm and dot_rows "
        "then run on them.");
  m.def("compare_quantized", &compare, py::arg("got"), py::arg("want"),
        "Where `got` differs from `want` (same shape and block shape): counts and first flat indices of the "
        "differing codes and block scales, whether the tensor scales' bits differ, and the description "
        "`nibble golden-quant --check` prints.");
}

}  // namespace nibble::python
