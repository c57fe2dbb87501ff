// The CPU backend: golden quantize and golden gemm, the specification itself.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "backend.h"
#include "nibble/dot.h"
#include "nibble/fp32.h"

namespace nibble::train {
namespace {

QuantizedTensor quantize_operand(const GemmOperand& op) {
  torch::Tensor x = op.src.to(torch::kCPU, torch::kFloat32);
  if (op.transposed) x = x.t();
  x = x.contiguous();
  return nibble::quantize(x.data_ptr<float>(), x.size(0), x.size(1), op.config);
}

class GoldenBackend final : public GemmBackend {
 public:
  torch::Tensor gemm(const GemmOperand& a, const GemmOperand& b, torch::ScalarType type) override {
    const QuantizedTensor qa = quantize_operand(a);
    const QuantizedTensor qb = quantize_operand(b);
    std::vector<float> c = nibble::gemm(qa, qb);
    torch::Tensor out;
    if (type == torch::kBFloat16) {
      out = torch::empty({qa.rows, qb.rows}, torch::kBFloat16);
      auto* bits = static_cast<uint16_t*>(out.data_ptr());
      for (size_t i = 0; i < c.size(); ++i) bits[i] = static_cast<uint16_t>(f32_bits(round_to_bf16(c[i])) >> 16);
    } else if (type == torch::kFloat32) {
      out = torch::empty({qa.rows, qb.rows}, torch::kFloat32);
      std::copy(c.begin(), c.end(), out.data_ptr<float>());
    } else {
      throw std::invalid_argument("golden GEMM backend: the output must be FP32 or BF16");
    }
    return out.to(a.src.device());
  }
  const char* name() const override { return "golden (CPU)"; }
};

}  // namespace

std::unique_ptr<GemmBackend> make_golden_backend() { return std::make_unique<GoldenBackend>(); }

}  // namespace nibble::train
