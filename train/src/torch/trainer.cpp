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
// their steps run eagerly. A quantized weight-gradient GEMM (a small output over
// a long reduction: too few tiles to fill the GPU, and no split of the
// reduction keeps the contract's order of adds) runs on a second stream, beside
// the data-gradient GEMMs and the rest of the backward; its result is added to
// the gradient there, as autograd would add it. That stream also quantizes the
// step's weight operands at its start (prepare_weights), before the GEMMs
// that read them.
#include <ATen/ATen.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <fmt/format.h>

#if NIBBLE_TRAIN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
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
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "add_layer_norm.h"
#include "backend.h"
#include "distributed.h"
#include "nibble/io/json.h"
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
#if NIBBLE_TRAIN_CUDA
  // Set where quantized Wgrad GEMMs run beside the backward, and the weight
  // operands of a step's quantized GEMMs are quantized ahead on it.
  std::optional<c10::cuda::CUDAStream> wgrad_stream;
  bool wgrad_pending = false;  // work on wgrad_stream the current stream has not waited for
#endif
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
  if (ca && cb && s.diag) {  // the attenuation below reads the FP32 result
    out32 = s.backend->gemm({a, a_t, *ca}, {b, b_t, *cb});
    out = out32.to(torch::kBFloat16);
  } else if (ca && cb) {
    out = s.backend->gemm({a, a_t, *ca}, {b, b_t, *cb}, torch::kBFloat16);
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

#if NIBBLE_TRAIN_CUDA
// The Wgrad GEMM of linear `site` on the session's second stream, once the
// current stream has produced dy and x2, added there to `grad` (w's gradient);
// true where it was started, false where it runs as usual (no second stream,
// a diagnostic step, or a BF16 Wgrad). The caching allocator is told that the
// second stream reads dy and x2, so their memory is not reused before it has.
bool wgrad_beside(int site, const torch::Tensor& dy, const torch::Tensor& x2, const torch::Tensor& grad) {
  Session& s = *g_session;
  if (!s.wgrad_stream || s.diag || !grad.defined()) return false;
  if (!layer_quantized(s.recipe, site / 4, s.n_layers)) return false;
  const c10::cuda::CUDAStream side = *s.wgrad_stream;
  at::cuda::CUDAEvent ready;
  ready.record(at::cuda::getCurrentCUDAStream());
  ready.block(side);
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    torch::NoGradGuard no_grad;
    // In FP32, as autograd's accumulation adds the returned gradient.
    grad.add_(run_gemm(Gemm::kWgrad, site, dy, true, x2, x2, true));
  }
  for (const torch::Tensor* t : {&dy, &x2}) {
    c10::cuda::CUDACachingAllocator::recordStream(t->storage().data_ptr(), side);
  }
  s.wgrad_pending = true;
  return true;
}

// The current stream waits for the Wgrad GEMMs started beside it.
void join_wgrad_stream() {
  Session& s = *g_session;
  if (!s.wgrad_pending) return;
  at::cuda::CUDAEvent done;
  done.record(*s.wgrad_stream);
  done.block(at::cuda::getCurrentCUDAStream());
  s.wgrad_pending = false;
}
#endif

