// gnuplot figures (SVG terminal) and the HTML page around them.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nibble/io/shell.h"
#include "nibble/report/report.h"

namespace nibble::report {
namespace fs = std::filesystem;
using io::shell_quote;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 1.5em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #bbb; padding-bottom: .2em; margin-top: 2em; }
.source { font-size: .9em; color: #555; background: #f3f3f3; padding: .3em .6em; border-left: 4px solid #888; }
.source.recorded { border-left-color: #c80; } .source.computed { border-left-color: #080; }
.source.absent { border-left-color: #c00; }
figure { margin: 1em 0; } figcaption { font-size: .9em; color: #444; }
table { border-collapse: collapse; font-size: .85em; margin: .6em 0; }
th, td { border: 1px solid #ccc; padding: .15em .5em; text-align: left; vertical-align: top; overflow-wrap: break-word; }
th { background: #eee; } td.n { text-align: right; white-space: nowrap; }
.wide { overflow-x: auto; }
caption { text-align: left; font-size: .9em; color: #444; padding-bottom: .3em; }
.note { color: #555; font-size: .9em; }
code { background: #f3f3f3; padding: 0 .2em; }
nav a { margin-right: 1em; }
)";

// A short cell that reads as a number (right-aligned): 0.99, -0.125, +13.7%, 1.2 ± 0.1, nan.
bool numeric(const std::string& c) {
  if (c.empty() || c.size() > 40 || c == "-") return false;
  if (c == "nan" || c == "inf") return true;
  const char f = c[0];
  const bool starts = (f >= '0' && f <= '9') || ((f == '-' || f == '+' || f == '.') && c.size() > 1 && c[1] >= '0' && c[1] <= '9');
  for (char ch : c) {
    if (((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) && ch != 'e' && ch != 'E' && ch != 'x') return false;
  }
  return starts;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string run_gnuplot(const Figure& fig, const std::string& out_dir, const std::string& gnuplot) {
  const fs::path dir(out_dir);
  fs::create_directories(dir / "plots");
  fs::create_directories(dir / "figures");
  const std::string script_rel = "plots/" + fig.id + ".gp";
  const std::string svg_rel = "figures/" + fig.id + ".svg";
  {
    std::ofstream gp(dir / script_rel);
    gp << "# " << fig.title << "\n# Run from the report directory: gnuplot " << script_rel << "\n"
       << "set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'\n"
       << "set output '" << svg_rel << "'\n"
       << "set datafile separator ','\nset grid\nset key outside right top\n"
       << fig.script << "\n";
    if (!gp) throw ReportError(fmt::format("cannot write {}", (dir / script_rel).string()));
  }
  fs::remove(dir / svg_rel);
  const std::string log_rel = "plots/" + fig.id + ".log";
  const std::string cmd = fmt::format("cd {} && {} {} > {} 2>&1", shell_quote(dir.string()), shell_quote(gnuplot),
                                      shell_quote(script_rel), shell_quote(log_rel));
  const int rc = std::system(cmd.c_str());
  const std::string svg = fs::exists(dir / svg_rel) ? slurp(dir / svg_rel) : std::string();
  if (rc != 0 || svg.find("<svg") == std::string::npos) {
    throw ReportError(fmt::format("gnuplot failed on {} (exit {}): {}", (dir / script_rel).string(), rc,
                                  slurp(dir / log_rel)));
  }
  fs::remove(dir / log_rel);
  return svg.substr(svg.find("<svg"));
}

std::string render_page(const PageMeta& meta, const std::vector<Section>& sections,
                        const std::vector<std::vector<std::string>>& svgs) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                  html_escape(meta.title) + "</title>\n<style>" + kStyle + "</style></head>\n<body>\n";
  h += "<h1>" + html_escape(meta.title) + "</h1>\n";
  h += "<p class=\"note\">Generated " + html_escape(meta.generated) + " by <code>" + html_escape(meta.command) +
       "</code>. The data behind every figure and table is in <code>data/</code> beside this file; "
       "<code>plots/*.gp</code> redraw the figures with gnuplot.</p>\n";
  h += meta.lead_html;
  h += "<nav>";
  for (const Section& s : sections) h += "<a href=\"#" + s.id + "\">" + html_escape(s.title) + "</a>";
  h += "</nav>\n";
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    const char* cls = s.source.rfind("recorded", 0) == 0 ? "recorded"
                      : s.source.rfind("absent", 0) == 0 ? "absent"
                                                         : "computed";
    h += fmt::format("<section id=\"{}\" data-section=\"{}\">\n<h2>{}</h2>\n", s.id, s.id, html_escape(s.title));
    h += fmt::format("<p class=\"source {}\" data-source=\"{}\">Source: {}</p>\n", cls, cls, html_escape(s.source));
    h += s.intro_html;
    for (size_t f = 0; f < s.figures.size(); ++f) {
      const Figure& fig = s.figures[f];
      h += fmt::format("<figure data-figure=\"{}\">\n{}\n<figcaption><b>{}</b> {} (data: <code>{}</code>)</figcaption>\n</figure>\n",
                       fig.id, svgs[i][f], html_escape(fig.title), fig.caption, fig.data_file());
    }
    for (const Table& t : s.tables) {
      h += fmt::format("<div class=\"wide\"><table data-table=\"{}\">\n<caption>{}</caption>\n<thead><tr>", t.id, t.caption);
      for (const std::string& c : t.header) h += "<th>" + html_escape(c) + "</th>";
      h += "</tr></thead>\n<tbody>\n";
      for (const auto& row : t.rows) {
        h += "<tr>";
        for (const std::string& c : row) h += (numeric(c) ? "<td class=\"n\">" : "<td>") + html_escape(c) + "</td>";
        h += "</tr>\n";
      }
      h += "</tbody></table></div>\n";
    }
    h += s.notes_html;
    h += "</section>\n";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace nibble::report
