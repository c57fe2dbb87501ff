// IEEE binary32 helpers: the single place where an exact quantity becomes a
// float. Everything is integer arithmetic on bit patterns; nothing depends on
// the host's floating-point environment.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace nibble {

inline uint32_t f32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
// A bfloat16 bit pattern widened to the float it denotes (exact).
inline float f32_from_bf16_bits(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }
inline bool f32_is_finite(float x) { return (f32_bits(x) & 0x7F800000u) != 0x7F800000u; }

// Every NaN Nibble produces is this one: positive, quiet, zero payload. IEEE
// leaves the sign and payload of an invalid operation's NaN open (x86 makes
// 0*Inf the negative 0xFFC00000), so the contract fixes it, and every
// operation that can create or pass on a NaN returns it through canonical().
inline constexpr uint32_t kCanonicalNaN = 0x7FC00000u;
inline float canonical(float x) { return x != x ? f32_from_bits(kCanonicalNaN) : x; }

// A finite float as an exact integer product: (-1)^neg * sig * 2^exp, sig < 2^24.
struct F32Fields {
  bool neg;
  uint32_t sig;
  int exp;
};
// Inline: the bulk GEMM calls it once per block (through block_product).
inline F32Fields f32_fields(float x) {
  const uint32_t u = f32_bits(x);
  const uint32_t biased = (u >> 23) & 0xFFu;
  const uint32_t frac = u & 0x7FFFFFu;
  if (biased == 0xFFu) throw std::invalid_argument("f32_fields: not a finite float");
  if (biased == 0) return {(u >> 31) != 0, frac, -149};
  return {(u >> 31) != 0, frac | 0x800000u, static_cast<int>(biased) - 150};
}

// The binary32 nearest to (-1)^neg * mag * 2^exp2, ties to even, with
// subnormals kept and overflow to +-Inf. One rounding, whatever mag's width.
float round_to_f32(bool neg, uint64_t mag, int exp2);

// Round a float to the nearest bfloat16 (ties to even) and return it widened
// back to float; NaN becomes the canonical NaN.
float round_to_bf16(float x);

// 2^k as a float for k in [-149, 127] (exact, subnormal below -126).
float exp2_f32(int k);

}  // namespace nibble
