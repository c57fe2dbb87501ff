// write_report: reads the recorded results, builds the sections (section_*.cpp, in
// page order), plots their figures and renders the page and its index.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "nibble/report/report.h"
#include "sections.h"

namespace nibble::report {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// The page's sections, in order; each reads what the ones before it left in the context.
constexpr detail::SectionBuilder kSections[] = {
    detail::formats_section,  detail::compounding_section,  detail::training_section, detail::hardware_section,
    detail::tradeoff_section, detail::verification_section, detail::cycles_section,   detail::kernels_section,
    detail::workload_section,
};

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

}  // namespace

void check_output_dir(const std::string& out_dir) {
  std::error_code ec;
  // Never scatter files into an unrelated directory (e.g. a source folder).
  if (fs::is_directory(out_dir, ec) && !fs::is_empty(out_dir, ec) && !fs::exists(fs::path(out_dir) / "report.json")) {
    throw ReportError(fmt::format("'{}' is a non-empty directory that holds no earlier report (no report.json); "
                                  "choose a new or empty directory",
                                  out_dir));
  }
}

ReportSummary write_report(const ReportOptions& o) {
  const auto t0 = Clock::now();
  if (o.out_dir.empty()) throw ReportError("no output directory");
  std::error_code ec;
  // (Checked by the caller before its training sweep wrote into out_dir/training.)
  if (!o.training_fresh) check_output_dir(o.out_dir);
  fs::create_directories(o.out_dir, ec);
  if (ec || !fs::is_directory(o.out_dir)) throw ReportError(fmt::format("cannot create directory '{}'", o.out_dir));
  const detail::Writer w{fs::path(o.out_dir)};
  auto step = [&](const std::string& m) {
    if (o.progress) {
      o.progress(fmt::format("[{:5.1f} s] {}", std::chrono::duration<double>(Clock::now() - t0).count(), m));
    }
  };
  ReportOptions oo = o;
  oo.progress = step;

  ReportSummary summary;
  step("reading recorded results in " + o.results_dir);
  detail::ReportContext ctx{oo, w};
  ctx.training = read_training(detail::training_dir(o));
  ctx.study = read_study((fs::path(o.results_dir) / "training").string());
  ctx.area = read_area(o.results_dir);
  ctx.kernels = read_kernels(o.results_dir);
  std::vector<Section> sections;
  for (const detail::SectionBuilder build : kSections) sections.push_back(build(ctx));
  ctx.quant["equivalent_command"] = detail::equivalent_quant_command(o);
  w.json("data/quant.json", ctx.quant);

  std::vector<std::vector<std::string>> svgs;
  const std::string generated = now_utc();
  nlohmann::json index = {{"command", o.command_line}, {"generated", generated}, {"seed", o.seed}};
  index["sections"] = nlohmann::json::array();
  for (const Section& s : sections) {
    std::vector<std::string> v;
    nlohmann::json js = {{"id", s.id}, {"title", s.title}, {"source", s.source}};
    js["figures"] = nlohmann::json::array();
    js["tables"] = nlohmann::json::array();
    for (const Figure& f : s.figures) {
      step("plotting " + f.id);
      v.push_back(run_gnuplot(f, o.out_dir, o.gnuplot));
      js["figures"].push_back({{"id", f.id}, {"title", f.title}, {"data", f.data_file()},
                               {"svg", "figures/" + f.id + ".svg"}, {"script", "plots/" + f.id + ".gp"}});
      ++summary.figures;
    }
    for (const Table& t : s.tables) {
      js["tables"].push_back({{"id", t.id}, {"rows", t.rows.size()}});
      ++summary.tables;
    }
    svgs.push_back(std::move(v));
    index["sections"].push_back(js);
    summary.notes.push_back(s.title + ": " + s.source);
  }
  index["data_files"] = w.data_files();

  PageMeta meta;
  meta.command = o.command_line;
  meta.generated = generated;
  const std::string html = render_page(meta, sections, svgs);
  w.text("index.html", html);
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  index["seconds"] = summary.seconds;
  w.json("report.json", index);
  summary.html_path = (fs::path(o.out_dir) / "index.html").string();
  step(fmt::format("wrote {} ({} figures, {} tables)", summary.html_path, summary.figures, summary.tables));
  return summary;
}

}  // namespace nibble::report
