// The runner's torch-free logic: seed and recipe lists, GPU slots, the options a
// child `nibble train` gets, and the checks it makes before it needs a trainer.
// The runs themselves are train_runner_cli_test's (a fake trainer, child processes).
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "nibble/train/recipe.h"
#include "nibble/train/runner.h"
#include "nibble/train/sweep.h"

namespace nibble::train {
namespace {

// The message of the std::invalid_argument `f` throws ("" where it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Runner, SeedListsAreNonNegativeIntegers) {
  EXPECT_EQ(parse_seeds("0,1,2"), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(parse_seeds("18446744073709551615"), (std::vector<uint64_t>{UINT64_MAX}));
  for (const char* bad : {"1,-2", "1,,2", "x", "3x", "18446744073709551616"}) {
    EXPECT_NE(refusal([&] { parse_seeds(bad); }).find("is not a seed"), std::string::npos) << bad;
  }
  EXPECT_EQ(refusal([] { parse_seeds(""); }), "--seeds is empty");
}

TEST(Runner, RecipeListsPutTheBaselineFirst) {
  EXPECT_EQ(parse_recipes("e2m1,ufp4"), (std::vector<std::string>{"bf16", "e2m1", "ufp4"}));
  EXPECT_EQ(parse_recipes("ufp4,bf16"), (std::vector<std::string>{"ufp4", "bf16"}));
  const std::vector<std::string> all = parse_recipes("all");
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), "bf16");
  EXPECT_EQ(all.size(), preset_names().size());
  EXPECT_FALSE(refusal([] { parse_recipes("e2m1,nosuch"); }).empty());
  EXPECT_EQ(split_list("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(refusal([] { split_list("a,,b"); }), "'a,,b' has an empty item");
}

TEST(Runner, GpuSlotsTakeTheVisibleGpusInOrder) {
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(gpu_slots(2, 2, 4), (std::vector<std::string>{"0,1", "2,3"}));
  ::setenv("CUDA_VISIBLE_DEVICES", "5,3,7", 1);
  EXPECT_EQ(gpu_slots(3, 1, 8), (std::vector<std::string>{"5", "3", "7"}));
  EXPECT_EQ(refusal([] { gpu_slots(2, 2, 8); }), "2 run(s) at once of 2 GPU(s) each need 4 GPUs; this machine has 8");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(refusal([] { gpu_slots(1, 2, 1); }), "1 run(s) at once of 2 GPU(s) each need 2 GPUs; this machine has 1");
}

TEST(Runner, OptionsOfAConfigGiveItBack) {
  RunOptions devices;
  devices.gpus = 2;
  devices.device = "cpu";
  TrainConfig c;
  c.model.layers = 3;
  c.model.d_model = 96;
  c.model.heads = 3;
  c.steps = 40;
  c.lr = 0.004;
  c.schedule = LrSchedule::kWsd;
  c.data_dir = "some/data";
  const RunOptions o = RunOptions::of(c, devices);
  const TrainConfig back = o.config({1, 2, 3});
  EXPECT_EQ(back.model.layers, 3);
  EXPECT_EQ(back.model.d_model, 96);
  EXPECT_EQ(back.steps, 40);
  EXPECT_EQ(back.lr, 0.004);
  EXPECT_EQ(back.schedule, LrSchedule::kWsd);
  EXPECT_EQ(back.gpus, 2);
  EXPECT_EQ(back.device, "cpu");
  EXPECT_EQ(back.data_dir, "some/data");
  EXPECT_EQ(back.seeds, (RunSeeds{1, 2, 3}));
  // Every option reaches a child as a flag and its value.
  const std::vector<std::string> args = o.to_args();
  ASSERT_EQ(args.size() % 2, 0u);
  auto value = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < args.size(); i += 2) {
      if (args[i] == flag) return args[i + 1];
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(value("--layers"), "3");
  EXPECT_EQ(value("--lr"), "0.004");
  EXPECT_EQ(value("--schedule"), "wsd");
  EXPECT_EQ(value("--gpus"), "2");
  EXPECT_EQ(value("--data"), "some/data");
  EXPECT_EQ(value("--time-limit"), "(absent)");  // a child gets the time left instead
}

TEST(Runner, OptionsAreCheckedBeforeATrainerIsNeeded) {
  RunOptions bad;
  bad.schedule = "linear";
  EXPECT_NE(refusal([&] { bad.config({}); }).find("unknown learning-rate schedule 'linear'"), std::string::npos);
  const RunOptions ok;
  const Recipe bf16 = parse_recipe_spec("bf16");
  EXPECT_NE(refusal([&] { train_one(bad, bf16, {}, "unused", nullptr); }).find("linear"), std::string::npos);
  EXPECT_THROW(train_one(ok, bf16, {}, "unused", nullptr), NoTrainer);
  EXPECT_EQ(refusal([] { run_jobs({}, 0, false, "test", nullptr); }), "--parallel must be 1..64, got 0");
  EXPECT_THROW(run_jobs({}, 1, false, "test", nullptr), NoTrainer);
  const OutputWriter none = [](const std::string&, const std::string&) { FAIL() << "nothing is written"; };
  EXPECT_EQ(refusal([&] { run_sweep(ok, "all", "0", 0, "unused", 1, nullptr, none); }),
            "--last-n must be 1..--steps (750), got 0");
  EXPECT_EQ(refusal([&] { run_sweep(ok, "all", "0", 10, "unused", 65, nullptr, none); }),
            "--parallel must be 1..64, got 65");
  EXPECT_THROW(run_sweep(ok, "all", "0", 10, "unused", 1, nullptr, none), NoTrainer);
}

}  // namespace
}  // namespace nibble::train
