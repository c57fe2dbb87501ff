// The GPT-style decoder and its training loop (libtorch 2.4 or later).
//
// Model: byte embedding + learned positions; `layers` pre-norm blocks of causal
// multi-head attention (qkv and output projection; fused scaled-dot-product
// attention in BF16) and a GELU MLP (fc1, fc2); final LayerNorm; untied LM head.
// Residual stream and norms in FP32 (GELU computes in FP32 on BF16 storage);
// the four linears of every block take BF16 activations and run their three
// GEMMs through QuantLinear (the recipe decides BF16 or a quantized GEMM); the
// LM head is a BF16 GEMM. Master weights are FP32 in one flat buffer (fused
// AdamW over it); quantizers read them directly, BF16 GEMMs read one BF16 copy
// of the matrices refreshed once per step.
//
// The host never waits for the GPU inside a step: batches are gathered on the
// device from the GPU-resident training bytes, gradients are clipped on the
// device, and losses are read every `log_every` steps. Where no quantized GEMM
// runs (the bf16 recipe) the whole step is captured once as a CUDA graph and
// replayed; quantized GEMMs take a fresh seed per step as a kernel argument, so
// their steps run eagerly.
#include <ATen/ATen.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <fmt/format.h>

#if NIBBLE_TRAIN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "backend.h"
#include "distributed.h"
#include "nibble/train/summary.h"
#include "nibble/train/sweep.h"
#include "nibble/train/trainer.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kLinearNames[4] = {"qkv", "proj", "fc1", "fc2"};

struct DiagEntry {
  int64_t step;
  int site;
  Gemm gemm;
  std::string variant;  // "recipe" or a diag_variants() name
  torch::Tensor alpha;  // 0-dim, read once per diagnostic step
};

// What the linears of the model need while a step runs.
struct Session {
  GemmBackend* backend = nullptr;
  Recipe recipe;
  int n_layers = 0;
  uint64_t quant_seed = 0;
  int64_t step = 0;
  bool diag = false;
  std::vector<DiagEntry> entries;
};
Session* g_session = nullptr;

torch::Tensor operand_view(const torch::Tensor& src, bool transposed) { return transposed ? src.t() : src; }

// <q, ref> / ||ref||^2 as a 0-dim FP32 tensor.
torch::Tensor attenuation(const torch::Tensor& q, const torch::Tensor& ref) {
  return (q * ref).sum() / (ref * ref).sum();
}

// One GEMM of a linear layer: C = op(a) * op(b)^T, BF16 result. `b_bf16` is b's
// BF16 copy, read where the GEMM runs in BF16.
torch::Tensor run_gemm(Gemm g, int site, const torch::Tensor& a, bool a_t, const torch::Tensor& b,
                       const torch::Tensor& b_bf16, bool b_t) {
  Session& s = *g_session;
  const int layer = site / 4;
  const uint64_t seed = gemm_seed(s.quant_seed, s.step, site, g);
  const auto ca = operand_config(s.recipe, g, Operand::kA, layer, s.n_layers, seed);
  const auto cb = operand_config(s.recipe, g, Operand::kB, layer, s.n_layers, seed);
  torch::Tensor out;
  torch::Tensor out32;
  if (ca && cb) {
    out32 = s.backend->gemm({a, a_t, *ca}, {b, b_t, *cb});
    out = out32.to(torch::kBFloat16);
  } else {
    out = torch::matmul(operand_view(a, a_t), operand_view(b_bf16, b_t).t());
  }
  if (s.diag) {
    torch::NoGradGuard no_grad;
    const torch::Tensor ref =
        torch::matmul(operand_view(a, a_t).to(torch::kFloat32), operand_view(b, b_t).to(torch::kFloat32).t());
    if (ca && cb) s.entries.push_back({s.step, site, g, "recipe", attenuation(out32, ref)});
    for (const auto& v : diag_variants()) {
      const auto va = operand_config(v.recipe, g, Operand::kA, 0, 1, seed);
      const auto vb = operand_config(v.recipe, g, Operand::kB, 0, 1, seed);
      const torch::Tensor q = s.backend->gemm({a, a_t, *va}, {b, b_t, *vb});
      s.entries.push_back({s.step, site, g, v.name, attenuation(q, ref)});
    }
  }
  return out;
}

