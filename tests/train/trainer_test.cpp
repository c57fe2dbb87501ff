// The libtorch trainer on the CPU, with golden quantize + golden gemm behind
// every quantized GEMM (tiny model: the golden GEMMs are slow).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#if NIBBLE_TRAIN_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "add_layer_norm.h"
#include "backend.h"
#include "nibble/train/recipe.h"
#include "nibble/train/summary.h"
#include "nibble/train/trainer.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;

PreparedData tiny_data() {
  PreparedData d;
  const std::string text = "the quick brown fox jumps over the lazy dog. a stitch in time saves nine.\n";
  std::string train, val;
  for (int i = 0; i < 40; ++i) train += text;
  for (int i = 0; i < 4; ++i) val += text;
  d.train.assign(train.begin(), train.end());
  d.val.assign(val.begin(), val.end());
  return d;
}

TrainConfig tiny_config(int64_t steps) {
  TrainConfig c;
  c.model.layers = 2;
  c.model.d_model = 32;
  c.model.heads = 2;
  c.model.ctx = 16;
  c.batch = 2;
  c.steps = steps;
  c.warmup = 2;
  c.lr = 3e-3;
  c.diag_every = 3;
  c.eval_every = 0;
  c.eval_bytes = 64;
  c.log_every = 4;
  c.device = "cpu";
  c.quiet = true;
  c.seeds = {11, 11, 11};
  return c;
}

std::string out_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("nibble_trainer_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Removes a run directory and everything in it, one entry at a time. Not
// fs::remove_all: in this test, linked with PyTorch 2.11's libtorch.so, that
// call crashed through a null pointer inside libtorch.so (the entry-by-entry
// calls, which the trainer itself uses, work).
void remove_run_dir(const fs::path& dir) {
  if (!fs::exists(dir)) return;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) {
      remove_run_dir(e.path());
    } else {
      fs::remove(e.path());
    }
  }
  fs::remove(dir);
}

TEST(Trainer, Ufp4AndInt4LossCurvesAreBitIdentical) {
  const PreparedData d = tiny_data();
  std::ostringstream log;
  const TrainResult a = run_training(preset("ufp4"), tiny_config(5), d, out_dir("ufp4"), log);
  const TrainResult b = run_training(preset("ufp4-int4"), tiny_config(5), d, out_dir("int4"), log);
  ASSERT_EQ(a.loss.size(), 5u);
  EXPECT_TRUE(bit_identical(a.loss, b.loss));
  // ...while E2M1 trains differently from the same init and batches.
  const TrainResult e = run_training(preset("e2m1"), tiny_config(5), d, out_dir("e2m1"), log);
  EXPECT_FALSE(bit_identical(a.loss, e.loss));
}

TEST(Trainer, SameInitAndDataAcrossRecipes) {
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(1);
  c.diag_every = 0;
  const TrainResult bf = run_training(preset("bf16"), c, d, out_dir("init_bf16"), log);
  const TrainResult q = run_training(preset("ufp4"), c, d, out_dir("init_ufp4"), log);
  // The first loss differs only by quantization error: close, not equal.
  EXPECT_NEAR(bf.loss[0], q.loss[0], 0.05);
  EXPECT_NEAR(bf.loss[0], std::log(256.0), 0.3);  // a fresh model is near uniform over bytes
  // The count the study's tokens per parameter rest on (train_config.h) is the model's own.
  EXPECT_EQ(bf.parameters, model_parameters(c.model));
}

TEST(Trainer, Bf16LearnsAndLogsAreWritten) {
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(40);
  c.eval_every = 20;
  const std::string dir = out_dir("bf16");
  const TrainResult r = run_training(preset("bf16"), c, d, dir, log);
  ASSERT_EQ(r.loss.size(), 40u);
  EXPECT_LT(r.loss.back(), r.loss.front() - 1.0) << "first " << r.loss.front() << " last " << r.loss.back();
  ASSERT_EQ(r.val_loss.size(), 2u);
  ASSERT_EQ(r.val_loss_bf16.size(), 2u);
  EXPECT_EQ(r.val_loss[1].second, r.val_loss_bf16[1].second);  // bf16's own forward is the BF16 forward
  for (const char* f : {"loss.csv", "val.csv", "diag.csv", "run.json"}) EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "run.json.tmp"));
  // diag.csv: steps 0,3,...,39 = 14 diagnostic steps x 8 linears x 3 GEMMs x 4 variants (bf16 has no "recipe" rows).
  std::ifstream in(fs::path(dir) / "diag.csv");
  std::string line;
  int rows = -1;
  double min_alpha = 1e9, max_alpha = -1e9;
  while (std::getline(in, line)) {
    if (++rows == 0) continue;
    std::stringstream ss(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 7u) << line;
    const double alpha = std::stod(cells[5]);
    min_alpha = std::min(min_alpha, alpha);
    max_alpha = std::max(max_alpha, alpha);
  }
  EXPECT_EQ(rows, 14 * 8 * 3 * 4);
  EXPECT_GT(min_alpha, 0.5);
  EXPECT_LT(max_alpha, 1.5);
}

