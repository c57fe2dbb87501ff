// The sweep runner that train-sweep and train-study share, end to end: the
// nibble program built against a fake trainer (fake_trainer.cpp), run as
// child processes on made-up GPUs. Checks the phases, the LR taken from the
// recorded sweep, resuming, diverged runs kept as results, and the GPU count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "../cli/run_command.h"
#include "nibble/train/data.h"

namespace nibble::test {
namespace {

namespace fs = std::filesystem;

class Runner : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nibble_runner_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    std::string text;
    for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog.\n";
    train::write_prepared(dir_ / "data", text, text.substr(0, 2000), {{"corpus", "runner test"}});
    ::setenv("NIBBLE_FAKE_CALLS", (dir_ / "calls").string().c_str(), 1);
    ::setenv("NIBBLE_FAKE_GPUS", "4", 1);
    ::unsetenv("NIBBLE_FAKE_DIVERGE");
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override { fs::remove_all(dir_); }

  int calls() const {
    std::ifstream in(dir_ / "calls");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  std::string study(const std::string& sub) const {
    return "train-study " + sub + " --study " + NIBBLE_STUDY_FILE + " --runs " + (dir_ / "runs").string();
  }
  std::string run(const std::string& rest) const {
    return study("run") + " --data " + (dir_ / "data").string() + " --size s5m " + rest;
  }

  fs::path dir_;
};

TEST_F(Runner, StudyPhasesResumeAndKeepDivergedRuns) {
  ::setenv("NIBBLE_FAKE_DIVERGE", "bf16@0.004", 1);
  CommandResult r = run_nibble(run("--phase main"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the learning-rate sweep is incomplete"), std::string::npos) << r.output;

  r = run_nibble(run("--phase lr --parallel 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("train-study: 4 runs, 0 finished already, 4 to run"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 at once on GPUs 0 | 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("s5m/lr/bf16-lr0.004-s0 diverged at step 17 (recorded as a result)"), std::string::npos)
      << r.output;
  EXPECT_EQ(calls(), 4);
  EXPECT_TRUE(fs::exists(dir_ / "runs/s5m/lr/bf16-lr0.001-s0/train.log"));
  EXPECT_FALSE(fs::exists(dir_ / "runs/s5m/lr/bf16-lr0.004-s0/run.json"));

  // The same command again trains nothing: finished runs are kept, the diverged one is a result.
  r = run_nibble(run("--phase lr --parallel 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 runs, 3 finished already, 1 diverged, 0 to run"), std::string::npos) << r.output;
  EXPECT_EQ(calls(), 4);

  // The main phase at the LR the sweep chose (the fake trainer's best is 0.002).
  r = run_nibble(run("--phase main --arms bf16,e2m1,ufp4 --seeds 0,1 --parallel 3"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("size s5m: lr 0.002"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("6 runs, 0 finished already, 6 to run"), std::string::npos) << r.output;
  EXPECT_EQ(calls(), 10);
  const auto run_json = nlohmann::json::parse(std::ifstream(dir_ / "runs/s5m/main/ufp4-s1/run.json"));
  EXPECT_EQ(run_json["config"]["schedule"]["lr"].get<double>(), 0.002);
  EXPECT_EQ(run_json["config"]["schedule"]["steps"].get<int>(), 6200);
  EXPECT_EQ(run_json["config"]["eval"]["bytes"].get<int>(), 1048576);

  // Two runs of two GPUs at once need four more than the machine has.
  r = run_nibble(run("--phase main --arms e2m1 --seeds 2 --parallel 3 --gpus-per-run 2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("need 6 GPUs; this machine has 4"), std::string::npos) << r.output;

  r = run_nibble(study("summarize"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto sum = nlohmann::json::parse(std::ifstream(dir_ / "runs/summary.json"));
  const auto& z = sum["sizes"][0];
  EXPECT_EQ(z["lr_sweep"]["chosen_lr"].get<double>(), 0.002);
  EXPECT_EQ(z["main"]["done"].get<int>(), 6);
  EXPECT_EQ(z["pairs"][0]["d"]["n"].get<int>(), 2);
  EXPECT_NEAR(z["pairs"][0]["d"]["mean"].get<double>(), -0.0015, 1e-9);  // ufp4 0.008 / 0.009 against e2m1 0.010
  EXPECT_EQ(sum["runs"]["diverged"].get<int>(), 1);
}

TEST_F(Runner, TrainSweepRunsThroughTheSameRunner) {
  const std::string out = (dir_ / "sweep").string();
  const std::string args = "train-sweep --data " + (dir_ / "data").string() +
                           " --steps 20 --layers 1 --d-model 32 --heads 1 --ctx 16 --batch 2 --recipes e2m1 --seeds 0,1"
                           " --last-n 1 --out " +
                           out;
  CommandResult r = run_nibble(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("train-sweep: 4 runs, 0 finished already, 4 to run"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "summary.json"));
  EXPECT_TRUE(fs::exists(fs::path(out) / "runs/e2m1-s1/gap.csv"));
  r = run_nibble(args + " --parallel 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 runs, 4 finished already, 0 to run"), std::string::npos) << r.output;
  EXPECT_EQ(calls(), 4);
}

}  // namespace
}  // namespace nibble::test
