#include "sim_report.h"

#include <fmt/core.h>

namespace nibble::cli {

std::string describe_memory(const sim::ArchConfig& a) {
  std::string s = fmt::format("memory         {}, {}", sim::name(a.dataflow),
                              a.double_buffer ? "double-buffered" : "single-buffered");
  s += a.sram ? fmt::format(", SRAM {} B at {} B/cycle, latency {}", a.sram->bytes, a.sram->bandwidth, a.sram->latency)
              : std::string(", no SRAM modelled");
  s += a.dram ? fmt::format(", DRAM {} B/cycle, latency {}", a.dram->bandwidth, a.dram->latency)
              : std::string(", no DRAM modelled");
  return s;
}

std::string describe_traffic(const sim::Tiling& t, const sim::GemmStats& s) {
  std::string out = fmt::format("tiling         buffer windows {}x{} output tiles{}, SRAM windows {}x{}{}, {} windows\n",
                                t.wm, t.wn, t.buffer_streams ? " (panels stream through)" : "", t.sm, t.sn,
                                t.sram_streams ? " (every fill from DRAM)" : "", t.windows());
  out += fmt::format("bytes moved    DRAM->SRAM {}  SRAM->buffers {}  buffers->tiles {}  C out {}  accumulator {}  "
                     "C->DRAM {}\n",
                     s.traffic.dram_read_bytes, s.traffic.buffer_fill_bytes, s.operand_bytes, s.traffic.c_bytes,
                     s.traffic.accumulator_bytes, s.traffic.dram_write_bytes);
  return out;
}

nlohmann::json tiling_json(const sim::Tiling& t) {
  return {{"buffer_window", {t.wm, t.wn}}, {"buffer_streams", t.buffer_streams}, {"sram_window", {t.sm, t.sn}},
          {"sram_streams", t.sram_streams}, {"windows", t.windows()}, {"a_bytes", t.a_bytes}, {"b_bytes", t.b_bytes}};
}

nlohmann::json traffic_json(const sim::MemoryTraffic& t) {
  return {{"dram_read_bytes", t.dram_read_bytes},   {"buffer_fill_bytes", t.buffer_fill_bytes},
          {"c_bytes", t.c_bytes},                   {"accumulator_bytes", t.accumulator_bytes},
          {"dram_write_bytes", t.dram_write_bytes}};
}

}  // namespace nibble::cli
