// The report's sections (one file each, section_*.cpp) behind one interface: a
// section reads the report's context -- its options, the writer of its data files,
// the recorded results, and what earlier sections passed on -- and returns the
// Section the page renders. write_report (report.cpp) calls them in page order.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nibble/analysis/quant_matrix.h"
#include "nibble/formats.h"
#include "nibble/io/csv.h"
#include "nibble/report/report.h"
#include "templates.h"

namespace nibble::report::detail {
namespace fs = std::filesystem;

inline std::string training_dir(const ReportOptions& o) {
  return o.training_dir.empty() ? (fs::path(o.results_dir) / "training").string() : o.training_dir;
}

// The quantization experiments, written as the `nibble quant` command that
// reproduces them (the test runs it and compares the numbers).
constexpr const char* kScalesList = "nvfp4,fp32";
constexpr int kChainLayers = 8;
constexpr int64_t kChainWidth = 256, kChainBatch = 64;
constexpr int64_t kRows = 256, kCols = 256;

inline std::string num(double v, int digits = 4) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}g}", v, digits);
}
inline std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return num(v);
  return fmt::format("{:.{}f}", v, decimals);
}

class Writer {
 public:
  explicit Writer(fs::path out) : out_(std::move(out)) { fs::create_directories(out_ / "data"); }
  void text(const std::string& rel, const std::string& content) const {
    std::ofstream f(out_ / rel, std::ios::binary | std::ios::trunc);
    f << content;
    f.close();
    if (!f) throw ReportError(fmt::format("cannot write {}", (out_ / rel).string()));
    if (rel.rfind("data/", 0) == 0) data_files_.insert(rel);
  }
  void json(const std::string& rel, const nlohmann::json& j) const { text(rel, j.dump(2) + "\n"); }
  const fs::path& dir() const { return out_; }
  // Every file written under data/ so far, in name order.
  const std::set<std::string>& data_files() const { return data_files_; }

 private:
  fs::path out_;
  mutable std::set<std::string> data_files_;
};

inline std::string label(Format f, int rht) {
  return std::string(name(f)) + (rht ? fmt::format(" rht{}", rht) : std::string(" no-rht"));
}

// gnuplot: one clustered-histogram figure of column `first`.. of a wide CSV.
inline std::string histogram_script(const std::string& csv, int series, const std::string& ylabel) {
  return fmt::format(
      "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
      "set ylabel '{}'\nset xtics rotate by -20\nset key autotitle columnhead\n"
      "plot for [i=2:{}] 'data/{}.csv' using i:xtic(1)\n",
      ylabel, series + 1, csv);
}

// A section whose recorded results are missing: why (`problem`), and where they come from (`how_html`).
inline void mark_absent(Section& s, const char* key, const std::string& what, const std::string& problem,
                        const std::string& how_html) {
  s.source = prose("common", "absent_source", {{"what", what}});
  s.notes_html =
      prose("common", "absent_note", {{"key", key}, {"what", what}, {"problem", problem}, {"how_html", how_html}}) + "\n";
}

// One recipe's loss gap to BF16, from the training section to the trade-off.
struct RecipeGap {
  std::string recipe;
  double mean = 0, std = 0;
};

// What the sections share, filled in page order: the recorded results are read
// before the first section; later fields are written by the section named.
struct ReportContext {
  ReportContext(const ReportOptions& o, const Writer& w) : options(o), writer(w) {}
  const ReportOptions& options;  // with the report's own progress callback
  const Writer& writer;
  TrainingData training;
  StudyData study;
  AreaData area;
  KernelData kernels;
  nlohmann::json quant;  // formats: the `nibble quant` results (compounding adds "chain")
  std::vector<RecipeGap> gaps;         // training
  std::optional<CycleResults> cycles;  // verification (run once; cycles reads it)
};

using SectionBuilder = Section (*)(ReportContext&);

Section formats_section(ReportContext& ctx);
Section compounding_section(ReportContext& ctx);
Section training_section(ReportContext& ctx);
Section hardware_section(ReportContext& ctx);
Section tradeoff_section(ReportContext& ctx);
Section verification_section(ReportContext& ctx);
Section cycles_section(ReportContext& ctx);
Section kernels_section(ReportContext& ctx);
Section workload_section(ReportContext& ctx);

// The quantization experiments of sections 1-2, written as the `nibble quant`
// command that reproduces them (the report test runs it and compares).
std::string equivalent_quant_command(const ReportOptions& o);

}  // namespace nibble::report::detail
