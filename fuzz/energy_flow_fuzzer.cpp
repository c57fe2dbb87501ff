// The hardware-cost flow's energy file as nibble workload --energy reads it
// (schema nibble-energy-actions/1): any text either gives the DPU's block
// prices of the default choice -- finite, non-negative, for non-empty masks --
// or raises model::ConfigError.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "nibble/model/config.h"
#include "nibble/scale.h"
#include "nibble/sim/energy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nibble::sim::DpuEnergyChoice choice =
      nibble::sim::resolve({}, {nibble::kAllScaleModes.begin(), nibble::kAllScaleModes.end()});
  try {
    const nibble::sim::EnergyTable t =
        nibble::sim::energy_table_from_flow_json_text(std::string(reinterpret_cast<const char*>(data), size), choice);
    if (t.dpu_block_op_by_format.empty() || !t.dpu_block_op.empty() || !t.per_action.empty()) std::abort();
    for (const auto& [mask, by_format] : t.dpu_block_op_by_format) {
      if (mask.empty() || by_format.empty()) std::abort();
      for (const auto& [format, pj] : by_format) {
        if (!std::isfinite(pj) || pj < 0) std::abort();
      }
    }
  } catch (const nibble::model::ConfigError&) {
  }
  return 0;
}
