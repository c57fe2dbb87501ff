// The cycle section, with SystemC: a GEMM sweep over array shapes and operand
// bandwidths on sim::SystemCDevice, every result checked against golden, and a
// live check of the model against golden over every format pair and scale mode.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "nibble/analysis/synthetic.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/report/report.h"
#include "nibble/sim/device.h"
#include "nibble/sim/systemc_device.h"

namespace nibble::report {
namespace {

QuantizedTensor operand(int64_t rows, int64_t cols, Format f, ScaleMode s, uint64_t seed, uint32_t stream) {
  const std::vector<float> x = analysis::synthetic_tensor(analysis::Distribution::kGaussian, rows, cols, seed, stream);
  QuantConfig c;
  c.format = f;
  c.scale = s;
  c.block = BlockShape::k1x16;
  c.seed = seed;
  c.stream = stream;
  return quantize(x.data(), rows, cols, c);
}

// The closed forms of sim/systemc_device.h for full tiles, no stalls, where they
// apply: a beat of `lanes` elements costs f = ceil(bytes / bandwidth) cycles.
void apply_formula(CyclePoint& p, const model::TileConfig& cfg, int scale_bytes) {
  const uint64_t bytes = static_cast<uint64_t>(cfg.rows + cfg.cols) * static_cast<uint64_t>(cfg.lanes / 2 + scale_bytes);
  const auto f = static_cast<uint64_t>((static_cast<double>(bytes) + cfg.bandwidth - 1) / cfg.bandwidth);
  const auto tiles = static_cast<uint64_t>((p.m / cfg.rows) * (p.n / cfg.cols));
  const auto nk = static_cast<uint64_t>(p.k / cfg.lanes);
  const auto fill = static_cast<uint64_t>(cfg.latency + cfg.rows);
  if (f == 1) {
    p.formula_applies = true;
    p.formula_cycles = nk + (tiles - 1) * std::max(nk, fill) + fill - 1;
  } else if (nk * f >= fill) {
    p.formula_applies = true;
    p.formula_cycles = tiles * nk * f + fill - 1;
  }
}

}  // namespace

CycleResults run_cycle_sweep(uint64_t seed, const std::function<void(const std::string&)>& progress) {
  CycleResults out;
  out.available = true;
  constexpr int64_t kM = 64, kN = 64, kK = 512;
  const QuantizedTensor a = operand(kM, kK, Format::kE2M1, ScaleMode::kNVFP4, seed, 10);
  const QuantizedTensor b = operand(kN, kK, Format::kE2M1, ScaleMode::kNVFP4, seed, 11);
  const std::array<std::array<int, 2>, 6> shapes = {{{2, 2}, {4, 4}, {8, 4}, {8, 8}, {16, 8}, {16, 16}}};
  const std::array<double, 6> bandwidths = {16, 32, 64, 128, 256, 512};
  for (const auto& sh : shapes) {
    for (double bw : bandwidths) {
      model::TileConfig cfg;
      cfg.rows = sh[0];
      cfg.cols = sh[1];
      cfg.lanes = 16;
      cfg.bandwidth = bw;
      model::validate(cfg);
      sim::SystemCDevice dev(cfg);
      const sim::GemmResult r = dev.run(a, b);
      const sim::CheckResult check = sim::check_against_golden(a, b, r);
      const sim::GemmStats& s = *r.stats;
      CyclePoint p;
      p.rows = cfg.rows;
      p.cols = cfg.cols;
      p.lanes = cfg.lanes;
      p.bandwidth = bw;
      p.m = kM;
      p.n = kN;
      p.k = kK;
      p.cycles = s.cycles;
      p.macs = s.macs;
      p.peak = s.peak_macs_per_cycle;
      p.stall_operand = s.stall_operand;
      p.stall_output = s.stall_output;
      p.stall_pipeline = s.stall_pipeline;
      p.utilization = s.utilization();
      p.compared = check.compared;
      p.mismatches = check.mismatches;
      apply_formula(p, cfg, 1);
      out.sweep.push_back(p);
    }
    if (progress) progress(fmt::format("cycles: array {}x{} swept over {} bandwidths", sh[0], sh[1], bandwidths.size()));
  }

  // Live check: every format pair x scale mode, a 20x24x96 GEMM (partial edge
  // tiles on a 4x4 array) on the SystemC model vs golden, bit for bit.
  LiveCheck live;
  live.what = "SystemC model vs golden gemm: 9 format pairs x 4 scale modes, 20x24x96 GEMMs on a 4x4x16 array "
              "(edge tiles partial), 1x16 blocks, gaussian operands";
  model::TileConfig cfg;
  sim::SystemCDevice dev(cfg);
  uint32_t stream = 100;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (ScaleMode sm : kAllScaleModes) {
        const QuantizedTensor la = operand(20, 96, fa, sm, seed, stream++);
        const QuantizedTensor lb = operand(24, 96, fb, sm, seed, stream++);
        const sim::GemmResult r = dev.run(la, lb);
        const sim::CheckResult check = sim::check_against_golden(la, lb, r);
        ++live.gemms;
        live.compared += check.compared;
        live.mismatches += check.mismatches;
      }
    }
  }
  out.live.push_back(live);
  if (progress) progress(fmt::format("verification: live check, {} GEMMs, {} elements compared, {} mismatches",
                                     live.gemms, live.compared, live.mismatches));
  return out;
}

}  // namespace nibble::report
