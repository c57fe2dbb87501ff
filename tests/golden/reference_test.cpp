// Golden against the independent exact-rational model (golden/reference), bit
// for bit: first operation by operation, then whole tensors over every
// format x scale mode x block shape x rounding x RHT, then GEMMs over every
// format pair and scale-mode pair. Seeds are fixed and printed; each test
// reports its case count, fails on the first mismatch (shown in hex) and on
// zero cases checked.
#include "reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"
#include "nibble/quantize.h"
#include "nibble/rht.h"
#include "nibble/scale.h"

namespace nibble {
namespace {

namespace ref = reference;

constexpr std::array<uint64_t, 4> kSeeds = {0x0ull, 0x9E3779B97F4A7C15ull, 0x1ull, 0xDEADBEEF00000001ull};
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kFltMax = std::numeric_limits<float>::max();
const float kNaN = f32_from_bits(0x7FC00000u);

// Integers and float bit patterns, in hex.
template <typename T>
std::string hex(T v) {
  uint64_t bits;
  if constexpr (std::is_same_v<T, float>) {
    bits = f32_bits(v);
  } else {
    bits = static_cast<uint64_t>(v);
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(bits));
  return buf;
}

// Counts cases; keeps the first mismatch's description. Float results compare
// bit for bit, NaNs included: the contract fixes every NaN to 0x7FC00000.
class Tally {
 public:
  void check(bool equal, const std::function<std::string()>& describe) {
    ++cases_;
    if (!equal && mismatches_++ == 0) first_ = describe();
  }
  void check_float(float golden, float reference, const std::function<std::string()>& describe) {
    check(f32_bits(golden) == f32_bits(reference), describe);
  }
  void finish(const std::string& what) {
    std::printf("[  tally   ] %s: %lld cases, %lld mismatches\n", what.c_str(), cases_, mismatches_);
    ::testing::Test::RecordProperty("cases", std::to_string(cases_));
    EXPECT_EQ(mismatches_, 0) << "first mismatch: " << first_;
    ASSERT_GT(cases_, 0) << what << " checked nothing";
  }

 private:
  long long cases_ = 0;
  long long mismatches_ = 0;
  std::string first_;
};

// Printed once per seeded test, so a failing run can be replayed.
void print_seeds() {
  std::string list;
  for (uint64_t seed : kSeeds) list += hex(seed) + " ";
  std::printf("[  seeds   ] %s\n", list.c_str());
  ::testing::Test::RecordProperty("seeds", list);
}

// Seeded inputs from mt19937_64's raw words only (its output is standardized;
// the <random> distributions are not).
class Inputs {
 public:
  explicit Inputs(uint64_t seed) : rng_(seed) {}
  uint64_t word() { return rng_(); }
  int integer(int lo, int hi) { return lo + static_cast<int>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }
  // Uniform in [-1, 1) on a 2^-23 grid.
  float unit() { return static_cast<float>(static_cast<int64_t>(rng_() >> 40) - (int64_t{1} << 23)) * 0x1p-23f; }
  float scaled(int lo_exp, int hi_exp) { return std::ldexp(unit(), integer(lo_exp, hi_exp)); }
  float finite_pattern() {
    for (;;) {
      const float x = f32_from_bits(static_cast<uint32_t>(rng_()));
      if (f32_is_finite(x)) return x;
    }
  }

