// The loss-gap metric, spreads and the sweep summary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nibble/train/summary.h"

namespace nibble::train {
namespace {

TEST(Summary, RelativeGapAveragesTheLastSteps) {
  const std::vector<float> base = {4.0f, 2.0f, 2.0f, 4.0f};
  const std::vector<float> fp4 = {9.0f, 2.5f, 1.5f, 5.0f};
  // last 3: |2.5-2|/2 = 0.25, |1.5-2|/2 = 0.25, |5-4|/4 = 0.25
  EXPECT_DOUBLE_EQ(relative_gap(fp4, base, 3), 0.25);
  EXPECT_DOUBLE_EQ(relative_gap(fp4, base, 1), 0.25);
  EXPECT_DOUBLE_EQ(relative_gap(fp4, base, 4), (1.25 + 0.75) / 4);
  EXPECT_DOUBLE_EQ(relative_gap(base, base, 4), 0.0);
  EXPECT_THROW(relative_gap(fp4, base, 0), std::invalid_argument);
  EXPECT_THROW(relative_gap(fp4, base, 5), std::invalid_argument);
  EXPECT_THROW(relative_gap({1.0f}, base, 1), std::invalid_argument);
  EXPECT_THROW(relative_gap({1.0f}, {0.0f}, 1), std::invalid_argument);
}

TEST(Summary, SignedGapKeepsTheSign) {
  const std::vector<float> base = {4.0f, 2.0f, 2.0f, 4.0f};
  const std::vector<float> fp4 = {9.0f, 2.5f, 1.5f, 5.0f};
  // last 3: +0.25, -0.25, +0.25
  EXPECT_DOUBLE_EQ(signed_relative_gap(fp4, base, 3), 0.25 / 3);
  EXPECT_DOUBLE_EQ(signed_relative_gap(fp4, base, 2), 0.0);
  EXPECT_DOUBLE_EQ(signed_relative_gap(base, fp4, 1), (4.0 - 5.0) / 5.0);
  EXPECT_THROW(signed_relative_gap(fp4, base, 0), std::invalid_argument);
  EXPECT_THROW(signed_relative_gap({1.0f}, base, 1), std::invalid_argument);
}

TEST(Summary, SpreadMedianAndProducts) {
  const Spread s = spread({1.0, 2.0, 3.0, 6.0});
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(14.0 / 3.0));
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 6.0);
  EXPECT_EQ(spread({5.0}).std, 0.0);
  EXPECT_EQ(spread({}).n, 0u);
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 2.0, 3.0}), 2.5);
}

TEST(Summary, BitIdenticalComparesBits) {
  EXPECT_TRUE(bit_identical({1.0f, 2.0f}, {1.0f, 2.0f}));
  EXPECT_FALSE(bit_identical({1.0f, 2.0f}, {1.0f, std::nextafter(2.0f, 3.0f)}));
  EXPECT_FALSE(bit_identical({0.0f}, {-0.0f}));
  EXPECT_FALSE(bit_identical({1.0f}, {1.0f, 1.0f}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(bit_identical({nan}, {nan}));
}

RunRecord run(const std::string& recipe, uint64_t seed, std::vector<float> loss, double ms) {
  RunRecord r;
  r.recipe = recipe;
  r.description = recipe + " recipe";
  r.seed = seed;
  r.dir = "runs/" + recipe + "-s" + std::to_string(seed);
  r.loss = std::move(loss);
  r.step_ms = std::vector<double>(r.loss.size(), ms);
  r.final_val_loss = r.loss.back() + 0.1;
  return r;
}

TEST(Summary, ShortRunsKeepTheirStepTimes) {
  SweepMeta meta;
  meta.last_n = 1;
  meta.warmup_steps_excluded = 10;  // longer than the runs: every step counts
  const auto s = summarize({run("bf16", 0, {3.0f, 2.0f}, 10), run("e2m1", 0, {3.0f, 2.5f}, 25)}, meta);
  EXPECT_DOUBLE_EQ(s["recipes"][1]["step_time_vs_bf16"].get<double>(), 2.5);
}

TEST(Summary, SummarizeComputesGapsRatiosAndTheInt4Check) {
  SweepMeta meta;
  meta.last_n = 2;
  meta.warmup_steps_excluded = 0;
  meta.device = "test";
  std::vector<RunRecord> runs = {
      run("bf16", 0, {3.0f, 2.0f, 2.0f}, 10), run("bf16", 1, {3.0f, 4.0f, 4.0f}, 20),
      run("ufp4", 0, {3.0f, 2.2f, 2.2f}, 30), run("ufp4", 1, {3.0f, 4.0f, 4.8f}, 60),
      run("ufp4-int4", 0, {3.0f, 2.2f, 2.2f}, 30), run("ufp4-int4", 1, {3.0f, 4.0f, 4.8f}, 60),
  };
  auto s = summarize(runs, meta);
  EXPECT_EQ(s["schema"], "nibble-train-summary/1");
  ASSERT_EQ(s["recipes"].size(), 3u);
  EXPECT_EQ(s["recipes"][0]["name"], "bf16");
  EXPECT_DOUBLE_EQ(s["recipes"][0]["gap"]["mean"].get<double>(), 0.0);
  const auto& u = s["recipes"][1];
  EXPECT_EQ(u["name"], "ufp4");
  // seed 0: 0.1 in both of the last 2 steps; seed 1: (0 + 0.2) / 2.
  EXPECT_NEAR(u["runs"][0]["gap"].get<double>(), 0.1, 1e-6);
  EXPECT_NEAR(u["runs"][1]["gap"].get<double>(), 0.1, 1e-6);
  EXPECT_NEAR(u["gap"]["mean"].get<double>(), 0.1, 1e-6);
  EXPECT_DOUBLE_EQ(u["step_time_vs_bf16"].get<double>(), 3.0);
  EXPECT_EQ(u["runs"][0]["loss_csv"], "runs/ufp4-s0/loss.csv");
  EXPECT_TRUE(s["checks"]["ufp4_int4_bit_identical"]["identical"].get<bool>());
  EXPECT_EQ(s["checks"]["ufp4_int4_bit_identical"]["seeds_compared"], 2);
  const std::string md = summary_markdown(s);
  EXPECT_NE(md.find("| ufp4 | 10.000 ± 0.000"), std::string::npos) << md;
  EXPECT_NE(md.find("bit-identical: **yes**"), std::string::npos) << md;

  runs[5].loss[2] = std::nextafter(4.8f, 5.0f);
  s = summarize(runs, meta);
  EXPECT_FALSE(s["checks"]["ufp4_int4_bit_identical"]["identical"].get<bool>());
  EXPECT_NE(summary_markdown(s).find("**NO**"), std::string::npos);

  runs.erase(runs.begin() + 1);  // seed 1 loses its bf16 baseline
  EXPECT_THROW(summarize(runs, meta), std::invalid_argument);
}

}  // namespace
}  // namespace nibble::train
