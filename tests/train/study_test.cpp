// The training study without training: its definition file (the shapes the
// issue asks for, checked with the trainer's own parameter count), the file
// reader's refusals, the statistics against published values, and the summary
// of synthetic run directories written the way the trainer writes them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include "nibble/published.h"
#include "nibble/train/study.h"
#include "nibble/train/study_stats.h"
#include "nibble/train/sweep.h"
#include "study_fixture.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---- The study file ----

TEST(StudyFile, ValidatesAndHasTheIssuesSizes) {
  const Study s = load_study(NIBBLE_STUDY_FILE);
  ASSERT_EQ(s.sizes.size(), 3u);
  // name, layers, d_model, heads, batch, steps, quantized-linear parameters, tokens-per-parameter floor, token floor
  struct Want {
    const char* name;
    int layers, d_model, heads, batch;
    int64_t steps, parameters;
    double min_tokens_per_parameter;
    int64_t min_tokens;
  };
  const Want want[] = {{"s5m", 6, 256, 4, 64, 6200, 4718592, 20, 100000000},
                       {"s15m", 8, 384, 6, 128, 8700, 14155776, 20, 0},
                       {"s40m", 12, 512, 8, 128, 11600, 37748736, 10, 0}};
  for (size_t i = 0; i < 3; ++i) {
    const StudySize& z = s.sizes[i];
    SCOPED_TRACE(z.name);
    EXPECT_EQ(z.name, want[i].name);
    EXPECT_EQ(z.model.layers, want[i].layers);
    EXPECT_EQ(z.model.d_model, want[i].d_model);
    EXPECT_EQ(z.model.heads, want[i].heads);
    EXPECT_EQ(z.model.ctx, 256);
    EXPECT_EQ(z.batch, want[i].batch);
    EXPECT_EQ(z.steps, want[i].steps);
    EXPECT_EQ(z.parameters(), want[i].parameters);  // the trainer's model, counted by train_config.h
    // The study's floors (sizes, tokens per parameter), and the file's own claims no weaker than them.
    EXPECT_GE(z.tokens_per_parameter(), want[i].min_tokens_per_parameter);
    EXPECT_GE(z.claimed_tokens_per_parameter, want[i].min_tokens_per_parameter);
    EXPECT_GE(z.tokens(), want[i].min_tokens);
    EXPECT_GE(z.claimed_tokens, want[i].min_tokens);
    EXPECT_LT(z.warmup, z.steps / 10);
  }
  EXPECT_EQ(s.sizes[0].tokens(), 101580800);
  EXPECT_EQ(s.sizes[0].batch * s.sizes[0].model.ctx, 16384);
  EXPECT_GE(s.eval_bytes, 1000000);
  EXPECT_LE(s.min_lr_ratio, 0.1);
  EXPECT_EQ(s.arms, (std::vector<std::string>{"bf16", "e2m1", "ufp4"}));
  EXPECT_GE(static_cast<int>(s.seeds.size()), 5);
  EXPECT_EQ(s.lr_grid.size(), 4u);
  EXPECT_EQ(s.pairs.front().a, "ufp4");
  EXPECT_EQ(s.pairs.front().b, "e2m1");

  // The ablations at the smallest size, spelled as parse_recipe_spec reads them.
  EXPECT_EQ(size_recipes(s, s.sizes[0]),
            (std::vector<std::string>{"bf16", "e2m1", "ufp4", "e2m1+rht=all", "ufp4+rht=wgrad", "nvfp4"}));
  EXPECT_EQ(size_recipes(s, s.sizes[1]), s.arms);
  const Recipe e2m1_all = parse_recipe_spec("e2m1+rht=all");
  EXPECT_EQ(e2m1_all.format, Format::kE2M1);
  EXPECT_EQ(e2m1_all.rht, (std::array<bool, 3>{true, true, true}));
  const Recipe ufp4_wgrad = parse_recipe_spec("ufp4+rht=wgrad");
  EXPECT_EQ(ufp4_wgrad.format, Format::kE1M2);
  EXPECT_EQ(ufp4_wgrad.rht, (std::array<bool, 3>{false, false, true}));
  EXPECT_EQ(ufp4_wgrad.rht, preset("e2m1").rht);  // the baseline's RHT scope
}

TEST(StudyFile, ParameterCountsAreTheTrainersModel) {
  // The recorded 6.4 M sweep's run.json reports 6,464,000 parameters for the default model.
  EXPECT_EQ(model_parameters(ModelConfig{}), 6464000);
  EXPECT_EQ(quantized_linear_parameters(ModelConfig{}), 12 * 8 * 256 * 256);
  // The four linears per block that the count and the workload simulator read: [out, in] of each.
  ModelConfig m;
  m.d_model = 96;
  m.mlp_mult = 3;
  const auto lin = block_linears(m);
  const char* names[4] = {"qkv", "proj", "fc1", "fc2"};
  const int64_t shapes[4][2] = {{288, 96}, {96, 96}, {288, 96}, {96, 288}};
  int64_t per_block = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_STREQ(lin[i].name, names[i]);
    EXPECT_EQ(lin[i].out, shapes[i][0]);
    EXPECT_EQ(lin[i].in, shapes[i][1]);
    per_block += lin[i].out * lin[i].in;
  }
  EXPECT_EQ(quantized_linear_parameters(m), m.layers * per_block);
}

