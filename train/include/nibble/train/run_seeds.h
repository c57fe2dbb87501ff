// The three seeds of a training run, kept apart so that quantization noise can
// be told from trajectory noise: `init` draws the initial weights, `data` the
// order of the training windows, `quant` every GEMM's RHT signs and SR bits.
// Torch-free: the CLI resolves them and the unit tests check the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nibble::train {

struct RunSeeds {
  uint64_t init = 0;
  uint64_t data = 0;
  uint64_t quant = 0;
  bool operator==(const RunSeeds& o) const { return init == o.init && data == o.data && quant == o.quant; }
};

// `--seed S` sets all three; each of --init-seed, --data-seed, --quant-seed replaces its own.
RunSeeds resolve_seeds(uint64_t seed, std::optional<uint64_t> init, std::optional<uint64_t> data,
                       std::optional<uint64_t> quant);

// "s3", or "i3-d3-q7" when the three differ: the suffix of a run's directory name.
std::string seeds_tag(const RunSeeds& s);

// The quantization seed of data-parallel rank `rank`: rank 0 keeps the run's,
// so a one-GPU run is unchanged; other ranks draw independent RHT signs and SR bits.
uint64_t rank_quant_seed(uint64_t quant, int rank);

}  // namespace nibble::train
