// `nibble bench-compare` end to end on results files written by the library's
// own writer: the ratios it prints and writes, its marks, and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "nibble/io/kernel_bench_file.h"
#include "run_command.h"

namespace nibble {
namespace {

namespace fs = std::filesystem;

io::KernelBenchRow row(const char* section, const char* kind, const char* name, double ms) {
  io::KernelBenchRow r;
  r.section = section;
  r.kind = kind;
  r.name = name;
  r.ms = ms;
  if (r.section == "quantize") {
    r.input = "bf16";
    r.shape = {8192, 8192};
  } else {
    r.shape = {1024, 1024, 16384};
    if (r.kind == "kernel") {
      r.tiles = "auto";
      r.tile = "128x64";
    }
  }
  return r;
}

// A run whose times are `quant_ms` (the quantize kernel) and `gemm_ms`.
io::KernelBenchRun run_of(double quant_ms, double gemm_ms, const char* device = "NVIDIA H100 80GB HBM3") {
  io::KernelBenchRun run;
  run.command = "nibble bench-kernels";
  run.device.name = device;
  run.rows = {row("quantize", "yardstick", "cudaMemcpy D2D of the input", 0.052),
              row("quantize", "kernel", "e1m2 1x16 fp32 SR RHT16 (ufp4 dY)", quant_ms),
              row("gemm", "yardstick", "cuBLAS BF16 (FP32 accumulate)", 0.050),
              row("gemm", "kernel", "bit-exact wgmma e2m1 1x16 nvfp4", gemm_ms)};
  return run;
}

// The before, after and speedup columns as the command prints them: 15
// characters each, right-aligned, one space apart.
std::string cells(const std::string& before, const std::string& after, const std::string& speedup) {
  auto pad = [](const std::string& x) { return std::string(15 - x.size(), ' ') + x; };
  return pad(before) + " " + pad(after) + " " + pad(speedup);
}

class BenchCompareCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nibble_bench_compare_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& file, const io::KernelBenchRun& run) {
    const std::string p = (dir_ / file).string();
    std::ofstream(p) << io::kernel_bench_json(run);
    return p;
  }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }
  fs::path dir_;
};

TEST_F(BenchCompareCli, PrintsAndWritesEachRowsSpeedupAndMarksWhatMoved) {
  // Before: two runs; after: one, the quantize kernel 1.25x faster, the GEMM 2 % slower.
  const std::string b1 = write("b1.json", run_of(0.080, 0.200)), b2 = write("b2.json", run_of(0.080, 0.200));
  const std::string a1 = write("a1.json", run_of(0.064, 0.204));
  const auto r = test::run_nibble("bench-compare --before " + b1 + " " + b2 + " --after " + a1 + " --json " +
                                  path("cmp.json"));
  SCOPED_TRACE(r.output);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("before: 2 runs on NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(r.output.find("quantize bf16 8192 x 8192"), std::string::npos);
  EXPECT_NE(r.output.find("e1m2 1x16 fp32 SR RHT16 (ufp4 dY)"), std::string::npos);
  EXPECT_NE(r.output.find(cells("0.0800", "0.0640", "1.25x") + " +"), std::string::npos);
  EXPECT_NE(r.output.find("bit-exact wgmma e2m1 1x16 nvfp4 (auto: 128x64)"), std::string::npos);
  EXPECT_NE(r.output.find(cells("0.2000", "0.2040", "0.98x") + " -"), std::string::npos);
  EXPECT_NE(r.output.find("2 rows, 1 faster and 1 slower beyond the noise"), std::string::npos);
  EXPECT_EQ(r.output.find("note: the sides ran on different devices"), std::string::npos);

  std::ifstream in(path("cmp.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][1]["kind"], "kernel");
  EXPECT_EQ(j["rows"][1]["before_ms"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["rows"][1]["speedup"].get<double>(), 0.080 / 0.064);
  EXPECT_DOUBLE_EQ(j["rows"][3]["speedup"].get<double>(), 0.200 / 0.204);
  EXPECT_EQ(j["before"]["files"].size(), 2u);

  // A 2 % change inside a 3 % noise band is not marked.
  const auto quiet = test::run_nibble("bench-compare --before " + b1 + " --after " + a1 + " --noise 0.03");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_NE(quiet.output.find("1 faster and 0 slower"), std::string::npos) << quiet.output;
}

TEST_F(BenchCompareCli, SaysWhenTheSidesRanOnDifferentDevicesAndListsUnmatchedRows) {
  io::KernelBenchRun h200 = run_of(0.064, 0.204, "NVIDIA H200");
  h200.rows.pop_back();
  const auto r = test::run_nibble("bench-compare --before " + write("h100.json", run_of(0.069, 0.2)) + " --after " +
                                  write("h200.json", h200));
  SCOPED_TRACE(r.output);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("note: the sides ran on different devices"), std::string::npos);
  EXPECT_NE(r.output.find("only in before: gemm 1024x1024x16384 bit-exact wgmma e2m1 1x16 nvfp4 (tiles auto)"),
            std::string::npos);
}

TEST_F(BenchCompareCli, BadInputExitsTwoWithAMessage) {
  const std::string good = write("good.json", run_of(0.064, 0.2));
  std::ofstream(path("broken.json")) << "{\"schema\": \"nibble-bench-kernels\", ";
  io::KernelBenchRun other;
  other.command = "nibble bench-kernels";
  other.rows = {row("quantize", "kernel", "int4 1x16 fp32 SR", 0.06)};
  const std::string unrelated = write("other.json", other);
  const std::pair<std::string, std::string> cases[] = {
      {"--before " + good, "--after is required"},
      {"--before " + good + " --after " + path("missing.json"), "does not exist"},
      {"--before " + good + " --after " + path("broken.json"), "broken.json: not valid JSON"},
      {"--before " + good + " --after " + unrelated, "no row of the --before runs is in the --after runs"},
      {"--before " + good + " --after " + good + " --noise 1.5", "--noise 1.5 is not in [0, 1)"},
      {"--before " + good + " --after " + good + " --json /nonexistent/dir/c.json", "--json: cannot open"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = test::run_nibble("bench-compare " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
}

#if NIBBLE_HAVE_CUDA
// bench-kernels (CUDA builds) checks its options before any GPU work: these
// fail the same way with or without a GPU.
TEST(BenchKernelsCli, RejectsBadOptionsBeforeAnyGpuWork) {
  const std::pair<std::string, std::string> cases[] = {
      {"--gemm 128 256", "--gemm takes M N K triples"},
      {"--gemm 128 0 64", "128 x 0 x 64 is not a GEMM shape"},
      {"--iterations 0", "--iterations"},
      {"--quant-rows -4", "--quant-rows"},
      {"--json /nonexistent/dir/bench.json", "--json: cannot open"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = test::run_nibble("bench-kernels " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
}
#endif

}  // namespace
}  // namespace nibble
