#include "reference.h"

#include <Random123/philox.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace nibble::reference {
namespace {

// ---- Literal tables ------------------------------------------------------------

struct FormatTable {
  std::array<const char*, 16> values;  // code 0x0 .. 0xF
  int negative_zero_code;              // -1: none
  const char* max_quantized;
};

// Read off the OCP MX and two's-complement definitions by hand, code by code.
const FormatTable& literal_table(Format f) {
  static const FormatTable kE2M1 = {
      {"0", "1/2", "1", "3/2", "2", "3", "4", "6", "0", "-1/2", "-1", "-3/2", "-2", "-3", "-4", "-6"}, 0x8, "6"};
  static const FormatTable kE1M2 = {
      {"0", "1/4", "1/2", "3/4", "1", "5/4", "3/2", "7/4", "0", "-1/4", "-1/2", "-3/4", "-1", "-5/4", "-3/2", "-7/4"},
      0x8,
      "7/4"};
  static const FormatTable kInt4 = {
      {"0", "1", "2", "3", "4", "5", "6", "7", "-8", "-7", "-6", "-5", "-4", "-3", "-2", "-1"}, -1, "7"};
  switch (f) {
    case Format::kE2M1: return kE2M1;
    case Format::kE1M2: return kE1M2;
    case Format::kInt4: return kInt4;
  }
  throw std::invalid_argument("reference: unknown format");
}

size_t format_index(Format f) {
  switch (f) {
    case Format::kE2M1: return 0;
    case Format::kE1M2: return 1;
    case Format::kInt4: return 2;
  }
  throw std::invalid_argument("reference: unknown format");
}

Rational parse(const char* text) {
  Rational q(text);
  q.canonicalize();
  return q;
}

struct ParsedTable {
  std::array<Rational, 16> values;
  Rational max_quantized;
};

const ParsedTable& parsed_table(Format f) {
  static const std::array<ParsedTable, 3> kTables = [] {
    std::array<ParsedTable, 3> t;
    for (Format g : {Format::kE2M1, Format::kE1M2, Format::kInt4}) {
      const FormatTable& lit = literal_table(g);
      ParsedTable& p = t[format_index(g)];
      for (size_t c = 0; c < 16; ++c) p.values[c] = parse(lit.values[c]);
      p.max_quantized = parse(lit.max_quantized);
    }
    return t;
  }();
  return kTables[format_index(f)];
}

// ---- Small exact helpers -------------------------------------------------------

Rational power_of_two(int k) {
  mpz_class p = 1;
  mpz_mul_2exp(p.get_mpz_t(), p.get_mpz_t(), static_cast<mp_bitcnt_t>(k < 0 ? -k : k));
  return k < 0 ? Rational(mpz_class(1), p) : Rational(p);
}

// floor(log2 q) for q > 0.
int floor_log2(const Rational& q) {
  int k =
      static_cast<int>(mpz_sizeinbase(q.get_num_mpz_t(), 2)) - static_cast<int>(mpz_sizeinbase(q.get_den_mpz_t(), 2));
  while (q < power_of_two(k)) --k;
  while (q >= power_of_two(k + 1)) ++k;
  return k;
}

mpz_class floor_of(const Rational& q) {
  mpz_class f;
  mpz_fdiv_q(f.get_mpz_t(), q.get_num_mpz_t(), q.get_den_mpz_t());
  return f;
}

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = float_of(0x7FC00000u);

float with_sign(float magnitude, bool negative) { return negative ? -magnitude : magnitude; }

// Below FLT_MAX + half an ulp = 2^128 - 2^103 a value rounds to a finite float;
// at it, the tie goes to the even "2^128", i.e. overflow.
const Rational& overflow_threshold() {
  static const Rational kThreshold = power_of_two(128) - power_of_two(103);
  return kThreshold;
}

// The nearest binary32 to m >= 0 below the overflow threshold: start from the
// double approximation and settle between its float neighbours by exact distance.
float round_finite_magnitude(const Rational& m) {
  const float guess = static_cast<float>(m.get_d());
  const float candidates[3] = {std::nextafter(guess, 0.0f), guess, std::nextafter(guess, kInf)};
  float best = guess;
  Rational best_distance = abs(exact(guess) - m);
  for (float c : candidates) {
    if (std::isinf(c)) continue;
    const Rational d = abs(exact(c) - m);
    if (d < best_distance || (d == best_distance && (bits_of(c) & 1u) == 0 && (bits_of(best) & 1u) != 0)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

// ---- Element search --------------------------------------------------------------

bool quantizable(Format f, uint8_t code) { return abs(parsed_table(f).values[code]) <= parsed_table(f).max_quantized; }

// The code nearest to `target` among the quantizer's codes; ties to the even code.
uint8_t nearest_code(const Rational& target, Format f) {
  const std::array<Rational, 16>& values = parsed_table(f).values;
  int best = -1;
  Rational best_distance;
  for (int code = 0; code < 16; ++code) {
    if (!quantizable(f, static_cast<uint8_t>(code))) continue;
    const Rational d = abs(values[static_cast<size_t>(code)] - target);
    const bool closer = best < 0 || d < best_distance;
    const bool tie_to_even = d == best_distance && code % 2 == 0 && best % 2 != 0;
    if (closer || tie_to_even) {
      best = code;
      best_distance = d;
    }
  }
  return static_cast<uint8_t>(best);
}

// The code of an exact signed value the format holds; a zero takes the input's sign
// where the format has a negative zero.
uint8_t code_of(Format f, const Rational& value, bool negative) {
  const FormatTable& lit = literal_table(f);
  if (value == 0) return negative && lit.negative_zero_code >= 0 ? static_cast<uint8_t>(lit.negative_zero_code) : 0;
  const std::array<Rational, 16>& values = parsed_table(f).values;
  for (uint8_t code = 0; code < 16; ++code) {
    if (values[code] == value) return code;
  }
  throw std::logic_error("reference: value not in the table");
}

std::vector<Rational> sorted_magnitudes(Format f) {
  std::vector<Rational> m;
  for (const Rational& v : parsed_table(f).values) {
    if (v >= 0 && v <= parsed_table(f).max_quantized && std::find(m.begin(), m.end(), v) == m.end()) m.push_back(v);
  }
  std::sort(m.begin(), m.end());
  return m;
}

// The distinct magnitudes a quantizer emits, ascending.
const std::vector<Rational>& quantizer_magnitudes(Format f) {
  static const std::array<std::vector<Rational>, 3> kGrids = {
      sorted_magnitudes(Format::kE2M1), sorted_magnitudes(Format::kE1M2), sorted_magnitudes(Format::kInt4)};
  return kGrids[format_index(f)];
}

// SR on magnitudes: lo <= m < hi are neighbouring table values.
Rational stochastic_magnitude(const Rational& m, Format f, uint32_t random, int bits) {
  const std::vector<Rational>& grid = quantizer_magnitudes(f);
  if (m >= grid.back()) return grid.back();
  size_t i = 0;
  while (grid[i + 1] <= m) ++i;
  const Rational& lo = grid[i];
  const Rational& hi = grid[i + 1];
  const Rational frac = (m - lo) / (hi - lo);
  const mpz_class first_bits = floor_of(frac * power_of_two(bits));
  const mpz_class one = mpz_class(1) << bits;
  return first_bits + random >= one ? hi : lo;
}

// ---- E4M3 ------------------------------------------------------------------------

struct E4M3Entry {
  bool nan;
  Rational value;
};

// OCP FP8 E4M3: S.EEEE.MMM, bias 7, subnormals at E = 0, S.1111.111 is NaN, no Inf.
const std::array<E4M3Entry, 256>& e4m3_table() {
  static const std::array<E4M3Entry, 256> kTable = [] {
    std::array<E4M3Entry, 256> t;
    for (int code = 0; code < 256; ++code) {
      const int e = (code >> 3) & 0xF;
      const int m = code & 0x7;
      const Rational mag = e == 0 ? Rational(m) / 8 * power_of_two(-6) : Rational(8 + m) / 8 * power_of_two(e - 7);
      t[static_cast<size_t>(code)] = {(code & 0x7F) == 0x7F, (code & 0x80) != 0 ? Rational(-mag) : mag};
    }
    return t;
  }();
  return kTable;
}

const Rational& e4m3_max() {
  static const Rational kMax = 448;
  return kMax;
}

// ---- Scales ----------------------------------------------------------------------

ScaleFormat scale_format_of(ScaleMode m) {
  switch (m) {
    case ScaleMode::kFP32: return ScaleFormat::kFP32;
    case ScaleMode::kNVFP4: return ScaleFormat::kE4M3;
    case ScaleMode::kMXFloor:
    case ScaleMode::kMXCeil: return ScaleFormat::kUE8M0;
  }
  throw std::invalid_argument("reference: unknown scale mode");
}

float at_most_flt_max(float x) { return std::isinf(x) && x > 0 ? kFltMax : x; }

float gmax_f32(Format f) { return to_binary32(max_quantized_magnitude(f)); }

BlockScale power_of_two_scale(int k) {
  k = std::clamp(k, -127, 127);
  return {static_cast<uint32_t>(k + 127), to_binary32(power_of_two(k)), to_binary32(power_of_two(-k))};
}

// OCP MX: k = floor(log2 amax) - emax, emax = floor(log2 gmax).
int mx_floor_exponent(float amax, Format f) { return floor_log2(exact(amax)) - floor_log2(max_quantized_magnitude(f)); }

// Smallest k with amax <= gmax * 2^k, i.e. k = ceil(log2(amax / gmax)).
int mx_ceil_exponent(float amax, Format f) {
  const Rational q = exact(amax) / max_quantized_magnitude(f);
  const int k = floor_log2(q);
  return q == power_of_two(k) ? k : k + 1;
}

// ---- Tensors ---------------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_config(const Config& cfg, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("reference: empty tensor");
  if (cfg.sr_bits < 1 || cfg.sr_bits > 8) throw std::invalid_argument("reference: sr_bits outside 1..8");
  const int n = cfg.rht_size;
  if (n != 0 && n != 16 && n != 32 && n != 64 && n != 128) throw std::invalid_argument("reference: RHT size");
  if (n != 0 && cols % n != 0) throw std::invalid_argument("reference: RHT size does not divide cols");
}

void rotate_rows(std::vector<float>& x, int64_t rows, int64_t cols, const Config& cfg) {
  const PhiloxWords signs = philox_words(cfg.seed, 0, 0, 1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; c += cfg.rht_size) {
      rht_group(&x[static_cast<size_t>(r * cols + c)], cfg.rht_size, signs, cfg.rht_bf16);
    }
  }
}

// Element (r, c) uses byte c % 16 of Philox call r * ceil(cols/16) + c/16, top B bits.
uint32_t sr_random_bits(const Config& cfg, int64_t r, int64_t c, int64_t cols) {
  const uint64_t group = static_cast<uint64_t>(r * ceil_div(cols, 16) + c / 16);
  const PhiloxWords w = philox_words(cfg.seed, group, cfg.stream, 0);
  const int lane = static_cast<int>(c % 16);
  const uint32_t byte = (w[static_cast<size_t>(lane / 4)] >> (8 * (lane % 4))) & 0xFFu;
  return byte >> (8 - cfg.sr_bits);
}

// A NaN product (a NaN scale, or Inf * 0) is code 0; a zero result keeps its sign
// only under the signed-zero policy (and only where the format has a negative zero).
uint8_t quantize_element(float x, float encode, const Config& cfg, uint32_t random) {
  const float v = mul(x, encode);
  if (std::isnan(v)) return 0;
  const uint8_t code = cfg.rounding == Rounding::kNearestEven ? convert_nearest_even(v, cfg.format)
                                                              : convert_stochastic(v, cfg.format, random, cfg.sr_bits);
  if (code_values(cfg.format)[code] != 0) return code;
  return cfg.zero == ZeroPolicy::kSigned ? code : uint8_t{0};
}

struct BlockRange {
  int64_t r0, r1, c0, c1;
};

// The largest |x|: under the finite policy over the finite values; under propagate NaN
// if any value is NaN, else +Inf if any is infinite.
float policy_amax(const std::vector<float>& values, NonFinitePolicy p) {
  bool nan = false, inf = false;
  float amax = 0.0f;
  for (float v : values) {
    if (std::isnan(v)) {
      nan = true;
    } else if (std::isinf(v)) {
      inf = true;
    } else if (std::fabs(v) > amax) {
      amax = std::fabs(v);
    }
  }
  if (p == NonFinitePolicy::kFinite) return amax;
  return nan ? kNaN : (inf ? kInf : amax);
}

void quantize_block(const std::vector<float>& work, const BlockRange& b, Tensor& q, size_t scale_index) {
  std::vector<float> values;
  for (int64_t r = b.r0; r < b.r1; ++r) {
    for (int64_t c = b.c0; c < b.c1; ++c) values.push_back(work[static_cast<size_t>(r * q.cols + c)]);
  }
  const Config& cfg = q.config;
  const bool finite = std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
  const bool nan_block = !finite && cfg.nonfinite == NonFinitePolicy::kFinite;
  // Qualified here and in quantize(): the enum arguments make golden's overloads visible by ADL.
  const BlockScale s = nan_block ? nonfinite_block_scale(cfg.scale)
                                 : reference::block_scale(cfg.scale, cfg.format, policy_amax(values, cfg.nonfinite),
                                                          q.tensor);
  q.scales[scale_index] = s.code;
  if (nan_block) return;
  for (int64_t r = b.r0; r < b.r1; ++r) {
    for (int64_t c = b.c0; c < b.c1; ++c) {
      const size_t i = static_cast<size_t>(r * q.cols + c);
      const uint32_t random = cfg.rounding == Rounding::kStochastic ? sr_random_bits(cfg, r, c, q.cols) : 0u;
      q.codes[i] = quantize_element(work[i], s.encode, cfg, random);
    }
  }
}

size_t scale_index_at(const Tensor& q, int64_t r, int64_t c) {
  const int64_t grid_cols = ceil_div(q.cols, block_width(q.config.block));
  return static_cast<size_t>((r / block_height(q.config.block)) * grid_cols + c / block_width(q.config.block));
}

float block_scale_at(const Tensor& q, int64_t r, int64_t c) {
  return scale_value(scale_format_of(q.config.scale), q.scales[scale_index_at(q, r, c)]);
}

float element_value(Format f, uint8_t code) { return to_binary32(code_values(f)[code], is_negative_zero(f, code)); }

}  // namespace

// ---- Public: tables ---------------------------------------------------------------

const std::array<Rational, 16>& code_values(Format f) { return parsed_table(f).values; }

bool is_negative_zero(Format f, uint8_t code) { return literal_table(f).negative_zero_code == (code & 0xF); }

const Rational& max_quantized_magnitude(Format f) { return parsed_table(f).max_quantized; }

// ---- Public: binary32 ---------------------------------------------------------------

Rational exact(float x) {
  if (!std::isfinite(x)) throw std::invalid_argument("reference: exact() of a non-finite float");
  return Rational(static_cast<double>(x));  // float -> double and mpq_set_d are both exact
}

float to_binary32(const Rational& v, bool negative_zero) {
  if (v == 0) return with_sign(0.0f, negative_zero);
  const Rational m = abs(v);
  const float magnitude = m >= overflow_threshold() ? kInf : round_finite_magnitude(m);
  return with_sign(magnitude, v < 0);
}

float add(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (std::isinf(a) && std::isinf(b)) return std::signbit(a) == std::signbit(b) ? a : kNaN;
  if (std::isinf(a)) return a;
  if (std::isinf(b)) return b;
  // An exact zero sum is +0 under round-to-nearest unless both addends are -0.
  return to_binary32(exact(a) + exact(b), std::signbit(a) && std::signbit(b));
}

float sub(float a, float b) { return add(a, -b); }

float mul(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  const bool negative = std::signbit(a) != std::signbit(b);
  if (std::isinf(a) || std::isinf(b)) return (a == 0.0f || b == 0.0f) ? kNaN : with_sign(kInf, negative);
  return to_binary32(exact(a) * exact(b), negative);
}

float div(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  const bool negative = std::signbit(a) != std::signbit(b);
  if (std::isinf(a)) return std::isinf(b) ? kNaN : with_sign(kInf, negative);
  if (std::isinf(b)) return with_sign(0.0f, negative);
  if (b == 0.0f) return a == 0.0f ? kNaN : with_sign(kInf, negative);
  return to_binary32(exact(a) / exact(b), negative);
}

// bfloat16 values are the floats whose low 16 bits are zero: pick the nearer of
// the two that bracket |x| (the upper one may be Inf, standing for 2^128).
float to_bfloat16(float x) {
  if (std::isnan(x)) return kNaN;
  if (std::isinf(x)) return x;
  const Rational m = abs(exact(x));
  const uint32_t below = bits_of(std::fabs(x)) & 0xFFFF0000u;
  const uint32_t above = below + 0x10000u;
  const Rational above_value = above == 0x7F800000u ? power_of_two(128) : exact(float_of(above));
  const Rational d_below = m - exact(float_of(below));
  const Rational d_above = above_value - m;
  const bool up = d_above < d_below || (d_above == d_below && (above & 0x10000u) == 0);
  return with_sign(float_of(up ? above : below), std::signbit(x));
}

// ---- Public: elements ---------------------------------------------------------------

uint8_t convert_nearest_even(float v, Format f) {
  if (std::isnan(v)) throw std::invalid_argument("reference: NaN has no code");
  const bool negative = std::signbit(v);
  const Rational& max = max_quantized_magnitude(f);
  const Rational target = std::isinf(v) ? Rational(negative ? -max : max) : exact(v);
  const uint8_t code = nearest_code(target, f);
  return code_of(f, code_values(f)[code], negative);
}

uint8_t convert_stochastic(float v, Format f, uint32_t random, int bits) {
  if (std::isnan(v)) throw std::invalid_argument("reference: NaN has no code");
  const bool negative = std::signbit(v);
  const Rational& max = max_quantized_magnitude(f);
  const Rational magnitude = std::isinf(v) ? max : stochastic_magnitude(abs(exact(v)), f, random, bits);
  return code_of(f, negative ? Rational(-magnitude) : magnitude, negative);
}

// ---- Public: scales -----------------------------------------------------------------

uint8_t encode_e4m3(float x) {
  if (std::isnan(x)) return 0x7F;
  const bool negative = std::signbit(x);
  const Rational target = std::isinf(x) ? Rational(negative ? -e4m3_max() : e4m3_max()) : exact(x);
  const std::array<E4M3Entry, 256>& table = e4m3_table();
  int best = -1;
  Rational best_distance;
  for (int code = 0; code < 256; ++code) {
    const E4M3Entry& e = table[static_cast<size_t>(code)];
    if (e.nan) continue;
    const Rational d = abs(e.value - target);
    if (best < 0 || d < best_distance || (d == best_distance && code % 2 == 0 && best % 2 != 0)) {
      best = code;
      best_distance = d;
    }
  }
  if (table[static_cast<size_t>(best)].value == 0) return negative ? 0x80 : 0x00;
  return static_cast<uint8_t>(best);
}

float scale_value(ScaleFormat f, uint32_t code) {
  switch (f) {
    case ScaleFormat::kFP32: return float_of(code);
    case ScaleFormat::kUE8M0:
      code &= 0xFFu;
      return code == 0xFFu ? kNaN : to_binary32(power_of_two(static_cast<int>(code) - 127));
    case ScaleFormat::kE4M3: {
      const E4M3Entry& e = e4m3_table()[code & 0xFFu];
      return e.nan ? kNaN : to_binary32(e.value, (code & 0x80u) != 0);
    }
  }
  throw std::invalid_argument("reference: unknown scale format");
}

TensorScale tensor_scale(ScaleMode m, Format f, float amax_tensor) {
  if (m != ScaleMode::kNVFP4) return {};
  if (std::isnan(amax_tensor)) return {kNaN, kNaN};  // 448 gmax / NaN is NaN, not 0: it stays
  if (std::isinf(amax_tensor)) return {};             // 448 gmax / Inf = 0, which becomes 1
  if (amax_tensor == 0.0f) return {};
  float s_enc = to_binary32(e4m3_max() * max_quantized_magnitude(f) / exact(amax_tensor));
  if (s_enc == 0.0f) s_enc = 1.0f;
  s_enc = at_most_flt_max(s_enc);
  return {s_enc, div(1.0f, s_enc)};
}

BlockScale block_scale(ScaleMode m, Format f, float amax, const TensorScale& t) {
  if (std::isnan(amax)) return nonfinite_block_scale(m);
  switch (m) {
    case ScaleMode::kFP32: {
      const float s = div(amax, gmax_f32(f));
      return {bits_of(s), s, at_most_flt_max(div(1.0f, s))};
    }
    case ScaleMode::kNVFP4: {
      const uint8_t code = encode_e4m3(mul(amax, mul(t.encode, div(1.0f, gmax_f32(f)))));
      const float s = scale_value(ScaleFormat::kE4M3, code);
      return {code, s, at_most_flt_max(div(1.0f, mul(s, t.decode)))};
    }
    case ScaleMode::kMXFloor:
    case ScaleMode::kMXCeil:
      if (std::isinf(amax)) return power_of_two_scale(127);  // the exponent of +Inf, clamped
      if (amax == 0.0f) return power_of_two_scale(-127);
      return power_of_two_scale(m == ScaleMode::kMXFloor ? mx_floor_exponent(amax, f) : mx_ceil_exponent(amax, f));
  }
  throw std::invalid_argument("reference: unknown scale mode");
}

BlockScale nonfinite_block_scale(ScaleMode m) {
  switch (scale_format_of(m)) {
    case ScaleFormat::kFP32: return {0x7FC00000u, kNaN, kNaN};
    case ScaleFormat::kE4M3: return {0x7Fu, kNaN, kNaN};
    case ScaleFormat::kUE8M0: return {0xFFu, kNaN, kNaN};
  }
  throw std::invalid_argument("reference: unknown scale mode");
}

// ---- Public: Philox, RHT -------------------------------------------------------------

PhiloxWords philox_words(uint64_t seed, uint64_t group, uint32_t stream, uint32_t domain) {
  using Philox = r123::Philox4x32_R<10>;
  const Philox::key_type key = {{static_cast<uint32_t>(seed & 0xFFFFFFFFu), static_cast<uint32_t>(seed >> 32)}};
  const Philox::ctr_type ctr = {
      {static_cast<uint32_t>(group & 0xFFFFFFFFu), static_cast<uint32_t>(group >> 32), stream, domain}};
  const Philox::ctr_type out = Philox()(ctr, key);
  return {out[0], out[1], out[2], out[3]};
}

namespace {

// The binary32 nearest to 1/sqrt(n): c is nearest iff the midpoints m- < c < m+
// to its neighbours satisfy m-^2 < 1/n < m+^2 (1/sqrt(n) is irrational or exact).
float inverse_sqrt_binary32(int n) {
  float c = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  const Rational inv_n = Rational(1) / n;
  for (;;) {
    const Rational mid_up = (exact(c) + exact(std::nextafter(c, kInf))) / 2;
    const Rational mid_down = (exact(c) + exact(std::nextafter(c, 0.0f))) / 2;
    if (mid_up * mid_up < inv_n) {
      c = std::nextafter(c, kInf);
    } else if (mid_down * mid_down > inv_n) {
      c = std::nextafter(c, 0.0f);
    } else {
      return c;
    }
  }
}

}  // namespace

void rht_group(float* x, int n, const PhiloxWords& signs, bool round_bf16) {
  for (int i = 0; i < n; ++i) {
    if ((signs[static_cast<size_t>(i / 32)] >> (i % 32)) & 1u) x[i] = -x[i];
  }
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; ++i) {
      if ((i & h) != 0) continue;
      const float a = x[i];
      const float b = x[i + h];
      x[i] = add(a, b);
      x[i + h] = sub(a, b);
    }
  }
  const float c = inverse_sqrt_binary32(n);
  for (int i = 0; i < n; ++i) {
    x[i] = mul(x[i], c);
    if (round_bf16) x[i] = to_bfloat16(x[i]);
  }
}

