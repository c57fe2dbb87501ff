// GPU block-scaled GEMM against golden gemm, bit for bit (NaN = NaN), for every
// pair of element formats, every scale mode, mixed block shapes, stochastic
// rounding and RHT16 operands, NaN/Inf/zero/saturating blocks, NaN codes in the
// scale padding, UE8M0 scales on either side of the range where the wgmma kernel adds by
// FMAs or fold them into either operand, shapes that are not multiples of the
// tiles (128x128x128 in 3 stages), and C at any float offset.
// Every test body sweeps every kernel (cuda::kAllGemmKernels) on the
// same operands against the same golden result, and the wgmma kernel on each of its tile
// shapes (cuda::GemmTiles), each GEMM on shared memory poisoned just before
// (shared_memory_poison.h). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_util.h"
#include "nibble/cuda/device_buffer.h"
#include "nibble/cuda/gemm.h"
#include "nibble/cuda/detail/gemm_mma_sync_layout.h"
#include "nibble/cuda/detail/gemm_wgmma_layout.h"
#include "nibble/cuda/quantize.h"
#include "nibble/cuda/check.h"
#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "shared_memory_poison.h"

namespace nibble {
namespace {

// The tile shapes the wgmma kernel may be forced onto, and their names (gemm_tile_shape).
constexpr cuda::GemmTiles kForcedTiles[] = {cuda::GemmTiles::kFull, cuda::GemmTiles::kHalf, cuda::GemmTiles::kWide};
constexpr const char* kTileNames[] = {"128x128", "128x64", "64x128"};
int tile_index(cuda::GemmTiles tiles) {
  return tiles == cuda::GemmTiles::kHalf ? 1 : tiles == cuda::GemmTiles::kWide ? 2 : 0;
}

// Outputs compared, and how many of them were finite and non-zero: a suite
// whose expected outputs are all NaN or zero would pass vacuously. Counted per
// kernel, so that a kernel that ran nothing cannot pass.
struct GemmTally {
  size_t outputs = 0;
  size_t nontrivial = 0;
  size_t per_kernel_outputs[cuda::kAllGemmKernels.size()] = {};  // indexed by the enum value
  size_t wgmma_own_outputs = 0;  // computed by the wgmma kernel itself, not the mma.sync kernel in its place
  size_t wgmma_tile_outputs[3] = {};  // wgmma forced onto tiles of 128 x 128 [0], 128 x 64 [1], 64 x 128 [2]

  // Counts golden's outputs `want` as compared for `kernel`, which ran `runs`.
  void add(cuda::GemmKernel kernel, cuda::GemmKernel runs, const std::vector<float>& want) {
    outputs += want.size();
    per_kernel_outputs[static_cast<int>(kernel)] += want.size();
    if (runs == cuda::GemmKernel::kWgmma) wgmma_own_outputs += want.size();
    for (float v : want) nontrivial += std::isfinite(v) && v != 0.0f ? 1 : 0;
  }
  // Counts `want` as compared for the wgmma kernel itself forced onto `tiles`.
  void add_tiles(cuda::GemmTiles tiles, const std::vector<float>& want) {
    outputs += want.size();
    wgmma_tile_outputs[tile_index(tiles)] += want.size();
    for (float v : want) nontrivial += std::isfinite(v) && v != 0.0f ? 1 : 0;
  }
  // Prints what was compared, after `what` (the test's own cases, or empty).
  void print(const std::string& what, size_t mismatches) const {
    std::printf("%s%s%zu outputs compared (%zu finite non-zero), %zu mismatching\n", what.c_str(),
                what.empty() ? "" : ", ", outputs, nontrivial, mismatches);
  }
};

// Sets every scale code past a row's last block (columns scale_cols ..
// scales_ld - 1 of the scales) to all-ones bytes, a NaN in every scale format;
// returns how many codes it set.
size_t poison_scale_padding(cuda::DeviceQuantized& q) {
  std::vector<uint8_t> scales = q.scales.download();
  size_t poisoned = 0;
  for (int64_t r = 0; r < q.scale_rows; ++r) {
    for (int64_t c = q.scale_cols; c < q.scales_ld; ++c) {
      const size_t at = static_cast<size_t>((r * q.scales_ld + c) * q.scale_bytes);
      std::fill(scales.begin() + static_cast<std::ptrdiff_t>(at),
                scales.begin() + static_cast<std::ptrdiff_t>(at) + q.scale_bytes, uint8_t{0xFF});
      ++poisoned;
    }
  }
  q.scales.upload(scales);
  return poisoned;
}

using Outputs = std::vector<std::pair<int64_t, int64_t>>;

// count_float_mismatches for the outputs `at` (row, column) of a row-major C
// of `cols` columns, against golden's values `want` of them.
size_t count_mismatches_at(const std::vector<float>& c, int64_t cols, const Outputs& at,
                           const std::vector<float>& want, const std::string& label) {
  size_t bad = 0;
  for (size_t j = 0; j < at.size(); ++j) {
    const float got = c[static_cast<size_t>(at[j].first * cols + at[j].second)];
    if (!test::same_float(got, want[j]) && ++bad <= 5) {
      test::print_float_mismatch(label, at[j].first, at[j].second, got, want[j]);
    }
  }
  return bad;
}

// The current device's SM count (the wgmma kernel's tile choice depends on it), 0 where it
// cannot be read.
int device_sms() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 0;
  }
  return sms;
}

bool wgmma_runs(const cuda::DeviceQuantized& a, const cuda::DeviceQuantized& b) {
  return cuda::gemm_kernel_for(a, b, cuda::GemmKernel::kWgmma) == cuda::GemmKernel::kWgmma;
}

// Every byte of an operand's device storage: its codes, its scales (padding
// included) and its tensor-scale words.
std::vector<uint8_t> device_bytes(const cuda::DeviceQuantized& q) {
  std::vector<uint8_t> bytes = q.codes.download();
  const std::vector<uint8_t> scales = q.scales.download();
  bytes.insert(bytes.end(), scales.begin(), scales.end());
  const std::vector<float> tensor = q.tensor.download();
  const auto* words = reinterpret_cast<const uint8_t*>(tensor.data());
  bytes.insert(bytes.end(), words, words + tensor.size() * sizeof(float));
  return bytes;
}

// Where an operand's device storage differs from `before` (empty if nowhere).
std::string changed_bytes(const cuda::DeviceQuantized& q, const std::vector<uint8_t>& before) {
  const std::vector<uint8_t> after = device_bytes(q);
  size_t count = 0, first = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    if (after[i] != before[i] && count++ == 0) first = i;
  }
  if (count == 0) return "";
  const size_t codes = q.codes.size(), scales = q.scales.size();
  const char* part = first < codes ? "codes" : first < codes + scales ? "scales" : "tensor words";
  const size_t offset = first < codes ? first : first < codes + scales ? first - codes : first - codes - scales;
  return std::to_string(count) + " bytes changed, the first at byte " + std::to_string(offset) + " of its " + part +
         ": " + test::hex32(before[first]) + " -> " + test::hex32(after[first]);
}

// gemm_to_host on shared memory poisoned first (shared_memory_poison.h): a
// kernel that reads shared memory it did not write this call finds NaN there,
// not what the GEMM before it (often the same operands) left. The call must
// leave both operands' device storage as it was.
std::vector<float> gemm_on_poison(const cuda::DeviceQuantized& a, const cuda::DeviceQuantized& b,
                                  cuda::GemmKernel kernel, cuda::GemmTiles tiles = cuda::GemmTiles::kAuto) {
  test::poison_shared_memory();
  const std::vector<uint8_t> a_before = device_bytes(a), b_before = device_bytes(b);
  std::vector<float> c = cuda::gemm_to_host(a, b, kernel, tiles);
  const std::string a_changed = changed_bytes(a, a_before), b_changed = changed_bytes(b, b_before);
  EXPECT_EQ(a_changed, "") << cuda::name(kernel) << " changed operand A";
  EXPECT_EQ(b_changed, "") << cuda::name(kernel) << " changed operand B";
  return c;
}

// The wgmma kernel itself (where it runs) forced onto half tiles of either kind
// (128 x 64, and 64 x 128 on the operands swapped), against golden's `want`
// at the outputs `at` of C; returns mismatches.
size_t check_wgmma_half_tiles_at(const cuda::DeviceQuantized& qa, const cuda::DeviceQuantized& qb, const Outputs& at,
                                 const std::vector<float>& want, const std::string& label, GemmTally& tally) {
  if (!wgmma_runs(qa, qb)) return 0;
  size_t bad = 0;
  for (cuda::GemmTiles tiles : {cuda::GemmTiles::kHalf, cuda::GemmTiles::kWide}) {
    const std::vector<float> c = gemm_on_poison(qa, qb, cuda::GemmKernel::kWgmma, tiles);
    tally.add_tiles(tiles, want);
    const std::string shape = cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma, tiles);
    bad += count_mismatches_at(c, qb.rows, at, want, "the wgmma kernel on " + shape + " tiles " + label);
  }
  return bad;
}

// The wgmma kernel itself (where it runs) forced onto each tile shape, against
// golden's `want` (every output); returns mismatches.
size_t check_wgmma_tiles(const cuda::DeviceQuantized& qa, const cuda::DeviceQuantized& qb,
                         const std::vector<float>& want, const std::string& label, GemmTally& tally) {
  if (!wgmma_runs(qa, qb)) return 0;
  size_t bad = 0;
  for (cuda::GemmTiles tiles : kForcedTiles) {
    const std::vector<float> got = gemm_on_poison(qa, qb, cuda::GemmKernel::kWgmma, tiles);
    const std::string shape = cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma, tiles);
    EXPECT_EQ(shape, kTileNames[tile_index(tiles)]);
    tally.add_tiles(tiles, want);
    bad += test::count_float_mismatches(got, want, qb.rows, "the wgmma kernel on " + shape + " tiles " + label);
  }
  return bad;
}