// Y = X W^T with the recipe's three GEMMs; x is BF16 [..., K], w FP32 [N, K] and
// w_bf16 its BF16 copy (no gradient flows through the copy).
class QuantLinear : public torch::autograd::Function<QuantLinear> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& w_bf16, int64_t site) {
    ctx->save_for_backward({x, w, w_bf16});
    ctx->saved_data["site"] = site;
    ctx->saved_data["grad"] = w.grad();  // a view of the flat gradient buffer
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
#if NIBBLE_TRAIN_CUDA
    // Started first, so that it runs beside the Dgrad GEMM; then autograd adds nothing to w.
    const bool beside = wgrad_beside(site, dy, x2, ctx->saved_data["grad"].toTensor());
#else
    const bool beside = false;
#endif
    const torch::Tensor dx = run_gemm(Gemm::kDgrad, site, dy, false, w, w_bf16, true);
    const torch::Tensor dw =
        beside ? torch::Tensor() : run_gemm(Gemm::kWgrad, site, dy, true, x2, x2, true).to(w.scalar_type());
    return {dx.to(x.scalar_type()).view(x.sizes()), dw, torch::Tensor(), torch::Tensor()};
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

// h = table[tokens] ([B, T] -> [B, T, d]), a gather; the table's gradient is
// the one-hot product one_hot(tokens)^T dh, a GEMM: deterministic, no host
// synchronization, capturable in a CUDA graph (the gather's own backward adds
// by atomics or sorts).
class ByteEmbedding : public torch::autograd::Function<ByteEmbedding> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tokens, const torch::Tensor& table) {
    ctx->save_for_backward({tokens});
    ctx->saved_data["rows"] = table.size(0);
    return table.index_select(0, tokens.reshape({-1})).view({tokens.size(0), tokens.size(1), table.size(1)});
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor tokens = ctx->get_saved_variables()[0].reshape({-1});
    const torch::Tensor dh = grads[0].reshape({-1, grads[0].size(-1)});
    const torch::Tensor one_hot =
        tokens.unsqueeze(-1).eq(torch::arange(ctx->saved_data["rows"].toInt(), tokens.options())).to(dh.scalar_type());
    return {torch::Tensor(), one_hot.t().mm(dh)};
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
  void refresh_bf16() { refresh_bf16(0, n_matrix); }
  void refresh_bf16(int64_t begin, int64_t end) {
    torch::NoGradGuard no_grad;
    bf16.narrow(0, begin, end - begin).copy_(data.narrow(0, begin, end - begin));
  }
  // The BF16 copy of one matrix (a view of data).
  void refresh_bf16(const torch::Tensor& m) { refresh_bf16(offset_of(m), offset_of(m) + m.numel()); }
  // The offset of a parameter (a view of data) in the flat buffer.
  int64_t offset_of(const torch::Tensor& t) const {
    return (static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(data.data_ptr())) /
           static_cast<int64_t>(sizeof(float));
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
    // The shapes are block_linears', which the parameter counts and the workload simulator read too.
    const std::array<LinearShape, 4> lin = block_linears(c);
    auto shape = [&](size_t i) { return std::vector<int64_t>{lin[i].out, lin[i].in}; };
    std::vector<Mats> mats;
    for (int l = 0; l < c.layers; ++l) {
      Mats m;
      m.qkv = normal(shape(0), std);
      m.proj = normal(shape(1), proj_std);
      m.fc1 = normal(shape(2), std);
      m.fc2 = normal(shape(3), proj_std);
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
    auto copy16 = [&](const torch::Tensor& w) { return flat.bf16.narrow(0, flat.offset_of(w), w.numel()).view(w.sizes()); };
    for (auto& b : blocks) {
      b.qkv16 = copy16(b.qkv);
      b.proj16 = copy16(b.proj);
      b.fc116 = copy16(b.fc1);
      b.fc216 = copy16(b.fc2);
    }
    head16 = copy16(head);
  }

  // The BF16 copies of the matrices whose GEMMs run in BF16 under recipe r
  // (the LM head, and every matrix where nothing is quantized); a BF16 forward
  // of a quantized recipe's weights refreshes them all first.
  void refresh_bf16_of(const Recipe& r) {
    if (!r.quantized) return flat.refresh_bf16();
    for (int l = 0; l < cfg.layers; ++l) {
      if (layer_quantized(r, l, cfg.layers)) continue;
      const Block& b = blocks[static_cast<size_t>(l)];
      for (const torch::Tensor* m : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) flat.refresh_bf16(*m);
    }
    flat.refresh_bf16(head);
  }

  // tokens: int64 [B, T] -> logits FP32 [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& tokens) const {
    const int64_t B = tokens.size(0);
    const int64_t T = tokens.size(1);
    const int64_t d = cfg.d_model;
    const int64_t H = cfg.heads;
    const int64_t hd = d / H;
    torch::Tensor h = ByteEmbedding::apply(tokens, tok_emb) + pos_emb.slice(0, 0, T).unsqueeze(0);
    // A branch's BF16 output not yet added to h: the add and the LayerNorm after it
    // run as one (add_layer_norm). FP32 + BF16 promotes to FP32 inside the add, and
    // BF16 GELU computes in FP32 and rounds once: the numerics of explicit casts,
    // without their memory passes.
    torch::Tensor branch;
    auto norm = [&](const torch::Tensor& w, const torch::Tensor& bias) {
      if (!branch.defined()) return torch::layer_norm(h, {d}, w, bias).to(torch::kBFloat16);
      torch::Tensor x;
      std::tie(h, x) = add_layer_norm(h, branch, w, bias);
      branch = torch::Tensor();
      return x;
    };
    for (int l = 0; l < cfg.layers; ++l) {
      const Block& b = blocks[static_cast<size_t>(l)];
      const int site = 4 * l;
      torch::Tensor x = norm(b.ln1_w, b.ln1_b);
      torch::Tensor qkv = QuantLinear::apply(x, b.qkv, b.qkv16, site + 0);  // [B, T, 3d]
      auto parts = qkv.split(d, -1);
      auto heads = [&](const torch::Tensor& t) { return t.view({B, T, H, hd}).transpose(1, 2); };
      const torch::Tensor y = at::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]),
                                                               std::nullopt, 0.0, /*is_causal=*/true)
                                  .transpose(1, 2)
                                  .reshape({B, T, d});
      branch = QuantLinear::apply(y, b.proj, b.proj16, site + 1);
      x = norm(b.ln2_w, b.ln2_b);
      const torch::Tensor m = torch::gelu(QuantLinear::apply(x, b.fc1, b.fc116, site + 2));
      branch = QuantLinear::apply(m, b.fc2, b.fc216, site + 3);
    }
    const torch::Tensor x = norm(lnf_w, lnf_b);
    return Bf16Linear::apply(x, head, head16).to(torch::kFloat32);
  }
};