TEST(Trainer, EveryPresetRunsOnTheCpu) {
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(2);
  c.diag_every = 0;
  for (const auto& n : preset_names()) {
    const TrainResult r = run_training(preset(n), c, d, out_dir("preset_" + n), log);
    ASSERT_EQ(r.loss.size(), 2u) << n;
    EXPECT_TRUE(std::isfinite(r.loss[1])) << n;
  }
}

TEST(Trainer, QuantizedRunsValidateWithTheirOwnAndABf16Forward) {
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(3);
  c.diag_every = 0;
  const TrainResult r = run_training(preset("e2m1"), c, d, out_dir("val_e2m1"), log);
  ASSERT_EQ(r.val_loss.size(), 1u);
  ASSERT_EQ(r.val_loss_bf16.size(), 1u);
  EXPECT_NE(r.val_loss[0].second, r.val_loss_bf16[0].second);
  EXPECT_NEAR(r.val_loss[0].second, r.val_loss_bf16[0].second, 0.1);
}

TEST(Trainer, SeedsActApart) {
  // The quantization seed moves only a quantized recipe's numbers; the data seed moves every recipe's.
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(3);
  c.diag_every = 0;
  const TrainResult base = run_training(preset("bf16"), c, d, out_dir("seed_base"), log);
  TrainConfig q = c;
  q.seeds.quant = 99;
  EXPECT_TRUE(bit_identical(base.loss, run_training(preset("bf16"), q, d, out_dir("seed_q"), log).loss));
  const TrainResult u0 = run_training(preset("ufp4"), c, d, out_dir("seed_u0"), log);
  EXPECT_FALSE(bit_identical(u0.loss, run_training(preset("ufp4"), q, d, out_dir("seed_u1"), log).loss));
  TrainConfig dd = c;
  dd.seeds.data = 5;
  EXPECT_FALSE(bit_identical(base.loss, run_training(preset("bf16"), dd, d, out_dir("seed_d"), log).loss));
}

// A run stopped by --time-limit at its checkpoints and started again until it
// finishes gives the bits of an uninterrupted run (losses, validation, the
// logs' rows), and leaves no checkpoint behind; a checkpoint of another
// configuration is not resumed.
TEST(Trainer, ResumesFromCheckpointsWithTheSameBits) {
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(12);
  c.eval_every = 5;
  const Recipe r = preset("e2m1");
  const TrainResult whole = run_training(r, c, d, out_dir("resume_whole"), log);

  const std::string dir = out_dir("resume_parts");
  remove_run_dir(dir);
  c.time_limit_s = 1e-6;  // stops at the first chance: every log_every (4) steps
  c.checkpoint_every = 5;
  TrainResult part;
  int calls = 0;
  do {
    part = run_training(r, c, d, dir, log);
    ++calls;
    if (part.paused) {
      EXPECT_TRUE(fs::exists(fs::path(dir) / "checkpoint.json"));
      EXPECT_FALSE(fs::exists(fs::path(dir) / "run.json"));
    }
  } while (part.paused && calls < 20);
  EXPECT_GT(calls, 2);
  EXPECT_FALSE(part.paused);
  EXPECT_TRUE(bit_identical(part.loss, whole.loss));
  EXPECT_EQ(part.val_loss, whole.val_loss);
  EXPECT_EQ(part.val_loss_bf16, whole.val_loss_bf16);
  EXPECT_TRUE(fs::exists(fs::path(dir) / "run.json"));
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_NE(e.path().filename().string().rfind("checkpoint", 0), 0u) << e.path();
  }
  auto rows = [](const fs::path& p) {
    std::ifstream in(p);
    std::vector<std::string> firsts;
    for (std::string line; std::getline(in, line);) firsts.push_back(line.substr(0, line.find(',')));
    return firsts;
  };
  for (const char* log_name : {"loss.csv", "val.csv", "diag.csv"}) {
    EXPECT_EQ(rows(fs::path(dir) / log_name), rows(fs::path(out_dir("resume_whole")) / log_name)) << log_name;
  }

  // Paused at 12 steps, then asked for 13: another experiment, started afresh.
  remove_run_dir(dir);
  c.time_limit_s = 1e-6;
  ASSERT_TRUE(run_training(r, c, d, dir, log).paused);
  c.time_limit_s = 0;
  c.steps = 13;
  std::ostringstream fresh;
  c.quiet = false;
  const TrainResult other = run_training(r, c, d, dir, fresh);
  EXPECT_EQ(other.loss.size(), 13u);
  EXPECT_NE(fresh.str().find("starting afresh"), std::string::npos) << fresh.str();
  EXPECT_EQ(other.loss.front(), whole.loss.front());
}

