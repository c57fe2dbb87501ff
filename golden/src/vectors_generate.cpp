// Generating test vector streams: the options, seeded random cases, and the
// stream that interleaves them with the boundary tables (vectors_boundary.cpp).
#include <algorithm>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>

#include "nibble/fp32.h"
#include "nibble/vectors.h"
#include "vectors_detail.h"

namespace nibble::vectors {
namespace {

using detail::kBlockLengths;
using detail::kBoundaryTag;
using detail::kF32Max;
using detail::kF32MinSubnormal;
using detail::quantize_operand;
using detail::scale_count;

// --- Random cases -------------------------------------------------------------------

// Case randomness: std::mt19937_64's raw output is fixed by the standard, and the
// reductions below are ours, so a seed gives the same stream on every platform
// (std::uniform_int_distribution is implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  uint64_t bits() { return engine_(); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(engine_() % n); }
  int range(int lo, int hi) { return lo + static_cast<int>(below(static_cast<uint32_t>(hi - lo + 1))); }
  bool one_in(uint32_t n) { return below(n) == 0; }
  template <class Container>
  typename Container::value_type pick(const Container& c) {
    return c[below(static_cast<uint32_t>(c.size()))];
  }

 private:
  std::mt19937_64 engine_;
};

constexpr std::array<uint32_t, 10> kF32Finite = {0x00000000u, 0x80000000u, kF32MinSubnormal, 0x007FFFFFu, 0x00800000u,
                                                 kF32Max,     0xFF7FFFFFu, kOneF32,          0xBF800000u, 0x80000003u};
constexpr std::array<uint32_t, 5> kF32NonFinite = {0x7F800000u, 0xFF800000u, kCanonicalNaN, 0x7F800001u, 0xFFC00123u};

uint32_t f32_with_exponent(Rng& rng, int e, bool allow_negative = true) {
  const uint32_t biased = static_cast<uint32_t>(std::clamp(e, -126, 127) + 127);
  const uint32_t sign = allow_negative && rng.one_in(2) ? 0x80000000u : 0u;
  return sign | (biased << 23) | static_cast<uint32_t>(rng.bits() & 0x7FFFFFu);
}

// A block of inputs in one of several styles; the grid style puts the format's
// grid points and the midpoints between them (RNE ties) at a power of two, with
// the block maximum present so every scale rule lands on that power.
std::vector<uint32_t> draw_block(Rng& rng, Format f, int length) {
  std::vector<uint32_t> x(static_cast<size_t>(length));
  const uint32_t style = rng.below(8);
  if (style < 2) {
    const int e = rng.range(-20, 20);
    const float half_unit = exp2_f32(lsb_exp(f) - 1 + e);
    for (uint32_t& v : x) {
      const float mag = static_cast<float>(rng.below(2 * max_units(f) + 1)) * half_unit;
      v = f32_bits(rng.one_in(2) ? -mag : mag);
    }
    x[rng.below(static_cast<uint32_t>(length))] = f32_bits(max_value(f) * exp2_f32(e));
  } else if (style == 2) {
    for (uint32_t& v : x) v = (rng.one_in(2) ? 0x80000000u : 0u) | (rng.below(255) << 23) | (rng.bits() & 0x7FFFFFu);
  } else if (style == 3) {
    for (uint32_t& v : x) v = rng.one_in(2) ? rng.pick(kF32Finite) : f32_with_exponent(rng, rng.range(-10, 10));
  } else {
    const int e = rng.range(-30, 30);
    for (uint32_t& v : x) v = f32_with_exponent(rng, e - rng.range(0, 7));
  }
  if (rng.one_in(32)) x[rng.below(static_cast<uint32_t>(length))] = rng.pick(kF32NonFinite);
  return x;
}

void draw_codes(Rng& rng, Format f, size_t count, std::vector<uint8_t>& out) {
  const uint32_t style = rng.below(8);
  for (size_t i = 0; i < count; ++i) {
    if (style == 0) {
      out.push_back(encode(f, rng.one_in(2), max_units(f)));
    } else if (style == 1) {
      out.push_back(rng.one_in(4) ? static_cast<uint8_t>(rng.below(16)) : uint8_t{0});
    } else {
      out.push_back(static_cast<uint8_t>(rng.below(16)));
    }
  }
}

uint32_t draw_scale_code(Rng& rng, ScaleFormat sf) {
  const uint32_t style = rng.below(16);
  switch (sf) {
    case ScaleFormat::kE4M3: {
      constexpr std::array<uint32_t, 6> kSpecial = {0x00u, 0x01u, 0x08u, 0x38u, 0x7Eu, 0x7Fu};
      if (style == 0) return rng.below(256);
      if (style == 1) return rng.pick(kSpecial);
      return 1u + rng.below(0x7Eu);
    }
    case ScaleFormat::kUE8M0: {
      constexpr std::array<uint32_t, 6> kSpecial = {0u, 1u, 127u, 253u, 254u, 255u};
      if (style == 0) return rng.below(256);
      if (style == 1) return rng.pick(kSpecial);
      return static_cast<uint32_t>(127 + rng.range(-20, 20));
    }
    case ScaleFormat::kFP32:
      if (style == 0) return static_cast<uint32_t>(rng.bits());
      if (style == 1) return rng.one_in(2) ? rng.pick(kF32Finite) : rng.pick(kF32NonFinite);
      if (style < 4) return f32_with_exponent(rng, rng.range(-126, 127), false);
      return f32_with_exponent(rng, rng.range(-20, 20), false);
  }
  throw std::invalid_argument("draw_scale_code: unknown scale format");
}

void draw_scale_codes(Rng& rng, ScaleFormat sf, size_t count, std::vector<uint32_t>& out) {
  for (size_t i = 0; i < count; ++i) out.push_back(draw_scale_code(rng, sf));
}

uint32_t draw_tensor_decode(Rng& rng) {
  const uint32_t style = rng.below(8);
  if (style < 4) return kOneF32;
  if (style < 7) return f32_with_exponent(rng, rng.range(-16, 16), false);
  return rng.one_in(2) ? rng.pick(kF32Finite) : rng.pick(kF32NonFinite);
}

// One draw whatever is chosen, so that choosing one field's values leaves the
// other fields' draws alone (and one chosen value draws what it always did).
template <class T, size_t N>
T draw(Rng& rng, const std::vector<T>& chosen, const std::array<T, N>& all) {
  const uint64_t r = rng.bits();
  return chosen.empty() ? all[r % N] : chosen[r % chosen.size()];
}
template <class T, size_t N>
T draw(Rng& rng, const std::optional<T>& fixed, const std::array<T, N>& all) {
  const T drawn = rng.pick(all);
  return fixed.value_or(drawn);
}
// A policy is drawn only from a set of two or more: streams of the default policy
// are what they were before policies existed.
template <class T>
T draw_policy(Rng& rng, const std::vector<T>& chosen) {
  if (chosen.size() < 2) return chosen.empty() ? T{} : chosen.front();
  return chosen[rng.bits() % chosen.size()];
}

QuantizeCase random_quantize(Rng& rng, const GenerateOptions& o) {
  QuantizeCase c;
  c.format = draw(rng, o.formats_a, kAllFormats);
  c.mode = draw(rng, o.modes, kAllScaleModes);
  c.policy.zero = draw_policy(rng, o.zero_policies);
  c.policy.nonfinite = draw_policy(rng, o.nonfinite_policies);
  c.length = draw(rng, o.lengths, kBlockLengths);
  c.rounding = draw(rng, o.roundings, kAllRoundings);
  c.sr_bits = draw(rng, o.sr_bits, std::array<int, 8>{1, 2, 3, 4, 5, 6, 7, 8});
  c.seed = o.seed;
  c.stream = rng.below(4);
  c.group = rng.bits() >> 32;
  c.x = draw_block(rng, c.format, c.length);
  std::vector<float> x(c.x.size());
  std::transform(c.x.begin(), c.x.end(), x.begin(), f32_from_bits);
  // The tensor around the block: the block holds its largest value, or a larger
  // one, or (E4M3 then saturates) a smaller one, or the tensor is all zero.
  const float amax = scale_amax(x.data(), x.size(), c.policy.nonfinite);
  const uint32_t style = rng.below(8);
  float amax_tensor = amax;
  if (style == 4 || style == 5) amax_tensor = amax * exp2_f32(rng.range(1, 24));
  if (style == 6) amax_tensor = amax * exp2_f32(-rng.range(1, 12));
  if (style == 7) amax_tensor = 0.0f;
  const TensorScale t = tensor_scale(c.mode, c.format, amax_tensor);
  c.s_enc = f32_bits(t.encode);
  c.g = f32_bits(t.decode);
  c.random = sr_random_bits(c);
  compute_expected(c);
  return c;
}

DotCase random_dot(Rng& rng, const GenerateOptions& o) {
  DotCase c;
  c.fa = draw(rng, o.formats_a, kAllFormats);
  c.fb = draw(rng, o.formats_b, kAllFormats);
  c.sfa = draw(rng, o.scales_a, kAllScaleFormats);
  c.sfb = draw(rng, o.scales_b, kAllScaleFormats);
  c.length = draw(rng, o.lengths, kBlockLengths);
  c.nblocks = draw(rng, o.nblocks, std::array<int, 8>{1, 2, 3, 4, 5, 6, 7, 8});
  for (int b = 0; b < c.nblocks; ++b) {
    draw_codes(rng, c.fa, static_cast<size_t>(c.length), c.codes_a);
    draw_codes(rng, c.fb, static_cast<size_t>(c.length), c.codes_b);
    c.scales_a.push_back(draw_scale_code(rng, c.sfa));
    c.scales_b.push_back(draw_scale_code(rng, c.sfb));
  }
  c.ga = draw_tensor_decode(rng);
  c.gb = draw_tensor_decode(rng);
  compute_expected(c);
  return c;
}

std::vector<float> draw_matrix(Rng& rng, int rows, int cols) {
  std::vector<float> x;
  for (int r = 0; r < rows; ++r) {
    const int e = rng.range(-12, 12);
    const bool zero_row = rng.one_in(16);
    for (int c = 0; c < cols; ++c) {
      x.push_back(zero_row ? 0.0f : f32_from_bits(f32_with_exponent(rng, e - rng.range(0, 6))));
    }
  }
  if (rng.one_in(16)) x[rng.below(static_cast<uint32_t>(x.size()))] = f32_from_bits(rng.pick(kF32NonFinite));
  return x;
}

GemmTileCase random_gemm_tile(Rng& rng, const GenerateOptions& o) {
  GemmTileCase c;
  c.fa = draw(rng, o.formats_a, kAllFormats);
  c.fb = draw(rng, o.formats_b, kAllFormats);
  c.mode_a = draw(rng, o.modes_a, kAllScaleModes);
  c.mode_b = draw(rng, o.modes_b, kAllScaleModes);
  c.block_a = draw(rng, o.blocks_a, kAllBlockShapes);
  c.block_b = draw(rng, o.blocks_b, kAllBlockShapes);
  c.m = o.m;
  c.n = o.n;
  c.k = o.k;
  if (rng.one_in(2)) {  // operands quantized by golden from FP32 data
    QuantConfig cfg;
    cfg.seed = o.seed;
    cfg.stream = rng.below(4);
    cfg.rounding = rng.one_in(2) ? Rounding::kNearestEven : Rounding::kStochastic;
    const std::vector<float> xa = draw_matrix(rng, c.m, c.k);
    quantize_operand(xa, c.m, c.k, cfg, c.fa, c.block_a, c.mode_a, c.codes_a, c.scales_a, c.ga);
    const std::vector<float> xb = draw_matrix(rng, c.n, c.k);
    quantize_operand(xb, c.n, c.k, cfg, c.fb, c.block_b, c.mode_b, c.codes_b, c.scales_b, c.gb);
  } else {  // arbitrary codes and scale codes, specials included
    draw_codes(rng, c.fa, static_cast<size_t>(c.m) * static_cast<size_t>(c.k), c.codes_a);
    draw_codes(rng, c.fb, static_cast<size_t>(c.n) * static_cast<size_t>(c.k), c.codes_b);
    draw_scale_codes(rng, scale_format(c.mode_a), scale_count(c.block_a, c.m, c.k), c.scales_a);
    draw_scale_codes(rng, scale_format(c.mode_b), scale_count(c.block_b, c.n, c.k), c.scales_b);
    c.ga = draw_tensor_decode(rng);
    c.gb = draw_tensor_decode(rng);
  }
  compute_expected(c);
  return c;
}

Case random_case(Rng& rng, const GenerateOptions& o) {
  switch (o.op) {
    case Op::kQuantize: return random_quantize(rng, o);
    case Op::kDot: return random_dot(rng, o);
    case Op::kGemmTile: return random_gemm_tile(rng, o);
  }
  throw std::invalid_argument("unknown op");
}

// --- Streams --------------------------------------------------------------------------

void emit_stream(const GenerateOptions& o, const std::vector<Vector>& table,
                 const std::function<void(const Vector&)>& sink) {
  Rng rng(o.seed);
  const size_t count = static_cast<size_t>(o.count);
  for (size_t i = 0; i < std::max(count, table.size()); ++i) {
    if (i < count) sink(Vector{random_case(rng, o), std::string(), 0});
    if (i < table.size()) sink(table[i]);
  }
}

std::string field_order(const GenerateOptions& o) {
  switch (o.op) {
    case Op::kQuantize:
      // Streams of the default policies are written as before the policies existed.
      if (o.zero_policies.empty() && o.nonfinite_policies.empty()) {
        return "quantize format scale_mode length rounding sr_bits seed stream group s_enc g x[length] "
               "random[length] scale_code codes";
      }
      return "quantize format scale_mode [zero nonfinite] length rounding sr_bits seed stream group s_enc g "
             "x[length] random[length] scale_code codes (zero nonfinite: present where not positive finite)";
    case Op::kDot:
      return "dot fa fb sfa sfb length nblocks codes_a[nblocks] codes_b[nblocks] scales_a[nblocks] scales_b[nblocks] "
             "ga gb p[nblocks] r[nblocks] result";
    case Op::kGemmTile:
      return "gemm-tile fa fb mode_a mode_b block_a block_b m n k codes_a[m] codes_b[n] scales_a[..] scales_b[..] ga "
             "gb "
             "c[m*n]";
  }
  return "";
}

}  // namespace

