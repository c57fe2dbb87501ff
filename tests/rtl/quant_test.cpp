// nibble_quantizer against golden's quantizer, bit for bit: the block-scale code and every
// element code against golden's quantize_block (tensor_scale for nvfp4), under both zero
// policies and both non-finite policies, with the SR bits drawn from golden's Philox layout. Six
// configurations run side by side (tb_quant.sv; the sixth has its dividers pipelined); each
// block goes to every configuration whose lanes and formats fit it. Also: golden quantize() of whole tensors block by block, and the
// `nibble vectors quantize` stream read back as a device reads it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "Vtb_quant.h"
#include "Vtb_quant_nibble_quant_pkg.h"
#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"
#include "nibble/power/area_flow.h"
#include "nibble/quantize.h"
#include "nibble/rht.h"
#include "nibble/scale.h"
#include "nibble/vectors.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

// tb_quant's instances: lanes, format mask and latency (instance 5 is the pipelined one).
constexpr unsigned kNumQuants = 6;
constexpr unsigned kMaxLanes = 32;
constexpr unsigned kQuantLanes[kNumQuants] = {32, 16, 16, 16, 16, 32};
constexpr unsigned kQuantMasks[kNumQuants] = {0b111, 0b111, 0b001, 0b010, 0b100, 0b111};
constexpr uint64_t kQuantLatency = Vtb_quant_nibble_quant_pkg::QuantLatency;
constexpr uint64_t kQuantPipeLatency = Vtb_quant_nibble_quant_pkg::QuantPipeLatency;
constexpr uint64_t kLatency[kNumQuants] = {kQuantLatency, kQuantLatency, kQuantLatency,
                                           kQuantLatency, kQuantLatency, kQuantPipeLatency};
static_assert(kQuantPipeLatency > kQuantLatency, "the pipelined quantizer has more stages");
static_assert(Vtb_quant_nibble_quant_pkg::QuantPipeDivStages == power::kQuantPipeDivStages,
              "nibble area --unit quantizer-pipe builds the quantizer this test checks");

// One block through the quantizer: its inputs and golden's result.
struct QBlock {
  Format format = Format::kE2M1;
  ScaleMode mode = ScaleMode::kFP32;
  Rounding rounding = Rounding::kNearestEven;
  int sr_bits = 8;
  QuantPolicy policy;
  TensorScale tensor;
  std::vector<uint32_t> x;       // at most kMaxLanes elements; the rest is zero padding
  std::vector<uint32_t> random;  // each element's B SR bits (0 under rne)
  uint32_t scale_code = 0;       // expected
  std::vector<uint8_t> codes;    // expected
  std::string what;
};

// golden's quantize() for one block: quantize_block under the block's configuration and policy.
void compute_expected(QBlock& b) {
  std::vector<float> xf(b.x.size());
  std::transform(b.x.begin(), b.x.end(), xf.begin(), f32_from_bits);
  QuantConfig cfg;
  cfg.format = b.format;
  cfg.scale = b.mode;
  cfg.rounding = b.rounding;
  cfg.sr_bits = b.sr_bits;
  cfg.policy = b.policy;
  b.codes.assign(b.x.size(), 0);
  b.scale_code = quantize_block(xf.data(), xf.size(), cfg, b.tensor, b.random.data(), b.codes.data()).code;
}

// The SR bits of elements 0..n-1 of a block whose first element is lane 0 of Philox group
// `group` (docs/numerics.md section 7): element i takes lane i % 16 of group + i / 16.
std::vector<uint32_t> philox_bits(size_t n, uint64_t seed, uint64_t group, uint32_t stream, int bits) {
  std::vector<uint32_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    const PhiloxWords w = philox4x32_10(seed, group + i / 16, stream, PhiloxDomain::kStochasticRounding);
    r[i] = sr_lane_bits(w, static_cast<int>(i % 16), bits);
  }
  return r;
}

bool fits(unsigned q, const QBlock& b) {
  return b.x.size() <= kQuantLanes[q] && ((kQuantMasks[q] >> static_cast<unsigned>(b.format)) & 1u) != 0;
}