TEST(Trainer, GradientAccumulationMatchesOneBatch) {
  // Two micro-batches of 2 are one batch of 4 up to the order of the additions.
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(4);
  c.diag_every = 0;
  c.batch = 4;
  const TrainResult whole = run_training(preset("bf16"), c, d, out_dir("accum_1"), log);
  c.micro_batch = 2;
  const TrainResult split = run_training(preset("bf16"), c, d, out_dir("accum_2"), log);
  ASSERT_EQ(whole.loss.size(), split.loss.size());
  for (size_t i = 0; i < whole.loss.size(); ++i) EXPECT_NEAR(whole.loss[i], split.loss[i], 2e-3) << "step " << i;
}

// On a GPU: the captured CUDA graph trains exactly as the eager step, and the
// CUDA kernels keep ufp4 and ufp4-int4 bit-identical.
TEST(TrainerGpu, GraphedStepEqualsEagerAndInt4EqualsE1m2) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device or no CUDA GEMM backend";
  const PreparedData d = tiny_data();
  std::ostringstream log;
  TrainConfig c = tiny_config(12);
  c.device = "cuda";
  c.model.layers = 2;
  c.model.d_model = 64;
  c.diag_every = 5;
  c.eval_every = 6;
  c.graph = "auto";
  const TrainResult g = run_training(preset("bf16"), c, d, out_dir("gpu_graph"), log);
  EXPECT_TRUE(g.graphed);
  c.graph = "off";
  const TrainResult e = run_training(preset("bf16"), c, d, out_dir("gpu_eager"), log);
  EXPECT_FALSE(e.graphed);
  EXPECT_TRUE(bit_identical(g.loss, e.loss));
  const TrainResult u = run_training(preset("ufp4"), c, d, out_dir("gpu_ufp4"), log);
  const TrainResult i4 = run_training(preset("ufp4-int4"), c, d, out_dir("gpu_int4"), log);
  EXPECT_FALSE(u.graphed);
  EXPECT_TRUE(bit_identical(u.loss, i4.loss));
  // Weight gradients on the second stream and the weights quantized ahead
  // there (the default) give the bits of the one-stream step, with gradient
  // accumulation too (nvfp4: its last block's GEMMs stay on the first stream, in BF16).
  for (const char* name : {"e2m1", "nvfp4"}) {
    c.batch = 4;
    c.micro_batch = 2;
    c.wgrad_stream = "auto";
    const TrainResult two = run_training(preset(name), c, d, out_dir("gpu_two_streams"), log);
    c.wgrad_stream = "off";
    const TrainResult one = run_training(preset(name), c, d, out_dir("gpu_one_stream"), log);
    EXPECT_TRUE(bit_identical(two.loss, one.loss)) << name;
    ASSERT_FALSE(two.val_loss.empty());
    EXPECT_EQ(two.val_loss.back().second, one.val_loss.back().second) << name;
  }
}

