// The co-design report (`nibble report`): one self-contained HTML page with the
// data behind every figure, in nine sections:
//   1 formats       grids to scale, per-level bias, the `nibble quant` matrix on the
//                   synthetic inputs (computed here with nibble::analysis)
//   2 compounding   eta across depth (the chain), and per-layer attenuation from
//                   recorded training diagnostics where present
//   3 training      the scaling study (gap per size and arm with CIs, paired differences
//                   beside the paper's effect), and the loss curves and gaps of the 6.4 M
//                   sweep (the caller ran it now, or recorded) until a study size is complete
//   4 hardware      area (and energy, where recorded) per format configuration
//   5 trade-off     quality against cost, one point per configuration and recipe
//   6 verification  recorded bit-exact case counts per layer, and a live check of
//                   the SystemC model against golden
//   7 cycles        a GEMM sweep over array shapes and operand bandwidths (SystemC)
//   8 gpu-kernels   the formats on today's GPUs: recorded `bench-kernels --json` runs
//                   (quantize against a copy, the bit-exact GEMM against cuBLAS and
//                   against the contract's own adds)
//   9 workload      a training step of each study size on examples/arch/array16.json
//                   (the event model): time and DPU energy per recipe and format mask
//                   beside the recipe's loss gap
// Everything computed is computed by the analysis and sim libraries; this library
// only chooses the experiments, reads recorded results, and renders.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nibble/io/kernel_bench_file.h"
#include "nibble/published.h"

