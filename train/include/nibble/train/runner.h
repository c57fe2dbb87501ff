// The runner behind `nibble train`, `train-sweep`, `train-study run` and the
// training of `nibble report`: it turns a command's options into runs, trains
// those not finished -- in this process, or as child `nibble train` processes
// (child_runs.h), each on its own GPU(s) -- and writes the sweep's summary.
//
// The runner itself is torch-free: it calls the trainer (trainer.h) through a
// Trainer the program passes in, so the same code runs against the libtorch
// harness and against the fake trainer of its tests; a program built without
// libtorch passes none. Bad options throw std::invalid_argument (the program
// reports them as bad input); failed runs throw std::runtime_error.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "nibble/train/data.h"
#include "nibble/train/recipe.h"
#include "nibble/train/run_seeds.h"
#include "nibble/train/study.h"
#include "nibble/train/train_config.h"
#include "nibble/train/trainer.h"

namespace nibble::train {

// Runs stopped at a checkpoint once their time limit passed, or were not started
// by then: the same command continues them.
class RunsPaused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Training was asked of a program that has no trainer (Trainer* null).
class NoTrainer : public std::runtime_error {
 public:
  NoTrainer() : std::runtime_error("this program was built without a trainer") {}
};

// The trainer's entry points (trainer.h), as the program that links a trainer provides them.
struct Trainer {
  TrainResult (*run)(const Recipe&, const TrainConfig&, const PreparedData&, const std::string&, std::ostream&);
  int (*device_count)();
  bool (*data_parallel_built)();
};

// The options of one run as `nibble train` takes them (the flags of the same
// names; cli/train_cmd.cpp defines them), shared by train and train-sweep and
// passed on to the child processes.
struct RunOptions {
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
  std::string command;  // the command line, recorded in run.json and summary.json

  // The run's configuration with these seeds; throws std::invalid_argument for bad options.
  TrainConfig config(const RunSeeds& seeds) const;
  // The same options as arguments of `nibble train` (but --time-limit, which a child gets
  // as the time left).
  std::vector<std::string> to_args() const;
  // The options that give `c` (the study's runs), with the devices and command of `devices`.
  static RunOptions of(const TrainConfig& c, const RunOptions& devices);
};

// --seeds: a comma list of non-negative integers, not empty.
std::vector<uint64_t> parse_seeds(const std::string& s);
// --recipes: a comma list of recipe specs (sweep.h), or "all" (every preset); bf16 is
// put first where it is missing, since every gap is measured against it.
std::vector<std::string> parse_recipes(const std::string& s);
// A comma list without empty items.
std::vector<std::string> split_list(const std::string& s);

// The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them ("0".."count-1" where unset).
std::vector<std::string> visible_gpus(int count);
// The GPU sets ("0,1") of `parallel` concurrent runs of `gpus` GPUs each, from the
// `have` GPUs present and the visible ones; throws where there are too few.
std::vector<std::string> gpu_slots(int parallel, int gpus, int have);

// One run into `out`, in this process or, with run.gpus > 1, as that many rank
// processes (data-parallel); in a rank process (started so), that rank.
void train_one(const RunOptions& run, const Recipe& recipe, const RunSeeds& seeds, const std::string& out,
               const Trainer* trainer);

// One run to train: its recipe, options, seeds and output directory.
struct TrainJob {
  Recipe recipe;
  RunOptions options;
  RunSeeds seeds;
  std::string dir;
};

// Trains every job that is not finished with its configuration, `parallel` at
// once, each on its own GPU(s); `who` prefixes the progress lines. With
// `isolate`, every run is a child process with its output in its train.log,
// even one at a time, and a run whose train.log says it diverged is a result:
// kept, not trained again. A run that fails is reported and left unfinished.
void run_jobs(const std::vector<TrainJob>& jobs, int parallel, bool isolate, const std::string& who,
              const Trainer* trainer);

// Where a sweep's files go: `write(path, text)` writes one whole output file.
using OutputWriter = std::function<void(const std::string& path, const std::string& text)>;

// Every recipe x seed (parse_recipes, parse_seeds), then each run's gap.csv and
// the sweep's summary.json and summary.md in `out` (train-sweep). Finished runs
// of the same configuration are kept; `parallel` > 1 runs that many at once,
// each on its own GPU(s).
void run_sweep(const RunOptions& run, const std::string& recipes, const std::string& seeds, int last_n,
               const std::string& out, int parallel, const Trainer* trainer, const OutputWriter& write);

// The training sweep of `nibble report`: every recipe over `seeds` for `steps`
// steps on the GPU, default model, into `out` (summary.json, summary.md, runs/).
void run_report_training(const std::string& data, int64_t steps, const std::string& seeds, const std::string& out,
                         const std::string& command, const Trainer* trainer, const OutputWriter& write);

// `nibble train-study run`: one phase of one size of a study, its runs under `runs`.
struct StudyRunOptions {
  std::string size;
  std::string phase;
  std::string seeds;  // a subset of the phase's seeds (comma list; empty: all)
  std::string arms;   // main: a subset of the size's recipes (comma list; empty: all)
  std::string data;   // empty: the study file's
  int parallel = 1;
  int gpus_per_run = 1;
  int micro_batch = 0;
  std::string device = "auto";
  int log_every = 50;
  int64_t checkpoint_every = 0;
  double time_limit = 0;
  std::string command;
};
// The phase's runs through run_jobs, isolated; the main phase at the LR the
// recorded LR sweep of the size chose.
void run_study_phase(const Study& study, const std::string& runs, const StudyRunOptions& options,
                     const Trainer* trainer);

// The study's summary of every run under `runs` (study.h), with the command
// recorded, and its Markdown.
struct StudySummaryText {
  std::string json;
  std::string markdown;
};
StudySummaryText study_summary(const Study& study, const std::string& runs, const std::string& command);

}  // namespace nibble::train