// On a GPU: every GEMM of a linear layer through the CUDA kernels with a BF16
// output (rounded in the GEMM's epilogue) gives golden's bits, and the same
// bits as the FP32 output cast to BF16 by torch.
TEST(TrainerGpu, CudaBf16GemmsEqualGolden) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device or no CUDA GEMM backend";
  const std::unique_ptr<GemmBackend> gpu = make_cuda_backend();
  const std::unique_ptr<GemmBackend> cpu = make_golden_backend();
  std::printf("seed 5\n");
  torch::manual_seed(5);
  const auto on_gpu = torch::TensorOptions().device(torch::kCUDA, 0);
  const torch::Tensor x = (torch::randn({96, 64}) * 3).to(on_gpu.dtype(torch::kBFloat16));
  const torch::Tensor w = (torch::randn({80, 64}) * 0.05).to(on_gpu.dtype(torch::kFloat32));
  const torch::Tensor dy = (torch::randn({96, 80}) * 1e-3).to(on_gpu.dtype(torch::kBFloat16));
  struct Call {
    Gemm g;
    torch::Tensor a;
    bool a_t;
    torch::Tensor b;
    bool b_t;
  };
  const Call calls[] = {{Gemm::kFprop, x, false, w, false}, {Gemm::kDgrad, dy, false, w, true},
                        {Gemm::kWgrad, dy, true, x, true}};
  int64_t compared = 0, nonzero = 0;
  for (const char* name : {"e2m1", "ufp4", "nvfp4"}) {
    const Recipe r = preset(name);
    for (const Call& call : calls) {
      const uint64_t seed = gemm_seed(3, 7, 1, call.g);
      // Layer 0 of 2: quantized in every preset (nvfp4 keeps its last layer in BF16).
      const auto ca = operand_config(r, call.g, Operand::kA, 0, 2, seed);
      const auto cb = operand_config(r, call.g, Operand::kB, 0, 2, seed);
      ASSERT_TRUE(ca && cb) << name << " " << train::name(call.g);
      const GemmOperand a{call.a, call.a_t, *ca}, b{call.b, call.b_t, *cb};
      const torch::Tensor fused = gpu->gemm(a, b, torch::kBFloat16).cpu();
      const torch::Tensor cast = gpu->gemm(a, b, torch::kFloat32).to(torch::kBFloat16).cpu();
      const torch::Tensor golden = cpu->gemm(a, b, torch::kBFloat16).cpu();
      ASSERT_EQ(fused.scalar_type(), torch::kBFloat16);
      EXPECT_EQ(fused.view(torch::kInt16).ne(golden.view(torch::kInt16)).sum().item<int64_t>(), 0)
          << name << " " << train::name(call.g) << ": outputs differing from golden";
      EXPECT_EQ(fused.view(torch::kInt16).ne(cast.view(torch::kInt16)).sum().item<int64_t>(), 0)
          << name << " " << train::name(call.g) << ": outputs differing from the FP32 output cast by torch";
      compared += fused.numel();
      nonzero += fused.ne(0).sum().item<int64_t>();
    }
  }
  std::printf("%lld BF16 outputs compared (%lld non-zero)\n", static_cast<long long>(compared),
              static_cast<long long>(nonzero));
  EXPECT_GT(nonzero, compared / 2);
}

