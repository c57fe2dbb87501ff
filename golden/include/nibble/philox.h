// The random bits of stochastic rounding and the RHT sign vector, drawn from
// Philox4x32-10 (Salmon et al., SC'11) as implemented by Random123, which
// compiles unchanged for host and CUDA device code.
//
// Layout -- CUDA kernels and RTL testbenches reproduce exactly these bits:
//   key     = { seed & 0xffffffff, seed >> 32 }
//   counter = { group & 0xffffffff, group >> 32, stream, domain }
//   output  = 4 x 32-bit words w[0..3] = 16 bytes; byte j = (w[j/4] >> 8*(j%4)) & 0xff
//
// Stochastic rounding (domain 0): one call per group of 16 consecutive elements
// along the contraction axis. For a tensor of shape [rows, cols] (cols = the
// contraction axis), element (r, c) belongs to group r * ceil(cols/16) + c/16
// and takes byte j = c % 16 of that call; with B-bit rounding it uses the top
// B bits of its byte (B in 1..8).
//
// RHT signs (domain 1): one call with group = 0, stream = 0; sign i of an
// n-point transform (n <= 128) is -1 when bit i%32 of w[i/32] is set.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace nibble {

enum class PhiloxDomain : uint32_t { kStochasticRounding = 0, kRhtSigns = 1 };

using PhiloxWords = std::array<uint32_t, 4>;

PhiloxWords philox4x32_10(uint64_t seed, uint64_t group, uint32_t stream, PhiloxDomain domain);

// Index of the 16-element random group holding element (row, col).
inline uint64_t sr_group(uint64_t row, uint64_t col, uint64_t cols) {
  return row * ((cols + 15) / 16) + col / 16;
}

// The B random bits (B in 1..8) of lane j (0..15) of one Philox call.
inline uint32_t sr_lane_bits(const PhiloxWords& w, int lane, int bits) {
  const uint32_t byte = (w[static_cast<size_t>(lane) / 4] >> (8 * (lane % 4))) & 0xFFu;
  return byte >> (8 - bits);
}

}  // namespace nibble
