// One interface for every device that computes a quantized GEMM C = A * B^T:
// golden (untimed), the SystemC model, and (part 2) the Verilated RTL. A
// checker compares any device's C bit for bit with golden::gemm without
// knowing which device it talks to.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nibble/quantize.h"

namespace nibble::sim {

// Bytes moved at each level of an array's hierarchy (memory.h); zero for one tile alone.
struct MemoryTraffic {
  uint64_t buffer_fill_bytes = 0;  // SRAM -> operand buffers (A and B panels)
  uint64_t dram_read_bytes = 0;    // DRAM -> SRAM
  uint64_t c_bytes = 0;            // C out of the array, FP32 (to the SRAM, then to DRAM)
  uint64_t accumulator_bytes = 0;  // partial sums written and read beside the tiles (weight/input-stationary)
  uint64_t dram_write_bytes = 0;   // C written to DRAM
};

// Timing of one run; absent for untimed devices.
struct GemmStats {
  uint64_t cycles = 0;          // first cycle to the cycle the last C row is received
  uint64_t tiles = 0;           // output tiles (ceil(M/Rows) * ceil(N/Cols))
  uint64_t beats = 0;           // k-block beats accepted by the array
  uint64_t macs = 0;            // useful multiply-accumulates, M * N * K
  uint64_t peak_macs_per_cycle = 0;  // Rows * Cols * Lanes
  uint64_t stall_operand = 0;   // cycles the array waited for operands (buffer bandwidth)
  uint64_t stall_output = 0;    // cycles held back by output back-pressure
  uint64_t stall_pipeline = 0;  // pipeline fill/drain cycles (incl. the final drain)
  uint64_t operand_bytes = 0;   // bytes read from the operand buffer
  uint64_t stall_sram = 0;      // cycles waiting for the operand buffer's fill from the SRAM (arrays, memory.h)
  uint64_t stall_dram = 0;      // the same where DRAM was the bound
  uint64_t windows = 0;         // operand-buffer windows (arrays)
  MemoryTraffic traffic;        // arrays only
  double macs_per_cycle() const { return cycles ? static_cast<double>(macs) / static_cast<double>(cycles) : 0.0; }
  double utilization() const {
    return cycles && peak_macs_per_cycle
               ? static_cast<double>(macs) / (static_cast<double>(cycles) * static_cast<double>(peak_macs_per_cycle))
               : 0.0;
  }
};

struct GemmResult {
  int64_t m = 0, n = 0;
  std::vector<float> c;  // row-major [m, n], per-tensor scales applied
  std::optional<GemmStats> stats;
};

// Called now and then with (work done, work total) during long runs.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

class GemmDevice {
 public:
  virtual ~GemmDevice() = default;
  virtual std::string name() const = 0;
  // Throws std::invalid_argument for operands the device cannot take (shapes,
  // formats or block sizes it was not built for).
  virtual GemmResult run(const QuantizedTensor& a, const QuantizedTensor& b) = 0;
};

// golden::gemm behind the interface: the reference, untimed.
class GoldenDevice : public GemmDevice {
 public:
  std::string name() const override { return "golden"; }
  GemmResult run(const QuantizedTensor& a, const QuantizedTensor& b) override;
};

struct CheckResult {
  uint64_t compared = 0;
  uint64_t mismatches = 0;
  int64_t first_m = -1, first_n = -1;  // the first mismatch
  uint32_t got_bits = 0, want_bits = 0;
  bool ok() const { return compared > 0 && mismatches == 0; }
  std::string describe() const;
};

// Compares every element of r.c with golden::gemm(a, b), bit for bit (NaN is
// the canonical 0x7FC00000 in both).
CheckResult check_against_golden(const QuantizedTensor& a, const QuantizedTensor& b, const GemmResult& r);

}  // namespace nibble::sim
