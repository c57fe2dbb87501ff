// torch.ops.nibble (train/src/torch/ops.cpp) through PyTorch's dispatcher, as
// Python calls it: quantized_gemm and quantize_dequantize on CPU tensors bit for
// bit golden's quantize, GEMM and dequantize; on CUDA tensors bit for bit the
// CPU operators; bad configurations refused as ValueError. Random operands from
// a printed seed.
#include <ATen/core/dispatch/Dispatcher.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nibble/dot.h"
#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::train {
namespace {

constexpr uint64_t kSeed = 20261129;

// The operator's configuration argument: "key=value,..." in golden's names.
std::string config_text(const QuantConfig& c) {
  return "format=" + std::string(name(c.format)) + ",block=" + std::string(name(c.block)) +
         ",scale=" + std::string(name(c.scale)) + ",rounding=" + std::string(name(c.rounding)) +
         ",sr_bits=" + std::to_string(c.sr_bits) + ",rht=" + std::to_string(c.rht.size) +
         ",rht_bf16=" + (c.rht.round_bf16 ? "1" : "0") + ",seed=" + std::to_string(c.seed) +
         ",stream=" + std::to_string(c.stream) + ",zero=" + std::string(name(c.policy.zero)) +
         ",nonfinite=" + std::string(name(c.policy.nonfinite));
}

// The library registers the operator when loaded, as torch.ops.load_library does it.
const bool loaded = [] {
  if (dlopen(NIBBLE_TORCH_OPS, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    ADD_FAILURE() << "cannot load " << NIBBLE_TORCH_OPS << ": " << dlerror();
    return false;
  }
  return true;
}();

torch::Tensor call(const torch::Tensor& a, bool a_t, const std::string& ca, const torch::Tensor& b, bool b_t,
                   const std::string& cb, bool bf16_out = false) {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("nibble::quantized_gemm", "");
  std::vector<c10::IValue> stack{a, a_t, ca, b, b_t, cb, bf16_out};
  op.callBoxed(&stack);
  return stack.at(0).toTensor();
}

torch::Tensor call_qdq(const torch::Tensor& x, const std::string& config) {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("nibble::quantize_dequantize", "");
  std::vector<c10::IValue> stack{x, config};
  op.callBoxed(&stack);
  return stack.at(0).toTensor();
}

// C = op(a) op(b)^T by golden.
std::vector<float> golden(const torch::Tensor& a, bool a_t, const QuantConfig& ca, const torch::Tensor& b, bool b_t,
                          const QuantConfig& cb) {
  auto q = [](torch::Tensor x, bool t, const QuantConfig& c) {
    x = x.to(torch::kCPU, torch::kFloat32);
    if (t) x = x.t();
    x = x.contiguous();
    return nibble::quantize(x.data_ptr<float>(), x.size(0), x.size(1), c);
  };
  return nibble::gemm(q(a, a_t, ca), q(b, b_t, cb));
}

bool same_bits(const torch::Tensor& got, const std::vector<float>& want) {
  const torch::Tensor g = got.to(torch::kCPU, torch::kFloat32).contiguous();
  return static_cast<size_t>(g.numel()) == want.size() &&
         std::memcmp(g.data_ptr<float>(), want.data(), want.size() * sizeof(float)) == 0;
}

std::vector<QuantConfig> configs() {
  std::vector<QuantConfig> out;
  int i = 0;
  for (const Format f : kAllFormats) {
    for (const ScaleMode s : kAllScaleModes) {
      for (const BlockShape blk : kAllBlockShapes) {
        QuantConfig c;
        c.format = f;
        c.scale = s;
        c.block = blk;
        c.seed = 1000 + static_cast<uint64_t>(i);
        c.rounding = i % 2 == 1 ? Rounding::kStochastic : Rounding::kNearestEven;
        c.rht.size = i % 3 == 1 ? 16 : 0;
        ++i;
        try {
          validate(c);
          out.push_back(c);
        } catch (const std::invalid_argument&) {
        }
      }
    }
  }
  return out;
}

struct Case {
  torch::Tensor a, b;
  bool a_t, b_t;
  QuantConfig ca, cb;
};

// Operands and configurations of pair i (a row-wise or column-wise, FP32 or BF16).
Case make_case(size_t i, const std::vector<QuantConfig>& cfgs, torch::Generator& gen) {
  Case k;
  k.ca = cfgs[i];
  k.cb = cfgs[(i * 7 + 3) % cfgs.size()];
  if (k.ca.block != k.cb.block && (k.ca.block == BlockShape::k16x16 || k.cb.block == BlockShape::k16x16)) k.cb = k.ca;
  k.a_t = (i & 1) != 0;
  k.b_t = (i & 2) != 0;
  const int64_t m = 16 + 16 * static_cast<int64_t>(i % 3), n = 32, kk = 64 * (1 + static_cast<int64_t>(i % 2));
  const auto type = i % 4 == 3 ? torch::kBFloat16 : torch::kFloat32;
  k.a = torch::randn(k.a_t ? std::vector<int64_t>{kk, m} : std::vector<int64_t>{m, kk}, gen).to(type);
  k.b = (torch::randn(k.b_t ? std::vector<int64_t>{kk, n} : std::vector<int64_t>{n, kk}, gen) * 0.1).to(type);
  return k;
}

TEST(TorchOps, CpuOperatorIsGolden) {
  const std::vector<QuantConfig> cfgs = configs();
  ASSERT_GE(cfgs.size(), 3 * kAllFormats.size());
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kSeed);
  size_t compared = 0, refused = 0;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const Case k = make_case(i, cfgs, gen);
    SCOPED_TRACE(config_text(k.ca) + " x " + config_text(k.cb) + " seed " + std::to_string(kSeed));
    std::vector<float> want;
    try {
      want = golden(k.a, k.a_t, k.ca, k.b, k.b_t, k.cb);
    } catch (const std::invalid_argument&) {  // a pair golden refuses: so does the operator
      EXPECT_THROW(call(k.a, k.a_t, config_text(k.ca), k.b, k.b_t, config_text(k.cb)), c10::Error);
      ++refused;
      continue;
    }
    const torch::Tensor c = call(k.a, k.a_t, config_text(k.ca), k.b, k.b_t, config_text(k.cb));
    EXPECT_EQ(c.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(same_bits(c, want));
    ++compared;
  }
  EXPECT_GE(compared, cfgs.size() / 2) << refused << " refused";
}

TEST(TorchOps, CudaOperatorIsTheCpuOperator) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  const std::vector<QuantConfig> cfgs = configs();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kSeed + 1);
  size_t compared = 0;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const Case k = make_case(i, cfgs, gen);
    SCOPED_TRACE(config_text(k.ca) + " x " + config_text(k.cb) + " seed " + std::to_string(kSeed + 1));
    for (const bool bf16 : {false, true}) {
      torch::Tensor cpu;
      try {
        cpu = call(k.a, k.a_t, config_text(k.ca), k.b, k.b_t, config_text(k.cb), bf16);
      } catch (const c10::Error&) {
        EXPECT_THROW(call(k.a.to(gpu), k.a_t, config_text(k.ca), k.b.to(gpu), k.b_t, config_text(k.cb), bf16),
                     c10::Error);
        continue;
      }
      const torch::Tensor cuda = call(k.a.to(gpu), k.a_t, config_text(k.ca), k.b.to(gpu), k.b_t, config_text(k.cb), bf16);
      EXPECT_TRUE(cuda.is_cuda());
      EXPECT_EQ(cuda.scalar_type(), cpu.scalar_type());
      EXPECT_TRUE(torch::equal(cuda.cpu(), cpu)) << (bf16 ? "bf16" : "fp32") << " output";
      ++compared;
    }
  }
  EXPECT_GE(compared, cfgs.size());
}

