// The diagnostics matrix: one row per combination, in the documented order,
// each row equal to measuring its configuration directly with the golden
// model, and delta-SQNR equal to the difference it claims to be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "nibble/analysis/quant_matrix.h"
#include "nibble/analysis/synthetic.h"
#include "nibble/rht.h"

namespace nibble::analysis {
namespace {

MatrixSpec full_spec(uint64_t seed) {
  MatrixSpec s;
  s.formats = {kAllFormats.begin(), kAllFormats.end()};
  s.scales = {kAllScaleModes.begin(), kAllScaleModes.end()};
  s.blocks = {kAllBlockShapes.begin(), kAllBlockShapes.end()};
  s.rht_sizes = {0, 16};
  s.roundings = {Rounding::kNearestEven, Rounding::kStochastic};
  s.seed = seed;
  return s;
}

NamedTensor gaussian(int64_t rows, int64_t cols, uint64_t seed) {
  return {"gaussian", rows, cols, synthetic_tensor(Distribution::kGaussian, rows, cols, seed)};
}

TEST(QuantMatrix, OneRowPerCombinationInOrder) {
  const uint64_t seed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const MatrixSpec spec = full_spec(seed);
  ASSERT_EQ(matrix_row_count(spec), 3u * 4u * 3u * 2u * 2u);
  const std::vector<MatrixRow> rows = run_quant_matrix(gaussian(32, 64, seed), spec);
  ASSERT_EQ(rows.size(), matrix_row_count(spec));
  size_t i = 0;
  for (Format f : spec.formats) {
    for (ScaleMode sc : spec.scales) {
      for (BlockShape b : spec.blocks) {
        for (Rounding r : spec.roundings) {
          for (int rht : spec.rht_sizes) {
            const QuantConfig& c = rows[i].config;
            EXPECT_EQ(c.format, f);
            EXPECT_EQ(c.scale, sc);
            EXPECT_EQ(c.block, b);
            EXPECT_EQ(c.rounding, r);
            EXPECT_EQ(c.rht.size, rht);
            EXPECT_EQ(c.seed, seed);
            EXPECT_EQ(rows[i].input, "gaussian");
            EXPECT_TRUE(std::isfinite(rows[i].measurement.metrics.sqnr_db)) << i;
            ++i;
          }
        }
      }
    }
  }
  EXPECT_EQ(i, rows.size());
  EXPECT_GT(i, 0u);
}

TEST(QuantMatrix, RowCountsOfSmallerSpecs) {
  MatrixSpec s = full_spec(1);
  s.formats = {Format::kE2M1};
  s.scales = {ScaleMode::kNVFP4, ScaleMode::kMXCeil};
  s.rht_sizes = {16};
  EXPECT_EQ(matrix_row_count(s), 1u * 2u * 3u * 2u * 1u);
  EXPECT_EQ(run_quant_matrix(gaussian(16, 32, 1), s).size(), matrix_row_count(s));
  s.blocks.clear();
  EXPECT_EQ(matrix_row_count(s), 0u);
  EXPECT_TRUE(run_quant_matrix(gaussian(16, 32, 1), s).empty());
}

TEST(QuantMatrix, RowsEqualDirectGoldenMeasurementAndDeltaIsTheDifference) {
  int checked = 0;
  for (uint64_t seed : {1ull, 2ull}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    const NamedTensor in = gaussian(20, 48, seed);  // partial 16x16 block rows
    const std::vector<MatrixRow> rows = run_quant_matrix(in, full_spec(seed));
    for (size_t i = 0; i < rows.size(); i += 2) {
      const MatrixRow& off = rows[i];
      const MatrixRow& on = rows[i + 1];
      ASSERT_FALSE(off.config.rht.enabled());
      ASSERT_EQ(on.config.rht.size, 16);
      EXPECT_TRUE(std::isnan(off.delta_sqnr_rht));
      EXPECT_EQ(on.delta_sqnr_rht, on.measurement.metrics.sqnr_db - off.measurement.metrics.sqnr_db);

      // The RHT row is measured in the rotated domain, against rht_rows(x).
      const QuantizedTensor q = quantize(in.values.data(), in.rows, in.cols, on.config);
      const std::vector<float> deq = dequantize(q);
      std::vector<float> ref = in.values;
      rht_rows(ref.data(), in.rows, in.cols, on.config.rht, on.config.seed);
      const ErrorMetrics direct = error_metrics(ref.data(), deq.data(), ref.size());
      EXPECT_EQ(direct.sqnr_db, on.measurement.metrics.sqnr_db);
      EXPECT_EQ(direct.alpha, on.measurement.metrics.alpha);
      EXPECT_EQ(code_entropy_bits(q.codes.data(), q.codes.size()), on.measurement.code_entropy_bits);

      // Every nonzero code is charged to exactly one level.
      uint64_t nonzero = 0, charged = 0;
      for (uint8_t c : q.codes) nonzero += decode(on.config.format, c).units != 0 ? 1 : 0;
      for (const MeasuredLevelBias& l : on.measurement.level_bias) charged += l.count;
      EXPECT_EQ(charged, nonzero);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(QuantMatrix, DeltaIsMeasuredEvenWithoutAnOffRow) {
  MatrixSpec s = full_spec(4);
  s.rht_sizes = {16};
  const std::vector<MatrixRow> rows = run_quant_matrix(gaussian(16, 64, 4), s);
  ASSERT_FALSE(rows.empty());
  for (const MatrixRow& r : rows) EXPECT_TRUE(std::isfinite(r.delta_sqnr_rht));
}

TEST(QuantMatrix, NonFiniteValuesAreZeroedAndCounted) {
  NamedTensor t = gaussian(2, 16, 1);
  t.values[3] = NAN;
  t.values[7] = -INFINITY;
  const float kept = t.values[4];
  EXPECT_EQ(zero_nonfinite(t), 2u);
  EXPECT_EQ(t.values[3], 0.0f);
  EXPECT_EQ(t.values[7], 0.0f);
  EXPECT_EQ(t.values[4], kept);
  EXPECT_EQ(zero_nonfinite(t), 0u);
  NamedTensor none{"none", 1, 2, {NAN, INFINITY}};
  EXPECT_THROW(zero_nonfinite(none), std::invalid_argument);
}

TEST(QuantMatrix, RhtSizeMustDivideCols) {
  EXPECT_THROW(run_quant_matrix(gaussian(4, 40, 1), full_spec(1)), std::invalid_argument);
}

TEST(ScaledReference, MatchesTheQuantizerScaledValuesForFp32Scales) {
  const uint64_t seed = 9;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const NamedTensor in = gaussian(8, 64, seed);
  QuantConfig cfg;
  cfg.format = Format::kE2M1;
  const QuantizedTensor q = quantize(in.values.data(), in.rows, in.cols, cfg);
  const std::vector<double> scaled = scaled_reference(q, in.values.data());
  int checked = 0;
  for (size_t i = 0; i < scaled.size(); ++i) {
    // |x_scaled| <= gmax up to the rounding of the scale, and RNE put it in its code's bucket.
    const double gmax = max_value(cfg.format);
    EXPECT_LE(std::fabs(scaled[i]), gmax * (1 + 1e-6));
    const double level = std::fabs(static_cast<double>(decode_value(cfg.format, q.codes[i])));
    EXPECT_LE(std::fabs(std::fabs(scaled[i]) - level), 1.0 + 1e-6) << i;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace nibble::analysis