#if NIBBLE_TRAIN_CUDA
// The weight operands of this step's quantized Fprop and Dgrad GEMMs, quantized
// at its start on the side stream (GemmBackend::prepare), in the order the
// forward and the backward take them: each is a small kernel the GEMM after it
// would otherwise wait for. The side stream starts once the current stream has
// written the weights (the last step's update).
void prepare_weights(const Model& m) {
  Session& s = *g_session;
  if (!s.wgrad_stream || !s.recipe.quantized) return;
  std::vector<GemmOperand> ops;
  auto add = [&](Gemm g, int layer) {
    if (!layer_quantized(s.recipe, layer, s.n_layers)) return;
    const Block& b = m.blocks[static_cast<size_t>(layer)];
    const torch::Tensor* w[4] = {&b.qkv, &b.proj, &b.fc1, &b.fc2};
    for (int i = 0; i < 4; ++i) {
      const uint64_t seed = gemm_seed(s.quant_seed, s.step, 4 * layer + i, g);
      const auto cfg = operand_config(s.recipe, g, Operand::kB, layer, s.n_layers, seed);
      if (cfg) ops.push_back({*w[i], g == Gemm::kDgrad, *cfg});
    }
  };
  for (int l = 0; l < s.n_layers; ++l) add(Gemm::kFprop, l);
  for (int l = s.n_layers - 1; l >= 0; --l) add(Gemm::kDgrad, l);
  if (ops.empty()) return;
  const c10::cuda::CUDAStream side = *s.wgrad_stream;
  at::cuda::CUDAEvent written;
  written.record(at::cuda::getCurrentCUDAStream());
  written.block(side);
  c10::cuda::CUDAStreamGuard on_side(side);
  s.backend->prepare(ops);
  s.wgrad_pending = true;  // the update waits for these reads of the weights (join_wgrad_stream)
}
#endif

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

// A run's checkpoint: checkpoint.json (written last, through a temporary name)
// names the tensor file of the same step, which holds the FP32 parameters and
// AdamW's state; the JSON holds the step to continue from, the histories the
// logs and run.json are made of, and the configuration it belongs to.
constexpr const char* kCheckpointSchema = "nibble-train-checkpoint/1";

struct Resumed {
  int64_t step = 0;  // the first step still to run
  double seconds = 0;  // timed training seconds before it
  int64_t timed_steps = 0;  // steps those seconds cover
};

// Keeps the header and the rows of a CSV log whose first field is below
// `limit`, and appends from there.
void keep_rows_below(const fs::path& path, int64_t limit, const char* header) {
  std::string kept = std::string(header) + "\n";
  std::ifstream in(path);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      first = false;
      continue;
    }
    const size_t comma = line.find(',');
    if (comma == std::string::npos) continue;
    try {
      if (std::stoll(line.substr(0, comma)) < limit) kept += line + "\n";
    } catch (const std::exception&) {
      // a half-written last line of an interrupted run
    }
  }
  write_atomically(path, kept);
}

