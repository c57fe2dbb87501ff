#include "nibble/sim/bulk_gemm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "nibble/dot.h"
#include "nibble/scale.h"

namespace nibble::sim {
namespace {

// Signed units of every code of q, row-major [rows, cols].
std::vector<int8_t> units_of(const QuantizedTensor& q) {
  std::vector<int8_t> u(q.codes.size());
  decode_units(q.config.format, q.codes.data(), q.codes.size(), u.data());
  return u;
}

// The decoded scale of every (row, k-block) of q, [rows, nk], blocks of `step` elements.
std::vector<float> block_scales_of(const QuantizedTensor& q, int64_t step, int64_t nk) {
  const ScaleFormat sf = scale_format(q.config.scale);
  std::vector<float> s(static_cast<size_t>(q.rows * nk));
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t j = 0; j < nk; ++j) s[static_cast<size_t>(r * nk + j)] = decode_scale(sf, q.scale_code_at(r, j * step));
  }
  return s;
}

}  // namespace

std::vector<float> bulk_gemm(const QuantizedTensor& a, const QuantizedTensor& b, const ProgressFn& progress) {
  if (a.cols != b.cols) {
    throw std::invalid_argument("bulk_gemm: contraction lengths differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.cols) + ")");
  }
  if (!(a.config.rht == b.config.rht) || (a.config.rht.enabled() && a.config.seed != b.config.seed)) {
    throw std::invalid_argument("bulk_gemm: operands must share the RHT size, bf16 option and seed");
  }
  const int64_t k = a.cols;
  const int64_t step = std::min(block_cols(a.config.block), block_cols(b.config.block));
  const int64_t nk = (k + step - 1) / step;
  const Format fa = a.config.format, fb = b.config.format;
  const std::vector<int8_t> ua = units_of(a), ub = units_of(b);
  const std::vector<float> sa = block_scales_of(a, step, nk), sb = block_scales_of(b, step, nk);
  // Eight columns of C at a time, so that eight independent accumulator chains
  // overlap in the processor (each chain is serial: block order is part of the result).
  constexpr int64_t kGroup = 8;
  std::vector<int32_t> p(static_cast<size_t>(kGroup * nk));
  std::vector<float> c(static_cast<size_t>(a.rows * b.rows));
  const int64_t report_every = std::max<int64_t>(1, a.rows / 100);
  for (int64_t m = 0; m < a.rows; ++m) {
    const int8_t* row_a = &ua[static_cast<size_t>(m * k)];
    const float* scales_a = &sa[static_cast<size_t>(m * nk)];
    for (int64_t n0 = 0; n0 < b.rows; n0 += kGroup) {
      const int64_t group = std::min(kGroup, b.rows - n0);
      for (int64_t g = 0; g < group; ++g) {
        block_partial_sums(row_a, &ub[static_cast<size_t>((n0 + g) * k)], static_cast<size_t>(k),
                           static_cast<size_t>(step), &p[static_cast<size_t>(g * nk)]);
      }
      float acc[kGroup] = {};
      for (int64_t j = 0; j < nk; ++j) {
        for (int64_t g = 0; g < group; ++g) {
          const size_t i = static_cast<size_t>(g * nk + j);
          const float scale_b = sb[static_cast<size_t>((n0 + g) * nk + j)];
          acc[g] = accumulate(acc[g], block_product(p[i], fa, fb, scales_a[j], scale_b));
        }
      }
      for (int64_t g = 0; g < group; ++g) {
        c[static_cast<size_t>(m * b.rows + n0 + g)] = apply_tensor_scales(acc[g], a.tensor.decode, b.tensor.decode);
      }
    }
    if (progress && ((m + 1) % report_every == 0 || m + 1 == a.rows)) {
      progress(static_cast<uint64_t>(m + 1), static_cast<uint64_t>(a.rows));
    }
  }
  return c;
}

}  // namespace nibble::sim
