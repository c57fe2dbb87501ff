#include "nibble/sim/arch.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/format_sets.h"
#include "nibble/limits.h"
#include "nibble/power/lane_design.h"
#include "nibble/scale.h"

namespace nibble::sim {
namespace {

using model::ConfigError;
using nlohmann::json;

// Latencies beyond 2^20 cycles are a typo, not a memory.
constexpr int64_t kMaxLevelLatency = int64_t{1} << 20;

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw ConfigError("arch: '" + key + "' " + what);
}

// A JSON integer in [lo, hi]; anything else (a fraction, a string, out of range) names the key.
int64_t get_int(const json& j, const std::string& key, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) fail(key, "must be an integer, got " + j.dump());
  const bool above = j.is_number_unsigned() ? j.get<uint64_t>() > static_cast<uint64_t>(hi) : j.get<int64_t>() > hi;
  if (above) fail(key, "must be at most " + std::to_string(hi) + ", got " + j.dump());
  const int64_t v = j.get<int64_t>();
  if (v < lo) fail(key, "must be at least " + std::to_string(lo) + ", got " + j.dump());
  return v;
}

// A finite JSON number > 0 (or >= 0 where zero_ok).
double get_number(const json& j, const std::string& key, bool zero_ok) {
  if (!j.is_number()) fail(key, "must be a number, got " + j.dump());
  const double v = j.get<double>();
  if (!std::isfinite(v) || v < 0.0 || (!zero_ok && v == 0.0)) {
    fail(key, std::string("must be a finite number ") + (zero_ok ? ">= 0" : "> 0") + ", got " + j.dump());
  }
  return v;
}

// A sub-object whose keys must all be among `known` and include every one of `required`.
void check_object(const json& j, const std::string& key, std::initializer_list<const char*> known,
                  std::initializer_list<const char*> required) {
  if (!j.is_object()) fail(key, "must be an object, got " + j.dump());
  std::string names;
  for (const char* k : known) names += (names.empty() ? "" : ", ") + std::string(k);
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) fail(key, "has an unknown key '" + it.key() + "' (known: " + names + ")");
  }
  for (const char* r : required) {
    if (!j.contains(r)) fail(key + "." + r, "is missing (required: " + names + ")");
  }
}

}  // namespace

std::string_view name(Dataflow d) {
  switch (d) {
    case Dataflow::kOutputStationary: return "output-stationary";
    case Dataflow::kWeightStationary: return "weight-stationary";
    case Dataflow::kInputStationary: return "input-stationary";
  }
  return "?";
}

std::optional<Dataflow> parse_dataflow(std::string_view s) {
  for (Dataflow d : kAllDataflows) {
    if (s == name(d)) return d;
  }
  return std::nullopt;
}

uint64_t largest_beat_bytes(const model::TileConfig& t) {
  const uint64_t scale_bytes = t.allows(ScaleMode::kFP32) ? 4u : 1u;
  return static_cast<uint64_t>(t.rows + t.cols) * (static_cast<uint64_t>(t.lanes) / 2u + scale_bytes);
}

