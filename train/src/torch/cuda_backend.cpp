// The GPU backend: nibble::cuda quantize and the block-scaled GEMM, reading
// torch's device tensors in place and running on torch's current CUDA stream.
// Quantized operands live in buffers reused across calls (one per shape,
// configuration, operand slot and stream): every use of one is ordered on its stream.
#include <ATen/cuda/CUDAContext.h>

#include <map>
#include <stdexcept>
#include <tuple>

#include "backend.h"
#include "nibble/cuda/gemm.h"
#include "nibble/cuda/quantize.h"

namespace nibble::train {
namespace {

class CudaBackend final : public GemmBackend {
 public:
  torch::Tensor gemm(const GemmOperand& a, const GemmOperand& b, torch::ScalarType out) override {
    if (out != torch::kFloat32 && out != torch::kBFloat16) {
      throw std::invalid_argument("CUDA GEMM backend: the output must be FP32 or BF16");
    }
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    cuda::DeviceQuantized& qa = quantize(a, 0, stream);
    cuda::DeviceQuantized& qb = quantize(b, 1, stream);
    torch::Tensor c = torch::empty({qa.rows, qb.rows}, a.src.options().dtype(out));
    const cuda::GemmWorkspace ws = workspace(stream, a.src.options());
    if (out == torch::kBFloat16) {
      // Rounded in the GEMM's epilogue: no FP32 C written and read again by a cast.
      cuda::gemm_bf16(qa, qb, static_cast<uint16_t*>(c.data_ptr()), stream, cuda::kDefaultGemmKernel,
                      cuda::GemmTiles::kAuto, ws);
    } else {
      cuda::gemm(qa, qb, c.data_ptr<float>(), stream, cuda::kDefaultGemmKernel, cuda::GemmTiles::kAuto, ws);
    }
    return c;
  }
  const char* name() const override { return "nibble::cuda kernels"; }
  std::string device_name() const override {
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
    return prop.name;
  }

 private:
  using Key = std::tuple<int64_t, int64_t, int, int, int, int, cudaStream_t>;

  cuda::DeviceQuantized& quantize(const GemmOperand& op, int slot, cudaStream_t stream) {
    const torch::Tensor& x = op.src;
    if (!x.is_cuda() || x.dim() != 2 || !x.is_contiguous()) {
      throw std::invalid_argument("CUDA GEMM backend: operands must be contiguous 2-D CUDA tensors");
    }
    cuda::InputType type;
    if (x.scalar_type() == torch::kFloat32) {
      type = cuda::InputType::kFloat32;
    } else if (x.scalar_type() == torch::kBFloat16) {
      type = cuda::InputType::kBFloat16;
    } else {
      throw std::invalid_argument("CUDA GEMM backend: operands must be FP32 or BF16");
    }
    const int64_t rows = x.size(0);
    const int64_t cols = x.size(1);
    // The quantized operand is [cols, rows] when taken column-wise.
    const int64_t qrows = op.transposed ? cols : rows;
    const int64_t qcols = op.transposed ? rows : cols;
    const Key key{qrows, qcols, static_cast<int>(op.config.format), static_cast<int>(op.config.block),
                  static_cast<int>(op.config.scale), slot, stream};
    auto it = pool_.find(key);
    if (it == pool_.end()) {
      // allocate_quantized zeroes the scales on the legacy stream: finish that first.
      it = pool_.emplace(key, cuda::allocate_quantized(qrows, qcols, op.config)).first;
      NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
    }
    cuda::DeviceQuantized& q = it->second;
    q.config = op.config;  // gemm reads the RHT setting and seed of each operand from here
    cuda::quantize(x.data_ptr(), type, rows, cols, op.config, op.transposed ? nullptr : &q,
                   op.transposed ? &q : nullptr, stream);
    return q;
  }

  // The GEMM's workspace on `stream` (its ordered split keeps every SM busy
  // where the tiles are not a multiple of the SMs): one per stream, since
  // the Wgrad GEMMs run beside the backward on a second one; zeroed once,
  // on the stream (every call leaves its flags zero again).
  cuda::GemmWorkspace workspace(cudaStream_t stream, const torch::TensorOptions& on) {
    auto it = workspaces_.find(stream);
    if (it == workspaces_.end()) {
      const auto bytes = static_cast<int64_t>(cuda::gemm_workspace_bytes());
      it = workspaces_.emplace(stream, torch::zeros({bytes}, on.dtype(torch::kUInt8))).first;
    }
    return {it->second.data_ptr(), static_cast<size_t>(it->second.numel())};
  }

  std::map<Key, cuda::DeviceQuantized> pool_;
  std::map<cudaStream_t, torch::Tensor> workspaces_;
};

}  // namespace

std::unique_ptr<GemmBackend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }
bool cuda_backend_built() { return true; }

}  // namespace nibble::train