 private:
  std::mt19937_64 rng_;
};

// ---- Tensors with every corner in them ----------------------------------------

enum class RowKind { kUniform, kWide, kDyadicTies, kTiny, kOutliers, kConstant, kHuge, kAnyPattern };
constexpr std::array<RowKind, 6> kTameRows = {RowKind::kUniform,  RowKind::kWide,     RowKind::kDyadicTies,
                                              RowKind::kOutliers, RowKind::kConstant, RowKind::kTiny};
constexpr std::array<RowKind, 8> kWildRows = {RowKind::kUniform, RowKind::kWide,      RowKind::kDyadicTies,
                                              RowKind::kTiny,    RowKind::kOutliers,  RowKind::kConstant,
                                              RowKind::kHuge,    RowKind::kAnyPattern};

// row_value is a per-row power of two times 3 (kConstant) or times 1 (kUniform's range).
float sample(RowKind kind, Inputs& in, int64_t col, float row_value) {
  switch (kind) {
    case RowKind::kUniform: return in.unit() * row_value;
    case RowKind::kWide: return in.scaled(-12, 12);
    case RowKind::kDyadicTies:
      return static_cast<float>(in.integer(-56, 56)) / 8.0f;  // exact midpoints under 2^k scales
    case RowKind::kTiny:
      return col % 2 == 0 ? in.scaled(-149, -118) : static_cast<float>(in.integer(-1024, 1024)) * 0x1p-149f;
    case RowKind::kOutliers: return col % 16 == 5 ? in.scaled(18, 20) : in.unit();
    case RowKind::kConstant: return 3.0f * row_value;
    case RowKind::kHuge: return col == 0 ? kFltMax : (col == 1 ? -kFltMax : in.scaled(120, 127));
    case RowKind::kAnyPattern: return in.finite_pattern();
  }
  return 0.0f;
}

// Rows cycle through the kinds (shifted by the seed); a NaN, +Inf and -Inf each
// poison one block, and rows 16..31 x cols 32..63 form an all-zero tile.
std::vector<float> make_tensor(uint64_t seed, int64_t rows, int64_t cols, bool wild, bool specials) {
  Inputs in(seed);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  const size_t kinds = wild ? kWildRows.size() : kTameRows.size();
  for (int64_t r = 0; r < rows; ++r) {
    const RowKind kind = (wild ? kWildRows.data() : kTameRows.data())[(static_cast<size_t>(r) + seed) % kinds];
    const float row_value = std::ldexp(1.0f, in.integer(-6, 6));
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(r * cols + c)] = sample(kind, in, c, row_value);
  }
  if (!specials) return x;
  x[3] = kNaN;
  x[static_cast<size_t>(5 * cols + cols - 1)] = kInf;
  x[static_cast<size_t>(6 * cols + 17)] = -kInf;
  for (int64_t r = 16; r < std::min<int64_t>(rows, 32); ++r) {
    for (int64_t c = 32; c < std::min<int64_t>(cols, 64); ++c) x[static_cast<size_t>(r * cols + c)] = 0.0f;
  }
  return x;
}

ref::Config to_reference(const QuantConfig& c) {
  ref::Config r;
  r.format = c.format;
  r.block = c.block;
  r.scale = c.scale;
  r.rounding = c.rounding;
  r.sr_bits = c.sr_bits;
  r.rht_size = c.rht.size;
  r.rht_bf16 = c.rht.round_bf16;
  r.seed = c.seed;
  r.stream = c.stream;
  r.zero = c.policy.zero;
  r.nonfinite = c.policy.nonfinite;
  return r;
}

ref::Tensor to_reference(const QuantizedTensor& q) {
  ref::Tensor t;
  t.rows = q.rows;
  t.cols = q.cols;
  t.config = to_reference(q.config);
  t.codes = q.codes;
  t.scales = q.scales;
  t.tensor = {q.tensor.encode, q.tensor.decode};
  return t;
}

std::string describe(const QuantConfig& c) {
  return std::string(name(c.format)) + " " + std::string(name(c.scale)) + " " + std::string(name(c.block)) + " " +
         std::string(name(c.rounding)) + " B=" + std::to_string(c.sr_bits) + " rht=" + std::to_string(c.rht.size) +
         (c.rht.round_bf16 ? "+bf16" : "") + " seed=" + hex(c.seed) + " stream=" + std::to_string(c.stream) +
         " zero=" + std::string(name(c.policy.zero)) + " nonfinite=" + std::string(name(c.policy.nonfinite));
}

// ---- Operation by operation ------------------------------------------------------

TEST(Reference, CodeTablesMatchGoldenDecode) {
  Tally t;
  for (Format f : kAllFormats) {
    t.check(f32_bits(max_value(f)) == f32_bits(ref::to_binary32(ref::max_quantized_magnitude(f))),
            [&] { return std::string(name(f)) + " max_value " + hex(max_value(f)); });
    for (uint8_t code = 0; code < 16; ++code) {
      const float expect = ref::to_binary32(ref::code_values(f)[code], ref::is_negative_zero(f, code));
      t.check(f32_bits(decode_value(f, code)) == f32_bits(expect), [&] {
        return std::string(name(f)) + " code " + hex(code) + ": golden " + hex(decode_value(f, code)) + " reference " +
               hex(expect);
      });
    }
  }
  t.finish("code tables");
}

TEST(Reference, RoundToF32MatchesExactRounding) {
  print_seeds();
  Tally t;
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + hex(seed));
    Inputs in(seed);
    for (int i = 0; i < 20000; ++i) {
      const bool neg = (in.word() & 1u) != 0;
      const uint64_t mag = in.word() >> in.integer(0, 63);
      const int exp2 = in.integer(-250, 140);
      const float g = round_to_f32(neg, mag, exp2);
      ref::Rational scaled(mpz_class(static_cast<unsigned long>(mag)));
      if (exp2 >= 0) mpq_mul_2exp(scaled.get_mpq_t(), scaled.get_mpq_t(), static_cast<mp_bitcnt_t>(exp2));
      if (exp2 < 0) mpq_div_2exp(scaled.get_mpq_t(), scaled.get_mpq_t(), static_cast<mp_bitcnt_t>(-exp2));
      if (neg) scaled = -scaled;
      const float r = ref::to_binary32(scaled, neg);
      t.check(f32_bits(g) == f32_bits(r), [&] {
        return "round_to_f32(" + std::to_string(neg) + ", " + hex(mag) + ", " + std::to_string(exp2) + "): golden " +
               hex(g) + " reference " + hex(r);
      });
    }
  }
  t.finish("round_to_f32");
}

