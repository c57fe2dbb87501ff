// torch.ops.nibble: the training harness's quantized GEMM and the quantizer as
// PyTorch operators, so a PyTorch program computes exactly what `nibble train`
// computes. CPU tensors run golden (the specification), CUDA tensors the
// nibble::cuda kernels; the dispatcher picks by the operands' device. Loaded by
// nibble.torch (python/nibble/torch.py) from beside the Python package.
//
//   quantized_gemm(Tensor a, bool a_transposed, str a_config,
//                  Tensor b, bool b_transposed, str b_config, bool bf16_out=False) -> Tensor
//
// C = op(a) op(b)^T, op(x) = x^T where transposed (the operand taken column-wise),
// each operand quantized by its configuration along the reduction axis, written
// "key=value,..." with the keys of nibble.QuantConfig.to_dict() (format, block,
// scale, rounding, sr_bits, rht, rht_bf16, seed, stream, zero, nonfinite; a key
// left out keeps golden's default). C is FP32, or BF16 rounded to nearest even.
//
//   quantize_dequantize(Tensor x, str config) -> Tensor
//
// x (2-D, FP32 or BF16) quantized along its last axis by the configuration and
// decoded again: golden's dequantize(quantize(x)) in FP32, on x's device.
#include <torch/library.h>
#include <torch/torch.h>
#if NIBBLE_TRAIN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backend.h"
#if NIBBLE_TRAIN_CUDA
#include "nibble/cuda/check.h"
#include "nibble/cuda/quantize.h"
#endif
#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::train {
namespace {

// Error messages carry numbers as text made here (std::to_string), never through
// an iostream: inside a Python process an integer streamed by c10::str from this
// library crashed (PyTorch 2.11 wheel), while strings stream safely.
std::string text(uint64_t v) { return std::to_string(v); }
std::string text(int64_t v) { return std::to_string(v); }

template <class T>
T named(const std::optional<T>& v, const std::string& key, const std::string& value) {
  TORCH_CHECK_VALUE(v.has_value(), "torch.ops.nibble: unknown ", key, " '", value, "'");
  return *v;
}

uint64_t number(const std::string& key, const std::string& value, uint64_t max) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  TORCH_CHECK_VALUE(!value.empty() && value[0] != '-' && end == value.c_str() + value.size() && errno == 0 && v <= max,
                    "torch.ops.nibble: ", key, " must be an integer in 0..", text(max), ", got '", value, "'");
  return v;
}

QuantConfig parse_config(const std::string& text) {
  QuantConfig c;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    const size_t eq = item.find('=');
    TORCH_CHECK_VALUE(eq != std::string::npos, "torch.ops.nibble: '", item, "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "format") {
      c.format = named(parse_format(value), key, value);
    } else if (key == "block") {
      c.block = named(parse_block_shape(value), key, value);
    } else if (key == "scale") {
      c.scale = named(parse_scale_mode(value), key, value);
    } else if (key == "rounding") {
      c.rounding = named(parse_rounding(value), key, value);
    } else if (key == "sr_bits") {
      c.sr_bits = static_cast<int>(number(key, value, 64));
    } else if (key == "rht") {
      c.rht.size = static_cast<int>(number(key, value, 1 << 20));
    } else if (key == "rht_bf16") {
      TORCH_CHECK_VALUE(value == "True" || value == "False" || value == "1" || value == "0",
                        "torch.ops.nibble: rht_bf16 must be True, False, 1 or 0, got '", value, "'");
      c.rht.round_bf16 = value == "True" || value == "1";
    } else if (key == "seed") {
      c.seed = number(key, value, UINT64_MAX);
    } else if (key == "stream") {
      c.stream = static_cast<uint32_t>(number(key, value, UINT32_MAX));
    } else if (key == "zero") {
      c.policy.zero = named(parse_zero_policy(value), key, value);
    } else if (key == "nonfinite") {
      c.policy.nonfinite = named(parse_nonfinite_policy(value), key, value);
    } else {
      TORCH_CHECK_VALUE(false, "torch.ops.nibble: unknown configuration key '", key, "'");
    }
  }
  try {
    validate(c);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "torch.ops.nibble: ", e.what());
  }
  return c;
}

GemmOperand operand(const torch::Tensor& x, bool transposed, const std::string& config, const char* which) {
  TORCH_CHECK_VALUE(x.dim() == 2, "torch.ops.nibble: ", which, " must be 2-D, got ", text(x.dim()), "-D");
  TORCH_CHECK_VALUE(x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16,
                    "torch.ops.nibble: ", which, " must be float32 or bfloat16, got ",
                    std::string(c10::toString(x.scalar_type())));
  return {x.contiguous(), transposed, parse_config(config)};
}

