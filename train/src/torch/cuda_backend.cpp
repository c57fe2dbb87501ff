// The GPU backend: nibble::cuda quantize and the block-scaled GEMM, reading
// torch's device tensors in place and running on torch's current CUDA stream.
// Quantized operands live in buffers reused across calls (one per shape,
// configuration, operand slot and stream): every use of one is ordered on its
// stream. Prepared operands (GemmBackend::prepare) have buffers of their own,
// ordered across streams by events, and are decoded ahead as a GEMM's B where
// a GEMM would decode them before its main kernel.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>

#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

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
    const at::cuda::CUDAStream current = at::cuda::getCurrentCUDAStream();
    const cudaStream_t stream = current.stream();
    Prepared* pa = find_prepared(a, current);
    Prepared* pb = find_prepared(b, current);
    const cuda::DeviceQuantized& qa = pa ? pa->q : quantize(a, 0, stream);
    const cuda::DeviceQuantized& qb = pb ? pb->q : quantize(b, 1, stream);
    torch::Tensor c = torch::empty({qa.rows, qb.rows}, a.src.options().dtype(out));
    cuda::GemmWorkspace ws = workspace(stream, a.src.options());
    if (pb && pb->decoded_ahead) ws.b_decoded = &pb->decoded;
    if (out == torch::kBFloat16) {
      // Rounded in the GEMM's epilogue: no FP32 C written and read again by a cast.
      cuda::gemm_bf16(qa, qb, static_cast<uint16_t*>(c.data_ptr()), stream, cuda::kDefaultGemmKernel,
                      cuda::GemmTiles::kAuto, ws);
    } else {
      cuda::gemm(qa, qb, c.data_ptr<float>(), stream, cuda::kDefaultGemmKernel, cuda::GemmTiles::kAuto, ws);
    }
    // The next prepare() of these buffers waits for this read.
    for (Prepared* p : {pa, pb}) {
      if (p) p->read.record(current);
    }
    return c;
  }

  void prepare(const std::vector<GemmOperand>& operands) override {
    const at::cuda::CUDAStream current = at::cuda::getCurrentCUDAStream();
    ++generation_;
    for (const GemmOperand& op : operands) {
      check_operand(op);
      Prepared& p = prepared_[{op.src.data_ptr(), op.transposed}];
      const auto [qrows, qcols] = quantized_shape(op);
      if (p.generation == 0 || p.q.rows != qrows || p.q.cols != qcols || p.config.format != op.config.format ||
          p.config.block != op.config.block || p.config.scale != op.config.scale) {
        p.read.synchronize();  // no GEMM still reads the buffers being replaced
        p.q = cuda::allocate_quantized(qrows, qcols, op.config);
        NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());  // allocate_quantized zeroes the scales on the legacy stream
      }
      p.read.block(current);  // the last GEMM that read the previous contents
      p.sizes = op.src.sizes().vec();
      p.dtype = op.src.scalar_type();
      p.version = op.src._version();
      p.config = op.config;
      p.generation = generation_;
      quantize_into(op, p.q, current.stream());
      // Where a GEMM would decode it as its B before its main kernel, decoded now too.
      p.decoded_ahead = cuda::decode_b_ahead(p.q, block_cols(op.config.block), p.decoded, current.stream());
      p.ready.record(current);
    }
  }

  void forget_prepared() override { ++generation_; }

  const char* name() const override { return "nibble::cuda kernels"; }
  std::string device_name() const override {
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
    return prop.name;
  }

 private:
  using Key = std::tuple<int64_t, int64_t, int, int, int, int, cudaStream_t>;

  // An operand quantized ahead by prepare(), valid while `generation` is the
  // backend's and the tensor is unchanged.
  struct Prepared {
    cuda::DeviceQuantized q;
    std::vector<int64_t> sizes;
    torch::ScalarType dtype = torch::kFloat32;
    int64_t version = 0;
    QuantConfig config;
    uint64_t generation = 0;
    cuda::DecodedB decoded;  // q decoded as a GEMM's B (cuda::decode_b_ahead), where decoded_ahead
    bool decoded_ahead = false;
    at::cuda::CUDAEvent ready;  // the quantization (and decode) done
    at::cuda::CUDAEvent read;   // the last GEMM that read it
  };

  static void check_operand(const GemmOperand& op) {
    const torch::Tensor& x = op.src;
    if (!x.is_cuda() || x.dim() != 2 || !x.is_contiguous()) {
      throw std::invalid_argument("CUDA GEMM backend: operands must be contiguous 2-D CUDA tensors");
    }
    if (x.scalar_type() != torch::kFloat32 && x.scalar_type() != torch::kBFloat16) {
      throw std::invalid_argument("CUDA GEMM backend: operands must be FP32 or BF16");
    }
  }

  // The quantized operand is [cols, rows] when taken column-wise.
  static std::pair<int64_t, int64_t> quantized_shape(const GemmOperand& op) {
    const int64_t rows = op.src.size(0), cols = op.src.size(1);
    return op.transposed ? std::make_pair(cols, rows) : std::make_pair(rows, cols);
  }

  static void quantize_into(const GemmOperand& op, cuda::DeviceQuantized& q, cudaStream_t stream) {
    const torch::Tensor& x = op.src;
    const cuda::InputType type =
        x.scalar_type() == torch::kFloat32 ? cuda::InputType::kFloat32 : cuda::InputType::kBFloat16;
    q.config = op.config;  // gemm reads the RHT setting and seed of each operand from here
    cuda::quantize(x.data_ptr(), type, x.size(0), x.size(1), op.config, op.transposed ? nullptr : &q,
                   op.transposed ? &q : nullptr, stream);
  }

  // op's prepared quantization, the current stream made to wait for it; null
  // where there is none for op as it is now.
  Prepared* find_prepared(const GemmOperand& op, const at::cuda::CUDAStream& stream) {
    if (!op.src.defined() || !op.src.is_cuda()) return nullptr;
    const auto it = prepared_.find({op.src.data_ptr(), op.transposed});
    if (it == prepared_.end()) return nullptr;
    Prepared& p = it->second;
    if (p.generation != generation_ || p.version != op.src._version() || p.dtype != op.src.scalar_type() ||
        op.src.sizes().vec() != p.sizes || p.config != op.config) {
      return nullptr;
    }
    p.ready.block(stream);
    return &p;
  }

  cuda::DeviceQuantized& quantize(const GemmOperand& op, int slot, cudaStream_t stream) {
    check_operand(op);
    const auto [qrows, qcols] = quantized_shape(op);
    const Key key{qrows, qcols, static_cast<int>(op.config.format), static_cast<int>(op.config.block),
                  static_cast<int>(op.config.scale), slot, stream};
    auto it = pool_.find(key);
    if (it == pool_.end()) {
      // allocate_quantized zeroes the scales on the legacy stream: finish that first.
      it = pool_.emplace(key, cuda::allocate_quantized(qrows, qcols, op.config)).first;
      NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
    }
    cuda::DeviceQuantized& q = it->second;
    quantize_into(op, q, stream);
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
  std::map<std::pair<const void*, bool>, Prepared> prepared_;  // by storage and way taken
  uint64_t generation_ = 1;
  std::map<cudaStream_t, torch::Tensor> workspaces_;
};

}  // namespace

std::unique_ptr<GemmBackend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }
bool cuda_backend_built() { return true; }

}  // namespace nibble::train