// Y = X W^T with the recipe's three GEMMs; x is BF16 [..., K], w FP32 [N, K] and
// w_bf16 its BF16 copy (no gradient flows through the copy).
class QuantLinear : public torch::autograd::Function<QuantLinear> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& w_bf16, int64_t site) {
    ctx->save_for_backward({x, w, w_bf16});
    ctx->saved_data["site"] = site;
    const torch::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    const torch::Tensor y = run_gemm(Gemm::kFprop, static_cast<int>(site), x2, false, w, w_bf16, false);
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    return y.view(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w = saved[1];
    const torch::Tensor& w_bf16 = saved[2];
    const int site = static_cast<int>(ctx->saved_data["site"].toInt());
    const torch::Tensor dy = grads[0].reshape({-1, w.size(0)}).to(torch::kBFloat16).contiguous();
    const torch::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    const torch::Tensor dx = run_gemm(Gemm::kDgrad, site, dy, false, w, w_bf16, true);
    const torch::Tensor dw = run_gemm(Gemm::kWgrad, site, dy, true, x2, x2, true);
    return {dx.to(x.scalar_type()).view(x.sizes()), dw.to(w.scalar_type()), torch::Tensor(), torch::Tensor()};
  }
};

// Y = X W^T in BF16 for the LM head, reading W's BF16 copy; the gradient goes to
// the FP32 master W.
class Bf16Linear : public torch::autograd::Function<Bf16Linear> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& w_bf16) {
    ctx->save_for_backward({x, w_bf16});
    return torch::matmul(x, w_bf16.t());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w_bf16 = saved[1];
    const torch::Tensor dy = grads[0].to(torch::kBFloat16);
    const torch::Tensor dx = torch::matmul(dy, w_bf16);
    const torch::Tensor dw = torch::matmul(dy.reshape({-1, dy.size(-1)}).t(), x.reshape({-1, x.size(-1)}));
    return {dx, dw.to(torch::kFloat32), torch::Tensor()};
  }
};

// Every parameter as a view of one flat FP32 buffer, with its gradient a view of
// one flat gradient buffer: the optimizer, the clipping and the data-parallel
// reduction each touch one or two tensors. The matrices (weight decay) come
// first, so their BF16 copy is one cast of one range.
struct FlatParams {
  torch::Tensor data, grad, bf16;  // bf16: the matrix range only
  int64_t n_matrix = 0;
  int64_t n_total = 0;
  std::vector<torch::Tensor> all;  // leaves, in layout order

  torch::Tensor matrices() const { return data.narrow(0, 0, n_matrix); }
  torch::Tensor others() const { return data.narrow(0, n_matrix, n_total - n_matrix); }
  void refresh_bf16() {
    torch::NoGradGuard no_grad;
    bf16.copy_(matrices());
  }
};

struct Block {
  torch::Tensor ln1_w, ln1_b, ln2_w, ln2_b;
  torch::Tensor qkv, proj, fc1, fc2;  // [out, in], FP32 masters
  torch::Tensor qkv16, proj16, fc116, fc216;
};

struct Model {
  ModelConfig cfg;
  FlatParams flat;
  torch::Tensor tok_emb, pos_emb, lnf_w, lnf_b, head, head16;
  std::vector<Block> blocks;

