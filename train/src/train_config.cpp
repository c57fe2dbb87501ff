#include "nibble/train/train_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace nibble::train {

std::array<LinearShape, 4> block_linears(const ModelConfig& m) {
  const int64_t d = m.d_model, hidden = static_cast<int64_t>(m.mlp_mult) * d;
  return {{{"qkv", 3 * d, d}, {"proj", d, d}, {"fc1", hidden, d}, {"fc2", d, hidden}}};
}

int64_t quantized_linear_parameters(const ModelConfig& m) {
  int64_t per_block = 0;
  for (const LinearShape& l : block_linears(m)) per_block += l.out * l.in;
  return static_cast<int64_t>(m.layers) * per_block;
}

int64_t model_parameters(const ModelConfig& m) {
  const int64_t d = m.d_model;
  const int64_t layer_norms = static_cast<int64_t>(m.layers) * 4 * d + 2 * d;
  return quantized_linear_parameters(m) + layer_norms + kVocabSize * d + static_cast<int64_t>(m.ctx) * d +
         kVocabSize * d;
}

int micro_batch_of(const TrainConfig& c) { return c.micro_batch > 0 ? c.micro_batch : c.batch / std::max(1, c.gpus); }
int accumulation_of(const TrainConfig& c) { return c.batch / (micro_batch_of(c) * std::max(1, c.gpus)); }

void validate(const TrainConfig& c) {
  const ModelConfig& m = c.model;
  auto fail = [](const std::string& s) { throw std::invalid_argument(s); };
  if (m.layers < 1 || m.d_model < 32 || m.heads < 1 || m.ctx < 2 || m.mlp_mult < 1) fail("model sizes must be positive (d_model >= 32)");
  if (m.layers > 256 || m.d_model > 16384 || m.ctx > 65536 || m.mlp_mult > 16) fail("model sizes are beyond the harness's limits (layers <= 256, d_model <= 16384, ctx <= 65536)");
  if (m.d_model % 32 != 0) fail(fmt::format("--d-model must be a multiple of 32 (the block sizes), got {}", m.d_model));
  if (m.d_model % m.heads != 0) fail(fmt::format("--heads ({}) must divide --d-model ({})", m.heads, m.d_model));
  if (c.steps < 1 || c.batch < 1) fail("--steps and --batch must be positive");
  if (c.gpus < 1 || c.gpus > 64) fail(fmt::format("--gpus must be 1..64, got {}", c.gpus));
  if (c.micro_batch < 0) fail("--micro-batch must be positive (or 0: the whole batch)");
  const int mb = micro_batch_of(c);
  if (mb < 1 || c.batch % (mb * c.gpus) != 0) {
    fail(fmt::format("--batch ({}) must be a multiple of --micro-batch x --gpus ({} x {})", c.batch, mb, c.gpus));
  }
  if ((static_cast<int64_t>(mb) * m.ctx) % 32 != 0) {
    fail(fmt::format("micro-batch x ctx ({} x {}) must be a multiple of 32: wgrad reduces over tokens", mb, m.ctx));
  }
  if (c.warmup < 1) fail("--warmup must be at least 1");
  if (!(c.lr > 0) || !std::isfinite(c.lr)) fail("--lr must be positive");
  if (!(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1)) fail("the minimum learning-rate ratio must be in [0, 1]");
  if (!(c.decay_fraction > 0 && c.decay_fraction <= 1)) fail("--decay-fraction must be in (0, 1]");
  if (c.diag_every < 0 || c.eval_every < 0 || c.eval_bytes < 0 || c.log_every < 1) {
    fail("bad --diag-every / --eval-every / --eval-bytes / --log-every");
  }
  if (c.device != "auto" && c.device != "cuda" && c.device != "cpu") {
    fail(fmt::format("unknown --device '{}'; valid: auto, cuda, cpu", c.device));
  }
  if (c.graph != "auto" && c.graph != "off") fail(fmt::format("unknown --graph '{}'; valid: auto, off", c.graph));
  if (c.checkpoint_every < 0) fail(fmt::format("--checkpoint-every must be >= 0, got {}", c.checkpoint_every));
  if (!(c.time_limit_s >= 0) || !std::isfinite(c.time_limit_s)) {
    fail(fmt::format("--time-limit must be a finite number of seconds >= 0, got {}", c.time_limit_s));
  }
  if (c.wgrad_stream != "auto" && c.wgrad_stream != "off") {
    fail(fmt::format("unknown --wgrad-stream '{}'; valid: auto, off", c.wgrad_stream));
  }
}

double lr_at(const TrainConfig& c, int64_t step) {
  if (step < c.warmup) return c.lr * static_cast<double>(step + 1) / c.warmup;
  const double floor = c.lr * c.min_lr_ratio;
  if (c.schedule == LrSchedule::kWsd) {
    const double decay_steps = std::max(1.0, std::round(c.decay_fraction * static_cast<double>(c.steps)));
    const double start = static_cast<double>(c.steps) - decay_steps;
    if (static_cast<double>(step) < start) return c.lr;
    const double t = (static_cast<double>(step) - start + 1) / decay_steps;
    return t >= 1 ? floor : c.lr + (floor - c.lr) * t;
  }
  const double span = static_cast<double>(std::max<int64_t>(1, c.steps - c.warmup));
  const double t = std::min(1.0, static_cast<double>(step - c.warmup) / span);
  const double pi = std::acos(-1.0);
  return floor + (c.lr - floor) * 0.5 * (1 + std::cos(pi * t));
}

const char* schedule_name(LrSchedule s) { return s == LrSchedule::kWsd ? "wsd" : "cosine"; }

LrSchedule parse_schedule(const std::string& s) {
  if (s == "cosine") return LrSchedule::kCosine;
  if (s == "wsd") return LrSchedule::kWsd;
  throw std::invalid_argument(fmt::format("unknown learning-rate schedule '{}'; valid: cosine, wsd", s));
}

nlohmann::ordered_json experiment_config(const Recipe& recipe, const TrainConfig& c, const std::string& data_id) {
  nlohmann::ordered_json j;
  j["recipe"] = recipe.name;
  j["description"] = describe(recipe);
  j["seeds"] = {{"init", c.seeds.init}, {"data", c.seeds.data}, {"quant", c.seeds.quant}};
  j["model"] = {{"layers", c.model.layers}, {"d_model", c.model.d_model}, {"heads", c.model.heads},
                {"ctx", c.model.ctx}, {"mlp_mult", c.model.mlp_mult}};
  j["schedule"] = {{"steps", c.steps}, {"batch", c.batch}, {"lr", c.lr}, {"lr_schedule", schedule_name(c.schedule)},
                   {"min_lr_ratio", c.min_lr_ratio}, {"decay_fraction", c.decay_fraction}, {"warmup", c.warmup},
                   {"weight_decay", c.weight_decay}, {"grad_clip", c.grad_clip}};
  j["eval"] = {{"every", c.eval_every}, {"bytes", c.eval_bytes}};
  j["data"] = data_id;
  return j;
}

std::string data_fingerprint(const PreparedData& d) {
  // FNV-1a over both splits and their sizes: cheap enough for every run start.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::vector<uint8_t>& v) {
    for (uint8_t b : v) h = (h ^ b) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) h = (h ^ ((v.size() >> (8 * i)) & 0xFF)) * 1099511628211ull;
  };
  mix(d.train);
  mix(d.val);
  return fmt::format("{}+{} bytes, fnv1a64 {:016x}", d.train.size(), d.val.size(), h);
}

}  // namespace nibble::train
