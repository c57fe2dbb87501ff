// The training-quality study (`nibble train-study`, docs/training.md "The
// scaling study"): one definition file holds, per model size, the exact shape
// and schedule, and the study-wide arms, ablations, seeds, learning-rate grid,
// endpoint and statistics. This header reads and checks that file, plans the
// runs of each phase, picks the learning rate from the recorded sweep, reads
// back every run that was started, and builds the study's summary. Torch-free:
// CI tests all of it; the runs themselves go through the sweep runner.
//
// Run directories, relative to the study's runs directory:
//   <size>/lr/<recipe>-lr<LR>-<seeds>/    the learning-rate sweep (bf16)
//   <size>/main/<recipe>-<seeds>/         every arm and ablation at the chosen LR
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nibble/train/recipe.h"
#include "nibble/train/run_seeds.h"
#include "nibble/train/train_config.h"

namespace nibble::train {

// A malformed study file, an unknown size or phase, a learning-rate sweep not yet
// complete, a run directory of another configuration: the CLI exits 2 with it.
class StudyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StudySize {
  std::string name;
  ModelConfig model;
  int batch = 0;  // sequences per optimizer step
  int64_t steps = 0;
  int warmup = 0;
  // What the file claims the size reaches; load_study checks them against the shape.
  double claimed_tokens_per_parameter = 0;  // training tokens / quantized-linear parameters, at least
  int64_t claimed_tokens = 0;               // training tokens, at least
  // The main phase's seeds here: the study's, or a subset of them with the reason written
  // beside it where that is fewer than statistics.min_seeds (an explicit, recorded reduction).
  std::vector<uint64_t> seeds;
  std::string seeds_reason;

  bool seeds_reduced() const { return !seeds_reason.empty(); }

  int64_t tokens() const { return steps * static_cast<int64_t>(batch) * model.ctx; }
  int64_t parameters() const { return quantized_linear_parameters(model); }
  double tokens_per_parameter() const { return static_cast<double>(tokens()) / static_cast<double>(parameters()); }
};

struct StudyAblation {
  std::string spec;                // a recipe spec: preset or preset+key=value
  std::vector<std::string> sizes;  // where it runs
};

// A paired difference d = g_a - g_b per seed; the first pair is the study's question.
struct StudyPair {
  std::string a, b;
  std::string question;
};

struct Study {
  std::string path;  // where it was read from
  std::string name;
  std::string description;
  std::string data;  // the prepared data directory the runs train on
  std::vector<std::string> notes;
  std::vector<StudySize> sizes;
  // Schedule, study-wide (AdamW; warm-up per size).
  std::string lr_schedule = "cosine";
  double min_lr_ratio = 0.1;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  // The learning-rate sweep, on bf16, per size.
  std::vector<double> lr_grid;
  std::vector<uint64_t> lr_seeds;
  // Arms (every size), ablations, the pairs compared, the seeds of the main phase.
  std::vector<std::string> arms;  // the first is the baseline (bf16)
  std::vector<StudyAblation> ablations;
  std::vector<StudyPair> pairs;
  std::vector<uint64_t> seeds;
  // Endpoint: the final validation loss over eval_bytes predicted bytes.
  int64_t eval_bytes = 0;
  int eval_every = 0;
  int diag_every = 0;
  // Statistics.
  double ci_level = 0.95;
  int bootstrap_resamples = 10000;
  uint64_t bootstrap_seed = 0;
  double ci_target_points = 0.1;         // 95 % CI half-width target, percentage points of g ...
  double ci_target_gap_fraction = 0.25;  // ... or this fraction of |mean e2m1 gap|, whichever is wider
  int min_seeds = 5;

  const std::string& baseline() const { return arms.front(); }
};

// Reads and checks a study file (schema "nibble-train-study/1") key by key through the
// bounded JSON reader: unknown, missing, repeated or mistyped keys, impossible sizes,
// unknown recipes, claims the shape does not reach. StudyError names the file and key.
Study load_study(const std::string& path);
Study parse_study(const std::string& text, const std::string& where);

const StudySize& find_size(const Study& s, const std::string& name);

enum class StudyPhase : uint8_t { kLr, kMain };
StudyPhase parse_phase(const std::string& name);
const char* phase_name(StudyPhase p);

// The recipes of a size's main phase: the arms, then the ablations that run there.
std::vector<std::string> size_recipes(const Study& s, const StudySize& size);

// One run of the study and the configuration it trains with (devices left at their defaults).
struct StudyRun {
  std::string size;
  StudyPhase phase = StudyPhase::kMain;
  std::string spec;  // as the study file writes it
  Recipe recipe;
  RunSeeds seeds;
  double lr = 0;
  std::string dir;  // relative to the runs directory
  TrainConfig config;
};

TrainConfig study_config(const Study& s, const StudySize& size, double lr, const RunSeeds& seeds);

// The bf16 runs of the size's learning-rate sweep (every grid LR x the LR seeds, or `seeds`).
std::vector<StudyRun> plan_lr_phase(const Study& s, const StudySize& size, const std::vector<uint64_t>& seeds = {});
// Every recipe x seed of the size's main phase at `lr` (`recipes`, `seeds`: subsets of the
// size's, empty = all).
std::vector<StudyRun> plan_main_phase(const Study& s, const StudySize& size, double lr,
                                      const std::vector<std::string>& recipes = {},
                                      const std::vector<uint64_t>& seeds = {});

// What a run directory holds. A run is started when its directory exists; finished
// when run.json says so with the run's configuration; diverged when its train.log
// ends in the trainer's non-finite-loss error (a result, never re-run).
enum class StudyRunState : uint8_t { kAbsent, kStarted, kFinished, kDiverged };
const char* state_name(StudyRunState s);
struct StudyRunStatus {
  StudyRunState state = StudyRunState::kAbsent;
  int64_t diverged_at = -1;        // the step whose loss was not finite
  double final_val_loss = 0;       // finished runs: the recipe's forward
  double final_val_loss_bf16 = 0;  // finished runs: a BF16 forward of the same weights
  std::string data;                // finished runs: the data fingerprint run.json records
};
// Throws StudyError where run.json records a finished run of another configuration.
StudyRunStatus study_run_status(const std::filesystem::path& runs_dir, const StudyRun& run);

// The learning rate of the size's main phase: the grid LR whose finished bf16 runs
// have the lowest mean final validation loss (diverged runs count as never best).
// Throws StudyError, naming what is missing, while the sweep is incomplete.
double chosen_lr(const Study& s, const StudySize& size, const std::filesystem::path& runs_dir);

// The plan as text: every run of every phase of every size, with its tokens,
// tokens per parameter and state under runs_dir.
std::string plan_text(const Study& s, const std::filesystem::path& runs_dir);

// The study's summary (schema "nibble-train-study-summary/1", docs/training.md) from
// every run started under runs_dir, and its Markdown.
nlohmann::ordered_json summarize_study(const Study& s, const std::filesystem::path& runs_dir);
std::string study_markdown(const nlohmann::ordered_json& summary);

}  // namespace nibble::train