std::string describe(const QBlock& b) {
  char head[160];
  std::snprintf(head, sizeof head, "%s %s %s B=%d zero %s nonfinite %s S_enc 0x%08x g 0x%08x, %zu elements",
                std::string(name(b.format)).c_str(), std::string(name(b.mode)).c_str(),
                std::string(name(b.rounding)).c_str(), b.sr_bits, std::string(name(b.policy.zero)).c_str(),
                std::string(name(b.policy.nonfinite)).c_str(), f32_bits(b.tensor.encode),
                f32_bits(b.tensor.decode), b.x.size());
  std::string s = std::string(head) + " (" + b.what + ")\n  x     ";
  char buf[16];
  for (uint32_t v : b.x) {
    std::snprintf(buf, sizeof buf, " %08x", v);
    s += buf;
  }
  s += "\n  rand  ";
  for (uint32_t v : b.random) {
    std::snprintf(buf, sizeof buf, " %02x", v);
    s += buf;
  }
  return s;
}

// Drives blocks through tb_quant with random bubbles and checks every output.
class QuantChecker {
 public:
  QuantChecker(uint64_t seed, std::mt19937_64& rng) : sim_(seed), rng_(rng) { sim_.reset(); }

  void run(const std::vector<QBlock>& blocks, unsigned bubble_percent) {
    for (const QBlock& b : blocks) {
      while (rng_() % 100 < bubble_percent) cycle_idle();
      drive(b);
    }
    for (uint64_t i = 0; i < kQuantPipeLatency + 3; ++i) cycle_idle();
    for (unsigned q = 0; q < kNumQuants; ++q) {
      EXPECT_TRUE(pending_[q].empty()) << "quantizer " << q << ": " << pending_[q].size() << " blocks never came";
    }
  }

  uint64_t checked() const { return checked_; }
  uint64_t per_quant(unsigned q) const { return per_quant_[q]; }
  uint64_t elements() const { return elements_; }

 private:
  struct Expected {
    const QBlock* block;
    uint64_t cycle;
  };

  void drive(const QBlock& b) {
    Vtb_quant& m = sim_.model();
    uint8_t valid = 0;
    for (unsigned q = 0; q < kNumQuants; ++q) {
      if (!fits(q, b)) continue;
      valid = static_cast<uint8_t>(valid | (1u << q));
      pending_[q].push_back({&b, sim_.cycles()});
    }
    m.valid_i = valid;
    m.format_i = static_cast<uint8_t>(b.format);
    m.mode_i = static_cast<uint8_t>(b.mode);
    m.rounding_i = static_cast<uint8_t>(b.rounding);
    m.zero_i = static_cast<uint8_t>(b.policy.zero);
    m.nonfinite_i = static_cast<uint8_t>(b.policy.nonfinite);
    m.sr_bits_i = static_cast<uint8_t>(b.sr_bits);
    m.s_enc_i = f32_bits(b.tensor.encode);
    m.g_i = f32_bits(b.tensor.decode);
    for (unsigned lane = 0; lane < kMaxLanes; ++lane) {
      set_field(m.x_i, 32 * lane, 32, lane < b.x.size() ? b.x[lane] : 0u);
      set_field(m.rand_i, 8 * lane, 8, lane < b.random.size() ? b.random[lane] : 0u);
    }
    step();
  }

  void cycle_idle() {
    Vtb_quant& m = sim_.model();
    m.valid_i = 0;
    // Garbage on the data inputs while idle: the quantizer must ignore it.
    m.mode_i = static_cast<uint8_t>(rng_() & 3u);
    m.zero_i = static_cast<uint8_t>(rng_() & 1u);
    m.nonfinite_i = static_cast<uint8_t>(rng_() & 1u);
    m.s_enc_i = static_cast<uint32_t>(rng_());
    set_field(m.x_i, 0, 32, static_cast<uint32_t>(rng_()));
    step();
  }

