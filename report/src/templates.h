// The report's prose and page structure are Mustache templates (report/templates/*.mustache,
// rendered with kainjow's mustache.hpp); the sections compute the values they are filled in
// with. The templates are compiled into the library (CMake writes them into a generated
// source), so a report never depends on finding files beside the executable.
//
// A section's template holds its prose as named fragments, each a Mustache section:
//   {{#grids_caption}}Every code's value divided by ... ({{largest}}){{/grids_caption}}
// prose("formats", "grids_caption", values) renders that file with only `grids_caption`
// set (to `values`), so only that fragment's text comes out.
//
// Escaping is the page's own: {{x}} is html_escape(x) (report.h), {{{x}}} is x as it is
// (for text that is HTML already: fragments rendered before, SVG).
#pragma once

#include <kainjow/mustache.hpp>

#include <string>
#include <vector>

namespace nibble::report::detail {

using TemplateData = kainjow::mustache::data;
using TemplateValues = kainjow::mustache::object;

// Renders template `name` (report/templates/<name>.mustache) with `data`. Throws
// ReportError if there is no such template or it does not parse.
std::string render_template(const std::string& name, const TemplateData& data);

// One fragment of template `name`, its lines joined into one (HTML reads a line break as a
// space). Throws
// ReportError if the template has no such fragment.
std::string prose(const std::string& name, const std::string& fragment, const TemplateValues& values = {});

// A Mustache list of strings, for {{#list}}{{.}}{{/list}}.
TemplateData template_list(const std::vector<std::string>& items);
// A list of {name, first}, for a separated list: {{#list}}{{^first}}, {{/first}}{{name}}{{/list}}.
TemplateData template_series(const std::vector<std::string>& names);

}  // namespace nibble::report::detail
