// `nibble quant` end to end: real invocations of the built binary, their exit
// codes, what they print and the files they write.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "nibble/io/tensor_file.h"
#include "run_command.h"

namespace nibble::test {
namespace {

namespace fs = std::filesystem;

// A scratch directory per test process, removed when the suite ends.
class QuantCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("nibble_quant_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& file) { return (dir_ / file).string(); }

  static fs::path dir_;
};
fs::path QuantCli::dir_;

// A version 1.0 .npy of little-endian float32 written byte by byte (not with
// nibble::io, whose reader is under test here too): magic, version, header
// length, the header dict padded with spaces to a multiple of 64 bytes, data.
// `data_bytes` below the full size truncates the file.
void write_npy_by_hand(const std::string& file, const std::string& shape, const std::vector<float>& values,
                       size_t data_bytes) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY", 6) + '\x01' + '\x00';
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  for (float v : values) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    for (int b = 0; b < 4; ++b) bytes += static_cast<char>((u >> (8 * b)) & 0xFF);
  }
  bytes.resize(10 + header.size() + data_bytes);
  std::ofstream(file, std::ios::binary) << bytes;
}

void write_npy_by_hand(const std::string& file, const std::string& shape, const std::vector<float>& values) {
  write_npy_by_hand(file, shape, values, values.size() * 4);
}

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 13) - 6.0f;
  return v;
}

size_t count_lines_starting_with(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(QuantCli, DefaultRunPrintsTheFullMatrix) {
  std::printf("seed 0 (the default)\n");
  const CommandResult r = run_nibble("quant");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SQNR dB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("alpha"), std::string::npos);
  // 3 formats x 4 scales x 3 blocks x 2 roundings x 2 RHT settings.
  EXPECT_EQ(count_lines_starting_with(r.output, "gaussian "), 144u) << r.output;
  for (const char* f : {"e2m1", "e1m2", "int4", "mx-floor", "16x16"}) {
    EXPECT_NE(r.output.find(f), std::string::npos) << f;
  }
}

