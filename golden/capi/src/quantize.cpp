// The C API's quantization entry points: shape and buffer checks, then golden quantize/dequantize.
#include <algorithm>
#include <string>

#include "capi_detail.h"

using namespace nibble;
using namespace nibble::capi;

namespace {

void check_shape(int64_t rows, int64_t cols) {
  if (rows < 1 || cols < 1) {
    fail(NIBBLE_ERR_SIZE,
         "shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] is empty or negative");
  }
}

void check_len(size_t got, int64_t need, const char* what) {
  if (got != static_cast<size_t>(need)) {
    fail(NIBBLE_ERR_SIZE, std::string(what) + " length " + std::to_string(got) + " does not match the " +
                              std::to_string(need) + " the shape needs");
  }
}

// Golden's result into the caller's buffers.
void copy_out(const QuantizedTensor& t, uint8_t* codes, uint32_t* scales, float* tensor_encode,
              float* tensor_decode) {
  std::copy(t.codes.begin(), t.codes.end(), codes);
  std::copy(t.scales.begin(), t.scales.end(), scales);
  if (tensor_encode != nullptr) *tensor_encode = t.tensor.encode;
  if (tensor_decode != nullptr) *tensor_decode = t.tensor.decode;
}

int quantize_call(const char* function, const float* x, nibble_quantized* q, const nibble_quant_policy* policy) {
  return guarded(function, [&] {
    require_pointer(q, "q");
    const QuantConfig cfg = to_config(&q->config, policy == nullptr ? QuantPolicy{} : to_policy(policy));
    require_pointer(x, "x");
    size_t codes_len = 0, scales_len = 0;
    if (const int s = nibble_quantized_sizes(&q->config, q->rows, q->cols, &codes_len, &scales_len); s != NIBBLE_OK) {
      fail(s, last_error());
    }
    check_len(q->codes_len, static_cast<int64_t>(codes_len), "codes");
    check_len(q->scales_len, static_cast<int64_t>(scales_len), "scales");
    require_pointer(q->codes, "codes");
    require_pointer(q->scales, "scales");
    const QuantizedTensor t = quantize(x, q->rows, q->cols, cfg);
    copy_out(t, q->codes, q->scales, &q->tensor_encode, &q->tensor_decode);
  });
}

int quantize_block_call(const char* function, const nibble_quant_config* config, const nibble_quant_policy* policy,
                        const float* x, size_t count, uint8_t* codes, uint32_t* scale_code, float* tensor_encode,
                        float* tensor_decode) {
  return guarded(function, [&] {
    const QuantConfig cfg = to_config(config, policy == nullptr ? QuantPolicy{} : to_policy(policy));
    require_pointer(x, "x");
    require_pointer(codes, "codes");
    require_pointer(scale_code, "scale_code");
    const int64_t rows = block_rows(cfg.block), cols = block_cols(cfg.block);
    check_len(count, rows * cols, std::string("a ").append(name(cfg.block)).append(" block's count").c_str());
    const QuantizedTensor t = quantize(x, rows, cols, cfg);
    copy_out(t, codes, scale_code, tensor_encode, tensor_decode);
  });
}

}  // namespace

extern "C" {

int nibble_quant_config_init(nibble_quant_config* config) {
  return guarded(__func__, [&] {
    require_pointer(config, "config");
    const QuantConfig d;
    *config = nibble_quant_config{static_cast<int>(d.format), static_cast<int>(d.block), static_cast<int>(d.scale),
                                  static_cast<int>(d.rounding), d.sr_bits, d.rht.size, d.rht.round_bf16 ? 1 : 0,
                                  d.seed, d.stream};
  });
}

int nibble_quantized_sizes(const nibble_quant_config* config, int64_t rows, int64_t cols, size_t* codes_len,
                           size_t* scales_len) {
  return guarded(__func__, [&] {
    const QuantConfig cfg = to_config(config);
    check_shape(rows, cols);
    require_pointer(codes_len, "codes_len");
    require_pointer(scales_len, "scales_len");
    const int64_t n = checked_mul(rows, cols, "rows * cols");
    const int64_t bh = block_rows(cfg.block), bw = block_cols(cfg.block);
    const int64_t blocks = checked_mul(rows / bh + (rows % bh != 0), cols / bw + (cols % bw != 0), "block count");
    *codes_len = static_cast<size_t>(n);
    *scales_len = static_cast<size_t>(blocks);
  });
}

int nibble_quant_policy_init(nibble_quant_policy* policy) {
  return guarded(__func__, [&] {
    require_pointer(policy, "policy");
    const QuantPolicy d;
    *policy = nibble_quant_policy{static_cast<int>(d.zero), static_cast<int>(d.nonfinite)};
  });
}

int nibble_quantize(const float* x, nibble_quantized* q) { return quantize_call(__func__, x, q, nullptr); }

int nibble_quantize_with_policy(const float* x, nibble_quantized* q, const nibble_quant_policy* policy) {
  if (policy == nullptr) return set_error(NIBBLE_ERR_NULL_POINTER, __func__, "policy is NULL");
  return quantize_call(__func__, x, q, policy);
}

int nibble_quantize_block(const nibble_quant_config* config, const float* x, size_t count, uint8_t* codes,
                          uint32_t* scale_code, float* tensor_encode, float* tensor_decode) {
  return quantize_block_call(__func__, config, nullptr, x, count, codes, scale_code, tensor_encode, tensor_decode);
}

int nibble_quantize_block_with_policy(const nibble_quant_config* config, const nibble_quant_policy* policy,
                                      const float* x, size_t count, uint8_t* codes, uint32_t* scale_code,
                                      float* tensor_encode, float* tensor_decode) {
  if (policy == nullptr) return set_error(NIBBLE_ERR_NULL_POINTER, __func__, "policy is NULL");
  return quantize_block_call(__func__, config, policy, x, count, codes, scale_code, tensor_encode, tensor_decode);
}

int nibble_dequantize(const nibble_quantized* q, float* out, size_t out_len) {
  return guarded(__func__, [&] {
    const QuantizedTensor t = to_quantized(q, "q");
    require_pointer(out, "out");
    check_len(out_len, static_cast<int64_t>(t.codes.size()), "out");
    const std::vector<float> v = dequantize(t);
    std::copy(v.begin(), v.end(), out);
  });
}

}  // extern "C"
