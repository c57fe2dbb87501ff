// A training run's configuration: the model, the schedule, the seeds and the
// devices, with the checks and the learning-rate rule. Torch-free, so that CI
// tests it and the sweep runner compares configurations without libtorch.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "nibble/train/data.h"
#include "nibble/train/recipe.h"
#include "nibble/train/run_seeds.h"

namespace nibble::train {

struct ModelConfig {
  int layers = 8;
  int d_model = 256;
  int heads = 4;
  int ctx = 128;
  int mlp_mult = 4;
};

// One quantized linear of a transformer block, Y = X W^T with W [out, in].
struct LinearShape {
  const char* name;
  int64_t out, in;
};
// The four of every block of the model trainer.cpp builds, in its order: qkv
// (3d x d), proj (d x d), fc1 (mlp_mult d x d), fc2 (d x mlp_mult d). The
// parameter count below and the workload simulator (nibble workload) read them.
std::array<LinearShape, 4> block_linears(const ModelConfig& m);

// Parameters of the model trainer.cpp builds: its quantized linears (per block
// qkv d x 3d, proj d x d, fc1 d x mlp_mult d, fc2 mlp_mult d x d) and all of them
// (plus the LayerNorms, the token and position embeddings and the untied head).
int64_t quantized_linear_parameters(const ModelConfig& m);
int64_t model_parameters(const ModelConfig& m);

// The learning-rate schedule: linear warm-up, then either cosine decay to
// lr * min_lr_ratio over the remaining steps, or warmup-stable-decay (constant,
// then a linear decay to lr * min_lr_ratio over the last decay_fraction of the steps).
enum class LrSchedule : uint8_t { kCosine, kWsd };

struct TrainConfig {
  ModelConfig model;
  int batch = 16;        // sequences per optimizer step, over every GPU
  int micro_batch = 0;   // sequences per forward/backward on one GPU (0: batch / gpus)
  int64_t steps = 750;
  double lr = 2e-3;
  double min_lr_ratio = 0.1;
  LrSchedule schedule = LrSchedule::kCosine;
  double decay_fraction = 0.2;  // WSD only
  int warmup = 50;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  RunSeeds seeds;
  int diag_every = 200;     // per-layer attenuation diagnostics every K steps (0: off)
  int eval_every = 250;     // validation every K steps (0: at the end only)
  int64_t eval_bytes = 1 << 20;  // predicted validation bytes per evaluation (0: the whole split)
  int log_every = 50;       // the host reads the losses every K steps (and at the end)
  std::string device = "auto";  // auto, cuda, cpu
  std::string graph = "auto";   // CUDA-graph capture of the step: auto (where no quantized GEMM runs), off
  std::string wgrad_stream = "auto";  // quantized weight gradients on a second CUDA stream: auto, off
  int64_t checkpoint_every = 0;  // write a resumable checkpoint every K steps (0: only where time_limit_s stops)
  double time_limit_s = 0;       // stop at a checkpoint after this much wall time (0: no limit)
  int gpus = 1;             // data-parallel processes, one per GPU (NCCL)
  int rank = 0;             // this process's rank where gpus > 1
  std::string rendezvous;   // the ranks' rendezvous file where gpus > 1
  bool quiet = false;
  std::string command;      // the command line, recorded in run.json
  std::string data_dir;     // recorded in run.json
};

// Throws std::invalid_argument for sizes the model or the quantizers cannot take.
void validate(const TrainConfig& c);

// Sequences per forward/backward and the number of such micro-batches per step on one GPU.
int micro_batch_of(const TrainConfig& c);
int accumulation_of(const TrainConfig& c);

// The learning rate of a step (0-based).
double lr_at(const TrainConfig& c, int64_t step);

const char* schedule_name(LrSchedule s);
// "cosine" or "wsd"; throws std::invalid_argument otherwise.
LrSchedule parse_schedule(const std::string& s);

// What makes two runs the same experiment: the recipe, the seeds, the model,
// the schedule, the validation set-up and the data (not the devices, the
// logging cadence or the command line). run.json records it as "config"; the
// sweep runner compares it before it takes a finished run as its own.
nlohmann::ordered_json experiment_config(const Recipe& recipe, const TrainConfig& c, const std::string& data_id);

// A short identity of the training data (sizes and a hash of the bytes).
std::string data_fingerprint(const PreparedData& d);

}  // namespace nibble::train
