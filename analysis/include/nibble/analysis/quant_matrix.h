// The diagnostics matrix behind `nibble quant`: one tensor quantized under
// every combination of format x scale mode x block shape x rounding x RHT in
// a spec, one measured row per combination.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nibble/analysis/measure.h"
#include "nibble/quantize.h"

namespace nibble::analysis {

// A tensor seen as a row-major [rows, cols] matrix; cols is the contraction
// axis along which blocks and the RHT run.
struct NamedTensor {
  std::string name;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> values;
};

struct MatrixSpec {
  std::vector<Format> formats;
  std::vector<ScaleMode> scales;
  std::vector<BlockShape> blocks;
  std::vector<int> rht_sizes;  // 0 = no RHT
  std::vector<Rounding> roundings;
  int sr_bits = 8;
  uint64_t seed = 0;  // SR bits and RHT signs
  QuantPolicy policy;  // every row's (the quantizer's signed-zero and non-finite policies)
};

struct MatrixRow {
  std::string input;
  QuantConfig config;
  Measurement measurement;
  // SQNR with this row's RHT minus SQNR without any, all else equal (the
  // baseline is measured even when the spec does not list "no RHT"); NaN for
  // rows without an RHT.
  double delta_sqnr_rht = 0.0;
};

// Sets t's non-finite elements to 0 and returns how many there were. A NaN or
// Inf would make its whole block a NaN-scale block and every metric NaN, so the
// diagnostics of a user's tensor describe its finite values and count the
// rest. Throws std::invalid_argument ("tensor has no finite values") when t
// has elements but none finite.
size_t zero_nonfinite(NamedTensor& t);

// The product of the five list lengths.
size_t matrix_row_count(const MatrixSpec& spec);

// Rows ordered format, scale, block, rounding, RHT (outermost first), so the
// rows that differ only in RHT are adjacent. Throws std::invalid_argument when
// an RHT size does not divide input.cols.
std::vector<MatrixRow> run_quant_matrix(const NamedTensor& input, const MatrixSpec& spec);

}  // namespace nibble::analysis