  void step() {
    sim_.tick();
    Vtb_quant& m = sim_.model();
    for (unsigned q = 0; q < kNumQuants; ++q) {
      if (((m.valid_o >> q) & 1u) == 0) continue;
      if (pending_[q].empty()) {
        ADD_FAILURE() << "quantizer " << q << ": unexpected valid_o in cycle " << sim_.cycles();
        continue;
      }
      const Expected e = pending_[q].front();
      pending_[q].pop_front();
      const QBlock& b = *e.block;
      ++checked_;
      ++per_quant_[q];
      elements_ += b.x.size();
      if (sim_.cycles() - e.cycle != kLatency[q] && !reported_latency_) {
        reported_latency_ = true;
        ADD_FAILURE() << "quantizer " << q << ": block presented in cycle " << e.cycle << " came out in cycle "
                      << sim_.cycles() << ", documented latency " << kLatency[q];
      }
      const uint32_t scale = static_cast<uint32_t>(field(m.scale_o, 32 * q, 32));
      std::string bad;
      if (scale != b.scale_code) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "scale code: rtl 0x%08x, golden 0x%08x", scale, b.scale_code);
        bad = buf;
      }
      for (unsigned lane = 0; lane < kMaxLanes && bad.empty(); ++lane) {
        const uint32_t code = static_cast<uint32_t>(field(m.codes_o, q * kMaxLanes * 4 + 4 * lane, 4));
        const uint32_t want = lane < b.codes.size() ? b.codes[lane] : 0u;
        if (code != want) {
          char buf[96];
          std::snprintf(buf, sizeof buf, "code[%u]: rtl 0x%x, golden 0x%x", lane, code, want);
          bad = buf;
        }
      }
      if (!bad.empty() && !reported_) {
        reported_ = true;
        ADD_FAILURE() << "first mismatch: quantizer " << q << " (" << kQuantLanes[q] << " lanes, mask 0x" << std::hex
                      << kQuantMasks[q] << std::dec << "), " << bad << "\n  " << describe(b);
      }
    }
  }

  ClockedSim<Vtb_quant> sim_;
  std::mt19937_64& rng_;
  std::deque<Expected> pending_[kNumQuants];
  uint64_t checked_ = 0, elements_ = 0;
  uint64_t per_quant_[kNumQuants] = {};
  bool reported_ = false, reported_latency_ = false;
};

// ---------------------------------------------------------------------------------------
// Random blocks
// ---------------------------------------------------------------------------------------
enum Pattern : unsigned {
  kGaussian,      // N(0, 1) * 2^e over a wide range of e
  kGridTop,       // amax exactly gmax * 2^k, or a few ulps either side (mx-ceil's boundary)
  kTies,          // elements on grid midpoints after scaling by the golden encode scale
  kSaturating,    // mx-floor values in (gmax, 2^(emax+1)), nvfp4 with a small tensor amax
  kSubnormal,     // block amax near the bottom of binary32: scale underflow, clamps
  kZero,          // +-0 only
  kNonFinite,     // a NaN or +-Inf among finite values
  kHuge,          // near FLT_MAX
  kAnyBits,       // random finite bit patterns, every binade in one block
  kOnGrid,        // grid values times a power of two
  kNumPatterns
};
const char* const kPatternNames[kNumPatterns] = {"gaussian", "grid top", "ties", "saturating", "subnormal scale",
                                                 "zero", "NaN/Inf", "huge", "any bits", "on grid"};

float grid_value(Format f, uint32_t units) { return static_cast<float>(units) * exp2_f32(lsb_exp(f)); }

