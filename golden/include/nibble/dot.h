// The block-scaled dot product: the contract the tensor-core datapath implements.
//
// For operands a and b of one k-range, split into blocks b = 0, 1, ... in
// increasing k (block length = the shorter of the two operands' block widths):
//   P_b = sum_i qa_i * qb_i      exact integer, in units 2^(lsb_a + lsb_b)
//   s_b = fl(sa_b * sb_b)        binary32 product of the two decode scales
//   r_b = fl(P_b * 2^(lsb_a+lsb_b) * s_b)   one rounding of an exact product
//   acc = fl(acc + r_b)          binary32 RNE, acc starts at +0, subnormals kept
// and finally out = fl(acc * fl(ga * gb)) with the per-tensor decode scales.
//
// Exactness: |P_b| <= 12*12*32 < 2^13, so P_b is exact in any 14-bit signed
// adder. E4M3 scales carry 4 significant bits, so sa*sb (8 bits) and then
// P_b*s_b (21 bits) are exact in binary32: with E4M3 (or UE8M0 inside the
// binary32 range) scales, only the accumulation rounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nibble/formats.h"
#include "nibble/quantize.h"

namespace nibble {

// Exact block sum: sum of signed products of `count` code pairs, in units 2^(lsb_a + lsb_b).
int32_t block_partial_sum(const uint8_t* codes_a, Format fa, const uint8_t* codes_b, Format fb, size_t count);

// r_b: the one rounding of P * 2^(lsb_a + lsb_b) * fl(scale_a * scale_b).
float block_product(int32_t partial_sum, Format fa, Format fb, float scale_a, float scale_b);

// The same partial sums for callers that reuse an operand row many times (the
// cycle model's bulk GEMM): decode a row once, then take block sums of decoded
// units. Equal to block_partial_sum on the codes (tests/golden/dot_test.cpp).
//   decode_units:       out[i] = decode(f, codes[i]).signed_units(), in [-12, 12]
//   block_partial_sums: out[j] = sum of units_a[i] * units_b[i] over block j, the
//                       blocks being [j*step, min((j+1)*step, k)), j < ceil(k/step)
void decode_units(Format f, const uint8_t* codes, size_t n, int8_t* out);
void block_partial_sums(const int8_t* units_a, const int8_t* units_b, size_t k, size_t step, int32_t* out);

// fl(acc + r): the accumulator step.
float accumulate(float acc, float r);

// The last step: out = fl(acc * fl(ga * gb)) with the operands' per-tensor decode scales.
float apply_tensor_scales(float acc, float ga, float gb);

// Throws std::invalid_argument, its message starting with `op`, unless a and b
// can meet in a dot product: the same number of cols, the same RHT settings
// and, with an RHT, the same seed (the same signs on both operands).
void check_dot_operands(const QuantizedTensor& a, const QuantizedTensor& b, const std::string& op);

// Dot product of row `ra` of a with row `rb` of b (both quantized along cols,
// the same number of cols), including the per-tensor scales. The caller checks
// the operands (check_dot_operands) and the row indices.
float dot_rows(const QuantizedTensor& a, int64_t ra, const QuantizedTensor& b, int64_t rb);

// C = A * B^T: a is [M, K], b is [N, K]; returns row-major [M, N]. Throws
// std::invalid_argument unless check_dot_operands(a, b, "gemm") passes.
std::vector<float> gemm(const QuantizedTensor& a, const QuantizedTensor& b);

}  // namespace nibble
