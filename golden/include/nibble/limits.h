// The largest sizes Nibble accepts and the most work one command starts, and
// size arithmetic that cannot wrap. Every size that comes from outside -- a
// flag, a file's header, a configuration file -- is checked against these
// before anything is allocated or run; README.md ("Limits") lists them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace nibble::limits {

// Elements a command makes from its options or its inputs: a synthetic
// tensor, a GEMM's C, the chain's weights and activations (1 GiB as binary32).
// A tensor read from a file is bounded by the file itself; its shape's product
// only has to fit in int64 (checked_product).
inline constexpr int64_t kMaxWorkElements = int64_t{1} << 28;
// Multiply-accumulates of one GEMM (M x N x K) or of one compounding-chain run
// (layers x batch x width^2).
inline constexpr int64_t kMaxMacs = int64_t{1} << 40;
// Layers of the compounding chain.
inline constexpr int64_t kMaxChainLayers = 4096;
// The cycle bound of one timed GEMM simulation (20 times its expected length,
// stretched by the injected stalls; sim/src/tile_testbench.cpp).
inline constexpr uint64_t kMaxSimCycles = uint64_t{1} << 36;
// JSON inputs (safetensors headers, quantized-tensor metadata, tile
// configurations, results files): nesting depth and size in bytes.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxJsonBytes = std::size_t{1} << 26;
// One line of a test-vector stream (the largest gemm-tile case is a few MiB).
inline constexpr std::size_t kMaxVectorLineBytes = std::size_t{1} << 24;

// a * b, or nothing where the product does not fit in int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a + b, or nothing where the sum does not fit in int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of non-negative factors, or nothing where a factor is negative
// or a partial product -- zero factors left out -- exceeds `max`. Leaving the
// zeros out means a shape such as (2^32+1, 2^32+1, 0) is refused: its
// element count is 0, but the product of its leading axes still wraps.
template <class Range>
std::optional<int64_t> checked_product(const Range& factors, int64_t max = INT64_MAX) {
  int64_t nonzero = 1;
  bool zero = false;
  for (const auto factor : factors) {
    const auto f = static_cast<int64_t>(factor);
    if (f < 0) return std::nullopt;
    if (f == 0) {
      zero = true;
      continue;
    }
    const std::optional<int64_t> p = checked_mul(nonzero, f);
    if (!p || *p > max) return std::nullopt;
    nonzero = *p;
  }
  return zero ? 0 : nonzero;
}
inline std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors, int64_t max = INT64_MAX) {
  return checked_product<std::initializer_list<int64_t>>(factors, max);
}

}  // namespace nibble::limits