TEST(StudyFile, PlansEveryRunOfEveryPhase) {
  const Study s = load_study(NIBBLE_STUDY_FILE);
  const auto lr = plan_lr_phase(s, s.sizes[0]);
  ASSERT_EQ(lr.size(), s.lr_grid.size() * s.lr_seeds.size());
  EXPECT_EQ(lr[0].dir, "s5m/lr/bf16-lr0.0005-s0");
  EXPECT_EQ(lr[0].config.lr, 0.0005);
  EXPECT_EQ(lr[0].config.steps, 6200);
  EXPECT_EQ(lr[0].config.eval_bytes, s.eval_bytes);
  const auto main = plan_main_phase(s, s.sizes[0], 0.002);
  ASSERT_EQ(main.size(), 6 * s.seeds.size());
  EXPECT_EQ(main[0].dir, "s5m/main/bf16-s0");
  EXPECT_EQ(main[3].dir, "s5m/main/e2m1+rht=all-s0");
  EXPECT_EQ(main[6].dir, "s5m/main/bf16-s1");  // seed-major: whole pairs first
  EXPECT_EQ(plan_main_phase(s, s.sizes[0], 0.002, {"ufp4"}, {3}).size(), 1u);
  EXPECT_THROW(plan_main_phase(s, s.sizes[1], 0.002, {"nvfp4"}), StudyError);  // an ablation of s5m only
  EXPECT_THROW(plan_main_phase(s, s.sizes[0], 0.002, {}, {99}), StudyError);
  EXPECT_THROW(find_size(s, "s7m"), StudyError);
  EXPECT_THROW(parse_phase("warm"), StudyError);
}

