// `nibble golden-quant` end to end: the quantized-tensor files it writes hold
// golden's quantization under the settings they record, --check passes on
// them and names the first difference of each kind in a changed file, and bad
// invocations exit 2 with a message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"
#include "nibble/quantize.h"
#include "run_command.h"

namespace nibble::test {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kSeed = 20261128;

class GoldenQuantCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("nibble_golden_quant_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::printf("seed %u\n", kSeed);
    std::mt19937 rng(kSeed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    x_.assign(kRows * kCols, 0.0f);
    for (float& v : x_) v = normal(rng);
    x_[3 * kCols + 5] = INFINITY;  // a block with Inf, one with NaN, and a zero block
    x_[4 * kCols + 17] = NAN;
    for (int64_t c = 32; c < 48; ++c) x_[static_cast<size_t>(6 * kCols + c)] = 0.0f;
    io::write_npy(path("x.npy"), {kRows, kCols}, x_.data());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& file) { return (dir_ / file).string(); }

  static std::vector<float> transposed() {
    std::vector<float> xt(x_.size());
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t c = 0; c < kCols; ++c) {
        xt[static_cast<size_t>(c * kRows + r)] = x_[static_cast<size_t>(r * kCols + c)];
      }
    }
    return xt;
  }

  static constexpr int64_t kRows = 32;  // both axes multiples of 16: RHT16 either way
  static constexpr int64_t kCols = 80;
  static fs::path dir_;
  static std::vector<float> x_;
};
fs::path GoldenQuantCli::dir_;
std::vector<float> GoldenQuantCli::x_;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::string hex(unsigned v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

void expect_same(const QuantizedTensor& got, const QuantizedTensor& want) {
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.cols, want.cols);
  EXPECT_EQ(got.codes, want.codes);
  EXPECT_EQ(got.scales, want.scales);
  EXPECT_EQ(bits(got.tensor.encode), bits(want.tensor.encode));
  EXPECT_EQ(bits(got.tensor.decode), bits(want.tensor.decode));
}

TEST_F(GoldenQuantCli, WritesGoldensQuantizationAndItsSettings) {
  const std::string out = path("q.safetensors");
  // Every scale mode with every block shape, the formats in turn (the io tests
  // take the whole product; this is the command's own path), every other case
  // SR with RHT16, a seed and a stream.
  int cases = 0;
  for (const char* scale : {"fp32", "nvfp4", "mx-floor", "mx-ceil"}) {
    for (const char* block : {"1x16", "1x32", "16x16"}) {
      const char* format = std::array{"e2m1", "e1m2", "int4"}[static_cast<size_t>(cases % 3)];
      const bool sr = cases % 2 == 1;
      const std::string args = std::string("--format ") + format + " --scale " + scale + " --block " + block +
                               (sr ? " --rounding sr --sr-bits 5 --rht 16 --seed 11 --stream 3" : "");
      const auto r = run_nibble("golden-quant --tensor " + path("x.npy") + " " + args + " --colwise --out " + out);
      SCOPED_TRACE(args + "\n" + r.output);
      ASSERT_EQ(r.exit_code, 0);
      QuantConfig cfg;
      cfg.format = *parse_format(format);
      cfg.scale = *parse_scale_mode(scale);
      cfg.block = *parse_block_shape(block);
      if (sr) {
        cfg.rounding = Rounding::kStochastic;
        cfg.sr_bits = 5;
        cfg.rht = RhtConfig{16, false};
        cfg.seed = 11;
        cfg.stream = 3;
      }
      const std::vector<io::QuantizedEntry> entries = io::read_quantized(out);
      ASSERT_EQ(entries.size(), 2u);
      EXPECT_EQ(entries[0].name, "rowwise");
      EXPECT_FALSE(entries[0].transposed);
      EXPECT_EQ(entries[1].name, "colwise");
      EXPECT_TRUE(entries[1].transposed);
      for (const io::QuantizedEntry& e : entries) {
        const QuantConfig& c = e.tensor.config;
        EXPECT_EQ(c.format, cfg.format);
        EXPECT_EQ(c.scale, cfg.scale);
        EXPECT_EQ(c.block, cfg.block);
        EXPECT_EQ(c.rounding, cfg.rounding);
        EXPECT_EQ(c.sr_bits, cfg.sr_bits);
        EXPECT_EQ(c.rht, cfg.rht);
        EXPECT_EQ(c.seed, cfg.seed);
        EXPECT_EQ(c.stream, cfg.stream);
      }
      expect_same(entries[0].tensor, quantize(x_.data(), kRows, kCols, cfg));
      expect_same(entries[1].tensor, quantize(transposed().data(), kCols, kRows, cfg));
      ++cases;
    }
  }
  EXPECT_EQ(cases, 12);
}

