#include "nibble/sim/arch.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/scale.h"

namespace nibble::sim {
namespace {

using model::ConfigError;
using nlohmann::json;

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

}  // namespace

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
}

ArchConfig arch_from_json_text(const std::string& text) {
  // A key given twice would silently keep the last value: refuse it, at every depth.
  std::vector<std::set<std::string>> keys;
  const json::parser_callback_t no_repeats = [&keys](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!keys.back().insert(key).second) fail(key, "is given twice");
    }
    return true;
  };
  json j;
  try {
    j = io::parse_json(text, no_repeats);
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
    } else {
      throw ConfigError("arch: unknown key '" + key + "' (known: tiles, tile, operand_buffer_bytes)");
    }
  }
  validate(a);
  return a;
}

ArchConfig arch_from_json_file(const std::string& path) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("arch: ") + e.what());
  }
  try {
    return arch_from_json_text(text);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

}  // namespace nibble::sim
