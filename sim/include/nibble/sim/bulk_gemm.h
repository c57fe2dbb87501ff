// C = A * B^T bit-exact with golden::gemm, computed in bulk: every operand row
// decoded to signed units once (golden's decode_units) and every block scale
// decoded once (decode_scale); per C element the integer block sums of a row
// pair (golden's block_partial_sums), then golden's own block_product,
// accumulate and apply_tensor_scales, in golden's block order. Nothing is
// rounded outside golden's functions.
#pragma once

#include <cstdint>
#include <vector>

#include "nibble/quantize.h"
#include "nibble/sim/device.h"

namespace nibble::sim {

// a is [M, K], b is [N, K]; returns row-major [M, N]. Throws std::invalid_argument
// as golden::gemm does (K differs, operands rotated differently). `progress`, if
// set, is called with (rows of C done, M) now and then.
std::vector<float> bulk_gemm(const QuantizedTensor& a, const QuantizedTensor& b, const ProgressFn& progress = {});

}  // namespace nibble::sim
