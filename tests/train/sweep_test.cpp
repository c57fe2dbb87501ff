// The torch-free parts of a run's configuration and of the resumable sweep:
// seeds, the learning-rate schedules, the size checks, recipe specs, and which
// runs a sweep directory holds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include <unistd.h>

#include "nibble/train/sweep.h"
#include "nibble/train/train_config.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;

TEST(RunSeeds, SeedSetsAllThreeAndEachFlagReplacesItsOwn) {
  EXPECT_EQ(resolve_seeds(7, {}, {}, {}), (RunSeeds{7, 7, 7}));
  EXPECT_EQ(resolve_seeds(7, 1, {}, {}), (RunSeeds{1, 7, 7}));
  EXPECT_EQ(resolve_seeds(7, {}, 2, {}), (RunSeeds{7, 2, 7}));
  EXPECT_EQ(resolve_seeds(7, {}, {}, 3), (RunSeeds{7, 7, 3}));
  EXPECT_EQ(seeds_tag({4, 4, 4}), "s4");
  EXPECT_EQ(seeds_tag({4, 4, 9}), "i4-d4-q9");
}

TEST(RunSeeds, RankZeroKeepsTheQuantSeedAndOtherRanksDiffer) {
  std::set<uint64_t> seen;
  for (uint64_t q : {0ull, 1ull, 12345ull}) {
    EXPECT_EQ(rank_quant_seed(q, 0), q);
    for (int r = 0; r < 8; ++r) seen.insert(rank_quant_seed(q, r));
  }
  EXPECT_EQ(seen.size(), 3u * 8u);  // every (seed, rank) pair draws its own
}

TrainConfig schedule_config(LrSchedule s) {
  TrainConfig c;
  c.steps = 1000;
  c.warmup = 100;
  c.lr = 1e-3;
  c.min_lr_ratio = 0.1;
  c.schedule = s;
  c.decay_fraction = 0.2;
  return c;
}

TEST(LrSchedule, WarmupThenCosineEndsAtTheFloor) {
  const TrainConfig c = schedule_config(LrSchedule::kCosine);
  EXPECT_DOUBLE_EQ(lr_at(c, 0), 1e-5);
  EXPECT_DOUBLE_EQ(lr_at(c, 99), 1e-3);
  EXPECT_DOUBLE_EQ(lr_at(c, 100), 1e-3);
  EXPECT_NEAR(lr_at(c, 550), 0.55e-3, 1e-12);  // halfway: the mean of peak and floor
  EXPECT_NEAR(lr_at(c, 999), 1e-4, 1e-8);
  for (int64_t t = 101; t < 1000; ++t) EXPECT_LE(lr_at(c, t), lr_at(c, t - 1)) << t;
}

TEST(LrSchedule, WsdHoldsThenDecaysLinearlyToTheFloor) {
  const TrainConfig c = schedule_config(LrSchedule::kWsd);
  EXPECT_DOUBLE_EQ(lr_at(c, 99), 1e-3);
  EXPECT_DOUBLE_EQ(lr_at(c, 799), 1e-3);  // stable until the last 20 %
  EXPECT_LT(lr_at(c, 800), 1e-3);
  EXPECT_NEAR(lr_at(c, 899), 0.55e-3, 1e-12);
  EXPECT_DOUBLE_EQ(lr_at(c, 999), 1e-4);  // the decay reaches the floor at the last step
  EXPECT_EQ(parse_schedule("wsd"), LrSchedule::kWsd);
  EXPECT_THROW(parse_schedule("linear"), std::invalid_argument);
}

TEST(TrainConfigCheck, BatchSplitsIntoMicroBatchesAndGpus) {
  TrainConfig c;
  c.batch = 64;
  EXPECT_EQ(micro_batch_of(c), 64);
  EXPECT_EQ(accumulation_of(c), 1);
  c.micro_batch = 16;
  EXPECT_EQ(accumulation_of(c), 4);
  c.gpus = 2;
  EXPECT_EQ(accumulation_of(c), 2);
  validate(c);
  c.micro_batch = 0;
  EXPECT_EQ(micro_batch_of(c), 32);
  c.micro_batch = 24;  // 64 is not a multiple of 24 x 2
  EXPECT_THROW(validate(c), std::invalid_argument);
}

TEST(TrainConfigCheck, BadSizesAreRefused) {
  auto refused = [](auto edit) {
    TrainConfig c;
    edit(c);
    EXPECT_THROW(validate(c), std::invalid_argument);
  };
  refused([](TrainConfig& c) { c.model.d_model = 48; });
  refused([](TrainConfig& c) { c.model.heads = 3; });
  refused([](TrainConfig& c) { c.model.ctx = 1; });
  refused([](TrainConfig& c) { c.model.ctx = 1 << 20; });
  refused([](TrainConfig& c) { c.gpus = 0; });
  refused([](TrainConfig& c) { c.lr = std::nan(""); });
  refused([](TrainConfig& c) { c.decay_fraction = 0; });
  refused([](TrainConfig& c) { c.log_every = 0; });
  refused([](TrainConfig& c) { c.graph = "always"; });
}

