// The GPT-style decoder and its training loop (libtorch; the C++ API subset
// common to libtorch 1.13 and 2.x).
//
// Model: byte embedding + learned positions; `layers` pre-norm blocks of causal
// multi-head attention (qkv and output projection) and a GELU MLP (fc1, fc2);
// final LayerNorm; untied LM head. Residual stream, norms and softmax in FP32;
// the four linears of every block take BF16 activations and run their three
// GEMMs through QuantLinear (the recipe decides BF16 or a quantized GEMM);
// attention score/value products and the LM head are BF16 matmuls. Master
// weights are FP32 (AdamW); quantizers read them directly, BF16 GEMMs round
// them to BF16.
#include <torch/torch.h>

#include <fmt/format.h>

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
#include <ostream>
#include <stdexcept>

#include "backend.h"
#include "nibble/train/summary.h"
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
  uint64_t seed = 0;
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

// One GEMM of a linear layer: C = op(a) * op(b)^T, BF16 result.
torch::Tensor run_gemm(Gemm g, int site, const torch::Tensor& a, bool a_t, const torch::Tensor& b, bool b_t) {
  Session& s = *g_session;
  const int layer = site / 4;
  const uint64_t seed = gemm_seed(s.seed, s.step, site, g);
  const auto ca = operand_config(s.recipe, g, Operand::kA, layer, s.n_layers, seed);
  const auto cb = operand_config(s.recipe, g, Operand::kB, layer, s.n_layers, seed);
  torch::Tensor out;
  if (ca && cb) {
    out = s.backend->gemm({a, a_t, *ca}, {b, b_t, *cb});
  } else {
    out = torch::matmul(operand_view(a, a_t).to(torch::kBFloat16), operand_view(b, b_t).to(torch::kBFloat16).t());
  }
  if (s.diag) {
    torch::NoGradGuard no_grad;
    const torch::Tensor ref =
        torch::matmul(operand_view(a, a_t).to(torch::kFloat32), operand_view(b, b_t).to(torch::kFloat32).t());
    if (ca && cb) s.entries.push_back({s.step, site, g, "recipe", attenuation(out, ref)});
    for (const auto& v : diag_variants()) {
      const auto va = operand_config(v.recipe, g, Operand::kA, 0, 1, seed);
      const auto vb = operand_config(v.recipe, g, Operand::kB, 0, 1, seed);
      const torch::Tensor q = s.backend->gemm({a, a_t, *va}, {b, b_t, *vb});
      s.entries.push_back({s.step, site, g, v.name, attenuation(q, ref)});
    }
  }
  return out.to(torch::kBFloat16);
}

// Y = X W^T with the recipe's three GEMMs; x is BF16 [..., K], w FP32 [N, K].
class QuantLinear : public torch::autograd::Function<QuantLinear> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w, int64_t site) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["site"] = site;
    const torch::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    const torch::Tensor y = run_gemm(Gemm::kFprop, static_cast<int>(site), x2, false, w.contiguous(), false);
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    return y.view(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor w = saved[1].contiguous();
    const int site = static_cast<int>(ctx->saved_data["site"].toInt());
    const torch::Tensor dy = grads[0].reshape({-1, w.size(0)}).to(torch::kBFloat16).contiguous();
    const torch::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    const torch::Tensor dx = run_gemm(Gemm::kDgrad, site, dy, false, w, true);
    const torch::Tensor dw = run_gemm(Gemm::kWgrad, site, dy, true, x2, true);
    return {dx.to(x.scalar_type()).view(x.sizes()), dw.to(w.scalar_type()), torch::Tensor()};
  }
};

struct Block {
  torch::Tensor ln1_w, ln1_b, ln2_w, ln2_b;
  torch::Tensor qkv, proj, fc1, fc2;  // [out, in]
};

struct Model {
  ModelConfig cfg;
  torch::Tensor tok_emb, pos_emb, lnf_w, lnf_b, head;
  std::vector<Block> blocks;
  std::vector<torch::Tensor> decay;     // matrices (weight decay)
  std::vector<torch::Tensor> no_decay;  // norms, embeddings

