// Quantization on the GPU: FP32 or BF16 tensors -> packed 4-bit codes + block
// scales, bit for bit what golden nibble::quantize produces (docs/numerics.md
// section 3), and back (dequantize).
//
// Device layout of a quantized [rows, cols] tensor (cols = the contraction axis):
//   codes   rows x codes_ld bytes; element (r, 2k) is the low nibble of byte
//           r * codes_ld + k, element (r, 2k+1) the high nibble. codes_ld is
//           ceil(cols / 2) rounded up to 16 bytes; the padding holds code 0.
//   scales  scale_rows x scales_ld codes of scale_bytes bytes each (1 for E4M3
//           and UE8M0, 4 for FP32), block-row-major as golden's `scales`;
//           scales_ld is the block-grid width rounded up to 16.
//   tensor  kTensorFloats floats: {amax_tensor, S_enc, g}, the per-tensor
//           level (S_enc = g = 1 unless the scale mode is nvfp4); then, for
//           nvfp4 only, fl(S_enc * fl(1 / gmax)) and the encode factor
//           fl(1 / fl(dec(code) * g)) of each of the 256 E4M3 scale codes:
//           what every block needs from the tensor scale, computed once.
//
// One kernel pass reads the input once and writes the row-wise result, the
// column-wise result (the quantization of x^T, golden's quantize applied to
// the transposed tensor: its own RHT axis, SR groups and tensor amax), or both.
// nvfp4 needs the tensor amax first: a separate amax pass runs before.
//
// Supported: every format, block shape, scale mode, RNE and SR (B = 1..8),
// RHT16 (with or without the bf16 rounding) fused in registers, and both
// policies of golden's QuantPolicy (signed zero; the propagate policy's
// non-finite blocks and NaN tensor scales take a per-group rare path). Larger RHT
// sizes are refused (std::invalid_argument).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "nibble/cuda/device_buffer.h"
#include "nibble/quantize.h"

namespace nibble::cuda {

enum class InputType : uint8_t { kFloat32, kBFloat16 };

// Indices into DeviceQuantized::tensor.
inline constexpr int kTensorAmax = 0;
inline constexpr int kTensorEncode = 1;
inline constexpr int kTensorDecode = 2;
inline constexpr int kTensorEncOverGmax = 3;
inline constexpr int kTensorEncodeTable = 4;
inline constexpr int kTensorFloats = kTensorEncodeTable + 256;

struct DeviceQuantized {
  QuantConfig config;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t codes_ld = 0;    // bytes per row of codes
  int64_t scale_rows = 0;  // block-grid rows
  int64_t scale_cols = 0;  // block-grid cols
  int64_t scales_ld = 0;   // scale codes per row of scales
  int scale_bytes = 0;     // bytes per scale code
  DeviceBuffer<uint8_t> codes;
  DeviceBuffer<uint8_t> scales;
  DeviceBuffer<float> tensor;  // kTensorFloats: {amax_tensor, S_enc, g, nvfp4 table}

  size_t device_bytes() const { return codes.bytes() + scales.bytes() + tensor.bytes(); }
};

// Throws std::invalid_argument for configurations the GPU path does not run
// (everything golden's validate refuses, and RHT sizes other than 16).
void validate_gpu_config(const QuantConfig& cfg, int64_t rows, int64_t cols);

// Device storage for the quantization of a [rows, cols] tensor under cfg.
DeviceQuantized allocate_quantized(int64_t rows, int64_t cols, const QuantConfig& cfg);

// x: device pointer to a row-major [rows, cols] tensor (no padding).
// rowwise (if not null) receives x quantized along cols: allocated for
// [rows, cols]; colwise (if not null) receives x^T quantized along rows:
// allocated for [cols, rows]. Both use cfg. Asynchronous on `stream`.
void quantize(const void* x, InputType type, int64_t rows, int64_t cols, const QuantConfig& cfg,
              DeviceQuantized* rowwise, DeviceQuantized* colwise, cudaStream_t stream = nullptr);

// Allocate and quantize row-wise (synchronous convenience for tools and tests).
DeviceQuantized quantize_rowwise(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg);

// The main-pass kernels quantize() launches for cfg's format, scale mode,
// rounding, block width and RHT, one per tile layout, without launching them
// (no device needed): each is the instantiation for cfg's values, picked from
// golden's format and scale-mode lists (tests check that every listed value
// has its own).
std::vector<const void*> quantize_kernels_of(const QuantConfig& cfg);

// out: device pointer to [rows, cols] floats, fl(fl(q * dec(s)) * g) (golden dequantize).
void dequantize(const DeviceQuantized& q, float* out, cudaStream_t stream = nullptr);
// The same values rounded to bfloat16 (RNE; golden round_to_bf16), stored as
// 16-bit patterns: the operands of the usual "dequantize, then a BF16 GEMM" emulation.
void dequantize_bf16(const DeviceQuantized& q, uint16_t* out, cudaStream_t stream = nullptr);

// Copy to the host in golden's layout: one code per byte, uint32 scale codes,
// and the tensor scale. Synchronous.
QuantizedTensor to_host(const DeviceQuantized& q);

// The reverse: a quantized tensor from the host (golden's, or one read from a
// file) in device storage, for the GEMM and dequantize. Any configuration
// golden accepts (the RHT was applied before quantizing, so its size does not
// matter here); codes and scales past the tensor's edge are zero, as the
// quantizer leaves them. The tensor's amax is not known: its slot is NaN.
// Throws std::invalid_argument for an invalid configuration or codes and
// scales that do not fit the shape. Synchronous.
DeviceQuantized to_device(const QuantizedTensor& h);

}  // namespace nibble::cuda
