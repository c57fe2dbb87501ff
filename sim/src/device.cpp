#include <cstdio>
#include <stdexcept>
#include <string>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/sim/device.h"

namespace nibble::sim {

GemmResult GoldenDevice::run(const QuantizedTensor& a, const QuantizedTensor& b) {
  GemmResult r;
  r.m = a.rows;
  r.n = b.rows;
  r.c = gemm(a, b);
  return r;
}

std::string CheckResult::describe() const {
  if (compared == 0) return "FAIL: nothing compared";
  if (mismatches == 0) return "PASS: " + std::to_string(compared) + " elements bit-exact vs golden";
  char buf[160];
  std::snprintf(buf, sizeof buf, "FAIL: %llu of %llu elements differ; first C[%lld][%lld] = 0x%08X, golden 0x%08X",
                static_cast<unsigned long long>(mismatches), static_cast<unsigned long long>(compared),
                static_cast<long long>(first_m), static_cast<long long>(first_n), got_bits, want_bits);
  return buf;
}

CheckResult check_against_golden(const QuantizedTensor& a, const QuantizedTensor& b, const GemmResult& r) {
  const std::vector<float> want = gemm(a, b);
  if (r.m != a.rows || r.n != b.rows || r.c.size() != want.size()) {
    throw std::invalid_argument("check: result shape " + std::to_string(r.m) + "x" + std::to_string(r.n) +
                                " does not match the operands' " + std::to_string(a.rows) + "x" +
                                std::to_string(b.rows));
  }
  CheckResult c;
  for (size_t i = 0; i < want.size(); ++i) {
    ++c.compared;
    if (f32_bits(r.c[i]) != f32_bits(want[i])) {
      if (c.mismatches++ == 0) {
        c.first_m = static_cast<int64_t>(i) / r.n;
        c.first_n = static_cast<int64_t>(i) % r.n;
        c.got_bits = f32_bits(r.c[i]);
        c.want_bits = f32_bits(want[i]);
      }
    }
  }
  return c;
}

}  // namespace nibble::sim
