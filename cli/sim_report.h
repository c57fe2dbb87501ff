// How `nibble gemm --arch` and `nibble workload` print an array's memory
// hierarchy, a GEMM's tiling and the bytes it moves at each level (text and
// JSON), so that the two commands say it the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"
#include "nibble/sim/memory.h"

namespace nibble::cli {

// "dataflow ..., double-buffered, SRAM ..., DRAM ..." (one line, no newline).
std::string describe_memory(const sim::ArchConfig& a);
// The tiling and the bytes per level, one line each, ending in a newline.
std::string describe_traffic(const sim::Tiling& t, const sim::GemmStats& s);
nlohmann::json tiling_json(const sim::Tiling& t);
nlohmann::json traffic_json(const sim::MemoryTraffic& t);

}  // namespace nibble::cli
