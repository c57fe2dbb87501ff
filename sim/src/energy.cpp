#include "nibble/sim/energy.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "nibble/format_sets.h"
#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/power/lane_design.h"

namespace nibble::sim {
namespace {

using model::ConfigError;
using nlohmann::json;

constexpr const char* kSchema = kEnergyTableSchema;

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw ConfigError("energy table: '" + key + "' " + what);
}

[[noreturn]] void flow_fail(const std::string& key, const std::string& what) {
  throw ConfigError(std::string(kFlowEnergySchema) + ": '" + key + "' " + what);
}

json parse_energy_json(const std::string& text, void (*on_fail)(const std::string&, const std::string&),
                       const std::string& who) {
  try {
    return io::parse_json(text, io::refuse_repeated_keys([on_fail](const std::string& key) { on_fail(key, "is given twice"); }));
  } catch (const io::JsonError& e) {
    throw ConfigError(who + ": not valid JSON: " + e.what());
  }
}

const std::string& flow_string(const json& entry, const std::string& at, const char* key) {
  const auto it = entry.find(key);
  if (it == entry.end()) flow_fail(at + "." + key, "is missing");
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    flow_fail(at + "." + key, "must be a non-empty string, got " + it->dump());
  }
  return it->get_ref<const std::string&>();
}

// The set a SystemVerilog mask literal "3'b101" names (bit i: format i), as mask_name writes it.
std::string flow_mask(const std::string& literal, const std::string& at) {
  for (FormatMask m = 1; m <= kAllFormatsMask; ++m) {
    if (sv_format_mask(m) == literal) return format_set_spelled(m);
  }
  flow_fail(at, "must be a non-zero format mask such as \"" + sv_format_mask(kBaselineFormatSet) + "\", got \"" +
                    literal + "\"");
}

// An entry's operand formats: "operand_format" for both operands, or
// "operand_format_a" and "operand_format_b" for a stream of two formats; not both
// forms, not half a pair.
FormatPair flow_operands(const json& entry, const std::string& at) {
  const auto format_of = [&](const char* key) {
    const std::string& n = flow_string(entry, at, key);
    const std::optional<Format> f = parse_format(n);
    if (!f) flow_fail(at + "." + key, "is not a format: \"" + n + "\" (formats: " + format_names(", ") + ")");
    return *f;
  };
  const bool one = entry.contains("operand_format");
  const bool a = entry.contains("operand_format_a"), b = entry.contains("operand_format_b");
  if (one && (a || b)) {
    flow_fail(at, "gives both operand_format and operand_format_a/_b (one format for both operands, or one for each)");
  }
  if (one) {
    const Format f = format_of("operand_format");
    return {f, f};
  }
  if (a != b || !a) {
    flow_fail(at + (a ? ".operand_format_b" : b ? ".operand_format_a" : ".operand_format"),
              "is missing (an entry gives operand_format, or operand_format_a and operand_format_b)");
  }
  return {format_of("operand_format_a"), format_of("operand_format_b")};
}

std::string describe_flow_choice(const json& j, const DpuEnergyChoice& choice, const std::set<std::string>& masks,
                                 const std::set<std::string>& modes) {
  const json liberty = j.value("liberty", json());
  std::string mask_list, mode_list;
  for (const std::string& m : masks) mask_list += (mask_list.empty() ? "" : ", ") + m;
  for (const std::string& m : modes) mode_list += (mode_list.empty() ? "" : ", ") + m;
  return std::string("DPU block energy from the hardware-cost flow (") + kFlowEnergySchema +
         (liberty.is_string() ? ", liberty " + liberty.get<std::string>() : std::string()) + "): lane design " +
         choice.lane_design + ", scale formats " + choice.scale_formats + ", " + choice.operands + " operands on " +
         mode_list + "-scaled streams, per pair of operand formats, for masks " + mask_list +
         "; applied to every GEMM whatever its own scale mode";
}

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
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
  for (FormatMask m = 1; m <= kAllFormatsMask; ++m) masks.push_back(format_set_spelled(m));
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

std::string name(const FormatPair& p) {
  return std::string(nibble::name(p.first)) + " x " + std::string(nibble::name(p.second));
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
  FormatMask m = 0;
  for (Format f : formats) m |= format_bit(f);
  return format_set_spelled(m);
}