// --- Generation ----------------------------------------------------------------------------

namespace {

template <class T>
void require_distinct(const std::vector<T>& values, const char* option) {
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (values[i] == values[j]) {
        if constexpr (std::is_same_v<T, int>) {
          throw std::invalid_argument(std::string(option) + " names " + std::to_string(values[i]) + " twice");
        } else {
          throw std::invalid_argument(std::string(option) + " names " + std::string(name(values[i])) + " twice");
        }
      }
    }
  }
}

// ",".join of the values' names, for the command line.
template <class T>
std::string joined(const std::vector<T>& values) {
  std::string s;
  for (const T& v : values) {
    if (!s.empty()) s += ',';
    if constexpr (std::is_same_v<T, int>) {
      s += std::to_string(v);
    } else {
      s += std::string(name(v));
    }
  }
  return s;
}

}  // namespace

void validate(const GenerateOptions& o) {
  const auto reject = [&](bool set, const char* option, const char* ops) {
    if (set)
      throw std::invalid_argument(std::string(option) + " applies to " + ops + ", not " + std::string(name(o.op)));
  };
  if (o.count < 1) throw std::invalid_argument("--count must be at least 1, got " + std::to_string(o.count));
  const bool quantize = o.op == Op::kQuantize, dot = o.op == Op::kDot, tile = o.op == Op::kGemmTile;
  reject(!quantize && !o.modes.empty(), "--scale", "quantize");
  reject(!quantize && !o.roundings.empty(), "--rounding", "quantize");
  reject(!quantize && o.sr_bits.has_value(), "--sr-bits", "quantize");
  reject(!quantize && !o.zero_policies.empty(), "--zero", "quantize");
  reject(!quantize && !o.nonfinite_policies.empty(), "--nonfinite", "quantize");
  reject(quantize && !o.formats_b.empty(), "--format-b", "dot and gemm-tile");
  reject(!dot && (!o.scales_a.empty() || !o.scales_b.empty()), "--scale-a/--scale-b as scale formats", "dot");
  reject(!dot && o.nblocks.has_value(), "--nblocks", "dot");
  reject(!tile && (!o.modes_a.empty() || !o.modes_b.empty()), "--scale-a/--scale-b as scale modes", "gemm-tile");
  reject(!tile && (!o.blocks_a.empty() || !o.blocks_b.empty()), "--block-a/--block-b", "gemm-tile");
  reject(tile && !o.lengths.empty(), "--block-len", "quantize and dot");
  const char* format_a = quantize ? "--format" : "--format-a";
  require_distinct(o.formats_a, format_a);
  require_distinct(o.formats_b, "--format-b");
  require_distinct(o.modes, "--scale");
  require_distinct(o.modes_a, "--scale-a");
  require_distinct(o.modes_b, "--scale-b");
  require_distinct(o.scales_a, "--scale-a");
  require_distinct(o.scales_b, "--scale-b");
  require_distinct(o.lengths, "--block-len");
  require_distinct(o.roundings, "--rounding");
  require_distinct(o.zero_policies, "--zero");
  require_distinct(o.nonfinite_policies, "--nonfinite");
  require_distinct(o.blocks_a, "--block-a");
  require_distinct(o.blocks_b, "--block-b");
  for (int length : o.lengths) {
    if (length != 16 && length != 32) {
      throw std::invalid_argument("--block-len must be 16 or 32, got " + std::to_string(length));
    }
  }
  if (o.sr_bits && (*o.sr_bits < 1 || *o.sr_bits > 8)) {
    throw std::invalid_argument("--sr-bits must be in 1..8, got " + std::to_string(*o.sr_bits));
  }
  if (o.nblocks && (*o.nblocks < 1 || *o.nblocks > kMaxDotBlocks)) {
    throw std::invalid_argument("--nblocks must be in 1.." + std::to_string(kMaxDotBlocks) + ", got " +
                                std::to_string(*o.nblocks));
  }
  if (tile) {
    const auto dim = [](const char* opt, int v, int hi) {
      if (v < 1 || v > hi) {
        throw std::invalid_argument(std::string(opt) + " must be in 1.." + std::to_string(hi) + ", got " +
                                    std::to_string(v));
      }
    };
    dim("--m", o.m, kMaxTileRows);
    dim("--n", o.n, kMaxTileRows);
    dim("--k", o.k, kMaxTileK);
  }
}