TEST(RecipeSpec, PresetWithFlags) {
  EXPECT_EQ(parse_recipe_spec("e2m1").name, "e2m1");
  const Recipe r = parse_recipe_spec("e2m1+rht=all");
  EXPECT_EQ(r.name, "e2m1+rht=all");
  EXPECT_TRUE(r.rht[0] && r.rht[1] && r.rht[2]);
  const Recipe u = parse_recipe_spec("ufp4+rht=wgrad+sr-bits=4");
  EXPECT_FALSE(u.rht[0]);
  EXPECT_TRUE(u.rht[2]);
  EXPECT_EQ(u.sr_bits, 4);
  // The name a recipe is recorded under reads back as the same recipe.
  EXPECT_EQ(parse_recipe_spec(u.name).name, u.name);
  EXPECT_THROW(parse_recipe_spec("e3m0"), RecipeError);
  EXPECT_THROW(parse_recipe_spec("e2m1+rht"), RecipeError);
  EXPECT_THROW(parse_recipe_spec("e2m1+colour=red"), RecipeError);
  EXPECT_THROW(parse_recipe_spec("e2m1+sr-bits=x"), RecipeError);
  EXPECT_THROW(parse_recipe_spec("bf16+rht=all"), RecipeError);
}

class SweepDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nibble_sweep_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A run directory as the trainer leaves it; `finished` writes run.json.
  void write_run(const std::string& rel, const nlohmann::ordered_json& config, bool finished, int steps = 5) {
    const fs::path d = dir_ / rel;
    fs::create_directories(d);
    std::ofstream loss(d / "loss.csv");
    loss << "step,loss,lr,grad_norm,step_ms\n";
    for (int s = 0; s < steps; ++s) loss << s << "," << 5.0 - 0.5 * s << ",0.001,1.0,2.5\n";
    if (finished) {
      nlohmann::ordered_json run;
      run["status"] = "finished";
      run["recipe"] = config["recipe"];
      run["description"] = config["description"];
      run["seed"] = config["seeds"]["init"];
      run["config"] = config;
      run["final_val_loss"] = 3.25;
      std::ofstream(d / "run.json") << run.dump(2);
    }
  }
  fs::path dir_;
};

TEST_F(SweepDir, PlanNamesEveryRecipeTimesSeed) {
  const auto plan = plan_sweep({"bf16", "e2m1+rht=all"}, {{0, 0, 0}, {1, 1, 5}});
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].dir, "runs/bf16-s0");
  EXPECT_EQ(plan[3].dir, "runs/e2m1+rht=all-i1-d1-q5");
  EXPECT_THROW(plan_sweep({"bf16", "bf16"}, {{0, 0, 0}}), SweepError);
}

TEST_F(SweepDir, FinishedRunsAreKeptUnfinishedRerunForeignRefused) {
  TrainConfig c;
  const Recipe r = preset("ufp4");
  const auto config = experiment_config(r, c, "data-a");
  EXPECT_EQ(run_state(dir_ / "runs/none", config), RunState::kPending);  // never started
  write_run("runs/half", config, false);
  EXPECT_EQ(run_state(dir_ / "runs/half", config), RunState::kPending);  // interrupted: no run.json
  write_run("runs/done", config, true);
  EXPECT_EQ(run_state(dir_ / "runs/done", config), RunState::kFinished);

  TrainConfig other = c;
  other.steps = c.steps + 1;
  try {
    run_state(dir_ / "runs/done", experiment_config(r, other, "data-a"));
    FAIL() << "a run of another configuration was taken";
  } catch (const SweepError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule.steps"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_state(dir_ / "runs/done", experiment_config(r, c, "data-b")), SweepError);
  std::ofstream(dir_ / "runs/half/run.json") << "{ not json";
  EXPECT_THROW(run_state(dir_ / "runs/half", config), SweepError);
}

TEST_F(SweepDir, RecordsReadBackFromTheFiles) {
  TrainConfig c;
  const auto config = experiment_config(preset("e2m1"), c, "d");
  write_run("runs/e2m1-s0", config, true, 7);
  const RunRecord rec = load_run_record(dir_, "runs/e2m1-s0");
  EXPECT_EQ(rec.recipe, "e2m1");
  EXPECT_EQ(rec.dir, "runs/e2m1-s0");
  ASSERT_EQ(rec.loss.size(), 7u);
  EXPECT_FLOAT_EQ(rec.loss[6], 2.0f);
  EXPECT_DOUBLE_EQ(rec.step_ms[0], 2.5);
  EXPECT_DOUBLE_EQ(rec.final_val_loss, 3.25);
  std::ofstream(dir_ / "runs/e2m1-s0/loss.csv", std::ios::app) << "7,1.5\n";  // a short line
  EXPECT_THROW(load_run_record(dir_, "runs/e2m1-s0"), SweepError);
}

TEST(SignedGap, PerStepRelativeDifference) {
  const auto g = signed_gap_curve({2.2f, 1.8f}, {2.0f, 2.0f});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_NEAR(g[0], 0.1, 1e-6);
  EXPECT_NEAR(g[1], -0.1, 1e-6);
  EXPECT_THROW(signed_gap_curve({1.0f}, {1.0f, 1.0f}), std::invalid_argument);
}

TEST(DataFingerprint, ChangesWithTheBytes) {
  PreparedData a;
  a.train = {1, 2, 3};
  a.val = {4};
  PreparedData b = a;
  EXPECT_EQ(data_fingerprint(a), data_fingerprint(b));
  b.train[1] = 9;
  EXPECT_NE(data_fingerprint(a), data_fingerprint(b));
  PreparedData moved;  // the same bytes split elsewhere
  moved.train = {1, 2};
  moved.val = {3, 4};
  EXPECT_NE(data_fingerprint(a), data_fingerprint(moved));
}

}  // namespace
}  // namespace nibble::train