TEST(Reference, Bf16RoundingMatches) {
  print_seeds();
  Tally t;
  const std::vector<uint32_t> edges = {0x00008000u, 0x00018000u, 0x7F7F8000u, 0x7F7FFFFFu, 0x7F7F7FFFu, 0x3F808000u,
                                       0x3F818000u, 0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x00000000u, 0x80000000u};
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + hex(seed));
    Inputs in(seed);
    std::vector<uint32_t> patterns = edges;
    for (int i = 0; i < 20000; ++i) {
      const uint32_t u = static_cast<uint32_t>(in.word());
      patterns.push_back(i % 2 == 0 ? u : ((u & 0xFFFF0000u) | 0x8000u));  // half the cases exact ties
    }
    for (uint32_t u : patterns) {
      const float g = round_to_bf16(f32_from_bits(u));
      const float r = ref::to_bfloat16(f32_from_bits(u));
      const bool equal = f32_bits(g) == f32_bits(r);
      t.check(equal, [&] { return "round_to_bf16(" + hex(u) + "): golden " + hex(g) + " reference " + hex(r); });
    }
  }
  t.finish("round_to_bf16");
}

// Every code value, every midpoint between two code values and the floats either
// side of it, signed zeros, +-Inf, +-FLT_MAX and the smallest subnormal.
std::vector<float> element_edge_values(Format f) {
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, kFltMax, -kFltMax, 0x1p-149f, -0x1p-149f};
  const std::array<ref::Rational, 16>& values = ref::code_values(f);
  for (const ref::Rational& a : values) {
    for (const ref::Rational& b : values) {
      const float mid = ref::to_binary32((a + b) / 2);
      for (float x : {mid, std::nextafter(mid, kInf), std::nextafter(mid, -kInf)}) v.push_back(x);
    }
  }
  return v;
}

TEST(Reference, ConvertToFormatMatches) {
  print_seeds();
  Tally t;
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + hex(seed));
    Inputs in(seed);
    for (Format f : kAllFormats) {
      std::vector<float> xs = element_edge_values(f);
      for (int i = 0; i < 4000; ++i) xs.push_back(i % 2 == 0 ? in.scaled(-6, 4) : in.finite_pattern());
      for (float x : xs) {
        const uint8_t g = convert_to_format(x, f, Rounding::kNearestEven);
        const uint8_t r = ref::convert_nearest_even(x, f);
        t.check(g == r, [&] {
          return std::string(name(f)) + " rne(" + hex(x) + "): golden " + hex(g) + " reference " + hex(r);
        });
        const int bits = in.integer(1, 8);
        const uint32_t random = static_cast<uint32_t>(in.word() >> (64 - bits));
        const uint8_t gs = convert_to_format(x, f, Rounding::kStochastic, random, bits);
        const uint8_t rs = ref::convert_stochastic(x, f, random, bits);
        t.check(gs == rs, [&] {
          return std::string(name(f)) + " sr(" + hex(x) + ", r=" + hex(random) + ", B=" + std::to_string(bits) +
                 "): golden " + hex(gs) + " reference " + hex(rs);
        });
      }
    }
  }
  t.finish("convert_to_format");
}

