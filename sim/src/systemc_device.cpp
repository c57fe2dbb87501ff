#include "nibble/sim/systemc_device.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "nibble/model/nibble_tile.h"
#include "tile_testbench.h"

namespace nibble::sim {

SystemCDevice::SystemCDevice(const model::TileConfig& cfg, StallConfig stalls, ProgressFn progress,
                             std::string vcd_path)
    : cfg_(cfg), stalls_(stalls), progress_(std::move(progress)), vcd_path_(std::move(vcd_path)) {
  model::validate(cfg_);
  validate(stalls_, "systemc");
}

void validate(const StallConfig& s, const char* backend) {
  if (s.input < 0.0 || s.input >= 1.0 || s.output < 0.0 || s.output >= 1.0) {
    throw std::invalid_argument(std::string(backend) + ": stall probabilities must be in [0, 1)");
  }
}

void SystemCDevice::check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const {
  detail::check_tile_operands("systemc", cfg_, a, b);
}

GemmResult SystemCDevice::run(const QuantizedTensor& a, const QuantizedTensor& b) {
  check_operands(a, b);
  const model::TileConfig cfg = cfg_;
  const detail::DutFactory make = [cfg](sc_core::sc_clock& clk, model::TileSignals& s) {
    auto tile = std::make_unique<model::nibble_tile>("nibble_tile", cfg);
    tile->clk_i(clk);
    tile->bind(s);
    return std::unique_ptr<sc_core::sc_module>(std::move(tile));
  };
  detail::TestbenchHooks hooks;
  hooks.vcd_path = vcd_path_;
  return detail::run_tile_testbench("systemc", cfg_, stalls_, progress_, a, b, make, hooks);
}

}  // namespace nibble::sim
