// GPU quantize / dequantize against golden, bit for bit, over every format x
// block shape x scale mode x rounding x RHT combination, row-wise and
// column-wise from one pass, on tensors with NaN/Inf/zero/subnormal/huge blocks
// and shapes that are not multiples of the tile. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "gpu_test_util.h"
#include "nibble/cuda/device_buffer.h"
#include "nibble/cuda/quantize.h"
#include "shared_memory_poison.h"

namespace nibble {
namespace {

// Quantize x ([rows, cols]) on the device in both directions (64 x 128 tiles
// for blocks one row tall, 32 x 128 for 16x16, see quantize()) and compare
// with golden quantize(x) and quantize(x^T); also each output alone (the
// row-wise one a launch of its own tile shape and order: wide rows for 1x16 /
// 1x32 blocks and at least 512 columns), and dequantize the row-wise result.
void check_both_directions(const std::vector<float>& x, int64_t rows, int64_t cols, const QuantConfig& cfg,
                           bool bf16_input, test::QuantTally& out) {
  const std::string label = test::describe(cfg) + (bf16_input ? "/bf16-in" : "") + " " + std::to_string(rows) + "x" +
                            std::to_string(cols);
  std::vector<float> ref_input = x;
  cuda::DeviceBuffer<float> dx_f32;
  cuda::DeviceBuffer<uint16_t> dx_bf16;
  const void* dx = nullptr;
  if (bf16_input) {
    const std::vector<uint16_t> b = test::to_bf16_bits(x);
    ref_input = test::from_bf16_bits(b);
    dx_bf16 = cuda::DeviceBuffer<uint16_t>(b);
    dx = dx_bf16.data();
  } else {
    dx_f32 = cuda::DeviceBuffer<float>(x);
    dx = dx_f32.data();
  }
  cuda::DeviceQuantized row = cuda::allocate_quantized(rows, cols, cfg);
  cuda::DeviceQuantized col = cuda::allocate_quantized(cols, rows, cfg);
  // Each call on poisoned shared memory (shared_memory_poison.h).
  test::poison_shared_memory();
  cuda::quantize(dx, bf16_input ? cuda::InputType::kBFloat16 : cuda::InputType::kFloat32, rows, cols, cfg, &row, &col);

  const QuantizedTensor want_row = quantize(ref_input.data(), rows, cols, cfg);
  const std::vector<float> xt = test::transpose(ref_input, rows, cols);
  const QuantizedTensor want_col = quantize(xt.data(), cols, rows, cfg);
  out.compare(cuda::to_host(row), want_row, label + " row-wise");
  out.compare(cuda::to_host(col), want_col, label + " column-wise");
  cuda::DeviceQuantized row_alone = cuda::allocate_quantized(rows, cols, cfg);
  test::poison_shared_memory();
  cuda::quantize(dx, bf16_input ? cuda::InputType::kBFloat16 : cuda::InputType::kFloat32, rows, cols, cfg, &row_alone,
                 nullptr);
  out.compare(cuda::to_host(row_alone), want_row, label + " row-wise alone");
  cuda::DeviceQuantized col_alone = cuda::allocate_quantized(cols, rows, cfg);
  test::poison_shared_memory();
  cuda::quantize(dx, bf16_input ? cuda::InputType::kBFloat16 : cuda::InputType::kFloat32, rows, cols, cfg, nullptr,
                 &col_alone);
  out.compare(cuda::to_host(col_alone), want_col, label + " column-wise alone");

  cuda::DeviceBuffer<float> deq(static_cast<size_t>(rows * cols));
  cuda::dequantize(row, deq.data());
  out.compare_values(deq.download(), dequantize(want_row), cols, label + " dequantize");
}

// The checks every test of a tally makes: it compared codes, scales and
// dequantized values, and none differed.
void expect_all_matched(const test::QuantTally& out) {
  out.print();
  EXPECT_GT(out.codes, 0u);
  EXPECT_GT(out.scale_codes, 0u);
  EXPECT_GT(out.values, 0u);
  EXPECT_EQ(out.mismatches, 0u);
}

TEST(GpuQuantize, EveryConfigurationMatchesGoldenBothDirections) {
  NIBBLE_REQUIRE_GPU();
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  test::QuantTally out;
  uint64_t index = 0;
  const RhtConfig rhts[] = {RhtConfig{}, RhtConfig{16, false}, RhtConfig{16, true}};
  for (Format f : kAllFormats) {
    for (BlockShape b : kAllBlockShapes) {
      for (ScaleMode m : kAllScaleModes) {
        for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
          for (const RhtConfig& rht : rhts) {
            ++index;
            QuantConfig cfg;
            cfg.format = f;
            cfg.block = b;
            cfg.scale = m;
            cfg.rounding = r;
            cfg.sr_bits = r == Rounding::kStochastic ? 1 + static_cast<int>(index % 8) : 8;
            cfg.rht = rht;
            cfg.seed = test::kKernelTestSeed + index;
            cfg.stream = static_cast<uint32_t>(index * 7);
            // RHT16 needs both axes to be multiples of 16; otherwise odd shapes.
            // 80 x 656 and 69 x 676 hold whole 32 x 128 and 64 x 128 (both
            // ways) tiles, loaded by whole lines, and whole 8 x 512 (wide
            // rows) tiles, each lane's group by 16-byte loads, beside partial
            // tiles whose groups are loaded with bounds checks (69 x 676's
            // last group is 4 wide, its last wide tile row 5 rows tall);
            // 69 x 595's rows are not 16-byte aligned, so every group is
            // loaded element by element.
            const int64_t rows = rht.enabled() ? 80 : 69;
            const int64_t cols = rht.enabled() ? 656 : index % 2 ? 595 : 676;
            const std::vector<float> x = test::wide_range_tensor(rows, cols, test::kKernelTestSeed ^ index);
            check_both_directions(x, rows, cols, cfg, false, out);
          }
        }
      }
    }
  }
  expect_all_matched(out);
}

TEST(GpuQuantize, Bf16InputMatchesGolden) {
  NIBBLE_REQUIRE_GPU();
  test::QuantTally out;
  uint64_t index = 1000;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
        ++index;
        QuantConfig cfg;
        cfg.format = f;
        cfg.block = index % 2 ? BlockShape::k1x16 : BlockShape::k1x32;
        cfg.scale = m;
        cfg.rounding = r;
        cfg.rht = RhtConfig{16, index % 3 == 0};
        cfg.seed = index;
        // 64 x 608: a whole wide-rows tile (BF16 rows 16-byte aligned) and a
        // partial one; 33 x 1030: rows not aligned, every group loaded directly.
        check_both_directions(test::wide_range_tensor(64, 608, index), 64, 608, cfg, true, out);
        cfg.rht = RhtConfig{};
        check_both_directions(test::wide_range_tensor(33, 1030, index + 1), 33, 1030, cfg, true, out);
      }
    }
  }
  expect_all_matched(out);
}

