#include "nibble/train/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/train/child_runs.h"
#include "nibble/train/summary.h"
#include "nibble/train/sweep.h"
#include "nibble/train/trainer.h"

namespace nibble::train {

namespace fs = std::filesystem;

namespace {

// Set in the environment of a data-parallel rank by the `nibble train` that started it.
constexpr const char* kRankEnv = "NIBBLE_TRAIN_RANK";
constexpr const char* kRendezvousEnv = "NIBBLE_TRAIN_RENDEZVOUS";

const Trainer& require(const Trainer* trainer) {
  if (trainer == nullptr) throw NoTrainer();
  return *trainer;
}

PreparedData load_data(const std::string& dir) {
  try {
    return load_prepared(dir);
  } catch (const DataError& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<std::string> seed_args(const RunSeeds& s) {
  return {"--init-seed", std::to_string(s.init), "--data-seed", std::to_string(s.data), "--quant-seed",
          std::to_string(s.quant)};
}

// The step at which the run in `dir` diverged, where its train.log says so.
std::optional<int64_t> diverged_in(const std::string& dir) {
  const fs::path log = fs::path(dir) / "train.log";
  if (!fs::exists(log)) return std::nullopt;
  return diverged_step(io::read_text_file(log.string(), limits::kMaxJsonBytes));
}

}  // namespace

TrainConfig RunOptions::config(const RunSeeds& seeds) const {
  TrainConfig c;
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
  c.command = command;
  c.schedule = parse_schedule(schedule);
  validate(c);
  return c;
}

std::vector<std::string> RunOptions::to_args() const {
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

RunOptions RunOptions::of(const TrainConfig& c, const RunOptions& devices) {
  RunOptions f = devices;
  f.data = c.data_dir;
  f.layers = c.model.layers;
  f.d_model = c.model.d_model;
  f.heads = c.model.heads;
  f.ctx = c.model.ctx;
  f.batch = c.batch;
  f.steps = c.steps;
  f.lr = c.lr;
  f.min_lr_ratio = c.min_lr_ratio;
  f.schedule = schedule_name(c.schedule);
  f.decay_fraction = c.decay_fraction;
  f.warmup = c.warmup;
  f.weight_decay = c.weight_decay;
  f.grad_clip = c.grad_clip;
  f.diag_every = c.diag_every;
  f.eval_every = c.eval_every;
  f.eval_bytes = c.eval_bytes;
  return f;
}

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
      throw std::invalid_argument(
          fmt::format("--seeds: '{}' is not a seed (give a comma list of non-negative integers)", item));
    }
  }
  if (out.empty()) throw std::invalid_argument("--seeds is empty");
  return out;
}

std::vector<std::string> parse_recipes(const std::string& s) {
  std::vector<std::string> out;
  if (s == "all") {
    out = preset_names();
  } else {
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
      parse_recipe_spec(item);  // RecipeError, a std::invalid_argument, for a bad spec
      out.push_back(item);
    }
  }
  if (std::find(out.begin(), out.end(), "bf16") == out.end()) out.insert(out.begin(), "bf16");
  return out;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) throw std::invalid_argument(fmt::format("'{}' has an empty item", s));
    out.push_back(item);
  }
  return out;
}

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

std::vector<std::string> gpu_slots(int parallel, int gpus, int have) {
  const std::vector<std::string> vis = visible_gpus(have);
  if (have < parallel * gpus || static_cast<int>(vis.size()) < parallel * gpus) {
    throw std::invalid_argument(fmt::format("{} run(s) at once of {} GPU(s) each need {} GPUs; this machine has {}",
                                            parallel, gpus, parallel * gpus, have));
  }
  std::vector<std::string> slots;
  for (int p = 0; p < parallel; ++p) {
    std::string set;
    for (int g = 0; g < gpus; ++g) set += (g ? "," : "") + vis[static_cast<size_t>(p * gpus + g)];
    slots.push_back(set);
  }
  return slots;
}