void validate(const ArchConfig& a) {
  if (a.tiles < 1 || a.tiles > kMaxArchTiles) {
    fail("tiles", "must be in 1.." + std::to_string(kMaxArchTiles) + ", got " + std::to_string(a.tiles));
  }
  try {
    model::validate(a.tile);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("arch: 'tile': ") + e.what());
  }
  const uint64_t need = largest_beat_bytes(a.tile);
  if (a.operand_buffer_bytes < need) {
    fail("operand_buffer_bytes", std::to_string(a.operand_buffer_bytes) + " cannot hold one beat of the " +
                                     std::to_string(a.tile.rows) + "x" + std::to_string(a.tile.cols) + "x" +
                                     std::to_string(a.tile.lanes) + " tile: " + std::to_string(need) +
                                     " bytes needed" + (a.tile.allows(ScaleMode::kFP32) ? " (fp32 scales)" : ""));
  }
  if (a.sram) {
    // The SRAM feeds every operand buffer: it must hold at least one beat for each tile.
    const uint64_t sram_need = need * static_cast<uint64_t>(a.tiles);
    if (a.sram->bytes < sram_need) {
      fail("sram.bytes", std::to_string(a.sram->bytes) + " cannot hold one beat for each of the " +
                             std::to_string(a.tiles) + " tiles: " + std::to_string(sram_need) + " bytes needed");
    }
    if (!(std::isfinite(a.sram->bandwidth) && a.sram->bandwidth > 0.0)) fail("sram.bandwidth", "must be > 0");
    if (a.sram->latency < 0 || a.sram->latency > kMaxLevelLatency) fail("sram.latency", "must be in 0..2^20");
  }
  if (a.dram) {
    if (!(std::isfinite(a.dram->bandwidth) && a.dram->bandwidth > 0.0)) fail("dram.bandwidth", "must be > 0");
    if (a.dram->latency < 0 || a.dram->latency > kMaxLevelLatency) fail("dram.latency", "must be in 0..2^20");
  }
  if (a.clock_ghz && !(std::isfinite(*a.clock_ghz) && *a.clock_ghz > 0.0)) fail("clock_ghz", "must be > 0");
  if (a.energy) {
    const ArchEnergy& e = *a.energy;
    if (e.files.empty() || e.files.size() > kMaxArchEnergyFiles) {
      fail("energy.files", "must list 1 or 2 files (the hardware-cost flow's and/or an energy-per-action table), got " +
                               std::to_string(e.files.size()));
    }
    for (const std::string& f : e.files) {
      if (f.empty()) fail("energy.files", "must not hold an empty path");
    }
    if (!e.lane_design.empty()) {
      std::string known;
      bool ok = false;
      for (const power::LaneDesignInfo& d : power::kLaneDesignTable) {
        known += (known.empty() ? "" : ", ") + std::string(d.name);
        ok = ok || d.name == e.lane_design;
      }
      if (!ok) fail("energy.lane_design", "unknown lane design \"" + e.lane_design + "\" (known: " + known + ")");
    }
    if (!e.scale_formats.empty()) {
      std::string known;
      bool ok = false;
      for (FormatMask m = 1; m <= kAllScaleFormatsMask; ++m) {
        known += (known.empty() ? "" : ", ") + scale_format_set_name(m);
        ok = ok || scale_format_set_name(m) == e.scale_formats;
      }
      if (!ok) fail("energy.scale_formats", "unknown scale-format set \"" + e.scale_formats + "\" (known: " + known + ")");
    }
  }
  if (a.quantizer) {
    if (!(std::isfinite(a.quantizer->elements_per_cycle) && a.quantizer->elements_per_cycle > 0.0)) {
      fail("quantizer.elements_per_cycle", "must be > 0");
    }
    if (!(std::isfinite(a.quantizer->rht_elements_per_cycle) && a.quantizer->rht_elements_per_cycle > 0.0)) {
      fail("quantizer.rht_elements_per_cycle", "must be > 0");
    }
  }
}

