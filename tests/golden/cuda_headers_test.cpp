// Golden against CUDA's own host-side conversions (cuda_fp4.h / cuda_fp8.h,
// compiled by g++, no GPU), over every one of the 2^32 binary32 bit patterns:
//   __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)  vs  convert_to_format(x, E2M1, RNE)
//   __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)    vs  encode_e4m3(x)
// Under g++ the headers take their portable C++ path (the PTX cvt path needs
// __CUDA_ARCH__), so no extra defines are needed.
//
// NaN: golden's convert_to_format is defined for non-NaN input only (NaN
// blocks get the NaN scale and never reach it), so NaN patterns are left out
// of the fp4 comparison; the test counts them and prints CUDA's answers
// (its host code sends every NaN, either sign, to +6 = code 0x7). For fp8 both
// sides send every NaN, either sign, to 0x7F, and NaN stays in the comparison.
// +-Inf saturates to +-6 (0x7 / 0xF) and +-448 (0x7E / 0xFE) on both sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

#if defined(NIBBLE_HAVE_CUDA_HEADERS)
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace nibble {
namespace {

#if defined(NIBBLE_HAVE_CUDA_HEADERS)

constexpr uint64_t kAllPatterns = uint64_t{1} << 32;

bool is_nan_pattern(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

struct Sweep {
  uint64_t compared = 0;
  uint64_t mismatches = 0;
  uint32_t first_pattern = 0;
  uint32_t first_golden = 0;
  uint32_t first_cuda = 0;
  std::array<uint64_t, 256> nan_results{};  // CUDA's answer for NaN inputs left out of the comparison

  void record(uint32_t u, uint32_t golden, uint32_t cuda) {
    ++compared;
    if (golden != cuda && mismatches++ == 0) {
      first_pattern = u;
      first_golden = golden;
      first_cuda = cuda;
    }
  }
  void merge(const Sweep& s) {
    if (mismatches == 0 && s.mismatches != 0) {
      first_pattern = s.first_pattern;
      first_golden = s.first_golden;
      first_cuda = s.first_cuda;
    }
    compared += s.compared;
    mismatches += s.mismatches;
    for (size_t i = 0; i < nan_results.size(); ++i) nan_results[i] += s.nan_results[i];
  }
};

Sweep fp4_slice(uint64_t begin, uint64_t end) {
  Sweep s;
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t u = static_cast<uint32_t>(i);
    const float x = f32_from_bits(u);
    const uint32_t cuda = __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
    if (is_nan_pattern(u)) {
      ++s.nan_results[cuda & 0xFFu];
      continue;
    }
    s.record(u, convert_to_format(x, Format::kE2M1, Rounding::kNearestEven), cuda);
  }
  return s;
}

Sweep fp8_slice(uint64_t begin, uint64_t end) {
  Sweep s;
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t u = static_cast<uint32_t>(i);
    const float x = f32_from_bits(u);
    s.record(u, encode_e4m3(x), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
  }
  return s;
}

// Contiguous slices merged in order: the first mismatch reported is the lowest pattern.
Sweep sweep_all(Sweep (*slice)(uint64_t, uint64_t)) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Sweep> parts(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    const uint64_t begin = kAllPatterns * t / threads;
    const uint64_t end = kAllPatterns * (t + 1) / threads;
    workers.emplace_back([&parts, slice, t, begin, end] { parts[t] = slice(begin, end); });
  }
  for (std::thread& w : workers) w.join();
  Sweep total;
  for (const Sweep& p : parts) total.merge(p);
  return total;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

Sweep timed_sweep(const char* what, Sweep (*slice)(uint64_t, uint64_t)) {
  const auto start = std::chrono::steady_clock::now();
  const Sweep s = sweep_all(slice);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[  tally   ] %s: %llu compared, %llu mismatches, %.1f s on %u threads\n", what,
              static_cast<unsigned long long>(s.compared), static_cast<unsigned long long>(s.mismatches), seconds,
              std::max(1u, std::thread::hardware_concurrency()));
  ::testing::Test::RecordProperty("cases", std::to_string(s.compared));
  return s;
}

std::string nan_summary(const Sweep& s) {
  std::string out;
  for (size_t code = 0; code < s.nan_results.size(); ++code) {
    if (s.nan_results[code] != 0)
      out += hex(static_cast<uint32_t>(code)) + ":" + std::to_string(s.nan_results[code]) + " ";
  }
  return out;
}

TEST(CudaHeaders, Fp4E2M1RoundNearestMatchesGoldenOnEveryFloat) {
  const Sweep s = timed_sweep("fp4 e2m1 rn", fp4_slice);
  const std::string nans = nan_summary(s);
  std::printf("[  tally   ] CUDA fp4 result for the NaN inputs left out (code:count): %s\n", nans.c_str());
  ::testing::Test::RecordProperty("cuda_fp4_nan_results", nans);
  EXPECT_EQ(s.mismatches, 0u) << "first mismatch: input " << hex(s.first_pattern) << " golden " << hex(s.first_golden)
                              << " cuda " << hex(s.first_cuda);
  uint64_t nan_inputs = 0;
  for (uint64_t n : s.nan_results) nan_inputs += n;
  EXPECT_EQ(nan_inputs, 2 * ((uint64_t{1} << 23) - 1));
  ASSERT_EQ(s.compared + nan_inputs, kAllPatterns);
}

TEST(CudaHeaders, Fp8E4M3SatfiniteMatchesGoldenOnEveryFloat) {
  const Sweep s = timed_sweep("fp8 e4m3 satfinite", fp8_slice);
  EXPECT_EQ(s.mismatches, 0u) << "first mismatch: input " << hex(s.first_pattern) << " golden " << hex(s.first_golden)
                              << " cuda " << hex(s.first_cuda);
  ASSERT_EQ(s.compared, kAllPatterns);
}

#else

TEST(CudaHeaders, Fp4AndFp8ConversionsMatchGolden) {
  GTEST_SKIP() << "CUDA headers (cuda_fp4.h) not found: configure with the CUDA toolkit's include directory "
                  "(e.g. /usr/local/cuda/include) visible to CMake to compare golden with CUDA's host conversions";
}

#endif

}  // namespace
}  // namespace nibble
