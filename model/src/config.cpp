#include "nibble/model/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/limits.h"

namespace nibble::model {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw ConfigError("tile config: '" + key + "' " + what);
}

int get_int(const json& j, const std::string& key) {
  if (!j.is_number_integer()) fail(key, "must be an integer, got " + j.dump());
  if (j.is_number_unsigned() && j.get<uint64_t>() > 1000000u) fail(key, "is out of range: " + j.dump());
  const int64_t v = j.get<int64_t>();
  if (v < -1000000 || v > 1000000) fail(key, "is out of range: " + j.dump());
  return static_cast<int>(v);
}

template <class T, class Parse>
std::vector<T> get_names(const json& j, const std::string& key, Parse parse, const std::string& known) {
  if (!j.is_array()) fail(key, "must be an array of names, got " + j.dump());
  std::vector<T> out;
  for (const json& e : j) {
    if (!e.is_string()) fail(key, "must hold strings, got " + e.dump());
    const auto v = parse(e.get<std::string>());
    if (!v) fail(key, "has an unknown name '" + e.get<std::string>() + "' (expected one of " + known + ")");
    out.push_back(*v);
  }
  return out;
}

template <class T, size_t N>
std::string known_names(const std::array<T, N>& all) {
  std::string s;
  for (const T& v : all) s += (s.empty() ? "" : ", ") + std::string(name(v));
  return s;
}

}  // namespace

bool TileConfig::allows(Format f) const { return std::find(formats.begin(), formats.end(), f) != formats.end(); }
bool TileConfig::allows(ScaleMode m) const {
  return std::find(scale_modes.begin(), scale_modes.end(), m) != scale_modes.end();
}

void validate(const TileConfig& c) {
  if (c.rows <= 0 || c.rows > 256) fail("rows", "must be in 1..256, got " + std::to_string(c.rows));
  if (c.cols <= 0 || c.cols > 256) fail("cols", "must be in 1..256, got " + std::to_string(c.cols));
  if (c.lanes != 16 && c.lanes != 32) fail("lanes", "must be 16 or 32, got " + std::to_string(c.lanes));
  if (c.formats.empty()) fail("formats", "must name at least one format");
  for (size_t i = 0; i < c.formats.size(); ++i) {
    if (std::count(c.formats.begin(), c.formats.end(), c.formats[i]) > 1) {
      fail("formats", "names '" + std::string(name(c.formats[i])) + "' twice");
    }
  }
  if (c.scale_modes.empty()) fail("scale_modes", "must name at least one scale mode");
  for (size_t i = 0; i < c.scale_modes.size(); ++i) {
    if (std::count(c.scale_modes.begin(), c.scale_modes.end(), c.scale_modes[i]) > 1) {
      fail("scale_modes", "names '" + std::string(name(c.scale_modes[i])) + "' twice");
    }
  }
  if (c.latency < 1 || c.latency > 64) fail("latency", "must be in 1..64 cycles, got " + std::to_string(c.latency));
  if (!(c.bandwidth > 0.0) || !std::isfinite(c.bandwidth)) {
    std::ostringstream os;
    os << c.bandwidth;
    fail("bandwidth", "must be a finite number of bytes/cycle > 0, got " + os.str());
  }
}

TileConfig config_from_json_text(const std::string& text, const TileConfig& base) {
  json j;
  // A key given twice would silently keep the last value: refuse it.
  std::vector<std::string> top_keys;
  const json::parser_callback_t no_repeats = [&top_keys](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) {
      const std::string key = parsed.get<std::string>();
      if (std::find(top_keys.begin(), top_keys.end(), key) != top_keys.end()) fail(key, "is given twice");
      top_keys.push_back(key);
    }
    return true;
  };
  try {
    j = io::parse_json(text, no_repeats);
  } catch (const io::JsonError& e) {  // syntax errors, numbers out of double's range, bounds
    throw ConfigError(std::string("tile config: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ConfigError("tile config: must be a JSON object, got " + j.dump());
  TileConfig c = base;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "rows") {
      c.rows = get_int(v, key);
    } else if (key == "cols") {
      c.cols = get_int(v, key);
    } else if (key == "lanes") {
      c.lanes = get_int(v, key);
    } else if (key == "latency") {
      c.latency = get_int(v, key);
    } else if (key == "bandwidth") {
      if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
      c.bandwidth = v.get<double>();
    } else if (key == "formats") {
      c.formats = get_names<Format>(v, key, parse_format, known_names(kAllFormats));
    } else if (key == "scale_modes") {
      c.scale_modes = get_names<ScaleMode>(v, key, parse_scale_mode, known_names(kAllScaleModes));
    } else {
      throw ConfigError("tile config: unknown key '" + key +
                        "' (known: rows, cols, lanes, formats, scale_modes, latency, bandwidth)");
    }
  }
  validate(c);
  return c;
}

TileConfig config_from_json_file(const std::string& path, const TileConfig& base) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("tile config: ") + e.what());
  }
  try {
    return config_from_json_text(text, base);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

std::string to_json_text(const TileConfig& c) {
  json j;
  j["rows"] = c.rows;
  j["cols"] = c.cols;
  j["lanes"] = c.lanes;
  j["latency"] = c.latency;
  j["bandwidth"] = c.bandwidth;
  j["formats"] = json::array();
  for (Format f : c.formats) j["formats"].push_back(std::string(name(f)));
  j["scale_modes"] = json::array();
  for (ScaleMode m : c.scale_modes) j["scale_modes"].push_back(std::string(name(m)));
  return j.dump();
}

}  // namespace nibble::model
