#include "nibble/analysis/quant_matrix.h"

#include <limits>
#include <stdexcept>

#include "nibble/fp32.h"

namespace nibble::analysis {

size_t zero_nonfinite(NamedTensor& t) {
  size_t nonfinite = 0;
  for (float& v : t.values) {
    if (!f32_is_finite(v)) {
      v = 0.0f;
      ++nonfinite;
    }
  }
  if (nonfinite > 0 && nonfinite == t.values.size()) throw std::invalid_argument("tensor has no finite values");
  return nonfinite;
}

size_t matrix_row_count(const MatrixSpec& spec) {
  return spec.formats.size() * spec.scales.size() * spec.blocks.size() * spec.roundings.size() *
         spec.rht_sizes.size();
}

std::vector<MatrixRow> run_quant_matrix(const NamedTensor& input, const MatrixSpec& spec) {
  std::vector<MatrixRow> rows;
  rows.reserve(matrix_row_count(spec));
  const auto measure = [&input](const QuantConfig& cfg) {
    return measure_quantization(input.values.data(), input.rows, input.cols, cfg);
  };
  for (Format format : spec.formats) {
    for (ScaleMode scale : spec.scales) {
      for (BlockShape block : spec.blocks) {
        for (Rounding rounding : spec.roundings) {
          QuantConfig cfg;
          cfg.format = format;
          cfg.scale = scale;
          cfg.block = block;
          cfg.rounding = rounding;
          cfg.sr_bits = spec.sr_bits;
          cfg.seed = spec.seed;
          cfg.policy = spec.policy;
          const Measurement baseline = measure(cfg);
          for (int rht : spec.rht_sizes) {
            MatrixRow row{input.name, cfg, baseline, std::numeric_limits<double>::quiet_NaN()};
            if (rht != 0) {
              row.config.rht.size = rht;
              row.measurement = measure(row.config);
              row.delta_sqnr_rht = row.measurement.metrics.sqnr_db - baseline.metrics.sqnr_db;
            }
            rows.push_back(std::move(row));
          }
        }
      }
    }
  }
  return rows;
}

}  // namespace nibble::analysis
