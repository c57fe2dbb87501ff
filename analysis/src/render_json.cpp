#include "nibble/analysis/render.h"

namespace nibble::analysis {

nlohmann::json matrix_row_json(const MatrixRow& row) {
  const QuantConfig& c = row.config;
  const Measurement& m = row.measurement;
  nlohmann::json levels = nlohmann::json::array();
  for (const MeasuredLevelBias& l : m.level_bias) {
    levels.push_back({{"level", l.level}, {"count", l.count}, {"bias", l.bias}});
  }
  return {{"input", row.input},
          {"format", name(c.format)},
          {"scale", name(c.scale)},
          {"block", name(c.block)},
          {"rht", rht_name(c.rht)},
          {"rounding", name(c.rounding)},
          {"sr_bits", c.sr_bits},
          {"sqnr_db", m.metrics.sqnr_db},
          {"delta_sqnr_rht", row.delta_sqnr_rht},
          {"nmse", m.metrics.nmse},
          {"alpha", m.metrics.alpha},
          {"rel_mag_error", m.metrics.rel_mag_error},
          {"code_entropy_bits", m.code_entropy_bits},
          {"b_eff", m.b_eff},
          {"level_bias", levels}};
}

nlohmann::json grid_level_bias_json(Format f) {
  nlohmann::json levels = nlohmann::json::array();
  for (const GridLevelBias& g : grid_level_bias(f)) {
    levels.push_back(
        {{"level", g.level}, {"below", g.below}, {"above", g.above}, {"ell", g.ell}, {"r", g.r}, {"bias", g.bias}});
  }
  return levels;
}

nlohmann::json chain_json(const ChainShape& shape, const std::vector<ChainRun>& runs) {
  nlohmann::json out = {{"layers", shape.layers}, {"width", shape.width}, {"batch", shape.batch}};
  nlohmann::json list = nlohmann::json::array();
  for (const ChainRun& run : runs) {
    nlohmann::json depths = nlohmann::json::array();
    for (const ChainDepth& d : run.depths) depths.push_back({{"depth", d.depth}, {"eta", d.eta}, {"cosine", d.cosine}});
    const QuantConfig& c = run.config;
    list.push_back({{"format", name(c.format)},
                    {"scale", name(c.scale)},
                    {"block", name(c.block)},
                    {"rht", rht_name(c.rht)},
                    {"rounding", name(c.rounding)},
                    {"depths", depths}});
  }
  out["runs"] = list;
  return out;
}

}  // namespace nibble::analysis
