// The training harness behind `nibble train` and `nibble train-sweep`: a
// GPT-style byte-level decoder trained with libtorch, whose linear layers run
// their three GEMMs through Nibble's quantizers and block-scaled GEMM as a
// recipe says. This header is torch-free; the library behind it links libtorch
// privately.
//
// GEMM backends: on a CUDA device the nibble::cuda kernels (quantize + gemm on
// torch's current stream); on the CPU golden quantize + golden gemm (slow: for
// tiny smoke configurations).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "nibble/train/data.h"
#include "nibble/train/recipe.h"
#include "nibble/train/train_config.h"

namespace nibble::train {

// The GPU ran out of memory: the message says which sizes to lower.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainResult {
  std::vector<float> loss;       // training loss per step
  std::vector<double> step_ms;   // wall time per step (averaged over the steps between two host reads)
  std::vector<std::pair<int64_t, double>> val_loss;       // (step, loss) with the recipe's forward
  std::vector<std::pair<int64_t, double>> val_loss_bf16;  // (step, loss) with a BF16 forward of the same weights
  std::string device;            // what ran it, in words
  std::string gpu;               // the CUDA device's name (empty on the CPU)
  int64_t parameters = 0;
  double tokens_per_s = 0;       // training throughput after the first steps (evaluation excluded)
  bool graphed = false;          // whether the step ran as a captured CUDA graph
  bool paused = false;           // stopped at a checkpoint by time_limit_s: the same call resumes it
};

// Whether a CUDA device and the CUDA GEMM backend are both available.
bool cuda_available();
// Whether this build can train data-parallel (libtorch's NCCL process group).
bool data_parallel_built();
// The number of CUDA devices torch sees (0 without CUDA).
int cuda_device_count();

// Trains one run and writes into out_dir: loss.csv (step,loss,lr,grad_norm,step_ms),
// val.csv (step,val_loss,val_loss_bf16), diag.csv
// (step,layer,linear,gemm,variant,alpha,cum_alpha) and, last, run.json
// (everything needed to re-run it, and the final numbers): a directory without
// run.json holds no finished run. With config.gpus > 1 this process is one
// data-parallel rank (NCCL over config.rendezvous; `nibble train --gpus N`
// starts the ranks); rank 0 writes the files.
//
// With config.checkpoint_every > 0, rank 0 also writes a checkpoint every that
// many steps (checkpoint.json and checkpoint-<step>.pt: parameters, AdamW state,
// histories); with config.time_limit_s > 0 the run stops at a checkpoint once
// that much wall time has passed (TrainResult::paused, no run.json). A run
// started where a checkpoint of the same experiment lies continues from it,
// giving the bits of an uninterrupted run; a finished run removes it.
// The checkpoint's index in a run's directory: where it lies, a run resumes.
inline constexpr const char* kCheckpointFile = "checkpoint.json";

TrainResult run_training(const Recipe& recipe, const TrainConfig& config, const PreparedData& data,
                         const std::string& out_dir, std::ostream& log);

}  // namespace nibble::train