// The reduction lengths of op(a) and op(b) must agree; golden refuses the rest.
void check_shapes(const GemmOperand& a, const GemmOperand& b) {
  const int64_t ka = a.src.size(a.transposed ? 0 : 1), kb = b.src.size(b.transposed ? 0 : 1);
  TORCH_CHECK_VALUE(ka == kb, "torch.ops.nibble: op(a) reduces over ", text(ka), " and op(b) over ", text(kb));
}

torch::Tensor run(GemmBackend& backend, std::mutex& lock, const torch::Tensor& a, bool a_transposed,
                  const std::string& a_config, const torch::Tensor& b, bool b_transposed, const std::string& b_config,
                  bool bf16_out) {
  TORCH_CHECK_VALUE(a.device() == b.device(), "torch.ops.nibble: a and b are on different devices");
  const GemmOperand ga = operand(a, a_transposed, a_config, "a");
  const GemmOperand gb = operand(b, b_transposed, b_config, "b");
  check_shapes(ga, gb);
  // The backends keep state between calls (the CUDA one its quantized-operand buffers),
  // and autograd may call from its own threads.
  const std::lock_guard<std::mutex> hold(lock);
  try {
    return backend.gemm(ga, gb, bf16_out ? torch::kBFloat16 : torch::kFloat32);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "torch.ops.nibble: ", e.what());
  }
}

torch::Tensor gemm_cpu(const torch::Tensor& a, bool a_transposed, std::string a_config, const torch::Tensor& b,
                       bool b_transposed, std::string b_config, bool bf16_out) {
  static std::mutex lock;
  static const std::unique_ptr<GemmBackend> backend = make_golden_backend();
  return run(*backend, lock, a, a_transposed, a_config, b, b_transposed, b_config, bf16_out);
}

#if NIBBLE_TRAIN_CUDA
torch::Tensor gemm_cuda(const torch::Tensor& a, bool a_transposed, std::string a_config, const torch::Tensor& b,
                        bool b_transposed, std::string b_config, bool bf16_out) {
  static std::mutex lock;
  static const std::unique_ptr<GemmBackend> backend = make_cuda_backend();
  const c10::cuda::CUDAGuard on_device(a.device());
  return run(*backend, lock, a, a_transposed, a_config, b, b_transposed, b_config, bf16_out);
}
#endif

torch::Tensor quantize_dequantize_cpu(const torch::Tensor& x, std::string config) {
  const GemmOperand op = operand(x, false, config, "x");
  const torch::Tensor xf = op.src.to(torch::kFloat32).contiguous();
  QuantizedTensor q;
  try {
    q = nibble::quantize(xf.data_ptr<float>(), xf.size(0), xf.size(1), op.config);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "torch.ops.nibble: ", e.what());
  }
  std::vector<float> d = nibble::dequantize(q);
  return torch::from_blob(d.data(), {xf.size(0), xf.size(1)}, torch::kFloat32).clone();
}

#if NIBBLE_TRAIN_CUDA
torch::Tensor quantize_dequantize_cuda(const torch::Tensor& x, std::string config) {
  const c10::cuda::CUDAGuard on_device(x.device());
  const GemmOperand op = operand(x, false, config, "x");
  const int64_t rows = op.src.size(0), cols = op.src.size(1);
  try {
    cuda::validate_gpu_config(op.config, rows, cols);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "torch.ops.nibble: ", e.what());
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  cuda::DeviceQuantized q = cuda::allocate_quantized(rows, cols, op.config);
  NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());  // allocate_quantized zeroes the scales on the legacy stream
  const cuda::InputType type =
      op.src.scalar_type() == torch::kBFloat16 ? cuda::InputType::kBFloat16 : cuda::InputType::kFloat32;
  cuda::quantize(op.src.data_ptr(), type, rows, cols, op.config, &q, nullptr, stream);
  torch::Tensor out = torch::empty({rows, cols}, op.src.options().dtype(torch::kFloat32));
  cuda::dequantize(q, out.data_ptr<float>(), stream);
  NIBBLE_CUDA_CHECK(cudaStreamSynchronize(stream));  // before q's buffers are freed
  return out;
}
#endif

}  // namespace

TORCH_LIBRARY(nibble, m) {
  m.def("quantized_gemm(Tensor a, bool a_transposed, str a_config, Tensor b, bool b_transposed, str b_config, "
        "bool bf16_out=False) -> Tensor");
  m.def("quantize_dequantize(Tensor x, str config) -> Tensor");
}

TORCH_LIBRARY_IMPL(nibble, CPU, m) {
  m.impl("quantized_gemm", &gemm_cpu);
  m.impl("quantize_dequantize", &quantize_dequantize_cpu);
}

#if NIBBLE_TRAIN_CUDA
TORCH_LIBRARY_IMPL(nibble, CUDA, m) {
  m.impl("quantized_gemm", &gemm_cuda);
  m.impl("quantize_dequantize", &quantize_dequantize_cuda);
}
#endif

}  // namespace nibble::train
