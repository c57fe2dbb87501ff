// Error state and argument conversion at the C API's boundary.
#include <limits>
#include <string>

#include "capi_detail.h"

namespace nibble::capi {

// C and golden enums are one set of values: a change to either fails the build.
static_assert(NIBBLE_FMT_E2M1 == static_cast<int>(Format::kE2M1));
static_assert(NIBBLE_FMT_E1M2 == static_cast<int>(Format::kE1M2));
static_assert(NIBBLE_FMT_INT4 == static_cast<int>(Format::kInt4));
static_assert(NIBBLE_FMT_COUNT == kAllFormats.size());
static_assert(NIBBLE_SCALE_FMT_E4M3 == static_cast<int>(ScaleFormat::kE4M3));
static_assert(NIBBLE_SCALE_FMT_UE8M0 == static_cast<int>(ScaleFormat::kUE8M0));
static_assert(NIBBLE_SCALE_FMT_FP32 == static_cast<int>(ScaleFormat::kFP32));
static_assert(NIBBLE_SCALE_FMT_COUNT == kAllScaleFormats.size());
static_assert(NIBBLE_SCALE_MODE_FP32 == static_cast<int>(ScaleMode::kFP32));
static_assert(NIBBLE_SCALE_MODE_NVFP4 == static_cast<int>(ScaleMode::kNVFP4));
static_assert(NIBBLE_SCALE_MODE_MX_FLOOR == static_cast<int>(ScaleMode::kMXFloor));
static_assert(NIBBLE_SCALE_MODE_MX_CEIL == static_cast<int>(ScaleMode::kMXCeil));
static_assert(NIBBLE_SCALE_MODE_COUNT == kAllScaleModes.size());
static_assert(NIBBLE_ROUND_NEAREST_EVEN == static_cast<int>(Rounding::kNearestEven));
static_assert(NIBBLE_ROUND_STOCHASTIC == static_cast<int>(Rounding::kStochastic));
static_assert(NIBBLE_ROUND_COUNT == 2);
static_assert(NIBBLE_BLOCK_1X16 == static_cast<int>(BlockShape::k1x16));
static_assert(NIBBLE_BLOCK_1X32 == static_cast<int>(BlockShape::k1x32));
static_assert(NIBBLE_BLOCK_16X16 == static_cast<int>(BlockShape::k16x16));
static_assert(NIBBLE_BLOCK_COUNT == kAllBlockShapes.size());
static_assert(NIBBLE_ZERO_POSITIVE == static_cast<int>(ZeroPolicy::kPositive));
static_assert(NIBBLE_ZERO_SIGNED == static_cast<int>(ZeroPolicy::kSigned));
static_assert(NIBBLE_ZERO_COUNT == kAllZeroPolicies.size());
static_assert(NIBBLE_NONFINITE_FINITE == static_cast<int>(NonFinitePolicy::kFinite));
static_assert(NIBBLE_NONFINITE_PROPAGATE == static_cast<int>(NonFinitePolicy::kPropagate));
static_assert(NIBBLE_NONFINITE_COUNT == kAllNonFinitePolicies.size());

namespace {
thread_local std::string t_last_error;
}

const char* last_error() noexcept { return t_last_error.c_str(); }

[[noreturn]] void fail(int status, std::string message) { throw ApiError{status, std::move(message)}; }

int set_error(int status, const char* function, const char* message) noexcept {
  try {
    t_last_error = std::string(function) + ": " + message;
  } catch (...) {
    t_last_error.clear();  // no memory for the message; the status still says what failed
  }
  return status;
}

void clear_error() noexcept { t_last_error.clear(); }

void require_pointer(const void* p, const char* name) {
  if (p == nullptr) fail(NIBBLE_ERR_NULL_POINTER, std::string(name) + " is NULL");
}

namespace {
template <class E>
E to_enum(int v, int count, const char* what) {
  if (v < 0 || v >= count) {
    fail(NIBBLE_ERR_INVALID_ENUM,
         std::string(what) + " " + std::to_string(v) + " is out of range 0.." + std::to_string(count - 1));
  }
  return static_cast<E>(v);
}
}  // namespace

Format to_format(int v) { return to_enum<Format>(v, NIBBLE_FMT_COUNT, "element format"); }
ScaleFormat to_scale_format(int v) { return to_enum<ScaleFormat>(v, NIBBLE_SCALE_FMT_COUNT, "scale format"); }
ScaleMode to_scale_mode(int v) { return to_enum<ScaleMode>(v, NIBBLE_SCALE_MODE_COUNT, "scale mode"); }
Rounding to_rounding(int v) { return to_enum<Rounding>(v, NIBBLE_ROUND_COUNT, "rounding"); }
BlockShape to_block_shape(int v) { return to_enum<BlockShape>(v, NIBBLE_BLOCK_COUNT, "block shape"); }
ZeroPolicy to_zero_policy(int v) { return to_enum<ZeroPolicy>(v, NIBBLE_ZERO_COUNT, "zero policy"); }
NonFinitePolicy to_nonfinite_policy(int v) {
  return to_enum<NonFinitePolicy>(v, NIBBLE_NONFINITE_COUNT, "non-finite policy");
}

QuantPolicy to_policy(const nibble_quant_policy* p) {
  require_pointer(p, "policy");
  return QuantPolicy{to_zero_policy(p->zero), to_nonfinite_policy(p->nonfinite)};
}

QuantConfig to_config(const nibble_quant_config* c, const QuantPolicy& policy) {
  require_pointer(c, "config");
  QuantConfig cfg;
  cfg.policy = policy;
  cfg.format = to_format(c->format);
  cfg.block = to_block_shape(c->block_shape);
  cfg.scale = to_scale_mode(c->scale_mode);
  cfg.rounding = to_rounding(c->rounding);
  cfg.sr_bits = c->sr_bits;
  cfg.rht.size = c->rht_size;
  cfg.rht.round_bf16 = c->rht_round_bf16 != 0;
  cfg.seed = c->seed;
  cfg.stream = c->stream;
  validate(cfg);
  return cfg;
}

uint8_t checked_code(uint32_t code) {
  if (code > 0xFu) fail(NIBBLE_ERR_INVALID_ARGUMENT, "element code " + std::to_string(code) + " is not 4-bit");
  return static_cast<uint8_t>(code);
}

uint32_t checked_scale_code(ScaleFormat f, uint32_t code) {
  if (info(f).bits < 32 && code >> info(f).bits != 0) {
    fail(NIBBLE_ERR_INVALID_ARGUMENT, std::string(name(f)) + " scale code " + std::to_string(code) + " is not " +
                                          std::to_string(info(f).bits) + "-bit");
  }
  return code;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p) || static_cast<uint64_t>(p) > std::numeric_limits<size_t>::max()) {
    fail(NIBBLE_ERR_SIZE, std::string(what) + " overflows (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  }
  return p;
}

QuantizedTensor to_quantized(const nibble_quantized* q, const char* name) {
  require_pointer(q, name);
  QuantizedTensor t;
  t.config = to_config(&q->config);
  if (q->rows < 1 || q->cols < 1) {
    fail(NIBBLE_ERR_SIZE, std::string(name) + " shape [" + std::to_string(q->rows) + ", " + std::to_string(q->cols) +
                              "] is empty or negative");
  }
  size_t codes_len = 0, scales_len = 0;
  if (const int s = nibble_quantized_sizes(&q->config, q->rows, q->cols, &codes_len, &scales_len); s != NIBBLE_OK) {
    fail(s, last_error());
  }
  if (q->codes_len != codes_len || q->scales_len != scales_len) {
    fail(NIBBLE_ERR_SIZE, std::string(name) + " holds " + std::to_string(q->codes_len) + " codes and " +
                              std::to_string(q->scales_len) + " scales; its shape needs " + std::to_string(codes_len) +
                              " and " + std::to_string(scales_len));
  }
  require_pointer(q->codes, "codes");
  require_pointer(q->scales, "scales");
  t.rows = q->rows;
  t.cols = q->cols;
  t.codes.resize(codes_len);
  for (size_t i = 0; i < codes_len; ++i) t.codes[i] = checked_code(q->codes[i]);
  const ScaleFormat sf = scale_format(t.config.scale);
  t.scales.resize(scales_len);
  for (size_t i = 0; i < scales_len; ++i) t.scales[i] = checked_scale_code(sf, q->scales[i]);
  t.tensor.encode = q->tensor_encode;
  t.tensor.decode = q->tensor_decode;
  return t;
}

}  // namespace nibble::capi

extern "C" {

int nibble_golden_api_version(void) { return NIBBLE_GOLDEN_API_VERSION; }

const char* nibble_last_error(void) { return nibble::capi::last_error(); }

size_t nibble_last_error_copy(char* buf, size_t len) {
  const char* msg = nibble::capi::last_error();
  const size_t n = std::char_traits<char>::length(msg);
  if (buf != nullptr && len > 0) {
    const size_t m = n < len - 1 ? n : len - 1;
    std::char_traits<char>::copy(buf, msg, m);
    buf[m] = '\0';
  }
  return n;
}

}  // extern "C"
