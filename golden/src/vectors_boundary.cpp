// The boundary tables: for each op, fixed lists of cases at the edges of the
// formats, scale rules and accumulation that docs/vectors.md describes, swept
// over every option left open.
#include <algorithm>
#include <cmath>
#include <utility>

#include "nibble/fp32.h"
#include "nibble/vectors.h"
#include "vectors_detail.h"

namespace nibble::vectors {
namespace {

using detail::kBlockLengths;
using detail::kF32Max;
using detail::kF32MinSubnormal;
using detail::quantize_operand;
using detail::scale_count;

using detail::allowed;
using detail::allowed_policies;

// The one value fixed, or every value of all.
template <class T, size_t N>
std::vector<T> sweep(const std::optional<T>& fixed, const std::array<T, N>& all) {
  if (fixed) return {*fixed};
  return std::vector<T>(all.begin(), all.end());
}

// Every (a, b) pair of the two sets' allowed values, a outer.
template <class T, size_t N>
std::vector<std::pair<T, T>> sweep_pairs(const std::vector<T>& chosen_a, const std::vector<T>& chosen_b,
                                         const std::array<T, N>& all) {
  std::vector<std::pair<T, T>> pairs;
  for (const T& a : allowed(chosen_a, all)) {
    for (const T& b : allowed(chosen_b, all)) pairs.emplace_back(a, b);
  }
  return pairs;
}

template <class T>
const T& cycle(const std::vector<T>& v, size_t i) {
  return v[i % v.size()];
}

// Codes by value: 1.0, the largest magnitude of each sign, the most negative decodable.
uint8_t one_code(Format f) { return encode(f, false, 1u << -lsb_exp(f)); }
uint8_t max_code(Format f) { return encode(f, false, max_units(f)); }
uint8_t neg_max_code(Format f) { return encode(f, true, max_units(f)); }
uint8_t most_negative_code(Format f) { return encode(f, true, max_decode_units(f)); }  // INT4: -8

// Scale codes by value, from the scale format's row: 1.0, the largest finite
// magnitude (the code below the NaN code), the smallest normal, and the sign bit
// of a signed format.
uint32_t unit_scale(ScaleFormat sf) {
  const ScaleFormatInfo& i = info(sf);
  switch (scale_encoding(sf)) {
    case ScaleEncoding::kMinifloat: return minifloat_code(false, 1u << (i.bias - 1 + i.man_bits), i.exp_bits, i.man_bits);
    case ScaleEncoding::kPowerOfTwo: return static_cast<uint32_t>(i.bias);  // 2^(code - bias)
    case ScaleEncoding::kBinary32: return kOneF32;
  }
  throw std::invalid_argument("unit_scale: unknown scale format");
}
uint32_t max_scale(ScaleFormat sf) { return info(sf).nan_code - 1u; }  // minifloat and power-of-two codes
uint32_t sign_scale(ScaleFormat sf) { return 1u << (info(sf).exp_bits + info(sf).man_bits); }

// Scale codes worth crossing: unit, extremes, zero, NaN, negative, subnormal.
std::vector<uint32_t> special_scales(ScaleFormat sf) {
  const uint32_t one = unit_scale(sf), top = max_scale(sf), nan = info(sf).nan_code;
  switch (scale_encoding(sf)) {
    case ScaleEncoding::kMinifloat: {
      const uint32_t sign = sign_scale(sf), min_normal = 1u << info(sf).man_bits;
      return {one, top, 0x01u, 0x00u, nan, sign | top, sign, min_normal, sign | nan};
    }
    case ScaleEncoding::kPowerOfTwo: return {one, top, 0u, nan, 1u, top - 1u, one + 1u};
    case ScaleEncoding::kBinary32:
      return {kOneF32,     kF32Max,     kF32MinSubnormal, 0x00800000u, 0x7F800000u, 0xFF800000u, kCanonicalNaN,
              0x80000000u, 0x00000000u, 0x00000200u,      0x7F000000u, 0xBF800000u, 0x007FFFFFu};
  }
  return {};
}
std::vector<uint32_t> largest_scales(ScaleFormat sf) {
  if (scale_encoding(sf) == ScaleEncoding::kBinary32) return {kF32Max, 0x7F800000u, 0xFF800000u, kCanonicalNaN};
  return {max_scale(sf), info(sf).nan_code};
}
std::vector<uint32_t> tiny_scales(ScaleFormat sf) {
  switch (scale_encoding(sf)) {
    case ScaleEncoding::kMinifloat: return {0x01u, 0x02u};
    case ScaleEncoding::kPowerOfTwo: return {0u, 1u, 2u, 3u};
    case ScaleEncoding::kBinary32: {
      std::vector<uint32_t> v;
      for (int j = 0; j < 10; ++j) v.push_back(1u << j);
      v.push_back(0x007FFFFFu);
      return v;
    }
  }
  return {};
}
uint32_t huge_scale(ScaleFormat sf) { return largest_scales(sf).front(); }
// A scale near 2^24 (or the largest below it), so adding a unit-scaled block to it rounds.
uint32_t big_scale(ScaleFormat sf) {
  switch (scale_encoding(sf)) {
    case ScaleEncoding::kMinifloat: return max_scale(sf);
    case ScaleEncoding::kPowerOfTwo: return unit_scale(sf) + 24u;
    case ScaleEncoding::kBinary32: return f32_bits(exp2_f32(24));
  }
  return 0;
}

Vector labelled(Case c, std::string label) { return Vector{std::move(c), std::move(label), 0}; }

// Quantize: every format x scale mode gets the same list of inputs; the
// scale-specific entries aim at particular scale codes.
class QuantizeTable {
 public:
  QuantizeTable(const GenerateOptions& o, std::vector<Vector>& out)
      : o_(o),
        out_(out),
        lengths_(allowed(o.lengths, kBlockLengths)),
        roundings_(allowed(o.roundings, kAllRoundings)),
        sr_bits_(sweep(o.sr_bits, std::array<int, 2>{1, 8})) {}