ArchConfig arch_from_json_text(const std::string& text) {
  json j;
  try {
    j = io::parse_json(text, io::refuse_repeated_keys([](const std::string& key) { fail(key, "is given twice"); }));
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("arch: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ConfigError("arch: must be a JSON object, got " + j.dump());
  ArchConfig a;
  for (const char* required : {"tiles", "tile", "operand_buffer_bytes"}) {
    if (!j.contains(required)) fail(required, "is missing (required: tiles, tile, operand_buffer_bytes)");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "tiles") {
      a.tiles = static_cast<int>(get_int(v, key, 1, kMaxArchTiles));
    } else if (key == "tile") {
      if (!v.is_object()) fail(key, "must be an object (a tile configuration), got " + v.dump());
      try {
        a.tile = model::config_from_json_text(v.dump());
      } catch (const ConfigError& e) {
        throw ConfigError(std::string("arch: 'tile': ") + e.what());
      }
    } else if (key == "operand_buffer_bytes") {
      a.operand_buffer_bytes = static_cast<uint64_t>(get_int(v, key, 1, int64_t{1} << 40));
    } else if (key == "dataflow") {
      if (!v.is_string()) fail(key, "must be a string, got " + v.dump());
      const auto d = parse_dataflow(v.get<std::string>());
      if (!d) fail(key, "unknown dataflow " + v.dump() + " (expected output-stationary, weight-stationary or input-stationary)");
      a.dataflow = *d;
    } else if (key == "double_buffer") {
      if (!v.is_boolean()) fail(key, "must be true or false, got " + v.dump());
      a.double_buffer = v.get<bool>();
    } else if (key == "sram") {
      check_object(v, key, {"bytes", "bandwidth", "latency"}, {"bytes", "bandwidth", "latency"});
      SramConfig s;
      s.bytes = static_cast<uint64_t>(get_int(v["bytes"], "sram.bytes", 1, int64_t{1} << 40));
      s.bandwidth = get_number(v["bandwidth"], "sram.bandwidth", false);
      s.latency = get_int(v["latency"], "sram.latency", 0, kMaxLevelLatency);
      a.sram = s;
    } else if (key == "dram") {
      check_object(v, key, {"bandwidth", "latency"}, {"bandwidth", "latency"});
      DramConfig d;
      d.bandwidth = get_number(v["bandwidth"], "dram.bandwidth", false);
      d.latency = get_int(v["latency"], "dram.latency", 0, kMaxLevelLatency);
      a.dram = d;
    } else if (key == "clock_ghz") {
      a.clock_ghz = get_number(v, key, false);
    } else if (key == "quantizer") {
      check_object(v, key, {"elements_per_cycle", "rht_elements_per_cycle"},
                   {"elements_per_cycle", "rht_elements_per_cycle"});
      QuantizerConfig q;
      q.elements_per_cycle = get_number(v["elements_per_cycle"], "quantizer.elements_per_cycle", false);
      q.rht_elements_per_cycle = get_number(v["rht_elements_per_cycle"], "quantizer.rht_elements_per_cycle", false);
      a.quantizer = q;
    } else if (key == "energy") {
      check_object(v, key, {"files", "lane_design", "operands", "scale_formats"}, {"files"});
      ArchEnergy e;
      const json& files = v["files"];
      if (!files.is_array()) fail("energy.files", "must be an array of paths, got " + files.dump());
      for (size_t i = 0; i < files.size(); ++i) {
        const std::string at = "energy.files[" + std::to_string(i) + "]";
        if (!files[i].is_string() || files[i].get<std::string>().empty()) {
          fail(at, "must be a non-empty string (a path), got " + files[i].dump());
        }
        e.files.push_back(files[i].get<std::string>());
      }
      for (const auto& [k, field] : {std::make_pair("lane_design", &ArchEnergy::lane_design),
                                     std::make_pair("operands", &ArchEnergy::operands),
                                     std::make_pair("scale_formats", &ArchEnergy::scale_formats)}) {
        if (!v.contains(k)) continue;
        const json& x = v[k];
        if (!x.is_string() || x.get<std::string>().empty()) {
          fail(std::string("energy.") + k, "must be a non-empty string, got " + x.dump());
        }
        e.*field = x.get<std::string>();
      }
      a.energy = e;
    } else {
      throw ConfigError("arch: unknown key '" + key + "' (known: " + kArchKeys + ")");
    }
  }
  validate(a);
  return a;
}

std::string to_json_text(const ArchConfig& a) {
  json j;
  j["tiles"] = a.tiles;
  j["tile"] = json::parse(model::to_json_text(a.tile));
  j["operand_buffer_bytes"] = a.operand_buffer_bytes;
  j["dataflow"] = std::string(name(a.dataflow));
  j["double_buffer"] = a.double_buffer;
  if (a.sram) j["sram"] = {{"bytes", a.sram->bytes}, {"bandwidth", a.sram->bandwidth}, {"latency", a.sram->latency}};
  if (a.dram) j["dram"] = {{"bandwidth", a.dram->bandwidth}, {"latency", a.dram->latency}};
  if (a.clock_ghz) j["clock_ghz"] = *a.clock_ghz;
  if (a.quantizer) {
    j["quantizer"] = {{"elements_per_cycle", a.quantizer->elements_per_cycle},
                      {"rht_elements_per_cycle", a.quantizer->rht_elements_per_cycle}};
  }
  if (a.energy) {
    j["energy"] = {{"files", a.energy->files}};
    if (!a.energy->lane_design.empty()) j["energy"]["lane_design"] = a.energy->lane_design;
    if (!a.energy->operands.empty()) j["energy"]["operands"] = a.energy->operands;
    if (!a.energy->scale_formats.empty()) j["energy"]["scale_formats"] = a.energy->scale_formats;
  }
  return j.dump();
}

ArchConfig arch_from_json_file(const std::string& path) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("arch: ") + e.what());
  }
  ArchConfig a;
  try {
    a = arch_from_json_text(text);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
  // An architecture file names its energy files as it sits beside them, wherever it is run from.
  if (a.energy) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    for (std::string& f : a.energy->files) {
      if (std::filesystem::path(f).is_relative()) f = (dir / f).lexically_normal().string();
    }
  }
  return a;
}

}  // namespace nibble::sim
