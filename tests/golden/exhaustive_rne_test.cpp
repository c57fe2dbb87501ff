// Every binary32 bit pattern whose value lies in [-8, 8] (0x00000000..0x41000000
// and 0x80000000..0xC1000000, 2 * 0x41000001 patterns) goes through golden's
// convert_to_format(v, f, RNE) and must equal a brute-force oracle: the nearest
// of the format's 16 literal code values, ties to the even code, zero keeping
// the input's sign where the format has a negative zero.
//
// Why double distances decide correctly: a code value c is a multiple of 2^-2
// with |c| <= 8. For |v| >= 2^-21, v is a multiple of 2^(e-23) >= 2^-44 with
// |v| <= 8, so v - c is a multiple of 2^-44 below 2^5 in magnitude: at most 49
// significant bits, exact in double, and every comparison (ties included; they
// sit at dyadic midpoints such as 0.25 or 5) is exact. For |v| < 2^-21 the
// distances may round, but code 0 is nearer than any other code by more than
// 0.1, far beyond the rounding error, so the answer is still exact.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "reference.h"

namespace nibble {
namespace {

// The code values, written out (double, for speed). Negative zero is 0.0 here:
// the sign of a zero result is decided separately, from the input.
struct LiteralCodes {
  std::array<double, 16> value;
  double max_quantized;  // codes beyond it (INT4's -8) are never emitted
  int negative_zero;     // -1: none
};

const LiteralCodes& literal_codes(Format f) {
  static const LiteralCodes kE2M1 = {{0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6}, 6, 0x8};
  static const LiteralCodes kE1M2 = {
      {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 0, -0.25, -0.5, -0.75, -1, -1.25, -1.5, -1.75}, 1.75, 0x8};
  static const LiteralCodes kInt4 = {{0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1}, 7, -1};
  switch (f) {
    case Format::kE2M1: return kE2M1;
    case Format::kE1M2: return kE1M2;
    case Format::kInt4: return kInt4;
  }
  return kE2M1;
}

// The literal values as the quantizer sees them: a code it never emits
// (INT4's -8) is moved to infinity, out of every contest.
struct Candidates {
  std::array<double, 16> value{};
  int negative_zero = -1;
};

Candidates candidates(Format f) {
  const LiteralCodes& lit = literal_codes(f);
  Candidates c;
  for (size_t code = 0; code < 16; ++code) {
    const double v = lit.value[code];
    c.value[code] = std::fabs(v) <= lit.max_quantized ? v : std::numeric_limits<double>::infinity();
  }
  c.negative_zero = lit.negative_zero;
  return c;
}

// Brute force in two independent chains, the nearest even code and the nearest
// odd code (independent chains run twice as fast as one); the odd code wins
// only when strictly nearer, which is ties-to-even. Two even codes never tie
// unless they share a value (0x0 and 0x8), since neighbouring values always
// have codes of opposite parity.
uint8_t oracle(float x, const Candidates& c) {
  const double v = x;
  size_t even = 0;
  size_t odd = 1;
  double d_even = std::fabs(c.value[0] - v);
  double d_odd = std::fabs(c.value[1] - v);
  for (size_t code = 2; code < 16; code += 2) {
    const double de = std::fabs(c.value[code] - v);
    const double dd = std::fabs(c.value[code + 1] - v);
    if (de < d_even) {
      d_even = de;
      even = code;
    }
    if (dd < d_odd) {
      d_odd = dd;
      odd = code + 1;
    }
  }
  const size_t best = d_odd < d_even ? odd : even;
  if (c.value[best] == 0.0) {
    return std::signbit(x) && c.negative_zero >= 0 ? static_cast<uint8_t>(c.negative_zero) : uint8_t{0};
  }
  return static_cast<uint8_t>(best);
}

constexpr uint64_t kPositivePatterns = 0x41000000ull + 1;  // +0 .. +8
constexpr uint64_t kPatterns = 2 * kPositivePatterns;

uint32_t pattern_at(uint64_t i) {
  return static_cast<uint32_t>(i < kPositivePatterns ? i : 0x80000000ull + (i - kPositivePatterns));
}

struct Slice {
  uint64_t cases = 0;
  uint64_t mismatches = 0;
  uint32_t first_pattern = 0;
  uint8_t first_golden = 0;
  uint8_t first_oracle = 0;
};

Slice check_slice(Format f, uint64_t begin, uint64_t end) {
  const Candidates c = candidates(f);
  Slice s;
  for (uint64_t i = begin; i < end; ++i) {
    const float x = f32_from_bits(pattern_at(i));
    const uint8_t g = convert_to_format(x, f, Rounding::kNearestEven);
    const uint8_t o = oracle(x, c);
    ++s.cases;
    if (g != o && s.mismatches++ == 0) {
      s.first_pattern = pattern_at(i);
      s.first_golden = g;
      s.first_oracle = o;
    }
  }
  return s;
}

// Slices are contiguous and in order, so the first mismatch reported is the lowest index.
Slice check_all(Format f) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Slice> slices(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    const uint64_t begin = kPatterns * t / threads;
    const uint64_t end = kPatterns * (t + 1) / threads;
    workers.emplace_back([&slices, t, f, begin, end] { slices[t] = check_slice(f, begin, end); });
  }
  for (std::thread& w : workers) w.join();
  Slice total;
  for (const Slice& s : slices) {
    if (s.mismatches != 0 && total.mismatches == 0)
      total = Slice{0, 0, s.first_pattern, s.first_golden, s.first_oracle};
    total.cases += s.cases;
    total.mismatches += s.mismatches;
  }
  return total;
}

class ExhaustiveRne : public ::testing::TestWithParam<Format> {};

TEST_P(ExhaustiveRne, EveryFloatInMinus8To8MatchesTheOracle) {
  const Format f = GetParam();
  const auto start = std::chrono::steady_clock::now();
  const Slice total = check_all(f);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[  tally   ] %s: %llu cases, %llu mismatches, %.1f s on %u threads\n", std::string(name(f)).c_str(),
              static_cast<unsigned long long>(total.cases), static_cast<unsigned long long>(total.mismatches), seconds,
              std::max(1u, std::thread::hardware_concurrency()));
  RecordProperty("cases", std::to_string(total.cases));
  EXPECT_EQ(total.mismatches, 0u) << "first mismatch: input 0x" << std::hex << total.first_pattern << " golden 0x"
                                  << int{total.first_golden} << " oracle 0x" << int{total.first_oracle};
  ASSERT_EQ(total.cases, kPatterns);
}

// The oracle's literal doubles are the reference model's literal rationals.
TEST_P(ExhaustiveRne, OracleTableMatchesTheReferenceTable) {
  const Format f = GetParam();
  const LiteralCodes& lit = literal_codes(f);
  int cases = 0;
  for (uint8_t code = 0; code < 16; ++code) {
    EXPECT_EQ(reference::Rational(lit.value[code]), reference::code_values(f)[code])
        << name(f) << " code " << int{code};
    EXPECT_EQ(lit.negative_zero == code, reference::is_negative_zero(f, code)) << name(f) << " code " << int{code};
    ++cases;
  }
  EXPECT_EQ(reference::Rational(lit.max_quantized), reference::max_quantized_magnitude(f)) << name(f);
  ASSERT_GT(cases, 0);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, ExhaustiveRne, ::testing::ValuesIn(kAllFormats),
                         [](const ::testing::TestParamInfo<Format>& p) { return std::string(name(p.param)); });

}  // namespace
}  // namespace nibble
