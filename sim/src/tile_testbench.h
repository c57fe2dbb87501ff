// The one testbench behind every timed device (SystemC model, Verilated RTL): it
// drives a tile's valid/ready ports (model::TileSignals) cycle by cycle from a
// GEMM tile sequencer and an operand buffer, drains C, injects seeded input
// bubbles and output stalls, and counts every cycle. The device under test is
// whatever `make_dut` binds to the signals, so the same stimulus reaches both.
// Internal to sim/.
#pragma once

#include <systemc.h>

#include <functional>
#include <memory>
#include <string>

#include "nibble/model/config.h"
#include "nibble/model/nibble_tile.h"
#include "nibble/quantize.h"
#include "nibble/sim/device.h"
#include "nibble/sim/systemc_device.h"
#include "tile_sequence.h"

namespace nibble::sim::detail {

// Builds the device under test inside the testbench (clock and signals given).
using DutFactory =
    std::function<std::unique_ptr<sc_core::sc_module>(sc_core::sc_clock& clk, model::TileSignals& signals)>;

struct TestbenchHooks {
  std::function<void()> after_elaboration;  // e.g. open an FST trace
  std::function<void()> at_end;             // e.g. close it
  std::string vcd_path;                     // if set: VCD of the handshake signals (sc_trace)
};

// Runs one GEMM through a fresh SystemC context. Operands must have passed
// check_tile_operands (tile_sequence.h).
GemmResult run_tile_testbench(const std::string& who, const model::TileConfig& cfg, const StallConfig& stalls,
                              const ProgressFn& progress, const QuantizedTensor& a, const QuantizedTensor& b,
                              const DutFactory& make_dut, const TestbenchHooks& hooks = {});

}  // namespace nibble::sim::detail