void train_one(const RunOptions& run, const Recipe& recipe, const RunSeeds& seeds, const std::string& out,
               const Trainer* trainer) {
  TrainConfig cfg = run.config(seeds);  // bad options say so in every build
  const Trainer& t = require(trainer);
  const char* rank_env = std::getenv(kRankEnv);
  if (cfg.gpus > 1 && rank_env == nullptr) {
    if (!t.data_parallel_built()) {
      throw std::invalid_argument("this build cannot train over several GPUs (no NCCL process group in its libtorch)");
    }
    const std::vector<std::string> slots = gpu_slots(1, cfg.gpus, t.device_count());
    std::stringstream ss(slots[0]);
    std::vector<std::string> devs;
    for (std::string d; std::getline(ss, d, ',');) devs.push_back(d);
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw std::invalid_argument(fmt::format("--out: cannot create '{}': {}", out, ec.message()));
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
      throw RunsPaused(fmt::format("{}: stopped at a checkpoint after --time-limit {} s; the same command resumes it",
                                   out, run.time_limit));
    }
    return;
  }
  if (rank_env != nullptr) {
    cfg.rank = std::atoi(rank_env);
    const char* rv = std::getenv(kRendezvousEnv);
    cfg.rendezvous = rv != nullptr ? rv : "";
  }
  const PreparedData data = load_data(run.data);
  try {
    const TrainResult r = t.run(recipe, cfg, data, out, std::cout);
    if (r.paused) {
      throw RunsPaused(fmt::format("{}: stopped at a checkpoint after --time-limit {} s; the same command resumes it",
                                   out, cfg.time_limit_s));
    }
    if (cfg.rank == 0) {
      fmt::print("train: final loss {:.4f}, val {:.4f} (bf16 forward {:.4f}); {:.0f} tokens/s{}; logs in {}\n",
                 r.loss.back(), r.val_loss.empty() ? 0.0 : r.val_loss.back().second,
                 r.val_loss_bf16.empty() ? 0.0 : r.val_loss_bf16.back().second, r.tokens_per_s,
                 r.graphed ? " (CUDA graph)" : "", out);
    }
  } catch (const DataError& e) {
    throw std::invalid_argument(e.what());
  } catch (const OutOfMemory& e) {
    throw std::invalid_argument(e.what());
  }
}