  Model(const ModelConfig& c, torch::Device device) : cfg(c) {
    const int64_t d = c.d_model;
    const double std = 0.02;
    const double proj_std = std / std::sqrt(2.0 * c.layers);
    // Drawn in a fixed order from torch's CPU generator: the same init for every recipe and device.
    auto normal = [&](std::vector<int64_t> shape, double s) { return torch::randn(shape, torch::kFloat32) * s; };
    const torch::Tensor tok = normal({kVocabSize, d}, std);
    const torch::Tensor pos = normal({c.ctx, d}, std);
    struct Mats {
      torch::Tensor qkv, proj, fc1, fc2;
    };
    std::vector<Mats> mats;
    for (int l = 0; l < c.layers; ++l) {
      Mats m;
      m.qkv = normal({3 * d, d}, std);
      m.proj = normal({d, d}, proj_std);
      m.fc1 = normal({c.mlp_mult * d, d}, std);
      m.fc2 = normal({d, c.mlp_mult * d}, proj_std);
      mats.push_back(m);
    }
    const torch::Tensor hd = normal({kVocabSize, d}, std);

    // Layout: the matrices, then norms and embeddings.
    std::vector<std::pair<torch::Tensor*, torch::Tensor>> order;
    blocks.resize(static_cast<size_t>(c.layers));
    for (int l = 0; l < c.layers; ++l) {
      Block& b = blocks[static_cast<size_t>(l)];
      const Mats& m = mats[static_cast<size_t>(l)];
      order.insert(order.end(), {{&b.qkv, m.qkv}, {&b.proj, m.proj}, {&b.fc1, m.fc1}, {&b.fc2, m.fc2}});
    }
    order.emplace_back(&head, hd);
    size_t n_matrix_tensors = order.size();
    for (auto& b : blocks) {
      order.insert(order.end(), {{&b.ln1_w, torch::ones({d})}, {&b.ln1_b, torch::zeros({d})},
                                 {&b.ln2_w, torch::ones({d})}, {&b.ln2_b, torch::zeros({d})}});
    }
    order.insert(order.end(), {{&tok_emb, tok}, {&pos_emb, pos}, {&lnf_w, torch::ones({d})},
                               {&lnf_b, torch::zeros({d})}});

    int64_t total = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == n_matrix_tensors) flat.n_matrix = total;
      total += order[i].second.numel();
    }
    flat.n_total = total;
    const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    flat.data = torch::empty({total}, opts);
    flat.grad = torch::zeros({total}, opts);
    flat.bf16 = torch::empty({flat.n_matrix}, opts.dtype(torch::kBFloat16));
    int64_t off = 0;
    for (auto& [slot, init] : order) {
      const int64_t n = init.numel();
      torch::Tensor view = flat.data.narrow(0, off, n).view(init.sizes());
      view.copy_(init);
      *slot = view.detach().requires_grad_(true);
      slot->mutable_grad() = flat.grad.narrow(0, off, n).view(init.sizes());
      flat.all.push_back(*slot);
      off += n;
    }
    flat.refresh_bf16();
    auto copy16 = [&](const torch::Tensor& w) {
      const int64_t start = (static_cast<const char*>(w.data_ptr()) - static_cast<const char*>(flat.data.data_ptr())) /
                            static_cast<int64_t>(sizeof(float));
      return flat.bf16.narrow(0, start, w.numel()).view(w.sizes());
    };
    for (auto& b : blocks) {
      b.qkv16 = copy16(b.qkv);
      b.proj16 = copy16(b.proj);
      b.fc116 = copy16(b.fc1);
      b.fc216 = copy16(b.fc2);
    }
    head16 = copy16(head);
  }

  // tokens: int64 [B, T] -> logits FP32 [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& tokens) const {
    const int64_t B = tokens.size(0);
    const int64_t T = tokens.size(1);
    const int64_t d = cfg.d_model;
    const int64_t H = cfg.heads;
    const int64_t hd = d / H;
    // The embedding as a one-hot product: exact in FP32, and its backward is a
    // GEMM (deterministic, no host synchronization, capturable in a CUDA graph).
    const torch::Tensor one_hot =
        tokens.unsqueeze(-1).eq(torch::arange(kVocabSize, tokens.options())).to(torch::kFloat32);
    torch::Tensor h = torch::matmul(one_hot, tok_emb) + pos_emb.slice(0, 0, T).unsqueeze(0);
    for (int l = 0; l < cfg.layers; ++l) {
      const Block& b = blocks[static_cast<size_t>(l)];
      const int site = 4 * l;
      torch::Tensor x = torch::layer_norm(h, {d}, b.ln1_w, b.ln1_b).to(torch::kBFloat16);
      torch::Tensor qkv = QuantLinear::apply(x, b.qkv, b.qkv16, site + 0);  // [B, T, 3d]
      auto parts = qkv.split(d, -1);
      auto heads = [&](const torch::Tensor& t) { return t.view({B, T, H, hd}).transpose(1, 2); };
      const torch::Tensor y = at::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]),
                                                               std::nullopt, 0.0, /*is_causal=*/true)
                                  .transpose(1, 2)
                                  .reshape({B, T, d});
      // FP32 + BF16 promotes to FP32 inside the add, and BF16 GELU computes in FP32
      // and rounds once: the numerics of explicit casts, without their memory passes.
      h = h + QuantLinear::apply(y, b.proj, b.proj16, site + 1);
      x = torch::layer_norm(h, {d}, b.ln2_w, b.ln2_b).to(torch::kBFloat16);
      const torch::Tensor m = torch::gelu(QuantLinear::apply(x, b.fc1, b.fc116, site + 2));
      h = h + QuantLinear::apply(m, b.fc2, b.fc216, site + 3);
    }
    const torch::Tensor x = torch::layer_norm(h, {d}, lnf_w, lnf_b).to(torch::kBFloat16);
    return Bf16Linear::apply(x, head, head16).to(torch::kFloat32);
  }
};