// On a GPU: a weight operand quantized ahead (GemmBackend::prepare, on another
// stream), and decoded ahead as the GEMM's B (2100 tokens: a GEMM that decodes
// B once), gives the GEMM the bits of its own quantization, and is used only
// while it is current: the GEMM after an in-place change of the weight, or
// after forget_prepared(), quantizes the weight as it is then.
TEST(TrainerGpu, PreparedWeightOperandsGiveTheSameBits) {
#if !NIBBLE_TRAIN_CUDA
  GTEST_SKIP() << "no CUDA GEMM backend in this build";
#else
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device or no CUDA GEMM backend";
  std::printf("seed 13\n");
  torch::manual_seed(13);
  const auto on_gpu = torch::TensorOptions().device(torch::kCUDA, 0);
  const torch::Tensor x = (torch::randn({2100, 64}) * 3).to(on_gpu.dtype(torch::kBFloat16));
  const torch::Tensor dy = (torch::randn({2100, 80}) * 1e-3).to(on_gpu.dtype(torch::kBFloat16));
  const c10::cuda::CUDAStream main_stream = c10::cuda::getCurrentCUDAStream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, 0);
  auto same = [](const torch::Tensor& a, const torch::Tensor& b) {
    return a.view(torch::kInt16).eq(b.view(torch::kInt16)).all().item<bool>();
  };
  int cases = 0;
  for (const char* name : {"e2m1", "ufp4"}) {  // ufp4: the weights' RHT signs come from the GEMM's seed
    for (const Gemm g : {Gemm::kFprop, Gemm::kDgrad}) {
      const std::unique_ptr<GemmBackend> gpu = make_cuda_backend();
      const std::unique_ptr<GemmBackend> fresh = make_cuda_backend();
      torch::Tensor w = (torch::randn({80, 64}) * 0.05).to(on_gpu.dtype(torch::kFloat32));
      const uint64_t seed = gemm_seed(3, 7, 1, g);
      const Recipe r = preset(name);
      const auto ca = operand_config(r, g, Operand::kA, 0, 2, seed);
      const auto cb = operand_config(r, g, Operand::kB, 0, 2, seed);
      ASSERT_TRUE(ca && cb);
      const bool dgrad = g == Gemm::kDgrad;
      const GemmOperand a{dgrad ? dy : x, false, *ca};
      auto b = [&] { return GemmOperand{w, dgrad, *cb}; };
      const torch::Tensor inline_q = fresh->gemm(a, b(), torch::kBFloat16);
      {
        const c10::cuda::CUDAStreamGuard on_side(side);
        gpu->prepare({b()});
      }
      EXPECT_TRUE(same(gpu->gemm(a, b(), torch::kBFloat16), inline_q)) << name;
      // A change the weight's version does not see (through an alias of its
      // memory): the prepared operand is still taken, its bits showing that it was used.
      torch::from_blob(w.data_ptr(), w.sizes(), w.options()).mul_(2);
      const torch::Tensor doubled = fresh->gemm(a, b(), torch::kBFloat16);
      EXPECT_FALSE(same(doubled, inline_q)) << name;
      EXPECT_TRUE(same(gpu->gemm(a, b(), torch::kBFloat16), inline_q)) << name;
      gpu->forget_prepared();
      EXPECT_TRUE(same(gpu->gemm(a, b(), torch::kBFloat16), doubled)) << name;
      // Prepared again, then changed in place (a new version): not taken.
      {
        const c10::cuda::CUDAStreamGuard on_side(side);
        gpu->prepare({b()});
      }
      EXPECT_TRUE(same(gpu->gemm(a, b(), torch::kBFloat16), doubled)) << name;
      {
        torch::NoGradGuard no_grad;
        w.mul_(0.5);
      }
      EXPECT_TRUE(same(gpu->gemm(a, b(), torch::kBFloat16), inline_q)) << name;
      // A different configuration (another step's seed, which ufp4's RHT reads;
      // e2m1 rounds its weights to nearest, so the bits are the same) is not taken
      // either: the call quantizes with its own.
      const auto cb2 = operand_config(r, g, Operand::kB, 0, 2, gemm_seed(3, 8, 1, g));
      {
        const c10::cuda::CUDAStreamGuard on_side(side);
        gpu->prepare({b()});
      }
      const GemmOperand a2{a.src, false, *operand_config(r, g, Operand::kA, 0, 2, gemm_seed(3, 8, 1, g))};
      EXPECT_TRUE(same(gpu->gemm(a2, GemmOperand{w, dgrad, *cb2}, torch::kBFloat16),
                       fresh->gemm(a2, GemmOperand{w, dgrad, *cb2}, torch::kBFloat16)))
          << name;
      ++cases;
    }
  }
  EXPECT_EQ(main_stream, c10::cuda::getCurrentCUDAStream());
  EXPECT_EQ(cases, 4);
#endif
}