// ---- Public: tensors ------------------------------------------------------------------

int block_height(BlockShape b) { return b == BlockShape::k16x16 ? 16 : 1; }

int block_width(BlockShape b) { return b == BlockShape::k1x32 ? 32 : 16; }

Tensor quantize(const std::vector<float>& x, int64_t rows, int64_t cols, const Config& cfg) {
  check_config(cfg, rows, cols);
  if (x.size() != static_cast<size_t>(rows * cols)) throw std::invalid_argument("reference: shape mismatch");
  Tensor q;
  q.rows = rows;
  q.cols = cols;
  q.config = cfg;
  std::vector<float> work = x;
  if (cfg.rht_size != 0) rotate_rows(work, rows, cols, cfg);
  q.tensor = reference::tensor_scale(cfg.scale, cfg.format, policy_amax(work, cfg.nonfinite));
  q.codes.assign(work.size(), 0);
  const int64_t bh = block_height(cfg.block);
  const int64_t bw = block_width(cfg.block);
  const int64_t grid_rows = ceil_div(rows, bh);
  const int64_t grid_cols = ceil_div(cols, bw);
  q.scales.assign(static_cast<size_t>(grid_rows * grid_cols), 0);
  for (int64_t br = 0; br < grid_rows; ++br) {
    for (int64_t bc = 0; bc < grid_cols; ++bc) {
      const BlockRange b = {br * bh, std::min(rows, (br + 1) * bh), bc * bw, std::min(cols, (bc + 1) * bw)};
      quantize_block(work, b, q, static_cast<size_t>(br * grid_cols + bc));
    }
  }
  return q;
}

