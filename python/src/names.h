// Golden's enumerations by the names its command lines use, taken from
// golden's own tables (kAllFormats, kAllScaleModes, ...) and name functions.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::python {

namespace py = pybind11;

template <typename E, size_t N>
py::tuple names_of(const std::array<E, N>& all) {
  py::tuple out(N);
  for (size_t i = 0; i < N; ++i) out[i] = py::str(std::string(name(all[i])));
  return out;
}

// The value named `given`; ValueError "unknown <what> 'x'; valid: a, b, c" otherwise.
template <typename E, size_t N, typename Parse>
E parse_named(const std::array<E, N>& all, Parse parse, const std::string& given, const char* what) {
  if (const std::optional<E> v = parse(given)) return *v;
  std::string valid;
  for (E e : all) valid += (valid.empty() ? "" : ", ") + std::string(name(e));
  throw py::value_error("unknown " + std::string(what) + " '" + given + "'; valid: " + valid);
}

inline Format format_named(const std::string& s) { return parse_named(kAllFormats, parse_format, s, "format"); }
inline ScaleMode scale_mode_named(const std::string& s) {
  return parse_named(kAllScaleModes, parse_scale_mode, s, "scale mode");
}
inline BlockShape block_named(const std::string& s) {
  return parse_named(kAllBlockShapes, parse_block_shape, s, "block shape");
}
inline Rounding rounding_named(const std::string& s) {
  return parse_named(kAllRoundings, parse_rounding, s, "rounding");
}
inline ZeroPolicy zero_policy_named(const std::string& s) {
  return parse_named(kAllZeroPolicies, parse_zero_policy, s, "zero policy");
}
inline NonFinitePolicy nonfinite_policy_named(const std::string& s) {
  return parse_named(kAllNonFinitePolicies, parse_nonfinite_policy, s, "non-finite policy");
}

}  // namespace nibble::python