TEST(Reference, E4M3EncodeAndScaleDecodeMatch) {
  print_seeds();
  Tally t;
  for (uint32_t code = 0; code < 256; ++code) {
    for (ScaleFormat sf : {ScaleFormat::kE4M3, ScaleFormat::kUE8M0}) {
      const float g = decode_scale(sf, code);
      const float r = ref::scale_value(sf, code);
      t.check_float(g, r, [&] {
        return std::string(name(sf)) + " decode " + hex(code) + ": golden " + hex(g) + " reference " + hex(r);
      });
    }
    const float v = ref::scale_value(ScaleFormat::kE4M3, code);
    const float next = ref::scale_value(ScaleFormat::kE4M3, code + 1);
    std::vector<float> xs = {v, -v};
    if (!std::isnan(v) && !std::isnan(next) && code != 0x7F) {
      const float mid = ref::to_binary32((ref::exact(v) + ref::exact(next)) / 2);
      for (float x : {mid, std::nextafter(mid, kInf), std::nextafter(mid, -kInf)}) xs.insert(xs.end(), {x, -x});
    }
    for (float x : xs) {
      if (std::isnan(x)) continue;  // the NaN codes' values; NaN input is checked below
      t.check(encode_e4m3(x) == ref::encode_e4m3(x), [&] {
        return "encode_e4m3(" + hex(x) + "): golden " + hex(encode_e4m3(x)) + " reference " + hex(ref::encode_e4m3(x));
      });
    }
  }
  Inputs in(kSeeds[1]);
  std::vector<float> xs = {kNaN, -kNaN, kInf, -kInf, 448.0f, 464.0f, 465.0f, 480.0f, 0x1p-10f, 0x1.8p-10f, -0x1p-10f};
  for (int i = 0; i < 20000; ++i) xs.push_back(i % 2 == 0 ? in.scaled(-12, 10) : in.finite_pattern());
  for (float x : xs) {
    t.check(encode_e4m3(x) == ref::encode_e4m3(x), [&] {
      return "encode_e4m3(" + hex(x) + "): golden " + hex(encode_e4m3(x)) + " reference " + hex(ref::encode_e4m3(x));
    });
  }
  t.finish("e4m3 and scale decode");
}