  Model(const ModelConfig& c, torch::Device device) : cfg(c) {
    const int64_t d = c.d_model;
    const double std = 0.02;
    const double proj_std = std / std::sqrt(2.0 * c.layers);
    auto normal = [&](std::vector<int64_t> shape, double s) {
      return (torch::randn(shape, torch::kFloat32) * s).to(device).requires_grad_(true);
    };
    auto ones = [&](int64_t n) { return torch::ones({n}, torch::kFloat32).to(device).requires_grad_(true); };
    auto zeros = [&](int64_t n) { return torch::zeros({n}, torch::kFloat32).to(device).requires_grad_(true); };
    // Created in a fixed order from the CPU generator: the same init for every recipe and device.
    tok_emb = normal({kVocabSize, d}, std);
    pos_emb = normal({c.ctx, d}, std);
    for (int l = 0; l < c.layers; ++l) {
      Block b;
      b.ln1_w = ones(d);
      b.ln1_b = zeros(d);
      b.qkv = normal({3 * d, d}, std);
      b.proj = normal({d, d}, proj_std);
      b.ln2_w = ones(d);
      b.ln2_b = zeros(d);
      b.fc1 = normal({c.mlp_mult * d, d}, std);
      b.fc2 = normal({d, c.mlp_mult * d}, proj_std);
      blocks.push_back(b);
      for (const auto& t : {b.qkv, b.proj, b.fc1, b.fc2}) decay.push_back(t);
      for (const auto& t : {b.ln1_w, b.ln1_b, b.ln2_w, b.ln2_b}) no_decay.push_back(t);
    }
    lnf_w = ones(d);
    lnf_b = zeros(d);
    head = normal({kVocabSize, d}, std);
    decay.push_back(head);
    for (const auto& t : {tok_emb, pos_emb, lnf_w, lnf_b}) no_decay.push_back(t);
  }

  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> all = decay;
    all.insert(all.end(), no_decay.begin(), no_decay.end());
    return all;
  }

  // tokens: int64 [B, T] -> logits FP32 [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& tokens) const {
    const int64_t B = tokens.size(0);
    const int64_t T = tokens.size(1);
    const int64_t d = cfg.d_model;
    const int64_t H = cfg.heads;
    const int64_t hd = d / H;
    torch::Tensor h = torch::embedding(tok_emb, tokens) + pos_emb.slice(0, 0, T).unsqueeze(0);
    const torch::Tensor mask =
        torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(tokens.device())).triu(1);
    for (int l = 0; l < cfg.layers; ++l) {
      const Block& b = blocks[static_cast<size_t>(l)];
      const int site = 4 * l;
      torch::Tensor x = torch::layer_norm(h, {d}, b.ln1_w, b.ln1_b).to(torch::kBFloat16);
      torch::Tensor qkv = QuantLinear::apply(x, b.qkv, site + 0);  // [B, T, 3d]
      auto parts = qkv.split(d, -1);
      auto heads = [&](const torch::Tensor& t) { return t.reshape({B, T, H, hd}).transpose(1, 2); };
      const torch::Tensor q = heads(parts[0]);
      const torch::Tensor k = heads(parts[1]);
      const torch::Tensor v = heads(parts[2]);
      torch::Tensor att = torch::matmul(q, k.transpose(-2, -1)).to(torch::kFloat32) / std::sqrt(double(hd));
      att = att.masked_fill(mask, -std::numeric_limits<float>::infinity()).softmax(-1).to(torch::kBFloat16);
      torch::Tensor y = torch::matmul(att, v).transpose(1, 2).reshape({B, T, d});
      h = h + QuantLinear::apply(y, b.proj, site + 1).to(torch::kFloat32);
      x = torch::layer_norm(h, {d}, b.ln2_w, b.ln2_b).to(torch::kBFloat16);
      torch::Tensor m = QuantLinear::apply(x, b.fc1, site + 2);
      m = torch::gelu(m.to(torch::kFloat32)).to(torch::kBFloat16);
      h = h + QuantLinear::apply(m, b.fc2, site + 3).to(torch::kFloat32);
    }
    const torch::Tensor x = torch::layer_norm(h, {d}, lnf_w, lnf_b).to(torch::kBFloat16);
    return torch::matmul(x, head.to(torch::kBFloat16).t()).to(torch::kFloat32);
  }
};

