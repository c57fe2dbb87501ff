// Energy by action: the event model counts actions (a DPU block operation, a
// byte read from an operand buffer, SRAM or DRAM, a quantized element, ...),
// and an energy-per-action table, when one is given, prices them. The table
// is data from the hardware-cost flow or from the user; the simulator has no
// energy numbers of its own, so without a table only the counts are reported.
//
// Table (JSON, schema "nibble-energy-per-action/1"; every key but "schema",
// "unit" and "source" optional; no other key):
//
//   {
//     "schema": "nibble-energy-per-action/1",
//     "unit": "pJ",
//     "source": "where the numbers come from (flow, library, node, operand statistics)",
//     "dpu_block_op": {"e2m1": 1.0, "e2m1+e1m2+int4": 1.1},
//     "per_byte": {"operand_buffer_read": 0.1, "sram_read": 0.5, "sram_write": 0.6,
//                  "dram_read": 20, "dram_write": 20, "accumulator": 0.3},
//     "per_element": {"quantize": 0.2, "rht": 0.4}
//   }
//
// dpu_block_op: one DPU's block dot product (Lanes elements) in one beat, per
// format mask; a mask is its formats joined by "+" in the order e2m1, e1m2,
// int4 (mask_name). Every value is a finite number >= 0, in picojoules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nibble/formats.h"
#include "nibble/model/config.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"

namespace nibble::sim {

// The actions one table prices, in report order.
enum class Action : uint8_t {
  kDpuBlockOp,
  kOperandBufferRead,
  kSramRead,
  kSramWrite,
  kDramRead,
  kDramWrite,
  kAccumulator,
  kQuantize,
  kRht,
};
inline constexpr int kActionCount = 9;
// "dpu_block_op", "operand_buffer_read", ..., as the table and the reports name them.
const char* name(Action a);

struct ActionCounts {
  uint64_t n[kActionCount] = {};
  uint64_t& operator[](Action a) { return n[static_cast<int>(a)]; }
  uint64_t operator[](Action a) const { return n[static_cast<int>(a)]; }
  ActionCounts& operator+=(const ActionCounts& o) {
    for (int i = 0; i < kActionCount; ++i) n[i] += o.n[i];
    return *this;
  }
};

// A GEMM's actions on `arch`: beats x Rows x Cols DPU block operations, the
// operand buffers' reads, the SRAM's reads (buffer fills, C on to DRAM) and
// writes (fills from DRAM, C), none without an SRAM, DRAM reads and writes,
// accumulator bytes; quantizer and RHT
// elements are the workload's and are added by it.
ActionCounts count_actions(const ArchConfig& arch, const GemmStats& s);

// "e2m1+e1m2+int4": the tile's formats in the canonical order.
std::string mask_name(const std::vector<Format>& formats);

struct EnergyTable {
  std::string source;
  std::map<std::string, double> dpu_block_op;  // mask name -> pJ
  std::map<std::string, double> per_action;    // action name (not dpu_block_op) -> pJ
};

// Throws model::ConfigError naming the key (and the file).
EnergyTable energy_table_from_json_text(const std::string& text);
EnergyTable energy_table_from_json_file(const std::string& path);

struct Energy {
  double total_pj = 0.0;
  double pj[kActionCount] = {};
  std::vector<std::string> unpriced;  // actions with a count the table has no entry for
};

// counts x the table's entry for each action (the DPU's for `mask`).
Energy price(const EnergyTable& table, const std::string& mask, const ActionCounts& counts);

}  // namespace nibble::sim
