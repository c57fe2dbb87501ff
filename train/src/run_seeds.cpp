#include "nibble/train/run_seeds.h"

#include <fmt/format.h>

#include "nibble/philox.h"

namespace nibble::train {

RunSeeds resolve_seeds(uint64_t seed, std::optional<uint64_t> init, std::optional<uint64_t> data,
                       std::optional<uint64_t> quant) {
  return {init.value_or(seed), data.value_or(seed), quant.value_or(seed)};
}

std::string seeds_tag(const RunSeeds& s) {
  if (s.init == s.data && s.data == s.quant) return fmt::format("s{}", s.init);
  return fmt::format("i{}-d{}-q{}", s.init, s.data, s.quant);
}

uint64_t rank_quant_seed(uint64_t quant, int rank) {
  if (rank == 0) return quant;
  const PhiloxWords w = philox4x32_10(quant, static_cast<uint64_t>(rank), 0x5A4Du, PhiloxDomain::kStochasticRounding);
  return static_cast<uint64_t>(w[0]) | (static_cast<uint64_t>(w[1]) << 32);
}

}  // namespace nibble::train
