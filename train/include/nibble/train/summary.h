// The training-quality metric and the sweep summary (summary.json, summary.md).
// Torch-free: the arithmetic is unit-tested in CI.
//
// Metric (per seed): the mean relative loss gap over the last N steps,
//   gap = (1/N) * sum_{t in last N} |L_fp4(t) - L_bf16(t)| / L_bf16(t),
// against the BF16 run of the same seed (same init, same batches). Across
// seeds: mean, sample standard deviation, min and max.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nibble::train {

double relative_gap(const std::vector<float>& loss, const std::vector<float>& baseline, int last_n);
// The same mean without the absolute value: positive where the recipe's loss is higher.
double signed_relative_gap(const std::vector<float>& loss, const std::vector<float>& baseline, int last_n);

struct Spread {
  double mean = 0;
  double std = 0;  // sample standard deviation (0 for one value)
  double min = 0;
  double max = 0;
  size_t n = 0;
};
Spread spread(const std::vector<double>& v);
double median(std::vector<double> v);

// Whether two loss curves are equal bit for bit (same length, same float bits).
bool bit_identical(const std::vector<float>& a, const std::vector<float>& b);

// One finished run, as the sweep records it.
struct RunRecord {
  std::string recipe;       // preset name
  std::string description;  // describe(recipe)
  uint64_t seed = 0;
  std::string dir;          // relative to the sweep's output directory
  std::vector<float> loss;  // training loss per step
  std::vector<double> step_ms;
  double final_val_loss = 0;
};

struct SweepMeta {
  nlohmann::ordered_json config;  // model, data and schedule settings
  int last_n = 100;
  int warmup_steps_excluded = 10;  // steps left out of the step-time median
  std::string device;
  std::string gpu;      // the GPU's name where the runs used one
  std::string command;  // the command line that ran the sweep
};

// Builds summary.json (schema "nibble-train-summary/1", see docs/training.md).
// Needs a "bf16" run for every seed of every other recipe; throws std::invalid_argument otherwise.
nlohmann::ordered_json summarize(const std::vector<RunRecord>& runs, const SweepMeta& meta);

// The summary.md table made from summary.json.
std::string summary_markdown(const nlohmann::ordered_json& summary);

}  // namespace nibble::train