TEST_F(QuantCli, JsonCsvLevelsAndChain) {
  const std::string json_file = path("out.json");
  const std::string csv_file = path("out.csv");
  const uint64_t seed = 21;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const CommandResult r = run_nibble("quant --formats e2m1,int4 --scale fp32 --block 1x16 --rounding rne --seed " +
                                     std::to_string(seed) + " --levels --chain 2 --chain-width 32 --chain-batch 8" +
                                     " --json " + json_file + " --csv " + csv_file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("per-level grid bias, e2m1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("-0.2500"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("eta_l"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cosine"), std::string::npos) << r.output;

  const nlohmann::json j = nlohmann::json::parse(slurp(json_file));
  for (const char* key : {"command", "seed", "sr_bits", "inputs", "rows", "grid_level_bias", "chain"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["command"], "quant");
  EXPECT_EQ(j["seed"], seed);
  EXPECT_EQ(j["inputs"][0]["name"], "gaussian");
  ASSERT_EQ(j["rows"].size(), 4u);  // 2 formats x 2 RHT settings
  int checked = 0;
  for (const nlohmann::json& row : j["rows"]) {
    for (const char* key : {"input", "format", "scale", "block", "rht", "rounding", "sqnr_db", "delta_sqnr_rht",
                            "nmse", "alpha", "rel_mag_error", "code_entropy_bits", "b_eff", "level_bias"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_TRUE(row["alpha"].is_number());
    EXPECT_EQ(row["level_bias"].size(), 7u);
    ++checked;
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(j["grid_level_bias"]["e2m1"][5]["bias"], -0.25);
  ASSERT_EQ(j["chain"]["runs"].size(), 4u);
  EXPECT_EQ(j["chain"]["runs"][0]["depths"].size(), 2u);
  EXPECT_TRUE(j["chain"]["runs"][0]["depths"][1]["eta"].is_number());

  const std::string csv = slurp(csv_file);
  EXPECT_EQ(count_lines_starting_with(csv, "gaussian,"), 4u) << csv;
  EXPECT_EQ(csv.rfind("input,format,scale,block,rht,rounding", 0), 0u) << csv;
}

// The policies reach every row: the JSON records them, and the metrics, which read values,
// are the same under both zero policies (a zero of either sign is 0).
TEST_F(QuantCli, PoliciesAreRecordedAndLeaveTheMetrics) {
  const auto run = [this](const std::string& extra, const std::string& file) {
    const CommandResult r = run_nibble("quant --formats e2m1,e1m2 --scale nvfp4 --block 1x16 --rht off --rounding rne "
                                       "--json " + path(file) + extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(slurp(path(file)));
  };
  const nlohmann::json plain = run("", "plain.json");
  const nlohmann::json policy = run(" --zero signed --nonfinite propagate", "policy.json");
  EXPECT_EQ(plain["zero"], "positive");
  EXPECT_EQ(plain["nonfinite"], "finite");
  EXPECT_EQ(policy["zero"], "signed");
  EXPECT_EQ(policy["nonfinite"], "propagate");
  ASSERT_EQ(plain["rows"].size(), policy["rows"].size());
  for (size_t i = 0; i < plain["rows"].size(); ++i) {
    EXPECT_EQ(plain["rows"][i]["sqnr_db"], policy["rows"][i]["sqnr_db"]) << i;
    EXPECT_EQ(plain["rows"][i]["alpha"], policy["rows"][i]["alpha"]) << i;
    EXPECT_EQ(plain["rows"][i]["code_entropy_bits"], policy["rows"][i]["code_entropy_bits"]) << i;
  }
}

TEST_F(QuantCli, InputAllRunsEveryDistribution) {
  const CommandResult r = run_nibble("quant --input all --formats e2m1 --scale fp32 --block 1x16 --rounding rne");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* d : {"gaussian ", "laplace ", "student-t ", "uniform ", "outlier "}) {
    EXPECT_EQ(count_lines_starting_with(r.output, d), 2u) << d << "\n" << r.output;
  }
}

TEST_F(QuantCli, UserTensorWithSomeNonFiniteValues) {
  const std::string file = path("weights.npy");
  std::vector<float> v = ramp(4 * 32);
  v[5] = std::numeric_limits<float>::quiet_NaN();
  v[70] = -std::numeric_limits<float>::infinity();
  write_npy_by_hand(file, "(2, 2, 32)", v);
  const CommandResult r = run_nibble("quant --tensor " + file + " --formats e1m2 --scale nvfp4 --block 1x32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("'weights' has 2 non-finite values"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines_starting_with(r.output, "weights "), 4u) << r.output;
  EXPECT_EQ(r.output.find("nan"), std::string::npos) << r.output;
}

TEST_F(QuantCli, SafetensorsTensorSelectedByName) {
  const std::string file = path("model.safetensors");
  nibble::io::Tensor a{"layer0.weight", {16, 32}, ramp(16 * 32)};
  nibble::io::Tensor b{"layer1.weight", {8, 48}, ramp(8 * 48)};
  nibble::io::write_safetensors(file, {a, b});
  const CommandResult r =
      run_nibble("quant --tensor " + file + " --tensor-name layer1.weight --formats e2m1 --scale fp32 --block 1x16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_lines_starting_with(r.output, "layer1.weight "), 4u) << r.output;
  EXPECT_EQ(r.output.find("layer0.weight"), std::string::npos) << r.output;
}

struct BadInput {
  std::string args;
  std::string message;
};

TEST_F(QuantCli, BadInputExitsTwoWithItsMessage) {
  const std::string truncated = path("truncated.npy");
  write_npy_by_hand(truncated, "(4, 32)", ramp(4 * 32), 4 * 32 * 4 - 6);
  const std::string all_nan = path("all_nan.npy");
  std::vector<float> nan_and_inf(32, std::numeric_limits<float>::quiet_NaN());
  nan_and_inf[3] = std::numeric_limits<float>::infinity();
  nan_and_inf[17] = -std::numeric_limits<float>::infinity();
  write_npy_by_hand(all_nan, "(2, 16)", nan_and_inf);
  const std::string narrow = path("narrow.npy");
  write_npy_by_hand(narrow, "(3, 40)", ramp(3 * 40));
  const std::string empty = path("empty.npy");
  write_npy_by_hand(empty, "(0, 16)", {});

  const std::vector<BadInput> cases = {
      {"--formats e2m1,fp8", "unknown format 'fp8'; valid: e2m1, e1m2, int4"},
      {"--scale fp16", "unknown scale mode 'fp16'; valid: fp32, nvfp4, mx-floor, mx-ceil"},
      {"--block 8x8", "unknown block shape '8x8'; valid: 1x16, 1x32, 16x16"},
      {"--rounding rtz", "unknown rounding 'rtz'; valid: rne, sr"},
      {"--rht 17", "unknown RHT setting '17'; valid: off, 16, 32, 64, 128"},
      {"--input cauchy", "unknown input 'cauchy'; valid: gaussian, laplace, student-t, uniform, outlier, all"},
      {"--cols 40", "RHT 16 needs the contraction axis of 'gaussian' (cols) to be a multiple of 16, got 40"},
      {"--rows 0", "--rows must be positive, got 0"},
      {"--cols=-3", "--cols must be positive, got -3"},
      {"--sr-bits 0", "--sr-bits must be in 1..8, got 0"},
      {"--sr-bits 9", "--sr-bits must be in 1..8, got 9"},
      {"--chain 0", "--chain must be positive, got 0"},
      {"--chain 2 --chain-batch 0", "--chain-batch must be positive, got 0"},
      {"--chain 2 --chain-width 40", "RHT 16 needs --chain-width to be a multiple of 16, got 40"},
      {"--tensor " + truncated, truncated},
      {"--tensor " + all_nan, all_nan + ": tensor has no finite values"},
      {"--tensor " + narrow, "RHT 16 needs the contraction axis of 'narrow' (cols) to be a multiple of 16, got 40"},
      {"--tensor " + empty, "is empty"},
      {"--tensor " + path("missing.npy"), path("missing.npy")},
      {"--json " + path("no/such/dir/out.json"), "cannot open '" + path("no/such/dir/out.json") + "' for writing"},
      {"--zero keep", "--zero: unknown policy 'keep'; valid: positive, signed"},
      {"--nonfinite te", "--nonfinite: unknown policy 'te'; valid: finite, propagate"},
  };
  int checked = 0;
  for (const BadInput& c : cases) {
    const CommandResult r = run_nibble("quant " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("nibble: error: "), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST_F(QuantCli, NarrowTensorRunsWithoutRht) {
  const std::string narrow = path("narrow_ok.npy");
  write_npy_by_hand(narrow, "(3, 40)", ramp(3 * 40));
  const CommandResult r = run_nibble("quant --tensor " + narrow + " --rht off --formats int4 --scale mx-ceil");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_lines_starting_with(r.output, "narrow_ok "), 6u) << r.output;
}

}  // namespace
}  // namespace nibble::test