  void build() {
    for (ZeroPolicy z : allowed_policies(o_.zero_policies)) {
      for (NonFinitePolicy p : allowed_policies(o_.nonfinite_policies)) {
        policy_ = QuantPolicy{z, p};
        for (Format f : allowed(o_.formats_a, kAllFormats)) {
          for (ScaleMode m : allowed(o_.modes, kAllScaleModes)) add_entries(f, m);
        }
      }
    }
  }

 private:
  // An input list repeats to fill the block; S_enc = g = 1 unless given, which
  // for nvfp4 makes block scale s = amax / gmax exactly when that is an E4M3 value.
  void add(Format f, ScaleMode m, const std::string& label, const std::vector<float>& base, bool every_rounding = false,
           std::optional<TensorScale> tensor = std::nullopt) {
    const int length = cycle(lengths_, next_++);
    std::vector<std::pair<Rounding, int>> runs;
    for (Rounding r : roundings_) {
      if (r == Rounding::kNearestEven) runs.emplace_back(r, 8);
      if (r == Rounding::kStochastic) {
        for (int b : sr_bits_) runs.emplace_back(r, b);
      }
    }
    if (!every_rounding) runs = {cycle(runs, next_)};
    for (const auto& [rounding, bits] : runs) {
      QuantizeCase c;
      c.format = f;
      c.mode = m;
      c.policy = policy_;
      c.length = length;
      c.rounding = rounding;
      c.sr_bits = bits;
      c.seed = o_.seed;
      c.group = next_;
      for (size_t i = 0; i < static_cast<size_t>(length); ++i) c.x.push_back(f32_bits(base[i % base.size()]));
      const TensorScale t = tensor.value_or(TensorScale{});
      c.s_enc = m == ScaleMode::kNVFP4 ? f32_bits(t.encode) : kOneF32;
      c.g = m == ScaleMode::kNVFP4 ? f32_bits(t.decode) : kOneF32;
      c.random = sr_random_bits(c);
      compute_expected(c);
      std::string l = label;
      if (rounding == Rounding::kStochastic && every_rounding) l += " (sr, B=" + std::to_string(bits) + ")";
      out_.push_back(labelled(std::move(c), std::move(l)));
    }
  }

