// DPI-C entry points: SystemVerilog-friendly argument forms (bit patterns, packed
// words) of the C API's functions, which they call.
#include <array>

#include "capi_detail.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"

using namespace nibble;
using namespace nibble::capi;

namespace {
constexpr size_t kLanes = 16;

std::array<uint8_t, kLanes> unpack16(const uint32_t* words) {
  std::array<uint8_t, kLanes> c{};
  for (size_t i = 0; i < kLanes; ++i) c[i] = static_cast<uint8_t>((words[i / 8] >> (4 * (i % 8))) & 0xFu);
  return c;
}
}  // namespace

extern "C" {

int nibble_dpi_element_decode(int format, int code, uint32_t* value_bits) {
  if (value_bits == nullptr) return set_error(NIBBLE_ERR_NULL_POINTER, __func__, "value_bits is NULL");
  if (code < 0 || code > 0xF) return set_error(NIBBLE_ERR_INVALID_ARGUMENT, __func__, "element code is not 4-bit");
  float v = 0.0f;
  const int s = nibble_element_decode(format, static_cast<uint8_t>(code), &v);
  if (s == NIBBLE_OK) *value_bits = f32_bits(v);
  return s;
}

int nibble_dpi_element_encode(int format, uint32_t value_bits, int rounding, int random, int sr_bits, int* code) {
  uint8_t c = 0;
  if (code == nullptr) return set_error(NIBBLE_ERR_NULL_POINTER, __func__, "code is NULL");
  const int s = nibble_element_encode(format, f32_from_bits(value_bits), rounding, static_cast<uint32_t>(random),
                                      sr_bits, &c);
  if (s == NIBBLE_OK) *code = c;
  return s;
}

int nibble_dpi_quantize_block16_with_policy(int format, int scale_mode, int rounding, int sr_bits, int zero,
                                            int nonfinite, uint64_t seed, uint32_t stream, const uint32_t* x_bits,
                                            uint32_t* codes, uint32_t* scale_code, uint32_t* tensor_encode_bits,
                                            uint32_t* tensor_decode_bits) {
  std::array<float, kLanes> x{};
  std::array<uint8_t, kLanes> c{};
  float te = 0.0f, td = 0.0f;
  const int checked = guarded(__func__, [&] {
    require_pointer(x_bits, "x_bits");
    require_pointer(codes, "codes");
    require_pointer(tensor_encode_bits, "tensor_encode_bits");
    require_pointer(tensor_decode_bits, "tensor_decode_bits");
    for (size_t i = 0; i < kLanes; ++i) x[i] = f32_from_bits(x_bits[i]);
  });
  if (checked != NIBBLE_OK) return checked;
  const nibble_quant_config cfg{format, NIBBLE_BLOCK_1X16, scale_mode, rounding, sr_bits, 0, 0, seed, stream};
  const nibble_quant_policy policy{zero, nonfinite};
  const int s = nibble_quantize_block_with_policy(&cfg, &policy, x.data(), kLanes, c.data(), scale_code, &te, &td);
  if (s != NIBBLE_OK) return s;
  codes[0] = codes[1] = 0;
  for (size_t i = 0; i < kLanes; ++i) codes[i / 8] |= static_cast<uint32_t>(c[i]) << (4 * (i % 8));
  *tensor_encode_bits = f32_bits(te);
  *tensor_decode_bits = f32_bits(td);
  return NIBBLE_OK;
}

int nibble_dpi_quantize_block16(int format, int scale_mode, int rounding, int sr_bits, uint64_t seed, uint32_t stream,
                                const uint32_t* x_bits, uint32_t* codes, uint32_t* scale_code,
                                uint32_t* tensor_encode_bits, uint32_t* tensor_decode_bits) {
  return nibble_dpi_quantize_block16_with_policy(format, scale_mode, rounding, sr_bits, NIBBLE_ZERO_POSITIVE,
                                                 NIBBLE_NONFINITE_FINITE, seed, stream, x_bits, codes, scale_code,
                                                 tensor_encode_bits, tensor_decode_bits);
}

int nibble_dpi_sr_random16(uint64_t seed, uint32_t stream, int sr_bits, uint32_t* random) {
  return guarded(__func__, [&] {
    require_pointer(random, "random");
    if (sr_bits < 1 || sr_bits > 8) fail(NIBBLE_ERR_INVALID_ARGUMENT, "sr_bits must be in 1..8");
    const PhiloxWords w = philox4x32_10(seed, sr_group(0, 0, kLanes), stream, PhiloxDomain::kStochasticRounding);
    for (size_t i = 0; i < 4; ++i) random[i] = 0;
    for (size_t i = 0; i < kLanes; ++i) {
      random[i / 4] |= sr_lane_bits(w, static_cast<int>(i), sr_bits) << (8 * (i % 4));
    }
  });
}

int nibble_dpi_block_dot16(int format_a, int scale_format_a, const uint32_t* codes_a, uint32_t scale_a, int format_b,
                           int scale_format_b, const uint32_t* codes_b, uint32_t scale_b, uint32_t acc_in_bits,
                           uint32_t* acc_out_bits) {
  std::array<uint8_t, kLanes> a{}, b{};
  const int checked = guarded(__func__, [&] {
    require_pointer(codes_a, "codes_a");
    require_pointer(codes_b, "codes_b");
    require_pointer(acc_out_bits, "acc_out_bits");
    a = unpack16(codes_a);
    b = unpack16(codes_b);
  });
  if (checked != NIBBLE_OK) return checked;
  float acc = 0.0f;
  const int s = nibble_block_dot(format_a, scale_format_a, a.data(), scale_a, format_b, scale_format_b, b.data(),
                                 scale_b, kLanes, f32_from_bits(acc_in_bits), &acc);
  if (s == NIBBLE_OK) *acc_out_bits = f32_bits(acc);
  return s;
}

}  // extern "C"