TEST(Reference, BlockAndTensorScalesMatch) {
  print_seeds();
  Tally t;
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + hex(seed));
    Inputs in(seed);
    std::vector<float> amaxes = {0.0f, 0x1p-149f, 0x1p-127f, 0x1p-126f, 1.0f, 6.0f, 7.0f, 1.75f, kFltMax};
    for (int i = 0; i < 300; ++i) amaxes.push_back(std::fabs(i % 2 == 0 ? in.scaled(-40, 40) : in.finite_pattern()));
    for (Format f : kAllFormats) {
      for (ScaleMode m : kAllScaleModes) {
        for (size_t i = 0; i < amaxes.size(); ++i) {
          const float amax_tensor = amaxes[i];
          const TensorScale gt = tensor_scale(m, f, amax_tensor);
          const ref::TensorScale rt = ref::tensor_scale(m, f, amax_tensor);
          t.check(f32_bits(gt.encode) == f32_bits(rt.encode) && f32_bits(gt.decode) == f32_bits(rt.decode), [&] {
            return std::string(name(f)) + " " + std::string(name(m)) + " tensor_scale(" + hex(amax_tensor) + ")";
          });
          const float amax = std::min(amaxes[(i * 7 + 3) % amaxes.size()], amax_tensor == 0.0f ? kFltMax : amax_tensor);
          const BlockScale gb = block_scale(m, f, amax, gt);
          const ref::BlockScale rb = ref::block_scale(m, f, amax, rt);
          t.check(gb.code == rb.code && f32_bits(gb.decode) == f32_bits(rb.decode) &&
                      f32_bits(gb.encode) == f32_bits(rb.encode),
                  [&] {
                    return std::string(name(f)) + " " + std::string(name(m)) + " block_scale(amax " + hex(amax) +
                           ", tensor amax " + hex(amax_tensor) + "): golden {" + hex(gb.code) + ", " + hex(gb.decode) +
                           ", " + hex(gb.encode) + "} reference {" + hex(rb.code) + ", " + hex(rb.decode) + ", " +
                           hex(rb.encode) + "}";
                  });
        }
        const BlockScale gn = nan_block_scale(m);
        const ref::BlockScale rn = ref::nonfinite_block_scale(m);
        t.check(gn.code == rn.code && std::isnan(gn.decode) && std::isnan(gn.encode),
                [&] { return std::string(name(m)) + " nan block scale " + hex(gn.code); });
        // The propagate policy's amaxes: NaN and +Inf, for the tensor and for a block under
        // every tensor level (a NaN one included).
        for (float amax_tensor : {kNaN, kInf, 1.0f, 0.0f}) {
          const TensorScale gt = tensor_scale(m, f, amax_tensor);
          const ref::TensorScale rt = ref::tensor_scale(m, f, amax_tensor);
          t.check(f32_bits(gt.encode) == f32_bits(rt.encode) && f32_bits(gt.decode) == f32_bits(rt.decode), [&] {
            return std::string(name(f)) + " " + std::string(name(m)) + " tensor_scale(" + hex(amax_tensor) +
                   "): golden " + hex(gt.encode) + " reference " + hex(rt.encode);
          });
          for (float amax : {kNaN, kInf, 0.0f, 3.0f}) {
            const BlockScale gb = block_scale(m, f, amax, gt);
            const ref::BlockScale rb = ref::block_scale(m, f, amax, rt);
            t.check(gb.code == rb.code && f32_bits(gb.decode) == f32_bits(rb.decode) &&
                        f32_bits(gb.encode) == f32_bits(rb.encode),
                    [&] {
                      return std::string(name(f)) + " " + std::string(name(m)) + " block_scale(amax " + hex(amax) +
                             ", tensor amax " + hex(amax_tensor) + "): golden {" + hex(gb.code) + ", " +
                             hex(gb.decode) + ", " + hex(gb.encode) + "} reference {" + hex(rb.code) + ", " +
                             hex(rb.decode) + ", " + hex(rb.encode) + "}";
                    });
          }
        }
      }
    }
  }
  t.finish("block and tensor scales");
}

TEST(Reference, PhiloxWordsAndRhtSignsMatch) {
  print_seeds();
  Tally t;
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + hex(seed));
    Inputs in(seed);
    t.check(rht_signs(seed) == ref::philox_words(seed, 0, 0, 1), [&] { return "rht_signs(" + hex(seed) + ")"; });
    for (int i = 0; i < 1000; ++i) {
      const uint64_t group = in.word() >> in.integer(0, 63);
      const uint32_t stream = static_cast<uint32_t>(in.word());
      t.check(philox4x32_10(seed, group, stream, PhiloxDomain::kStochasticRounding) ==
                  ref::philox_words(seed, group, stream, 0),
              [&] { return "philox(" + hex(seed) + ", " + hex(group) + ", " + hex(stream) + ")"; });
    }
  }
  t.finish("philox");
}

TEST(Reference, RhtGroupsMatch) {
  print_seeds();
  Tally t;
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + hex(seed));
    const PhiloxWords signs = rht_signs(seed);
    for (int n : {16, 32, 64, 128}) {
      for (bool bf16 : {false, true}) {
        std::vector<float> x = make_tensor(seed, 8, n, true, false);
        x[static_cast<size_t>(n + 1)] = kInf;
        x[static_cast<size_t>(2 * n + 2)] = kNaN;
        std::vector<float> g = x;
        std::vector<float> r = x;
        for (int row = 0; row < 8; ++row) {
          nibble::rht_group(&g[static_cast<size_t>(row * n)], n, signs, bf16);
          ref::rht_group(&r[static_cast<size_t>(row * n)], n, signs, bf16);
        }
        for (size_t i = 0; i < x.size(); ++i) {
          t.check_float(g[i], r[i], [&] {
            return "rht" + std::to_string(n) + (bf16 ? "+bf16" : "") + " element " + std::to_string(i) + ": golden " +
                   hex(g[i]) + " reference " + hex(r[i]);
          });
        }
      }
    }
  }
  t.finish("rht groups");
}

