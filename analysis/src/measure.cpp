#include "nibble/analysis/measure.h"

#include "nibble/rht.h"

namespace nibble::analysis {

std::vector<float> reference_domain(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg) {
  std::vector<float> ref(x, x + rows * cols);
  if (cfg.rht.enabled()) rht_rows(ref.data(), rows, cols, cfg.rht, cfg.seed);
  return ref;
}

std::vector<double> scaled_reference(const QuantizedTensor& q, const float* reference) {
  const ScaleFormat sf = scale_format(q.config.scale);
  std::vector<double> out(static_cast<size_t>(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t c = 0; c < q.cols; ++c) {
      const size_t i = static_cast<size_t>(r * q.cols + c);
      const double scale = static_cast<double>(decode_scale(sf, q.scale_code_at(r, c))) * q.tensor.decode;
      out[i] = reference[i] / scale;
    }
  }
  return out;
}

Measurement measure_quantization(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg) {
  const QuantizedTensor q = quantize(x, rows, cols, cfg);
  const std::vector<float> deq = dequantize(q);
  const std::vector<float> ref = reference_domain(x, rows, cols, cfg);
  const std::vector<double> scaled = scaled_reference(q, ref.data());
  Measurement m;
  m.metrics = error_metrics(ref.data(), deq.data(), ref.size());
  // The entropy is over the emitted levels: a negative zero (the signed-zero policy's 0x8)
  // is the level 0, so the metric is the same under both zero policies.
  std::vector<uint8_t> levels(q.codes);
  for (uint8_t& c : levels) c = decode(cfg.format, c).units == 0 ? uint8_t{0} : c;
  m.code_entropy_bits = code_entropy_bits(levels.data(), levels.size());
  m.b_eff = effective_level_fraction(m.code_entropy_bits, emitted_level_count(cfg.format));
  m.level_bias = measured_level_bias(cfg.format, q.codes.data(), scaled.data(), scaled.size());
  return m;
}

}  // namespace nibble::analysis
