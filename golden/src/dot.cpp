#include "nibble/dot.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "nibble/fp32.h"

namespace nibble {

int32_t block_partial_sum(const uint8_t* codes_a, Format fa, const uint8_t* codes_b, Format fb, size_t count) {
  int32_t p = 0;
  for (size_t i = 0; i < count; ++i) p += decode(fa, codes_a[i]).signed_units() * decode(fb, codes_b[i]).signed_units();
  return p;
}

void decode_units(Format f, const uint8_t* codes, size_t n, int8_t* out) {
  int8_t table[16];
  for (uint8_t c = 0; c < 16; ++c) table[c] = static_cast<int8_t>(decode(f, c).signed_units());
  for (size_t i = 0; i < n; ++i) out[i] = table[codes[i] & 0xFu];
}

namespace {

// One block of a compile-time length, so that the compiler can vectorize it.
template <size_t N>
int32_t units_dot(const int8_t* a, const int8_t* b) {
  int32_t p = 0;
  for (size_t i = 0; i < N; ++i) p += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return p;
}

int32_t units_dot(const int8_t* a, const int8_t* b, size_t n) {
  int32_t p = 0;
  for (size_t i = 0; i < n; ++i) p += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return p;
}

}  // namespace

void block_partial_sums(const int8_t* units_a, const int8_t* units_b, size_t k, size_t step, int32_t* out) {
  if (step == 0) throw std::invalid_argument("block_partial_sums: step must be at least 1");
  const size_t full = k / step;
  for (size_t j = 0; j < full; ++j) {
    const int8_t* a = units_a + j * step;
    const int8_t* b = units_b + j * step;
    out[j] = step == 16 ? units_dot<16>(a, b) : step == 32 ? units_dot<32>(a, b) : units_dot(a, b, step);
  }
  if (k % step != 0) out[full] = units_dot(units_a + full * step, units_b + full * step, k % step);
}

float block_product(int32_t partial_sum, Format fa, Format fb, float scale_a, float scale_b) {
  const float s = scale_a * scale_b;
  if (!f32_is_finite(s)) return canonical(static_cast<float>(partial_sum) * s);  // NaN, or +-Inf (NaN if P = 0)
  const F32Fields sf = f32_fields(s);
  const bool neg = (partial_sum < 0) != sf.neg;
  const uint64_t mag = static_cast<uint64_t>(partial_sum < 0 ? -static_cast<int64_t>(partial_sum) : partial_sum) *
                       static_cast<uint64_t>(sf.sig);
  return round_to_f32(neg, mag, sf.exp + lsb_exp(fa) + lsb_exp(fb));
}

float accumulate(float acc, float r) { return canonical(acc + r); }

float apply_tensor_scales(float acc, float ga, float gb) { return canonical(acc * (ga * gb)); }

float dot_rows(const QuantizedTensor& a, int64_t ra, const QuantizedTensor& b, int64_t rb) {
  const int64_t k = a.cols;
  const int64_t step = std::min(block_cols(a.config.block), block_cols(b.config.block));
  const ScaleFormat sfa = scale_format(a.config.scale);
  const ScaleFormat sfb = scale_format(b.config.scale);
  const uint8_t* ca = &a.codes[static_cast<size_t>(ra * k)];
  const uint8_t* cb = &b.codes[static_cast<size_t>(rb * k)];
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += step) {
    const size_t len = static_cast<size_t>(std::min(step, k - k0));
    const int32_t p = block_partial_sum(ca + k0, a.config.format, cb + k0, b.config.format, len);
    const float r = block_product(p, a.config.format, b.config.format, decode_scale(sfa, a.scale_code_at(ra, k0)),
                                  decode_scale(sfb, b.scale_code_at(rb, k0)));
    acc = accumulate(acc, r);
  }
  return apply_tensor_scales(acc, a.tensor.decode, b.tensor.decode);
}

void check_dot_operands(const QuantizedTensor& a, const QuantizedTensor& b, const std::string& op) {
  if (a.cols != b.cols) {
    throw std::invalid_argument(op + ": contraction lengths differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.cols) + ")");
  }
  if (!(a.config.rht == b.config.rht) || (a.config.rht.enabled() && a.config.seed != b.config.seed)) {
    throw std::invalid_argument(op + ": operands must share the RHT size, bf16 option and seed");
  }
}

std::vector<float> gemm(const QuantizedTensor& a, const QuantizedTensor& b) {
  check_dot_operands(a, b, "gemm");
  std::vector<float> c(static_cast<size_t>(a.rows * b.rows));
  for (int64_t m = 0; m < a.rows; ++m) {
    for (int64_t n = 0; n < b.rows; ++n) c[static_cast<size_t>(m * b.rows + n)] = dot_rows(a, m, b, n);
  }
  return c;
}

}  // namespace nibble
