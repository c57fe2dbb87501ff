// The binary32 primitives and the scale decoder against golden: nibble_f32_round against
// round_to_f32, nibble_f32_mul / nibble_f32_add against the host's IEEE single operations
// (which golden's dot product and scales use), nibble_scale_decode against decode_scale.
// Seeded random operands are drawn from classes (zeros, subnormals, normals near the
// binade edges, huge, Inf, NaN) and mixed with directed ties and boundary cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "Vtb_f32.h"
#include "nibble/fp32.h"
#include "nibble/scale.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

constexpr uint32_t kCanonicalNaN = 0x7FC0'0000u;

bool is_nan_bits(uint32_t b) { return (b & 0x7F80'0000u) == 0x7F80'0000u && (b & 0x007F'FFFFu) != 0; }

class RtlF32 : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
    context_ = make_context(seed_);
    model_ = std::make_unique<Vtb_f32>(context_.get());
  }
  void TearDown() override { model_->final(); }

  // A binary32 operand from a random class.
  uint32_t operand() {
    const uint32_t sign = (rng_() & 1u) << 31;
    const uint32_t frac = static_cast<uint32_t>(rng_()) & 0x007F'FFFFu;
    switch (rng_() % 12) {
      case 0: return sign;                                         // +-0
      case 1: return sign | frac;                                  // subnormal
      case 2: return sign | (1u << 23) | (rng_() % 4 == 0 ? 0u : frac);  // smallest binade
      case 3: return sign | 0x7F80'0000u;                          // +-Inf
      case 4: return sign | 0x7F80'0000u | (frac | 1u);            // NaN, any payload
      case 5: return sign | (static_cast<uint32_t>(250 + rng_() % 5) << 23) | frac;  // huge
      case 6: return sign | (static_cast<uint32_t>(1 + rng_() % 30) << 23) | frac;   // tiny normal
      case 7: return sign | (static_cast<uint32_t>(rng_() % 255) << 23) | (frac & 0x7F'0000u);  // few bits
      case 8: return sign | 0x7F7F'FFFFu;                          // FLT_MAX
      default: return static_cast<uint32_t>(rng_()) & 0x7F7F'FFFFu ? static_cast<uint32_t>(rng_()) : sign;
    }
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vtb_f32> model_;
};

TEST_F(RtlF32, RoundMatchesGoldenRoundToF32) {
  Vtb_f32& m = *model_;
  uint64_t checked = 0;
  bool reported = false;
  auto check = [&](bool neg, uint64_t mag, int exp) {
    m.round_neg_i = neg;
    m.round_mag_i = mag;
    m.round_exp_i = static_cast<uint16_t>(exp) & 0xFFFu;
    m.eval();
    const uint32_t golden = f32_bits(round_to_f32(neg, mag, exp));
    ++checked;
    if (m.round_o != golden && !reported) {
      reported = true;
      ADD_FAILURE() << "first mismatch: round(neg=" << neg << ", mag=0x" << std::hex << mag << std::dec
                    << ", exp=" << exp << "): rtl " << hex32(m.round_o) << " golden " << hex32(golden);
    }
  };
  // Directed: every exponent across the subnormal, normal and overflow ranges for
  // magnitudes at the rounding boundaries (ties to even and odd, just above and below).
  const std::vector<uint64_t> edges = {
      0, 1, 2, 3, 0xFFFFFF, 0x1000000, 0x1000001, 0x1FFFFFF, 0x2000000, 0x2000001, 0x2000002,
      0x2000003, 0x3000000, 0x5000000, 0xFFFFFFFF, 0x800000000000ull, 0x800000800000ull,
      0x800001800000ull, 0xFFFFFF800000ull, 0x8000000000000000ull, 0x8000000000000001ull,
      0xFFFFFFFFFFFFFFFFull, 0x8000008000000000ull, 0x8000018000000000ull, 0x7FFFFF7FFFFFFFFFull};
  for (uint64_t mag : edges) {
    for (int exp = -2048 + 64; exp < 2047 - 64; exp += (exp < -260 || exp > 160) ? 37 : 1) {
      check(false, mag, exp);
      check(true, mag, exp);
    }
  }
  // Random magnitudes of every width and exponents where results are subnormal, normal or
  // overflow.
  for (int i = 0; i < 400000; ++i) {
    const unsigned width = static_cast<unsigned>(rng_() % 65);
    uint64_t mag = width == 0 ? 0 : (rng_() & low_mask(width));
    if (rng_() % 4 == 0 && width > 25) {  // force an exact tie below the kept 24 bits
      const unsigned msb = 63 - static_cast<unsigned>(__builtin_clzll(mag | 1));
      if (msb >= 25) mag = (mag & ~low_mask(msb - 24)) | (uint64_t{1} << (msb - 25));
    }
    const int exp = static_cast<int>(rng_() % 420) - 300;
    check(rng_() & 1u, mag, exp);
  }
  std::printf("[ cases    ] %llu roundings checked\n", static_cast<unsigned long long>(checked));
  ASSERT_GT(checked, 0u);
}

TEST_F(RtlF32, MulAndAddMatchHostIeee) {
  Vtb_f32& m = *model_;
  uint64_t checked = 0;
  bool reported_mul = false;
  bool reported_add = false;
  auto check = [&](uint32_t a, uint32_t b) {
    m.a_i = a;
    m.b_i = b;
    m.eval();
    const float fa = f32_from_bits(a);
    const float fb = f32_from_bits(b);
    const uint32_t mul = f32_bits(fa * fb);
    const uint32_t add = f32_bits(fa + fb);
    checked += 2;
    const bool mul_ok = same_f32(m.mul_o, mul) && (!is_nan_bits(m.mul_o) || m.mul_o == kCanonicalNaN);
    const bool add_ok = same_f32(m.add_o, add) && (!is_nan_bits(m.add_o) || m.add_o == kCanonicalNaN);
    if (!mul_ok && !reported_mul) {
      reported_mul = true;
      ADD_FAILURE() << "first mul mismatch: " << hex32(a) << " * " << hex32(b) << ": rtl " << hex32(m.mul_o)
                    << " host " << hex32(mul);
    }
    if (!add_ok && !reported_add) {
      reported_add = true;
      ADD_FAILURE() << "first add mismatch: " << hex32(a) << " + " << hex32(b) << ": rtl " << hex32(m.add_o)
                    << " host " << hex32(add);
    }
  };
  // Directed: zeros of both signs against everything special, x + (-x), exact halfway
  // products, overflow and gradual underflow.
  const std::vector<uint32_t> specials = {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
                                          0x00800001, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FFFFFFF, 0x7F7FFFFF,
                                          0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                                          0x34000000, 0x33800000, 0x3F000000, 0x4B800000, 0x0C000000, 0x3FC00000};
  for (uint32_t a : specials) {
    for (uint32_t b : specials) check(a, b);
  }
  for (int i = 0; i < 300000; ++i) {
    const uint32_t a = operand();
    uint32_t b = operand();
    switch (rng_() % 6) {
      case 0: b = a ^ 0x8000'0000u; break;                                   // x + (-x)
      case 1: b = (a ^ 0x8000'0000u) + static_cast<uint32_t>(rng_() % 5) - 2u; break;  // cancellation
      case 2: b = (a & 0xFF80'0000u) + ((static_cast<uint32_t>(rng_() % 30)) << 23) + (b & 0x7FFFFFu); break;
      default: break;
    }
    check(a, b);
  }
  std::printf("[ cases    ] %llu mul/add results checked\n", static_cast<unsigned long long>(checked));
  ASSERT_GT(checked, 0u);
}

TEST_F(RtlF32, ScaleDecodeMatchesGolden) {
  Vtb_f32& m = *model_;
  uint64_t checked = 0;
  bool reported = false;
  auto check = [&](ScaleFormat f, uint32_t code) {
    m.scale_format_i = static_cast<uint8_t>(f);
    m.scale_code_i = code;
    m.eval();
    const uint32_t golden = f32_bits(decode_scale(f, code));
    ++checked;
    const bool ok = same_f32(m.scale_o, golden) &&
                    (f == ScaleFormat::kFP32 || !is_nan_bits(m.scale_o) || m.scale_o == kCanonicalNaN);
    if (!ok && !reported) {
      reported = true;
      ADD_FAILURE() << "first mismatch: " << name(f) << " code 0x" << std::hex << code << ": rtl "
                    << hex32(m.scale_o) << " golden " << hex32(golden);
    }
  };
  for (uint32_t code = 0; code < 256; ++code) {
    check(ScaleFormat::kE4M3, code);
    check(ScaleFormat::kUE8M0, code);
  }
  for (int i = 0; i < 20000; ++i) check(ScaleFormat::kFP32, operand());
  std::printf("[ cases    ] %llu scale codes checked\n", static_cast<unsigned long long>(checked));
  ASSERT_GT(checked, 0u);
}

}  // namespace
}  // namespace nibble::rtl_test