// Quantizes both operands on the device (checked against golden by
// quantize_gpu_test) and golden, multiplies both ways, returns mismatches.
// With `specials`, A carries the planted NaN/Inf/zero/subnormal/huge blocks;
// with `poisoned` (not null), both operands' scale padding is set to NaN codes
// (poison_scale_padding) and *poisoned counts them.
size_t check_gemm(int64_t m, int64_t n, int64_t k, const QuantConfig& ca, const QuantConfig& cb, uint64_t seed,
                  bool specials, GemmTally& tally, size_t* poisoned = nullptr) {
  const std::vector<float> a = test::wide_range_tensor(m, k, seed, specials);
  const std::vector<float> b = test::wide_range_tensor(n, k, seed + 1, false);
  cuda::DeviceBuffer<float> da(a), db(b);
  cuda::DeviceQuantized qa = cuda::allocate_quantized(m, k, ca);
  cuda::DeviceQuantized qb = cuda::allocate_quantized(n, k, cb);
  cuda::quantize(da.data(), cuda::InputType::kFloat32, m, k, ca, &qa, nullptr);
  cuda::quantize(db.data(), cuda::InputType::kFloat32, n, k, cb, &qb, nullptr);
  if (poisoned != nullptr) *poisoned += poison_scale_padding(qa) + poison_scale_padding(qb);
  const std::vector<float> want = gemm(quantize(a.data(), m, k, ca), quantize(b.data(), n, k, cb));
  const std::string shape =
      test::describe(ca) + " x " + test::describe(cb) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
      std::to_string(k);
  size_t bad = 0;
  for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) {
    const std::vector<float> got = gemm_on_poison(qa, qb, kernel);
    const cuda::GemmKernel runs = cuda::gemm_kernel_for(qa, qb, kernel);  // mma.sync where wgmma does not apply
    const std::string kernel_name =
        std::string(cuda::name(kernel)) + (runs != kernel ? std::string(" (runs ") + cuda::name(runs) + ")" : "");
    tally.add(kernel, runs, want);
    bad += test::count_float_mismatches(got, want, n, kernel_name + " " + shape);
  }
  bad += check_wgmma_tiles(qa, qb, want, shape, tally);
  return bad;
}

// Every kernel compared the same number of outputs, and some; on a device
// of compute capability 9.0 the wgmma kernel computed some of its own (not
// through its mma.sync fallback), and with expect_tiles it also ran as many
// on each forced tile shape as on its own choice.
void expect_every_kernel_ran(const GemmTally& tally, bool expect_wgmma_own, bool expect_tiles = false) {
  const size_t per_kernel =
      tally.outputs - tally.wgmma_tile_outputs[0] - tally.wgmma_tile_outputs[1] - tally.wgmma_tile_outputs[2];
  for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) {
    EXPECT_GT(tally.per_kernel_outputs[static_cast<int>(kernel)], 0u) << cuda::name(kernel);
    EXPECT_EQ(tally.per_kernel_outputs[static_cast<int>(kernel)], per_kernel / cuda::kAllGemmKernels.size())
        << cuda::name(kernel);
  }
  if (expect_tiles) {
    for (cuda::GemmTiles tiles : kForcedTiles) {
      EXPECT_EQ(tally.wgmma_tile_outputs[tile_index(tiles)], tally.wgmma_own_outputs)
          << "the wgmma kernel forced onto " << kTileNames[tile_index(tiles)] << " tiles";
    }
  }
  if (expect_wgmma_own) {
    int device = 0, major = 0, minor = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
    if (major == 9 && minor == 0) {
      EXPECT_GT(tally.wgmma_own_outputs, 0u) << "the wgmma kernel only ever ran its mma.sync fallback";
    }
  }
}

// The GEMMs under test run on poisoned shared memory (gemm_on_poison): that
// the poison is what the next kernel finds is checked here, on every SM.
TEST(GpuGemm, SharedMemoryPoisonIsWhatTheNextKernelFinds) {
  NIBBLE_REQUIRE_GPU();
  const size_t unpoisoned = test::unpoisoned_shared_words();
  std::printf("shared memory read back after poisoning: %zu words not poison\n", unpoisoned);
  EXPECT_EQ(unpoisoned, 0u);
}

TEST(GpuGemm, EveryFormatPairScaleModeAndBlockPairMatchesGolden) {
  NIBBLE_REQUIRE_GPU();
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  const std::pair<BlockShape, BlockShape> block_pairs[] = {{BlockShape::k1x16, BlockShape::k1x16},
                                                           {BlockShape::k1x32, BlockShape::k1x32},
                                                           {BlockShape::k16x16, BlockShape::k1x16},
                                                           {BlockShape::k1x32, BlockShape::k1x16}};
  size_t cases = 0, mismatches = 0;
  GemmTally tally;
  uint64_t index = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (ScaleMode mode : kAllScaleModes) {
        for (const auto& [ba, bb] : block_pairs) {
          ++index;
          QuantConfig ca, cb;
          ca.format = fa;
          cb.format = fb;
          ca.scale = cb.scale = mode;
          ca.block = ba;
          cb.block = bb;
          // K = 200: a partial last block for both 16- and 32-wide blocks.
          mismatches += check_gemm(37, 45, 200, ca, cb, test::kKernelTestSeed + 10 * index, index % 3 == 0, tally);
          ++cases;
        }
      }
    }
  }
  tally.print(std::to_string(cases) + " GEMMs x " + std::to_string(cuda::kAllGemmKernels.size()) + " kernels",
              mismatches);
  EXPECT_GT(cases, 0u);
  expect_every_kernel_ran(tally, true, true);
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

