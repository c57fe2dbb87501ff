// The training harness behind `nibble train` and `nibble train-sweep`: a small
// GPT-style decoder trained with libtorch, whose linear layers run their three
// GEMMs through Nibble's quantizers and block-scaled GEMM as a recipe says.
// This header is torch-free; the library behind it links libtorch privately.
//
// GEMM backends: on a CUDA device the nibble::cuda kernels (quantize + gemm on
// torch's current stream); on the CPU golden quantize + golden gemm (slow: for
// tiny smoke configurations).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "nibble/train/data.h"
#include "nibble/train/recipe.h"

namespace nibble::train {

struct ModelConfig {
  int layers = 8;
  int d_model = 256;
  int heads = 4;
  int ctx = 128;
  int mlp_mult = 4;
};

struct TrainConfig {
  ModelConfig model;
  int batch = 16;
  int64_t steps = 750;
  double lr = 2e-3;
  double min_lr_ratio = 0.1;  // cosine decay to lr * min_lr_ratio
  int warmup = 50;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  uint64_t seed = 0;
  int diag_every = 200;   // per-layer attenuation diagnostics every K steps (0: off)
  int eval_every = 250;   // validation loss every K steps and at the end
  int eval_windows = 32;  // validation windows of ctx+1 tokens
  std::string device = "auto";  // auto, cuda, cpu
  bool quiet = false;
};

// Throws std::invalid_argument for sizes the model or the quantizers cannot take.
void validate(const TrainConfig& c);

struct TrainResult {
  std::vector<float> loss;       // training loss per step
  std::vector<double> step_ms;   // wall time per step
  std::vector<std::pair<int64_t, double>> val_loss;  // (step, loss)
  std::string device;            // what ran it, in words
  std::string gpu;               // the CUDA device's name (empty on the CPU)
  int64_t parameters = 0;
};

// Whether a CUDA device and the CUDA GEMM backend are both available.
bool cuda_available();

// Trains one run and writes into out_dir: loss.csv (step,loss,lr,step_ms),
// val.csv (step,val_loss), diag.csv (step,layer,linear,gemm,variant,alpha,cum_alpha)
// and run.json (configuration and final numbers).
TrainResult run_training(const Recipe& recipe, const TrainConfig& config, const PreparedData& data,
                         const std::string& out_dir, std::ostream& log);

}  // namespace nibble::train
