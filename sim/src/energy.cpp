#include "nibble/sim/energy.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/limits.h"

namespace nibble::sim {
namespace {

using model::ConfigError;
using nlohmann::json;

constexpr const char* kSchema = "nibble-energy-per-action/1";

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw ConfigError("energy table: '" + key + "' " + what);
}

double energy_value(const json& v, const std::string& key) {
  if (!v.is_number()) fail(key, "must be a number (pJ), got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0.0) fail(key, "must be a finite number >= 0 (pJ), got " + v.dump());
  return x;
}

// An object of name -> pJ whose names are among `known`.
std::map<std::string, double> priced_object(const json& v, const std::string& key, const std::vector<std::string>& known) {
  if (!v.is_object()) fail(key, "must be an object, got " + v.dump());
  std::string names;
  for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
  std::map<std::string, double> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || it.key() == k;
    if (!ok) fail(key, "has an unknown key '" + it.key() + "' (known: " + names + ")");
    out[it.key()] = energy_value(it.value(), key + "." + it.key());
  }
  return out;
}

// Every non-empty subset of the formats, as mask_name writes it.
std::vector<std::string> all_masks() {
  std::vector<std::string> masks;
  const int n = static_cast<int>(kAllFormats.size());
  for (int bits = 1; bits < (1 << n); ++bits) {
    std::vector<Format> f;
    for (int i = 0; i < n; ++i) {
      if (bits & (1 << i)) f.push_back(kAllFormats[static_cast<size_t>(i)]);
    }
    masks.push_back(mask_name(f));
  }
  return masks;
}

}  // namespace

const char* name(Action a) {
  switch (a) {
    case Action::kDpuBlockOp: return "dpu_block_op";
    case Action::kOperandBufferRead: return "operand_buffer_read";
    case Action::kSramRead: return "sram_read";
    case Action::kSramWrite: return "sram_write";
    case Action::kDramRead: return "dram_read";
    case Action::kDramWrite: return "dram_write";
    case Action::kAccumulator: return "accumulator";
    case Action::kQuantize: return "quantize";
    case Action::kRht: return "rht";
  }
  return "?";
}

ActionCounts count_actions(const ArchConfig& arch, const GemmStats& s) {
  ActionCounts c;
  c[Action::kDpuBlockOp] = s.beats * static_cast<uint64_t>(arch.tile.rows) * static_cast<uint64_t>(arch.tile.cols);
  c[Action::kOperandBufferRead] = s.operand_bytes;
  c[Action::kSramRead] = arch.sram ? s.traffic.buffer_fill_bytes + s.traffic.c_bytes : 0;  // fills, C on to DRAM
  c[Action::kSramWrite] = arch.sram ? s.traffic.dram_read_bytes + s.traffic.c_bytes : 0;
  c[Action::kDramRead] = s.traffic.dram_read_bytes;
  c[Action::kDramWrite] = s.traffic.dram_write_bytes;
  c[Action::kAccumulator] = s.traffic.accumulator_bytes;
  return c;
}

std::string mask_name(const std::vector<Format>& formats) {
  std::string s;
  for (Format f : kAllFormats) {
    for (Format g : formats) {
      if (f == g) {
        s += (s.empty() ? "" : "+") + std::string(nibble::name(f));
        break;
      }
    }
  }
  return s;
}

EnergyTable energy_table_from_json_text(const std::string& text) {
  json j;
  try {
    j = io::parse_json(text, io::refuse_repeated_keys([](const std::string& key) { fail(key, "is given twice"); }));
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("energy table: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ConfigError("energy table: must be a JSON object, got " + j.dump());
  for (const char* required : {"schema", "unit", "source"}) {
    if (!j.contains(required)) fail(required, "is missing (required: schema, unit, source)");
  }
  EnergyTable t;
  const std::vector<std::string> per_byte = {name(Action::kOperandBufferRead), name(Action::kSramRead),
                                             name(Action::kSramWrite),         name(Action::kDramRead),
                                             name(Action::kDramWrite),         name(Action::kAccumulator)};
  const std::vector<std::string> per_element = {name(Action::kQuantize), name(Action::kRht)};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "schema") {
      if (v != kSchema) fail(key, std::string("must be \"") + kSchema + "\", got " + v.dump());
    } else if (key == "unit") {
      if (v != "pJ") fail(key, "must be \"pJ\", got " + v.dump());
    } else if (key == "source") {
      if (!v.is_string() || v.get<std::string>().empty()) fail(key, "must say where the numbers come from");
      t.source = v.get<std::string>();
    } else if (key == "dpu_block_op") {
      t.dpu_block_op = priced_object(v, key, all_masks());
    } else if (key == "per_byte") {
      for (const auto& [k, x] : priced_object(v, key, per_byte)) t.per_action[k] = x;
    } else if (key == "per_element") {
      for (const auto& [k, x] : priced_object(v, key, per_element)) t.per_action[k] = x;
    } else {
      throw ConfigError("energy table: unknown key '" + key +
                        "' (known: schema, unit, source, dpu_block_op, per_byte, per_element)");
    }
  }
  return t;
}

EnergyTable energy_table_from_json_file(const std::string& path) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("energy table: ") + e.what());
  }
  try {
    return energy_table_from_json_text(text);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

Energy price(const EnergyTable& table, const std::string& mask, const ActionCounts& counts) {
  Energy e;
  for (int i = 0; i < kActionCount; ++i) {
    const Action a = static_cast<Action>(i);
    if (counts[a] == 0) continue;
    const std::map<std::string, double>& prices = a == Action::kDpuBlockOp ? table.dpu_block_op : table.per_action;
    const auto it = prices.find(a == Action::kDpuBlockOp ? mask : std::string(name(a)));
    if (it == prices.end()) {
      e.unpriced.push_back(a == Action::kDpuBlockOp ? std::string(name(a)) + " (mask " + mask + ")" : name(a));
      continue;
    }
    e.pj[i] = static_cast<double>(counts[a]) * it->second;
    e.total_pj += e.pj[i];
  }
  return e;
}

}  // namespace nibble::sim