// Windows of ctx + 1 bytes starting at `offsets` (int64, on the data's device),
// gathered from the resident bytes -> int64 [B, ctx + 1].
torch::Tensor gather_windows(const torch::Tensor& bytes, const torch::Tensor& offsets, int ctx) {
  const torch::Tensor pos = torch::arange(ctx + 1, offsets.options());
  return bytes.index({offsets.unsqueeze(1) + pos.unsqueeze(0)}).to(torch::kInt64);
}

torch::Tensor loss_of(const Model& m, const torch::Tensor& batch) {
  const int64_t T = batch.size(1) - 1;
  const torch::Tensor inputs = batch.slice(1, 0, T);
  const torch::Tensor targets = batch.slice(1, 1, T + 1);
  const torch::Tensor logits = m.forward(inputs);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, kVocabSize}), targets.reshape({-1}));
}

// Writes `text` to `path` through a temporary name, so a reader never sees half of it.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

torch::Tensor host_offsets(const std::vector<int64_t>& offsets, size_t begin, size_t count) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(count)}, torch::kInt64);
  std::copy(offsets.begin() + static_cast<std::ptrdiff_t>(begin),
            offsets.begin() + static_cast<std::ptrdiff_t>(begin + count), t.data_ptr<int64_t>());
  return t;
}

}  // namespace

bool cuda_available() { return cuda_backend_built() && torch::cuda::is_available(); }
int cuda_device_count() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

TrainResult train_rank(const Recipe& recipe, const TrainConfig& c, const PreparedData& data,
                       const std::string& out_dir, std::ostream& log);

TrainResult run_training(const Recipe& recipe, const TrainConfig& c, const PreparedData& data,
                         const std::string& out_dir, std::ostream& log) {
  try {
    return train_rank(recipe, c, data, out_dir, log);
  } catch (const c10::OutOfMemoryError& e) {
    throw OutOfMemory(fmt::format("{}: out of GPU memory at {} layers, d_model {}, ctx {}, micro-batch {}: lower "
                                  "--micro-batch (the batch stays, by gradient accumulation) or the model size",
                                  recipe.name, c.model.layers, c.model.d_model, c.model.ctx, micro_batch_of(c)));
  }
}

