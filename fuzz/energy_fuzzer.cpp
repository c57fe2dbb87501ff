// The energy-per-action table (nibble workload --energy): any text either
// reads as a table of finite, non-negative prices, or raises model::ConfigError.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "nibble/model/config.h"
#include "nibble/sim/energy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nibble::sim::EnergyTable t =
        nibble::sim::energy_table_from_json_text(std::string(reinterpret_cast<const char*>(data), size));
    for (const auto* prices : {&t.dpu_block_op, &t.per_action}) {
      for (const auto& [name, pj] : *prices) {
        if (!std::isfinite(pj) || pj < 0) std::abort();
      }
    }
  } catch (const nibble::model::ConfigError&) {
  }
  return 0;
}