  // amax at index 0, then alternating-sign values falling towards zero.
  static std::vector<float> ramp(float amax) {
    std::vector<float> x;
    for (int i = 0; i < 16; ++i) {
      const float v = amax * (static_cast<float>(16 - i) / 16.0f);
      x.push_back(i % 2 == 0 ? v : -v);
    }
    return x;
  }
  static std::vector<float> with(std::vector<float> x, size_t i, uint32_t bits) {
    x[i] = f32_from_bits(bits);
    return x;
  }

  void add_entries(Format f, ScaleMode m) {
    const float gmax = max_value(f);
    std::vector<float> codes;  // every code the quantizer can emit, as a value
    for (uint8_t code = 0; code < 16; ++code) {
      if (std::fabs(decode_value(f, code)) <= gmax) codes.push_back(decode_value(f, code));
    }
    std::vector<float> ties = {gmax};  // the midpoint between each pair of neighbouring grid magnitudes, both signs
    for (uint8_t code = 0; code + 1 < 8; ++code) {
      ties.push_back((decode_value(f, code) + decode_value(f, code + 1)) * 0.5f);
    }
    for (size_t i = 1; i < 8; ++i) ties.push_back(-ties[i]);
    ties.push_back(0.0f);

    add(f, m, "every code value", codes, true);
    add(f, m, "grid midpoints (RNE ties)", ties, true);
    if (info(f).encoding == Encoding::kTwosComplement) add(f, m, "INT4 -8 input saturates", {-8.0f, 7.0f, -7.0f, 1.0f});
    add(f, m, "all-zero block", {0.0f});
    add(f, m, "signed zeros", {0.0f, -0.0f});

    add(f, m, "NaN input", with(ramp(gmax), 5, kCanonicalNaN));
    add(f, m, "signalling NaN input", with(ramp(gmax), 2, 0x7F800001u));
    add(f, m, "+Inf input", with(ramp(gmax), 0, 0x7F800000u));
    add(f, m, "-Inf input", with(ramp(gmax), 9, 0xFF800000u));
    add(f, m, "largest finite inputs", {f32_from_bits(kF32Max), -f32_from_bits(kF32Max), 1.0f, -1.0f, 0.0f});
    add(f, m, "subnormal inputs",
        {f32_from_bits(0x007FFFFFu), f32_from_bits(0x80000001u), f32_from_bits(0x00000003u), f32_from_bits(0x00400000u),
         f32_from_bits(0x80012345u), 0.0f});
    add(f, m, "min subnormal alone", {f32_from_bits(kF32MinSubnormal), 0.0f, 0.0f, 0.0f});
    add(f, m, "saturating values (amax just below 2^(emax+1))",
        ramp(f32_from_bits(f32_bits(exp2_f32(emax(f) + 1)) - 1u)));
    // The policies' own entries come last, and only under a non-default policy, so that the
    // default table is what it was before the policies existed.
    if (policy_.zero == ZeroPolicy::kSigned) {
      // Negative values below half the smallest step: 0x8 in the minifloats, 0 in INT4.
      add(f, m, "negative values rounding to zero", {gmax, -gmax * exp2_f32(-5), -gmax * exp2_f32(-12), -0.0f},
          true);
    }
    switch (m) {
      case ScaleMode::kNVFP4: {
        const std::vector<float> r = ramp(gmax * 3.0f);
        add(f, m, "tensor scale from the block", r, true,
            tensor_scale(m, f, scale_amax(r.data(), r.size(), policy_.nonfinite)));
        if (policy_.nonfinite == NonFinitePolicy::kPropagate) {
          // The tensor holds a NaN elsewhere (S_enc = g = NaN), or an infinity (S_enc = 1).
          add(f, m, "NaN tensor scale (a NaN elsewhere in the tensor)", ramp(gmax), false,
              tensor_scale(m, f, f32_from_bits(kCanonicalNaN)));
          add(f, m, "+Inf input, tensor scale from it (S_enc = 1)", with(ramp(gmax * 64.0f), 3, 0x7F800000u), true,
              tensor_scale(m, f, f32_from_bits(0x7F800000u)));
        }
        add(f, m, "tensor scale FLT_MAX (amax_tensor = min subnormal)", {f32_from_bits(kF32MinSubnormal), 0.0f}, false,
            tensor_scale(m, f, f32_from_bits(kF32MinSubnormal)));
        add(f, m, "E4M3 scale at max 448", ramp(gmax * 448.0f));
        add(f, m, "E4M3 scale saturates at 448", ramp(gmax * 4096.0f));
        add(f, m, "E4M3 scale at min subnormal 2^-9", ramp(gmax * exp2_f32(-9)));
        add(f, m, "E4M3 scale rounds to zero", ramp(gmax * exp2_f32(-11)));
        break;
      }
      case ScaleMode::kMXFloor:
      case ScaleMode::kMXCeil:
        add(f, m, "UE8M0 code 127 (2^0)", ramp(gmax));
        add(f, m, "UE8M0 code 0 (2^-127)", ramp(exp2_f32(emax(f) - 127)));
        add(f, m, "UE8M0 top of range (amax 2^127)", ramp(exp2_f32(127)));
        break;
      case ScaleMode::kFP32: add(f, m, "FP32 scale of an exact power of two", ramp(gmax * exp2_f32(-40))); break;
    }
  }

