#include "nibble/fp32.h"

#include <stdexcept>

namespace nibble {
namespace {

int msb_index(uint64_t v) { return 63 - __builtin_clzll(v); }

}  // namespace

float round_to_f32(bool neg, uint64_t mag, int exp2) {
  const uint32_t sign = neg ? 0x80000000u : 0u;
  if (mag == 0) return f32_from_bits(sign);
  const int top = msb_index(mag) + exp2;  // value in [2^top, 2^(top+1))
  // Quantum of the result: 2^(top-23) for normals, 2^-149 for subnormals.
  int quantum = top - 23 < -149 ? -149 : top - 23;
  const int shift = quantum - exp2;
  uint64_t keep;
  if (shift <= 0) {
    keep = mag << -shift;  // exact: mag has at most 24 significant bits here
  } else if (shift >= 64) {
    // keep is 0; it rounds up to 1 only above half a quantum (shift == 64, mag > 2^63).
    keep = shift == 64 && mag > (uint64_t{1} << 63) ? 1u : 0u;
  } else {
    keep = mag >> shift;
    const uint64_t rem = mag & ((uint64_t{1} << shift) - 1u);
    const uint64_t half = uint64_t{1} << (shift - 1);
    // Round half to even, without a branch: the bits rounded away are data, and a
    // mispredicted branch here was most of a bulk GEMM's rounding time.
    keep += static_cast<uint64_t>((rem > half) | ((rem == half) & ((keep & 1u) != 0)));
  }
  if (keep == (1u << 24)) {  // rounding carried into the next binade
    keep >>= 1;
    ++quantum;
  }
  if (keep >= (1u << 23)) {
    const int biased = quantum + 23 + 127;
    if (biased >= 255) return f32_from_bits(sign | 0x7F800000u);
    return f32_from_bits(sign | (static_cast<uint32_t>(biased) << 23) | (static_cast<uint32_t>(keep) & 0x7FFFFFu));
  }
  return f32_from_bits(sign | static_cast<uint32_t>(keep));  // subnormal (or zero), quantum == -149
}

float round_to_bf16(float x) {
  const uint32_t u = f32_bits(x);
  if (!f32_is_finite(x)) return canonical(x);
  const uint32_t lower = u & 0xFFFFu;
  uint32_t upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u) != 0)) ++upper;  // may carry into Inf: correct
  return f32_from_bits(upper << 16);
}

float exp2_f32(int k) {
  if (k < -149 || k > 127) throw std::invalid_argument("exp2_f32: exponent outside binary32");
  if (k >= -126) return f32_from_bits(static_cast<uint32_t>(k + 127) << 23);
  return f32_from_bits(1u << (k + 149));
}

}  // namespace nibble