// The 40 M size runs 3 of the study's 5 seeds, with the reason in the file; a size may
// run fewer than statistics.min_seeds only so, and only of the study's seeds.
TEST(StudyFile, ASizeRunsFewerSeedsOnlyWithItsReason) {
  const Study s = load_study(NIBBLE_STUDY_FILE);
  const StudySize& s40m = find_size(s, "s40m");
  EXPECT_EQ(s40m.seeds, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_TRUE(s40m.seeds_reduced());
  EXPECT_FALSE(s40m.seeds_reason.empty());
  for (const char* name : {"s5m", "s15m"}) {
    EXPECT_EQ(find_size(s, name).seeds, s.seeds) << name;
    EXPECT_FALSE(find_size(s, name).seeds_reduced()) << name;
  }
  const auto main = plan_main_phase(s, s40m, 0.002);
  ASSERT_EQ(main.size(), 3u * 3u);
  EXPECT_EQ(main.back().dir, "s40m/main/ufp4-s2");
  try {
    plan_main_phase(s, s40m, 0.002, {}, {3});
    ADD_FAILURE() << "seed 3 planned at s40m";
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("seed '3' is not in size s40m (it has: 0, 1, 2)"), std::string::npos) << e.what();
  }

  const nlohmann::ordered_json good = nlohmann::ordered_json::parse(file_text(NIBBLE_STUDY_FILE));
  struct Row {
    const char* size;
    nlohmann::ordered_json seeds, reason;  // null: leave the key out
    const char* message;                   // nullptr: accepted
  };
  const std::vector<Row> rows = {
      {"s40m", {0, 1, 2}, nullptr, "sizes.s40m.seeds: lists 3 seeds, fewer than statistics.min_seeds (5), with no "
                                   "seeds_reason"},
      {"s40m", {0, 1, 9}, "why", "sizes.s40m.seeds: names seed 9, which is not one of the study's seeds"},
      {"s40m", {0, 0, 1}, "why", "sizes.s40m.seeds: names seed 0 twice"},
      {"s40m", nlohmann::ordered_json::array(), "why", "sizes.s40m.seeds: must be a non-empty array"},
      {"s40m", {0, 1, 2}, "", "sizes.s40m.seeds_reason: must be a non-empty string"},
      {"s5m", nullptr, "why", "sizes.s5m.seeds_reason: is only for a size of fewer than statistics.min_seeds (5)"},
      {"s5m", {4, 3, 2, 1, 0}, nullptr, nullptr},
      {"s40m", {1}, "one seed", nullptr},
  };
  int checked = 0;
  for (const Row& row : rows) {
    nlohmann::ordered_json j = good;
    auto& z = j["sizes"][row.size];
    z.erase("seeds");
    z.erase("seeds_reason");
    if (!row.seeds.is_null()) z["seeds"] = row.seeds;
    if (!row.reason.is_null()) z["seeds_reason"] = row.reason;
    SCOPED_TRACE(z.dump());
    if (row.message == nullptr) {
      const Study t = parse_study(j.dump(), "reduced.json");
      EXPECT_EQ(find_size(t, row.size).seeds, row.seeds.get<std::vector<uint64_t>>());
      ++checked;
      continue;
    }
    try {
      parse_study(j.dump(), "bad.json");
      ADD_FAILURE() << "accepted";
    } catch (const StudyError& e) {
      EXPECT_NE(std::string(e.what()).find(row.message), std::string::npos) << e.what();
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(rows.size()));
}

// One bad study file per row: a replacement in the shipped file, and the message.
TEST(StudyFile, BadFilesAreRefusedNamingTheKey) {
  const std::string good = file_text(NIBBLE_STUDY_FILE);
  ASSERT_FALSE(good.empty());
  EXPECT_NO_THROW(parse_study(good, "good.json"));
  struct Row {
    std::string from, to, message;
  };
  const std::vector<Row> rows = {
      {"\"min_seeds\": 5", "\"min_seeds\": 5, \"colour\": 1", "statistics.colour: unknown key"},
      {"\"grad_clip\": 1.0", "\"grad_clip\": 1.0, \"grad_clip\": 2.0", "grad_clip: is given twice"},
      {"\"warmup\": 200,", "", "sizes.s5m.warmup: is missing"},
      {"\"batch\": 64", "\"batch\": \"64\"", "sizes.s5m.batch: must be an integer"},
      {"\"steps\": 6200", "\"steps\": 620", "sizes.s5m.claims.tokens_per_parameter: claims at least 20"},
      {"\"tokens\": 100000000", "\"tokens\": 200000000", "sizes.s5m.claims.tokens: claims at least 200000000"},
      {"\"heads\": 6", "\"heads\": 5", "sizes.s15m: --heads (5) must divide --d-model (384)"},
      {"\"ufp4+rht=wgrad\", \"sizes\"", "\"ufp4+rht=sometimes\", \"sizes\"", "unknown --rht item 'sometimes'"},
      {"{\"recipe\": \"nvfp4\", \"sizes\": [\"s5m\"]}", "{\"recipe\": \"nvfp4\", \"sizes\": [\"s1g\"]}",
       "names 's1g', which is not a size"},
      {"{\"a\": \"nvfp4\"", "{\"a\": \"mxfp4\"", "'mxfp4' is not a quantized arm or ablation"},
      {"\"seeds\": [0, 1, 2, 3, 4]", "\"seeds\": [0, 1, 2, 3]", "fewer than statistics.min_seeds (5)"},
      {"\"seeds\": [0, 1, 2, 3, 4]", "\"seeds\": [0, 1, 2, 3, 3]", "names seed 3 twice"},
      {"\"eval_bytes\": 1048576", "\"eval_bytes\": 500000", "endpoint.eval_bytes: must be in 1000000.."},
      {"\"min_lr_ratio\": 0.1", "\"min_lr_ratio\": 0.2", "schedule.min_lr_ratio: must be in [0, 0.1]"},
      {"\"lrs\": [0.0005,", "\"lrs\": [-0.0005,", "lr_sweep.lrs[0]: must be in (0, 1]"},
      {"\"arms\": [\"bf16\", \"e2m1\", \"ufp4\"]", "\"arms\": [\"e2m1\", \"bf16\", \"ufp4\"]", "arms: must start with"},
      {"\"schema\": \"nibble-train-study/1\"", "\"schema\": \"nibble-train-study/9\"", "schema: must be"},
      {"\"optimizer\": \"adamw\"", "\"optimizer\": \"sgd\"", "schedule.optimizer: must be \"adamw\""},
      {"\"batch\": 64, \"steps\": 6200", "\"batch\": 1048576, \"steps\": 1099511627776",
       "sizes.s5m.steps: steps x batch x ctx is more tokens"},
      {"{\n  \"schema\"", "[\n  \"schema\"", "not valid JSON"},
  };
  int refused = 0;
  for (const Row& row : rows) {
    std::string text = good;
    const size_t at = text.find(row.from);
    ASSERT_NE(at, std::string::npos) << row.from;
    text.replace(at, row.from.size(), row.to);
    try {
      parse_study(text, "bad.json");
      ADD_FAILURE() << "accepted: " << row.to;
    } catch (const StudyError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(row.message), std::string::npos)
          << e.what() << "\nexpected: " << row.message;
      ++refused;
    }
  }
  EXPECT_EQ(refused, static_cast<int>(rows.size()));
  EXPECT_THROW(load_study("/nonexistent/study.json"), StudyError);
  EXPECT_THROW(parse_study("[[[[" + std::string(100, '['), "deep.json"), StudyError);
}

// ---- Statistics ----

