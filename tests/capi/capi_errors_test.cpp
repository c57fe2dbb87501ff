// Bad input at the C API: every case returns its status and a message naming the
// problem, never crashes, and leaves the outputs untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "nibble/nibble_golden.h"

namespace {

struct Case {
  const char* name;
  int status;           // expected
  const char* message;  // a substring of nibble_last_error()
  std::function<int()> call;
};

nibble_quant_config config(int format = NIBBLE_FMT_E2M1, int block = NIBBLE_BLOCK_1X16, int mode = NIBBLE_SCALE_MODE_FP32) {
  nibble_quant_config c;
  nibble_quant_config_init(&c);
  c.format = format;
  c.block_shape = block;
  c.scale_mode = mode;
  return c;
}

nibble_quant_config with(nibble_quant_config c, const std::function<void(nibble_quant_config&)>& edit) {
  edit(c);
  return c;
}

// Buffers large enough for any case below; outputs are checked unchanged afterwards.
struct Buffers {
  std::vector<float> x = std::vector<float>(512, 1.0f);
  std::vector<uint8_t> codes = std::vector<uint8_t>(512, 0);
  std::vector<uint32_t> scales = std::vector<uint32_t>(64, 0);
  uint8_t code = 0xAB;
  uint32_t scale = 0xABu;
  float value = 42.0f;
  size_t n1 = 7, n2 = 7;
};

// A well-formed 2 x 16 E2M1 tensor view over b's buffers.
nibble_quantized tensor(Buffers& b, int64_t rows = 2, int64_t cols = 16, nibble_quant_config c = config()) {
  return nibble_quantized{c, rows, cols, b.codes.data(), static_cast<size_t>(rows * cols), b.scales.data(),
                          static_cast<size_t>(rows), 1.0f, 1.0f};
}

std::vector<Case> cases(Buffers& b) {
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  return {
      // Invalid enums.
      {"decode format -1", NIBBLE_ERR_INVALID_ENUM, "element format -1",
       [&] { return nibble_element_decode(-1, 0, &b.value); }},
      {"decode format 3", NIBBLE_ERR_INVALID_ENUM, "element format 3",
       [&] { return nibble_element_decode(NIBBLE_FMT_COUNT, 0, &b.value); }},
      {"encode rounding 2", NIBBLE_ERR_INVALID_ENUM, "rounding 2",
       [&] { return nibble_element_encode(NIBBLE_FMT_E2M1, 1.0f, 2, 0, 8, &b.code); }},
      {"scale decode format 9", NIBBLE_ERR_INVALID_ENUM, "scale format 9",
       [&] { return nibble_scale_decode(9, 0, &b.value); }},
      {"scale encode format -3", NIBBLE_ERR_INVALID_ENUM, "scale format -3",
       [&] { return nibble_scale_encode(-3, 1.0f, &b.scale); }},
      {"tensor scale mode 4", NIBBLE_ERR_INVALID_ENUM, "scale mode 4",
       [&] { return nibble_tensor_scale(4, NIBBLE_FMT_E2M1, 1.0f, &b.value, &b.value); }},
      {"scale mode format 7", NIBBLE_ERR_INVALID_ENUM, "scale mode 7",
       [&] { int f = 0; return nibble_scale_mode_format(7, &f); }},
      {"config block shape 3", NIBBLE_ERR_INVALID_ENUM, "block shape 3",
       [&] { const auto c = config(NIBBLE_FMT_E2M1, 3); return nibble_quantized_sizes(&c, 1, 16, &b.n1, &b.n2); }},
      {"config format 5", NIBBLE_ERR_INVALID_ENUM, "element format 5",
       [&] { const auto c = config(5); return nibble_quantize_block(&c, b.x.data(), 16, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"block dot scale format 3", NIBBLE_ERR_INVALID_ENUM, "scale format 3",
       [&] { return nibble_block_dot(0, 3, b.codes.data(), 0, 0, 0, b.codes.data(), 0, 16, 0.0f, &b.value); }},
      {"policy zero 2", NIBBLE_ERR_INVALID_ENUM, "zero policy 2",
       [&] { auto q = tensor(b); const nibble_quant_policy p{2, 0}; return nibble_quantize_with_policy(b.x.data(), &q, &p); }},
      {"policy nonfinite -1", NIBBLE_ERR_INVALID_ENUM, "non-finite policy -1",
       [&] { const auto c = config(); const nibble_quant_policy p{0, -1};
             return nibble_quantize_block_with_policy(&c, &p, b.x.data(), 16, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"tensor scale nonfinite 2", NIBBLE_ERR_INVALID_ENUM, "non-finite policy 2",
       [&] { return nibble_tensor_scale_with_policy(1, 0, 2, 1.0f, &b.value, &b.value); }},
      {"block scale nonfinite 9", NIBBLE_ERR_INVALID_ENUM, "non-finite policy 9",
       [&] { return nibble_block_scale_with_policy(0, 0, 9, 1.0f, 1.0f, 1.0f, &b.scale, nullptr, nullptr); }},
      {"dpi zero policy 3", NIBBLE_ERR_INVALID_ENUM, "zero policy 3",
       [&] { uint32_t x[16] = {}, c[2], s, te, td; return nibble_dpi_quantize_block16_with_policy(0, 0, 0, 8, 3, 0, 0, 0, x, c, &s, &te, &td); }},
      // Null pointers.
      {"decode value NULL", NIBBLE_ERR_NULL_POINTER, "value is NULL",
       [&] { return nibble_element_decode(NIBBLE_FMT_E2M1, 0, nullptr); }},
      {"encode code NULL", NIBBLE_ERR_NULL_POINTER, "code is NULL",
       [&] { return nibble_element_encode(NIBBLE_FMT_E2M1, 1.0f, 0, 0, 8, nullptr); }},
      {"config NULL", NIBBLE_ERR_NULL_POINTER, "config is NULL",
       [&] { return nibble_quant_config_init(nullptr); }},
      {"quantize x NULL", NIBBLE_ERR_NULL_POINTER, "x is NULL",
       [&] { auto q = tensor(b); return nibble_quantize(nullptr, &q); }},
      {"quantize q NULL", NIBBLE_ERR_NULL_POINTER, "q is NULL",
       [&] { return nibble_quantize(b.x.data(), nullptr); }},
      {"quantize codes NULL", NIBBLE_ERR_NULL_POINTER, "codes is NULL",
       [&] { auto q = tensor(b); q.codes = nullptr; return nibble_quantize(b.x.data(), &q); }},
      {"block quantize scale NULL", NIBBLE_ERR_NULL_POINTER, "scale_code is NULL",
       [&] { const auto c = config(); return nibble_quantize_block(&c, b.x.data(), 16, b.codes.data(), nullptr, nullptr, nullptr); }},
      {"dequantize out NULL", NIBBLE_ERR_NULL_POINTER, "out is NULL",
       [&] { const auto q = tensor(b); return nibble_dequantize(&q, nullptr, 32); }},
      {"gemm b NULL", NIBBLE_ERR_NULL_POINTER, "b is NULL",
       [&] { const auto q = tensor(b); return nibble_gemm(&q, nullptr, &b.value, 1); }},
      {"block dot codes NULL", NIBBLE_ERR_NULL_POINTER, "codes_b is NULL",
       [&] { return nibble_block_dot(0, 0, b.codes.data(), 0, 0, 0, nullptr, 0, 16, 0.0f, &b.value); }},
      {"quantize policy NULL", NIBBLE_ERR_NULL_POINTER, "policy is NULL",
       [&] { auto q = tensor(b); return nibble_quantize_with_policy(b.x.data(), &q, nullptr); }},
      {"block quantize policy NULL", NIBBLE_ERR_NULL_POINTER, "policy is NULL",
       [&] { const auto c = config(); return nibble_quantize_block_with_policy(&c, nullptr, b.x.data(), 16, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"policy init NULL", NIBBLE_ERR_NULL_POINTER, "policy is NULL",
       [&] { return nibble_quant_policy_init(nullptr); }},
      {"dpi quantize x NULL", NIBBLE_ERR_NULL_POINTER, "x_bits is NULL",
       [&] { uint32_t c[2], s, te, td; return nibble_dpi_quantize_block16(0, 0, 0, 8, 0, 0, nullptr, c, &s, &te, &td); }},
      // Values outside their domain.
      {"decode code 16", NIBBLE_ERR_INVALID_ARGUMENT, "not 4-bit",
       [&] { return nibble_element_decode(NIBBLE_FMT_INT4, 16, &b.value); }},
      {"encode NaN", NIBBLE_ERR_INVALID_ARGUMENT, "NaN",
       [&] { return nibble_element_encode(NIBBLE_FMT_E2M1, NAN, 0, 0, 8, &b.code); }},
      {"encode sr_bits 9", NIBBLE_ERR_INVALID_ARGUMENT, "sr_bits must be in 1..8",
       [&] { return nibble_element_encode(NIBBLE_FMT_E2M1, 1.0f, NIBBLE_ROUND_STOCHASTIC, 0, 9, &b.code); }},
      {"encode random too wide", NIBBLE_ERR_INVALID_ARGUMENT, "more than sr_bits",
       [&] { return nibble_element_encode(NIBBLE_FMT_E2M1, 1.0f, NIBBLE_ROUND_STOCHASTIC, 16, 4, &b.code); }},
      {"e4m3 scale code 256", NIBBLE_ERR_INVALID_ARGUMENT, "not 8-bit",
       [&] { return nibble_scale_decode(NIBBLE_SCALE_FMT_E4M3, 256, &b.value); }},
      {"ue8m0 encode 0.3", NIBBLE_ERR_INVALID_ARGUMENT, "powers of two",
       [&] { return nibble_scale_encode(NIBBLE_SCALE_FMT_UE8M0, 0.3f, &b.scale); }},
      {"tensor scale amax NaN", NIBBLE_ERR_INVALID_ARGUMENT, "finite",
       [&] { return nibble_tensor_scale(1, 0, NAN, &b.value, &b.value); }},
      // NaN and Inf where the policy or the format has no place for them.
      {"tensor scale NaN under the finite policy", NIBBLE_ERR_INVALID_ARGUMENT, "finite non-finite policy",
       [&] { return nibble_tensor_scale_with_policy(1, 0, NIBBLE_NONFINITE_FINITE, NAN, &b.value, &b.value); }},
      {"tensor scale +Inf under the finite policy", NIBBLE_ERR_INVALID_ARGUMENT, "finite non-finite policy",
       [&] { return nibble_tensor_scale_with_policy(1, 0, NIBBLE_NONFINITE_FINITE, INFINITY, &b.value, &b.value); }},
      {"tensor scale -Inf under propagate", NIBBLE_ERR_INVALID_ARGUMENT, ">= 0",
       [&] { return nibble_tensor_scale_with_policy(1, 0, NIBBLE_NONFINITE_PROPAGATE, -INFINITY, &b.value, &b.value); }},
      {"block scale -Inf under propagate", NIBBLE_ERR_INVALID_ARGUMENT, "amax must be >= 0",
       [&] { return nibble_block_scale_with_policy(0, 0, NIBBLE_NONFINITE_PROPAGATE, -INFINITY, 1.0f, 1.0f, &b.scale, nullptr, nullptr); }},
      {"ue8m0 has no Inf", NIBBLE_ERR_INVALID_ARGUMENT, "powers of two",
       [&] { return nibble_scale_encode(NIBBLE_SCALE_FMT_UE8M0, INFINITY, &b.scale); }},
      {"dpi encode NaN (no element format has a NaN code)", NIBBLE_ERR_INVALID_ARGUMENT, "NaN",
       [&] { return nibble_dpi_element_encode(NIBBLE_FMT_INT4, 0x7FC00000u, 0, 0, 8, reinterpret_cast<int*>(&b.scale)); }},
      {"block scale amax negative", NIBBLE_ERR_INVALID_ARGUMENT, "amax",
       [&] { return nibble_block_scale(0, 0, -1.0f, 1.0f, 1.0f, &b.scale, nullptr, nullptr); }},
      {"config sr_bits 0", NIBBLE_ERR_INVALID_ARGUMENT, "stochastic-rounding bits",
       [&] { const auto c = with(config(), [](auto& k) { k.sr_bits = 0; });
             return nibble_quantized_sizes(&c, 1, 16, &b.n1, &b.n2); }},
      {"dequantize code 0x1F", NIBBLE_ERR_INVALID_ARGUMENT, "not 4-bit",
       [&] { auto q = tensor(b); b.codes[3] = 0x1F; const int s = nibble_dequantize(&q, b.x.data(), 32); b.codes[3] = 0; return s; }},
      {"dequantize ue8m0 scale 0x100", NIBBLE_ERR_INVALID_ARGUMENT, "not 8-bit",
       [&] { auto q = tensor(b, 2, 16, config(0, 0, NIBBLE_SCALE_MODE_MX_FLOOR)); b.scales[1] = 0x100;
             const int s = nibble_dequantize(&q, b.x.data(), 32); b.scales[1] = 0; return s; }},
      // RHT settings the configuration or shape cannot take.
      {"rht size 8", NIBBLE_ERR_INVALID_ARGUMENT, "RHT size must be 16, 32, 64 or 128",
       [&] { const auto c = with(config(), [](auto& k) { k.rht_size = 8; });
             return nibble_quantize_block(&c, b.x.data(), 16, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"rht size -16", NIBBLE_ERR_INVALID_ARGUMENT, "RHT size",
       [&] { const auto c = with(config(), [](auto& k) { k.rht_size = -16; });
             return nibble_quantized_sizes(&c, 1, 16, &b.n1, &b.n2); }},
      {"rht 32 on a 1x16 block", NIBBLE_ERR_INVALID_ARGUMENT, "RHT32",
       [&] { const auto c = with(config(), [](auto& k) { k.rht_size = 32; });
             return nibble_quantize_block(&c, b.x.data(), 16, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"rht 16 on 24 cols", NIBBLE_ERR_INVALID_ARGUMENT, "RHT16",
       [&] { auto q = tensor(b, 1, 24, with(config(), [](auto& k) { k.rht_size = 16; }));
             q.scales_len = 2; return nibble_quantize(b.x.data(), &q); }},
      {"gemm operands rotated differently", NIBBLE_ERR_INVALID_ARGUMENT, "RHT",
       [&] { auto qa = tensor(b, 1, 16); auto qb = tensor(b, 1, 16); qb.config.rht_size = 16;
             return nibble_gemm(&qa, &qb, &b.value, 1); }},
      // Lengths that do not match the shape, and sizes that overflow.
      {"block count 15 for 1x16", NIBBLE_ERR_SIZE, "1x16 block's count",
       [&] { const auto c = config(); return nibble_quantize_block(&c, b.x.data(), 15, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"block count 32 for 16x16", NIBBLE_ERR_SIZE, "16x16 block's count",
       [&] { const auto c = config(0, NIBBLE_BLOCK_16X16); return nibble_quantize_block(&c, b.x.data(), 32, b.codes.data(), &b.scale, nullptr, nullptr); }},
      {"quantize codes_len short", NIBBLE_ERR_SIZE, "codes length 31",
       [&] { auto q = tensor(b); q.codes_len = 31; return nibble_quantize(b.x.data(), &q); }},
      {"quantize scales_len long", NIBBLE_ERR_SIZE, "scales length 3",
       [&] { auto q = tensor(b); q.scales_len = 3; return nibble_quantize(b.x.data(), &q); }},
      {"quantize zero rows", NIBBLE_ERR_SIZE, "empty",
       [&] { auto q = tensor(b); q.rows = 0; return nibble_quantize(b.x.data(), &q); }},
      {"quantize negative cols", NIBBLE_ERR_SIZE, "empty",
       [&] { auto q = tensor(b); q.cols = -16; return nibble_quantize(b.x.data(), &q); }},
      {"sizes rows * cols overflow", NIBBLE_ERR_SIZE, "overflows",
       [&] { const auto c = config(); return nibble_quantized_sizes(&c, big, 3, &b.n1, &b.n2); }},
      {"quantize rows * cols overflow", NIBBLE_ERR_SIZE, "overflows",
       [&] { auto q = tensor(b); q.rows = big; q.cols = big; return nibble_quantize(b.x.data(), &q); }},
      {"dequantize out_len", NIBBLE_ERR_SIZE, "out length 31",
       [&] { const auto q = tensor(b); return nibble_dequantize(&q, b.x.data(), 31); }},
      {"dequantize codes_len", NIBBLE_ERR_SIZE, "its shape needs",
       [&] { auto q = tensor(b); q.codes_len = 33; return nibble_dequantize(&q, b.x.data(), 32); }},
      {"gemm K differs", NIBBLE_ERR_SIZE, "contraction",
       [&] { auto qa = tensor(b, 1, 16); auto qb = tensor(b, 1, 32); qb.scales_len = 2;
             return nibble_dot_rows(&qa, 0, &qb, 0, &b.value); }},
      {"gemm c_len", NIBBLE_ERR_SIZE, "c length 3",
       [&] { const auto qa = tensor(b); return nibble_gemm(&qa, &qa, &b.value, 3); }},
      {"dot_rows row out of range", NIBBLE_ERR_SIZE, "out of range",
       [&] { const auto qa = tensor(b); return nibble_dot_rows(&qa, 2, &qa, 0, &b.value); }},
      {"block dot count 33", NIBBLE_ERR_SIZE, "1..32",
       [&] { return nibble_block_dot(0, 0, b.codes.data(), 0, 0, 0, b.codes.data(), 0, 33, 0.0f, &b.value); }},
      {"block dot count 0", NIBBLE_ERR_SIZE, "1..32",
       [&] { return nibble_block_dot(0, 0, b.codes.data(), 0, 0, 0, b.codes.data(), 0, 0, 0.0f, &b.value); }},
  };
}

TEST(CApiErrors, EveryBadInputGivesItsStatusAndMessage) {
  Buffers b;
  const std::vector<Case> table = cases(b);
  ASSERT_FALSE(table.empty());
  int checked = 0;
  for (const Case& c : table) {
    const int status = c.call();
    const std::string msg = nibble_last_error();
    EXPECT_EQ(status, c.status) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": message '" << msg << "' lacks '" << c.message << "'";
    // Outputs are written only on success.
    EXPECT_EQ(b.value, 42.0f) << c.name;
    EXPECT_EQ(b.code, 0xAB) << c.name;
    EXPECT_EQ(b.scale, 0xABu) << c.name;
    EXPECT_EQ(b.n1, 7u) << c.name;
    // The next success clears the message.
    float v = 0;
    ASSERT_EQ(nibble_element_decode(NIBBLE_FMT_E2M1, 0, &v), NIBBLE_OK);
    EXPECT_STREQ(nibble_last_error(), "");
    ++checked;
  }
  std::printf("%d bad-input cases\n", checked);
  EXPECT_EQ(checked, static_cast<int>(table.size()));
}

}  // namespace
