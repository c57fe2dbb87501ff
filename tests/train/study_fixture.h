// Synthetic run directories of the training study, written the way the trainer
// writes them (train/src/torch/trainer.cpp: run.json of schema
// "nibble-train-run/2" with the run's experiment configuration, loss.csv,
// val.csv, diag.csv; the sweep runner's train.log), so that the study's
// summary can be checked without training.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nibble/train/study.h"
#include "nibble/train/sweep.h"

namespace nibble::test {

inline constexpr const char* kFakeData = "1000+100 bytes, fnv1a64 0123456789abcdef";

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// A finished run: final validation loss `val` (and `val_bf16` with a BF16 forward); the
// `recipe` attenuation of every linear at the last step is `alpha` (cum_alpha its running product).
inline void write_finished_run(const std::filesystem::path& runs_dir, const train::StudyRun& run, double val,
                               double val_bf16, double alpha = 1.0) {
  const std::filesystem::path dir = runs_dir / run.dir;
  const int64_t last = run.config.steps - 1;
  std::string loss = "step,loss,lr,grad_norm,step_ms\n";
  for (int64_t s = last - 1; s <= last; ++s) loss += fmt::format("{},{:.9g},0.0001,0.5,10.000\n", s, val - 0.01);
  write_file(dir / "loss.csv", loss);
  write_file(dir / "val.csv", fmt::format("step,val_loss,val_loss_bf16\n{},{:.9g},{:.9g}\n", last + 1, val, val_bf16));
  std::string diag = "step,layer,linear,gemm,variant,alpha,cum_alpha\n";
  if (run.recipe.quantized) {
    for (const char* gemm : {"fprop", "dgrad", "wgrad"}) {
      double cum = 1;
      for (int layer = 0; layer < run.config.model.layers; ++layer) {
        for (const char* linear : {"qkv", "proj", "fc1", "fc2"}) {
          cum *= alpha;
          diag += fmt::format("{},{},{},{},recipe,{:.8g},{:.8g}\n", last, layer, linear, gemm, alpha, cum);
          diag += fmt::format("{},{},{},{},e1m2,1,1\n", last, layer, linear, gemm);
        }
      }
    }
  }
  write_file(dir / "diag.csv", diag);
  nlohmann::ordered_json j;
  j["schema"] = "nibble-train-run/2";
  j["status"] = "finished";
  j["recipe"] = run.recipe.name;
  j["description"] = train::describe(run.recipe);
  j["seed"] = run.seeds.init;
  j["config"] = train::experiment_config(run.recipe, run.config, kFakeData);
  j["final_loss"] = val - 0.01;
  j["final_val_loss"] = val;
  j["final_val_loss_bf16_forward"] = val_bf16;
  write_file(dir / "run.json", j.dump(2) + "\n");
}

// A run whose training loss stopped being finite: the trainer's error in its train.log, no run.json.
inline void write_diverged_run(const std::filesystem::path& runs_dir, const train::StudyRun& run, int64_t step) {
  const std::filesystem::path dir = runs_dir / run.dir;
  write_file(dir / "loss.csv", "step,loss,lr,grad_norm,step_ms\n0,5.5,1e-05,1.0,10.000\n");
  write_file(dir / "train.log",
             "train: ...\nnibble: error: " + train::divergence_message(run.recipe.name, NAN, step) + "\n");
}

// A run that was started and not finished (interrupted): logs, no run.json.
inline void write_started_run(const std::filesystem::path& runs_dir, const train::StudyRun& run) {
  write_file(runs_dir / run.dir / "loss.csv", "step,loss,lr,grad_norm,step_ms\n0,5.5,1e-05,1.0,10.000\n");
}

}  // namespace nibble::test
