// The integer encode and decode of element and scale codes, for host and
// device: constexpr functions of a code's fields (exponent and mantissa
// widths, bias, NaN code) that golden's formats.h and scale.cpp call with the
// rows of their tables, and that the CUDA kernels call with the same rows at
// compile time. Nothing here reads a table, so device code can call every
// function; nothing here rounds, so every result is exact.
#pragma once

#include <cstdint>

// Host and device: empty for host compilers.
#if defined(__CUDACC__)
#define NIBBLE_HOST_DEVICE __host__ __device__
#else
#define NIBBLE_HOST_DEVICE
#endif

namespace nibble {

// floor(log2 v) for v > 0; -1 for 0.
NIBBLE_HOST_DEVICE constexpr int msb_index(uint32_t v) {
  int p = -1;
  while (v != 0) {
    v >>= 1;
    ++p;
  }
  return p;
}

// The magnitude, in units 2^(emin - man_bits), of a sign-magnitude minifloat
// code (the sign bit is ignored): subnormal at exponent field 0.
NIBBLE_HOST_DEVICE constexpr uint32_t minifloat_units(uint32_t code, int exp_bits, int man_bits) {
  const uint32_t e = (code >> man_bits) & ((1u << exp_bits) - 1u);
  const uint32_t frac = code & ((1u << man_bits) - 1u);
  return e == 0 ? frac : ((1u << man_bits) + frac) << (e - 1);
}

// The sign-magnitude minifloat code of a grid magnitude `units` (an integer
// number of 2^(emin - man_bits)): exponent field 0 (subnormal) below
// 2^man_bits units, else floor(log2 units) - man_bits + 1, with the mantissa
// the bits below the leading one. The one encoder of E2M1, E1M2 and E4M3.
NIBBLE_HOST_DEVICE constexpr uint32_t minifloat_code(bool neg, uint32_t units, int exp_bits, int man_bits) {
  uint32_t e = 0;
  uint32_t frac = units;
  if (units >= (1u << man_bits)) {
    e = static_cast<uint32_t>(msb_index(units) - man_bits + 1);
    frac = (units >> (e - 1)) - (1u << man_bits);
  }
  return (neg ? 1u << (exp_bits + man_bits) : 0u) | (e << man_bits) | frac;
}

// A decoded element: (-1)^neg * units * 2^lsb_exp. Negative zero decodes as
// neg=true, units=0 (E2M1/E1M2 code 0x8).
struct Decoded {
  bool neg;
  uint32_t units;
  NIBBLE_HOST_DEVICE constexpr int32_t signed_units() const {
    return neg ? -static_cast<int32_t>(units) : static_cast<int32_t>(units);
  }
};

// A 4-bit element code (the low 4 bits of `code`) of a format with these
// fields: two's complement integers, or sign-magnitude minifloats.
NIBBLE_HOST_DEVICE constexpr Decoded decode_element(bool twos_complement, int exp_bits, int man_bits, uint32_t code) {
  code &= 0xFu;
  const bool neg = (code & 0x8u) != 0;
  if (twos_complement) return {neg, neg ? 16u - code : code};
  return {neg, minifloat_units(code, exp_bits, man_bits)};
}

// A scale code of a format narrower than binary32 (E4M3, UE8M0), decoded
// exactly: (-1)^neg * units * 2^exp, or NaN. Codes are `bits` wide; a sign
// bit sits above exponent and mantissa where bits > exp_bits + man_bits. A
// format with mantissa bits is a minifloat (subnormal at exponent field 0);
// one without is a power of two 2^(field - bias) (UE8M0). NaN: the
// magnitude bits equal those of nan_code (E4M3's S.1111.111, UE8M0's 0xFF).
struct ScaleCodeValue {
  bool nan;
  bool neg;
  uint32_t units;
  int exp;
};
NIBBLE_HOST_DEVICE constexpr ScaleCodeValue decode_scale_fields(int bits, int exp_bits, int man_bits, int bias,
                                                       uint32_t nan_code, uint32_t code) {
  const uint32_t mag_mask = (1u << (exp_bits + man_bits)) - 1u;
  code &= (1u << bits) - 1u;
  const bool neg = bits > exp_bits + man_bits && ((code >> (exp_bits + man_bits)) & 1u) != 0;
  if ((code & mag_mask) == (nan_code & mag_mask)) return {true, neg, 0u, 0};
  if (man_bits == 0) return {false, neg, 1u, static_cast<int>(code & mag_mask) - bias};
  return {false, neg, minifloat_units(code, exp_bits, man_bits), (1 - bias) - man_bits};
}

}  // namespace nibble
