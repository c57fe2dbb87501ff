// The Verilated RTL tile behind GemmDevice: rtl/nibble_tile.sv built with
// `verilator --sc` at the shapes listed in sim/CMakeLists.txt, wrapped as a
// SystemC module with the model's port types (model::TileSignals), and driven
// by the same testbench as SystemCDevice (sim/src/tile_testbench.h): identical
// stimulus, identical cycle accounting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nibble/model/config.h"
#include "nibble/sim/device.h"
#include "nibble/sim/systemc_device.h"

namespace nibble::sim {

class RtlDevice : public GemmDevice {
 public:
  // Throws std::invalid_argument when this build has no Verilated tile of
  // cfg's rows x cols x lanes (the message lists the shapes it has) or when cfg
  // asks for another latency than the RTL's (model::kRtlTileLatency).
  // fst_path: if set, each run writes an FST trace of the whole RTL tile there.
  // seed: the RTL's randomized initial register values (2-state X's).
  explicit RtlDevice(const model::TileConfig& cfg, StallConfig stalls = {}, ProgressFn progress = {},
                     std::string fst_path = {}, uint64_t seed = 1);
  std::string name() const override { return "rtl"; }
  GemmResult run(const QuantizedTensor& a, const QuantizedTensor& b) override;

  void check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const;

  // The shapes this build has, as "RowsxColsxLanes" (empty without Verilator).
  static std::vector<std::string> shapes();
  static bool has_shape(int rows, int cols, int lanes);

 private:
  model::TileConfig cfg_;
  StallConfig stalls_;
  ProgressFn progress_;
  std::string fst_path_;
  uint64_t seed_;
};

}  // namespace nibble::sim