void run_jobs(const std::vector<TrainJob>& jobs, int parallel, bool isolate, const std::string& who,
              const Trainer* trainer) {
  if (parallel < 1 || parallel > 64) {
    throw std::invalid_argument(fmt::format("--parallel must be 1..64, got {}", parallel));
  }
  const Trainer& t = require(trainer);
  if (jobs.empty()) return;
  for (const auto& j : jobs) {
    if (j.options.data != jobs.front().options.data || j.options.gpus != jobs.front().options.gpus) {
      throw std::invalid_argument("the runs of one sweep share their data directory and GPUs per run");
    }
  }
  const PreparedData data = load_data(jobs.front().options.data);
  const std::string data_id = data_fingerprint(data);
  const int gpus = jobs.front().options.gpus;
  std::vector<const TrainJob*> pending;
  size_t diverged = 0;
  for (const auto& j : jobs) {
    const auto expected = experiment_config(j.recipe, j.options.config(j.seeds), data_id);
    try {
      if (run_state(j.dir, expected) == RunState::kFinished) continue;
    } catch (const SweepError& e) {
      throw std::invalid_argument(e.what());
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
  const double time_limit = jobs.front().options.time_limit;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (time_limit > 0) {
    deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(time_limit));
  }
  size_t paused = 0, not_started = 0;
  if (parallel == 1 && gpus == 1 && !isolate) {
    for (const auto* j : pending) {
      TrainConfig cfg = j->options.config(j->seeds);
      if (deadline) {
        const double left = seconds_until(*deadline);
        if (left < 1.0) {
          ++not_started;
          continue;
        }
        cfg.time_limit_s = left;
      }
      try {
        if (t.run(j->recipe, cfg, data, j->dir, std::cout).paused) {
          ++paused;
          continue;
        }
      } catch (const OutOfMemory& e) {
        throw std::invalid_argument(e.what());
      }
      ++done;
      progress();
    }
  } else if (!pending.empty()) {
    const std::vector<std::string> slots = gpu_slots(parallel, gpus, t.device_count());
    std::vector<Child> children;
    for (const auto* j : pending) {
      Child c;
      fs::create_directories(j->dir);
      c.args = {"train", "--recipe", j->recipe.name, "--out", j->dir};
      for (const auto& a : j->options.to_args()) c.args.push_back(a);
      for (const auto& a : seed_args(j->seeds)) c.args.push_back(a);
      c.log = (fs::path(j->dir) / "train.log").string();
      c.append_log = fs::exists(fs::path(j->dir) / kCheckpointFile);
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
    throw RunsPaused(fmt::format("--time-limit {} s: {} run(s) stopped at a checkpoint and {} not started; the "
                                 "same command continues them",
                                 time_limit, paused, not_started));
  }
}

void run_sweep(const RunOptions& run, const std::string& recipes, const std::string& seeds, int last_n,
               const std::string& out, int parallel, const Trainer* trainer, const OutputWriter& write) {
  const std::vector<std::string> specs = parse_recipes(recipes);
  std::vector<RunSeeds> seed_list;
  for (uint64_t s : parse_seeds(seeds)) seed_list.push_back(resolve_seeds(s, {}, {}, {}));
  if (last_n < 1 || last_n > run.steps) {
    throw std::invalid_argument(fmt::format("--last-n must be 1..--steps ({}), got {}", run.steps, last_n));
  }
  if (parallel < 1 || parallel > 64) {
    throw std::invalid_argument(fmt::format("--parallel must be 1..64, got {}", parallel));
  }
  std::vector<SweepRun> plan;
  try {
    plan = plan_sweep(specs, seed_list);
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
  (void)run.config(seed_list.front());  // bad options say so in every build
  std::vector<TrainJob> jobs;
  for (const auto& r : plan) jobs.push_back({r.recipe, run, r.seeds, (fs::path(out) / r.dir).string()});
  run_jobs(jobs, parallel, false, "train-sweep", trainer);
  std::vector<RunRecord> records;
  std::string device, gpu;
  for (const auto& r : plan) {
    try {
      records.push_back(load_run_record(out, r.dir));
    } catch (const SweepError& e) {
      throw std::runtime_error(e.what());
    }
    records.back().recipe = r.spec;
    const auto j = io::read_json_file((fs::path(out) / r.dir / "run.json").string());  // read once already
    device = j.value("device", device);
    gpu = j.value("gpu", gpu);
  }
  // Per step, each run's signed relative gap to the bf16 run of the same seeds.
  for (const auto& rec : records) {
    const auto base = std::find_if(records.begin(), records.end(), [&](const RunRecord& b) {
      return b.recipe == "bf16" && b.seed == rec.seed;
    });
    if (rec.recipe == "bf16" || base == records.end() || base->loss.size() != rec.loss.size()) continue;
    const std::vector<double> gap = signed_gap_curve(rec.loss, base->loss);
    std::string csv = "step,signed_gap\n";
    for (size_t t = 0; t < gap.size(); ++t) csv += fmt::format("{},{:.9g}\n", t, gap[t]);
    write((fs::path(out) / rec.dir / "gap.csv").string(), csv);
  }
  SweepMeta meta;
  meta.last_n = last_n;
  meta.device = device;
  meta.gpu = gpu;
  meta.command = run.command;
  const TrainConfig c = run.config(seed_list.front());
  meta.config = {{"model", {{"layers", c.model.layers}, {"d_model", c.model.d_model}, {"heads", c.model.heads},
                            {"ctx", c.model.ctx}, {"mlp_mult", c.model.mlp_mult}}},
                 {"schedule", {{"steps", c.steps}, {"batch", c.batch}, {"lr", c.lr}, {"lr_schedule", run.schedule},
                               {"warmup", c.warmup}, {"min_lr_ratio", c.min_lr_ratio}, {"weight_decay", c.weight_decay},
                               {"grad_clip", c.grad_clip}}},
                 {"seeds", parse_seeds(seeds)},
                 {"recipes", specs},
                 {"data", run.data},
                 {"diag_every", c.diag_every}};
  const auto summary = summarize(records, meta);
  fs::create_directories(out);
  write((fs::path(out) / "summary.json").string(), summary.dump(2) + "\n");
  const std::string md = summary_markdown(summary);
  write((fs::path(out) / "summary.md").string(), md);
  fmt::print("\n{}\ntrain-sweep: wrote {}/summary.json and {}/summary.md\n", md, out, out);
}

void run_report_training(const std::string& data, int64_t steps, const std::string& seeds, const std::string& out,
                         const std::string& command, const Trainer* trainer, const OutputWriter& write) {
  RunOptions run;
  run.data = data;
  run.steps = steps;
  run.device = "cuda";
  run.command = command;
  run_sweep(run, "all", seeds, static_cast<int>(std::min<int64_t>(100, steps)), out, 1, trainer, write);
}

void run_study_phase(const Study& study, const std::string& runs, const StudyRunOptions& o, const Trainer* trainer) {
  std::vector<StudyRun> plan;
  try {
    const StudySize& size = find_size(study, o.size);
    const StudyPhase phase = parse_phase(o.phase);
    const std::vector<uint64_t> seeds = o.seeds.empty() ? std::vector<uint64_t>{} : parse_seeds(o.seeds);
    if (phase == StudyPhase::kLr) {
      if (!o.arms.empty()) {
        throw std::invalid_argument("--arms: the learning-rate sweep trains the baseline (bf16) only");
      }
      plan = plan_lr_phase(study, size, seeds);
    } else {
      // The LR comes from the recorded sweep of this size, nowhere else.
      const double lr = chosen_lr(study, size, runs);
      fmt::print("train-study: size {}: lr {} (lowest final validation loss of the bf16 LR sweep)\n", size.name, lr);
      plan = plan_main_phase(study, size, lr, o.arms.empty() ? std::vector<std::string>{} : split_list(o.arms),
                             seeds);
    }
  } catch (const StudyError& e) {
    throw std::invalid_argument(e.what());
  }
  if (o.gpus_per_run < 1 || o.gpus_per_run > 64) {
    throw std::invalid_argument(fmt::format("--gpus-per-run must be 1..64, got {}", o.gpus_per_run));
  }
  RunOptions devices;
  devices.gpus = o.gpus_per_run;
  devices.micro_batch = o.micro_batch;
  devices.device = o.device;
  devices.log_every = o.log_every;
  devices.checkpoint_every = o.checkpoint_every;
  devices.time_limit = o.time_limit;
  devices.command = o.command;
  std::vector<TrainJob> jobs;
  for (auto& r : plan) {
    if (!o.data.empty()) r.config.data_dir = o.data;
    RunOptions options = RunOptions::of(r.config, devices);
    (void)options.config(r.seeds);  // bad device options say so in every build
    jobs.push_back({r.recipe, options, r.seeds, (fs::path(runs) / r.dir).string()});
  }
  run_jobs(jobs, o.parallel, true, "train-study", trainer);
  fmt::print("train-study: phase {} of size {} done; `nibble train-study summarize` reads every run\n", o.phase,
             o.size);
}

StudySummaryText study_summary(const Study& study, const std::string& runs, const std::string& command) {
  nlohmann::ordered_json summary;
  try {
    summary = summarize_study(study, runs);
  } catch (const StudyError& e) {
    throw std::invalid_argument(e.what());
  }
  summary["command"] = command;
  return {summary.dump(2) + "\n", study_markdown(summary)};
}

}  // namespace nibble::train