TEST(GpuGemm, MixedScaleModesMatchGolden) {
  NIBBLE_REQUIRE_GPU();
  size_t cases = 0, mismatches = 0;
  GemmTally tally;
  uint64_t index = 500;
  for (ScaleMode ma : kAllScaleModes) {
    for (ScaleMode mb : kAllScaleModes) {
      QuantConfig ca, cb;
      ca.format = Format::kE2M1;
      cb.format = Format::kInt4;
      ca.scale = ma;
      cb.scale = mb;
      mismatches += check_gemm(20, 24, 96, ca, cb, ++index, false, tally);
      ++cases;
    }
  }
  tally.print(std::to_string(cases) + " GEMMs", mismatches);
  EXPECT_GT(cases, 0u);
  expect_every_kernel_ran(tally, true, true);
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

TEST(GpuGemm, ManyTilesWithSrAndRhtMatchGolden) {
  NIBBLE_REQUIRE_GPU();
  size_t mismatches = 0;
  GemmTally tally;
  QuantConfig c;
  c.format = Format::kE2M1;
  c.scale = ScaleMode::kNVFP4;
  c.rounding = Rounding::kStochastic;
  c.rht = RhtConfig{16, false};
  c.seed = 77;
  QuantConfig cb = c;
  cb.stream = 1;
  mismatches += check_gemm(260, 300, 1024, c, cb, 11, false, tally);
  c = QuantConfig{};
  c.format = Format::kE1M2;
  c.block = BlockShape::k1x32;
  c.scale = ScaleMode::kMXCeil;
  mismatches += check_gemm(129, 257, 544, c, c, 12, true, tally);
  c.scale = ScaleMode::kFP32;
  c.format = Format::kInt4;
  mismatches += check_gemm(256, 128, 4096, c, c, 13, false, tally);
  // The mma.sync kernel's pipeline: many 128-k stages (more than its 3 buffers), partial CTA
  // tiles on both axes, a partial last stage, 16x16 x 1x16 and 1x32 x 1x16
  // blocks (one operand's scale window covering two k-blocks), UE8M0 and
  // mixed-format operands, and an nvfp4 K that is not a multiple of 32.
  QuantConfig ca, cd;
  ca.format = Format::kE1M2;
  cd.format = Format::kE2M1;
  ca.block = BlockShape::k16x16;
  cd.block = BlockShape::k1x16;
  ca.scale = cd.scale = ScaleMode::kMXFloor;
  mismatches += check_gemm(200, 136, 1040, ca, cd, 14, true, tally);
  ca.block = BlockShape::k1x32;
  ca.scale = ScaleMode::kFP32;
  cd.scale = ScaleMode::kNVFP4;
  mismatches += check_gemm(131, 263, 912, ca, cd, 15, false, tally);
  ca = QuantConfig{};
  ca.scale = ScaleMode::kNVFP4;
  ca.block = BlockShape::k1x32;
  mismatches += check_gemm(384, 270, 1296, ca, ca, 16, false, tally);
  // The wgmma kernel's block pairs: 75 16-wide blocks, so the last stage ends on a block
  // without a partner (41 32-wide blocks above do the same for chained slices).
  ca.block = BlockShape::k1x16;
  ca.format = Format::kInt4;
  mismatches += check_gemm(200, 136, 1200, ca, ca, 17, true, tally);
  tally.print("seeds 11..17", mismatches);
  expect_every_kernel_ran(tally, true, true);
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

// The scale codes past a row's last k-block (padding up to scales_ld) are no
// part of the operand: every kernel must give golden's result whatever they
// hold. the wgmma kernel reads them with its stage's scale window and must zero them (both
// datapaths, and the scaled datapath's binary32 case, whose A scales stay in
// the window). K = 200: the last stage's window covers padding codes for 16-
// and 32-wide blocks.
TEST(GpuGemm, IgnoresScalePaddingPastTheLastBlock) {
  NIBBLE_REQUIRE_GPU();
  const std::pair<BlockShape, BlockShape> block_pairs[] = {{BlockShape::k1x16, BlockShape::k1x16},
                                                           {BlockShape::k1x32, BlockShape::k1x32},
                                                           {BlockShape::k16x16, BlockShape::k1x16},
                                                           {BlockShape::k1x32, BlockShape::k1x16}};
  size_t cases = 0, mismatches = 0, poisoned = 0;
  GemmTally tally;
  uint64_t index = 700;
  for (ScaleMode mode : kAllScaleModes) {
    for (const auto& [ba, bb] : block_pairs) {
      QuantConfig ca, cb;
      ca.format = Format::kE1M2;
      cb.format = Format::kInt4;
      ca.scale = cb.scale = mode;
      ca.block = ba;
      cb.block = bb;
      mismatches += check_gemm(40, 72, 200, ca, cb, ++index, false, tally, &poisoned);
      ++cases;
    }
  }
  tally.print("seeds 701.." + std::to_string(index) + ": " + std::to_string(cases) + " GEMMs, " +
                  std::to_string(poisoned) + " padding scale codes set to NaN",
              mismatches);
  EXPECT_GT(cases, 0u);
  EXPECT_GT(poisoned, 0u);
  expect_every_kernel_ran(tally, true, true);
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

// Lines of C crossing every tile along one axis (extent outputs, tiles of
// `tile`): each tile's first and last line, and one drawn from rng.
std::vector<int64_t> lines_crossing_every_tile(int64_t extent, int64_t tile, std::mt19937_64& rng) {
  std::vector<int64_t> lines;
  for (int64_t first = 0; first < extent; first += tile) {
    const int64_t last = std::min(first + tile, extent) - 1;
    lines.push_back(first);
    lines.push_back(last);
    lines.push_back(std::uniform_int_distribution<int64_t>(first, last)(rng));
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  return lines;
}

// Every output of whole rows `rows` (each across C's n columns), then of
// whole columns `cols` (each down C's m rows), and golden's values there.
Outputs whole_lines(const std::vector<int64_t>& rows, const std::vector<int64_t>& cols, int64_t m, int64_t n) {
  Outputs at;
  for (int64_t r : rows) {
    for (int64_t c = 0; c < n; ++c) at.emplace_back(r, c);
  }
  for (int64_t c : cols) {
    for (int64_t r = 0; r < m; ++r) at.emplace_back(r, c);
  }
  return at;
}
std::vector<float> golden_at(const QuantizedTensor& ga, const QuantizedTensor& gb, const Outputs& at) {
  std::vector<float> want;
  want.reserve(at.size());
  for (const auto& [r, c] : at) want.push_back(dot_rows(ga, r, gb, c));
  return want;
}

// A: m x k and B: n x k of seeded wide-range data, quantized on the device
// and by golden.
struct QuantizedPair {
  cuda::DeviceQuantized qa, qb;
  QuantizedTensor ga, gb;
};
QuantizedPair quantized_pair(int64_t m, int64_t n, int64_t k, const QuantConfig& ca, const QuantConfig& cb,
                             uint64_t& data_seed) {
  const std::vector<float> a = test::wide_range_tensor(m, k, ++data_seed, false);
  const std::vector<float> b = test::wide_range_tensor(n, k, ++data_seed, false);
  cuda::DeviceBuffer<float> da(a), db(b);
  QuantizedPair p{cuda::allocate_quantized(m, k, ca), cuda::allocate_quantized(n, k, cb), quantize(a.data(), m, k, ca),
                  quantize(b.data(), n, k, cb)};
  cuda::quantize(da.data(), cuda::InputType::kFloat32, m, k, ca, &p.qa, nullptr);
  cuda::quantize(db.data(), cuda::InputType::kFloat32, n, k, cb, &p.qb, nullptr);
  NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());  // before da and db are freed
  return p;
}

// C may start at any float (a view into a larger tensor): the epilogue stores
// a thread's two adjacent outputs as one 8-byte store only where C's rows keep
// them 8-byte aligned. Every kernel writes C at offsets 0 to 3 floats
// into a buffer of NaN canaries, for an even and an odd N, on both the wgmma kernel
// datapaths, and the wgmma kernel on 64 x 128 tiles too (C stored transposed): the outputs
// match golden and every float outside C keeps its canary.
TEST(GpuGemm, WritesCAtAnyFloatOffsetAndNothingOutsideIt) {
  NIBBLE_REQUIRE_GPU();
  const uint64_t seed = 930;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  constexpr uint32_t kCanary = 0xFFFFFFFFu;  // a NaN no kernel stores (they store the canonical one)
  constexpr int64_t kPad = 4;
  size_t mismatches = 0, canaries_hit = 0, writes = 0;
  GemmTally tally;
  uint64_t data_seed = seed;
  for (ScaleMode mode : {ScaleMode::kNVFP4, ScaleMode::kFP32}) {
    for (int64_t n : {136, 135}) {
      constexpr int64_t m = 130, k = 256;
      QuantConfig c;
      c.format = Format::kE1M2;
      c.scale = mode;
      const std::vector<float> a = test::wide_range_tensor(m, k, ++data_seed, false);
      const std::vector<float> b = test::wide_range_tensor(n, k, ++data_seed, false);
      cuda::DeviceBuffer<float> da(a), db(b);
      cuda::DeviceQuantized qa = cuda::allocate_quantized(m, k, c);
      cuda::DeviceQuantized qb = cuda::allocate_quantized(n, k, c);
      cuda::quantize(da.data(), cuda::InputType::kFloat32, m, k, c, &qa, nullptr);
      cuda::quantize(db.data(), cuda::InputType::kFloat32, n, k, c, &qb, nullptr);
      const std::vector<float> want = gemm(quantize(a.data(), m, k, c), quantize(b.data(), n, k, c));
      std::vector<std::pair<cuda::GemmKernel, cuda::GemmTiles>> runs;
      for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) runs.emplace_back(kernel, cuda::GemmTiles::kAuto);
      if (wgmma_runs(qa, qb)) runs.emplace_back(cuda::GemmKernel::kWgmma, cuda::GemmTiles::kWide);
      for (const auto& [kernel, tiles] : runs) {
        for (int64_t offset = 0; offset < kPad; ++offset) {
          const std::vector<uint32_t> fill(static_cast<size_t>(m * n + 2 * kPad), kCanary);
          cuda::DeviceBuffer<uint32_t> buf(fill);
          test::poison_shared_memory();
          cuda::gemm(qa, qb, reinterpret_cast<float*>(buf.data()) + offset, nullptr, kernel, tiles);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::vector<uint32_t> all = buf.download();
          std::vector<float> got(static_cast<size_t>(m * n));
          for (size_t i = 0; i < all.size(); ++i) {
            const int64_t at = static_cast<int64_t>(i) - offset;
            if (at >= 0 && at < m * n) {
              std::memcpy(&got[static_cast<size_t>(at)], &all[i], sizeof(float));
            } else if (all[i] != kCanary && ++canaries_hit <= 5) {
              std::printf("  %s offset %lld: float %zu outside C written\n", cuda::name(kernel),
                          static_cast<long long>(offset), i);
            }
          }
          const std::string label = std::string(cuda::name(kernel)) + " on " +
                                    cuda::gemm_tile_shape(qa, qb, kernel, tiles) + " tiles " + test::describe(c) +
                                    " " + std::to_string(m) + "x" + std::to_string(n) + " at offset " +
                                    std::to_string(offset);
          mismatches += test::count_float_mismatches(got, want, n, label);
          if (tiles == cuda::GemmTiles::kAuto) {
            tally.add(kernel, cuda::gemm_kernel_for(qa, qb, kernel), want);
          } else {
            tally.add_tiles(tiles, want);
          }
          ++writes;
        }
      }
    }
  }
  tally.print(std::to_string(writes) + " GEMMs written at offsets 0..3", mismatches);
  expect_every_kernel_ran(tally, true);
  EXPECT_EQ(tally.wgmma_tile_outputs[2], tally.wgmma_own_outputs) << "the wgmma kernel on 64 x 128 tiles";
  const size_t wgmma_wide = tally.wgmma_own_outputs > 0 ? 1 : 0;
  EXPECT_EQ(writes, 2u * 2u * (cuda::kAllGemmKernels.size() + wgmma_wide) * kPad);
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(canaries_hit, 0u);
}

// More output tiles than the device has SMs: the wgmma kernel's persistent CTAs then take
// two or three tiles each (about five on half tiles, which the wgmma kernel also runs
// forced), carrying their stage count (and the raw and decoded buffer rings
// it indexes) from one tile to the next, and the producer copies a tile's
// first stage while the tile before it ends. One GEMM per wgmma kernel (the E4M3
// datapath, the scaled datapath and its binary32 case, each 16- and 32-wide),
// with tiles of 1 to 5 k-stages (so that tiles start at every place of the
// 3-buffer ring), partial tiles on both edges and in k. Golden's gemm of
// every output (over 5 million a product) would take far longer on the CPU
// than the GPU kernels, so the check covers whole rows and whole columns of C
// that cross every 64 x 64 square (a consumer warpgroup's rows, a half tile's
// columns): each square's first and last row and column and a seeded random
// one (every output there, every kernel).
TEST(GpuGemm, MoreTilesThanSmsMatchGoldenOnLinesCrossingEveryTile) {
  NIBBLE_REQUIRE_GPU();
  const int sms = device_sms();
  ASSERT_GT(sms, 0);
  constexpr int64_t kTile = cuda::mma_sync::kBM;  // both kernels' CTA tile, both axes
  static_assert(cuda::mma_sync::kBM == cuda::mma_sync::kBN, "square tiles");
  constexpr int64_t kTileCols = 24;
  const int64_t tile_rows = (5 * sms / 2 + kTileCols - 1) / kTileCols;  // about 2.5 tiles per SM
  const int64_t m = tile_rows * kTile - 57, n = kTileCols * kTile - 40;
  struct Case {
    Format format;
    BlockShape block;
    ScaleMode scale;
    int64_t k;
  };
  const Case cases[] = {{Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4, 300},
                        {Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32, 200},
                        {Format::kE2M1, BlockShape::k1x32, ScaleMode::kMXFloor, 100},
                        {Format::kInt4, BlockShape::k1x32, ScaleMode::kNVFP4, 416},
                        {Format::kE1M2, BlockShape::k1x16, ScaleMode::kMXCeil, 160},
                        {Format::kInt4, BlockShape::k1x32, ScaleMode::kFP32, 520}};
  const uint64_t seed = 900;
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> rows = lines_crossing_every_tile(m, cuda::wgmma::kGroupRows, rng);
  const std::vector<int64_t> cols = lines_crossing_every_tile(n, cuda::wgmma::kGroupRows, rng);
  std::printf("%d SMs, %lldx%lld outputs in %lld tiles, seed %llu: %zu rows and %zu columns checked whole\n", sms,
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(tile_rows * kTileCols),
              static_cast<unsigned long long>(seed), rows.size(), cols.size());
  ASSERT_GT(tile_rows * kTileCols, 2 * static_cast<int64_t>(sms));
  size_t mismatches = 0;
  GemmTally tally;
  uint64_t data_seed = seed;
  for (const Case& t : cases) {
    QuantConfig ca;
    ca.format = t.format;
    ca.block = t.block;
    ca.scale = t.scale;
    QuantConfig cb = ca;
    cb.stream = 1;
    const QuantizedPair p = quantized_pair(m, n, t.k, ca, cb, data_seed);
    const cuda::DeviceQuantized &qa = p.qa, &qb = p.qb;
    const QuantizedTensor &ga = p.ga, &gb = p.gb;
    const Outputs at = whole_lines(rows, cols, m, n);
    const std::vector<float> want = golden_at(ga, gb, at);
    const std::string what = test::describe(ca) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(t.k);
    for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) {
      const std::vector<float> full = gemm_on_poison(qa, qb, kernel);
      mismatches += count_mismatches_at(full, n, at, want, std::string(cuda::name(kernel)) + " " + what);
      tally.add(kernel, cuda::gemm_kernel_for(qa, qb, kernel), want);
    }
    mismatches += check_wgmma_half_tiles_at(qa, qb, at, want, what, tally);
  }
  tally.print("", mismatches);
  expect_every_kernel_ran(tally, true);
  EXPECT_EQ(tally.wgmma_tile_outputs[1], tally.wgmma_own_outputs) << "the wgmma kernel forced onto 128 x 64 tiles";
  EXPECT_EQ(tally.wgmma_tile_outputs[2], tally.wgmma_own_outputs) << "the wgmma kernel forced onto 64 x 128 tiles";
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

// With a workspace, the wgmma kernel's ordered split (wgmma::Schedule: a
// tile's k range on two CTAs, the partial sums handed over between them) and
// B decoded once (wgmma::predecode_b): 1.25 to 1.75 rounds of tiles (split)
// and 2.5 to 4.5 (B decoded once alone), k of 2 to 5 stages (the last
// partial), on the scaled datapath (binary32 scales, as the UFP4 recipes),
// the E4M3 one (NVFP4: split only) and mixed binary32 block widths, full
// tiles and half tiles. C
// matches golden on lines crossing every tile and equals the classic
// schedule's C bit for bit everywhere; the workspace's flag words are all
// zero again after each call; one smaller than gemm_workspace_bytes() is refused.
TEST(GpuGemm, WorkspaceCallsMatchGoldenAndLeaveTheirFlagsZero) {
  NIBBLE_REQUIRE_GPU();
  const int sms = device_sms();
  ASSERT_GT(sms, 0);
  constexpr int64_t kTileCols = 6;  // of 128 columns
  const int64_t n = kTileCols * 128 - 20;
  struct Case {
    Format format;
    BlockShape block_a, block_b;
    ScaleMode scale;
    int64_t k;
    cuda::GemmTiles tiles;
    int tiles_per_sm_x4;  // of the tiles' shape, about: 6 is 1.5 rounds (at most wgmma::kSplitMaxRounds split)
    bool split;           // whether the ordered split applies (else B decoded once alone)
  };
  const Case cases[] = {
      {Format::kE2M1, BlockShape::k1x16, BlockShape::k1x16, ScaleMode::kFP32, 300, cuda::GemmTiles::kAuto, 6, true},
      {Format::kE1M2, BlockShape::k1x16, BlockShape::k1x16, ScaleMode::kFP32, 610, cuda::GemmTiles::kHalf, 6, true},
      {Format::kE2M1, BlockShape::k1x16, BlockShape::k1x16, ScaleMode::kNVFP4, 330, cuda::GemmTiles::kAuto, 6, true},
      {Format::kInt4, BlockShape::k1x32, BlockShape::k1x16, ScaleMode::kFP32, 520, cuda::GemmTiles::kFull, 7, true},
      {Format::kE2M1, BlockShape::k1x16, BlockShape::k1x16, ScaleMode::kFP32, 460, cuda::GemmTiles::kAuto, 5, true},
      {Format::kE1M2, BlockShape::k1x16, BlockShape::k1x16, ScaleMode::kFP32, 330, cuda::GemmTiles::kAuto, 18, false},
      {Format::kInt4, BlockShape::k1x32, BlockShape::k1x16, ScaleMode::kFP32, 200, cuda::GemmTiles::kHalf, 10, false}};
  const uint64_t seed = 1300;
  std::mt19937_64 rng(seed);
  std::printf("%d SMs, seed %llu\n", sms, static_cast<unsigned long long>(seed));
  cuda::DeviceBuffer<uint8_t> ws(cuda::gemm_workspace_bytes());
  NIBBLE_CUDA_CHECK(cudaMemset(ws.data(), 0, ws.bytes()));
  const cuda::GemmWorkspace workspace{ws.data(), ws.bytes()};
  size_t split_calls = 0, compared = 0, nontrivial = 0, mismatches = 0, differ = 0, dirty = 0;
  uint64_t data_seed = seed;
  for (const Case& t : cases) {
    const int64_t tile_cols = t.tiles == cuda::GemmTiles::kHalf ? 2 * kTileCols : kTileCols;
    const int64_t tile_rows = (t.tiles_per_sm_x4 * sms / 4 + tile_cols - 1) / tile_cols;
    const int64_t m = tile_rows * 128 - 37;
    const std::vector<int64_t> rows = lines_crossing_every_tile(m, cuda::wgmma::kGroupRows, rng);
    const std::vector<int64_t> cols = lines_crossing_every_tile(n, cuda::wgmma::kGroupRows, rng);
    QuantConfig ca, cb;
    ca.format = cb.format = t.format;
    ca.scale = cb.scale = t.scale;
    ca.block = t.block_a;
    cb.block = t.block_b;
    cb.stream = 1;
    const QuantizedPair p = quantized_pair(m, n, t.k, ca, cb, data_seed);
    const cuda::DeviceQuantized &qa = p.qa, &qb = p.qb;
    if (!wgmma_runs(qa, qb)) GTEST_SKIP() << "the wgmma kernel does not run on this device";
    const std::string shape = cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma, t.tiles, true);
    ASSERT_EQ(shape.find("split") != std::string::npos, t.split) << shape << " k " << t.k;
    ASSERT_GE(m, 128 * cuda::wgmma::kPredecodeMinTileRows) << "B is decoded once in every case";
    cuda::DeviceBuffer<float> c(static_cast<size_t>(m * n)), c_classic(static_cast<size_t>(m * n));
    NIBBLE_CUDA_CHECK(cudaMemset(c.data(), 0xFF, c.bytes()));
    cuda::gemm(qa, qb, c.data(), nullptr, cuda::GemmKernel::kWgmma, t.tiles, workspace);
    cuda::gemm(qa, qb, c_classic.data(), nullptr, cuda::GemmKernel::kWgmma, t.tiles);
    NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
    split_calls += t.split ? 1 : 0;
    const std::vector<float> got = c.download(), classic = c_classic.download();
    for (size_t i = 0; i < got.size(); ++i) differ += f32_bits(got[i]) != f32_bits(classic[i]) ? 1 : 0;
    const Outputs at = whole_lines(rows, cols, m, n);
    const std::vector<float> want = golden_at(p.ga, p.gb, at);
    for (float w : want) nontrivial += std::isfinite(w) && w != 0.0f ? 1 : 0;
    compared += at.size();
    mismatches += count_mismatches_at(got, n, at, want,
                                      shape + " " + test::describe(ca) + " " + std::to_string(m) + "x" +
                                          std::to_string(n) + "x" + std::to_string(t.k));
    const std::vector<uint8_t> after = ws.download();  // the flag words; the sums past them are scratch
    for (int64_t i = 0; i < cuda::wgmma::split_flag_bytes(sms); ++i) dirty += after[static_cast<size_t>(i)] != 0 ? 1 : 0;
  }
  std::printf("%zu split calls, %zu outputs against golden (%zu finite non-zero), %zu mismatching, %zu differing "
              "from the classic schedule, %zu flag bytes left non-zero\n",
              split_calls, compared, nontrivial, mismatches, differ, dirty);
  EXPECT_EQ(split_calls, static_cast<size_t>(std::count_if(std::begin(cases), std::end(cases),
                                                           [](const Case& t) { return t.split; })));
  EXPECT_GT(nontrivial, compared / 2);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(dirty, 0u);
  QuantConfig cfg;
  cuda::DeviceQuantized qa = cuda::allocate_quantized(256, 128, cfg), qb = cuda::allocate_quantized(256, 128, cfg);
  cuda::DeviceBuffer<float> out(256 * 256);
  EXPECT_THROW(cuda::gemm(qa, qb, out.data(), nullptr, cuda::GemmKernel::kWgmma, cuda::GemmTiles::kAuto,
                          cuda::GemmWorkspace{ws.data(), ws.bytes() - 1}),
               std::invalid_argument);
}

// B decoded ahead (decode_b_ahead) and handed to a call with a workspace:
// the call copies it instead of decoding B itself and gives its own bits, on
// binary32 scales one per k-block (the UFP4 recipes' datapath) and mixed block
// widths, full and half tiles. A decode of another operand, or for another
// k-block width, is ignored; one the call takes is really read (zeroed, it
// changes C); E4M3 and UE8M0 scales decode nothing, and a width other than
// 16 or 32, or longer than B's blocks, is refused.
TEST(GpuGemm, BDecodedAheadGivesTheCallsOwnBits) {
  NIBBLE_REQUIRE_GPU();
  const int sms = device_sms();
  ASSERT_GT(sms, 0);
  struct Case {
    Format format;
    BlockShape block_a, block_b;
    int64_t n, k;
    cuda::GemmTiles tiles;
  };
  const Case cases[] = {{Format::kE2M1, BlockShape::k1x16, BlockShape::k1x16, 700, 300, cuda::GemmTiles::kAuto},
                        {Format::kE1M2, BlockShape::k1x16, BlockShape::k1x16, 400, 610, cuda::GemmTiles::kHalf},
                        {Format::kInt4, BlockShape::k1x32, BlockShape::k1x16, 520, 520, cuda::GemmTiles::kFull},
                        {Format::kE2M1, BlockShape::k1x32, BlockShape::k1x32, 300, 256, cuda::GemmTiles::kAuto}};
  const uint64_t seed = 1400;
  std::printf("%d SMs, seed %llu\n", sms, static_cast<unsigned long long>(seed));
  uint64_t data_seed = seed;
  cuda::DeviceBuffer<uint8_t> ws(cuda::gemm_workspace_bytes());
  NIBBLE_CUDA_CHECK(cudaMemset(ws.data(), 0, ws.bytes()));
  const int64_t m = 128 * cuda::wgmma::kPredecodeMinTileRows + 40;  // B is decoded once
  size_t calls = 0, differ = 0, zeroed_differ = 0;
  for (const Case& t : cases) {
    QuantConfig ca, cb;
    ca.format = cb.format = t.format;
    ca.block = t.block_a;
    cb.block = t.block_b;
    cb.stream = 1;
    const QuantizedPair p = quantized_pair(m, t.n, t.k, ca, cb, data_seed);
    const QuantizedPair other = quantized_pair(m, t.n, t.k, ca, cb, data_seed);
    if (!wgmma_runs(p.qa, p.qb)) GTEST_SKIP() << "the wgmma kernel does not run on this device";
    const int step = std::min(block_cols(t.block_a), block_cols(t.block_b));
    const std::string what = test::describe(ca) + " B " + std::string(name(t.block_b)) + " k " + std::to_string(t.k);
    auto run = [&](const cuda::DecodedB* ahead) {
      cuda::DeviceBuffer<float> c(static_cast<size_t>(m * t.n));
      cuda::gemm(p.qa, p.qb, c.data(), nullptr, cuda::GemmKernel::kWgmma, t.tiles,
                 cuda::GemmWorkspace{ws.data(), ws.bytes(), ahead});
      NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
      ++calls;
      return c.download();
    };
    auto count_differing = [](const std::vector<float>& x, const std::vector<float>& y) {
      size_t d = 0;
      for (size_t i = 0; i < x.size(); ++i) d += f32_bits(x[i]) != f32_bits(y[i]) ? 1 : 0;
      return d;
    };
    const std::vector<float> own = run(nullptr);
    cuda::DecodedB decoded, decoded_other, decoded_step;
    ASSERT_TRUE(cuda::decode_b_ahead(p.qb, step, decoded)) << what;
    ASSERT_TRUE(cuda::decode_b_ahead(other.qb, step, decoded_other)) << what;
    differ += count_differing(run(&decoded), own);
    differ += count_differing(run(&decoded_other), own);  // not this call's B: ignored
    if (step == 32) {
      ASSERT_TRUE(cuda::decode_b_ahead(p.qb, 16, decoded_step)) << what;
      differ += count_differing(run(&decoded_step), own);  // another k-block width: ignored
    }
    NIBBLE_CUDA_CHECK(cudaMemset(decoded.bytes.data(), 0, decoded.bytes.bytes()));
    const size_t z = count_differing(run(&decoded), own);
    EXPECT_GT(z, own.size() / 2) << what << ": a zeroed decode of B was not read";
    zeroed_differ += z;
    EXPECT_THROW(cuda::decode_b_ahead(p.qb, 8, decoded), std::invalid_argument);
    if (block_cols(t.block_b) == 16) EXPECT_THROW(cuda::decode_b_ahead(p.qb, 32, decoded), std::invalid_argument);
  }
  for (const ScaleMode mode : {ScaleMode::kNVFP4, ScaleMode::kMXFloor}) {
    QuantConfig c;
    c.scale = mode;
    if (mode == ScaleMode::kMXFloor) c.block = BlockShape::k1x32;
    const cuda::DeviceQuantized q = cuda::allocate_quantized(256, 256, c);
    cuda::DecodedB none;
    EXPECT_FALSE(cuda::decode_b_ahead(q, block_cols(c.block), none)) << name(mode);
    EXPECT_EQ(none.of, nullptr);
  }
  std::printf("%zu calls, %zu outputs differing from the call's own decode, %zu where B's decode was zeroed\n",
              calls, differ, zeroed_differ);
  EXPECT_EQ(calls, 17u);
  EXPECT_EQ(differ, 0u);
}

// An output of at most 64 rows (a few tokens against a weight matrix) with
// more 128 x 64 tiles than SMs runs 64 x 128 tiles (wgmma::auto_tiles): the
// operands swapped, C stored transposed, every row of a tile one of C's. M of
// 1, 37 and 64 rows, N of 64 columns per SM and 100 more (where the wgmma kernel ran
// 128 x 128 tiles before) and of 1000 (128 x 64 tiles, one an SM, and the wgmma kernel
// forced onto 64 x 128), K of 96 (one partial k-stage) and 200, on the wgmma kernel's
// datapaths (E4M3 scales, binary32 scales one per k-block and on 16 x 16
// blocks, UE8M0 scales) and mixed pairs: every kernel's C matches
// golden on every row, at the columns that cross every 64 columns (each
// square's first, last and a seeded random one).
TEST(GpuGemm, OutputsOfAtMost64RowsRunWideTilesAndMatchGolden) {
  NIBBLE_REQUIRE_GPU();
  const int sms = device_sms();
  ASSERT_GT(sms, 0);
  struct Recipe {
    QuantConfig a, b;
    int64_t k;
  };
  auto config = [](Format f, BlockShape block, ScaleMode scale) {
    QuantConfig c;
    c.format = f;
    c.block = block;
    c.scale = scale;
    return c;
  };
  const QuantConfig nvfp4 = config(Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4);
  const QuantConfig ufp4 = config(Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32);
  const QuantConfig int4_tiles = config(Format::kInt4, BlockShape::k16x16, ScaleMode::kFP32);
  const QuantConfig mx = config(Format::kE2M1, BlockShape::k1x32, ScaleMode::kMXFloor);
  const Recipe recipes[] = {{nvfp4, nvfp4, 96}, {ufp4, ufp4, 200}, {ufp4, int4_tiles, 96}, {mx, mx, 200},
                            {nvfp4, mx, 200}};
  const uint64_t seed = 940;
  std::printf("%d SMs, seed %llu\n", sms, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  size_t mismatches = 0, gemms = 0, forced_wide = 0;
  GemmTally tally;
  for (int64_t m : {1, 37, 64}) {
    for (int64_t n : {int64_t{1000}, 64 * static_cast<int64_t>(sms) + 100}) {
      const std::vector<int64_t> cols = lines_crossing_every_tile(n, cuda::wgmma::kGroupRows, rng);
      for (const Recipe& r : recipes) {
        QuantConfig cb = r.b;
        cb.stream = 1;
        const std::vector<float> a = test::wide_range_tensor(m, r.k, rng(), false);
        const std::vector<float> b = test::wide_range_tensor(n, r.k, rng(), false);
        cuda::DeviceBuffer<float> da(a), db(b);
        cuda::DeviceQuantized qa = cuda::allocate_quantized(m, r.k, r.a);
        cuda::DeviceQuantized qb = cuda::allocate_quantized(n, r.k, cb);
        cuda::quantize(da.data(), cuda::InputType::kFloat32, m, r.k, r.a, &qa, nullptr);
        cuda::quantize(db.data(), cuda::InputType::kFloat32, n, r.k, cb, &qb, nullptr);
        const QuantizedTensor ga = quantize(a.data(), m, r.k, r.a);
        const QuantizedTensor gb = quantize(b.data(), n, r.k, cb);
        Outputs at;
        for (int64_t row = 0; row < m; ++row) {
          for (int64_t c : cols) at.emplace_back(row, c);
        }
        std::vector<float> want;
        want.reserve(at.size());
        for (const auto& [row, c] : at) want.push_back(dot_rows(ga, row, gb, c));
        const std::string what = test::describe(r.a) + " x " + test::describe(cb) + " " + std::to_string(m) + "x" +
                                 std::to_string(n) + "x" + std::to_string(r.k);
        const bool wide = n > 64 * static_cast<int64_t>(sms);
        if (wgmma_runs(qa, qb)) {
          EXPECT_STREQ(cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma), wide ? "64x128" : "128x64") << what;
          if (!wide) {
            const std::vector<float> c = gemm_on_poison(qa, qb, cuda::GemmKernel::kWgmma, cuda::GemmTiles::kWide);
            mismatches += count_mismatches_at(c, n, at, want, "the wgmma kernel on 64x128 tiles " + what);
            tally.add_tiles(cuda::GemmTiles::kWide, want);
            forced_wide += want.size();
          }
        }
        for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) {
          const std::vector<float> c = gemm_on_poison(qa, qb, kernel);
          mismatches += count_mismatches_at(c, n, at, want, std::string(cuda::name(kernel)) + " " + what);
          tally.add(kernel, cuda::gemm_kernel_for(qa, qb, kernel), want);
        }
        ++gemms;
      }
    }
  }
  tally.print(std::to_string(gemms) + " operand pairs", mismatches);
  expect_every_kernel_ran(tally, true);
  EXPECT_EQ(tally.wgmma_tile_outputs[2], forced_wide);
  if (tally.wgmma_own_outputs > 0) {
    EXPECT_GT(forced_wide, 0u) << "the wgmma kernel never ran forced onto 64 x 128 tiles";
  }
  EXPECT_EQ(gemms, 3u * 2u * std::size(recipes));
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

// Writes the scale codes of h (golden's layout) into q, allocated for h's
// shape and configuration; q's padding and tensor scale are left as they are.
void upload_scales(const QuantizedTensor& h, cuda::DeviceQuantized& q) {
  std::vector<uint8_t> scales = q.scales.download();
  for (int64_t br = 0; br < q.scale_rows; ++br) {
    for (int64_t bc = 0; bc < q.scale_cols; ++bc) {
      const uint32_t code = h.scales[static_cast<size_t>(br * q.scale_cols + bc)];
      for (int b = 0; b < q.scale_bytes; ++b) {
        const size_t at = static_cast<size_t>((br * q.scales_ld + bc) * q.scale_bytes + b);
        scales[at] = static_cast<uint8_t>(code >> (8 * b));
      }
    }
  }
  q.scales.upload(scales);
  EXPECT_TRUE(q.scales.download() == scales) << "the scales read back differ from those uploaded";
}

// upload_scales, and the codes: to_host's inverse, for operands built code by
// code.
void upload(const QuantizedTensor& h, cuda::DeviceQuantized& q) {
  std::vector<uint8_t> codes(q.codes.size(), 0);
  for (int64_t r = 0; r < h.rows; ++r) {
    pack_codes(&h.codes[static_cast<size_t>(r * h.cols)], static_cast<size_t>(h.cols),
               &codes[static_cast<size_t>(r * q.codes_ld)]);
  }
  q.codes.upload(codes);
  upload_scales(h, q);
  const QuantizedTensor back = cuda::to_host(q);
  ASSERT_EQ(back.codes, h.codes);
  ASSERT_EQ(back.scales, h.scales);
}

// Draws every scale code of h from [lo, hi], half of them on its ends.
void draw_scales(QuantizedTensor& h, uint32_t lo, uint32_t hi, std::mt19937_64& rng) {
  const uint32_t ends[] = {lo, lo + 1, hi - 1, hi};
  for (uint32_t& code : h.scales) {
    code = rng() % 2 ? ends[rng() % 4] : lo + static_cast<uint32_t>(rng() % (hi - lo + 1));
  }
}

// An m x k UE8M0 operand for the FMA tests: codes of a device quantization of
// wide-range data, its scale codes then drawn inside the FMA's range
// (draw_scales: both operands' products of scales then reach 2^-144 and
// 2^116). h receives golden's view of it.
cuda::DeviceQuantized fma_operand(int64_t m, int64_t k, const QuantConfig& cfg, std::mt19937_64& rng,
                                  QuantizedTensor& h) {
  const std::vector<float> x = test::wide_range_tensor(m, k, rng(), false);
  cuda::DeviceBuffer<float> dx(x);
  cuda::DeviceQuantized q = cuda::allocate_quantized(m, k, cfg);
  cuda::quantize(dx.data(), cuda::InputType::kFloat32, m, k, cfg, &q, nullptr);
  h = cuda::to_host(q);
  draw_scales(h, cuda::wgmma::kFmaCodeLo, cuda::wgmma::kFmaCodeHi, rng);
  upload(h, q);
  return q;
}

// The fold range of an operand of format f (nibble/cuda/detail/gemm_wgmma_layout.h).
std::pair<uint32_t, uint32_t> fold_codes(Format f) {
  uint32_t lo = 0, hi = 0;
  EXPECT_TRUE(cuda::wgmma::ue8m0_fold_codes(f, lo, hi)) << name(f);
  return {lo, hi};
}

// The wgmma kernel's four ways with UE8M0 pairs, as gemm_datapath names them.
const char* const kFolded = "FP16 wgmma, UE8M0 folded";
const char* const kFoldedA = "FP16 wgmma, UE8M0 folded into A";
const char* const kFma = "FP16 wgmma, scaled, FMA";
const char* const kRoundings = "FP16 wgmma, scaled";
std::string wgmma_path(const cuda::DeviceQuantized& a, const cuda::DeviceQuantized& b) {
  return cuda::gemm_datapath(a, b, cuda::GemmKernel::kWgmma);
}

// The scale code of h that trial `trial` moves: in a random one of its
// scale_rows rows, the first, the last or a random block (trial % 3);
// `where` describes it.
uint32_t& code_to_move(QuantizedTensor& h, int64_t scale_rows, int trial, std::mt19937_64& rng, std::string& where) {
  const int64_t cols = h.block_grid_cols();
  const int64_t row = static_cast<int64_t>(rng() % static_cast<uint64_t>(scale_rows));
  const int64_t col = trial % 3 == 0   ? 0
                      : trial % 3 == 1 ? cols - 1
                                       : static_cast<int64_t>(rng() % static_cast<uint64_t>(cols));
  where = " row " + std::to_string(row) + " block " + std::to_string(col) + " code ";
  return h.scales[static_cast<size_t>(row * cols + col)];
}

// The wgmma GEMM's check of UE8M0 scale codes (per call): with every code inside
// the FMA's range (wgmma::fma_scale_code) it takes the FMA; one code moved
// outside (below, above, or the NaN code), in either operand, at a row's
// first, last or a random block, and it does not; NaN codes in the scale
// padding (past a row's last block) are not the operand's and leave it taking
// the FMA. With B's codes in its fold range (wgmma::ue8m0_fold_codes) it folds
// them; one of B's moved a code past that range (still inside the FMA's), and
// it takes the FMA instead; one of A's, and it still folds (A's scale is the
// epilogue's factor). With A's codes in A's fold range and B's not, it folds
// A's (the operands swapped); one of A's moved past that range, and it takes
// the FMA; B's then drawn into B's fold range, and it folds B's.
TEST(GpuGemm, Ue8m0FmaCheckSeesEveryScaleCodeAndNoPadding) {
  NIBBLE_REQUIRE_GPU();
  const uint64_t seed = 911;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // Rows of 17 or 34 blocks (scale rows of whole and partial 16-byte chunks),
  // a shape of at least wgmma::kFmaMinMacs.
  constexpr int64_t kM = 4096, kN = 4096 - 8;
  const int64_t k = static_cast<int64_t>(std::ceil(cuda::wgmma::kFmaMinMacs / (kM * kN) / 32 / 17)) * 32 * 17;
  ASSERT_GE(static_cast<double>(kM) * kN * k, cuda::wgmma::kFmaMinMacs);
  size_t trials = 0, fold_trials = 0, fold_a_trials = 0;
  for (BlockShape block : {BlockShape::k1x32, BlockShape::k1x16, BlockShape::k16x16}) {
    QuantConfig cfg;
    cfg.format = Format::kE1M2;
    cfg.block = block;
    cfg.scale = ScaleMode::kMXFloor;
    QuantizedTensor ha, hb;
    cuda::DeviceQuantized qa = fma_operand(kM, k, cfg, rng, ha);
    cuda::DeviceQuantized qb = fma_operand(kN, k, cfg, rng, hb);
    if (!wgmma_runs(qa, qb)) GTEST_SKIP() << "the wgmma kernel does not run on this device";
    ASSERT_EQ(wgmma_path(qa, qb), kFma) << test::describe(cfg);
    poison_scale_padding(qa);
    poison_scale_padding(qb);
    EXPECT_EQ(wgmma_path(qa, qb), kFma) << test::describe(cfg) << ": padding read as codes";
    for (int trial = 0; trial < 12; ++trial) {
      const bool on_a = trial % 2 == 0;
      QuantizedTensor& h = on_a ? ha : hb;
      cuda::DeviceQuantized& q = on_a ? qa : qb;
      const uint32_t outside[] = {cuda::wgmma::kFmaCodeLo - 1, cuda::wgmma::kFmaCodeHi + 1, 0xFFu};
      std::string where;
      uint32_t& code = code_to_move(h, q.scale_rows, trial, rng, where);
      const uint32_t kept = code;
      code = outside[trial / 3 % 3];
      upload_scales(h, q);
      EXPECT_EQ(wgmma_path(qa, qb), kRoundings) << test::describe(cfg) << (on_a ? " A" : " B") << where << code;
      code = kept;
      upload_scales(h, q);
      EXPECT_EQ(wgmma_path(qa, qb), kFma) << test::describe(cfg);
      ++trials;
    }
    const auto [fold_lo, fold_hi] = fold_codes(cfg.format);
    ASSERT_TRUE(cuda::wgmma::fma_scale_code(fold_lo - 1) && cuda::wgmma::fma_scale_code(fold_hi + 1));
    draw_scales(hb, fold_lo, fold_hi, rng);
    upload_scales(hb, qb);
    ASSERT_EQ(wgmma_path(qa, qb), kFolded) << test::describe(cfg);
    for (int trial = 0; trial < 6; ++trial) {
      const bool on_a = trial >= 4;
      QuantizedTensor& h = on_a ? ha : hb;
      cuda::DeviceQuantized& q = on_a ? qa : qb;
      std::string where;
      uint32_t& code = code_to_move(h, q.scale_rows, trial, rng, where);
      const uint32_t kept = code;
      code = trial % 2 == 0 ? fold_lo - 1 : fold_hi + 1;
      upload_scales(h, q);
      EXPECT_EQ(wgmma_path(qa, qb), on_a ? kFolded : kFma) << test::describe(cfg) << (on_a ? " A" : " B") << where
                                                        << code;
      code = kept;
      upload_scales(h, q);
      ++fold_trials;
    }
    // B's codes back across the FMA's range (half of them on its ends, which
    // do not fold), A's into A's fold range.
    draw_scales(hb, cuda::wgmma::kFmaCodeLo, cuda::wgmma::kFmaCodeHi, rng);
    upload_scales(hb, qb);
    draw_scales(ha, fold_lo, fold_hi, rng);
    upload_scales(ha, qa);
    ASSERT_EQ(wgmma_path(qa, qb), kFoldedA) << test::describe(cfg);
    for (int trial = 0; trial < 6; ++trial) {
      std::string where;
      uint32_t& code = code_to_move(ha, qa.scale_rows, trial, rng, where);
      const uint32_t kept = code;
      code = trial / 3 == 0 ? fold_lo - 1 : fold_hi + 1;
      upload_scales(ha, qa);
      EXPECT_EQ(wgmma_path(qa, qb), kFma) << test::describe(cfg) << " A" << where << code;
      code = kept;
      upload_scales(ha, qa);
      EXPECT_EQ(wgmma_path(qa, qb), kFoldedA) << test::describe(cfg);
      ++fold_a_trials;
    }
    draw_scales(hb, fold_lo, fold_hi, rng);
    upload_scales(hb, qb);
    EXPECT_EQ(wgmma_path(qa, qb), kFolded) << test::describe(cfg) << ": both fold, B's first";
  }
  std::printf("%zu codes moved outside the FMA's range, %zu outside B's fold range and %zu outside A's, each seen\n",
              trials, fold_trials, fold_a_trials);
  EXPECT_EQ(trials, 36u);
  EXPECT_EQ(fold_trials, 18u);
  EXPECT_EQ(fold_a_trials, 18u);
}

// UE8M0 scales on both operands whose codes all lie in the FMA's range, half
// of them on its ends (products of scales from 2^-144 to 2^116, partial
// results down among the subnormals): the wgmma kernel takes the FMA and matches golden.
// Then A's codes drawn from A's fold range, half on its ends (A's FP16 values
// from the smallest normal up to the largest that range allows): the wgmma kernel folds
// them into A, the operands swapped and C stored transposed (M is not a
// multiple of the tile, and differs from N), and matches golden. Then B's
// drawn from its fold range too: the wgmma kernel folds B's and matches
// golden. Then one output pair planted where the FMA would differ from golden, one code past the range (tile (1, 1), the
// second stage's first two blocks): INT4, whose block product is exactly
// 2^128 (golden: Inf) after an accumulator of -1.5 * 2^127 (the FMA: 2^126),
// and E1M2, whose 1.5 * 2^-149 rounds to even once in golden and only after
// the add in an FMA (3 * 2^-149 against 2 * 2^-149): the wgmma kernel keeps golden's
// roundings and matches. E2M1 too (without the planted pair), both block
// widths (the wgmma kernel's 16- and 32-wide kernels), both UE8M0 modes, every kernel
// version. The shape is the smallest the FMA runs for (wgmma::kFmaMinMacs);
// golden's gemm of all of it would take minutes on the CPU, so the check
// covers tile (0, 0), the planted row and column whole, and seeded random
// outputs.
TEST(GpuGemm, Ue8m0ScalesAtTheFmaRangeEndsMatchGolden) {
  NIBBLE_REQUIRE_GPU();
  constexpr int64_t kM = 4096 + 64, kN = 4096;
  const int64_t k = static_cast<int64_t>(std::ceil(cuda::wgmma::kFmaMinMacs / (kM * kN) / 128)) * 128;
  ASSERT_GE(static_cast<double>(kM) * kN * k, cuda::wgmma::kFmaMinMacs);
  ASSERT_GE(k, 256);  // the planted blocks lie in the second stage
  const uint64_t seed = 910;
  std::printf("seed %llu, %lldx%lldx%lld\n", static_cast<unsigned long long>(seed), static_cast<long long>(kM),
              static_cast<long long>(kN), static_cast<long long>(k));
  std::mt19937_64 rng(seed);
  size_t mismatches = 0, gemms = 0, fma_runs = 0, folded_runs = 0, folded_a_runs = 0, exact_runs = 0;
  GemmTally tally;
  for (Format f : {Format::kInt4, Format::kE1M2, Format::kE2M1}) {
    for (BlockShape block : {BlockShape::k1x32, BlockShape::k1x16}) {
      for (ScaleMode mode : {ScaleMode::kMXFloor, ScaleMode::kMXCeil}) {
        QuantConfig cfg;
        cfg.format = f;
        cfg.block = block;
        cfg.scale = mode;
        QuantizedTensor ha, hb;
        cuda::DeviceQuantized qa = fma_operand(kM, k, cfg, rng, ha);
        cuda::DeviceQuantized qb = fma_operand(kN, k, cfg, rng, hb);
        const int64_t at = f == Format::kInt4 ? 200 : 210;
        Outputs outputs;
        for (int64_t r = 0; r < cuda::mma_sync::kBM; ++r) {
          for (int64_t c = 0; c < cuda::mma_sync::kBN; ++c) outputs.emplace_back(r, c);
        }
        for (int64_t i = 0; i < kN; ++i) outputs.emplace_back(at, i);
        for (int64_t i = 0; i < kM; ++i) outputs.emplace_back(i, at);
        for (int i = 0; i < 4096; ++i) {
          outputs.emplace_back(static_cast<int64_t>(rng() % kM), static_cast<int64_t>(rng() % kN));
        }
        enum Phase { kInRange, kAFolds, kBFolds, kPlanted };
        for (Phase phase : {kInRange, kAFolds, kBFolds, kPlanted}) {
          if (phase == kPlanted && f == Format::kE2M1) continue;  // the planted pairs are INT4's and E1M2's
          if (phase == kAFolds) {
            const auto [fold_lo, fold_hi] = fold_codes(f);
            draw_scales(ha, fold_lo, fold_hi, rng);
            upload_scales(ha, qa);
          }
          if (phase == kBFolds) {
            const auto [fold_lo, fold_hi] = fold_codes(f);
            draw_scales(hb, fold_lo, fold_hi, rng);
            upload_scales(hb, qb);
          }
          if (phase == kPlanted) {
            const int64_t bw = block_cols(block), b0 = 128 / bw, cols = ha.block_grid_cols();
            for (int64_t kk = 0; kk < k; ++kk) {
              ha.codes[static_cast<size_t>(at * k + kk)] = 0;
              hb.codes[static_cast<size_t>(at * k + kk)] = 0;
            }
            auto set = [&](QuantizedTensor& h, int64_t kk, uint8_t code) {
              h.codes[static_cast<size_t>(at * k + kk)] = code;
            };
            auto scale = [&](QuantizedTensor& h, int64_t b, uint32_t code) {
              h.scales[static_cast<size_t>(at * cols + b)] = code;
            };
            const uint32_t lo = cuda::wgmma::kFmaCodeLo, hi = cuda::wgmma::kFmaCodeHi;
            if (f == Format::kInt4) {
              set(ha, 128, 0x3);  // 3 x -1: P = -3, s = 2^126: r = -1.5 * 2^127
              set(hb, 128, 0xF);
              scale(ha, b0, 190);
              scale(hb, b0, 190);
              for (int64_t i = 0; i < 16; ++i) {  // 16 x (-8 x -8): P = 1024, s = 2^118: r = 2^128 = Inf
                set(ha, 128 + bw + i, 0x8);
                set(hb, 128 + bw + i, 0x8);
              }
              scale(ha, b0 + 1, hi + 1);
              scale(hb, b0 + 1, hi + 1);
            } else {
              set(ha, 128, 0x1);  // 1 x 1 unit (2^-4), s = 2^-145: r = 2^-149
              set(hb, 128, 0x1);
              scale(ha, b0, lo - 1);
              scale(hb, b0, lo);
              set(ha, 128 + bw, 0x3);  // 3 x 1 units, s = 2^-146: r = fl(1.5 * 2^-149)
              set(hb, 128 + bw, 0x1);
              scale(ha, b0 + 1, lo - 1);
              scale(hb, b0 + 1, lo - 1);
            }
            upload(ha, qa);
            upload(hb, qb);
            const float p = dot_rows(ha, at, hb, at);
            if (f == Format::kInt4) {
              ASSERT_TRUE(std::isinf(p)) << p;
            } else {
              ASSERT_EQ(p, 0x3p-149f);
            }
          }
          if (wgmma_runs(qa, qb)) {
            const std::string path = wgmma_path(qa, qb);
            const char* const expected[] = {kFma, kFoldedA, kFolded, kRoundings};
            EXPECT_EQ(path, expected[phase]) << test::describe(cfg);
            fma_runs += path == kFma ? 1 : 0;
            folded_runs += path == kFolded ? 1 : 0;
            folded_a_runs += path == kFoldedA ? 1 : 0;
            exact_runs += path == kRoundings ? 1 : 0;
          }
          ++gemms;
          std::vector<float> want;
          want.reserve(outputs.size());
          for (const auto& [r, c] : outputs) want.push_back(dot_rows(ha, r, hb, c));
          for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) {
            const std::vector<float> full = gemm_on_poison(qa, qb, kernel);
            const char* const phases[] = {" in range", " A folded", " B folded", " planted"};
            const std::string label = std::string(cuda::name(kernel)) + " " + test::describe(cfg) + phases[phase];
            mismatches += count_mismatches_at(full, kN, outputs, want, label);
            tally.add(kernel, cuda::gemm_kernel_for(qa, qb, kernel), want);
          }
          // and on half tiles (its own choice here is 128 x 128)
          mismatches += check_wgmma_half_tiles_at(qa, qb, outputs, want, test::describe(cfg), tally);
        }
      }
    }
  }
  std::printf(
      "the wgmma kernel folded B's scales %zu times, A's %zu times, took the FMA %zu times, golden's three roundings %zu times\n",
      folded_runs, folded_a_runs, fma_runs, exact_runs);
  tally.print(std::to_string(gemms) + " GEMMs", mismatches);
  expect_every_kernel_ran(tally, true);
  EXPECT_EQ(tally.wgmma_tile_outputs[1], tally.wgmma_own_outputs) << "the wgmma kernel on 128 x 64 tiles";
  EXPECT_EQ(tally.wgmma_tile_outputs[2], tally.wgmma_own_outputs) << "the wgmma kernel on 64 x 128 tiles";
  EXPECT_EQ(gemms, 44u);
  if (fma_runs + folded_runs + folded_a_runs + exact_runs > 0) {
    EXPECT_EQ(folded_runs, 12u);
    EXPECT_EQ(folded_a_runs, 12u);
    EXPECT_EQ(fma_runs, 12u);
    EXPECT_EQ(exact_runs, 8u);
  }
  EXPECT_GT(tally.nontrivial, tally.outputs / 2);
  EXPECT_EQ(mismatches, 0u);
}