QBlock random_block(Format f, ScaleMode mode, Rounding r, int bits, const QuantPolicy& policy, std::mt19937_64& rng) {
  QBlock b;
  b.format = f;
  b.mode = mode;
  b.rounding = r;
  b.sr_bits = bits;
  b.policy = policy;
  const unsigned len_pick = static_cast<unsigned>(rng() % 4);
  const size_t n = len_pick == 0 ? 32 : len_pick == 1 ? 16 : 1 + rng() % 32;
  const Pattern p = static_cast<Pattern>(rng() % kNumPatterns);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int e = static_cast<int>(rng() % 200) - 100;
  std::vector<float> x(n);
  for (float& v : x) v = std::ldexp(normal(rng), e);
  const float gmax = max_value(f);
  switch (p) {
    case kGaussian: break;
    case kGridTop: {
      const float top = std::ldexp(gmax, static_cast<int>(rng() % 80) - 40);
      for (float& v : x) v = top * std::ldexp(normal(rng), -2);
      const int ulps = static_cast<int>(rng() % 5) - 2;
      x[rng() % n] = f32_from_bits(static_cast<uint32_t>(static_cast<int64_t>(f32_bits(top)) + ulps)) *
                     (rng() % 2 ? -1.0f : 1.0f);
      break;
    }
    case kSaturating: {
      const float top = std::ldexp(1.0f, emax(f) + static_cast<int>(rng() % 60) - 30);
      for (float& v : x) v = top * (1.0f + std::ldexp(static_cast<float>(rng() % 1024), -10));
      break;
    }
    case kSubnormal: {
      const int e2 = -149 + static_cast<int>(rng() % 30);
      for (float& v : x) v = std::ldexp(normal(rng), e2);
      break;
    }
    case kZero:
      for (float& v : x) v = rng() % 2 ? -0.0f : 0.0f;
      break;
    case kNonFinite: {
      const float bad[] = {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY,
                           f32_from_bits(0x7F800001u | static_cast<uint32_t>(rng() & 0x3FFFFFu))};
      x[rng() % n] = bad[rng() % 4];
      break;
    }
    case kHuge:
      for (float& v : x) v = f32_from_bits((static_cast<uint32_t>(rng() & 1u) << 31) |
                                           (static_cast<uint32_t>(240 + rng() % 15) << 23) |
                                           (static_cast<uint32_t>(rng()) & 0x7FFFFFu));
      if (rng() % 2) x[0] = std::numeric_limits<float>::max();
      break;
    case kAnyBits:
      for (float& v : x) {
        uint32_t u = static_cast<uint32_t>(rng());
        if ((u & 0x7F800000u) == 0x7F800000u) u &= 0xFF7FFFFFu;
        v = f32_from_bits(u);
      }
      break;
    case kOnGrid: {
      const int k = static_cast<int>(rng() % 40) - 20;
      for (float& v : x) {
        v = std::ldexp(grid_value(f, static_cast<uint32_t>(rng() % (max_units(f) + 1))), k);
        if (rng() % 2) v = -v;
      }
      break;
    }
    case kTies:
    case kNumPatterns: break;
  }
  // The per-tensor scale: from a tensor amax around the block's (nvfp4), identity otherwise.
  // Under propagate the block's NaN or Inf is the tensor's amax too (S_enc = g = NaN, or 1).
  const float amax = scale_amax(x.data(), x.size(), NonFinitePolicy::kFinite);
  const float ieee_amax = scale_amax(x.data(), x.size(), NonFinitePolicy::kPropagate);
  if (mode == ScaleMode::kNVFP4 && policy.nonfinite == NonFinitePolicy::kPropagate && !f32_is_finite(ieee_amax)) {
    b.tensor = tensor_scale(mode, f, ieee_amax);
  } else if (mode == ScaleMode::kNVFP4 && policy.nonfinite == NonFinitePolicy::kPropagate && rng() % 16 == 0) {
    b.tensor = tensor_scale(mode, f, f32_from_bits(kCanonicalNaN));  // a NaN elsewhere in the tensor
  } else if (mode == ScaleMode::kNVFP4) {
    float amax_tensor = amax;
    switch (rng() % 6) {
      case 0: break;  // the block holds the tensor's amax
      case 1:         // a larger tensor
        amax_tensor = amax * std::ldexp(1.0f + static_cast<float>(rng() % 100) / 100.0f, static_cast<int>(rng() % 12));
        break;
      case 2: amax_tensor = amax * std::ldexp(1.0f, -static_cast<int>(rng() % 12)); break;  // E4M3 saturates
      case 3: amax_tensor = std::ldexp(normal(rng), static_cast<int>(rng() % 280) - 150); break;
      case 4: amax_tensor = 0.0f; break;  // S_enc = 1
      default:                            // S_enc overflows and is clamped to FLT_MAX
        amax_tensor = f32_from_bits(0x00000001u + static_cast<uint32_t>(rng() % 1000));
        break;
    }
    b.tensor = tensor_scale(mode, f, std::fabs(amax_tensor));
  }
  if (p == kTies && amax > 0.0f && f32_is_finite(b.tensor.encode)) {
    // Midpoints between neighbouring grid values, scaled back by the block's decode scale.
    const BlockScale s = block_scale(mode, f, amax, b.tensor);
    const float dec = mode == ScaleMode::kNVFP4 ? s.decode * b.tensor.decode : s.decode;
    for (size_t i = 0; i < n; ++i) {
      if (std::fabs(x[i]) == amax) continue;
      const uint32_t u = static_cast<uint32_t>(rng() % max_units(f));
      const uint32_t spacing = u < (2u << info(f).man_bits) ? 1u : (1u << (31 - __builtin_clz(u) - info(f).man_bits));
      const float mid = (grid_value(f, u) + 0.5f * grid_value(f, spacing)) * (rng() % 2 ? -1.0f : 1.0f);
      x[i] = mid * dec;
    }
  }
  for (float v : x) b.x.push_back(f32_bits(v));
  if (r == Rounding::kStochastic) {
    b.random = philox_bits(n, rng(), rng() % (uint64_t{1} << 40), static_cast<uint32_t>(rng()), bits);
  } else {
    b.random.assign(n, 0);
  }
  b.what = kPatternNames[p];
  compute_expected(b);
  return b;
}