std::string command_line(const GenerateOptions& o) {
  std::string s = "nibble vectors " + std::string(name(o.op)) + " --seed " + std::to_string(o.seed) + " --count " +
                  std::to_string(o.count);
  const auto opt = [&s](const char* flag, const auto& values) {
    if (!values.empty()) s += std::string(" ") + flag + " " + joined(values);
  };
  const auto num = [&s](const char* flag, const std::optional<int>& value) {
    if (value) s += std::string(" ") + flag + " " + std::to_string(*value);
  };
  opt(o.op == Op::kQuantize ? "--format" : "--format-a", o.formats_a);
  opt("--format-b", o.formats_b);
  opt("--scale", o.modes);
  opt("--scale-a", o.modes_a);
  opt("--scale-b", o.modes_b);
  opt("--scale-a", o.scales_a);
  opt("--scale-b", o.scales_b);
  opt("--rounding", o.roundings);
  opt("--zero", o.zero_policies);
  opt("--nonfinite", o.nonfinite_policies);
  opt("--block-a", o.blocks_a);
  opt("--block-b", o.blocks_b);
  opt("--block-len", o.lengths);
  num("--sr-bits", o.sr_bits);
  num("--nblocks", o.nblocks);
  if (o.op == Op::kGemmTile)
    s += " --m " + std::to_string(o.m) + " --n " + std::to_string(o.n) + " --k " + std::to_string(o.k);
  if (!o.boundary) s += " --no-boundary";
  return s;
}