  const GenerateOptions& o_;
  std::vector<Vector>& out_;
  std::vector<int> lengths_;
  std::vector<Rounding> roundings_;
  std::vector<int> sr_bits_;
  QuantPolicy policy_;
  size_t next_ = 0;
};

struct DotBlock {
  std::vector<uint8_t> a;
  std::vector<uint8_t> b;
  uint32_t sa;
  uint32_t sb;
};

std::vector<uint8_t> lanes(int length, uint8_t code) { return std::vector<uint8_t>(static_cast<size_t>(length), code); }
std::vector<uint8_t> one_hot(int length, int lane, uint8_t code) {
  std::vector<uint8_t> v(static_cast<size_t>(length), 0);
  v[static_cast<size_t>(lane % length)] = code;
  return v;
}
std::vector<uint8_t> alternating(int length, uint8_t even, uint8_t odd) {
  std::vector<uint8_t> v;
  for (int i = 0; i < length; ++i) v.push_back(i % 2 == 0 ? even : odd);
  return v;
}

struct DotShape {
  Format fa, fb;
  ScaleFormat sfa, sfb;
  int length;
};

// Dot: lists of blocks, cut into cases of nblocks blocks (the last case filled
// by starting the list again, so every case has the same shape).
class DotTable {
 public:
  DotTable(const GenerateOptions& o, std::vector<Vector>& out)
      : nblocks_(o.nblocks.value_or(16)),
        lengths_(allowed(o.lengths, kBlockLengths)),
        out_(out),
        formats_(sweep_pairs(o.formats_a, o.formats_b, kAllFormats)),
        scales_(sweep_pairs(o.scales_a, o.scales_b, kAllScaleFormats)) {}

