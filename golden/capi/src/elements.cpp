// The C API's element and scale conversions and enum names: each a call into golden.
#include <array>
#include <cmath>
#include <string>

#include "capi_detail.h"
#include "nibble/fp32.h"

using namespace nibble;
using namespace nibble::capi;

namespace {

// Golden's names as NUL-terminated strings, built once from golden's name().
template <class E, size_t N>
const char* name_of(const std::array<E, N>& all, int v) {
  static const std::array<std::string, N> names = [&] {
    std::array<std::string, N> n;
    for (size_t i = 0; i < N; ++i) n[i] = std::string(name(all[i]));
    return n;
  }();
  return v >= 0 && static_cast<size_t>(v) < N ? names[static_cast<size_t>(v)].c_str() : "";
}

// nibble_tensor_scale and nibble_block_scale, with and without a policy (errors under `function`'s name).
int tensor_scale_call(const char* function, int scale_mode, int format, int nonfinite, float amax_tensor,
                      float* encode, float* decode) {
  return guarded(function, [&] {
    const ScaleMode m = to_scale_mode(scale_mode);
    const Format f = to_format(format);
    const NonFinitePolicy p = to_nonfinite_policy(nonfinite);
    require_pointer(encode, "encode");
    require_pointer(decode, "decode");
    if (amax_tensor < 0.0f) fail(NIBBLE_ERR_INVALID_ARGUMENT, "amax_tensor must be >= 0 (it is a magnitude)");
    if (p == NonFinitePolicy::kFinite && !f32_is_finite(amax_tensor)) {
      fail(NIBBLE_ERR_INVALID_ARGUMENT,
           "amax_tensor must be finite under the finite non-finite policy (NaN and Inf take 'propagate')");
    }
    const TensorScale t = tensor_scale(m, f, amax_tensor);
    *encode = t.encode;
    *decode = t.decode;
  });
}

int block_scale_call(const char* function, int scale_mode, int format, int nonfinite, float amax, float tensor_encode,
                     float tensor_decode, uint32_t* code, float* decode, float* encode) {
  return guarded(function, [&] {
    const ScaleMode m = to_scale_mode(scale_mode);
    const Format f = to_format(format);
    const NonFinitePolicy p = to_nonfinite_policy(nonfinite);
    if (amax < 0.0f) fail(NIBBLE_ERR_INVALID_ARGUMENT, "amax must be >= 0");
    const BlockScale s = block_scale(m, f, amax, TensorScale{tensor_encode, tensor_decode}, p);
    if (code != nullptr) *code = s.code;
    if (decode != nullptr) *decode = s.decode;
    if (encode != nullptr) *encode = s.encode;
  });
}

}  // namespace

extern "C" {

const char* nibble_format_name(int v) { return name_of(kAllFormats, v); }
const char* nibble_scale_format_name(int v) { return name_of(kAllScaleFormats, v); }
const char* nibble_scale_mode_name(int v) { return name_of(kAllScaleModes, v); }
const char* nibble_rounding_name(int v) { return name_of(kAllRoundings, v); }
const char* nibble_block_shape_name(int v) { return name_of(kAllBlockShapes, v); }
const char* nibble_zero_policy_name(int v) { return name_of(kAllZeroPolicies, v); }
const char* nibble_nonfinite_policy_name(int v) { return name_of(kAllNonFinitePolicies, v); }

int nibble_scale_mode_format(int scale_mode, int* scale_format_out) {
  return guarded(__func__, [&] {
    const ScaleMode m = to_scale_mode(scale_mode);
    require_pointer(scale_format_out, "scale_format");
    *scale_format_out = static_cast<int>(scale_format(m));
  });
}

int nibble_element_decode(int format, uint8_t code, float* value) {
  return guarded(__func__, [&] {
    const Format f = to_format(format);
    const uint8_t c = checked_code(code);
    require_pointer(value, "value");
    *value = decode_value(f, c);
  });
}

int nibble_element_encode(int format, float value, int rounding, uint32_t random, int sr_bits, uint8_t* code) {
  return guarded(__func__, [&] {
    const Format f = to_format(format);
    const Rounding r = to_rounding(rounding);
    require_pointer(code, "code");
    if (std::isnan(value)) fail(NIBBLE_ERR_INVALID_ARGUMENT, "NaN has no element code");
    if (r == Rounding::kStochastic) {
      if (sr_bits < 1 || sr_bits > 8) {
        fail(NIBBLE_ERR_INVALID_ARGUMENT, "sr_bits must be in 1..8, got " + std::to_string(sr_bits));
      }
      if (random >> sr_bits != 0) {
        fail(NIBBLE_ERR_INVALID_ARGUMENT,
             "random " + std::to_string(random) + " has more than sr_bits = " + std::to_string(sr_bits) + " bits");
      }
      *code = convert_to_format(value, f, r, random, sr_bits);
    } else {
      *code = convert_to_format(value, f, r);
    }
  });
}

int nibble_scale_decode(int scale_format, uint32_t code, float* value) {
  return guarded(__func__, [&] {
    const ScaleFormat f = to_scale_format(scale_format);
    const uint32_t c = checked_scale_code(f, code);
    require_pointer(value, "value");
    *value = decode_scale(f, c);
  });
}

int nibble_scale_encode(int scale_format, float value, uint32_t* code) {
  return guarded(__func__, [&] {
    const ScaleFormat f = to_scale_format(scale_format);
    require_pointer(code, "code");
    switch (f) {
      case ScaleFormat::kE4M3: *code = encode_e4m3(value); return;
      case ScaleFormat::kFP32: *code = f32_bits(value); return;
      case ScaleFormat::kUE8M0: {
        if (std::isnan(value)) {
          *code = info(f).nan_code;
          return;
        }
        // UE8M0 has no rounding rule of its own: a value is encodable only if golden
        // decodes some code to exactly it.
        for (uint32_t c = 0; c < info(f).nan_code; ++c) {
          if (f32_bits(decode_scale(f, c)) == f32_bits(value)) {
            *code = c;
            return;
          }
        }
        fail(NIBBLE_ERR_INVALID_ARGUMENT, "ue8m0 holds only powers of two 2^-127..2^127; " +
                                              std::to_string(value) + " is not one");
      }
    }
  });
}

int nibble_tensor_scale_with_policy(int scale_mode, int format, int nonfinite, float amax_tensor, float* encode,
                                    float* decode) {
  return tensor_scale_call(__func__, scale_mode, format, nonfinite, amax_tensor, encode, decode);
}

int nibble_tensor_scale(int scale_mode, int format, float amax_tensor, float* encode, float* decode) {
  return tensor_scale_call(__func__, scale_mode, format, NIBBLE_NONFINITE_FINITE, amax_tensor, encode, decode);
}

int nibble_block_scale_with_policy(int scale_mode, int format, int nonfinite, float amax, float tensor_encode,
                                   float tensor_decode, uint32_t* code, float* decode, float* encode) {
  return block_scale_call(__func__, scale_mode, format, nonfinite, amax, tensor_encode, tensor_decode, code, decode,
                          encode);
}

int nibble_block_scale(int scale_mode, int format, float amax, float tensor_encode, float tensor_decode,
                       uint32_t* code, float* decode, float* encode) {
  return block_scale_call(__func__, scale_mode, format, NIBBLE_NONFINITE_FINITE, amax, tensor_encode, tensor_decode,
                          code, decode, encode);
}

}  // extern "C"
