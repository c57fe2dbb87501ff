// GEMM backends of the training harness (internal). One call computes
// C = A * B^T with both operands quantized along their reduction axis, where an
// operand is a 2-D torch tensor `src` taken as is (row-wise) or transposed
// (column-wise: golden's quantize of src^T). Returns [rows(A), rows(B)] in FP32,
// or in BF16 (each FP32 output rounded to nearest even) where `out` asks.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "nibble/quantize.h"

namespace nibble::train {

struct GemmOperand {
  torch::Tensor src;  // 2-D, contiguous, FP32 or BF16
  bool transposed;
  QuantConfig config;
};

class GemmBackend {
 public:
  virtual ~GemmBackend() = default;
  virtual torch::Tensor gemm(const GemmOperand& a, const GemmOperand& b,
                             torch::ScalarType out = torch::kFloat32) = 0;
  // Quantizes each operand now, on the current stream, into storage of its own,
  // for the gemm() calls until the next prepare() or forget_prepared() whose
  // operand is the same one: the same tensor (storage, shape and version) taken
  // the same way with an equal configuration. Those calls then skip their own
  // quantization of it (and, where it is their B, its decode) and wait on
  // their stream for this one. The trainer quantizes a step's weight operands
  // this way at the step's start, on a side stream. Backends without it
  // quantize at every call.
  virtual void prepare(const std::vector<GemmOperand>& /*operands*/) {}
  virtual void forget_prepared() {}
  virtual const char* name() const = 0;
  // The device the GEMMs run on, as the driver names it (empty for the CPU).
  virtual std::string device_name() const { return {}; }
};

// Golden quantize + golden gemm on the CPU.
std::unique_ptr<GemmBackend> make_golden_backend();
// nibble::cuda quantize + gemm on torch's current CUDA stream (nullptr where not built).
std::unique_ptr<GemmBackend> make_cuda_backend();
bool cuda_backend_built();

}  // namespace nibble::train