  void build() {
    for (size_t i = 0; i < formats_.size(); ++i) {
      const DotShape s = shape(i, i);
      every_code_pair(s);
      extreme_partial_sums(shape(i, i + 1));
      zero_blocks(shape(i, i + 2));
    }
    for (size_t i = 0; i < scales_.size(); ++i) {
      const DotShape s = shape(i, i);
      scale_codes(s);
      accumulation(shape(i + 1, i));
    }
    constexpr std::array<std::pair<uint32_t, uint32_t>, 11> kTensorScales = {{
        {kOneF32, kOneF32},
        {0x0D800000u, 0x0D800000u},  // 2^-100 each: g underflows to 0
        {0x71800000u, 0x71800000u},  // 2^100 each: g overflows to Inf
        {0x00800000u, 0x3A800000u},  // 2^-126 * 2^-10: subnormal g
        {kF32MinSubnormal, kOneF32},
        {kCanonicalNaN, kOneF32},
        {0x7F800000u, 0x00000000u},  // Inf * 0 = NaN
        {0x7F800000u, kOneF32},
        {0xBF800000u, kOneF32},
        {kF32Max, 0x3F000000u},
        {0x80000000u, kOneF32},
    }};
    for (size_t i = 0; i < kTensorScales.size(); ++i) {
      const DotShape s = shape(i, i);
      std::vector<DotBlock> blocks;
      for (int j = 0; j < 4; ++j) {
        blocks.push_back({lanes(s.length, one_code(s.fa)),
                          alternating(s.length, max_code(s.fb), static_cast<uint8_t>(j)), unit_scale(s.sfa),
                          unit_scale(s.sfb)});
      }
      emit(s, blocks, "tensor scales ga, gb", kTensorScales[i].first, kTensorScales[i].second);
    }
  }

 private:
  DotShape shape(size_t format_index, size_t scale_index) {
    const auto [fa, fb] = cycle(formats_, format_index);
    const auto [sfa, sfb] = cycle(scales_, scale_index);
    return {fa, fb, sfa, sfb, cycle(lengths_, next_length_++)};
  }

  void emit(const DotShape& s, const std::vector<DotBlock>& blocks, const std::string& label, uint32_t ga = kOneF32,
            uint32_t gb = kOneF32) {
    const size_t nb = static_cast<size_t>(nblocks_);
    for (size_t start = 0; start < blocks.size(); start += nb) {
      DotCase c;
      c.fa = s.fa;
      c.fb = s.fb;
      c.sfa = s.sfa;
      c.sfb = s.sfb;
      c.length = s.length;
      c.nblocks = nblocks_;
      c.ga = ga;
      c.gb = gb;
      for (size_t j = 0; j < nb; ++j) {
        const DotBlock& blk = blocks[(start + j) % blocks.size()];
        c.codes_a.insert(c.codes_a.end(), blk.a.begin(), blk.a.end());
        c.codes_b.insert(c.codes_b.end(), blk.b.begin(), blk.b.end());
        c.scales_a.push_back(blk.sa);
        c.scales_b.push_back(blk.sb);
      }
      compute_expected(c);
      out_.push_back(labelled(std::move(c), label));
    }
  }

  // Each block holds one product: a = ca in every lane, b = cb in one lane.
  void every_code_pair(const DotShape& s) {
    std::vector<DotBlock> blocks;
    for (int ca = 0; ca < 16; ++ca) {
      for (int cb = 0; cb < 16; ++cb) {
        blocks.push_back({lanes(s.length, static_cast<uint8_t>(ca)),
                          one_hot(s.length, ca + cb, static_cast<uint8_t>(cb)), unit_scale(s.sfa), unit_scale(s.sfb)});
      }
    }
    emit(s, blocks, "every code pair");
  }

  void extreme_partial_sums(const DotShape& s) {
    const int n = s.length;
    const uint32_t ua = unit_scale(s.sfa), ub = unit_scale(s.sfb);
    emit(s,
         {{lanes(n, max_code(s.fa)), lanes(n, max_code(s.fb)), ua, ub},
          {lanes(n, max_code(s.fa)), lanes(n, neg_max_code(s.fb)), ua, ub},
          {lanes(n, most_negative_code(s.fa)), lanes(n, most_negative_code(s.fb)), ua, ub},
          {lanes(n, most_negative_code(s.fa)), lanes(n, max_code(s.fb)), ua, ub},
          {lanes(n, max_code(s.fa)), alternating(n, max_code(s.fb), neg_max_code(s.fb)), ua, ub}},
         "extreme partial sums (largest |P|, INT4 -8)");
  }

