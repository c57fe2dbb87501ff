// `nibble report`: the co-design report, one self-contained HTML page plus the
// data behind every figure. The work is nibble::report (report/).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "commands.h"
#include "nibble/report/report.h"

namespace nibble::cli {
namespace {

struct ReportArgs {
  std::string out;
  std::string results = std::string(NIBBLE_SOURCE_DIR) + "/docs/results";
  std::string gnuplot;
  uint64_t seed = 0;
  bool quiet = false;
};

// An executable named `name` on PATH, or a path given as is; empty if none.
std::string find_program(const std::string& name) {
  namespace fs = std::filesystem;
  if (name.find('/') != std::string::npos) return fs::exists(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t start = 0;
  while (start <= p.size()) {
    const size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty()) {
      const fs::path candidate = fs::path(dir) / name;
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return {};
}

void run_report(const ReportArgs& a, const std::string& command_line) {
  report::ReportOptions o;
  o.out_dir = a.out;
  // Shown in the page: relative to the working directory where it lies below it.
  std::error_code ec;
  const std::filesystem::path rel = std::filesystem::relative(a.results, std::filesystem::current_path(), ec);
  o.results_dir = !ec && !rel.empty() && rel.native().rfind("..", 0) != 0 ? rel.string() : a.results;
  o.seed = a.seed;
  o.command_line = command_line;
  std::string gp = a.gnuplot;
  if (gp.empty()) {
    const char* env = std::getenv("NIBBLE_GNUPLOT");
    gp = env && *env ? env : "gnuplot";
  }
  o.gnuplot = find_program(gp);
  if (o.gnuplot.empty()) {
    throw UsageError(fmt::format("gnuplot not found ('{}'); install gnuplot-nox (scripts/setup.sh does) or pass "
                                 "--gnuplot PATH",
                                 gp));
  }
  if (!std::filesystem::is_directory(a.results)) {
    fmt::print(stderr, "nibble report: note: results directory '{}' does not exist; recorded sections will say "
                       "absent\n", a.results);
  }
  if (!a.quiet) o.progress = [](const std::string& line) { fmt::print(stderr, "nibble report: {}\n", line); };
  report::ReportSummary s;
  try {
    s = report::write_report(o);
  } catch (const report::ReportError& e) {
    throw UsageError(e.what());
  }
  fmt::print("report: {} ({} figures, {} tables, {:.1f} s)\n", s.html_path, s.figures, s.tables, s.seconds);
  for (const std::string& n : s.notes) fmt::print("  {}\n", n);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "The co-design report: formats, compounding, training, area, trade-off, verification, cycles (HTML)");
  cmd->footer(
      "Writes DIR/index.html (self-contained: figures are inline SVG), DIR/report.json, the CSV/JSON behind every "
      "figure in DIR/data, and the gnuplot scripts in DIR/plots. The formats, compounding, verification and cycle "
      "sections are computed now; training and area/energy are read from recorded results (--results) and marked "
      "as such, or marked absent.");
  cmd->add_option("--out", a->out, "output directory (created if absent)")->required()->type_name("DIR");
  cmd->add_option("--results", a->results, "recorded results: training/summary.json, area-energy.json, "
                                           "verification.json")
      ->capture_default_str()
      ->type_name("DIR");
  cmd->add_option("--gnuplot", a->gnuplot, "the gnuplot program (default: $NIBBLE_GNUPLOT or gnuplot on PATH)")
      ->type_name("PATH");
  cmd->add_option("--seed", a->seed, "seeds the synthetic inputs, SR bits, RHT signs and GEMM operands")
      ->capture_default_str();
  cmd->add_flag("--quiet", a->quiet, "no progress lines");
  cmd->callback([a] { run_report(*a, command_line()); });
}

}  // namespace nibble::cli