namespace nibble::report {

// A problem with the inputs of the report (unreadable recorded results are not
// one: they are reported in the page). The command turns it into exit 2.
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReportOptions {
  std::string out_dir;      // created if absent
  std::string results_dir;  // recorded results: training/summary.json, area-energy.json, verification.json, kernels/
  // Where the training section reads summary.json and runs/: results_dir/training if empty.
  std::string training_dir;
  bool training_fresh = false;  // training_dir was just written by this report's own sweep
  std::string gnuplot = "gnuplot";
  uint64_t seed = 0;
  std::string command_line;  // recorded in the page and in report.json
  std::function<void(const std::string&)> progress;  // one line per step
};

struct ReportSummary {
  std::string html_path;
  int figures = 0;
  int tables = 0;
  double seconds = 0;
  std::vector<std::string> notes;  // one per section: its title and where its content came from
};

ReportSummary write_report(const ReportOptions& options);

// Throws ReportError if out_dir is a non-empty directory that holds no earlier report
// (write_report checks it too, unless training_fresh says the caller did).
void check_output_dir(const std::string& out_dir);

// ---- Parts shared by the report's sources (not a stable interface) ----

// A figure: its data file (CSV, read by gnuplot) and a gnuplot script body that
// plots it. The renderer adds the SVG terminal and output lines.
struct Figure {
  Figure() = default;
  Figure(std::string id_, std::string title_, std::string caption_, std::string script_, std::string data_ = {})
      : id(std::move(id_)), title(std::move(title_)), caption(std::move(caption_)), script(std::move(script_)),
        data(std::move(data_)) {}
  std::string id;       // file stem, e.g. "chain_eta"
  std::string title;
  std::string caption;
  std::string script;   // gnuplot commands after `set terminal`/`set output`
  std::string data;     // its CSV under data/, if not <id>.csv
  std::string data_file() const { return "data/" + (data.empty() ? id : data) + ".csv"; }
};

// A table as the page shows it: header cells and rows of already formatted cells.
struct Table {
  std::string id;
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct Section {
  std::string id;
  std::string title;
  std::string source;  // "computed now" / "recorded: ..." / "absent"
  std::string intro_html;
  std::vector<Figure> figures;
  std::vector<Table> tables;
  std::string notes_html;
};

// Recorded results (recorded.cpp); each returns a section even when nothing is recorded.
struct TrainingData {
  bool present = false;
  nlohmann::json summary;  // as read
  std::string problem;     // why absent or partly unreadable
};
// `training_dir` holds summary.json and runs/.
TrainingData read_training(const std::string& training_dir);
// The scaling study's summary (`nibble train-study summarize`, schema
// nibble-train-study-summary/1): training_dir/study/summary.json.
struct StudyData {
  bool present = false;
  std::string path;
  nlohmann::json summary;
  std::string problem;
};
StudyData read_study(const std::string& training_dir);
// MixFP4's published area and power (nibble/published.h), printed beside Nibble's own figures.
using published::kMixFp4AreaPercent;
using published::kMixFp4PowerPercent;

struct AreaData {
  bool present = false;
  nlohmann::json raw;
  struct Record {
    std::string table;   // where in the file (e.g. "configs")
    std::string config;  // e2m1, e2m1+e1m2, ...
    std::string label;
    std::string unit;
    double area = 0;
    double percent_vs_e2m1 = 0;
    bool has_percent = false;
    double energy_per_mac = 0;  // in energy_unit, where recorded
    bool has_energy = false;
    std::string energy_unit;
  };
  std::vector<Record> records;
  // Energy per MAC per configuration x element format x operand set (schema
  // nibble-area-energy/1); `table` is the library, as for the area records.
  struct Energy {
    std::string table, config, format, operands, unit, command;
    double energy_per_mac = 0;
    // Per MAC of the tensor-core level's array with its operand staging (the DPU's
    // share plus the operand register files'), where recorded; NaN otherwise.
    double tensor_core_energy_per_mac = std::numeric_limits<double>::quiet_NaN();
  };
  std::vector<Energy> energy;
  // The format overhead at each level of the tensor core (the file's "levels", one
  // object per library and tile size; table names both): per level and configuration
  // beside E2M1-only, the area of both and the recorded percent over E2M1-only.
  struct Level {
    std::string table, level, includes, unit, config, label;
    double baseline_area = 0, area = 0, percent_vs_e2m1 = 0;
  };
  std::vector<Level> levels;
  nlohmann::json commands = nlohmann::json::object();  // name -> command line, as recorded
  std::string schema;
  // Energy per MAC of (table, config, format) on `operands`, relative to E2M1-only
  // running E2M1 on the same operands, in percent; NaN where not recorded.
  double energy_percent(const std::string& table, const std::string& config, const std::string& format,
                        const std::string& operands = "gaussian") const;
  // The same for tensor_core_energy_per_mac.
  double tensor_core_energy_percent(const std::string& table, const std::string& config, const std::string& format,
                                    const std::string& operands = "gaussian") const;
  double mixfp4_area_percent = kMixFp4AreaPercent;  // as recorded, else the published figure
  double mixfp4_power_percent = kMixFp4PowerPercent;
  std::string problem;
};
AreaData read_area(const std::string& results_dir);

// Recorded `nibble bench-kernels --json` runs: every *.json under
// results_dir/kernels, in name order. A file that does not read is left out and
// named in `problem`.
struct KernelData {
  std::string dir;
  std::vector<std::string> files;  // the runs read, as paths
  std::vector<io::KernelBenchRun> runs;
  std::string problem;
};
KernelData read_kernels(const std::string& results_dir);

// A JSON file; throws ReportError if unreadable or not JSON.
nlohmann::json read_json(const std::string& path);
// Recorded results at path, or nothing with `problem` saying why ("no recorded
// <what> (<path> is absent)", or why it is not JSON).
std::optional<nlohmann::json> read_recorded(const std::string& path, const char* what, std::string& problem);
// A CSV file as rows of cells (the header is row 0); throws ReportError if unreadable.
std::vector<std::vector<std::string>> read_csv(const std::string& path);

// The cycle sweep and live check (cycles_systemc.cpp, or cycles_none.cpp
// without SystemC). `available` false: not built with SystemC.
struct CyclePoint {
  int rows = 0, cols = 0, lanes = 0;
  double bandwidth = 0;
  int64_t m = 0, n = 0, k = 0;
  uint64_t cycles = 0, macs = 0, peak = 0, stall_operand = 0, stall_output = 0, stall_pipeline = 0;
  double utilization = 0;
  bool formula_applies = false;
  uint64_t formula_cycles = 0;
  uint64_t compared = 0, mismatches = 0;
};
struct LiveCheck {
  std::string what;
  uint64_t gemms = 0, compared = 0, mismatches = 0;
};
struct CycleResults {
  bool available = false;
  std::vector<CyclePoint> sweep;
  std::vector<LiveCheck> live;
};
CycleResults run_cycle_sweep(uint64_t seed, const std::function<void(const std::string&)>& progress);

// Rendering (render.cpp). run_gnuplot writes out_dir/plots/<id>.gp, runs it in
// out_dir (data paths are relative to it) and returns the SVG's <svg> element;
// throws ReportError when gnuplot fails.
std::string run_gnuplot(const Figure& fig, const std::string& out_dir, const std::string& gnuplot);
std::string html_escape(const std::string& s);
// What the page says about its own making; the rest of the page (the title, the lead
// paragraph) is in templates/page.mustache.
struct PageMeta {
  std::string command;
  std::string generated;
};
std::string render_page(const PageMeta& meta, const std::vector<Section>& sections,
                        const std::vector<std::vector<std::string>>& svgs);

}  // namespace nibble::report