  void zero_blocks(const DotShape& s) {
    const int n = s.length;
    // 0x8 is negative zero in the minifloats but -8 in INT4.
    const uint8_t neg_zero_a = info(s.fa).encoding == Encoding::kTwosComplement ? 0 : 0x8;
    const uint32_t ua = unit_scale(s.sfa), ub = unit_scale(s.sfb);
    emit(s,
         {{lanes(n, 0), lanes(n, 0), ua, ub},
          {lanes(n, neg_zero_a), lanes(n, max_code(s.fb)), ua, ub},
          {lanes(n, max_code(s.fa)), lanes(n, 0), ua, ub}},
         "all-zero blocks");
  }

  void scale_codes(const DotShape& s) {
    const int n = s.length;
    std::vector<DotBlock> blocks;
    for (uint32_t sa : special_scales(s.sfa)) {
      for (uint32_t sb : special_scales(s.sfb)) {
        blocks.push_back({lanes(n, one_code(s.fa)), lanes(n, max_code(s.fb)), sa, sb});
      }
    }
    emit(s, blocks, "scale code pairs");
    blocks.clear();
    for (uint32_t sa : largest_scales(s.sfa)) {
      for (uint32_t sb : largest_scales(s.sfb)) blocks.push_back({lanes(n, 0), lanes(n, max_code(s.fb)), sa, sb});
    }
    emit(s, blocks, "zero partial sum with the largest scales");
    // P = 3 units (odd) so that a subnormal r_b must round; then overflow.
    blocks.clear();
    const std::vector<uint8_t> one_unit = one_hot(n, 0, encode(s.fa, false, 1));
    const std::vector<uint8_t> three_units = one_hot(n, 0, encode(s.fb, false, 3));
    for (uint32_t t : tiny_scales(s.sfa)) blocks.push_back({one_unit, three_units, t, unit_scale(s.sfb)});
    for (uint32_t t : tiny_scales(s.sfb)) blocks.push_back({one_unit, three_units, unit_scale(s.sfa), t});
    blocks.push_back({lanes(n, max_code(s.fa)), lanes(n, max_code(s.fb)), huge_scale(s.sfa), unit_scale(s.sfb)});
    blocks.push_back({lanes(n, max_code(s.fa)), lanes(n, neg_max_code(s.fb)), huge_scale(s.sfa), huge_scale(s.sfb)});
    emit(s, blocks, "subnormal and overflowing r_b");
  }

  void accumulation(const DotShape& s) {
    if (nblocks_ < 2) return;
    const int n = s.length;
    const uint32_t ua = unit_scale(s.sfa), ub = unit_scale(s.sfb);
    const DotBlock pos{lanes(n, max_code(s.fa)), lanes(n, max_code(s.fb)), ua, ub};
    const DotBlock neg{lanes(n, max_code(s.fa)), lanes(n, neg_max_code(s.fb)), ua, ub};
    const DotBlock tiny_neg{one_hot(n, 1, encode(s.fa, false, 1)), one_hot(n, 1, encode(s.fb, true, 1)), ua, ub};
    emit(s, {pos, neg, tiny_neg}, "accumulation: cancellation to +0, then a negative");
    const DotBlock big{lanes(n, one_code(s.fa)), lanes(n, one_code(s.fb)), big_scale(s.sfa), ub};
    const DotBlock one{one_hot(n, 3, one_code(s.fa)), one_hot(n, 3, one_code(s.fb)), ua, ub};
    emit(s, {big, one, one, one}, "accumulation: absorption and ties");
    emit(s,
         {{pos.a, pos.b, huge_scale(s.sfa), huge_scale(s.sfb)}, {neg.a, neg.b, huge_scale(s.sfa), huge_scale(s.sfb)}},
         "accumulation: largest products of both signs (+Inf + -Inf where the scales reach Inf)");
  }