class RtlQuant : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
  }
  void print_counts(const QuantChecker& c, const char* what) {
    std::printf("[ cases    ] %llu blocks checked (%s), %llu elements; per quantizer:",
                static_cast<unsigned long long>(c.checked()), what, static_cast<unsigned long long>(c.elements()));
    for (unsigned q = 0; q < kNumQuants; ++q) std::printf(" %llu", static_cast<unsigned long long>(c.per_quant(q)));
    std::printf("\n");
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

// A policy pair drawn from the seeded generator.
QuantPolicy random_policy(std::mt19937_64& rng) {
  return QuantPolicy{kAllZeroPolicies[rng() % 2], kAllNonFinitePolicies[rng() % 2]};
}

// Every format x scale mode x rounding x B, each with blocks of every pattern under
// policies drawn per block.
TEST_F(RtlQuant, EveryFormatModeRoundingAndSrBits) {
  constexpr int kBlocksPerCombination = 48;
  std::vector<QBlock> blocks;
  size_t combinations = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
        for (int bits = 1; bits <= 8; ++bits) {
          ++combinations;
          for (int i = 0; i < kBlocksPerCombination; ++i) {
            const QuantPolicy policy = random_policy(rng_);
            blocks.push_back(random_block(f, m, r, bits, policy, rng_));
          }
        }
      }
    }
  }
  size_t per_pattern[kNumPatterns] = {};
  size_t per_policy[4] = {};
  size_t signed_zero_codes = 0;
  for (const QBlock& b : blocks) {
    for (unsigned p = 0; p < kNumPatterns; ++p) per_pattern[p] += b.what == kPatternNames[p];
    ++per_policy[2 * static_cast<unsigned>(b.policy.zero) + static_cast<unsigned>(b.policy.nonfinite)];
    if (b.format != Format::kInt4) signed_zero_codes += static_cast<size_t>(std::count(b.codes.begin(), b.codes.end(), 8));
  }
  std::printf("[ cases    ] blocks per policy (positive/finite, positive/propagate, signed/finite, "
              "signed/propagate): %zu %zu %zu %zu; minifloat 0x8 codes expected: %zu\n",
              per_policy[0], per_policy[1], per_policy[2], per_policy[3], signed_zero_codes);
  for (size_t n : per_policy) EXPECT_GT(n, 0u);
  EXPECT_GT(signed_zero_codes, 0u) << "no block exercised the signed-zero policy";
  QuantChecker checker(seed_, rng_);
  checker.run(blocks, 15);
  print_counts(checker, "random blocks");
  std::printf("[ cases    ] %zu format x mode x rounding x B combinations; blocks per pattern:", combinations);
  for (unsigned p = 0; p < kNumPatterns; ++p) std::printf(" %s %zu,", kPatternNames[p], per_pattern[p]);
  std::printf("\n");
  EXPECT_GE(checker.per_quant(0), blocks.size());  // the 32-lane, all-format quantizer takes every block
  EXPECT_EQ(checker.per_quant(5), checker.per_quant(0));  // and so does its pipelined twin
  for (unsigned q = 0; q < kNumQuants; ++q) EXPECT_GT(checker.per_quant(q), 0u) << "quantizer " << q;
}

