// `nibble train-data`, `train` and `train-sweep` from the command line: the
// data preparation end to end, and bad input exiting 2 with a message (in every
// build: recipe flags are checked before libtorch is needed).
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "../cli/run_command.h"

namespace nibble::test {
namespace {

namespace fs = std::filesystem;

void expect_usage_error(const std::string& args, const std::string& message) {
  const CommandResult r = run_nibble(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
}

TEST(TrainCli, BadRecipesAndFlagsExit2) {
  expect_usage_error("train --recipe fp8 --out /tmp/x", "unknown recipe 'fp8'");
  expect_usage_error("train --recipe e2m1 --rht fprop,sideways --out /tmp/x", "unknown --rht item 'sideways'");
  expect_usage_error("train --recipe e2m1 --format e3m0 --out /tmp/x", "unknown format 'e3m0'");
  expect_usage_error("train --recipe bf16 --sr all --out /tmp/x", "quantization flags do not apply");
  expect_usage_error("train-sweep --seeds 1,x --out /tmp/x", "--seeds: 'x'");
  expect_usage_error("train-sweep --recipes ufp4,int8 --out /tmp/x", "unknown recipe 'int8'");
  expect_usage_error("train-sweep --steps 10 --last-n 20 --out /tmp/x", "--last-n");
  expect_usage_error("train-sweep --seeds 0,-1 --out /tmp/x", "--seeds: '-1'");
  expect_usage_error("train-sweep --recipes e2m1+colour=red --out /tmp/x", "unknown key 'colour'");
  expect_usage_error("train-sweep --parallel 0 --out /tmp/x", "--parallel must be");
  expect_usage_error("train --recipe e2m1+rht --out /tmp/x", "is not key=value");
  expect_usage_error("train --schedule linear --out /tmp/x", "unknown learning-rate schedule 'linear'");
  expect_usage_error("train --batch 64 --micro-batch 24 --out /tmp/x", "must be a multiple of --micro-batch");
  expect_usage_error("train --d-model 100 --out /tmp/x", "multiple of 32");
  expect_usage_error("train --d-model 256 --heads 3 --out /tmp/x", "must divide --d-model");
  expect_usage_error("train --gpus 0 --out /tmp/x", "--gpus must be");
  expect_usage_error("train --graph always --out /tmp/x", "unknown --graph 'always'");
}

TEST(TrainCli, TrainDataRefusesAMissingCorpus) {
  expect_usage_error("train-data --corpus /nonexistent/corpus-brown --out /tmp/x", "does not exist");
}

TEST(TrainCli, TrainDataPreparesTheCorpus) {
  const fs::path corpus = NIBBLE_CORPUS_DIR;
  if (!fs::exists(corpus)) GTEST_SKIP() << "corpus-brown not installed at " << corpus << " (scripts/setup.sh)";
  const fs::path out = fs::temp_directory_path() / ("nibble_train_cli_" + std::to_string(::getpid()));
  fs::remove_all(out);
  const CommandResult r = run_nibble("train-data --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("450 documents"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / "manifest.json"));
  EXPECT_LT(fs::file_size(out / "train.bin") + fs::file_size(out / "val.bin"), 20u * 1000 * 1000);
  fs::remove_all(out);
}

}  // namespace
}  // namespace nibble::test
