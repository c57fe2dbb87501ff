// `nibble golden-dequant` end to end: golden's dequantization of a tensor of
// a quantized-tensor file, written as .npy, equal to golden dequantize of that
// tensor; --check passes on it, lets any NaN match any NaN and names the first
// differing element; bad invocations exit 2 with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "golden_files_fixture.h"
#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"
#include "nibble/quantize.h"
#include "run_command.h"

namespace nibble::test {
namespace {

class GoldenDequantCli : public GoldenFilesCli {};

// Golden dequantize of entry `name` of a quantized-tensor file.
std::vector<float> golden_dequantized(const std::string& file, const std::string& name, int64_t* rows, int64_t* cols) {
  for (const io::QuantizedEntry& e : io::read_quantized(file)) {
    if (e.name != name) continue;
    *rows = e.tensor.rows;
    *cols = e.tensor.cols;
    return dequantize(e.tensor);
  }
  ADD_FAILURE() << file << " has no entry " << name;
  return {};
}

TEST_F(GoldenDequantCli, WritesGoldensDequantizationOfEachEntryAndChecksIt) {
  const struct {
    const char* settings;
    const char* entry;
    bool rht;
  } runs[] = {
      {"--format e1m2 --scale fp32 --rounding sr --rht 16 --seed 3", "rowwise", true},  // UFP4's dY
      {"--format e2m1 --scale nvfp4", "rowwise", false},
      {"--format int4 --scale mx-floor --block 16x16 --colwise", "colwise", false},
      {"--format e2m1 --scale mx-ceil --block 1x32 --colwise", "rowwise", false},
  };
  int n = 0;
  for (const auto& run : runs) {
    SCOPED_TRACE(std::string(run.settings) + " " + run.entry);
    const std::string q = quantized("a", run.settings, "q.safetensors");
    const std::string out = path("d.npy");
    const auto r = run_nibble("golden-dequant --quantized " + q + " --name " + run.entry + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("(values in the RHT domain") != std::string::npos, run.rht) << r.output;
    int64_t rows = 0, cols = 0;
    const std::vector<float> want = golden_dequantized(q, run.entry, &rows, &cols);
    const bool transposed = std::string(run.entry) == "colwise";
    EXPECT_EQ(rows, transposed ? kK : kM);
    const io::Tensor got = io::read_npy(out);
    ASSERT_EQ(got.shape, (std::vector<int64_t>{rows, cols}));
    ASSERT_EQ(got.data.size(), want.size());
    size_t nan = 0, nonzero = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(bits(got.data[i]), bits(want[i])) << "element " << i;
      nan += std::isnan(want[i]) ? 1 : 0;
      nonzero += want[i] != 0.0f ? 1 : 0;
    }
    EXPECT_GT(nan, 0u) << "the block holding A's Inf";
    EXPECT_GT(nonzero, want.size() / 2);
    const auto check = run_nibble("golden-dequant --quantized " + q + " --name " + run.entry + " --check " + out);
    EXPECT_EQ(check.exit_code, 0) << check.output;
    EXPECT_NE(check.output.find(out + " vs golden: bit-exact"), std::string::npos) << check.output;
    ++n;
  }
  EXPECT_EQ(n, 4);
}

TEST_F(GoldenDequantCli, CheckMatchesAnyNanAndNamesTheFirstDifference) {
  const std::string q = quantized("a", "--format e1m2 --scale fp32", "q_check.safetensors");
  int64_t rows = 0, cols = 0;
  std::vector<float> d = golden_dequantized(q, "rowwise", &rows, &cols);
  ASSERT_EQ(rows, kM);
  const auto at = [&](int64_t r, int64_t c) { return static_cast<size_t>(r * cols + c); };
  ASSERT_TRUE(std::isnan(d[at(5, 0)])) << "row 5's first block holds A's Inf";
  const std::vector<float> want = d;
  const uint32_t payload = 0x7FC00123u;  // another NaN than golden's
  std::memcpy(&d[at(5, 0)], &payload, sizeof payload);
  io::write_npy(path("nan.npy"), {rows, cols}, d.data());
  const std::string base = "golden-dequant --quantized " + q + " --check ";
  const auto same = run_nibble(base + path("nan.npy"));
  EXPECT_EQ(same.exit_code, 0) << same.output;

  d[at(2, 17)] = std::nextafter(d[at(2, 17)], INFINITY);
  d[at(20, 70)] = d[at(20, 70)] == 0.0f ? 1.0f : -d[at(20, 70)];
  io::write_npy(path("changed.npy"), {rows, cols}, d.data());
  const auto r = run_nibble(base + path("changed.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_first_difference(r.output, "DIFFERS: 2 of 1920 elements (first at [2, 17]: ", d[at(2, 17)], want[at(2, 17)]);
}

TEST_F(GoldenDequantCli, BadInvocationsExitTwoWithAMessage) {
  const std::string q = quantized("a", "--format e1m2 --scale fp32 --colwise", "q_bad.safetensors");
  std::vector<float> wrong(static_cast<size_t>(kM * kM), 0.0f);
  io::write_npy(path("wrong.npy"), {kM, kM}, wrong.data());
  const std::string named = "--quantized " + q + " --name rowwise";
  const std::vector<UsageCase> cases = {
      {named, "golden-dequant takes --out FILE, --check FILE or both"},
      {"--out " + path("d.npy"), "--quantized is required"},
      {"--quantized " + q + " --out " + path("d.npy"),
       "--quantized " + q + ": name the quantized tensor to use; it holds rowwise, colwise"},
      {"--quantized " + q + " --name x --out " + path("d.npy"), "no quantized tensor 'x'; it holds rowwise, colwise"},
      {named + " --check " + path("wrong.npy"), "the tensor has shape [24, 24], expected [24, 80]"},
      {named + " --check " + path("missing.npy"), "cannot open for reading"},
      {"--quantized " + path("a.npy") + " --out " + path("d.npy"), "a quantized-tensor file is a .safetensors file"},
      {named + " --out " + path("no/such/dir/d.npy"), "cannot open"},
  };
  EXPECT_EQ(expect_usage_errors("golden-dequant", cases), 8);
}

}  // namespace
}  // namespace nibble::test
