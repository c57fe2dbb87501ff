// `nibble report`: the co-design report, one self-contained HTML page plus the
// data behind every figure. The work is nibble::report (report/).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "commands.h"
#include "nibble/io/shell.h"
#include "nibble/report/report.h"

namespace nibble::cli {
namespace {

struct ReportArgs {
  std::string out;
  std::string results = std::string(NIBBLE_SOURCE_DIR) + "/docs/results";
  std::string gnuplot;
  uint64_t seed = 0;
  bool quiet = false;
  std::string training = "auto";  // auto, recorded, fresh
  std::string train_data = "data/brown";
  int64_t train_steps = 750;
  std::string train_seeds = "0,1,2";
};

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
  o.gnuplot = io::find_executable(gp);
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

  // Section 3: train afresh where this machine can (a libtorch build with the CUDA
  // kernels and a GPU), else read the recorded sweep.
  if (a.training != "auto" && a.training != "recorded" && a.training != "fresh") {
    throw UsageError(fmt::format("--training: want auto, recorded or fresh, got '{}'", a.training));
  }
  if (a.train_steps < 1) throw UsageError(fmt::format("--train-steps: want >= 1, got {}", a.train_steps));
  bool fresh = false;
  if (a.training != "recorded") {
    std::string why;
    const bool gpu = can_train_on_gpu(&why);
    const bool have_data = std::filesystem::exists(std::filesystem::path(a.train_data) / "manifest.json");
    if (a.training == "fresh" && !gpu) throw UsageError("--training fresh: cannot train here: " + why);
    fresh = gpu && (have_data || a.training == "fresh");
    // The scaling study retires the fresh 6.4 M sweep once a size of it is recorded complete.
    const report::StudyData study = report::read_study((std::filesystem::path(a.results) / "training").string());
    bool study_complete = false;
    for (const auto& z : study.present ? study.summary["sizes"] : nlohmann::json::array()) {
      study_complete |= z.is_object() && z.value("complete", false);
    }
    if (a.training == "auto" && fresh && study_complete) {
      fresh = false;
      fmt::print(stderr, "nibble report: note: the recorded scaling study ({}) has a complete size, so the training "
                         "section shows it and no sweep is run (--training fresh runs one anyway)\n", study.path);
    } else if (gpu && !fresh) {
      fmt::print(stderr, "nibble report: note: a GPU is present but there is no training data in '{}' (nibble "
                         "train-data --corpus brown --out {}): the training section shows the recorded sweep\n",
                 a.train_data, a.train_data);
    }
  }
  if (fresh) {
    try {
      report::check_output_dir(a.out);
    } catch (const report::ReportError& e) {
      throw UsageError(e.what());
    }
    const std::string dir = (std::filesystem::path(a.out) / "training").string();
    fmt::print(stderr, "nibble report: training every recipe over seeds {} for {} steps on the GPU into {} "
                       "(minutes; --training recorded skips it)\n", a.train_seeds, a.train_steps, dir);
    run_report_training(a.train_data, a.train_steps, a.train_seeds, dir);
    o.training_dir = dir;
    o.training_fresh = true;
  }

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
      "sections are computed now; area/energy is read from recorded results (--results); training is run now "
      "into DIR/training where this build has libtorch and a GPU, and otherwise read from recorded results. "
      "Recorded sections are marked as such, or marked absent.");
  cmd->add_option("--out", a->out, "output directory (created if absent)")->required()->type_name("DIR");
  cmd->add_option("--results", a->results, "recorded results: training/summary.json, area-energy.json, "
                                           "verification.json")
      ->capture_default_str()
      ->type_name("DIR");
  cmd->add_option("--gnuplot", a->gnuplot, "the gnuplot program (default: $NIBBLE_GNUPLOT or gnuplot on PATH)")
      ->type_name("PATH");
  cmd->add_option("--seed", a->seed, "seeds the synthetic inputs, SR bits, RHT signs and GEMM operands")
      ->capture_default_str()
      ->check(unsigned_integer());
  cmd->add_flag("--quiet", a->quiet, "no progress lines");
  cmd->add_option("--training", a->training,
                  "training section: fresh (train now: needs libtorch and a GPU), recorded (read --results), or auto "
                  "(fresh where possible)")
      ->capture_default_str();
  cmd->add_option("--train-data", a->train_data, "prepared data for a fresh sweep (nibble train-data)")
      ->capture_default_str();
  cmd->add_option("--train-steps", a->train_steps, "steps per run of a fresh sweep")
      ->capture_default_str()
      ->check(integer_in());
  cmd->add_option("--train-seeds", a->train_seeds, "seeds of a fresh sweep (comma list)")->capture_default_str();
  cmd->callback([a] { run_report(*a, command_line()); });
}

}  // namespace nibble::cli