// Half tiles with UE8M0 pairs, whose kernel may run the operands swapped:
// a 130 x 1000 output has 32 half tiles one way and 24 the other, so the
// grid (32 CTAs) holds 8 without a tile on the swapped path, which must leave
// at once. With every code in the FMA's range the wgmma kernel takes the FMA; with A's in
// A's fold range it folds A's (swapped, C stored transposed; M = 130 is not a
// multiple of the tile); with B's in B's too it folds B's, and on 64 x 128
// tiles (the operands swapped) A's; with A's then drawn out of its fold range
// again, B's (on 64 x 128 tiles: the call's own order, C stored as it is). On
// each, the wgmma kernel's own choice (half tiles where the device has the SMs for them),
// full tiles and 64 x 128 tiles match golden on rows 0 and 129 whole and
// seeded random outputs, by the datapath gemm_datapath names for those tiles.
// K makes the call just reach wgmma::kFmaMinMacs.
TEST(GpuGemm, Ue8m0HalfTilesMatchGoldenInBothOperandOrders) {
  NIBBLE_REQUIRE_GPU();
  constexpr int64_t kM = 130, kN = 1000;
  const int64_t k = static_cast<int64_t>(std::ceil(cuda::wgmma::kFmaMinMacs / (kM * kN) / 128)) * 128;
  using Half = cuda::wgmma::HalfTile;
  ASSERT_EQ(cuda::wgmma::tile_count(kM, kN, Half::kRows, Half::kCols), 32);
  ASSERT_EQ(cuda::wgmma::tile_count(kN, kM, Half::kRows, Half::kCols), 24);
  const uint64_t seed = 912;
  std::printf("seed %llu, %lldx%lldx%lld\n", static_cast<unsigned long long>(seed), static_cast<long long>(kM),
              static_cast<long long>(kN), static_cast<long long>(k));
  std::mt19937_64 rng(seed);
  QuantConfig cfg;
  cfg.format = Format::kE1M2;
  cfg.block = BlockShape::k1x32;
  cfg.scale = ScaleMode::kMXFloor;
  QuantizedTensor ha, hb;
  cuda::DeviceQuantized qa = fma_operand(kM, k, cfg, rng, ha);
  cuda::DeviceQuantized qb = fma_operand(kN, k, cfg, rng, hb);
  if (!wgmma_runs(qa, qb)) GTEST_SKIP() << "the wgmma kernel does not run on this device";
  const int sms = device_sms();
  ASSERT_GT(sms, 0);
  const bool half = cuda::wgmma::half_tiles(kM, kN, sms);  // kAuto's 128 x 64 tiles (32 SMs or more), else 128 x 128
  Outputs outputs;
  for (int64_t c = 0; c < kN; ++c) {
    outputs.emplace_back(0, c);
    outputs.emplace_back(kM - 1, c);
  }
  for (int i = 0; i < 512; ++i) {
    outputs.emplace_back(static_cast<int64_t>(rng() % kM), static_cast<int64_t>(rng() % kN));
  }
  const auto [fold_lo, fold_hi] = fold_codes(cfg.format);
  size_t mismatches = 0, compared = 0, nontrivial = 0, gemms = 0;
  constexpr cuda::GemmTiles kTiles[] = {cuda::GemmTiles::kAuto, cuda::GemmTiles::kFull, cuda::GemmTiles::kWide};
  // The datapath by phase and by kTiles (kAuto: 128 x 64 tiles, or full ones on fewer than 32 SMs).
  // Where only B's fold, 64 x 128 tiles fold them on the call's own order
  // only where its half tiles take no more waves than the swapped order's.
  const char* const b_folded_wide = cuda::wgmma::other_order_fits<Half>(kN, kM, sms) ? kFolded : kFma;
  const char* const expected[4][3] = {{kFma, kFma, kFma},
                                      {kFoldedA, kFoldedA, kFoldedA},
                                      {kFolded, kFolded, kFoldedA},
                                      {kFolded, kFolded, b_folded_wide}};
  for (int phase = 0; phase < 4; ++phase) {
    if (phase == 1) {
      draw_scales(ha, fold_lo, fold_hi, rng);
      upload_scales(ha, qa);
    } else if (phase == 2) {
      draw_scales(hb, fold_lo, fold_hi, rng);
      upload_scales(hb, qb);
    } else if (phase == 3) {
      draw_scales(ha, cuda::wgmma::kFmaCodeLo, cuda::wgmma::kFmaCodeHi, rng);  // its ends lie outside the fold range
      upload_scales(ha, qa);
    }
    EXPECT_STREQ(cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma), half ? "128x64" : "128x128");
    std::vector<float> want;
    for (const auto& [r, c] : outputs) want.push_back(dot_rows(ha, r, hb, c));
    for (int t = 0; t < 3; ++t) {
      ASSERT_EQ(cuda::gemm_datapath(qa, qb, cuda::GemmKernel::kWgmma, kTiles[t]), expected[phase][t])
          << "phase " << phase << ", " << cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma, kTiles[t]);
      const std::vector<float> got = gemm_on_poison(qa, qb, cuda::GemmKernel::kWgmma, kTiles[t]);
      const std::string label = std::string(expected[phase][t]) + ", " +
                                cuda::gemm_tile_shape(qa, qb, cuda::GemmKernel::kWgmma, kTiles[t]) + " tiles";
      mismatches += count_mismatches_at(got, kN, outputs, want, label);
      for (float v : want) nontrivial += std::isfinite(v) && v != 0.0f ? 1 : 0;
      compared += outputs.size();
      ++gemms;
    }
  }
  std::printf("%zu GEMMs (FMA, A folded, both folded, B folded; %s, 128x128 and 64x128 tiles), %zu outputs "
              "compared (%zu finite non-zero), %zu mismatching\n",
              gemms, half ? "128x64" : "128x128", compared, nontrivial, mismatches);
  EXPECT_EQ(gemms, 12u);
  EXPECT_EQ(compared, 12 * outputs.size());
  EXPECT_GT(nontrivial, compared / 2);
  EXPECT_EQ(mismatches, 0u);
}