TEST(Reference, BlockProductMatches) {
  print_seeds();
  Tally t;
  Inputs in(kSeeds[3]);
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (int i = 0; i < 2000; ++i) {
        std::vector<uint8_t> ca(32), cb(32);
        ref::Rational exact_sum = 0;
        for (size_t k = 0; k < 32; ++k) {
          ca[k] = static_cast<uint8_t>(in.word() & 0xF);
          cb[k] = static_cast<uint8_t>(in.word() & 0xF);
          exact_sum += ref::code_values(fa)[ca[k]] * ref::code_values(fb)[cb[k]];
        }
        const int32_t p = block_partial_sum(ca.data(), fa, cb.data(), fb, 32);
        t.check(ref::Rational(p) * ref::Rational(ref::exact(std::ldexp(1.0f, lsb_exp(fa) + lsb_exp(fb)))) == exact_sum,
                [&] { return std::string(name(fa)) + "x" + std::string(name(fb)) + " partial sum " + hex(p); });
        const ScaleFormat sf = kAllScaleFormats[static_cast<size_t>(in.integer(0, 2))];
        const auto random_scale = [&] {
          if (sf == ScaleFormat::kFP32) return std::fabs(in.finite_pattern());
          return decode_scale(sf, static_cast<uint32_t>(in.word() & 0xFF));
        };
        const float sa = random_scale();
        const float sb = random_scale();
        const float g = block_product(p, fa, fb, sa, sb);
        const float r = ref::block_product(exact_sum, sa, sb);
        t.check_float(g, r, [&] {
          return std::string(name(fa)) + "x" + std::string(name(fb)) + " block_product(" + hex(p) + ", " + hex(sa) +
                 ", " + hex(sb) + "): golden " + hex(g) + " reference " + hex(r);
        });
      }
    }
  }
  t.finish("block products");
}

// ---- Whole tensors ---------------------------------------------------------------

void compare_quantized(const QuantizedTensor& g, const ref::Tensor& r, const std::vector<float>& x,
                       const std::string& what, Tally& t) {
  t.check(
      f32_bits(g.tensor.encode) == f32_bits(r.tensor.encode) && f32_bits(g.tensor.decode) == f32_bits(r.tensor.decode),
      [&] { return what + ": tensor scale " + hex(g.tensor.encode) + " vs " + hex(r.tensor.encode); });
  t.check(g.scales.size() == r.scales.size(), [&] { return what + ": scale count"; });
  for (size_t i = 0; i < std::min(g.scales.size(), r.scales.size()); ++i) {
    t.check(g.scales[i] == r.scales[i], [&] {
      return what + ": scale " + std::to_string(i) + " golden " + hex(g.scales[i]) + " reference " + hex(r.scales[i]);
    });
  }
  for (size_t i = 0; i < g.codes.size(); ++i) {
    t.check(g.codes[i] == r.codes[i], [&] {
      return what + ": element (" + std::to_string(i / static_cast<size_t>(g.cols)) + ", " +
             std::to_string(i % static_cast<size_t>(g.cols)) + ") input " + hex(x[i]) + " golden code " +
             hex(g.codes[i]) + " reference " + hex(r.codes[i]);
    });
  }
  const std::vector<float> gd = dequantize(g);
  const std::vector<float> rd = ref::dequantize(r);
  for (size_t i = 0; i < gd.size(); ++i) {
    t.check(f32_bits(gd[i]) == f32_bits(rd[i]), [&] {
      return what + ": dequantized element " + std::to_string(i) + " golden " + hex(gd[i]) + " reference " + hex(rd[i]);
    });
  }
}

int rht_size_for(size_t seed_index) { return std::array<int, 4>{16, 32, 64, 128}[seed_index % 4]; }

// Seed i turns on RHT size 16/32/64/128 (bf16 on odd i) and uses B = 8/1/3/5.
QuantConfig sweep_config(size_t seed_index, Format f, ScaleMode m, BlockShape b, Rounding rd, bool rht) {
  QuantConfig c;
  c.format = f;
  c.scale = m;
  c.block = b;
  c.rounding = rd;
  c.sr_bits = std::array<int, 4>{8, 1, 3, 5}[seed_index % 4];
  c.seed = kSeeds[seed_index];
  c.stream = std::array<uint32_t, 4>{0u, 7u, 1u, 0xFFFFFFFFu}[seed_index % 4];
  if (rht) c.rht = {rht_size_for(seed_index), seed_index % 2 == 1};
  return c;
}