  int nblocks_;
  std::vector<int> lengths_;
  std::vector<Vector>& out_;
  std::vector<std::pair<Format, Format>> formats_;
  std::vector<std::pair<ScaleFormat, ScaleFormat>> scales_;
  size_t next_length_ = 0;
};

struct TileShape {
  Format fa, fb;
  ScaleMode ma, mb;
  BlockShape ba, bb;
};

// Gemm-tile: tiles of the configured M x N x K, either quantized by golden from
// patterned FP32 data or built from chosen codes and scale codes.
class GemmTable {
 public:
  GemmTable(const GenerateOptions& o, std::vector<Vector>& out)
      : o_(o),
        out_(out),
        formats_(sweep_pairs(o.formats_a, o.formats_b, kAllFormats)),
        modes_(sweep_pairs(o.modes_a, o.modes_b, kAllScaleModes)),
        blocks_(sweep_pairs(o.blocks_a, o.blocks_b, kAllBlockShapes)) {}

  void build() {
    size_t t = 0;
    for (size_t i = 0; i < formats_.size(); ++i) {
      for (size_t j = 0; j < modes_.size(); j += 3) {
        quantized(shape(i, i + j, t++), pattern(o_.m, 1), pattern(o_.n, 2), "format and mode pair");
      }
      direct(
          shape(i, i, t++), "every code, unit scales",
          [](size_t r, size_t c) { return static_cast<uint8_t>((r * 5 + c) % 16); },
          [](size_t r, size_t c) { return static_cast<uint8_t>((r * 3 + c * 7) % 16); }, Scales::kUnit);
    }
    for (size_t i = 0; i < modes_.size(); ++i) {
      std::vector<float> a = pattern(o_.m, 3);
      a[std::min<size_t>(1, a.size() - 1)] = f32_from_bits(kCanonicalNaN);
      quantized(shape(i, i, t++), a, pattern(o_.n, 4), "NaN input in A (NaN block scale)");
      std::vector<float> b = pattern(o_.n, 5);
      b[b.size() - 1] = -f32_from_bits(0x7F800000u);
      quantized(shape(i + 1, i, t++), pattern(o_.m, 6), b, "-Inf input in B (NaN block scale)");
      quantized(shape(i + 2, i, t++), zeros(o_.m), zeros(o_.n), "all-zero tiles");
      const auto max_a = [this, i](size_t, size_t) { return max_code(cycle(formats_, i).first); };
      const auto max_b = [this, i](size_t r, size_t c) {
        const Format fb = cycle(formats_, i).second;
        return (r + c) % 3 == 0 ? neg_max_code(fb) : max_code(fb);
      };
      direct(shape(i, i, t++), "largest scale codes", max_a, max_b, Scales::kHuge);
      direct(
          shape(i, i, t++), "smallest scale codes",
          [](size_t r, size_t c) { return static_cast<uint8_t>((r + c) % 8); },
          [](size_t r, size_t c) { return static_cast<uint8_t>((r * 2 + c) % 8); }, Scales::kTiny);
    }
    constexpr std::array<std::pair<uint32_t, uint32_t>, 4> kTensorScales = {
        {{0x00800000u, 0x3A800000u}, {0x71800000u, 0x71800000u}, {0x0D800000u, 0x0D800000u}, {kCanonicalNaN, kOneF32}}};
    for (size_t i = 0; i < kTensorScales.size(); ++i) {
      direct(
          shape(i, i, t++), "tensor scales ga, gb producing subnormal, overflowing or NaN C",
          [](size_t r, size_t c) { return static_cast<uint8_t>((r + 2 * c) % 16); },
          [](size_t r, size_t c) { return static_cast<uint8_t>((3 * r + c) % 16); }, Scales::kUnit, kTensorScales[i]);
    }
    const auto has_int4 = [](const std::vector<Format>& chosen) {
      const std::vector<Format> f = allowed(chosen, kAllFormats);
      return std::find(f.begin(), f.end(), Format::kInt4) != f.end();
    };
    const bool int4_a = has_int4(o_.formats_a);
    const bool int4_b = has_int4(o_.formats_b);
    if (int4_a && int4_b) {
      TileShape s = shape(0, 0, t++);
      s.fa = s.fb = Format::kInt4;
      direct(
          s, "INT4 -8 operands", [](size_t, size_t) { return uint8_t{0x8}; },
          [](size_t, size_t) { return uint8_t{0x8}; }, Scales::kUnit);
    }
  }

 private:
  enum class Scales { kUnit, kHuge, kTiny };