torch::Tensor make_batch(const std::vector<uint8_t>& data, const std::vector<int64_t>& offsets, int ctx) {
  const int64_t B = static_cast<int64_t>(offsets.size());
  torch::Tensor t = torch::empty({B, ctx + 1}, torch::kInt64);
  int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < B; ++i) {
    for (int j = 0; j <= ctx; ++j) p[i * (ctx + 1) + j] = data[static_cast<size_t>(offsets[static_cast<size_t>(i)] + j)];
  }
  return t;
}

torch::Tensor loss_of(const Model& m, const torch::Tensor& batch) {
  const int64_t T = batch.size(1) - 1;
  const torch::Tensor inputs = batch.slice(1, 0, T);
  const torch::Tensor targets = batch.slice(1, 1, T + 1);
  const torch::Tensor logits = m.forward(inputs);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, kVocabSize}), targets.reshape({-1}));
}

double lr_at(const TrainConfig& c, int64_t step) {
  if (step < c.warmup) return c.lr * static_cast<double>(step + 1) / c.warmup;
  const double span = std::max<int64_t>(1, c.steps - c.warmup);
  const double t = std::min(1.0, static_cast<double>(step - c.warmup) / span);
  const double pi = std::acos(-1.0);
  return c.lr * (c.min_lr_ratio + (1 - c.min_lr_ratio) * 0.5 * (1 + std::cos(pi * t)));
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + p.string());
  out << s;
}

}  // namespace

bool cuda_available() { return cuda_backend_built() && torch::cuda::is_available(); }

void validate(const TrainConfig& c) {
  const ModelConfig& m = c.model;
  auto fail = [](const std::string& s) { throw std::invalid_argument(s); };
  if (m.layers < 1 || m.d_model < 32 || m.heads < 1 || m.ctx < 2 || m.mlp_mult < 1) fail("model sizes must be positive (d_model >= 32)");
  if (m.d_model % 32 != 0) fail(fmt::format("--d-model must be a multiple of 32 (the block sizes), got {}", m.d_model));
  if (m.d_model % m.heads != 0) fail(fmt::format("--heads ({}) must divide --d-model ({})", m.heads, m.d_model));
  if ((static_cast<int64_t>(c.batch) * m.ctx) % 32 != 0) {
    fail(fmt::format("batch x ctx ({} x {}) must be a multiple of 32: wgrad reduces over tokens", c.batch, m.ctx));
  }
  if (c.steps < 1 || c.batch < 1) fail("--steps and --batch must be positive");
  if (c.warmup < 1) fail("--warmup must be at least 1");
  if (!(c.lr > 0)) fail("--lr must be positive");
  if (c.diag_every < 0 || c.eval_every < 0 || c.eval_windows < 1) fail("bad --diag-every / --eval-every / --eval-windows");
  if (c.device != "auto" && c.device != "cuda" && c.device != "cpu") {
    fail(fmt::format("unknown --device '{}'; valid: auto, cuda, cpu", c.device));
  }
}

