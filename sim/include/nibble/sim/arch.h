// An array of identical tiles, described by an architecture file (JSON):
//
//   {
//     "tiles": 4,
//     "tile": {"rows": 4, "cols": 4, "lanes": 16, "latency": 4, "bandwidth": 64,
//              "formats": ["e2m1", "e1m2", "int4"], "scale_modes": ["nvfp4", "fp32"]},
//     "operand_buffer_bytes": 4096
//   }
//
// "tiles" (1..4096) identical tiles; "tile" a tile configuration exactly as
// `nibble gemm --config` takes it (model/include/nibble/model/config.h: shape,
// lanes, format mask, scale modes, latency, and "bandwidth", the bytes per cycle
// of the tile's own operand buffer; keys left out take their defaults there);
// "operand_buffer_bytes" the capacity of each tile's operand buffer, which must
// hold the largest beat the tile can be given (the buffer holds one beat while it
// is fetched and offered; see largest_beat_bytes). All three keys are required;
// any other key, a key given twice at any depth, a wrong type or an impossible
// value is refused with model::ConfigError naming the key.
//
// Optional keys describe the rest of the machine (sim/README.md has the table):
//
//   "dataflow": "output-stationary" | "weight-stationary" | "input-stationary"
//   "double_buffer": true | false        (operand buffers and SRAM; default true)
//   "sram": {"bytes": N, "bandwidth": B/cycle, "latency": cycles}   shared by the tiles
//   "dram": {"bandwidth": B/cycle, "latency": cycles}
//   "clock_ghz": F                       (to turn cycles into seconds)
//   "quantizer": {"elements_per_cycle": X, "rht_elements_per_cycle": Y}
//   "energy": {"files": [path, ...], "lane_design": name, "operands": name, "scale_formats": name}
//
// "energy" says how the array's actions are priced (energy.h): one or two
// energy files (the hardware-cost flow's and/or an energy-per-action table),
// paths relative to the architecture file's directory, and which of the
// flow's DPU measurements to use (DpuEnergyChoice; a key left out takes its
// default). The files are read where the energy is priced (nibble workload),
// not here; a lane design or scale-format set no DPU has is refused here.
//
// A level left out is not modelled: it delivers at once (no stall) and its
// traffic is still counted. The event model simulates such an array
// (EventDevice); memory.h says how a GEMM is tiled into the buffers and timed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nibble/model/config.h"

namespace nibble::sim {

inline constexpr int kMaxArchTiles = 4096;

// Which operand stays in the tile while the others stream past it. The RTL tile
// is output-stationary (its accumulators hold one output tile over every
// k-block); the other two keep an A or B k-block latched in the tile's beat
// register and send a partial-sum tile out after every beat (memory.h).
enum class Dataflow : uint8_t { kOutputStationary, kWeightStationary, kInputStationary };
inline constexpr std::array<Dataflow, 3> kAllDataflows = {Dataflow::kOutputStationary, Dataflow::kWeightStationary,
                                                          Dataflow::kInputStationary};
std::string_view name(Dataflow d);
std::optional<Dataflow> parse_dataflow(std::string_view s);

// The SRAM shared by the tiles: capacity, bytes per cycle to all operand buffers
// together, cycles from a request to its first byte.
struct SramConfig {
  uint64_t bytes = 0;
  double bandwidth = 0.0;
  int64_t latency = 0;
};
// DRAM behind the SRAM: bytes per cycle, cycles from a request to its first byte.
struct DramConfig {
  double bandwidth = 0.0;
  int64_t latency = 0;
};
// The quantizer and RHT units of the array: elements per cycle of each.
struct QuantizerConfig {
  double elements_per_cycle = 0.0;
  double rht_elements_per_cycle = 0.0;
};

// The energy files and the choice among the flow's DPU entries ("" = the default).
struct ArchEnergy {
  std::vector<std::string> files;  // 1 or 2 (at most one of each schema; checked when read)
  std::string lane_design, operands, scale_formats;
};
inline constexpr size_t kMaxArchEnergyFiles = 2;

struct ArchConfig {
  int tiles = 1;
  model::TileConfig tile;
  uint64_t operand_buffer_bytes = 0;
  Dataflow dataflow = Dataflow::kOutputStationary;
  bool double_buffer = true;
  std::optional<SramConfig> sram;
  std::optional<DramConfig> dram;
  std::optional<double> clock_ghz;
  std::optional<QuantizerConfig> quantizer;
  std::optional<ArchEnergy> energy;
};

// The keys an architecture file may have, in the order of the docs.
inline constexpr const char* kArchKeys = "tiles, tile, operand_buffer_bytes, dataflow, double_buffer, sram, dram, "
                                         "clock_ghz, quantizer, energy";

// Bytes of the largest beat `t` can take: Rows + Cols panel rows of Lanes codes
// (Lanes / 2 bytes) and one scale code each (4 bytes if t allows fp32 scales, else 1).
uint64_t largest_beat_bytes(const model::TileConfig& t);

// Throws model::ConfigError naming the first bad key.
void validate(const ArchConfig& a);

ArchConfig arch_from_json_text(const std::string& text);
// The file's keys, for reports: every key, defaults filled in.
std::string to_json_text(const ArchConfig& a);
// Errors name the file. Relative energy file paths are taken from the
// architecture file's directory (the config holds them so resolved).
ArchConfig arch_from_json_file(const std::string& path);

}  // namespace nibble::sim