// Removes the checkpoint tensor files (checkpoint-<step>.pt, and temporary
// ones) other than `keep`; with `keep` empty, checkpoint.json too.
void remove_checkpoint_files(const fs::path& dir, const std::string& keep) {
  std::error_code ec;
  std::vector<fs::path> gone;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if ((name.rfind("checkpoint-", 0) == 0 && name != keep) || (keep.empty() && name.rfind("checkpoint.", 0) == 0)) {
      gone.push_back(e.path());
    }
  }
  for (const auto& p : gone) fs::remove(p, ec);
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
  // Deterministic mode also fills every new tensor (torch::empty) with NaN or
  // the integer maximum, a kernel per allocation: about 500 per step here,
  // before each GEMM's output among them. Every tensor this trainer allocates
  // is written whole before it is read (trainer_test's GPU runs, compared bit
  // for bit, would differ where one is not), so the fills only cost time.
  at::globalContext().setDeterministicFillUninitializedMemory(false);

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
#if NIBBLE_TRAIN_CUDA
  if (use_cuda && c.wgrad_stream == "auto") session.wgrad_stream = at::cuda::getStreamFromPool(false, device.index());
#endif
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
  // The clipping, applied by AdamW as it reads each gradient (its grad_scale
  // divides): max(1, (norm + 1e-6) / clip), no pass of its own over the gradients.
  torch::Tensor clip_divisor = torch::ones({}, fopts);
  const int64_t nm = model.flat.n_matrix;
  const int64_t no = model.flat.n_total - nm;
  auto adamw = [&]() {
    torch::NoGradGuard no_grad;
    adam_step.add_(1);
    at::_fused_adamw_({model.flat.matrices()}, {model.flat.grad.narrow(0, 0, nm)}, {exp_avg.narrow(0, 0, nm)},
                      {exp_avg_sq.narrow(0, 0, nm)}, {}, {adam_step}, lr_t, 0.9, 0.95, c.weight_decay, 1e-8, false,
                      false, clip_divisor, std::nullopt);
    at::_fused_adamw_({model.flat.others()}, {model.flat.grad.narrow(0, nm, no)}, {exp_avg.narrow(0, nm, no)},
                      {exp_avg_sq.narrow(0, nm, no)}, {}, {adam_step}, lr_t, 0.9, 0.95, 0.0, 1e-8, false, false,
                      clip_divisor, std::nullopt);
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
#if NIBBLE_TRAIN_CUDA
    prepare_weights(model);
#endif
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
#if NIBBLE_TRAIN_CUDA
    join_wgrad_stream();
#endif
    session.backend->forget_prepared();  // the update below changes the weights
    torch::NoGradGuard no_grad;
    if (rank.world > 1) rank.all_reduce_mean({model.flat.grad, step_loss});
    step_norm.copy_(at::linalg_vector_norm(model.flat.grad, 2));
    clip_divisor.copy_(((step_norm + 1e-6) / c.grad_clip).clamp_min(1.0));
    adamw();
    model.refresh_bf16_of(recipe);
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
    if (bf16_forward) {
      session.recipe = preset("bf16");
      model.refresh_bf16_of(session.recipe);  // a step refreshes only the copies its own recipe reads
    }
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

  // A checkpoint of this experiment in out_dir: continue from it (every rank
  // loads the same state); one of another experiment is set aside.
  const nlohmann::ordered_json config_json = experiment_config(recipe, c, data_fingerprint(data));
  const fs::path checkpoint_json = fs::path(out_dir) / kCheckpointFile;
  Resumed resumed;
  if (fs::exists(checkpoint_json)) {
    nlohmann::json ck;
    std::string why;
    try {
      ck = io::read_json_file(checkpoint_json.string());
      if (ck.value("schema", "") != kCheckpointSchema) {
        why = "another schema";
      } else if (ck["config"] != nlohmann::json(config_json)) {
        why = "another configuration";
      } else if (ck.value("gpus", 0) != rank.world) {
        why = fmt::format("{} GPUs, not {}", ck.value("gpus", 0), rank.world);
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty()) {
      std::vector<torch::Tensor> state;
      torch::load(state, (fs::path(out_dir) / ck.at("tensors").get<std::string>()).string());
      if (state.size() != 4 || state[0].numel() != model.flat.n_total) {
        throw std::runtime_error(fmt::format("{}: its tensors do not fit this model", checkpoint_json.string()));
      }
      torch::NoGradGuard no_grad;
      model.flat.data.copy_(state[0]);
      exp_avg.copy_(state[1]);
      exp_avg_sq.copy_(state[2]);
      adam_step.copy_(state[3]);
      model.flat.refresh_bf16();
      resumed.step = ck.at("step").get<int64_t>();
      resumed.seconds = ck.at("train_seconds").get<double>();
      resumed.timed_steps = ck.at("timed_steps").get<int64_t>();
      result.loss = ck.at("loss").get<std::vector<float>>();
      result.step_ms = ck.at("step_ms").get<std::vector<double>>();
      for (const auto& v : ck.at("val")) {
        result.val_loss.emplace_back(v.at(0).get<int64_t>(), v.at(1).get<double>());
        result.val_loss_bf16.emplace_back(v.at(0).get<int64_t>(), v.at(2).get<double>());
      }
      if (static_cast<int64_t>(result.loss.size()) != resumed.step || resumed.step >= c.steps) {
        throw std::runtime_error(fmt::format("{}: inconsistent (step {}, {} losses)", checkpoint_json.string(),
                                             resumed.step, result.loss.size()));
      }
      if (lead && !c.quiet) log << fmt::format("train: resuming from the checkpoint of step {}\n", resumed.step);
    } else if (lead) {
      if (!c.quiet) log << fmt::format("train: not resuming from {} ({}): starting afresh\n", checkpoint_json.string(), why);
      remove_checkpoint_files(out_dir, "");
    }
  }

  constexpr const char* kLossHeader = "step,loss,lr,grad_norm,step_ms";
  constexpr const char* kValHeader = "step,val_loss,val_loss_bf16";
  constexpr const char* kDiagHeader = "step,layer,linear,gemm,variant,alpha,cum_alpha";
  std::ofstream loss_csv, val_csv, diag_csv;
  if (lead) {
    const fs::path dir(out_dir);
    if (resumed.step > 0) {  // the rows up to the checkpoint, then on from there
      keep_rows_below(dir / "loss.csv", resumed.step, kLossHeader);
      keep_rows_below(dir / "val.csv", resumed.step + 1, kValHeader);
      keep_rows_below(dir / "diag.csv", resumed.step, kDiagHeader);
    }
    const auto mode = resumed.step > 0 ? std::ios::app : std::ios::trunc;
    loss_csv.open(dir / "loss.csv", mode);
    val_csv.open(dir / "val.csv", mode);
    diag_csv.open(dir / "diag.csv", mode);
    if (!loss_csv || !val_csv || !diag_csv) throw std::runtime_error("cannot write the logs in " + out_dir);
    if (resumed.step == 0) {
      loss_csv << kLossHeader << "\n";
      val_csv << kValHeader << "\n";
      diag_csv << kDiagHeader << "\n";
    }
  }

  // Writes the state after `next` steps (rank 0), then removes the older one.
  auto save_checkpoint = [&](int64_t next, double seconds, int64_t timed_steps) {
    if (!lead) return;
    torch::NoGradGuard no_grad;
    const std::string tensors = fmt::format("checkpoint-{}.pt", next);
    const fs::path tmp = fs::path(out_dir) / (tensors + ".tmp");
    torch::save(std::vector<torch::Tensor>{model.flat.data.cpu(), exp_avg.cpu(), exp_avg_sq.cpu(), adam_step.cpu()},
                tmp.string());
    fs::rename(tmp, fs::path(out_dir) / tensors);
    nlohmann::ordered_json ck;
    ck["schema"] = kCheckpointSchema;
    ck["config"] = config_json;
    ck["gpus"] = rank.world;
    ck["step"] = next;
    ck["tensors"] = tensors;
    ck["train_seconds"] = seconds;
    ck["timed_steps"] = timed_steps;
    ck["loss"] = result.loss;
    ck["step_ms"] = result.step_ms;
    nlohmann::ordered_json val = nlohmann::ordered_json::array();
    for (size_t i = 0; i < result.val_loss.size(); ++i) {
      val.push_back({result.val_loss[i].first, result.val_loss[i].second, result.val_loss_bf16[i].second});
    }
    ck["val"] = val;
    loss_csv.flush();
    val_csv.flush();
    diag_csv.flush();
    write_atomically(checkpoint_json, ck.dump() + "\n");
    remove_checkpoint_files(out_dir, tensors);
  };

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
  // Steps before timed_from carry one-time costs (in this process: a resumed
  // run warms up again).
  const int64_t timed_from = resumed.step + std::min<int64_t>(10, (c.steps - resumed.step) / 2);
  double train_seconds = 0;   // wall time of steps [timed_from, steps), evaluation excluded
  const auto started = std::chrono::steady_clock::now();
  auto mark = started;
  int64_t chunk_begin = resumed.step;
  auto elapsed_since_mark = [&]() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return s;
  };

  // Reads the losses of steps [chunk_begin, end) and logs them.
  auto flush_losses = [&](int64_t end) {
    const torch::Tensor lh = loss_hist.narrow(0, 0, end - chunk_begin).to(torch::kCPU).contiguous();
    const torch::Tensor nh = norm_hist.narrow(0, 0, end - chunk_begin).to(torch::kCPU).contiguous();
    const float* losses = lh.data_ptr<float>();
    const float* norms = nh.data_ptr<float>();
    const double seconds = elapsed_since_mark();
    if (chunk_begin >= timed_from) train_seconds += seconds;
    const double ms = seconds * 1000.0 / static_cast<double>(end - chunk_begin);
    for (int64_t s = chunk_begin; s < end; ++s) {
      const float lv = losses[s - chunk_begin];
      if (!std::isfinite(lv)) {
        throw std::runtime_error(divergence_message(recipe.name, lv, s));
      }
      result.loss.push_back(lv);
      result.step_ms.push_back(ms);
      if (lead) {
        loss_csv << fmt::format("{},{:.9g},{:.6g},{:.6g},{:.3f}\n", s, lv, lr_at(c, s),
                                norms[s - chunk_begin], ms);
      }
    }
    chunk_begin = end;
  };

  for (int64_t step = resumed.step; step < c.steps; ++step) {
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
    if (want_graph && !session.diag && step >= resumed.step + kGraphWarmup) {
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

    const bool last = step == c.steps - 1;
    const bool eval_now = (c.eval_every > 0 && (step + 1) % c.eval_every == 0) || last;
    const bool checkpoint_now = !last && c.checkpoint_every > 0 && (step + 1) % c.checkpoint_every == 0;
    const bool flush_now = step + 1 - chunk_begin == hist_len || step + 1 == timed_from || eval_now ||
                           session.diag || last || checkpoint_now;
    if (flush_now) flush_losses(step + 1);
    // Out of time: decided where the host has just waited for the GPU (a flush),
    // by rank 0 for every rank, so that all of them stop after the same step.
    bool stop = false;
    if (flush_now && !last && c.time_limit_s > 0) {
      stop = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >= c.time_limit_s;
      if (rank.world > 1) {
        torch::Tensor flag = torch::full({}, lead && stop ? 1.0f : 0.0f, fopts);
        rank.all_reduce_sum({flag});
        stop = flag.item<float>() > 0;
      }
    }

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
    if (checkpoint_now || stop) {
      save_checkpoint(step + 1, resumed.seconds + train_seconds,
                      resumed.timed_steps + std::max<int64_t>(0, chunk_begin - timed_from));
    }
    if (stop) {
      sync();
      result.paused = true;
      if (lead && !c.quiet) {
        log << fmt::format("train: stopped after step {} of {} (--time-limit {} s); the same command resumes it\n",
                           step + 1, c.steps, c.time_limit_s);
      }
      return result;
    }
  }
  sync();
  const double timed_seconds = resumed.seconds + train_seconds;
  result.tokens_per_s =
      timed_seconds > 0
          ? static_cast<double>((resumed.timed_steps + c.steps - timed_from) * tokens_per_step) / timed_seconds
          : 0.0;
  if (!lead) return result;

  nlohmann::ordered_json run;
  run["schema"] = "nibble-train-run/2";
  run["status"] = "finished";
  run["recipe"] = recipe.name;
  run["description"] = describe(recipe);
  run["seed"] = c.seeds.init;
  run["config"] = config_json;
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
  remove_checkpoint_files(out_dir, "");  // a finished run needs none
  return result;
}

}  // namespace nibble::train