// On a GPU: the fused residual add and LayerNorm (add_layer_norm) gives h + y
// bit for bit and x as the ATen ops give it up to the order of their sums (one
// BF16 rounding apart at most), with the same gradients up to FP32 rounding; a
// width the kernel does not take runs the ATen ops themselves, bit for bit.
TEST(TrainerGpu, AddLayerNormMatchesTheAtenOps) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device or no CUDA GEMM backend";
  std::printf("seed 11\n");
  torch::manual_seed(11);
  const auto f32 = torch::TensorOptions().device(torch::kCUDA, 0).dtype(torch::kFloat32);
  const auto bf16 = f32.dtype(torch::kBFloat16);
  int64_t compared = 0;
  // Widths the kernel takes and one it does not (40); rows over one CTA of the
  // backward and over several, with and without a gradient for h_out (the
  // last LayerNorm's h_out feeds nothing else).
  struct Case {
    int64_t batch, rows, d;
    bool h_out_grad;
  };
  for (const Case c : {Case{3, 37, 32, true}, Case{3, 37, 96, true}, Case{3, 37, 768, true}, Case{3, 37, 1024, true},
                       Case{3, 37, 40, true}, Case{2, 1031, 768, true}, Case{2, 1031, 768, false},
                       Case{3, 37, 96, false}}) {
    const int64_t d = c.d;
    const bool fused_width = d % 32 == 0;
    const torch::Tensor h0 = (torch::randn({c.batch, c.rows, d}) * 2 + 0.5).to(f32);
    const torch::Tensor y0 = torch::randn({c.batch, c.rows, d}).to(bf16);
    const torch::Tensor w0 = (torch::randn({d}) * 0.3 + 1).to(f32);
    const torch::Tensor b0 = (torch::randn({d}) * 0.1).to(f32);
    const torch::Tensor gh = torch::randn({c.batch, c.rows, d}).to(f32);
    const torch::Tensor gx = torch::randn({c.batch, c.rows, d}).to(bf16);
    struct Run {
      torch::Tensor h_out, x;
      torch::autograd::variable_list grads;  // h, y, w, b
      std::string node;
    };
    auto run = [&](bool fused) {
      const torch::Tensor h = h0.clone().requires_grad_(true), y = y0.clone().requires_grad_(true);
      const torch::Tensor w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
      Run r;
      if (fused) {
        std::tie(r.h_out, r.x) = add_layer_norm(h, y, w, b);
      } else {
        r.h_out = h + y;
        r.x = torch::layer_norm(r.h_out, {d}, w, b, 1e-5).to(torch::kBFloat16);
      }
      r.node = r.x.grad_fn()->name();
      r.grads = c.h_out_grad ? torch::autograd::grad({r.h_out, r.x}, {h, y, w, b}, {gh, gx})
                             : torch::autograd::grad({r.x}, {h, y, w, b}, {gx});
      return r;
    };
    const Run f = run(true), a = run(false);
    SCOPED_TRACE("rows " + std::to_string(c.batch * c.rows) + ", d " + std::to_string(d) +
                 (c.h_out_grad ? "" : ", no gradient for h_out"));
    EXPECT_EQ(f.node.find("AddLayerNorm") != std::string::npos, fused_width) << f.node;
    EXPECT_EQ(f.h_out.ne(a.h_out).sum().item<int64_t>(), 0);
    const torch::Tensor xf = f.x.to(torch::kFloat32), xa = a.x.to(torch::kFloat32);
    if (fused_width) {
      // One BF16 rounding apart: a unit in the last place, at most 2^-7 of the larger
      // magnitude; or both near 0, where the sum (x - mean) rstd w + b cancels and FP32
      // rounding of its terms (of order 1 here) moves a small result by more than its
      // own BF16 unit.
      const torch::Tensor tol = torch::maximum(xf.abs(), xa.abs()) * std::ldexp(1.0, -7) + 1e-4;
      EXPECT_EQ((xf - xa).abs().gt(tol).sum().item<int64_t>(), 0);
      EXPECT_LT(xf.ne(xa).sum().item<int64_t>(), xf.numel() / 20) << "more than 5 % of x differ";
      const char* names[] = {"dh", "dy", "dw", "db"};
      for (size_t i = 0; i < 4; ++i) {
        const torch::Tensor gf = f.grads[i].to(torch::kFloat32), ga = a.grads[i].to(torch::kFloat32);
        const double rtol = i == 1 ? std::ldexp(1.0, -7) : 1e-4;
        EXPECT_TRUE(torch::allclose(gf, ga, rtol, 1e-4 * ga.abs().max().item<double>())) << names[i];
      }
      // The gamma/beta sums run in a fixed order: a second run gives the same bits.
      const Run again = run(true);
      for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(torch::equal(again.grads[i], f.grads[i])) << names[i];
    } else {
      EXPECT_EQ(xf.ne(xa).sum().item<int64_t>(), 0);
      for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(torch::equal(f.grads[i], a.grads[i])) << i;
    }
    compared += xf.numel();
  }
  std::printf("%lld LayerNorm outputs compared\n", static_cast<long long>(compared));
  EXPECT_GT(compared, 0);
}

TEST(Trainer, BadSizesAreRefused) {
  TrainConfig c = tiny_config(1);
  c.model.d_model = 48;
  EXPECT_THROW(validate(c), std::invalid_argument);
  c = tiny_config(1);
  c.batch = 3;
  EXPECT_THROW(validate(c), std::invalid_argument);
  c = tiny_config(1);
  c.device = "tpu";
  EXPECT_THROW(validate(c), std::invalid_argument);
  c = tiny_config(1);
  c.batch = 4;
  c.micro_batch = 3;
  EXPECT_THROW(validate(c), std::invalid_argument);
}

}  // namespace
}  // namespace nibble::train
