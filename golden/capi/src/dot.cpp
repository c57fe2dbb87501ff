// The C API's dot products: argument checks, then golden's block step, dot_rows and gemm.
#include <algorithm>
#include <string>

#include "capi_detail.h"
#include "nibble/dot.h"

using namespace nibble;
using namespace nibble::capi;

extern "C" {

int nibble_block_dot(int format_a, int scale_format_a, const uint8_t* codes_a, uint32_t scale_a, int format_b,
                     int scale_format_b, const uint8_t* codes_b, uint32_t scale_b, size_t count, float acc_in,
                     float* acc_out) {
  return guarded(__func__, [&] {
    const Format fa = to_format(format_a), fb = to_format(format_b);
    const ScaleFormat sfa = to_scale_format(scale_format_a), sfb = to_scale_format(scale_format_b);
    require_pointer(codes_a, "codes_a");
    require_pointer(codes_b, "codes_b");
    require_pointer(acc_out, "acc_out");
    if (count < 1 || count > 32) {
      fail(NIBBLE_ERR_SIZE, "a block holds 1..32 code pairs, got " + std::to_string(count));
    }
    for (size_t i = 0; i < count; ++i) {
      checked_code(codes_a[i]);
      checked_code(codes_b[i]);
    }
    const float sa = decode_scale(sfa, checked_scale_code(sfa, scale_a));
    const float sb = decode_scale(sfb, checked_scale_code(sfb, scale_b));
    const int32_t p = block_partial_sum(codes_a, fa, codes_b, fb, count);
    *acc_out = accumulate(acc_in, block_product(p, fa, fb, sa, sb));
  });
}

int nibble_dot_rows(const nibble_quantized* a, int64_t ra, const nibble_quantized* b, int64_t rb, float* out) {
  return guarded(__func__, [&] {
    const QuantizedTensor ta = to_quantized(a, "a");
    const QuantizedTensor tb = to_quantized(b, "b");
    require_pointer(out, "out");
    if (ra < 0 || ra >= ta.rows || rb < 0 || rb >= tb.rows) {
      fail(NIBBLE_ERR_SIZE, "row " + std::to_string(ra) + " of " + std::to_string(ta.rows) + " or row " +
                                std::to_string(rb) + " of " + std::to_string(tb.rows) + " is out of range");
    }
    if (ta.cols != tb.cols) {
      fail(NIBBLE_ERR_SIZE, "contraction lengths differ (" + std::to_string(ta.cols) + " vs " +
                                std::to_string(tb.cols) + ")");
    }
    *out = dot_rows(ta, ra, tb, rb);
  });
}

int nibble_gemm(const nibble_quantized* a, const nibble_quantized* b, float* c, size_t c_len) {
  return guarded(__func__, [&] {
    const QuantizedTensor ta = to_quantized(a, "a");
    const QuantizedTensor tb = to_quantized(b, "b");
    require_pointer(c, "c");
    const int64_t need = checked_mul(ta.rows, tb.rows, "M * N");
    if (c_len != static_cast<size_t>(need)) {
      fail(NIBBLE_ERR_SIZE, "c length " + std::to_string(c_len) + " does not match M * N = " + std::to_string(need));
    }
    const std::vector<float> out = gemm(ta, tb);
    std::copy(out.begin(), out.end(), c);
  });
}

}  // extern "C"