TEST_F(GoldenQuantCli, CheckPassesOnGoldensFileAndNamesEachDifference) {
  const std::string good = path("good.safetensors");
  ASSERT_EQ(run_nibble("golden-quant --tensor " + path("x.npy") +
                       " --format e2m1 --scale nvfp4 --rounding sr --seed 9 --colwise --out " + good)
                .exit_code,
            0);
  const auto ok = run_nibble("golden-quant --tensor " + path("x.npy") + " --check " + good);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("2 quantized tensors against golden on x [32 x 80]"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("rowwise [32 x 80] e2m1 1x16 nvfp4 sr B=8: bit-exact"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("colwise [80 x 32] (transposed) e2m1 1x16 nvfp4 sr B=8: bit-exact"), std::string::npos)
      << ok.output;

  const std::vector<io::QuantizedEntry> entries = io::read_quantized(good);
  const auto check_changed = [&](const std::string& name, const auto& change, const std::string& expected) {
    std::vector<io::QuantizedEntry> changed = entries;
    change(changed);
    const std::string file = path(name + ".safetensors");
    io::write_quantized(file, changed);
    const auto r = run_nibble("golden-quant --tensor " + path("x.npy") + " --check " + file);
    SCOPED_TRACE(name + "\n" + r.output);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find(expected), std::string::npos);
  };
  const QuantizedTensor& row = entries[0].tensor;
  const auto at = [&](int64_t r, int64_t c) { return static_cast<size_t>(r * row.cols + c); };
  check_changed(
      "code",
      [&](std::vector<io::QuantizedEntry>& e) {
        e[0].tensor.codes[at(2, 7)] ^= 1u;
        e[0].tensor.codes[at(5, 1)] ^= 8u;
      },
      "rowwise [32 x 80] e2m1 1x16 nvfp4 sr B=8: DIFFERS: 2 of 2560 codes (first at [2, 7]: " +
          hex(row.codes[at(2, 7)] ^ 1u) + ", expected " + hex(row.codes[at(2, 7)]) + ")");
  check_changed(
      "scale", [&](std::vector<io::QuantizedEntry>& e) { e[1].tensor.scales[5] ^= 1u; },
      "colwise [80 x 32] (transposed) e2m1 1x16 nvfp4 sr B=8: DIFFERS: 1 of 160 block scales (first at block [2, 1]");
  check_changed(
      "tensor_scale", [&](std::vector<io::QuantizedEntry>& e) { e[0].tensor.tensor.encode *= 2.0f; },
      "rowwise [32 x 80] e2m1 1x16 nvfp4 sr B=8: DIFFERS: tensor scale {");
  // The settings come from the file: the same codes recorded under another seed differ from golden's.
  check_changed(
      "seed", [&](std::vector<io::QuantizedEntry>& e) { e[0].tensor.config.seed = 10; },
      "rowwise [32 x 80] e2m1 1x16 nvfp4 sr B=8: DIFFERS: ");
  check_changed(
      "seed_summary", [&](std::vector<io::QuantizedEntry>& e) { e[1].tensor.config.seed = 10; },
      "1 of 2 quantized tensors in " + path("seed_summary.safetensors") + " differ from golden");
}

