// Synthetic test tensors, reproducible from a seed on any host.
//
// Every element is drawn from its own Philox4x32-10 call (Random123), so an
// element's value depends only on (seed, stream, distribution, element index)
// and not on the tensor's shape or on how many elements were drawn before it:
//   key     = { seed & 0xffffffff, seed >> 32 }
//   counter = { i & 0xffffffff, i >> 32, stream, kSyntheticDomain + distribution }
// with i = row * cols + col (the outlier distribution draws the gaussian's
// words). The domain word keeps these draws apart from the
// golden model's stochastic-rounding bits and RHT signs (domains 0 and 1 of
// nibble/philox.h) made from the same seed.
//
// The four words w0..w3 of the call become uniforms with r123::u01<float> and
// normals with r123::boxmuller, both in binary32 (libm's logf/sincosf round to
// within an ulp; hosts with the same libm give the same bits). Every
// distribution has mean 0 and variance 1, so the inputs differ only in shape:
//   gaussian   boxmuller(w0, w1).x
//   laplace    scale 1/sqrt(2): -sgn(u - 1/2) ln(1 - 2|u - 1/2|) / sqrt(2), u = u01(w0)
//   student-t  nu = 3, scaled by 1/sqrt(3): z0 / sqrt((z1^2 + z2^2 + z3^2)/3) / sqrt(3)
//              from the four normals of boxmuller(w0, w1), boxmuller(w2, w3)
//   uniform    sqrt(3) (2 u01(w0) - 1), on [-sqrt(3), sqrt(3)]
//   outlier    the gaussian tensor of the same seed and stream, with column
//              outlier_column(seed, cols) scaled by 20: one channel far outside
//              the others, as in LLM activations.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace nibble::analysis {

enum class Distribution : uint8_t { kGaussian, kLaplace, kStudentT, kUniform, kOutlier };
inline constexpr std::array<Distribution, 5> kAllDistributions = {
    Distribution::kGaussian, Distribution::kLaplace, Distribution::kStudentT, Distribution::kUniform,
    Distribution::kOutlier};

inline constexpr uint32_t kSyntheticDomain = 0x414E0000u;  // "AN": analysis draws
inline constexpr float kOutlierGain = 20.0f;

std::optional<Distribution> parse_distribution(std::string_view name);
std::string_view name(Distribution d);

// The column the outlier distribution scales: a Philox draw from the seed.
int64_t outlier_column(uint64_t seed, int64_t cols);

// A row-major [rows, cols] tensor; throws std::invalid_argument unless rows, cols > 0.
std::vector<float> synthetic_tensor(Distribution d, int64_t rows, int64_t cols, uint64_t seed, uint32_t stream = 0);

}  // namespace nibble::analysis
