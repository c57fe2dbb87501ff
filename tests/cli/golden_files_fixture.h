// The fixture of the tests of the commands on quantized-tensor files
// (golden-gemm, golden-dequant): two seeded normal tensors A [24, 80] (one Inf,
// in row 5) and B [40, 80] as .npy files in a scratch directory of the suite,
// and golden-quant's file of either under given settings.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nibble/io/tensor_file.h"
#include "run_command.h"

namespace nibble::test {

class GoldenFilesCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
    dir_ = std::filesystem::temp_directory_path() / ("nibble_" + suite + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::printf("seed %u\n", kSeed);
    std::mt19937 rng(kSeed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const auto& [name, rows] : {std::pair{"a", kM}, std::pair{"b", kN}}) {
      std::vector<float> x(static_cast<size_t>(rows * kK));
      for (float& v : x) v = normal(rng);
      if (std::string(name) == "a") x[static_cast<size_t>(5 * kK + 3)] = INFINITY;  // a non-finite block in row 5
      io::write_npy(path(std::string(name) + ".npy"), {rows, kK}, x.data());
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string path(const std::string& file) { return (dir_ / file).string(); }

  // Golden-quant's file of tensor `name` under `settings`.
  static std::string quantized(const std::string& name, const std::string& settings, const std::string& file) {
    const auto r = run_nibble("golden-quant --tensor " + path(name + ".npy") + " " + settings + " --out " + path(file));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return path(file);
  }

  static uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
  }

  // A --check's report of a difference: `head` ("DIFFERS: 2 of 960 outputs
  // (first at [3, 7]: "), then the first differing value's bits and, after
  // ", expected ", golden's.
  static void expect_first_difference(const std::string& output, const std::string& head, float got, float want) {
    const size_t first = output.find(head);
    ASSERT_NE(first, std::string::npos) << output << "\nexpected " << head;
    char got_bits[16], want_bits[16];
    std::snprintf(got_bits, sizeof got_bits, "(0x%08x)", bits(got));
    std::snprintf(want_bits, sizeof want_bits, "(0x%08x)", bits(want));
    const size_t got_at = output.find(got_bits, first);
    ASSERT_NE(got_at, std::string::npos) << output << "\nexpected " << got_bits;
    const size_t expected_at = output.find(", expected ", got_at);
    ASSERT_NE(expected_at, std::string::npos) << output;
    EXPECT_NE(output.find(want_bits, expected_at), std::string::npos) << output << "\nexpected " << want_bits;
  }

  static constexpr uint32_t kSeed = 20261129;
  static constexpr int64_t kM = 24;
  static constexpr int64_t kN = 40;
  static constexpr int64_t kK = 80;  // five 16-wide blocks, two and a half 32-wide ones
  static inline std::filesystem::path dir_;
};

}  // namespace nibble::test