TrainResult run_training(const Recipe& recipe, const TrainConfig& c, const PreparedData& data,
                         const std::string& out_dir, std::ostream& log) {
  validate(c);
  validate(recipe);
  bool use_cuda = false;
  if (c.device == "cuda") {
    if (!cuda_available()) {
      throw std::invalid_argument("--device cuda: no CUDA device, or this build has no CUDA GEMM backend "
                                  "(libtorch without CUDA, or the kernels were not built)");
    }
    use_cuda = true;
  } else if (c.device == "auto") {
    use_cuda = cuda_available();
  }
  const torch::Device device = use_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  std::unique_ptr<GemmBackend> backend = use_cuda ? make_cuda_backend() : make_golden_backend();

  // Deterministic kernels where torch has them, so that recipes with the same
  // numerics (ufp4, ufp4-int4) give the same bits.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  at::globalContext().setDeterministicAlgorithms(true, true);

  fs::create_directories(out_dir);
  torch::manual_seed(c.seed);
  Model model(c.model, device);

  torch::optim::AdamWOptions decay_opts(c.lr);
  decay_opts.betas(std::make_tuple(0.9, 0.95)).weight_decay(c.weight_decay);
  torch::optim::AdamWOptions plain_opts(c.lr);
  plain_opts.betas(std::make_tuple(0.9, 0.95)).weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(model.decay, std::make_unique<torch::optim::AdamWOptions>(decay_opts));
  groups.emplace_back(model.no_decay, std::make_unique<torch::optim::AdamWOptions>(plain_opts));
  torch::optim::AdamW opt(groups, decay_opts);

  TrainResult result;
  for (const auto& p : model.parameters()) result.parameters += p.numel();
  result.gpu = use_cuda ? backend->device_name() : std::string();
  result.device = use_cuda ? fmt::format("CUDA {} ({})", result.gpu, backend->name())
                           : fmt::format("CPU ({})", backend->name());

  Session session;
  session.backend = backend.get();
  session.recipe = recipe;
  session.n_layers = c.model.layers;
  session.seed = c.seed;
  g_session = &session;
  struct Reset {
    ~Reset() { g_session = nullptr; }
  } reset;

  std::ofstream loss_csv(fs::path(out_dir) / "loss.csv", std::ios::trunc);
  std::ofstream val_csv(fs::path(out_dir) / "val.csv", std::ios::trunc);
  std::ofstream diag_csv(fs::path(out_dir) / "diag.csv", std::ios::trunc);
  if (!loss_csv || !val_csv || !diag_csv) throw std::runtime_error("cannot write the logs in " + out_dir);
  loss_csv << "step,loss,lr,step_ms\n";
  val_csv << "step,val_loss\n";
  diag_csv << "step,layer,linear,gemm,variant,alpha,cum_alpha\n";

  const auto val_offsets = validation_offsets(static_cast<int64_t>(data.val.size()), c.model.ctx, c.eval_windows);
  auto evaluate = [&]() {
    torch::NoGradGuard no_grad;
    const bool diag = session.diag;
    session.diag = false;
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < val_offsets.size(); i += static_cast<size_t>(c.batch)) {
      const size_t end = std::min(val_offsets.size(), i + static_cast<size_t>(c.batch));
      const std::vector<int64_t> chunk(val_offsets.begin() + static_cast<std::ptrdiff_t>(i),
                                       val_offsets.begin() + static_cast<std::ptrdiff_t>(end));
      const torch::Tensor batch = make_batch(data.val, chunk, c.model.ctx).to(device);
      sum += loss_of(model, batch).item<double>() * static_cast<double>(chunk.size());
      n += static_cast<int>(chunk.size());
    }
    session.diag = diag;
    return sum / n;
  };

  if (!c.quiet) {
    log << fmt::format("train: {}: {} | {} layers, d_model {}, {} heads, ctx {}, batch {}, {} parameters | {} steps, "
                       "seed {} | {}\n",
                       recipe.name, describe(recipe), c.model.layers, c.model.d_model, c.model.heads, c.model.ctx, c.batch,
                       result.parameters, c.steps, c.seed, result.device);
  }
  const auto t_start = std::chrono::steady_clock::now();
  double elapsed_at_10 = 0;
  const std::vector<torch::Tensor> params = model.parameters();
  for (int64_t step = 0; step < c.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    session.step = step;
    session.diag = c.diag_every > 0 && (step % c.diag_every == 0 || step == c.steps - 1);
    const double lr = lr_at(c, step);
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);

    const auto offsets = batch_offsets(static_cast<int64_t>(data.train.size()), c.model.ctx, c.batch, c.seed, step);
    const torch::Tensor batch = make_batch(data.train, offsets, c.model.ctx).to(device);
    opt.zero_grad();
    const torch::Tensor loss = loss_of(model, batch);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, c.grad_clip);
    opt.step();
    const float loss_value = loss.item<float>();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!std::isfinite(loss_value)) {
      throw std::runtime_error(fmt::format("{}: the loss is {} at step {}", recipe.name, loss_value, step));
    }
    result.loss.push_back(loss_value);
    result.step_ms.push_back(ms);
    loss_csv << fmt::format("{},{:.9g},{:.6g},{:.3f}\n", step, loss_value, lr, ms);

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
      for (size_t i = 0; i < session.entries.size(); ++i) {
        const DiagEntry& e = session.entries[i];
        const double alpha = host.data_ptr<double>()[i];
        double& prod = running.try_emplace({static_cast<int>(e.gemm), e.variant}, 1.0).first->second;
        prod *= alpha;
        diag_csv << fmt::format("{},{},{},{},{},{:.8g},{:.8g}\n", e.step, e.site / 4, kLinearNames[e.site % 4],
                                name(e.gemm), e.variant, alpha, prod);
      }
      session.entries.clear();
    }
    const bool eval_now = (c.eval_every > 0 && (step + 1) % c.eval_every == 0) || step == c.steps - 1;
    if (eval_now) {
      const double v = evaluate();
      result.val_loss.emplace_back(step + 1, v);
      val_csv << fmt::format("{},{:.9g}\n", step + 1, v);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (step == 9) elapsed_at_10 = elapsed;
    if (!c.quiet && (step == 19 || (step + 1) % 100 == 0 || step == c.steps - 1 || eval_now)) {
      std::string extra = eval_now ? fmt::format(", val {:.4f}", result.val_loss.back().second) : "";
      if (step == 19) {
        // The first steps carry one-time costs: extrapolate from steps 11..20.
        const double estimate = elapsed_at_10 + (elapsed - elapsed_at_10) / 10.0 * static_cast<double>(c.steps - 10);
        extra += fmt::format(" (estimated run time {:.1f} s)", estimate);
      }
      log << fmt::format("  step {:>6}  loss {:.4f}  lr {:.2e}  {:.1f} ms/step{}\n", step + 1, loss_value, lr,
                         elapsed * 1000.0 / static_cast<double>(step + 1), extra);
      log.flush();
    }
  }

  nlohmann::ordered_json run;
  run["recipe"] = recipe.name;
  run["description"] = describe(recipe);
  run["seed"] = c.seed;
  run["device"] = result.device;
  if (!result.gpu.empty()) run["gpu"] = result.gpu;
  run["parameters"] = result.parameters;
  run["model"] = {{"layers", c.model.layers}, {"d_model", c.model.d_model}, {"heads", c.model.heads},
                  {"ctx", c.model.ctx}, {"mlp_mult", c.model.mlp_mult}};
  run["schedule"] = {{"steps", c.steps}, {"batch", c.batch}, {"lr", c.lr}, {"min_lr_ratio", c.min_lr_ratio},
                     {"warmup", c.warmup}, {"weight_decay", c.weight_decay}, {"grad_clip", c.grad_clip}};
  run["final_loss"] = result.loss.back();
  run["final_val_loss"] = result.val_loss.empty() ? 0.0 : result.val_loss.back().second;
  std::vector<double> ms(result.step_ms.begin() + std::min<std::ptrdiff_t>(10, static_cast<std::ptrdiff_t>(result.step_ms.size()) - 1),
                         result.step_ms.end());
  run["step_ms_median"] = median(ms);
  write_text(fs::path(out_dir) / "run.json", run.dump(2) + "\n");
  return result;
}

}  // namespace nibble::train