EnergyTable energy_table_from_json_text(const std::string& text) {
  const json j = parse_energy_json(text, fail, "energy table");
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

std::string scale_formats_name(const std::vector<ScaleMode>& modes) {
  std::string s;
  size_t n = 0;
  for (ScaleFormat f : kAllScaleFormats) {
    const bool used = std::any_of(modes.begin(), modes.end(), [f](ScaleMode m) { return scale_format(m) == f; });
    if (!used) continue;
    s += (s.empty() ? "" : "+") + std::string(nibble::name(f));
    ++n;
  }
  return n == kAllScaleFormats.size() ? "all" : s;
}

DpuEnergyChoice resolve(DpuEnergyChoice choice, const std::vector<ScaleMode>& modes) {
  if (choice.lane_design.empty()) choice.lane_design = std::string(power::info(power::kDefaultLaneDesign).name);
  if (choice.operands.empty()) choice.operands = kDefaultDpuOperands;
  if (choice.scale_formats.empty()) choice.scale_formats = scale_formats_name(modes);
  return choice;
}

EnergyTable energy_table_from_flow_json_text(const std::string& text, const DpuEnergyChoice& choice) {
  const json j = parse_energy_json(text, flow_fail, kFlowEnergySchema);
  if (!j.is_object()) throw ConfigError(std::string(kFlowEnergySchema) + ": must be a JSON object, got " + j.dump());
  if (j.value("schema", json()) != kFlowEnergySchema) {
    flow_fail("schema", std::string("must be \"") + kFlowEnergySchema + "\", got " + j.value("schema", json()).dump());
  }
  if (j.value("energy_unit", json()) != "pJ") {
    flow_fail("energy_unit", "must be \"pJ\" (a run of nibble energy with --liberty), got " +
                                 j.value("energy_unit", json()).dump());
  }
  const auto actions = j.find("actions");
  if (actions == j.end() || !actions->is_array()) flow_fail("actions", "must be an array");
  if (choice.lane_design.empty() || choice.operands.empty() || choice.scale_formats.empty()) {
    throw std::logic_error("energy_table_from_flow_json_text: the choice is not resolved");
  }
  EnergyTable t;
  std::set<std::string> lanes, scale_sets, operands, modes;
  std::map<std::pair<std::string, FormatPair>, std::string> seen;  // (mask, operands) -> its scale mode
  for (size_t i = 0; i < actions->size(); ++i) {
    const json& a = (*actions)[i];
    const std::string at = "actions[" + std::to_string(i) + "]";
    if (!a.is_object()) flow_fail(at, "must be an object, got " + a.dump());
    if (flow_string(a, at, "component") != "nibble_dpu" || flow_string(a, at, "action") != "block") continue;
    const std::string& lane = flow_string(a, at, "lane_design");
    const std::string& scales = flow_string(a, at, "scale_formats");
    const std::string& dist = flow_string(a, at, "operands");
    lanes.insert(lane);
    if (lane != choice.lane_design) continue;
    scale_sets.insert(scales);
    if (scales != choice.scale_formats) continue;
    operands.insert(dist);
    if (dist != choice.operands) continue;
    const std::string mask = flow_mask(flow_string(a, at, "format_mask"), at + ".format_mask");
    const FormatPair pair = flow_operands(a, at);
    const std::string& mode = flow_string(a, at, "scale_mode");
    const auto energy = a.find("energy");
    if (energy == a.end()) flow_fail(at + ".energy", "is missing");
    const double pj = [&] {
      if (!energy->is_number()) flow_fail(at + ".energy", "must be a number (pJ), got " + energy->dump());
      const double x = energy->get<double>();
      if (!std::isfinite(x) || x < 0.0) flow_fail(at + ".energy", "must be a finite number >= 0 (pJ), got " + energy->dump());
      return x;
    }();
    const auto [prev, fresh] = seen.emplace(std::make_pair(mask, pair), mode);
    if (!fresh) {
      flow_fail(at, "is a second block entry for mask " + mask + ", operands " + name(pair) + " (scale modes " +
                        prev->second + " and " + mode + "): the choice is ambiguous");
    }
    modes.insert(mode);
    t.dpu_block_op_by_format[mask][pair] = pj;
  }
  const auto missing = [](const std::string& what, const std::string& want, const std::set<std::string>& have) {
    throw ConfigError(std::string(kFlowEnergySchema) + ": no DPU block energy for " + what + " '" + want +
                      "' (the file has: " + joined(have) + ")");
  };
  if (!lanes.count(choice.lane_design)) missing("lane design", choice.lane_design, lanes);
  if (!scale_sets.count(choice.scale_formats)) {
    missing("scale-format set", choice.scale_formats + "' with lane design '" + choice.lane_design, scale_sets);
  }
  if (!operands.count(choice.operands)) missing("operand statistics", choice.operands, operands);
  std::set<std::string> masks;
  for (const auto& [mask, by_format] : t.dpu_block_op_by_format) masks.insert(mask);
  t.source = describe_flow_choice(j, choice, masks, modes);
  return t;
}

EnergyTable energy_table_from_any_json_file(const std::string& path, const DpuEnergyChoice& choice) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw ConfigError(std::string("energy table: ") + e.what());
  }
  bool flow = false;
  try {
    const json j = io::parse_json(text);
    flow = j.is_object() && j.value("schema", json()) == kFlowEnergySchema;
  } catch (const io::JsonError&) {
    // The table reader says what is wrong.
  }
  try {
    return flow ? energy_table_from_flow_json_text(text, choice) : energy_table_from_json_text(text);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

EnergyTable merge_energy_tables(const EnergyTable& flow, const EnergyTable& user) {
  if (!user.dpu_block_op.empty()) {
    throw ConfigError("energy table: 'dpu_block_op' is priced by both the flow's file and the table (give it in one)");
  }
  EnergyTable t = flow;
  t.per_action = user.per_action;
  t.source = flow.source + "; per byte and per element: " + user.source;
  return t;
}

bool prices_dpu(const EnergyTable& table, const std::string& mask) {
  return table.dpu_block_op.count(mask) || table.dpu_block_op_by_format.count(mask);
}

std::vector<FormatPair> missing_dpu_prices(const EnergyTable& table, const std::string& mask,
                                           const std::vector<FormatPair>& pairs) {
  std::vector<FormatPair> missing;
  const auto by_format = table.dpu_block_op_by_format.find(mask);
  if (table.dpu_block_op.count(mask) || by_format == table.dpu_block_op_by_format.end()) return missing;
  for (const FormatPair& p : pairs) {
    if (!by_format->second.count(p) && std::find(missing.begin(), missing.end(), p) == missing.end()) {
      missing.push_back(p);
    }
  }
  return missing;
}

std::string priced_pairs(const EnergyTable& table, const std::string& mask) {
  std::string s;
  const auto by_format = table.dpu_block_op_by_format.find(mask);
  if (by_format == table.dpu_block_op_by_format.end()) return "none";
  for (const auto& [pair, pj] : by_format->second) s += (s.empty() ? "" : ", ") + name(pair);
  return s;
}

Energy price(const EnergyTable& table, const std::string& mask, const ActionCounts& counts,
             const DpuOpsByFormat& dpu_ops) {
  Energy e;
  const auto by_format = table.dpu_block_op_by_format.find(mask);
  if (counts[Action::kDpuBlockOp] != 0 && !table.dpu_block_op.count(mask) &&
      by_format != table.dpu_block_op_by_format.end()) {
    // The flow's prices: per operand format.
    uint64_t split = 0;
    for (const auto& [formats, n] : dpu_ops) {
      split += n;
      const auto it = by_format->second.find(formats);
      if (it == by_format->second.end()) {
        if (n) {
          e.unpriced.push_back(std::string(name(Action::kDpuBlockOp)) + " (mask " + mask + ", operands " +
                               name(formats) + ")");
        }
        continue;
      }
      e.pj[0] += static_cast<double>(n) * it->second;
    }
    if (split != counts[Action::kDpuBlockOp]) {
      throw std::invalid_argument("price: the DPU operations by format do not add up to the dpu_block_op count");
    }
    e.total_pj += e.pj[0];
  }
  for (int i = 0; i < kActionCount; ++i) {
    const Action a = static_cast<Action>(i);
    if (counts[a] == 0) continue;
    if (a == Action::kDpuBlockOp && !table.dpu_block_op.count(mask) && by_format != table.dpu_block_op_by_format.end()) {
      continue;  // priced per format above
    }
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
