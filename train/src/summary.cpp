#include "nibble/train/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

namespace nibble::train {

double relative_gap(const std::vector<float>& loss, const std::vector<float>& baseline, int last_n) {
  if (loss.size() != baseline.size()) {
    throw std::invalid_argument(fmt::format("relative_gap: {} steps against a baseline of {}", loss.size(),
                                            baseline.size()));
  }
  if (last_n <= 0 || static_cast<size_t>(last_n) > loss.size()) {
    throw std::invalid_argument(fmt::format("relative_gap: last_n = {} for {} steps", last_n, loss.size()));
  }
  double sum = 0;
  for (size_t t = loss.size() - static_cast<size_t>(last_n); t < loss.size(); ++t) {
    const double b = baseline[t];
    if (!(b > 0)) throw std::invalid_argument("relative_gap: the baseline loss must be positive");
    sum += std::fabs(static_cast<double>(loss[t]) - b) / b;
  }
  return sum / last_n;
}

double signed_relative_gap(const std::vector<float>& loss, const std::vector<float>& baseline, int last_n) {
  if (loss.size() != baseline.size() || last_n <= 0 || static_cast<size_t>(last_n) > loss.size()) {
    throw std::invalid_argument(fmt::format("signed_relative_gap: {} steps, a baseline of {}, last_n = {}",
                                            loss.size(), baseline.size(), last_n));
  }
  double sum = 0;
  for (size_t t = loss.size() - static_cast<size_t>(last_n); t < loss.size(); ++t) {
    const double b = baseline[t];
    if (!(b > 0)) throw std::invalid_argument("signed_relative_gap: the baseline loss must be positive");
    sum += (static_cast<double>(loss[t]) - b) / b;
  }
  return sum / last_n;
}

Spread spread(const std::vector<double>& v) {
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

namespace {

nlohmann::ordered_json to_json(const Spread& s) {
  return {{"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

double run_step_ms(const RunRecord& r, int excluded) {
  // Leave out the warm-up steps unless the run is no longer than them.
  const size_t want = static_cast<size_t>(std::max(excluded, 0));
  const size_t skip = r.step_ms.size() > want ? want : 0;
  return median(std::vector<double>(r.step_ms.begin() + static_cast<std::ptrdiff_t>(skip), r.step_ms.end()));
}

}  // namespace

nlohmann::ordered_json summarize(const std::vector<RunRecord>& runs, const SweepMeta& meta) {
  std::map<uint64_t, const RunRecord*> baseline;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    if (r.recipe == "bf16") baseline[r.seed] = &r;
    if (std::find(order.begin(), order.end(), r.recipe) == order.end()) order.push_back(r.recipe);
  }
  std::map<uint64_t, double> bf16_ms;
  for (const auto& [seed, r] : baseline) bf16_ms[seed] = run_step_ms(*r, meta.warmup_steps_excluded);

  nlohmann::ordered_json out;
  out["schema"] = "nibble-train-summary/1";
  out["device"] = meta.device;
  if (!meta.gpu.empty()) out["gpu"] = meta.gpu;
  if (!meta.command.empty()) out["command"] = meta.command;
  out["config"] = meta.config;
  out["metric"] = {{"name", "mean relative loss gap to bf16 over the last N steps"},
                   {"formula", "mean_t |L(t) - L_bf16(t)| / L_bf16(t), same seed"},
                   {"last_n", meta.last_n}};
  nlohmann::ordered_json recipes = nlohmann::ordered_json::array();
  std::map<std::string, std::map<uint64_t, const RunRecord*>> by_recipe;
  for (const auto& r : runs) by_recipe[r.recipe][r.seed] = &r;

  for (const auto& name : order) {
    std::vector<double> gaps;
    std::vector<double> signed_gaps;
    std::vector<double> finals;
    std::vector<double> vals;
    std::vector<double> ratios;
    std::vector<double> ms;
    nlohmann::ordered_json per_run = nlohmann::ordered_json::array();
    std::string description;
    for (const auto& [seed, r] : by_recipe[name]) {
      description = r->description;
      const auto b = baseline.find(seed);
      if (b == baseline.end()) {
        throw std::invalid_argument(fmt::format("summary: recipe {} seed {} has no bf16 run", name, seed));
      }
      const double gap = relative_gap(r->loss, b->second->loss, meta.last_n);
      const double sgap = signed_relative_gap(r->loss, b->second->loss, meta.last_n);
      signed_gaps.push_back(sgap);
      const double step = run_step_ms(*r, meta.warmup_steps_excluded);
      gaps.push_back(gap);
      finals.push_back(r->loss.empty() ? 0.0 : r->loss.back());
      vals.push_back(r->final_val_loss);
      ms.push_back(step);
      ratios.push_back(bf16_ms[seed] > 0 ? step / bf16_ms[seed] : 0.0);
      per_run.push_back({{"seed", seed},
                         {"dir", r->dir},
                         {"loss_csv", r->dir + "/loss.csv"},
                         {"val_csv", r->dir + "/val.csv"},
                         {"diag_csv", r->dir + "/diag.csv"},
                         {"gap", gap},
                         {"signed_gap", sgap},
                         {"final_loss", finals.back()},
                         {"final_val_loss", r->final_val_loss},
                         {"step_ms_median", step}});
    }
    recipes.push_back({{"name", name},
                       {"description", description},
                       {"gap", to_json(spread(gaps))},
                       {"signed_gap", to_json(spread(signed_gaps))},
                       {"final_loss", to_json(spread(finals))},
                       {"final_val_loss", to_json(spread(vals))},
                       {"step_ms_median", to_json(spread(ms))},
                       {"step_time_vs_bf16", spread(ratios).mean},
                       {"runs", per_run}});
  }
  out["recipes"] = recipes;

  // ufp4 and ufp4-int4 must train identically (E1M2 and INT4 dequantize to the same bits).
  nlohmann::ordered_json checks = nlohmann::ordered_json::object();
  if (by_recipe.count("ufp4") != 0 && by_recipe.count("ufp4-int4") != 0) {
    bool identical = true;
    size_t compared = 0;
    for (const auto& [seed, r] : by_recipe["ufp4"]) {
      const auto other = by_recipe["ufp4-int4"].find(seed);
      if (other == by_recipe["ufp4-int4"].end()) continue;
      identical = identical && bit_identical(r->loss, other->second->loss);
      ++compared;
    }
    checks["ufp4_int4_bit_identical"] = {{"identical", identical && compared > 0}, {"seeds_compared", compared}};
  }
  out["checks"] = checks;
  return out;
}

std::string summary_markdown(const nlohmann::ordered_json& s) {
  std::string md;
  md += fmt::format("Loss gap to BF16: {} (N = {}); mean ± sample std over seeds [min, max].\n\n",
                    s["metric"]["formula"].get<std::string>(), s["metric"]["last_n"].get<int>());
  md += "| recipe | gap (%) | final train loss | final val loss | step time vs bf16 | seeds |\n";
  md += "|---|---|---|---|---|---|\n";
  for (const auto& r : s["recipes"]) {
    const auto& g = r["gap"];
    md += fmt::format("| {} | {:.3f} ± {:.3f} [{:.3f}, {:.3f}] | {:.4f} ± {:.4f} | {:.4f} ± {:.4f} | {:.2f}x | {} |\n",
                      r["name"].get<std::string>(), 100 * g["mean"].get<double>(), 100 * g["std"].get<double>(),
                      100 * g["min"].get<double>(), 100 * g["max"].get<double>(),
                      r["final_loss"]["mean"].get<double>(), r["final_loss"]["std"].get<double>(),
                      r["final_val_loss"]["mean"].get<double>(), r["final_val_loss"]["std"].get<double>(),
                      r["step_time_vs_bf16"].get<double>(), g["n"].get<size_t>());
  }
  if (s.contains("checks") && s["checks"].contains("ufp4_int4_bit_identical")) {
    const auto& c = s["checks"]["ufp4_int4_bit_identical"];
    md += fmt::format("\nufp4 and ufp4-int4 loss curves bit-identical: **{}** ({} seeds compared)\n",
                      c["identical"].get<bool>() ? "yes" : "NO", c["seeds_compared"].get<size_t>());
  }
  md += "\nRecipes:\n\n";
  for (const auto& r : s["recipes"]) {
    md += fmt::format("- `{}`: {}\n", r["name"].get<std::string>(), r["description"].get<std::string>());
  }
  return md;
}

}  // namespace nibble::train
