// `nibble golden-gemm` end to end: golden's C of two quantized-tensor files,
// written as .npy, equal to golden gemm of the files' tensors; --check passes
// on it, lets any NaN match any NaN and names the first differing output; bad
// invocations exit 2 with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "golden_files_fixture.h"
#include "nibble/dot.h"
#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"
#include "run_command.h"

namespace nibble::test {
namespace {

class GoldenGemmCli : public GoldenFilesCli {};

TEST_F(GoldenGemmCli, WritesGoldensGemmOfTheFilesAndChecksIt) {
  const struct {
    const char* a;
    const char* b;
  } pairs[] = {
      {"--format e1m2 --scale fp32", "--format int4 --scale fp32"},  // the UFP4 recipes' pair
      {"--format e2m1 --scale nvfp4 --rounding sr --rht 16 --seed 4", "--format e2m1 --scale nvfp4 --rht 16 --seed 4"},
      {"--format e2m1 --scale mx-floor --block 1x32", "--format e1m2 --scale mx-ceil --block 16x16"},
  };
  int n = 0;
  for (const auto& p : pairs) {
    SCOPED_TRACE(std::string(p.a) + " x " + p.b);
    const std::string qa = quantized("a", p.a, "qa.safetensors");
    const std::string qb = quantized("b", p.b, "qb.safetensors");
    const std::string c = path("c.npy");
    const auto r = run_nibble("golden-gemm --a " + qa + " --b " + qb + " --out " + c);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("C [24 x 40] = A [24 x 80] ("), std::string::npos) << r.output;
    const std::vector<float> want = gemm(io::read_quantized(qa)[0].tensor, io::read_quantized(qb)[0].tensor);
    const io::Tensor got = io::read_npy(c);
    ASSERT_EQ(got.shape, (std::vector<int64_t>{kM, kN}));
    size_t nan = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(bits(got.data[i]), bits(want[i])) << "output " << i;
      nan += std::isnan(want[i]) ? 1 : 0;
    }
    EXPECT_EQ(nan, static_cast<size_t>(kN)) << "row 5 of C, from A's Inf";
    const auto check = run_nibble("golden-gemm --a " + qa + " --b " + qb + " --check " + c);
    EXPECT_EQ(check.exit_code, 0) << check.output;
    EXPECT_NE(check.output.find(c + " vs golden: bit-exact"), std::string::npos) << check.output;
    ++n;
  }
  EXPECT_EQ(n, 3);
}

TEST_F(GoldenGemmCli, CheckMatchesAnyNanAndNamesTheFirstDifference) {
  const std::string qa = quantized("a", "--format e1m2 --scale fp32", "qa_check.safetensors");
  const std::string qb = quantized("b", "--format e1m2 --scale fp32 --colwise", "qb_check.safetensors");
  const std::vector<float> want = gemm(io::read_quantized(qa)[0].tensor, io::read_quantized(qb)[0].tensor);
  const std::string base = "golden-gemm --a " + qa + " --b " + qb + " --b-name rowwise --check ";

  std::vector<float> c = want;
  const auto at = [](int64_t m, int64_t n) { return static_cast<size_t>(m * kN + n); };
  ASSERT_TRUE(std::isnan(c[at(5, 0)]));
  uint32_t payload = 0x7FC00123u;  // another NaN than golden's
  std::memcpy(&c[at(5, 0)], &payload, sizeof payload);
  io::write_npy(path("nan.npy"), {kM, kN}, c.data());
  const auto same = run_nibble(base + path("nan.npy"));
  EXPECT_EQ(same.exit_code, 0) << same.output;

  c[at(3, 7)] = std::nextafter(c[at(3, 7)], INFINITY);
  c[at(10, 2)] = -c[at(10, 2)];
  io::write_npy(path("changed.npy"), {kM, kN}, c.data());
  const auto r = run_nibble(base + path("changed.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_first_difference(r.output, "DIFFERS: 2 of 960 outputs (first at [3, 7]: ", c[at(3, 7)], want[at(3, 7)]);
}

TEST_F(GoldenGemmCli, BadInvocationsExitTwoWithAMessage) {
  const std::string qa = quantized("a", "--format e1m2 --scale fp32", "qa_bad.safetensors");
  const std::string qb = quantized("b", "--format e1m2 --scale fp32 --colwise", "qb_bad.safetensors");
  const std::string rht = quantized("b", "--format e1m2 --scale fp32 --rht 16", "qb_rht.safetensors");
  std::vector<float> wrong(static_cast<size_t>(kM * kM), 0.0f);
  io::write_npy(path("wrong.npy"), {kM, kM}, wrong.data());
  const std::string ab = "--a " + qa + " --b " + qb;
  const std::vector<UsageCase> cases = {
      {ab + " --b-name rowwise", "golden-gemm takes --out FILE, --check FILE or both"},
      {"--b " + qb + " --b-name rowwise --out " + path("c.npy"), "--a is required"},
      {ab + " --out " + path("c.npy"), "--b " + qb + ": name the quantized tensor to use; it holds rowwise, colwise"},
      {ab + " --b-name x --out " + path("c.npy"), "no quantized tensor 'x'; it holds rowwise, colwise"},
      {ab + " --b-name colwise --out " + path("c.npy"), "must share the last (contraction) axis"},
      {"--a " + qa + " --b " + rht + " --out " + path("c.npy"), "operands must share the RHT size"},
      {ab + " --b-name rowwise --check " + path("wrong.npy"), "C has shape [24, 24], expected [24, 40]"},
      {ab + " --b-name rowwise --check " + path("missing.npy"), "cannot open for reading"},
      {"--a " + path("a.npy") + " --b " + qb + " --b-name rowwise --out " + path("c.npy"),
       "a quantized-tensor file is a .safetensors file"},
      {ab + " --b-name rowwise --out " + path("no/such/dir/c.npy"), "cannot open"},
  };
  EXPECT_EQ(expect_usage_errors("golden-gemm", cases), 10);
}

}  // namespace
}  // namespace nibble::test