  TileShape shape(size_t format_index, size_t mode_index, size_t block_index) const {
    const auto [fa, fb] = cycle(formats_, format_index);
    const auto [ma, mb] = cycle(modes_, mode_index);
    const auto [ba, bb] = cycle(blocks_, block_index);
    return {fa, fb, ma, mb, ba, bb};
  }

  // Values over eight binades, both signs, with exact zeros, varied by salt.
  std::vector<float> pattern(int rows, int salt) const {
    std::vector<float> x;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < o_.k; ++c) {
        const int i = r * o_.k + c;
        x.push_back(static_cast<float>((i * 7 + salt) % 29 - 14) * exp2_f32((r + c + salt) % 8 - 4));
      }
    }
    return x;
  }
  std::vector<float> zeros(int rows) const {
    return std::vector<float>(static_cast<size_t>(rows) * static_cast<size_t>(o_.k));
  }

  GemmTileCase base(const TileShape& s) const {
    GemmTileCase c;
    c.fa = s.fa;
    c.fb = s.fb;
    c.mode_a = s.ma;
    c.mode_b = s.mb;
    c.block_a = s.ba;
    c.block_b = s.bb;
    c.m = o_.m;
    c.n = o_.n;
    c.k = o_.k;
    return c;
  }

  void quantized(const TileShape& s, const std::vector<float>& a, const std::vector<float>& b,
                 const std::string& label) {
    GemmTileCase c = base(s);
    QuantConfig cfg;
    cfg.seed = o_.seed;
    quantize_operand(a, c.m, c.k, cfg, s.fa, s.ba, s.ma, c.codes_a, c.scales_a, c.ga);
    quantize_operand(b, c.n, c.k, cfg, s.fb, s.bb, s.mb, c.codes_b, c.scales_b, c.gb);
    compute_expected(c);
    out_.push_back(labelled(std::move(c), label));
  }

  // code(r, k) for every element of a [rows, cols] operand, row-major.
  template <class Code>
  static void append_codes(int rows, int cols, Code code, std::vector<uint8_t>& out) {
    for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
      for (size_t k = 0; k < static_cast<size_t>(cols); ++k) out.push_back(code(r, k));
    }
  }

  static uint32_t scale_code(ScaleFormat sf, Scales which) {
    switch (which) {
      case Scales::kUnit: return unit_scale(sf);
      case Scales::kHuge: return huge_scale(sf);
      case Scales::kTiny: return tiny_scales(sf).front();
    }
    return 0;
  }

  template <class CodeA, class CodeB>
  void direct(const TileShape& s, const std::string& label, CodeA code_a, CodeB code_b, Scales which,
              std::pair<uint32_t, uint32_t> tensor = {kOneF32, kOneF32}) {
    GemmTileCase c = base(s);
    append_codes(c.m, c.k, code_a, c.codes_a);
    append_codes(c.n, c.k, code_b, c.codes_b);
    c.scales_a.assign(scale_count(s.ba, c.m, c.k), scale_code(scale_format(s.ma), which));
    c.scales_b.assign(scale_count(s.bb, c.n, c.k), scale_code(scale_format(s.mb), which));
    c.ga = tensor.first;
    c.gb = tensor.second;
    compute_expected(c);
    out_.push_back(labelled(std::move(c), label));
  }

  const GenerateOptions& o_;
  std::vector<Vector>& out_;
  std::vector<std::pair<Format, Format>> formats_;
  std::vector<std::pair<ScaleMode, ScaleMode>> modes_;
  std::vector<std::pair<BlockShape, BlockShape>> blocks_;
};
}  // namespace

std::vector<Vector> boundary_table(const GenerateOptions& o) {
  validate(o);
  std::vector<Vector> out;
  switch (o.op) {
    case Op::kQuantize: QuantizeTable(o, out).build(); break;
    case Op::kDot: DotTable(o, out).build(); break;
    case Op::kGemmTile: GemmTable(o, out).build(); break;
  }
  return out;
}

}  // namespace nibble::vectors