// golden quantize() of whole tensors (1x16 and 1x32 blocks, RHT16 or none): every block of
// every row through the RTL with the tensor's per-tensor scale and its Philox SR bits,
// compared with the tensor's scales and codes.
TEST_F(RtlQuant, GoldenQuantizeTensors) {
  std::vector<QBlock> blocks;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int tensors = 0;
  for (int t = 0; t < 200; ++t) {
    QuantConfig cfg;
    cfg.format = kAllFormats[rng_() % 3];
    cfg.block = rng_() % 2 ? BlockShape::k1x16 : BlockShape::k1x32;
    cfg.scale = kAllScaleModes[rng_() % 4];
    cfg.rounding = rng_() % 2 ? Rounding::kStochastic : Rounding::kNearestEven;
    cfg.sr_bits = 1 + static_cast<int>(rng_() % 8);
    cfg.seed = rng_();
    cfg.stream = static_cast<uint32_t>(rng_());
    cfg.policy = random_policy(rng_);
    const int64_t rows = 1 + static_cast<int64_t>(rng_() % 4);
    int64_t cols = 1 + static_cast<int64_t>(rng_() % 100);
    if (rng_() % 3 == 0) {
      cfg.rht.size = 16;
      cfg.rht.round_bf16 = rng_() % 2;
      cols = 16 * (1 + static_cast<int64_t>(rng_() % 6));
    }
    const int exps[] = {-135, -128, -20, 0, 0, 0, 8, 60, 120};
    const int e = exps[rng_() % 9];
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (float& v : x) v = std::ldexp(normal(rng_), e);
    if (rng_() % 6 == 0) x[rng_() % x.size()] = rng_() % 2 ? std::numeric_limits<float>::quiet_NaN() : INFINITY;
    if (rng_() % 6 == 0) std::fill(x.begin(), x.begin() + std::min<int64_t>(cols, 20), 0.0f);
    const QuantizedTensor q = quantize(x.data(), rows, cols, cfg);
    ++tensors;
    std::vector<float> work = x;
    if (cfg.rht.enabled()) rht_rows(work.data(), rows, cols, cfg.rht, cfg.seed);
    const int64_t bw = block_cols(cfg.block);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c0 = 0; c0 < cols; c0 += bw) {
        QBlock b;
        b.format = cfg.format;
        b.mode = cfg.scale;
        b.rounding = cfg.rounding;
        b.sr_bits = cfg.sr_bits;
        b.policy = cfg.policy;
        b.tensor = q.tensor;
        const int64_t len = std::min(bw, cols - c0);
        for (int64_t c = c0; c < c0 + len; ++c) b.x.push_back(f32_bits(work[static_cast<size_t>(r * cols + c)]));
        b.random = cfg.rounding == Rounding::kStochastic
                       ? philox_bits(static_cast<size_t>(len), cfg.seed,
                                     sr_group(static_cast<uint64_t>(r), static_cast<uint64_t>(c0),
                                              static_cast<uint64_t>(cols)),
                                     cfg.stream, cfg.sr_bits)
                       : std::vector<uint32_t>(static_cast<size_t>(len), 0u);
        // Expected: the tensor's own codes and scale, not a recomputation.
        b.scale_code = q.scale_code_at(r, c0);
        b.codes.assign(q.codes.begin() + r * cols + c0, q.codes.begin() + r * cols + c0 + len);
        b.what = "tensor " + std::to_string(t) + " " + std::string(name(cfg.block)) + " " +
                 std::string(name(cfg.policy.zero)) + "/" + std::string(name(cfg.policy.nonfinite)) +
                 (cfg.rht.enabled() ? (cfg.rht.round_bf16 ? " rht16+bf16" : " rht16") : "") + " row " +
                 std::to_string(r) + " col " + std::to_string(c0);
        blocks.push_back(std::move(b));
      }
    }
  }
  QuantChecker checker(seed_, rng_);
  checker.run(blocks, 10);
  print_counts(checker, "golden quantize() tensors");
  std::printf("[ cases    ] %d tensors quantized by golden\n", tensors);
  EXPECT_GE(checker.per_quant(0), blocks.size());
  EXPECT_GT(checker.checked(), 0u);
}

