// The runner of child runs, with /bin/sh children in place of `nibble train`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "nibble/train/child_runs.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kSh = "/bin/sh";

// A child running `script` in sh; the arguments run_children appends land in $0, $1, ...
Child sh_child(const std::string& script, const std::string& log = "") {
  Child c;
  c.args = {"-c", script};
  c.log = log;
  return c;
}

std::string text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ChildRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nibble_child_runs_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ChildRuns, StatusesAreExitCodesOrSignalsAndEachChildHasItsSlot) {
  std::vector<Child> children;
  for (int i = 0; i < 4; ++i) {
    const std::string log = (dir_ / ("c" + std::to_string(i) + ".log")).string();
    const std::string code = i == 3 ? "kill -9 $$" : "exit " + std::to_string(i);
    children.push_back(sh_child("echo \"$CUDA_VISIBLE_DEVICES\"; " + code, log));
  }
  const std::vector<int> st = run_children(children, {"4", "5"}, std::nullopt, kSh);
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0], 0);
  EXPECT_EQ(st[1], 1);
  EXPECT_EQ(st[2], 2);
  EXPECT_EQ(st[3], 128 + 9);
  for (int i = 0; i < 4; ++i) {
    const std::string out = text(dir_ / ("c" + std::to_string(i) + ".log"));
    EXPECT_TRUE(out == "4\n" || out == "5\n") << "child " << i << " saw CUDA_VISIBLE_DEVICES=" << out;
  }
}

// Runs not started before the deadline are reported, not waited for: once the
// running ones have ended there is nothing left to wait on.
TEST_F(ChildRuns, RunsPastTheDeadlineAreNotStarted) {
  const std::string log = (dir_ / "first.log").string();
  std::vector<Child> children{sh_child("echo \"$0 $1\"; sleep 2", log), sh_child("exit 0"), sh_child("exit 0")};
  const auto t0 = Clock::now();
  const std::vector<int> st = run_children(children, {"0"}, t0 + std::chrono::milliseconds(1800), kSh);
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0], 0);
  EXPECT_EQ(st[1], kNotStarted);
  EXPECT_EQ(st[2], kNotStarted);
  EXPECT_EQ(text(log), "--time-limit 2\n");  // the time left, rounded

  std::vector<Child> late{sh_child("exit 0"), sh_child("exit 0")};
  const std::vector<int> none = run_children(late, {"0", "1"}, Clock::now(), kSh);
  EXPECT_EQ(none, (std::vector<int>{kNotStarted, kNotStarted}));
}

// A resumed run continues its log; a run started afresh replaces it.
TEST_F(ChildRuns, AResumedRunAppendsToItsLogAFreshOneReplacesIt) {
  const std::string log = (dir_ / "run.log").string();
  std::vector<Child> first{sh_child("echo first", log)};
  ASSERT_EQ(run_children(first, {"0"}, std::nullopt, kSh), std::vector<int>{0});
  Child resumed = sh_child("echo resumed", log);
  resumed.append_log = true;
  std::vector<Child> second{resumed};
  ASSERT_EQ(run_children(second, {"0"}, std::nullopt, kSh), std::vector<int>{0});
  EXPECT_EQ(text(log), "first\nresumed\n");
  std::vector<Child> fresh{sh_child("echo fresh", log)};
  ASSERT_EQ(run_children(fresh, {"0"}, std::nullopt, kSh), std::vector<int>{0});
  EXPECT_EQ(text(log), "fresh\n");
}

TEST_F(ChildRuns, AProgramThatCannotStartIsAnError) {
  std::vector<Child> children{sh_child("exit 0")};
  EXPECT_THROW(run_children(children, {"0"}, std::nullopt, (dir_ / "no-such-program").string()), std::runtime_error);
  EXPECT_THROW(run_children(children, {}, std::nullopt, kSh), std::invalid_argument);
}

}  // namespace
}  // namespace nibble::train
