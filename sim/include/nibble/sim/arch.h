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
// The event model simulates such an array (EventDevice): output tile i runs on
// array tile i mod tiles, each array tile taking its output tiles in row-major
// order through its own operand buffer, as one tile does alone.
#pragma once

#include <cstdint>
#include <string>

#include "nibble/model/config.h"

namespace nibble::sim {

inline constexpr int kMaxArchTiles = 4096;

struct ArchConfig {
  int tiles = 1;
  model::TileConfig tile;
  uint64_t operand_buffer_bytes = 0;
};

// Bytes of the largest beat `t` can take: Rows + Cols panel rows of Lanes codes
// (Lanes / 2 bytes) and one scale code each (4 bytes if t allows fp32 scales, else 1).
uint64_t largest_beat_bytes(const model::TileConfig& t);

// Throws model::ConfigError naming the first bad key.
void validate(const ArchConfig& a);

ArchConfig arch_from_json_text(const std::string& text);
// Errors name the file.
ArchConfig arch_from_json_file(const std::string& path);

}  // namespace nibble::sim
