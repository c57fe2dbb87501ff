// Private helpers shared by the vectors_*.cpp files (not part of the public API):
//   vectors_case.cpp      op names, case equality
//   vectors_text.cpp      hex/field formatting, parsing of lines and streams
//   vectors_compute.cpp   compute_expected, check, check_stream
//   vectors_generate.cpp  options, seeded random cases, stream assembly
//   vectors_boundary.cpp  boundary tables
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/vectors.h"

namespace nibble::vectors::detail {

inline constexpr std::string_view kHexDigits = "0123456789abcdef";
inline constexpr std::string_view kBoundaryTag = "# boundary:";

inline constexpr std::array<int, 2> kBlockLengths = {16, 32};

inline constexpr uint32_t kF32Max = 0x7F7FFFFFu;
inline constexpr uint32_t kF32MinSubnormal = 0x00000001u;

// --- Options (vectors_generate.cpp, vectors_boundary.cpp) ------------------------

// The values a set option allows: the set, or every value of `all` when it is empty.
template <class T, size_t N>
std::vector<T> allowed(const std::vector<T>& chosen, const std::array<T, N>& all) {
  return chosen.empty() ? std::vector<T>(all.begin(), all.end()) : chosen;
}
// A policy set: empty means the default policy alone.
template <class T>
std::vector<T> allowed_policies(const std::vector<T>& chosen) {
  return chosen.empty() ? std::vector<T>{T{}} : chosen;
}

// --- Hex and field names (vectors_text.cpp) ---------------------------------------

// v as `digits` lower-case hex digits, most significant first.
void put_hex(std::string& out, uint64_t v, int digits);
std::string hex(uint64_t v, int digits);
// "base[i]"
std::string indexed(std::string_view base, size_t i);
// Hex digits of a scale code in format f: 2 (e4m3, ue8m0) or 8 (fp32).
int scale_digits(ScaleFormat f);

// --- Golden's tiling and operands (vectors_compute.cpp) -------------------------------

// The number of block scales of a [rows, cols] tensor: golden's own tiling.
size_t scale_count(BlockShape block, int rows, int cols);

// Quantize x ([rows, cols], row-major) with golden under cfg, with cfg's format,
// block shape and scale mode replaced by f, block and mode, and take the
// result's codes, block scale codes and tensor decode scale g (FP32 bits).
void quantize_operand(const std::vector<float>& x, int rows, int cols, QuantConfig cfg, Format f, BlockShape block,
                      ScaleMode mode, std::vector<uint8_t>& codes, std::vector<uint32_t>& scales, uint32_t& g);

}  // namespace nibble::vectors::detail
