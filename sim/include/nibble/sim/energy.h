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
//
// The hardware-cost flow's file (`nibble energy --actions`, schema
// "nibble-energy-actions/1", docs/area-energy.md) prices the DPU's block
// operation directly: one entry per lane design x scale-format set x format
// mask x operand format x operand statistics (and the scale mode of its
// stream). energy_table_from_flow_json_text picks one lane design, scale-format
// set and operand statistics (DpuEnergyChoice) and keeps, per format mask, the
// block energy per pair of operand formats (A, B). An entry names its operands
// either with "operand_format" (both operands in that format) or with
// "operand_format_a" and "operand_format_b" (a stream of two formats, as a
// GEMM of dY in one format and W in another runs). A GEMM is priced at the
// entry of its own pair; a pair the file lacks is never priced from another
// pair's entry (missing_dpu_prices names it). The flow has no per-byte or
// per-element entries; a user table adds them (merge_energy_tables).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nibble/formats.h"
#include "nibble/model/config.h"
#include "nibble/scale.h"
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

// The operands' formats of a DPU operation: (A, B).
using FormatPair = std::pair<Format, Format>;
// "e2m1 x e1m2", as reports and errors name a pair.
std::string name(const FormatPair& p);

struct EnergyTable {
  std::string source;
  std::map<std::string, double> dpu_block_op;  // mask name -> pJ, whatever the operands' format
  // From the flow's file: mask name -> (A format, B format) -> pJ of a block whose
  // operands are in those formats.
  std::map<std::string, std::map<FormatPair, double>> dpu_block_op_by_format;
  std::map<std::string, double> per_action;    // action name (not dpu_block_op) -> pJ
};

inline constexpr const char* kEnergyTableSchema = "nibble-energy-per-action/1";
inline constexpr const char* kFlowEnergySchema = "nibble-energy-actions/1";

// Throws model::ConfigError naming the key (and the file).
EnergyTable energy_table_from_json_text(const std::string& text);
EnergyTable energy_table_from_json_file(const std::string& path);

// Which of the flow's DPU measurements price a block operation. Empty fields
// take the defaults below.
struct DpuEnergyChoice {
  std::string lane_design;    // default: the RTL's default lane design (power::kDefaultLaneDesign)
  std::string operands;       // default: "gaussian"
  std::string scale_formats;  // default: the set the tile's scale modes decode (scale_formats_name)
};
inline constexpr const char* kDefaultDpuOperands = "gaussian";

// The block-scale formats that `modes` store, as the flow names a DPU's
// scale-format set: "e4m3", "ue8m0", "fp32" joined by "+" in that order, and
// "all" for the three (the flow's name for the RTL's default set).
std::string scale_formats_name(const std::vector<ScaleMode>& modes);

// The choice with its defaults filled in for a tile allowing `modes`.
DpuEnergyChoice resolve(DpuEnergyChoice choice, const std::vector<ScaleMode>& modes);

// The flow's file: the block entries of `choice` (resolved), per format mask and
// operand format. Throws model::ConfigError when the file is not the flow's, is
// not in pJ, or has no block entry for the lane design, scale-format set or
// operand statistics chosen (naming the ones it has), or two entries for one
// mask and operand format (two scale modes: the choice is ambiguous).
EnergyTable energy_table_from_flow_json_text(const std::string& text, const DpuEnergyChoice& choice);

// Either schema, told apart by its "schema" key; `choice` for the flow's file.
EnergyTable energy_table_from_any_json_file(const std::string& path, const DpuEnergyChoice& choice);

// One table from the flow's DPU prices and a user table's per-byte and
// per-element prices. Throws model::ConfigError if both price the DPU.
EnergyTable merge_energy_tables(const EnergyTable& flow, const EnergyTable& user);

// Whether `table` prices `mask`'s DPU operation for some operands.
bool prices_dpu(const EnergyTable& table, const std::string& mask);

struct Energy {
  double total_pj = 0.0;
  double pj[kActionCount] = {};
  std::vector<std::string> unpriced;  // actions with a count the table has no entry for
};

// DPU block operations by the operands' formats (A, B); they add up to the
// dpu_block_op count they split.
using DpuOpsByFormat = std::map<FormatPair, uint64_t>;

// The format pairs of `pairs` whose DPU operations on `mask` the table cannot
// price: none where it has a per-mask entry; where it prices per format pair
// (the flow's file), every pair without an entry of its own. Empty also where
// the table prices no DPU operation of `mask` at all (prices_dpu says so).
std::vector<FormatPair> missing_dpu_prices(const EnergyTable& table, const std::string& mask,
                                           const std::vector<FormatPair>& pairs);
// The pairs the table prices on `mask` ("e2m1 x e2m1, e1m2 x e1m2"), for messages.
std::string priced_pairs(const EnergyTable& table, const std::string& mask);

// counts x the table's entry for each action: the DPU's for `mask` -- its
// per-mask entry, else (the flow's) each format pair's count of `dpu_ops` x
// the entry of that pair; a pair the table lacks is named in `unpriced`, never
// priced at another pair's entry.
Energy price(const EnergyTable& table, const std::string& mask, const ActionCounts& counts,
             const DpuOpsByFormat& dpu_ops = {});

}  // namespace nibble::sim
