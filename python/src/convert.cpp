#include "convert.h"

#include <climits>
#include <string>

namespace nibble::python {

py::array_t<float, py::array::c_style> float32_view(const py::handle& x, const char* what) {
  const py::array a = py::array::ensure(x);
  if (!a) throw py::type_error(std::string(what) + " must be a NumPy array (or convertible to one)");
  const char kind = a.dtype().kind();
  if (kind != 'f') {
    throw py::type_error(std::string(what) + " must hold real floating-point numbers (float32, or float16/float64 " +
                         "converted to float32), got dtype " + py::str(a.dtype()).cast<std::string>());
  }
  // ensure() returns x itself when it is already C-contiguous float32.
  return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
}

MatrixShape matrix_shape(const py::array& x) {
  if (x.ndim() == 0) return {1, 1};
  int64_t rows = 1;
  for (py::ssize_t d = 0; d + 1 < x.ndim(); ++d) rows *= static_cast<int64_t>(x.shape(d));
  return {rows, static_cast<int64_t>(x.shape(x.ndim() - 1))};
}

namespace {

py::int_ as_int(const py::handle& v, const char* what) {
  if (PyBool_Check(v.ptr()) || !PyLong_Check(v.ptr())) {
    throw py::type_error(std::string(what) + " must be an int, got " + py::str(py::type::of(v)).cast<std::string>());
  }
  return py::reinterpret_borrow<py::int_>(v);
}

}  // namespace

int64_t checked_int(const py::handle& v, const char* what, int64_t lo, int64_t hi) {
  const py::int_ i = as_int(v, what);
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0 || value < lo || value > hi) {
    throw py::value_error(std::string(what) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) +
                          ", got " + py::str(v).cast<std::string>());
  }
  return value;
}

uint64_t checked_uint(const py::handle& v, const char* what, uint64_t hi) {
  const py::int_ i = as_int(v, what);
  const bool negative = PyObject_RichCompareBool(i.ptr(), py::int_(0).ptr(), Py_LT) == 1;
  const unsigned long long value = negative ? 0 : PyLong_AsUnsignedLongLong(i.ptr());
  if (negative || (value == static_cast<unsigned long long>(-1) && PyErr_Occurred()) || value > hi) {
    PyErr_Clear();
    throw py::value_error(std::string(what) + " must be in 0.." + std::to_string(hi) + ", got " +
                          py::str(v).cast<std::string>());
  }
  return value;
}

py::object from_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const nlohmann::json& e : j) out.append(from_json(e));
      return std::move(out);
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [key, value] : j.items()) out[py::str(key)] = from_json(value);
      return std::move(out);
    }
    default: return py::none();  // binary and discarded values: never produced by the analysis library
  }
}

}  // namespace nibble::python