void generate(const GenerateOptions& o, const std::function<void(const Vector&)>& sink) {
  emit_stream(o, o.boundary ? boundary_table(o) : std::vector<Vector>{}, sink);
}

std::vector<Vector> generate(const GenerateOptions& o) {
  std::vector<Vector> out;
  generate(o, [&out](const Vector& v) { out.push_back(v); });
  return out;
}

StreamCounts write_stream(std::ostream& out, const GenerateOptions& o) {
  const std::vector<Vector> table = o.boundary ? boundary_table(o) : (validate(o), std::vector<Vector>{});
  StreamCounts counts{static_cast<size_t>(o.count), table.size()};
  out << "# nibble golden test vectors: " << name(o.op) << " (the line format is in docs/vectors.md)\n"
      << "# command: " << command_line(o) << '\n'
      << "# seed: " << o.seed << " (std::mt19937_64 draws the random cases; SR bits are Philox4x32-10 per philox.h)\n"
      << "# cases: " << counts.random << " seeded random and " << counts.boundary << " boundary"
      << (o.boundary ? std::string(", interleaved; each boundary case follows a '") + std::string(kBoundaryTag) +
                           " <label>' line"
                     : std::string(" (table left out)"))
      << '\n'
      << "# fields: " << field_order(o) << '\n'
      << "# numbers: names in lower case; sizes decimal; FP32 values 8 hex digits; scale codes 2 hex digits (e4m3, "
         "ue8m0) or 8 (fp32); codes one hex digit per element, element 0 first"
      << (o.op == Op::kDot ? "; p signed decimal" : "") << '\n';
  emit_stream(o, table, [&out](const Vector& v) { write_vector(out, v); });
  return counts;
}

}  // namespace nibble::vectors