TEST(GpuQuantize, ManyTilesMatchGolden) {
  NIBBLE_REQUIRE_GPU();
  test::QuantTally out;
  QuantConfig cfg;
  cfg.format = Format::kE2M1;
  cfg.scale = ScaleMode::kNVFP4;
  cfg.rounding = Rounding::kStochastic;
  cfg.rht = RhtConfig{16, false};
  cfg.seed = 99;
  cfg.stream = 5;
  check_both_directions(test::wide_range_tensor(272, 1040, 3), 272, 1040, cfg, false, out);
  cfg.rht = RhtConfig{};
  cfg.block = BlockShape::k16x16;
  cfg.scale = ScaleMode::kMXFloor;
  check_both_directions(test::wide_range_tensor(301, 517, 4), 301, 517, cfg, false, out);
  // Thousands of tiles, a partial last tile row and column, FP32 and BF16 input.
  cfg.block = BlockShape::k1x16;
  cfg.scale = ScaleMode::kNVFP4;
  cfg.rht = RhtConfig{16, false};
  check_both_directions(test::wide_range_tensor(4096, 2064, 5), 4096, 2064, cfg, false, out);
  cfg.block = BlockShape::k1x32;
  cfg.scale = ScaleMode::kMXCeil;
  cfg.rounding = Rounding::kNearestEven;
  cfg.rht = RhtConfig{};
  check_both_directions(test::wide_range_tensor(2053, 4104, 6), 2053, 4104, cfg, true, out);
  expect_all_matched(out);
}

// The quantizer's policies (golden quantize.h): every policy pair over the formats, scale
// modes, block shapes and roundings, on tensors with NaN and Inf and, for the propagate
// policy, on the same tensors with their NaNs replaced (an infinite tensor amax, S_enc = 1).
TEST(GpuQuantize, EveryPolicyMatchesGolden) {
  NIBBLE_REQUIRE_GPU();
  test::QuantTally out;
  uint64_t index = 2000;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (BlockShape b : kAllBlockShapes) {
        for (ZeroPolicy z : kAllZeroPolicies) {
          for (NonFinitePolicy p : kAllNonFinitePolicies) {
            ++index;
            QuantConfig cfg;
            cfg.format = f;
            cfg.block = b;
            cfg.scale = m;
            cfg.rounding = index % 2 ? Rounding::kStochastic : Rounding::kNearestEven;
            cfg.sr_bits = 1 + static_cast<int>(index % 8);
            cfg.rht = b != BlockShape::k16x16 && index % 3 == 0 ? RhtConfig{16, index % 4 == 0} : RhtConfig{};
            cfg.seed = index;
            cfg.policy = QuantPolicy{z, p};
            const int64_t rows = cfg.rht.enabled() ? 80 : 69;
            const int64_t cols = cfg.rht.enabled() ? 656 : 676;
            std::vector<float> x = test::wide_range_tensor(rows, cols, index);
            check_both_directions(x, rows, cols, cfg, index % 5 == 0, out);
            if (p == NonFinitePolicy::kPropagate) {
              for (float& v : x) v = std::isnan(v) ? -1.5f : v;
              check_both_directions(x, rows, cols, cfg, false, out);
            }
          }
        }
      }
    }
  }
  expect_all_matched(out);
}

TEST(GpuQuantize, RefusesRhtOtherThan16) {
  QuantConfig cfg;
  cfg.rht = RhtConfig{32, false};
  EXPECT_THROW(cuda::validate_gpu_config(cfg, 64, 64), std::invalid_argument);
  cfg.rht = RhtConfig{16, false};
  EXPECT_NO_THROW(cuda::validate_gpu_config(cfg, 64, 64));
}

}  // namespace
}  // namespace nibble
