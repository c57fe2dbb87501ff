#include "nibble/train/sweep.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "nibble/io/json.h"

namespace nibble::train {
namespace fs = std::filesystem;

Recipe parse_recipe_spec(const std::string& spec) {
  std::stringstream ss(spec);
  std::string part;
  std::getline(ss, part, '+');
  const Recipe base = preset(part);
  RecipeFlags f;
  bool any = false;
  while (std::getline(ss, part, '+')) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
      throw RecipeError(fmt::format("recipe '{}': '{}' is not key=value", spec, part));
    }
    const std::string key = part.substr(0, eq);
    const std::string value = part.substr(eq + 1);
    auto number = [&]() {
      try {
        size_t used = 0;
        const int v = std::stoi(value, &used);
        if (used == value.size()) return v;
      } catch (const std::exception&) {
      }
      throw RecipeError(fmt::format("recipe '{}': {} needs an integer, got '{}'", spec, key, value));
    };
    if (key == "format") f.format = value;
    else if (key == "scale") f.scale = value;
    else if (key == "act-block") f.act_block = value;
    else if (key == "weight-block") f.weight_block = value;
    else if (key == "rht") f.rht = value;
    else if (key == "sr") f.sr = value;
    else if (key == "sr-bits") f.sr_bits = number();
    else if (key == "bf16-first") f.bf16_first = number();
    else if (key == "bf16-last") f.bf16_last = number();
    else {
      throw RecipeError(fmt::format("recipe '{}': unknown key '{}'; valid: format, scale, act-block, weight-block, "
                                    "rht, sr, sr-bits, bf16-first, bf16-last", spec, key));
    }
    any = true;
  }
  return any ? apply_flags(base, f) : base;
}

std::vector<SweepRun> plan_sweep(const std::vector<std::string>& specs, const std::vector<RunSeeds>& seeds) {
  std::vector<SweepRun> out;
  for (const auto& spec : specs) {
    const Recipe r = parse_recipe_spec(spec);
    for (const auto& s : seeds) {
      const std::string dir = fmt::format("runs/{}-{}", r.name, seeds_tag(s));
      for (const auto& o : out) {
        if (o.dir == dir) throw SweepError(fmt::format("the sweep names run {} twice", dir));
      }
      out.push_back({spec, r, s, dir});
    }
  }
  return out;
}

namespace {

nlohmann::json read_json(const fs::path& p) {
  try {
    return io::read_json_file(p.string());
  } catch (const io::JsonError& e) {
    throw SweepError(e.what());
  }
}

// The first path at which a and b differ ("" where they are equal).
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string p = path.empty() ? it.key() : path + "." + it.key();
      if (!b.contains(it.key())) return p;
      std::string d = first_difference(it.value(), b.at(it.key()), p);
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) return path.empty() ? it.key() : path + "." + it.key();
    }
    return "";
  }
  return a == b ? "" : (path.empty() ? "(the whole configuration)" : path);
}

std::vector<std::vector<std::string>> read_csv(const fs::path& p, std::vector<std::string>& header) {
  std::ifstream in(p);
  if (!in) throw SweepError(fmt::format("cannot read {}", p.string()));
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (first) {
      header = cells;
      first = false;
    } else if (!cells.empty()) {
      if (cells.size() != header.size()) {
        throw SweepError(fmt::format("{}: line {} has {} fields, the header {}", p.string(), rows.size() + 2,
                                     cells.size(), header.size()));
      }
      rows.push_back(std::move(cells));
    }
  }
  if (first) throw SweepError(fmt::format("{}: empty", p.string()));
  return rows;
}

size_t column(const std::vector<std::string>& header, const std::string& name, const fs::path& p) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  throw SweepError(fmt::format("{}: no column '{}'", p.string(), name));
}

double number(const std::string& s, const fs::path& p) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw SweepError(fmt::format("{}: '{}' is not a number", p.string(), s));
}

}  // namespace

RunState run_state(const fs::path& dir, const nlohmann::ordered_json& expected) {
  const fs::path rj = dir / "run.json";
  if (!fs::exists(rj)) return RunState::kPending;
  const nlohmann::json run = read_json(rj);
  if (!run.is_object() || run.value("status", "") != "finished") return RunState::kPending;
  if (!run.contains("config")) {
    throw SweepError(fmt::format("{} records no configuration (written by an older nibble): move it away or use "
                                 "another sweep directory", rj.string()));
  }
  const std::string diff = first_difference(nlohmann::json(expected), run["config"], "");
  if (!diff.empty()) {
    throw SweepError(fmt::format("{} holds a run of another configuration ({} differs): use another sweep "
                                 "directory, or remove that run",
                                 rj.string(), diff));
  }
  return RunState::kFinished;
}

RunRecord load_run_record(const fs::path& sweep_dir, const std::string& rel_dir) {
  const fs::path dir = sweep_dir / rel_dir;
  const nlohmann::json run = read_json(dir / "run.json");
  RunRecord r;
  try {
    r.recipe = run.at("recipe").get<std::string>();
    r.description = run.at("description").get<std::string>();
    r.seed = run.at("seed").get<uint64_t>();
    r.final_val_loss = run.at("final_val_loss").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw SweepError(fmt::format("{}: {}", (dir / "run.json").string(), e.what()));
  }
  r.dir = rel_dir;
  std::vector<std::string> header;
  const fs::path loss_csv = dir / "loss.csv";
  const auto rows = read_csv(loss_csv, header);
  const size_t loss_col = column(header, "loss", loss_csv);
  const size_t ms_col = column(header, "step_ms", loss_csv);
  for (const auto& row : rows) {
    r.loss.push_back(static_cast<float>(number(row[loss_col], loss_csv)));
    r.step_ms.push_back(number(row[ms_col], loss_csv));
  }
  if (r.loss.empty()) throw SweepError(fmt::format("{}: no steps", loss_csv.string()));
  return r;
}

std::string divergence_message(const std::string& recipe, float loss, int64_t step) {
  return fmt::format("{}: the loss is {} at step {}", recipe, loss, step);
}

std::optional<int64_t> diverged_step(const std::string& log_text) {
  static const std::string kLoss = ": the loss is ";
  static const std::string kStep = " at step ";
  for (size_t at = log_text.find(kLoss); at != std::string::npos; at = log_text.find(kLoss, at + 1)) {
    const size_t value = at + kLoss.size();
    const size_t step = log_text.find(kStep, value);
    if (step == std::string::npos) break;
    const std::string v = log_text.substr(value, step - value);
    if (v != "nan" && v != "-nan" && v != "inf" && v != "-inf") continue;
    const size_t digits = step + kStep.size();
    size_t end = digits;
    while (end < log_text.size() && std::isdigit(static_cast<unsigned char>(log_text[end])) != 0) ++end;
    if (end == digits || end - digits > 18) continue;
    return std::stoll(log_text.substr(digits, end - digits));
  }
  return std::nullopt;
}

std::vector<double> signed_gap_curve(const std::vector<float>& loss, const std::vector<float>& baseline) {
  if (loss.size() != baseline.size()) {
    throw std::invalid_argument(fmt::format("signed_gap_curve: {} steps against a baseline of {}", loss.size(),
                                            baseline.size()));
  }
  std::vector<double> out(loss.size());
  for (size_t t = 0; t < loss.size(); ++t) {
    const double b = baseline[t];
    out[t] = (static_cast<double>(loss[t]) - b) / b;
  }
  return out;
}

}  // namespace nibble::train