// The golden vector stream (docs/vectors.md): `nibble vectors quantize` cases written as text
// and read back; each case's expected scale code and codes are compared with the RTL's.
TEST_F(RtlQuant, GoldenVectorStreamQuantize) {
  vectors::GenerateOptions opts;
  opts.op = vectors::Op::kQuantize;
  opts.seed = seed_;
  opts.count = 600;
  opts.zero_policies = {ZeroPolicy::kPositive, ZeroPolicy::kSigned};
  opts.nonfinite_policies = {NonFinitePolicy::kFinite, NonFinitePolicy::kPropagate};
  std::stringstream text;
  const vectors::StreamCounts counts = vectors::write_stream(text, opts);
  vectors::Reader reader(text);
  std::vector<QBlock> blocks;
  while (std::optional<vectors::Vector> v = reader.next()) {
    const auto* c = std::get_if<vectors::QuantizeCase>(&v->data);
    if (c == nullptr) continue;
    QBlock b;
    b.format = c->format;
    b.mode = c->mode;
    b.rounding = c->rounding;
    b.sr_bits = c->sr_bits;
    b.policy = c->policy;
    b.tensor = {f32_from_bits(c->s_enc), f32_from_bits(c->g)};
    b.x = c->x;
    b.random = c->random;
    b.scale_code = c->scale_code;
    b.codes = c->codes;
    b.what = "vector line " + std::to_string(v->line) + (v->label.empty() ? "" : " (" + v->label + ")");
    blocks.push_back(std::move(b));
  }
  QuantChecker checker(seed_, rng_);
  checker.run(blocks, 10);
  print_counts(checker, "golden vector stream");
  std::printf("[ cases    ] %zu quantize vectors read (%zu seeded random, %zu boundary)\n", blocks.size(),
              counts.random, counts.boundary);
  EXPECT_GE(checker.per_quant(0), blocks.size());
  EXPECT_GT(checker.checked(), 0u);
}

// The assertions are compiled in and stop the simulation: a block offered with a format the
// configuration was not built for violates FormatEnabled_M (the E2M1-only quantizer, 2).
TEST_F(RtlQuant, AssertionsAreLive) {
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        dup2(STDERR_FILENO, STDOUT_FILENO);  // Verilator reports assertions on stdout
        ClockedSim<Vtb_quant> sim(seed_);
        sim.reset();
        sim->valid_i = 1u << 2;
        sim->format_i = static_cast<uint8_t>(Format::kInt4);
        sim->rounding_i = 0;
        sim->zero_i = 0;
        sim->nonfinite_i = 0;
        for (int i = 0; i < 4; ++i) sim.tick();
      },
      "FormatEnabled_M");
  std::printf("[ cases    ] 1 assertion checked to fire\n");
}

}  // namespace
}  // namespace nibble::rtl_test