// gemm_bf16 stores golden's FP32 output rounded by golden round_to_bf16, bit
// for bit, and nothing outside C: on every kernel and wgmma tile shape,
// for N odd and even (single and paired stores), for outputs whose tiles all
// lie inside C (the epilogue's short path), for C at an odd element offset (no
// paired stores), for outputs of at most 64 rows (the wgmma kernel's transposed
// stores), with NaN/Inf/huge blocks in A (round_to_bf16's carry into Inf and
// canonical NaN).
TEST(GpuGemm, Bf16OutputIsGoldenRoundedToBf16) {
  NIBBLE_REQUIRE_GPU();
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  struct Case {
    int64_t m, n, k;
    Format fa, fb;
    ScaleMode mode;
    size_t offset;  // C's first element in its buffer
  };
  const Case cases[] = {{256, 256, 96, Format::kE2M1, Format::kE1M2, ScaleMode::kFP32, 0},  // whole tiles only
                        {200, 136, 96, Format::kE2M1, Format::kE2M1, ScaleMode::kFP32, 0},
                        {150, 97, 64, Format::kE1M2, Format::kInt4, ScaleMode::kNVFP4, 0},
                        {129, 64, 160, Format::kE2M1, Format::kE1M2, ScaleMode::kMXFloor, 1},
                        {48, 300, 128, Format::kInt4, Format::kE2M1, ScaleMode::kFP32, 0},
                        {40, 77, 48, Format::kE1M2, Format::kE1M2, ScaleMode::kMXCeil, 1}};
  constexpr uint16_t kGuard = 0x7BADu;
  size_t compared = 0, nontrivial = 0, mismatches = 0, guard_changes = 0;
  uint64_t index = 900;
  for (const Case& t : cases) {
    QuantConfig ca, cb;
    ca.format = t.fa;
    cb.format = t.fb;
    ca.scale = cb.scale = t.mode;
    const std::vector<float> a = test::wide_range_tensor(t.m, t.k, test::kKernelTestSeed + index, true);
    const std::vector<float> b = test::wide_range_tensor(t.n, t.k, test::kKernelTestSeed + index + 1, false);
    ++index;
    cuda::DeviceBuffer<float> da(a), db(b);
    cuda::DeviceQuantized qa = cuda::allocate_quantized(t.m, t.k, ca);
    cuda::DeviceQuantized qb = cuda::allocate_quantized(t.n, t.k, cb);
    cuda::quantize(da.data(), cuda::InputType::kFloat32, t.m, t.k, ca, &qa, nullptr);
    cuda::quantize(db.data(), cuda::InputType::kFloat32, t.n, t.k, cb, &qb, nullptr);
    const std::vector<float> want = gemm(quantize(a.data(), t.m, t.k, ca), quantize(b.data(), t.n, t.k, cb));
    const size_t count = static_cast<size_t>(t.m * t.n);
    std::vector<std::pair<cuda::GemmKernel, cuda::GemmTiles>> runs;
    for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) runs.emplace_back(kernel, cuda::GemmTiles::kAuto);
    if (wgmma_runs(qa, qb)) {
      for (cuda::GemmTiles tiles : kForcedTiles) runs.emplace_back(cuda::GemmKernel::kWgmma, tiles);
    }
    for (const auto& [kernel, tiles] : runs) {
      cuda::DeviceBuffer<uint16_t> c(std::vector<uint16_t>(count + t.offset + 8, kGuard));
      cuda::gemm_bf16(qa, qb, c.data() + t.offset, nullptr, kernel, tiles);
      NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<uint16_t> got = c.download();
      for (size_t i = 0; i < got.size(); ++i) {
        if (i < t.offset || i >= t.offset + count) guard_changes += got[i] != kGuard ? 1 : 0;
      }
      for (size_t i = 0; i < count; ++i) {
        const uint16_t expect = static_cast<uint16_t>(f32_bits(round_to_bf16(want[i])) >> 16);
        const uint16_t have = got[t.offset + i];
        ++compared;
        nontrivial += std::isfinite(want[i]) && want[i] != 0.0f ? 1 : 0;
        if (have != expect && ++mismatches <= 5) {
          std::printf("%s %s %lldx%lldx%lld output %zu: got 0x%04x, want 0x%04x (FP32 %a)\n", cuda::name(kernel),
                      cuda::gemm_tile_shape(qa, qb, kernel, tiles), static_cast<long long>(t.m),
                      static_cast<long long>(t.n), static_cast<long long>(t.k), i, have, expect, want[i]);
        }
      }
    }
  }
  std::printf("%zu BF16 outputs compared (%zu finite non-zero), %zu mismatching\n", compared, nontrivial, mismatches);
  EXPECT_GT(compared, 0u);
  EXPECT_GT(nontrivial, compared / 2);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(guard_changes, 0u) << "gemm_bf16 wrote outside C";
}

TEST(GpuGemm, RefusesMismatchedOperandsLikeGolden) {
  NIBBLE_REQUIRE_GPU();
  QuantConfig c;
  cuda::DeviceQuantized a = cuda::allocate_quantized(16, 64, c);
  cuda::DeviceQuantized b = cuda::allocate_quantized(16, 80, c);
  cuda::DeviceBuffer<float> out(256);
  for (cuda::GemmKernel kernel : cuda::kAllGemmKernels) {
    EXPECT_THROW(cuda::gemm(a, b, out.data(), nullptr, kernel), std::invalid_argument) << cuda::name(kernel);
  }
}

}  // namespace
}  // namespace nibble