TEST(StudyStats, StudentTQuantilesMatchThePublishedTable) {
  // Two-sided 95 % critical values (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
  const std::map<int, double> table = {{1, 12.706}, {2, 4.303}, {4, 2.776}, {9, 2.262}, {29, 2.045}, {100, 1.984}};
  for (const auto& [df, t] : table) EXPECT_NEAR(t_quantile(0.95, df), t, 5e-4) << "df " << df;
  EXPECT_NEAR(t_quantile(0.99, 4), 4.604, 5e-4);
  EXPECT_NEAR(t_quantile(0.95, 1e7), 1.95996, 1e-4);  // the normal quantile
  EXPECT_THROW(t_quantile(1.5, 4), std::invalid_argument);
}

// Student's sleep data (Cushny and Peebles, 1905): extra hours of sleep under two drugs,
// the same ten patients; the paired differences. R: t.test(extra ~ group, data = sleep,
// paired = TRUE) gives t = -4.0621, df = 9, p = 0.002833, 95 % CI [-2.4599, -0.7001].
const std::vector<double> kSleepDifferences = {1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4};

TEST(StudyStats, PairedTTestOnStudentsSleepData) {
  const TTest t = paired_t_test(kSleepDifferences);
  EXPECT_NEAR(t.t, 4.0621, 1e-4);
  EXPECT_EQ(t.df, 9);
  EXPECT_NEAR(t.p, 0.002833, 1e-6);
  const MeanInterval m = t_interval(kSleepDifferences, 0.95);
  EXPECT_NEAR(m.mean, 1.58, 1e-12);
  EXPECT_NEAR(m.lo, 0.7001142, 1e-6);
  EXPECT_NEAR(m.hi, 2.4598858, 1e-6);
  EXPECT_EQ(verdict(m, "drug 1", "drug 2"), "drug 2 better");
  EXPECT_EQ(paired_t_test({0.5, 0.5, 0.5}).p, 0);  // no spread: exactly representable values
  EXPECT_EQ(paired_t_test({0.0, 0.0}).p, 1);
  EXPECT_TRUE(std::isnan(t_interval({1.0}, 0.95).half_width));
}

TEST(StudyStats, SeededBootstrapIsReproducibleAndCoversTheMean) {
  const uint64_t seed = 20261128;
  std::printf("bootstrap seed %llu, 10000 resamples\n", static_cast<unsigned long long>(seed));
  const BootstrapInterval a = bootstrap_interval(kSleepDifferences, 0.95, 10000, seed);
  const BootstrapInterval b = bootstrap_interval(kSleepDifferences, 0.95, 10000, seed);
  const BootstrapInterval c = bootstrap_interval(kSleepDifferences, 0.95, 10000, seed + 1);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_TRUE(a.lo != c.lo || a.hi != c.hi);
  EXPECT_EQ(a.seed, seed);
  EXPECT_EQ(a.resamples, 10000);
  const MeanInterval t = t_interval(kSleepDifferences, 0.95);
  EXPECT_LT(a.lo, t.mean);
  EXPECT_GT(a.hi, t.mean);
  // The percentile interval of a mean of 10 is about as wide as the t interval (narrower: no t tails).
  EXPECT_GT(a.hi - a.lo, 0.5 * (t.hi - t.lo));
  EXPECT_LT(a.hi - a.lo, 1.2 * (t.hi - t.lo));
  // Every resample of a constant sample has its mean.
  const BootstrapInterval k = bootstrap_interval({0.25, 0.25, 0.25}, 0.95, 100, 1);
  EXPECT_EQ(k.lo, 0.25);
  EXPECT_EQ(k.hi, 0.25);
}

TEST(StudyStats, SeedsNeededForATargetHalfWidth) {
  // t_{0.975, n-1} * sd / sqrt(n) <= target: 2.571/sqrt(6) = 1.05 > 1, 2.447/sqrt(7) = 0.925 <= 1.
  EXPECT_EQ(seeds_needed(0.01, 0.01, 0.95, 5), 7);
  EXPECT_EQ(seeds_needed(0.0001, 0.01, 0.95, 5), 5);  // never fewer than the minimum
  EXPECT_EQ(seeds_needed(1.0, 1e-6, 0.95, 5, 100), 101);
}

TEST(StudyStats, VerdictsAndCorrelation) {
  MeanInterval d;
  d.lo = -0.003;
  d.hi = 0.001;
  EXPECT_EQ(verdict(d, "ufp4", "e2m1"), "no difference larger than 0.300 pp");
  d.hi = -0.001;
  EXPECT_EQ(verdict(d, "ufp4", "e2m1"), "ufp4 better");
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {2, 4, 6, 8}), 1.0, 1e-12);
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {8, 6, 4, 2}), -1.0, 1e-12);
  EXPECT_TRUE(std::isnan(pearson({1, 2}, {1, 2})));
}

