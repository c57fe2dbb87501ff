#include "nibble/power/synth_flow.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <system_error>

#include <unistd.h>

namespace nibble::power {

namespace fs = std::filesystem;

namespace {
Config make_config(FormatMask m, bool energy_default) {
  return {format_set_name(m), format_set_label(m), sv_format_mask(m), m, energy_default};
}
}  // namespace

const std::array<Config, kFormatSets.size()> kConfigs = [] {
  std::array<Config, kFormatSets.size()> out;
  for (size_t i = 0; i < kFormatSets.size(); ++i) {
    out[i] = make_config(kFormatSets[i].mask, kFormatSets[i].energy_default);
  }
  return out;
}();

const Config& config_for(FormatMask mask) {
  // The table's rows themselves (the flows compare configurations by address, e.g. with
  // baseline_config()); the other sets built the same way, once, measured only when named.
  static const std::array<Config, kAllFormatsMask> others = [] {
    std::array<Config, kAllFormatsMask> out;
    for (FormatMask m = 1; m <= kAllFormatsMask; ++m) out[m - 1] = make_config(m, false);
    return out;
  }();
  if (mask == 0 || mask > kAllFormatsMask) throw std::logic_error("config_for: not a set of formats");
  for (const Config& c : kConfigs) {
    if (c.bits == mask) return c;
  }
  return others[mask - 1];
}

const std::array<ScaleConfig, kScaleFormatSets.size()> kScaleConfigs = [] {
  std::array<ScaleConfig, kScaleFormatSets.size()> out;
  for (size_t i = 0; i < kScaleFormatSets.size(); ++i) {
    const FormatMask m = kScaleFormatSets[i].mask;
    out[i] = {scale_format_set_name(m), scale_format_set_label(m), sv_scale_format_mask(m),
              std::string(name(kScaleFormatSets[i].energy_mode))};
  }
  return out;
}();

const Config& baseline_config() {
  for (const Config& c : kConfigs) {
    if (c.bits == kBaselineFormatSet) return c;
  }
  throw std::logic_error("kFormatSets has no row for the baseline set");
}

std::string config_names() {
  std::string s;
  for (const Config& c : kConfigs) {
    s += (s.empty() ? "" : ", ") + c.name + (c.bits == kAllFormatsMask ? " (= " + all_formats_spelled() + ")" : "");
  }
  return s;
}

std::vector<const ScaleConfig*> parse_scale_configs(const std::string& text, const char* option) {
  std::vector<const ScaleConfig*> out;
  for (std::string item : split_list(text)) {
    if (item == all_scale_formats_spelled()) item = "all";
    const ScaleConfig* found = find_named(kScaleConfigs, item);
    if (found == nullptr) {
      std::string known;
      for (const ScaleConfig& c : kScaleConfigs) {
        known += (known.empty() ? "" : ", ") + c.name + (c.name == "all" ? " = " + all_scale_formats_spelled() : "");
      }
      throw FlowError(fmt::format("{}: unknown scale-format set '{}' (known: {})", option, item, known));
    }
    append_once(out, found, option, item);
  }
  if (out.empty()) throw FlowError(fmt::format("{}: no scale-format set given", option));
  return out;
}

std::string default_yosys() {
  if (const char* env = std::getenv("NIBBLE_YOSYS")) return env;
#ifdef NIBBLE_YOSYS_EXECUTABLE
  if (fs::exists(NIBBLE_YOSYS_EXECUTABLE)) return NIBBLE_YOSYS_EXECUTABLE;
#endif
  return "yosys";
}

std::string default_synth_dir() {
  if (const char* env = std::getenv("NIBBLE_SOURCE_DIR")) return (fs::path(env) / "rtl" / "synth").string();
#ifdef NIBBLE_SOURCE_DIR
  return (fs::path(NIBBLE_SOURCE_DIR) / "rtl" / "synth").string();
#else
  return "rtl/synth";
#endif
}

ScratchDir::ScratchDir(const std::string& prefix)
    : path_(fs::temp_directory_path() / fmt::format("{}_{}", prefix, static_cast<long>(::getpid()))) {
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> words;
  std::stringstream ss(text);
  std::string word;
  while (std::getline(ss, word, ',')) words.push_back(word);
  return words;
}

TileShape parse_tile(const std::string& text) {
  TileShape t;
  char x = 0;
  std::istringstream ts(text);
  std::string rest;
  if (!(ts >> t.rows >> x >> t.cols) || (x != 'x' && x != 'X') || (ts >> rest) || t.rows < 1 || t.cols < 1 ||
      t.rows > 16 || t.cols > 16) {
    throw FlowError(fmt::format("--tile: want MxN with 1 <= M, N <= 16, got '{}'", text));
  }
  return t;
}

std::vector<const Config*> parse_configs(const std::string& text) {
  std::vector<const Config*> out;
  for (const std::string& item : split_list(text)) {
    const std::optional<FormatMask> mask = parse_format_set(item);
    if (!mask) {
      // Known names by size, then format order: each format alone first, "all" last.
      std::vector<const Config*> by_size;
      for (const Config& c : kConfigs) by_size.push_back(&c);
      std::stable_sort(by_size.begin(), by_size.end(), [](const Config* x, const Config* y) {
        const int nx = __builtin_popcount(x->bits), ny = __builtin_popcount(y->bits);
        return nx != ny ? nx < ny : (x->bits & -x->bits) < (y->bits & -y->bits);
      });
      std::string known;
      for (const Config* c : by_size) {
        known += (known.empty() ? "" : ", ") + c->name + (c->bits == kAllFormatsMask ? " = " + all_formats_spelled() : "");
      }
      throw FlowError(fmt::format("--configs: unknown configuration '{}' (known: {}; or any formats joined by '+')",
                                  item, known));
    }
    const Config* found = &config_for(*mask);
    out.push_back(found);
  }
  if (out.empty()) throw FlowError("--configs: no configuration given");
  return out;
}

std::vector<const LaneDesignInfo*> parse_lane_designs(const std::string& text, const char* option) {
  std::vector<const LaneDesignInfo*> out;
  for (const std::string& item : split_list(text)) {
    if (item == "all") {
      for (const LaneDesignInfo& d : kLaneDesignTable) append_once(out, &d, option, std::string(d.name));
      continue;
    }
    const LaneDesignInfo* found = find_named(kLaneDesignTable, item);
    if (found == nullptr) {
      throw FlowError(fmt::format("{}: unknown lane design '{}' (known: {}, all)", option, item, lane_design_names()));
    }
    append_once(out, found, option, item);
  }
  if (out.empty()) throw FlowError(fmt::format("{}: no lane design given", option));
  return out;
}

std::string lane_design_names() {
  std::string names;
  for (const LaneDesignInfo& d : kLaneDesignTable) {
    names += (names.empty() ? "" : ", ") + std::string(d.name);
  }
  return names;
}

const std::vector<std::string>& dpu_sub_block_names() {
  static const std::vector<std::string> names = {
      "element decode", "lane multiply",       "adder tree",          "scale decode", "scale multiply",
      "|P| x sig, exponent, glue", "block rounding", "FP32 accumulate add", "registers",    "inputs"};
  return names;
}

std::string dpu_sub_block(const std::string& cell, bool flop) {
  const std::vector<std::string>& n = dpu_sub_block_names();
  // the innermost named instance wins: u_scale_mul's own rounder is the scale multiply's
  if (cell.find("u_decode_") != std::string::npos) return n[0];
  if (cell.find("u_lane") != std::string::npos) return n[1];
  if (cell.find("u_adder_tree") != std::string::npos) return n[2];
  if (cell.find("u_scale_decode") != std::string::npos) return n[3];
  if (cell.find("u_scale_mul") != std::string::npos) return n[4];
  if (cell.find("u_block_round") != std::string::npos) return n[6];
  if (cell.find("u_acc_add") != std::string::npos) return n[7];
  return flop ? n[8] : n[5];
}

}  // namespace nibble::power