std::vector<float> dequantize(const Tensor& q) {
  std::vector<float> out(q.codes.size());
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t c = 0; c < q.cols; ++c) {
      const size_t i = static_cast<size_t>(r * q.cols + c);
      const float scaled = mul(element_value(q.config.format, q.codes[i]), block_scale_at(q, r, c));
      out[i] = mul(scaled, q.tensor.decode);
    }
  }
  return out;
}

// The exact partial counts as +0 when it is zero, so a zero r_b takes the scale's sign.
float block_product(const Rational& partial, float scale_a, float scale_b) {
  const float s = mul(scale_a, scale_b);
  if (std::isnan(s)) return kNaN;
  const bool negative = (partial < 0) != std::signbit(s);
  if (std::isinf(s)) return partial == 0 ? kNaN : with_sign(kInf, negative);
  return to_binary32(partial * exact(s), negative);
}

float dot(const Tensor& a, int64_t ra, const Tensor& b, int64_t rb) {
  if (a.cols != b.cols) throw std::invalid_argument("reference: contraction lengths differ");
  const int64_t k = a.cols;
  const int64_t step = std::min(block_width(a.config.block), block_width(b.config.block));
  const std::array<Rational, 16>& va = code_values(a.config.format);
  const std::array<Rational, 16>& vb = code_values(b.config.format);
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += step) {
    Rational partial = 0;
    for (int64_t i = k0; i < std::min(k, k0 + step); ++i) {
      partial += va[a.codes[static_cast<size_t>(ra * k + i)]] * vb[b.codes[static_cast<size_t>(rb * k + i)]];
    }
    acc = add(acc, block_product(partial, block_scale_at(a, ra, k0), block_scale_at(b, rb, k0)));
  }
  return mul(acc, mul(a.tensor.decode, b.tensor.decode));
}

std::vector<float> gemm(const Tensor& a, const Tensor& b) {
  std::vector<float> c(static_cast<size_t>(a.rows * b.rows));
  for (int64_t m = 0; m < a.rows; ++m) {
    for (int64_t n = 0; n < b.rows; ++n) c[static_cast<size_t>(m * b.rows + n)] = dot(a, m, b, n);
  }
  return c;
}

}  // namespace nibble::reference