// Every format x scale mode x block x rounding, each under every policy pair (the pair
// rotates with the block shape and rounding, so each format x mode meets all four). Under
// the propagate policy half the seeds use a tensor whose only specials are +-Inf (a NaN
// would make every nvfp4 scale NaN and hide the infinite amax).
TEST(Reference, QuantizeEveryConfiguration) {
  print_seeds();
  Tally t;
  for (size_t s = 0; s < kSeeds.size(); ++s) {
    SCOPED_TRACE("seed " + hex(kSeeds[s]));
    for (bool rht : {false, true}) {
      // 40 x 72 leaves partial blocks in both directions; RHT needs cols % n == 0.
      const int64_t rows = rht ? 32 : 40;
      const int64_t cols = rht ? std::max(64, rht_size_for(s)) : 72;
      const std::vector<float> x = make_tensor(kSeeds[s], rows, cols, s % 2 == 0, true);
      std::vector<float> x_inf = x;
      std::replace_if(x_inf.begin(), x_inf.end(), [](float v) { return std::isnan(v); }, -2.5f);
      for (Format f : kAllFormats) {
        for (ScaleMode m : kAllScaleModes) {
          size_t i = s;
          for (BlockShape b : kAllBlockShapes) {
            for (Rounding rd : {Rounding::kNearestEven, Rounding::kStochastic}) {
              QuantConfig cfg = sweep_config(s, f, m, b, rd, rht);
              cfg.policy = QuantPolicy{kAllZeroPolicies[i % 2], kAllNonFinitePolicies[(i / 2) % 2]};
              ++i;
              const bool inf_only = cfg.policy.nonfinite == NonFinitePolicy::kPropagate && s % 2 == 0;
              const std::vector<float>& in = inf_only ? x_inf : x;
              const QuantizedTensor g = quantize(in.data(), rows, cols, cfg);
              const ref::Tensor r = ref::quantize(in, rows, cols, to_reference(cfg));
              compare_quantized(g, r, in, describe(cfg) + (inf_only ? " (+-Inf, no NaN)" : ""), t);
            }
          }
        }
      }
    }
  }
  t.finish("quantize");
}

// Both models multiply golden's quantized operands, so this isolates dot.h
// (QuantizeEveryConfiguration covers the quantizer). Configurations rotate
// through seeds, block-shape pairs, RNE/SR and RHT sizes.
TEST(Reference, GemmEveryFormatPairAndScaleMode) {
  print_seeds();
  Tally t;
  size_t index = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (ScaleMode ma : kAllScaleModes) {
        for (ScaleMode mb : kAllScaleModes) {
          const size_t s = index % kSeeds.size();
          const bool rht = index % 5 == 4;
          SCOPED_TRACE("seed " + hex(kSeeds[s]));
          const BlockShape ba = kAllBlockShapes[index % 3];
          const BlockShape bb = kAllBlockShapes[(index / 3) % 3];
          const Rounding rd = index % 2 == 0 ? Rounding::kNearestEven : Rounding::kStochastic;
          QuantConfig ca = sweep_config(s, fa, ma, ba, rd, rht);
          QuantConfig cb = sweep_config(s, fb, mb, bb, rd, rht);
          cb.stream = ca.stream + 1;
          const int64_t k = rht ? std::max(64, rht_size_for(s)) : 72;
          const std::vector<float> xa = make_tensor(kSeeds[s], 20, k, index % 3 == 0, index % 4 == 1);
          const std::vector<float> xb = make_tensor(kSeeds[s] ^ 0x5555u, 18, k, index % 3 == 0, index % 4 == 1);
          const QuantizedTensor qa = quantize(xa.data(), 20, k, ca);
          const QuantizedTensor qb = quantize(xb.data(), 18, k, cb);
          const std::vector<float> g = gemm(qa, qb);
          const std::vector<float> r = ref::gemm(to_reference(qa), to_reference(qb));
          for (size_t i = 0; i < g.size(); ++i) {
            t.check_float(g[i], r[i], [&] {
              return describe(ca) + " x " + describe(cb) + ": C[" + std::to_string(i / 18) + "][" +
                     std::to_string(i % 18) + "] golden " + hex(g[i]) + " reference " + hex(r[i]);
            });
          }
          ++index;
        }
      }
    }
  }
  t.finish("gemm");
}

}  // namespace
}  // namespace nibble