TEST(StudyStats, PublishedEffectIsTheSmallestReduction) {
  EXPECT_DOUBLE_EQ(published::kUfp4TrainingEffect, -0.20);
  EXPECT_NEAR(published::kUfp4Training[0].relative_change, -0.2305, 1e-4);  // 0.9673 % vs 1.2570 %
}

// ---- The summary of synthetic runs ----

class StudySummary : public ::testing::Test {
 protected:
  void SetUp() override {
    study_ = load_study(NIBBLE_STUDY_FILE);
    dir_ = fs::temp_directory_path() / ("nibble_study_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The LR sweep of s5m: 0.002 is best, 0.004 diverged.
  void write_lr_sweep() {
    const std::map<double, double> val = {{0.0005, 1.40}, {0.001, 1.35}, {0.002, 1.30}};
    for (const auto& run : plan_lr_phase(study_, study_.sizes[0])) {
      if (run.lr == 0.004) {
        test::write_diverged_run(dir_, run, 4321);
      } else {
        test::write_finished_run(dir_, run, val.at(run.lr), val.at(run.lr));
      }
    }
  }

  Study study_;
  fs::path dir_;
};

const std::vector<double> kE2m1Gap = {0.010, 0.012, 0.011, 0.009, 0.013};
const std::vector<double> kUfp4MinusE2m1 = {-0.002, -0.001, -0.0015, -0.0025, -0.002};
const std::vector<double> kRhtAllMinusE2m1 = {0.001, -0.001, 0.002, -0.002, 0.0005};

TEST_F(StudySummary, TheMainPhaseTakesItsLrFromTheCompletedSweep) {
  EXPECT_THROW(chosen_lr(study_, study_.sizes[0], dir_), StudyError);
  const auto runs = plan_lr_phase(study_, study_.sizes[0]);
  test::write_finished_run(dir_, runs[0], 1.4, 1.4);
  try {
    chosen_lr(study_, study_.sizes[0], dir_);
    ADD_FAILURE() << "an incomplete sweep chose an LR";
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("3 of 4 runs missing"), std::string::npos) << e.what();
  }
  write_lr_sweep();
  EXPECT_EQ(chosen_lr(study_, study_.sizes[0], dir_), 0.002);
  EXPECT_EQ(study_run_status(dir_, runs[3]).state, StudyRunState::kDiverged);
  EXPECT_EQ(study_run_status(dir_, runs[3]).diverged_at, 4321);
  EXPECT_THROW(chosen_lr(study_, study_.sizes[1], dir_), StudyError);  // s15m: nothing yet

  // A finished run whose final validation loss is not finite (run.json writes null) diverged at the end.
  test::write_finished_run(dir_, runs[2], 1.3, 1.3);
  const fs::path rj = dir_ / runs[2].dir / "run.json";
  auto j = nlohmann::json::parse(file_text(rj.string()));
  j["final_val_loss"] = nullptr;
  test::write_file(rj, j.dump());
  const StudyRunStatus st = study_run_status(dir_, runs[2]);
  EXPECT_EQ(st.state, StudyRunState::kDiverged);
  EXPECT_EQ(st.diverged_at, 6200);
  EXPECT_EQ(chosen_lr(study_, study_.sizes[0], dir_), 0.001);  // 0.002 no longer qualifies
}

TEST_F(StudySummary, GapsDifferencesAndVerdictsOfSyntheticRuns) {
  write_lr_sweep();
  const double lr = chosen_lr(study_, study_.sizes[0], dir_);
  int finished = 0;
  for (const auto& run : plan_main_phase(study_, study_.sizes[0], lr)) {
    const size_t s = run.seeds.init;
    const double base = 1.50 + 0.01 * static_cast<double>(s);
    double g = 0;
    double alpha = 0.998;
    if (run.spec == "e2m1") {
      g = kE2m1Gap[s];
      alpha = 0.995;
    } else if (run.spec == "ufp4") {
      g = kE2m1Gap[s] + kUfp4MinusE2m1[s];
      alpha = 1.0005;
    } else if (run.spec == "e2m1+rht=all") {
      g = kE2m1Gap[s] + kRhtAllMinusE2m1[s];
    } else if (run.spec == "ufp4+rht=wgrad") {
      g = kE2m1Gap[s] - 0.001;
    } else if (run.spec == "nvfp4") {
      if (s == 3) {
        test::write_diverged_run(dir_, run, 1234);
        continue;
      }
      if (s == 4) {
        test::write_started_run(dir_, run);
        continue;
      }
      g = 0.02;
    }
    test::write_finished_run(dir_, run, base * (1 + g), base * (1 + g / 2), alpha);
    ++finished;
  }
  const auto sum = summarize_study(study_, dir_);
  const auto& z = sum["sizes"][0];
  ASSERT_EQ(z["name"], "s5m");
  EXPECT_EQ(z["lr_sweep"]["chosen_lr"].get<double>(), 0.002);
  EXPECT_EQ(z["main"]["planned"].get<int>(), 30);
  EXPECT_EQ(z["main"]["done"].get<int>(), 29);  // nvfp4 s4 was started, not finished
  EXPECT_FALSE(z["complete"].get<bool>());
  EXPECT_EQ(z["data"], test::kFakeData);

  // Every started run is listed, the diverged one with its step.
  int listed = 0, diverged = 0, started = 0;
  for (const auto& r : z["main"]["runs"]) {
    ++listed;
    if (r["state"] == "diverged") {
      ++diverged;
      EXPECT_EQ(r["dir"], "s5m/main/nvfp4-s3");
      EXPECT_EQ(r["diverged_at_step"].get<int64_t>(), 1234);
    }
    started += r["state"] == "started, not finished";
  }
  EXPECT_EQ(listed, finished + 2);
  EXPECT_EQ(diverged, 1);
  EXPECT_EQ(started, 1);
  EXPECT_EQ(sum["runs"]["planned"].get<int>(), 4 + 30 + (4 + 15) + (4 + 9));  // s40m: 3 seeds
  EXPECT_EQ(sum["runs"]["outside_plan"].get<int>(), 0);
  EXPECT_EQ(sum["runs"]["diverged"].get<int>(), 2);  // the LR run at 0.004 and nvfp4 s3

  // The gaps per arm, paired with bf16 by seed.
  std::map<std::string, nlohmann::ordered_json> arms;
  for (const auto& a : z["arms"]) arms[a["recipe"].get<std::string>()] = a;
  ASSERT_EQ(arms.size(), 6u);
  for (size_t s = 0; s < 5; ++s) {
    EXPECT_NEAR(arms["e2m1"]["gap"]["per_seed"][std::to_string(s)].get<double>(), kE2m1Gap[s], 1e-12);
  }
  EXPECT_NEAR(arms["e2m1"]["gap"]["mean"].get<double>(), 0.011, 1e-12);
  EXPECT_NEAR(arms["e2m1"]["gap_bf16_forward"]["mean"].get<double>(), 0.0055, 1e-12);
  EXPECT_EQ(arms["nvfp4"]["gap"]["n"].get<size_t>(), 3u);
  EXPECT_EQ(arms["nvfp4"]["runs"]["diverged"].get<int>(), 1);
  EXPECT_EQ(arms["nvfp4"]["runs"]["started"].get<int>(), 5);
  EXPECT_NEAR(arms["e2m1"]["attenuation"]["fprop"]["cum_alpha_last_layer"].get<double>(), std::pow(0.995, 24), 1e-7);
  EXPECT_NEAR(arms["ufp4"]["attenuation"]["wgrad"]["mean_alpha_per_layer"].get<double>(), 1.0005, 1e-9);
  const auto& depth = arms["e2m1"]["attenuation"]["dgrad"]["cum_alpha_by_depth"];
  ASSERT_EQ(depth.size(), 24u);  // 6 blocks x 4 linears, in depth order
  EXPECT_NEAR(depth[0].get<double>(), 0.995, 1e-7);
  EXPECT_NEAR(depth[11].get<double>(), std::pow(0.995, 12), 1e-7);
  EXPECT_EQ(z["attenuation_vs_gap"]["runs"].get<size_t>(), 23u);
  EXPECT_LT(z["attenuation_vs_gap"]["r"].get<double>(), 0);  // more shrinkage with the larger gaps here

  // The paper's question: d = g_ufp4 - g_e2m1, mean -0.0018, sd 5.70088e-4 over 5 seeds.
  const auto& p = z["pairs"][0];
  ASSERT_EQ(p["a"], "ufp4");
  ASSERT_EQ(p["b"], "e2m1");
  EXPECT_TRUE(p["primary"].get<bool>());
  EXPECT_EQ(p["d"]["n"].get<size_t>(), 5u);
  EXPECT_NEAR(p["d"]["mean"].get<double>(), -0.0018, 1e-12);
  EXPECT_NEAR(p["d"]["sd"].get<double>(), std::sqrt(130e-8 / 4), 1e-12);
  EXPECT_NEAR(p["d"]["ci_half_width"].get<double>(), 2.776 * std::sqrt(130e-8 / 4) / std::sqrt(5.0), 1e-6);
  EXPECT_EQ(p["verdict"], "ufp4 better");
  EXPECT_NEAR(p["paper_d"].get<double>(), -0.2 * 0.011, 1e-12);
  EXPECT_TRUE(p["paper_within_ci"].get<bool>());
  EXPECT_EQ(p["bootstrap"]["seed"].get<uint64_t>(), study_.bootstrap_seed);
  EXPECT_EQ(p["bootstrap"]["resamples"].get<int>(), study_.bootstrap_resamples);
  EXPECT_LT(p["bootstrap"]["ci_lo"].get<double>(), -0.0018);
  EXPECT_GT(p["bootstrap"]["ci_hi"].get<double>(), -0.0018);
  EXPECT_LT(p["t_test"]["p"].get<double>(), 0.01);
  EXPECT_NEAR(p["ci_target_half_width"].get<double>(), 0.25 * 0.011, 1e-12);  // wider than 0.1 pp
  EXPECT_EQ(p["seeds_needed"].get<int>(), 5);
  EXPECT_TRUE(p["ci_target_met"].get<bool>());

  // The RHT scope on E2M1: the interval spans zero.
  const auto& rht = z["pairs"][3];
  ASSERT_EQ(rht["a"], "e2m1+rht=all");
  const MeanInterval want = t_interval(kRhtAllMinusE2m1, 0.95);
  EXPECT_NEAR(rht["d"]["mean"].get<double>(), want.mean, 1e-12);
  EXPECT_EQ(rht["verdict"], verdict(want, "e2m1+rht=all", "e2m1"));
  EXPECT_EQ(rht["verdict"].get<std::string>().rfind("no difference larger than ", 0), 0u) << rht["verdict"];
  // nvfp4 - e2m1 pairs only the seeds where both finished.
  EXPECT_EQ(z["pairs"][5]["d"]["n"].get<size_t>(), 3u);

  // The other sizes have not started: their LR sweeps are incomplete.
  EXPECT_FALSE(sum["sizes"][1]["lr_sweep"]["complete"].get<bool>());
  EXPECT_TRUE(sum["sizes"][1]["pairs"][0]["d"]["mean"].is_null());

  const std::string md = study_markdown(sum);
  EXPECT_NE(md.find("| ufp4 − e2m1 | 5 | -0.180 ± 0.071"), std::string::npos) << md;
  EXPECT_NE(md.find("ufp4 better"), std::string::npos);
  EXPECT_NE(md.find("`s5m/main/nvfp4-s3`: diverged at step 1234"), std::string::npos) << md;
}

// Recorded runs keep their per-step files gzip-compressed (docs/training.md): a
// summary of runs whose diag.csv is diag.csv.gz equals that of the plain files.
TEST_F(StudySummary, GzippedDiagnosticsSummarizeAsThePlainFiles) {
  write_lr_sweep();
  const double lr = chosen_lr(study_, study_.sizes[0], dir_);
  std::vector<fs::path> diags;
  for (const auto& run : plan_main_phase(study_, study_.sizes[0], lr, {"bf16", "e2m1", "ufp4"}, {0, 1})) {
    const size_t s = run.seeds.init;
    const double g = run.spec == "e2m1" ? kE2m1Gap[s] : run.spec == "ufp4" ? kE2m1Gap[s] + kUfp4MinusE2m1[s] : 0.0;
    test::write_finished_run(dir_, run, 1.5 * (1 + g), 1.5 * (1 + g), run.spec == "e2m1" ? 0.995 : 1.0005);
    diags.push_back(dir_ / run.dir / "diag.csv");
  }
  const nlohmann::ordered_json plain = summarize_study(study_, dir_);
  const auto& fprop = plain["sizes"][0]["arms"][1]["attenuation"]["fprop"];
  ASSERT_TRUE(fprop.contains("cum_alpha_last_layer")) << plain["sizes"][0]["arms"][1].dump();
  for (const auto& d : diags) {
    const std::string text = file_text(d.string());
    ASSERT_FALSE(text.empty()) << d;
    fs::path gz = d;
    gz += ".gz";
    gzFile f = gzopen(gz.c_str(), "wb9");
    ASSERT_NE(f, nullptr) << gz;
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
    fs::remove(d);
  }
  EXPECT_EQ(summarize_study(study_, dir_), plain);
  // Neither file: the runs still count, without an attenuation profile.
  for (const auto& d : diags) fs::remove(fs::path(d.string() + ".gz"));
  nlohmann::ordered_json none = summarize_study(study_, dir_);
  EXPECT_EQ(none["sizes"][0]["arms"][1]["gap"], plain["sizes"][0]["arms"][1]["gap"]);
  EXPECT_FALSE(none["sizes"][0]["arms"][1]["attenuation"].contains("fprop"));
}

// With one paired seed there is no interval, so the paper's figure is neither in nor outside one.
TEST_F(StudySummary, OnePairedSeedHasNoIntervalToHoldThePapersFigure) {
  write_lr_sweep();
  const double lr = chosen_lr(study_, study_.sizes[0], dir_);
  int written = 0;
  for (const auto& run : plan_main_phase(study_, study_.sizes[0], lr, {"bf16", "e2m1", "ufp4"}, {0})) {
    const double g = run.spec == "e2m1" ? kE2m1Gap[0] : run.spec == "ufp4" ? kE2m1Gap[0] + kUfp4MinusE2m1[0] : 0.0;
    test::write_finished_run(dir_, run, 1.5 * (1 + g), 1.5 * (1 + g));
    ++written;
  }
  ASSERT_EQ(written, 3);
  const nlohmann::json sum = summarize_study(study_, dir_);
  const auto& p = sum["sizes"][0]["pairs"][0];
  ASSERT_EQ(p["a"], "ufp4");
  ASSERT_EQ(p["d"]["n"].get<size_t>(), 1u);
  EXPECT_TRUE(p.contains("paper_d"));
  EXPECT_FALSE(p.contains("paper_within_ci")) << p.dump();
  const std::string md = study_markdown(sum);
  EXPECT_EQ(md.find("(outside CI)"), std::string::npos) << md;
  EXPECT_EQ(md.find("(in CI)"), std::string::npos) << md;
}

// A size reduced to 3 seeds: its statistics and completeness count those, and a run of
// another of the study's seeds that was started anyway is listed beside them, outside.
TEST_F(StudySummary, AReducedSizeCountsItsSeedsAndListsTheRest) {
  write_lr_sweep();
  const double lr = chosen_lr(study_, study_.sizes[0], dir_);
  const Study full = study_;
  study_.sizes[0].seeds = {0, 1, 2};
  study_.sizes[0].seeds_reason = "a test's reason";
  int written = 0;
  for (const auto& run : plan_main_phase(study_, study_.sizes[0], lr)) {
    const size_t s = run.seeds.init;
    const double g = run.spec == "bf16"   ? 0.0
                     : run.spec == "ufp4" ? kE2m1Gap[s] + kUfp4MinusE2m1[s]
                                          : kE2m1Gap[s];
    test::write_finished_run(dir_, run, 1.5 * (1 + g), 1.5 * (1 + g));
    ++written;
  }
  ASSERT_EQ(written, 6 * 3);
  const auto extra = plan_main_phase(full, full.sizes[0], lr, {"bf16", "e2m1"}, {3});
  test::write_finished_run(dir_, extra[0], 1.25, 1.25);
  test::write_started_run(dir_, extra[1]);

  const auto sum = summarize_study(study_, dir_);
  const auto& z = sum["sizes"][0];
  EXPECT_EQ(z["main"]["planned"].get<int>(), 18);
  EXPECT_EQ(z["main"]["done"].get<int>(), 18);
  EXPECT_TRUE(z["complete"].get<bool>());
  EXPECT_EQ(z["seeds"]["main"].get<std::vector<uint64_t>>(), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(z["seeds"]["study_min"].get<int>(), 5);
  EXPECT_EQ(z["seeds"]["reduced_reason"], "a test's reason");
  EXPECT_TRUE(sum["sizes"][1]["seeds"]["reduced_reason"].is_null());
  for (const auto& a : z["arms"]) EXPECT_EQ(a["runs"]["planned"].get<int>(), 3) << a["recipe"];
  EXPECT_NEAR(z["arms"][0]["final_val_loss"]["mean"].get<double>(), 1.5, 1e-12);  // bf16-s3 is not in it
  const auto& outside = z["main"]["outside_plan"];
  ASSERT_EQ(outside.size(), 2u) << outside.dump();
  EXPECT_EQ(outside[0]["dir"], "s5m/main/bf16-s3");
  EXPECT_EQ(outside[0]["state"], "finished");
  EXPECT_EQ(outside[0]["final_val_loss"].get<double>(), 1.25);
  EXPECT_EQ(outside[1]["state"], "started, not finished");
  EXPECT_EQ(sum["runs"]["outside_plan"].get<int>(), 2);

  const auto& p = z["pairs"][0];
  EXPECT_EQ(p["d"]["n"].get<size_t>(), 3u);
  // The target holds the size to its own 3 seeds: the spread of these d needs no more.
  EXPECT_EQ(p["seeds_needed"].get<int>(), 3);
  EXPECT_TRUE(p["ci_target_met"].get<bool>()) << p.dump();

  const std::string md = study_markdown(sum);
  EXPECT_NE(md.find("Main phase: 18 of 18 runs done."), std::string::npos) << md;
  EXPECT_NE(md.find("Seeds 0, 1, 2: fewer than the study's 5, because a test's reason"), std::string::npos) << md;
  EXPECT_NE(md.find("`s5m/main/bf16-s3`: finished, final validation loss 1.2500"), std::string::npos) << md;
  EXPECT_NE(md.find("Besides them, 2 run(s) of seeds outside"), std::string::npos) << md;
}

TEST_F(StudySummary, ARunOfAnotherConfigurationIsRefused) {
  write_lr_sweep();
  // A main-phase run trained at another LR than the sweep chose.
  const auto stale = plan_main_phase(study_, study_.sizes[0], 0.001, {"bf16"}, {0});
  test::write_finished_run(dir_, stale[0], 1.5, 1.5);
  try {
    summarize_study(study_, dir_);
    ADD_FAILURE() << "a run of another configuration was summarized";
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule.lr differs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nibble::train