TEST(TorchOps, QuantizeDequantizeIsGoldenOnTheCpuAndTheGpu) {
  const std::vector<QuantConfig> cfgs = configs();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kSeed + 2);
  const bool gpu = torch::cuda::is_available();
  size_t compared = 0;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const QuantConfig& c = cfgs[i];
    SCOPED_TRACE(config_text(c) + " seed " + std::to_string(kSeed + 2));
    const auto type = i % 4 == 3 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor x = (torch::randn({32 + 16 * static_cast<int64_t>(i % 3), 64}, gen) * 3).to(type);
    const torch::Tensor xf = x.to(torch::kFloat32).contiguous();
    const std::vector<float> want = nibble::dequantize(nibble::quantize(xf.data_ptr<float>(), xf.size(0), xf.size(1), c));
    const torch::Tensor cpu = call_qdq(x, config_text(c));
    EXPECT_TRUE(same_bits(cpu, want));
    if (gpu) {
      const torch::Tensor cuda = call_qdq(x.to(torch::Device(torch::kCUDA, 0)), config_text(c));
      EXPECT_TRUE(cuda.is_cuda());
      EXPECT_TRUE(same_bits(cuda, want)) << "CUDA";
    }
    ++compared;
  }
  EXPECT_EQ(compared, cfgs.size());
  EXPECT_THROW(call_qdq(torch::zeros({4, 4, 4}), config_text(QuantConfig{})), c10::ValueError);
  EXPECT_THROW(call_qdq(torch::zeros({4, 16}), "block=2x2"), c10::ValueError);
}

TEST(TorchOps, BadConfigurationsAreValueErrors) {
  const torch::Tensor a = torch::zeros({16, 32});
  const std::string ok = config_text(QuantConfig{});
  const std::vector<std::string> bad = {"format=fp8", "colour=red", "rht=17", "seed=-1", "format", "sr_bits=x"};
  for (const std::string& c : bad) {
    EXPECT_THROW(call(a, false, c, a, false, ok), c10::ValueError) << c;
  }
  EXPECT_THROW(call(a, false, ok, torch::zeros({16, 48}), false, ok), c10::ValueError);
  EXPECT_THROW(call(a.to(torch::kFloat64), false, ok, a, false, ok), c10::ValueError);
  EXPECT_THROW(call(torch::zeros({2, 16, 32}), false, ok, a, false, ok), c10::ValueError);
}

}  // namespace
}  // namespace nibble::train
