// A stand-in for the libtorch trainer (nibble/train/trainer.h), linked into a
// copy of the `nibble` program so that the sweep runner behind train-sweep and
// train-study runs end to end in CI: a run writes the files the trainer writes
// (loss.csv, val.csv, diag.csv, run.json with the run's experiment
// configuration) at once, with a final validation loss made up from the
// recipe, the learning rate and the seed.
//
// Environment: NIBBLE_FAKE_GPUS (devices it reports, default 4);
// NIBBLE_FAKE_DIVERGE ("recipe@lr": that run fails with the trainer's
// non-finite-loss error); NIBBLE_FAKE_CALLS (a file that gets one line per run trained).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "nibble/train/sweep.h"
#include "nibble/train/trainer.h"

namespace nibble::train {

bool cuda_available() { return true; }
bool data_parallel_built() { return false; }
int cuda_device_count() {
  const char* n = std::getenv("NIBBLE_FAKE_GPUS");
  return n != nullptr ? std::atoi(n) : 4;
}

TrainResult run_training(const Recipe& recipe, const TrainConfig& c, const PreparedData& data,
                         const std::string& out_dir, std::ostream& log) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  if (const char* calls = std::getenv("NIBBLE_FAKE_CALLS")) {
    std::ofstream(calls, std::ios::app) << recipe.name << " lr " << c.lr << " seed " << c.seeds.init << "\n";
  }
  std::ofstream(fs::path(out_dir) / "loss.csv") << "step,loss,lr,grad_norm,step_ms\n0,5.5,0.0001,1,1.000\n";
  if (const char* d = std::getenv("NIBBLE_FAKE_DIVERGE");
      d != nullptr && fmt::format("{}@{}", recipe.name, c.lr) == d) {
    throw std::runtime_error(divergence_message(recipe.name, NAN, 17));
  }
  const double base = 1.3 + 0.02 * std::fabs(std::log2(c.lr / 0.002)) + 0.001 * static_cast<double>(c.seeds.init);
  const double gap = !recipe.quantized       ? 0.0
                     : recipe.name == "ufp4" ? 0.008 + 0.001 * static_cast<double>(c.seeds.init % 2)
                     : recipe.name == "e2m1" ? 0.010
                                             : 0.012;
  TrainResult r;
  r.loss = {5.5f, static_cast<float>(base * (1 + gap))};
  r.step_ms = {1, 1};
  r.val_loss = {{c.steps, base * (1 + gap)}};
  r.val_loss_bf16 = {{c.steps, base * (1 + gap / 2)}};
  r.device = "fake";
  r.parameters = model_parameters(c.model);
  std::ofstream(fs::path(out_dir) / "val.csv") << fmt::format("step,val_loss,val_loss_bf16\n{},{:.9g},{:.9g}\n",
                                                              c.steps, r.val_loss[0].second, r.val_loss_bf16[0].second);
  std::ofstream(fs::path(out_dir) / "diag.csv") << "step,layer,linear,gemm,variant,alpha,cum_alpha\n";
  nlohmann::ordered_json j;
  j["schema"] = "nibble-train-run/2";
  j["status"] = "finished";
  j["recipe"] = recipe.name;
  j["description"] = describe(recipe);
  j["seed"] = c.seeds.init;
  j["config"] = experiment_config(recipe, c, data_fingerprint(data));
  j["device"] = r.device;
  j["final_loss"] = r.loss.back();
  j["final_val_loss"] = r.val_loss[0].second;
  j["final_val_loss_bf16_forward"] = r.val_loss_bf16[0].second;
  std::ofstream(fs::path(out_dir) / "run.json") << j.dump(2) << "\n";
  log << "fake training of " << recipe.name << " done\n";
  return r;
}

}  // namespace nibble::train