// The policies: the file records them, holds golden's quantization under them (the tensor's
// NaN makes every nvfp4 scale NaN under propagate, as in Transformer Engine's reference;
// under mx-floor it stays in its block), --check passes, and the same codes recorded under
// the default policies differ from golden's.
TEST_F(GoldenQuantCli, PoliciesAreRecordedAndChecked) {
  const std::string out = path("policy.safetensors");
  for (const char* scale : {"nvfp4", "mx-floor"}) {
    const auto r = run_nibble("golden-quant --tensor " + path("x.npy") + " --scale " + scale +
                              " --zero signed --nonfinite propagate --colwise --out " + out);
    SCOPED_TRACE(std::string(scale) + "\n" + r.output);
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_NE(r.output.find(std::string(scale) + " rne zero=signed nonfinite=propagate (golden)"), std::string::npos);
    QuantConfig cfg;
    cfg.scale = *parse_scale_mode(scale);
    cfg.policy = QuantPolicy{ZeroPolicy::kSigned, NonFinitePolicy::kPropagate};
    const std::vector<io::QuantizedEntry> entries = io::read_quantized(out);
    ASSERT_EQ(entries.size(), 2u);
    for (const io::QuantizedEntry& e : entries) EXPECT_EQ(e.tensor.config.policy, cfg.policy);
    const QuantizedTensor want = quantize(x_.data(), kRows, kCols, cfg);
    expect_same(entries[0].tensor, want);
    expect_same(entries[1].tensor, quantize(transposed().data(), kCols, kRows, cfg));
    if (cfg.scale == ScaleMode::kNVFP4) {
      EXPECT_TRUE(std::isnan(want.tensor.encode));
      EXPECT_EQ(std::count(want.scales.begin(), want.scales.end(), 0x7Fu), static_cast<long>(want.scales.size()));
    } else {
      EXPECT_GT(std::count(want.codes.begin(), want.codes.end(), 8), 0) << "no negative zero to compare";
    }
    const auto ok = run_nibble("golden-quant --tensor " + path("x.npy") + " --check " + out);
    EXPECT_EQ(ok.exit_code, 0) << ok.output;

    std::vector<io::QuantizedEntry> as_default = entries;
    for (io::QuantizedEntry& e : as_default) e.tensor.config.policy = QuantPolicy{};
    const std::string changed = path("policy_default.safetensors");
    io::write_quantized(changed, as_default);
    const auto bad = run_nibble("golden-quant --tensor " + path("x.npy") + " --check " + changed);
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
  }
}

TEST_F(GoldenQuantCli, BadInvocationsExitTwoWithAMessage) {
  const std::string x = path("x.npy");
  const std::string good = path("bad_base.safetensors");
  ASSERT_EQ(run_nibble("golden-quant --tensor " + x + " --out " + good).exit_code, 0);
  std::vector<float> other(16 * 80, 1.0f);
  io::write_npy(path("other.npy"), {16, 80}, other.data());
  std::vector<float> odd(40 * 32, 1.0f);
  io::write_npy(path("odd.npy"), {40, 32}, odd.data());
  const std::vector<UsageCase> cases = {
      {"--tensor " + x, "golden-quant takes --out FILE or --check FILE"},
      {"--tensor " + x + " --out " + path("a.safetensors") + " --check " + good, "--out excludes --check"},
      {"--tensor " + x + " --check " + good + " --format e1m2", "--format excludes --check"},
      {"--tensor " + x + " --check " + good + " --colwise", "--colwise excludes --check"},
      {"--tensor " + x + " --check " + path("missing.safetensors"), "cannot open for reading"},
      {"--tensor " + x + " --check " + x, "a quantized-tensor file is a .safetensors file"},
      {"--tensor " + x + " --out " + path("q.npy"), "a quantized-tensor file is a .safetensors file"},
      {"--tensor " + x + " --out " + path("no/such/dir/q.safetensors"),
       "--out: cannot open '" + path("no/such/dir/q.safetensors") + "' for writing"},
      {"--tensor " + x + " --format e9 --out " + path("a.safetensors"), "unknown format 'e9'"},
      {"--tensor " + x + " --sr-bits 9 --out " + path("a.safetensors"), "stochastic-rounding bits must be in 1..8"},
      {"--tensor " + path("odd.npy") + " --rht 64 --out " + path("a.safetensors"), "multiple of"},
      {"--tensor " + path("odd.npy") + " --rht 32 --colwise --out " + path("a.safetensors"), "the transposed tensor: "},
      {"--tensor " + path("other.npy") + " --check " + good, "'rowwise' is [32 x 80], but " + path("other.npy") +
                                                                  " makes it [16 x 80]"},
      {"--tensor " + path("missing.npy") + " --out " + path("a.safetensors"), "cannot open for reading"},
      {"--tensor " + x + " --zero keep --out " + path("a.safetensors"), "--zero: unknown policy 'keep'"},
      {"--tensor " + x + " --nonfinite ieee --out " + path("a.safetensors"), "--nonfinite: unknown policy 'ieee'"},
      {"--tensor " + x + " --check " + good + " --zero signed", "--zero excludes --check"},
  };
  EXPECT_EQ(expect_usage_errors("golden-quant", cases), 17);
}

}  // namespace
}  // namespace nibble::test
