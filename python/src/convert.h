// What the bindings share: NumPy arrays in (float32 views of the caller's
// arrays, copied only where the dtype or layout needs it) and out (arrays that
// own the vectors golden returned), Python integers checked against the range
// of the C++ parameter they become, and JSON values as Python objects.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nibble::python {

namespace py = pybind11;

// x as a C-contiguous float32 array: x itself (no copy) when it already is
// one; otherwise a copy converted by NumPy (float16, float64 and other real
// floating dtypes, or a non-contiguous layout). TypeError naming `what` for
// anything that is not an array of real floating-point numbers.
py::array_t<float, py::array::c_style> float32_view(const py::handle& x, const char* what);

// The matrix view golden quantizes: [product of the leading axes, last axis];
// a 0-d array is 1 x 1, a 1-d array 1 x N (as nibble::io::Tensor::rows/cols).
struct MatrixShape {
  int64_t rows;
  int64_t cols;
};
MatrixShape matrix_shape(const py::array& x);

// A NumPy array that takes ownership of v (no copy), of the given shape.
template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& v, const std::vector<int64_t>& shape) {
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array_t<T>(dims, owned->data(), free_when_done);
}

// A Python int in [lo, hi] as int64; ValueError naming `what` otherwise,
// TypeError for a value that is not an integer (bool included).
int64_t checked_int(const py::handle& v, const char* what, int64_t lo, int64_t hi);
// A Python int in [0, hi] as uint64.
uint64_t checked_uint(const py::handle& v, const char* what, uint64_t hi);

// A JSON value as Python: objects as dicts, arrays as lists, numbers as int or
// float (NaN and infinities kept, which JSON text cannot hold), null as None.
py::object from_json(const nlohmann::json& j);

}  // namespace nibble::python