TrainResult train_rank(const Recipe& recipe, const TrainConfig& c, const PreparedData& data,
                       const std::string& out_dir, std::ostream& log) {
  validate(c);
  validate(recipe);
  const int64_t need = static_cast<int64_t>(c.model.ctx) + 2;
  if (static_cast<int64_t>(data.train.size()) < need || static_cast<int64_t>(data.val.size()) < need) {
    throw DataError(fmt::format("the data is too short for --ctx {}: {} training and {} validation bytes",
                                c.model.ctx, data.train.size(), data.val.size()));
  }
  std::unique_ptr<Collectives> comm;
  Rank rank;
  if (c.gpus > 1) {
    if (c.rendezvous.empty() || c.rank < 0 || c.rank >= c.gpus) {
      throw std::invalid_argument("a data-parallel run needs its rank and rendezvous file (`nibble train --gpus N` "
                                  "starts one process per GPU and sets them)");
    }
    comm = make_nccl_collectives(c.rendezvous, c.rank, c.gpus);
    rank = Rank{c.rank, c.gpus, comm.get()};
  }
  bool use_cuda = false;
  if (c.device == "cuda" || rank.world > 1) {
    if (!cuda_available()) {
      throw std::invalid_argument("--device cuda: no CUDA device, or this build has no CUDA GEMM backend "
                                  "(libtorch without CUDA, or the kernels were not built)");
    }
    use_cuda = true;
  } else if (c.device == "auto") {
    use_cuda = cuda_available();
  }
  // A data-parallel rank sees its one GPU as device 0 (CUDA_VISIBLE_DEVICES).
  const torch::Device device = use_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
#if NIBBLE_TRAIN_CUDA
  std::optional<c10::cuda::CUDAGuard> device_guard;
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  if (use_cuda) {
    device_guard.emplace(device);
    // A side stream for the whole run: graph capture needs one, and every kernel,
    // ours and torch's, is ordered on it.
    stream_guard.emplace(at::cuda::getStreamFromPool(false, device.index()));
  }
#endif
  std::unique_ptr<GemmBackend> backend = use_cuda ? make_cuda_backend() : make_golden_backend();
  const bool lead = rank.index == 0;

  // Deterministic kernels only (strict: fused attention's backward then takes its
  // deterministic path), so that recipes with the same numerics (ufp4,
  // ufp4-int4) give the same bits and a run repeats exactly.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  at::globalContext().setDeterministicAlgorithms(true, false);

  if (lead) fs::create_directories(out_dir);
  const fs::path run_json = fs::path(out_dir) / "run.json";
  if (lead && fs::exists(run_json)) fs::remove(run_json);  // no stale "finished" marker while this run trains
  torch::manual_seed(c.seeds.init);
  Model model(c.model, device);

  const int mb = micro_batch_of(c);
  const int accum = accumulation_of(c);
  const int64_t tokens_per_step = static_cast<int64_t>(c.batch) * c.model.ctx;

  TrainResult result;
  result.parameters = model.flat.n_total;
  result.gpu = use_cuda ? backend->device_name() : std::string();
  result.device = use_cuda ? fmt::format("CUDA {} ({}{})", result.gpu, backend->name(),
                                         rank.world > 1 ? fmt::format(", {} GPUs data-parallel", rank.world) : "")
                           : fmt::format("CPU ({})", backend->name());

  Session session;
  session.backend = backend.get();
  session.recipe = recipe;
  session.n_layers = c.model.layers;
  session.quant_seed = rank_quant_seed(c.seeds.quant, rank.index);
  g_session = &session;
  struct Reset {
    ~Reset() { g_session = nullptr; }
  } reset;

  // Optimizer state: AdamW over the two flat ranges (decay on the matrices only).
  const auto fopts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  torch::Tensor exp_avg = torch::zeros({model.flat.n_total}, fopts);
  torch::Tensor exp_avg_sq = torch::zeros({model.flat.n_total}, fopts);
  torch::Tensor adam_step = torch::zeros({}, fopts);
  torch::Tensor lr_t = torch::zeros({}, fopts);
  const int64_t nm = model.flat.n_matrix;
  const int64_t no = model.flat.n_total - nm;
  auto adamw = [&]() {
    torch::NoGradGuard no_grad;
    adam_step.add_(1);
    at::_fused_adamw_({model.flat.matrices()}, {model.flat.grad.narrow(0, 0, nm)}, {exp_avg.narrow(0, 0, nm)},
                      {exp_avg_sq.narrow(0, 0, nm)}, {}, {adam_step}, lr_t, 0.9, 0.95, c.weight_decay, 1e-8, false,
                      false, std::nullopt, std::nullopt);
    at::_fused_adamw_({model.flat.others()}, {model.flat.grad.narrow(0, nm, no)}, {exp_avg.narrow(0, nm, no)},
                      {exp_avg_sq.narrow(0, nm, no)}, {}, {adam_step}, lr_t, 0.9, 0.95, 0.0, 1e-8, false, false,
                      std::nullopt, std::nullopt);
  };

  // The training bytes live on the device; a step uploads only its window offsets.
  const torch::Tensor train_bytes =
      torch::from_blob(const_cast<uint8_t*>(data.train.data()), {static_cast<int64_t>(data.train.size())},
                       torch::kUInt8)
          .to(device);
  const torch::Tensor val_bytes =
      torch::from_blob(const_cast<uint8_t*>(data.val.data()), {static_cast<int64_t>(data.val.size())}, torch::kUInt8)
          .to(device);
  torch::Tensor step_offsets = torch::zeros({static_cast<int64_t>(mb) * accum}, fopts.dtype(torch::kInt64));
  torch::Tensor step_loss = torch::zeros({}, fopts);  // mean over the step's micro-batches (and ranks)
  torch::Tensor step_norm = torch::zeros({}, fopts);  // gradient norm before clipping
  const int64_t hist_len = c.log_every;
  torch::Tensor loss_hist = torch::zeros({hist_len}, fopts);
  torch::Tensor norm_hist = torch::zeros({hist_len}, fopts);

  // One optimizer step on the offsets already in step_offsets.
  auto train_step = [&]() {
    model.flat.grad.zero_();
    step_loss.zero_();
    for (int i = 0; i < accum; ++i) {
      const torch::Tensor batch = gather_windows(train_bytes, step_offsets.narrow(0, static_cast<int64_t>(i) * mb, mb),
                                                 c.model.ctx);
      const torch::Tensor loss = loss_of(model, batch);
      (accum > 1 ? loss / accum : loss).backward();
      torch::NoGradGuard no_grad;
      step_loss.add_(loss.detach() / accum);
    }
    torch::NoGradGuard no_grad;
    if (rank.world > 1) rank.all_reduce_mean({model.flat.grad, step_loss});
    step_norm.copy_(at::linalg_vector_norm(model.flat.grad, 2));
    model.flat.grad.mul_((c.grad_clip / (step_norm + 1e-6)).clamp_max(1.0));
    adamw();
    model.flat.refresh_bf16();
  };

  const int64_t eval_tokens = c.eval_bytes > 0 ? std::min<int64_t>(c.eval_bytes, static_cast<int64_t>(data.val.size()) - 1)
                                               : static_cast<int64_t>(data.val.size()) - 1;
  const int eval_windows = static_cast<int>(std::max<int64_t>(1, eval_tokens / c.model.ctx));
  const auto val_offsets = validation_offsets(static_cast<int64_t>(data.val.size()), c.model.ctx, eval_windows);
  // Mean validation loss over every window; a BF16 forward of the same weights where bf16_forward.
  auto evaluate = [&](bool bf16_forward) {
    torch::NoGradGuard no_grad;
    const bool diag = session.diag;
    const Recipe kept = session.recipe;
    session.diag = false;
    if (bf16_forward) session.recipe = preset("bf16");
    torch::Tensor sum = torch::zeros({}, fopts.dtype(torch::kFloat64));
    for (size_t i = static_cast<size_t>(rank.index) * mb; i < val_offsets.size();
         i += static_cast<size_t>(mb) * rank.world) {
      const size_t n = std::min(val_offsets.size() - i, static_cast<size_t>(mb));
      const torch::Tensor offs = host_offsets(val_offsets, i, n).to(device);
      sum += loss_of(model, gather_windows(val_bytes, offs, c.model.ctx)).to(torch::kFloat64) * static_cast<double>(n);
    }
    if (rank.world > 1) rank.all_reduce_sum({sum});
    session.recipe = kept;
    session.diag = diag;
    return sum.item<double>() / static_cast<double>(val_offsets.size());
  };

  std::ofstream loss_csv, val_csv, diag_csv;
  if (lead) {
    loss_csv.open(fs::path(out_dir) / "loss.csv", std::ios::trunc);
    val_csv.open(fs::path(out_dir) / "val.csv", std::ios::trunc);
    diag_csv.open(fs::path(out_dir) / "diag.csv", std::ios::trunc);
    if (!loss_csv || !val_csv || !diag_csv) throw std::runtime_error("cannot write the logs in " + out_dir);
    loss_csv << "step,loss,lr,grad_norm,step_ms\n";
    val_csv << "step,val_loss,val_loss_bf16\n";
    diag_csv << "step,layer,linear,gemm,variant,alpha,cum_alpha\n";
  }

  bool quantized_gemms = false;
  for (int l = 0; l < c.model.layers; ++l) quantized_gemms |= recipe.quantized && layer_quantized(recipe, l, c.model.layers);
  const bool want_graph = use_cuda && c.graph == "auto" && !quantized_gemms && rank.world == 1;
#if NIBBLE_TRAIN_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
  constexpr int kGraphWarmup = 3;  // eager steps before capture (cuBLAS workspaces, allocator pools)

  if (lead && !c.quiet) {
    log << fmt::format("train: {}: {} | {} layers, d_model {}, {} heads, ctx {}, batch {} ({} x {}{}), {} parameters "
                       "| {} steps, seeds init {} data {} quant {} | {}\n",
                       recipe.name, describe(recipe), c.model.layers, c.model.d_model, c.model.heads, c.model.ctx,
                       c.batch, mb, accum, rank.world > 1 ? fmt::format(" x {} GPUs", rank.world) : "",
                       result.parameters, c.steps, c.seeds.init, c.seeds.data, c.seeds.quant, result.device);
  }

  auto sync = [&]() {
#if NIBBLE_TRAIN_CUDA
    if (use_cuda) at::cuda::getCurrentCUDAStream().synchronize();
#endif
  };
  const int64_t timed_from = std::min<int64_t>(10, c.steps / 2);  // steps before this carry one-time costs
  double train_seconds = 0;   // wall time of steps [timed_from, steps), evaluation excluded
  auto mark = std::chrono::steady_clock::now();
  int64_t chunk_begin = 0;
  auto elapsed_since_mark = [&]() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return s;
  };

  // Reads the losses of steps [chunk_begin, end) and logs them.
  auto flush_losses = [&](int64_t end) {
    const torch::Tensor lh = loss_hist.narrow(0, 0, end - chunk_begin).to(torch::kCPU);
    const torch::Tensor nh = norm_hist.narrow(0, 0, end - chunk_begin).to(torch::kCPU);
    const double seconds = elapsed_since_mark();
    if (chunk_begin >= timed_from) train_seconds += seconds;
    const double ms = seconds * 1000.0 / static_cast<double>(end - chunk_begin);
    for (int64_t s = chunk_begin; s < end; ++s) {
      const float lv = lh[s - chunk_begin].item<float>();
      if (!std::isfinite(lv)) {
        throw std::runtime_error(divergence_message(recipe.name, lv, s));
      }
      result.loss.push_back(lv);
      result.step_ms.push_back(ms);
      if (lead) {
        loss_csv << fmt::format("{},{:.9g},{:.6g},{:.6g},{:.3f}\n", s, lv, lr_at(c, s),
                                nh[s - chunk_begin].item<float>(), ms);
      }
    }
    chunk_begin = end;
  };

  for (int64_t step = 0; step < c.steps; ++step) {
    session.step = step;
    session.diag = c.diag_every > 0 && (step % c.diag_every == 0 || step == c.steps - 1);
    {
      torch::NoGradGuard no_grad;
      lr_t.fill_(lr_at(c, step));
      const auto offsets = batch_offsets(static_cast<int64_t>(data.train.size()), c.model.ctx, c.batch,
                                         c.seeds.data, step);
      const size_t mine = static_cast<size_t>(mb) * accum;
      torch::Tensor host = host_offsets(offsets, static_cast<size_t>(rank.index) * mine, mine);
      if (use_cuda) host = host.pin_memory();  // the pinned block is not reused before the copy ran
      step_offsets.copy_(host, /*non_blocking=*/true);
    }
#if NIBBLE_TRAIN_CUDA
    if (want_graph && !session.diag && step >= kGraphWarmup) {
      if (!graph) {
        graph = std::make_unique<at::cuda::CUDAGraph>();
        graph->capture_begin();
        train_step();
        graph->capture_end();
        result.graphed = true;
      }
      graph->replay();
    } else {
      train_step();
    }
#else
    train_step();
#endif
    {
      torch::NoGradGuard no_grad;
      loss_hist.narrow(0, step - chunk_begin, 1).copy_(step_loss.view({1}));
      norm_hist.narrow(0, step - chunk_begin, 1).copy_(step_norm.view({1}));
    }

    const bool eval_now = (c.eval_every > 0 && (step + 1) % c.eval_every == 0) || step == c.steps - 1;
    const bool flush_now = step + 1 - chunk_begin == hist_len || step + 1 == timed_from || eval_now ||
                           session.diag || step == c.steps - 1;
    if (flush_now) flush_losses(step + 1);

    if (session.diag) {
      // One read of every attenuation of this step, then the running product across depth.
      // Depth order within each GEMM (the backward records its GEMMs last layer first).
      std::stable_sort(session.entries.begin(), session.entries.end(), [](const DiagEntry& x, const DiagEntry& y) {
        return std::make_pair(static_cast<int>(x.gemm), x.site) < std::make_pair(static_cast<int>(y.gemm), y.site);
      });
      std::vector<torch::Tensor> alphas;
      alphas.reserve(session.entries.size());
      for (const auto& e : session.entries) alphas.push_back(e.alpha.reshape({}));
      const torch::Tensor host =
          alphas.empty() ? torch::Tensor() : torch::stack(alphas).to(torch::kCPU, torch::kDouble).contiguous();
      std::map<std::pair<int, std::string>, double> running;
      for (size_t i = 0; lead && i < session.entries.size(); ++i) {
        const DiagEntry& e = session.entries[i];
        const double alpha = host.data_ptr<double>()[i];
        double& prod = running.try_emplace({static_cast<int>(e.gemm), e.variant}, 1.0).first->second;
        prod *= alpha;
        diag_csv << fmt::format("{},{},{},{},{},{:.8g},{:.8g}\n", e.step, e.site / 4, kLinearNames[e.site % 4],
                                name(e.gemm), e.variant, alpha, prod);
      }
      session.entries.clear();
      elapsed_since_mark();  // the diagnostic GEMMs are not training time
    }
    if (eval_now) {
      const double v = evaluate(false);
      const double vb = recipe.quantized ? evaluate(true) : v;
      result.val_loss.emplace_back(step + 1, v);
      result.val_loss_bf16.emplace_back(step + 1, vb);
      if (lead) val_csv << fmt::format("{},{:.9g},{:.9g}\n", step + 1, v, vb);
      elapsed_since_mark();
    }
    if (lead && !c.quiet && (flush_now && ((step + 1) % 100 == 0 || step + 1 == 20 || eval_now || step == c.steps - 1))) {
      std::string extra = eval_now ? fmt::format(", val {:.4f} (bf16 forward {:.4f})", result.val_loss.back().second,
                                                 result.val_loss_bf16.back().second)
                                   : "";
      const double tps = train_seconds > 0 ? static_cast<double>((chunk_begin - timed_from) * tokens_per_step) / train_seconds : 0;
      log << fmt::format("  step {:>6}  loss {:.4f}  lr {:.2e}  {:.1f} ms/step{}{}\n", step + 1, result.loss.back(),
                         lr_at(c, step), result.step_ms.back(),
                         tps > 0 ? fmt::format("  {:.0f} tok/s", tps) : "", extra);
      log.flush();
    }
  }
  sync();
  result.tokens_per_s = train_seconds > 0
                            ? static_cast<double>((c.steps - timed_from) * tokens_per_step) / train_seconds
                            : 0.0;
  if (!lead) return result;

  nlohmann::ordered_json run;
  run["schema"] = "nibble-train-run/2";
  run["status"] = "finished";
  run["recipe"] = recipe.name;
  run["description"] = describe(recipe);
  run["seed"] = c.seeds.init;
  run["config"] = experiment_config(recipe, c, data_fingerprint(data));
  run["command"] = c.command;
  run["data_dir"] = c.data_dir;
  run["device"] = result.device;
  if (!result.gpu.empty()) run["gpu"] = result.gpu;
  run["gpus"] = rank.world;
  run["micro_batch"] = mb;
  run["accumulation"] = accum;
  run["torch"] = TORCH_VERSION;
  run["parameters"] = result.parameters;
  run["tokens"] = c.steps * tokens_per_step;
  run["eval_windows"] = val_offsets.size();
  run["final_loss"] = result.loss.back();
  run["final_val_loss"] = result.val_loss.empty() ? 0.0 : result.val_loss.back().second;
  run["final_val_loss_bf16_forward"] = result.val_loss_bf16.empty() ? 0.0 : result.val_loss_bf16.back().second;
  std::vector<double> ms(result.step_ms.begin() + std::min<std::ptrdiff_t>(timed_from, static_cast<std::ptrdiff_t>(result.step_ms.size()) - 1),
                         result.step_ms.end());
  run["step_ms_median"] = median(ms);
  run["tokens_per_s"] = result.tokens_per_s;
  run["cuda_graph"] = result.graphed;
  loss_csv.close();
  val_csv.close();
  diag_csv.close();
  write_atomically(run_json, run.dump(2) + "\n");
  return result;
}

}  // namespace nibble::train
