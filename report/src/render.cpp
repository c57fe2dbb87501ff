// gnuplot figures (SVG terminal), and the HTML page around them (templates/page.mustache).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "nibble/io/shell.h"
#include "nibble/report/report.h"
#include "templates.h"

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

// Where a section's content came from, from the start of its source line: the page's
// CSS class for it and the group of the lead paragraph that links it.
std::string source_class(const std::string& source) {
  if (source.rfind("recorded", 0) == 0) return "recorded";
  if (source.rfind("absent", 0) == 0) return "absent";
  return "computed";
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
  using detail::TemplateData;
  TemplateData page;
  page.set("generated", meta.generated);
  page.set("command", meta.command);
  const TemplateData empty{TemplateData::type::list};
  std::map<std::string, TemplateData> by_source = {{"computed", empty}, {"recorded", empty}, {"absent", empty}};
  TemplateData list{TemplateData::type::list};
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    const std::string cls = source_class(s.source);
    TemplateData link;
    link.set("id", s.id);
    link.set("name", s.title.substr(0, s.title.find(':')));
    link.set("first", by_source[cls].is_empty_list());
    by_source[cls].push_back(link);

    TemplateData figures{TemplateData::type::list};
    for (size_t f = 0; f < s.figures.size(); ++f) {
      const Figure& fig = s.figures[f];
      TemplateData d;
      d.set("id", fig.id);
      d.set("svg", svgs[i][f]);
      d.set("title", fig.title);
      d.set("caption_html", fig.caption);
      d.set("data", fig.data_file());
      figures.push_back(d);
    }
    TemplateData tables{TemplateData::type::list};
    for (const Table& t : s.tables) {
      TemplateData rows{TemplateData::type::list};
      for (const auto& row : t.rows) {
        TemplateData cells{TemplateData::type::list};
        for (const std::string& c : row) {
          TemplateData cell;
          cell.set("text", c);
          cell.set("numeric", numeric(c));
          cells.push_back(cell);
        }
        TemplateData r;
        r.set("cells", cells);
        rows.push_back(r);
      }
      TemplateData d;
      d.set("id", t.id);
      d.set("caption_html", t.caption);
      d.set("header", detail::template_list(t.header));
      d.set("rows", rows);
      tables.push_back(d);
    }
    TemplateData d;
    d.set("id", s.id);
    d.set("title", s.title);
    d.set("source", s.source);
    d.set("source_class", cls);
    d.set("intro_html", s.intro_html);
    d.set("figures", figures);
    d.set("tables", tables);
    d.set("notes_html", s.notes_html);
    list.push_back(d);
  }
  page.set("sections", list);
  for (const auto& [cls, links] : by_source) page.set(cls, links);
  return detail::render_template("page", page);
}

}  // namespace nibble::report
