// `nibble bench-compare`: the runs of `nibble bench-kernels --json` of two
// builds (or two GPUs), row by row, side by side. Built everywhere: comparing
// recorded runs needs no GPU.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "nibble/io/kernel_bench_file.h"

namespace nibble::cli {
namespace {

struct CompareOptions {
  std::vector<std::string> before;
  std::vector<std::string> after;
  double noise = 0.01;
  std::string json_out;
};

// before / after of one row: the ratio of the sides' mean times, and its
// range over every pair of one run of each side.
struct Speedup {
  double mid;
  double low;
  double high;
};

double mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

Speedup speedup_of(const io::KernelBenchMatch& m) {
  const auto [bmin, bmax] = std::minmax_element(m.before_ms.begin(), m.before_ms.end());
  const auto [amin, amax] = std::minmax_element(m.after_ms.begin(), m.after_ms.end());
  return {mean(m.before_ms) / mean(m.after_ms), *bmin / *amax, *bmax / *amin};
}

// "low-high" with `decimals` places and `suffix`, or one number where both print the same.
std::string range_text(double lo, double hi, int decimals, const char* suffix) {
  const std::string low = fmt::format("{:.{}f}{}", lo, decimals, suffix);
  const std::string high = fmt::format("{:.{}f}{}", hi, decimals, suffix);
  return low == high ? low : low + "-" + high;
}

std::string times_text(const std::vector<double>& ms) {
  const auto [lo, hi] = std::minmax_element(ms.begin(), ms.end());
  return range_text(*lo, *hi, 4, "");
}

// '+' where every pair of runs says faster by more than the noise, '-' slower.
char mark_of(const Speedup& s, double noise) {
  if (s.low > 1.0 + noise) return '+';
  if (s.high < 1.0 - noise) return '-';
  return ' ';
}

std::string label_of(const io::KernelBenchRow& row) {
  if (row.tiles.empty()) return row.name;
  return row.tiles == "auto" ? fmt::format("{} (auto: {})", row.name, row.tile)
                             : fmt::format("{} ({})", row.name, row.tile);
}

std::string group_of(const io::KernelBenchRow& row) {
  std::string g = row.section;
  if (!row.input.empty()) g += " " + row.input;
  for (size_t i = 0; i < row.shape.size(); ++i) g += (i == 0 ? " " : " x ") + std::to_string(row.shape[i]);
  return g;
}

std::string side_text(const std::vector<std::string>& files, const std::vector<std::string>& devices) {
  std::string names;
  for (const std::string& f : files) names += (names.empty() ? "" : ", ") + f;
  std::string devs;
  for (const std::string& d : devices) devs += (devs.empty() ? "" : " and ") + d;
  return fmt::format("{} run{} on {} ({})", files.size(), files.size() == 1 ? "" : "s", devs, names);
}

void run_compare(const CompareOptions& o) {
  if (!(o.noise >= 0.0 && o.noise < 1.0)) throw UsageError(fmt::format("--noise {} is not in [0, 1)", o.noise));
  for (const std::string& f : o.before) note_input(f, "--before");
  for (const std::string& f : o.after) note_input(f, "--after");
  std::ofstream json_file = open_output(o.json_out, "--json");
  auto read_side = [](const std::vector<std::string>& files) {
    std::vector<io::KernelBenchRun> runs;
    for (const std::string& f : files) {
      try {
        runs.push_back(io::read_kernel_bench(f));
      } catch (const io::BenchFileError& e) {
        throw UsageError(e.what());
      }
    }
    return runs;
  };
  const std::vector<io::KernelBenchRun> before = read_side(o.before);
  const std::vector<io::KernelBenchRun> after = read_side(o.after);
  const io::KernelBenchComparison c = io::compare_kernel_bench(before, after);
  if (c.matched.empty()) {
    throw UsageError("no row of the --before runs is in the --after runs (are they bench-kernels runs of the same "
                     "shapes?)");
  }

  std::cout << "before: " << side_text(o.before, c.before_devices) << "\n";
  std::cout << "after:  " << side_text(o.after, c.after_devices) << "\n";
  if (c.before_devices != c.after_devices) {
    std::cout << "note: the sides ran on different devices: the ratios compare the GPUs as much as the builds\n";
  }
  std::cout << fmt::format(
      "times in ms, mean per call, over each side's runs; speedup = before / after, its range over every pair of\n"
      "runs; + or - where the whole range is beyond {:g} % (--noise)\n",
      100.0 * o.noise);

  size_t width = 40;
  for (const io::KernelBenchMatch& m : c.matched) width = std::max(width, label_of(m.row).size());
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string group;
  int faster = 0, slower = 0, kernels = 0, yardsticks = 0;
  double log_kernels = 0.0, log_yardsticks = 0.0;
  for (const io::KernelBenchMatch& m : c.matched) {
    if (group_of(m.row) != group) {
      group = group_of(m.row);
      std::cout << fmt::format("\n{}\n  {:<{}} {:>15} {:>15} {:>15}\n", group, "row", width, "before", "after",
                               "speedup");
    }
    const Speedup s = speedup_of(m);
    const char mark = mark_of(s, o.noise);
    std::cout << fmt::format("  {:<{}} {:>15} {:>15} {:>15} {}\n", label_of(m.row), width, times_text(m.before_ms),
                             times_text(m.after_ms), range_text(s.low, s.high, 2, "x"), mark);
    if (m.row.kind == "kernel") {
      ++kernels;
      log_kernels += std::log(s.mid);
      faster += mark == '+';
      slower += mark == '-';
    } else if (m.row.kind == "yardstick") {
      ++yardsticks;
      log_yardsticks += std::log(s.mid);
    }
    rows.push_back({{"key", io::kernel_bench_key(m.row)},
                    {"kind", m.row.kind},
                    {"before_ms", m.before_ms},
                    {"after_ms", m.after_ms},
                    {"speedup", s.mid},
                    {"speedup_low", s.low},
                    {"speedup_high", s.high}});
  }
  std::cout << "\n";
  if (kernels > 0) {
    std::cout << fmt::format(
        "the library's kernels: {} rows, {} faster and {} slower beyond the noise; geometric mean speedup {:.3f}x\n",
        kernels, faster, slower, std::exp(log_kernels / kernels));
  }
  if (yardsticks > 0) {
    std::cout << fmt::format("yardsticks (copy, cuBLAS): geometric mean {:.3f}x, the machines' own difference\n",
                             std::exp(log_yardsticks / yardsticks));
  }
  for (const std::string& k : c.only_before) std::cout << "only in before: " << k << "\n";
  for (const std::string& k : c.only_after) std::cout << "only in after:  " << k << "\n";

  if (json_file.is_open()) {
    nlohmann::ordered_json j;
    j["command"] = command_line();
    j["before"] = {{"files", o.before}, {"devices", c.before_devices}};
    j["after"] = {{"files", o.after}, {"devices", c.after_devices}};
    j["noise"] = o.noise;
    j["rows"] = rows;
    j["only_before"] = c.only_before;
    j["only_after"] = c.only_after;
    json_file << j.dump(2) << "\n";
    finish_output(json_file, o.json_out);
  }
}

}  // namespace

void add_bench_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench-compare", "Compare runs of `nibble bench-kernels --json` (two builds or two GPUs) row by row");
  cmd->add_option("--before", o->before, "runs of the baseline (one or more .json files)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--after", o->after, "runs to compare with it (one or more .json files)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--noise", o->noise, "marks a row only where every pair of runs differs by more than this")
      ->capture_default_str();
  cmd->add_option("--json", o->json_out, "also write the comparison as JSON")->type_name("FILE");
  cmd->callback([o] { run_compare(*o); });
}

}  // namespace nibble::cli
