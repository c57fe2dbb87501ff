// A workload on an array: the GEMMs of one training step of the trainer's
// transformer -- Fprop, Dgrad and Wgrad of every quantized linear of every
// block, quantized as a recipe of the trainer's recipe table says, with the
// quantizer and RHT work that implies -- or a list of GEMMs, each timed by the
// event model (timing only, no injected stalls), with its actions; totals per
// run of the workload. `nibble workload` and the report's training-step section
// call these; sim/README.md ("nibble workload") has the rules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"
#include "nibble/sim/energy.h"
#include "nibble/sim/memory.h"
#include "nibble/train/recipe.h"
#include "nibble/train/train_config.h"

namespace nibble::sim {

// One GEMM of a workload: where it comes from, its shape, how often it runs,
// and the quantizer work of its operands. `bf16`: it runs in BF16, not on the array.
struct WorkloadGemm {
  std::string name;    // "qkv.fprop", or the list's name
  std::string layers;  // "0-11", "head", or "" for a list's GEMM
  GemmShape shape;
  uint64_t count = 1;
  bool bf16 = false;
  uint64_t quantize_elements = 0;  // per run
  uint64_t rht_elements = 0;       // per run
};

// Every quantized-linear GEMM of one training step of `model` at `tokens`
// tokens per step (C = A B^T in the operand layout of nibble/train/recipe.h:
// Fprop [T,in]x[out,in], Dgrad [T,out]x[in,out], Wgrad [out,T]x[in,T]), each
// operand as the recipe's operand_config says; blocks with identical GEMMs
// merged (count, layers "first-last"); the recipe's BF16 blocks, attention's
// batched products (per sequence and head, `tokens` / ctx sequences) and the
// LM head listed as BF16.
std::vector<WorkloadGemm> training_step_gemms(const train::ModelConfig& model, int64_t tokens,
                                              const train::Recipe& recipe);

// A GEMM list, {"gemms": [{"name", "m", "n", "k", "format_a", "format_b",
// "scale", "block_a", "block_b", "count", "rht"}]} (m, n, k required; m, n, k,
// count in 1..2^32), checked key by key. Throws model::ConfigError naming the key.
std::vector<WorkloadGemm> gemm_list_from_json_text(const std::string& text);

// One GEMM's result, per run.
struct GemmRun {
  const WorkloadGemm* gemm = nullptr;
  GemmStats stats;
  ActionCounts actions;           // quantizer work included
  uint64_t quantizer_cycles = 0;  // 0 where the arch gives no quantizer throughput
};

// A workload's result on one array: every GEMM (in order) and the totals over
// every run of every GEMM.
struct WorkloadRun {
  std::vector<GemmRun> gemms;  // BF16 GEMMs with empty stats
  GemmStats total;             // cycles, beats, stalls and bytes summed (GEMMs run one after another)
  ActionCounts actions;
  DpuOpsByFormat dpu_ops;      // the DPU operations of `actions` by operand formats
  uint64_t quantizer_cycles = 0;
  uint64_t array_macs = 0, bf16_macs = 0;
  double utilization = 0;      // array_macs / (cycles x the array's MACs per cycle)
  std::optional<double> seconds;  // total cycles at the arch's clock
};

// Times every GEMM of `gemms` on `arch` (which must allow its formats and
// shapes: check_workload) with EventDevice::time. `on_gemm` is called before
// each. Throws std::invalid_argument from the event model (e.g. the 2^36-cycle bound).
WorkloadRun time_workload(const ArchConfig& arch, const std::vector<WorkloadGemm>& gemms,
                          const std::function<void()>& on_gemm = {});

// Throws std::invalid_argument naming the first GEMM that `arch`'s tile cannot
// take (a format the mask lacks, a block wider than the lanes, ...).
void check_workload(const ArchConfig& arch, const std::vector<WorkloadGemm>& gemms);

// The energy of a workload run, or of one GEMM's run, on `arch` (its tile's mask).
Energy price(const EnergyTable& table, const ArchConfig& arch, const WorkloadRun& run);
Energy price(const EnergyTable& table, const ArchConfig& arch, const GemmRun& run);

}  // namespace nibble::sim
