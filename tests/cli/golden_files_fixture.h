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

  static constexpr uint32_t kSeed = 20261129;
  static constexpr int64_t kM = 24;
  static constexpr int64_t kN = 40;
  static constexpr int64_t kK = 80;  // five 16-wide blocks, two and a half 32-wide ones
  static inline std::filesystem::path dir_;
};

}  // namespace nibble::test
