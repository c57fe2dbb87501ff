// The resumable sweep runner's bookkeeping (torch-free, tested in CI): which
// runs a sweep holds, which of them are finished, and their records.
//
// A run is finished when its directory holds run.json with status "finished"
// and the same experiment configuration (train_config.h); the trainer writes
// run.json last, through a temporary name, so an interrupted run is never
// taken as finished and is run again. A run.json of another configuration
// stops the sweep: its directory belongs to another experiment.
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
#include "nibble/train/summary.h"

namespace nibble::train {

class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "preset" or "preset+key=value+...": a preset with ablation flags (keys:
// format, scale, act-block, weight-block, rht, sr, sr-bits, bf16-first,
// bf16-last). Throws RecipeError for an unknown preset, key or value.
Recipe parse_recipe_spec(const std::string& spec);

struct SweepRun {
  std::string spec;  // as given
  Recipe recipe;
  RunSeeds seeds;
  std::string dir;   // relative to the sweep directory: runs/<recipe name>-<seeds tag>
};

// Every recipe x seed, recipes outermost, in the order given.
std::vector<SweepRun> plan_sweep(const std::vector<std::string>& specs, const std::vector<RunSeeds>& seeds);

enum class RunState : uint8_t { kPending, kFinished };

// The state of the run in `dir` against the configuration it should have.
// Throws SweepError naming the first differing field where dir holds a
// finished run of another configuration, or an unreadable run.json.
RunState run_state(const std::filesystem::path& dir, const nlohmann::ordered_json& expected_config);

// A finished run's record from its files (run.json, loss.csv, val.csv);
// `rel_dir` is stored as the record's dir. Throws SweepError naming the file.
RunRecord load_run_record(const std::filesystem::path& sweep_dir, const std::string& rel_dir);

// The trainer's error for a training loss that is not finite; and, for the text of a
// run's train.log, the step that error names where the log holds it (a diverged run).
std::string divergence_message(const std::string& recipe, float loss, int64_t step);
std::optional<int64_t> diverged_step(const std::string& log_text);

// Per step, (L(t) - L_bf16(t)) / L_bf16(t) against the baseline of the same seeds.
std::vector<double> signed_gap_curve(const std::vector<float>& loss, const std::vector<float>& baseline);

}  // namespace nibble::train
