#include "nibble/train/markup.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace nibble::train {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool is_blank(std::string_view s) { return trim(s).empty(); }

// Columns of leading whitespace (a tab counts to the next multiple of 8).
size_t indent_of(std::string_view s) {
  size_t col = 0;
  for (char c : s) {
    if (c == ' ') {
      ++col;
    } else if (c == '\t') {
      col = (col / 8 + 1) * 8;
    } else {
      break;
    }
  }
  return col;
}

// A line of one repeated punctuation character (3 or more): a section adornment.
bool is_adornment(std::string_view t) {
  if (t.size() < 3) return false;
  static constexpr std::string_view kChars = "=-~^\"'`#*+_:.<>";
  if (kChars.find(t[0]) == std::string_view::npos) return false;
  return std::all_of(t.begin(), t.end(), [&](char c) { return c == t[0]; });
}

// A table border: only '=', '-', '+', '|', ':' and spaces, with at least one '=' or '-'.
bool is_table_border(std::string_view t) {
  if (t.size() < 3) return false;
  bool rule = false;
  for (char c : t) {
    if (c == '=' || c == '-') {
      rule = true;
    } else if (c != '+' && c != '|' && c != ' ' && c != ':') {
      return false;
    }
  }
  return rule;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x110000) {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ---------------------------------------------------------------- reStructuredText

// Directives whose body is prose (admonitions, version notes, object descriptions).
bool rst_body_is_prose(std::string_view name) {
  static constexpr std::array<std::string_view, 26> kProse = {
      "note",    "warning",        "attention", "caution",  "danger",    "error",     "hint",
      "important", "tip",          "admonition", "seealso", "deprecated", "versionadded",
      "versionchanged", "topic",   "sidebar",   "epigraph", "highlights", "pull-quote", "rubric",
      "function", "class",         "method",    "data",     "attribute",  "describe"};
  if (std::find(kProse.begin(), kProse.end(), name) != kProse.end()) return true;
  return name.find(':') != std::string_view::npos;  // domain objects: c:function, py:method, ...
}

// Directives whose inline argument is prose (".. note:: Text").
bool rst_argument_is_prose(std::string_view name) {
  static constexpr std::array<std::string_view, 14> kArg = {
      "note", "warning", "attention", "caution", "danger", "error", "hint", "important", "tip",
      "admonition", "seealso", "deprecated", "topic", "rubric"};
  return std::find(kArg.begin(), kArg.end(), name) != kArg.end();
}

// The inside of a `...` span: "title <target>" -> title; a leading '~' or '!' dropped.
std::string_view rst_span_text(std::string_view inner) {
  if (!inner.empty() && (inner[0] == '~' || inner[0] == '!')) inner.remove_prefix(1);
  if (ends_with(inner, ">")) {
    const size_t lt = inner.rfind('<');
    if (lt != std::string_view::npos && lt > 0) return trim(inner.substr(0, lt));
  }
  return inner;
}

bool is_role_char(char c) { return is_alnum(c) || c == ':' || c == '-' || c == '_' || c == '+' || c == '.'; }

// '*' and '**' around words, removed where they open and close emphasis.
std::string rst_strip_emphasis(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '*') {
      const size_t run = (i + 1 < s.size() && s[i + 1] == '*') ? 2 : 1;
      const bool opens = (i == 0 || !is_alnum(s[i - 1])) && i + run < s.size() && !is_space(s[i + run]) &&
                         s[i + run] != '*';
      if (opens) {
        const std::string marker(run, '*');
        const size_t close = s.find(marker, i + run + 1);
        if (close != std::string::npos && !is_space(s[close - 1]) &&
            (close + run >= s.size() || !is_alnum(s[close + run]))) {
          out.append(s, i + run, close - (i + run));
          i = close + run;
          continue;
        }
      }
    }
    out += s[i++];
  }
  return out;
}

std::string rst_inline(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '`' && i + 1 < s.size() && s[i + 1] == '`') {  // ``literal``
      const size_t close = s.find("``", i + 2);
      if (close != std::string_view::npos) {
        out.append(s.substr(i + 2, close - i - 2));
        i = close + 2;
        continue;
      }
    } else if (c == '`') {  // `text`, `text <url>`_, `text`__
      const size_t close = s.find('`', i + 1);
      if (close != std::string_view::npos) {
        out.append(rst_span_text(s.substr(i + 1, close - i - 1)));
        i = close + 1;
        while (i < s.size() && s[i] == '_') ++i;
        continue;
      }
    } else if (c == ':' && (i == 0 || !is_alnum(s[i - 1]))) {  // :role:`text`
      size_t j = i + 1;
      while (j < s.size() && is_role_char(s[j]) && !(s[j] == ':' && j + 1 < s.size() && s[j + 1] == '`')) ++j;
      if (j > i + 1 && j + 1 < s.size() && s[j] == ':' && s[j + 1] == '`') {
        const size_t close = s.find('`', j + 2);
        if (close != std::string_view::npos) {
          out.append(rst_span_text(s.substr(j + 2, close - j - 2)));
          i = close + 1;
          continue;
        }
      }
    } else if (c == '[') {  // footnote and citation references: [1]_ [#x]_ [CIT]_
      const size_t close = s.find("]_", i + 1);
      if (close != std::string_view::npos && close - i < 32 &&
          s.substr(i + 1, close - i - 1).find_first_of(" []") == std::string_view::npos) {
        i = close + 2;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return rst_strip_emphasis(out);
}

// ---------------------------------------------------------------- POD

std::string pod_entity(std::string_view name) {
  if (name == "lt") return "<";
  if (name == "gt") return ">";
  if (name == "verbar") return "|";
  if (name == "sol") return "/";
  if (name == "quot") return "\"";
  if (name == "amp") return "&";
  if (name == "apos") return "'";
  if (name == "nbsp") return " ";
  std::string out;
  if (!name.empty() && name.size() <= 7 &&
      std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    append_utf8(out, static_cast<uint32_t>(std::stoul(std::string(name))));
  }
  return out;
}

std::string pod_codes(std::string_view s);

// The code letter at s[0], its '<' at s[1]: returns the expansion and sets `used`.
std::string pod_one_code(std::string_view s, size_t* used) {
  const char code = s[0];
  size_t n = 0;
  while (1 + n < s.size() && s[1 + n] == '<') ++n;
  std::string_view inner;
  if (n >= 2 && 1 + n < s.size() && is_space(s[1 + n])) {  // C<< text >>
    const std::string closer = " " + std::string(n, '>');
    const size_t close = s.find(closer, 1 + n);
    if (close == std::string_view::npos) {
      *used = 1;
      return std::string(1, code);
    }
    inner = trim(s.substr(1 + n, close - (1 + n)));
    *used = close + closer.size();
  } else {  // C<text>, nested codes balance their own brackets
    int depth = 1;
    size_t j = 2;
    for (; j < s.size(); ++j) {
      if (s[j] == '<' && j > 0 && s[j - 1] >= 'A' && s[j - 1] <= 'Z') {
        ++depth;
      } else if (s[j] == '>' && --depth == 0) {
        break;
      }
    }
    if (j >= s.size()) {
      *used = 1;
      return std::string(1, code);
    }
    inner = s.substr(2, j - 2);
    *used = j + 1;
  }
  switch (code) {
    case 'X':
    case 'Z':
      return "";
    case 'E':
      return pod_entity(inner);
    case 'L': {
      const size_t bar = inner.find('|');
      if (bar != std::string_view::npos) return pod_codes(inner.substr(0, bar));
      std::string t = pod_codes(inner);
      t.erase(std::remove(t.begin(), t.end(), '"'), t.end());
      return t;
    }
    default:
      return pod_codes(inner);
  }
}

std::string pod_codes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] >= 'A' && s[i] <= 'Z' && i + 1 < s.size() && s[i + 1] == '<' &&
        std::string_view("BCEFILSXZ").find(s[i]) != std::string_view::npos) {
      size_t used = 0;
      out += pod_one_code(s.substr(i), &used);
      i += used;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// ---------------------------------------------------------------- HTML

bool html_block(std::string_view tag) {
  static constexpr std::array<std::string_view, 30> kBlock = {
      "p",  "div", "br",  "li",  "ul", "ol", "dl", "dt", "dd", "tr", "table", "h1", "h2", "h3", "h4",
      "h5", "h6",  "blockquote", "section", "article", "hr", "title", "caption", "figure", "figcaption",
      "header", "footer", "main", "aside", "tbody"};
  return std::find(kBlock.begin(), kBlock.end(), tag) != kBlock.end();
}

bool html_void(std::string_view tag) {
  static constexpr std::array<std::string_view, 10> kVoid = {"br", "img", "hr", "meta", "link",
                                                              "input", "col", "area", "base", "wbr"};
  return std::find(kVoid.begin(), kVoid.end(), tag) != kVoid.end();
}

// The value of attribute `name` in a tag's attribute text, or empty.
std::string html_attribute(std::string_view attrs, std::string_view name) {
  size_t pos = 0;
  while ((pos = attrs.find(name, pos)) != std::string_view::npos) {
    const bool word_start = pos == 0 || is_space(attrs[pos - 1]);
    size_t j = pos + name.size();
    while (j < attrs.size() && attrs[j] == ' ') ++j;
    if (word_start && j < attrs.size() && attrs[j] == '=') {
      ++j;
      while (j < attrs.size() && attrs[j] == ' ') ++j;
      if (j < attrs.size() && (attrs[j] == '"' || attrs[j] == '\'')) {
        const size_t close = attrs.find(attrs[j], j + 1);
        if (close != std::string_view::npos) return std::string(attrs.substr(j + 1, close - j - 1));
      }
      size_t e = j;
      while (e < attrs.size() && !is_space(attrs[e]) && attrs[e] != '>') ++e;
      return std::string(attrs.substr(j, e - j));
    }
    pos += name.size();
  }
  return "";
}

bool has_word(const std::string& list, std::string_view word) {
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && is_space(list[i])) ++i;
    size_t e = i;
    while (e < list.size() && !is_space(list[e])) ++e;
    if (std::string_view(list).substr(i, e - i) == word) return true;
    i = e;
  }
  return false;
}

bool html_dropped(std::string_view tag, std::string_view attrs) {
  static constexpr std::array<std::string_view, 7> kTags = {"head", "script", "style", "pre",
                                                             "svg", "textarea", "noscript"};
  if (std::find(kTags.begin(), kTags.end(), tag) != kTags.end()) return true;
  static constexpr std::array<std::string_view, 15> kClasses = {
      "sphinxsidebar", "sphinxsidebarwrapper", "related", "nav", "navheader", "navfooter", "headerlink", "footer",
      "highlight", "toc", "nosearch", "menu", "searchmenu", "tagline", "imgcontainer"};
  const std::string cls = html_attribute(attrs, "class");
  for (auto c : kClasses) {
    if (has_word(cls, c)) return true;
  }
  static constexpr std::array<std::string_view, 6> kIds = {"hd", "ft", "sidebar", "searchbox", "global-nav",
                                                           "footer"};
  const std::string id = html_attribute(attrs, "id");
  return std::find(kIds.begin(), kIds.end(), id) != kIds.end();
}

// A character reference at s[0] == '&': appends its text, returns the bytes used.
size_t html_entity(std::string_view s, std::string& out) {
  const size_t semi = s.find(';');
  if (semi == std::string_view::npos || semi > 12) {
    out += '&';
    return 1;
  }
  const std::string_view name = s.substr(1, semi - 1);
  if (!name.empty() && name[0] == '#') {
    uint32_t cp = 0;
    const bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
    const std::string_view digits = name.substr(hex ? 2 : 1);
    bool ok = !digits.empty();
    for (char c : digits) {
      const int v = (c >= '0' && c <= '9') ? c - '0'
                    : (hex && c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (hex && c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                    : -1;
      if (v < 0 || cp > 0x10FFFF) {
        ok = false;
        break;
      }
      cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
    }
    if (ok) {
      append_utf8(out, cp == 0xA0 ? 0x20 : cp);
      return semi + 1;
    }
    out += '&';
    return 1;
  }
  static constexpr std::array<std::pair<std::string_view, uint32_t>, 22> kNamed = {{
      {"amp", '&'},      {"lt", '<'},       {"gt", '>'},       {"quot", '"'},     {"apos", '\''},
      {"nbsp", ' '},     {"mdash", 0x2014}, {"ndash", 0x2013}, {"hellip", 0x2026}, {"lsquo", 0x2018},
      {"rsquo", 0x2019}, {"ldquo", 0x201C}, {"rdquo", 0x201D}, {"copy", 0xA9},    {"reg", 0xAE},
      {"trade", 0x2122}, {"times", 0xD7},   {"para", 0xB6},    {"sect", 0xA7},    {"laquo", 0xAB},
      {"raquo", 0xBB},   {"deg", 0xB0},
  }};
  for (const auto& [n, cp] : kNamed) {
    if (n == name) {
      append_utf8(out, cp);
      return semi + 1;
    }
  }
  out += '&';
  return 1;
}

// ---------------------------------------------------------------- AsciiDoc

// A block delimiter: 4 or more of one of - . = * _ + / on a line of its own.
char asciidoc_delimiter(std::string_view t) {
  if (t.size() < 4 || std::string_view("-.=*_+/").find(t[0]) == std::string_view::npos) return 0;
  return std::all_of(t.begin(), t.end(), [&](char c) { return c == t[0]; }) ? t[0] : 0;
}

bool asciidoc_macro_line(std::string_view t) {  // include::x[], ifdef::y[], endif::z[]
  const size_t colons = t.find("::");
  if (colons == std::string_view::npos || colons == 0 || !ends_with(t, "]")) return false;
  return std::all_of(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(colons),
                     [](char c) { return is_alpha(c) || c == '-'; });
}

std::string asciidoc_inline(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (starts_with(s.substr(i), "linkgit:")) {
      const size_t lb = s.find('[', i);
      const size_t rb = lb == std::string_view::npos ? lb : s.find(']', lb);
      if (rb != std::string_view::npos && s.substr(i, lb - i).find(' ') == std::string_view::npos) {
        out.append(s.substr(i + 8, lb - i - 8));
        out += '(';
        out.append(s.substr(lb + 1, rb - lb - 1));
        out += ')';
        i = rb + 1;
        continue;
      }
    } else if (starts_with(s.substr(i), "{litdd}")) {
      out += "--";
      i += 7;
      continue;
    } else if (s[i] == '`') {
      ++i;
      continue;
    }
    out += s[i++];
  }
  return out;
}

}  // namespace

std::string strip_rst(std::string_view text) {
  const auto lines = split_lines(text);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  // Drops the lines after `i` that are blank or indented deeper than `base`.
  auto skip_body = [&](size_t base) {
    while (i < lines.size() && (is_blank(lines[i]) || indent_of(lines[i]) > base)) ++i;
  };
  while (i < lines.size()) {
    const std::string_view line = lines[i];
    const std::string_view t = trim(line);
    const size_t ind = indent_of(line);
    ++i;
    if (t.empty()) {
      out += '\n';
      continue;
    }
    if (starts_with(t, "..") && (t.size() == 2 || t[2] == ' ')) {
      const std::string_view rest = trim(t.substr(2));
      const size_t dc = rest.find("::");
      const std::string_view name = dc == std::string_view::npos ? std::string_view() : rest.substr(0, dc);
      const bool directive = dc != std::string_view::npos && !name.empty() &&
                             name.find(' ') == std::string_view::npos && name[0] != '_' && name[0] != '|';
      if (directive && rst_body_is_prose(name)) {
        if (rst_argument_is_prose(name)) out += rst_inline(trim(rest.substr(dc + 2))) + "\n";
        while (i < lines.size() && !is_blank(lines[i]) && indent_of(lines[i]) > ind &&
               starts_with(trim(lines[i]), ":")) {
          ++i;  // the directive's options
        }
        continue;
      }
      skip_body(ind);
      out += '\n';
      continue;
    }
    if (is_adornment(t) || is_table_border(t)) continue;
    std::string kept(t);
    bool literal = false;
    if (kept == "::") {
      kept.clear();
      literal = true;
    } else if (ends_with(kept, "::")) {
      kept.pop_back();
      if (ends_with(kept, " :")) kept.resize(kept.size() - 2);
      literal = true;
    }
    if (kept.size() >= 2 && kept.front() == '|' && kept.back() == '|') {
      std::replace(kept.begin(), kept.end(), '|', ' ');
    } else if (starts_with(kept, "| ")) {
      kept.erase(0, 2);  // line blocks
    }
    out += rst_inline(kept) + "\n";
    if (literal) {
      while (i < lines.size() && !is_blank(lines[i])) out += rst_inline(trim(lines[i++])) + "\n";
      size_t j = i;
      while (j < lines.size() && is_blank(lines[j])) ++j;
      if (j < lines.size() && indent_of(lines[j]) > ind) {
        skip_body(ind);
        out += '\n';
      }
    }
  }
  return out;
}

std::string strip_pod(std::string_view text) {
  // Paragraphs: runs of non-blank lines.
  const auto lines = split_lines(text);
  std::string out;
  out.reserve(text.size());
  std::string skip_until;  // "=end X" while inside =begin X
  bool in_code = false;    // after =cut, until the next command
  size_t i = 0;
  while (i < lines.size()) {
    if (is_blank(lines[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < lines.size() && !is_blank(lines[i])) ++i;
    const std::string_view first = lines[start];
    if (!first.empty() && first[0] == '=' && first.size() > 1 && is_alpha(first[1])) {
      const std::string_view cmd_line = trim(first);
      const size_t sp = cmd_line.find(' ');
      const std::string_view cmd = cmd_line.substr(1, sp == std::string_view::npos ? sp : sp - 1);
      const std::string_view arg = sp == std::string_view::npos ? std::string_view() : trim(cmd_line.substr(sp));
      in_code = cmd == "cut";
      if (!skip_until.empty()) {
        if (cmd == "end" && arg == skip_until) skip_until.clear();
        continue;
      }
      if (cmd == "begin") {
        skip_until = std::string(arg.substr(0, arg.find(' ')));
        if (skip_until.empty()) skip_until = " ";
        continue;
      }
      if (starts_with(cmd, "head") || cmd == "item") {
        std::string para(arg);
        for (size_t k = start + 1; k < i; ++k) para += " " + std::string(trim(lines[k]));
        if (cmd == "item") {
          if (starts_with(para, "*")) para.erase(0, 1);
          size_t d = 0;
          while (d < para.size() && para[d] >= '0' && para[d] <= '9') ++d;
          if (d > 0 && d < para.size() && para[d] == '.') para.erase(0, d + 1);
        }
        const std::string body(trim(pod_codes(para)));
        if (!body.empty()) out += body + "\n\n";
      }
      continue;  // =over, =back, =pod, =cut, =encoding, =for and unknown commands
    }
    if (!skip_until.empty() || in_code) continue;
    if (is_space(first[0])) continue;  // verbatim paragraph
    for (size_t k = start; k < i; ++k) out += pod_codes(lines[k]) + "\n";
    out += '\n';
  }
  return out;
}

std::string strip_html(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 2);
  std::string skip_tag;  // the element being dropped, with its nesting depth
  int skip_depth = 0;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '<') {
      if (starts_with(text.substr(i), "<!--")) {
        const size_t e = text.find("-->", i + 4);
        i = e == std::string_view::npos ? text.size() : e + 3;
        continue;
      }
      // The tag: '>' outside quotes ends it.
      size_t j = i + 1;
      char quote = 0;
      for (; j < text.size(); ++j) {
        if (quote != 0) {
          if (text[j] == quote) quote = 0;
        } else if (text[j] == '"' || text[j] == '\'') {
          quote = text[j];
        } else if (text[j] == '>') {
          break;
        }
      }
      const std::string_view tag_text = text.substr(i + 1, j - i - 1);
      i = j < text.size() ? j + 1 : text.size();
      if (tag_text.empty() || tag_text[0] == '!' || tag_text[0] == '?') continue;
      const bool closing = tag_text[0] == '/';
      size_t n = closing ? 1 : 0;
      std::string name;
      while (n < tag_text.size() && (is_alnum(tag_text[n]) || tag_text[n] == '-')) {
        name += static_cast<char>(std::tolower(static_cast<unsigned char>(tag_text[n])));
        ++n;
      }
      const bool self_closing = ends_with(tag_text, "/") || html_void(name);
      if (skip_depth > 0) {
        if (name == skip_tag && !self_closing) skip_depth += closing ? -1 : 1;
        continue;
      }
      if (!closing && !self_closing && html_dropped(name, tag_text.substr(n))) {
        skip_tag = name;
        skip_depth = 1;
        continue;
      }
      if (html_block(name)) {
        out += '\n';
      } else if (name == "td" || name == "th") {
        out += ' ';
      }
      continue;
    }
    if (skip_depth > 0) {
      ++i;
      continue;
    }
    if (c == '&') {
      i += html_entity(text.substr(i), out);
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

std::string strip_asciidoc(std::string_view text) {
  const auto lines = split_lines(text);
  std::string out;
  out.reserve(text.size());
  char dropping = 0;  // the delimiter of the listing/literal/passthrough/comment block being dropped
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view t = trim(lines[i]);
    const char delim = asciidoc_delimiter(t);
    if (dropping != 0) {
      if (delim == dropping) dropping = 0;
      continue;
    }
    if (delim != 0) {
      // A title underline: as long as the title above it, give or take two.
      const bool underline = i > 0 && !is_blank(lines[i - 1]) &&
                             trim(lines[i - 1]).size() + 2 >= t.size() && t.size() + 2 >= trim(lines[i - 1]).size();
      if (!underline && (delim == '-' || delim == '.' || delim == '+' || delim == '/')) dropping = delim;
      continue;
    }
    if (starts_with(t, "//")) continue;
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') continue;
    if (t.size() >= 2 && t[0] == ':' && t.find(':', 1) != std::string_view::npos &&
        std::all_of(t.begin() + 1, t.begin() + static_cast<std::ptrdiff_t>(t.find(':', 1)),
                    [](char ch) { return is_alnum(ch) || ch == '-' || ch == '_'; })) {
      continue;  // attribute entry
    }
    if (asciidoc_macro_line(t)) continue;
    if (t == "+") continue;  // list continuation
    out += asciidoc_inline(t) + "\n";
  }
  return out;
}

std::string strip_vim_help(std::string_view text) {
  const auto lines = split_lines(text);
  std::string out;
  out.reserve(text.size());
  bool example = false;
  for (const std::string_view line : lines) {
    std::string_view t = trim(line);
    if (example) {
      if (t.empty() || is_space(line[0])) continue;
      example = false;
      if (t[0] == '<') t = trim(t.substr(1));
    }
    if (t == ">" || ends_with(t, " >")) {
      example = true;
      t = trim(t.substr(0, t.size() - 1));
    }
    if (ends_with(t, " ~")) t = trim(t.substr(0, t.size() - 2));
    if (is_adornment(t) || starts_with(t, "vim:")) continue;
    // Word by word: *tag* vanishes, |link| -> link.
    std::string kept;
    size_t i = 0;
    while (i < t.size()) {
      if (is_space(t[i])) {
        kept += ' ';
        ++i;
        continue;
      }
      size_t e = i;
      while (e < t.size() && !is_space(t[e])) ++e;
      std::string_view w = t.substr(i, e - i);
      i = e;
      if (w.size() > 2 && w.front() == '*' && w.back() == '*') continue;
      const size_t bar = w.find('|');
      if (bar != std::string_view::npos) {
        const size_t close = w.find('|', bar + 1);
        if (close != std::string_view::npos && close > bar + 1) {
          kept.append(w.substr(0, bar));
          kept.append(w.substr(bar + 1, close - bar - 1));
          kept.append(w.substr(close + 1));
          continue;
        }
      }
      kept.append(w);
    }
    out += kept + "\n";
  }
  return out;
}

std::string strip_dict_entry(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const std::string_view line : split_lines(text)) {
    const std::string_view t = trim(line);
    if (t.size() >= 2 && t.size() < 40 && t.front() == '[' && t.back() == ']' &&
        t.find('[', 1) == std::string_view::npos) {
      continue;  // [1913 Webster], [PJC], [WordNet 1.5]
    }
    size_t i = 0;
    while (i < line.size()) {
      const char c = line[i];
      if (c == '\\') {  // GCIDE pronunciation \Af*fect"\ (within the line)
        const size_t close = line.find('\\', i + 1);
        if (close != std::string_view::npos && close - i < 80) {
          i = close + 1;
          continue;
        }
      }
      if (c != '{' && c != '}') out += c;
      ++i;
    }
    out += '\n';
  }
  return out;
}

std::string normalize_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_blank = false;
  for (const std::string_view raw : split_lines(text)) {
    std::string line;
    line.reserve(raw.size());
    bool space = false;
    for (char c : raw) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
        space = true;
        continue;
      }
      if (u < 0x20 || u == 0x7F) continue;  // CR and other control bytes
      if (space && !line.empty()) line += ' ';
      space = false;
      line += c;
    }
    if (line.empty()) {
      pending_blank = !out.empty();
      continue;
    }
    if (pending_blank) out += '\n';
    pending_blank = false;
    out += line;
    out += '\n';
  }
  return out;
}

ProseStats prose_stats(std::string_view text) {
  static constexpr std::array<std::string_view, 20> kFunction = {
      "the", "of", "and", "to", "a", "in", "is", "that", "for", "it",
      "as",  "with", "be", "on", "this", "are", "by", "or", "not", "an"};
  ProseStats s;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    if (!is_alpha(c)) {
      ++s.non_space;
      ++i;
      continue;
    }
    size_t e = i;
    while (e < text.size() && is_alpha(text[e])) ++e;
    const size_t len = e - i;
    s.non_space += len;
    s.ascii_letters += len;
    ++s.words;
    if (len <= 4) {
      char w[5] = {};
      for (size_t k = 0; k < len; ++k) w[k] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i + k])));
      if (std::find(kFunction.begin(), kFunction.end(), std::string_view(w, len)) != kFunction.end()) {
        ++s.function_words;
      }
    }
    i = e;
  }
  return s;
}

bool is_english_prose(const ProseStats& s) {
  if (s.words < kMinWords) return false;
  if (static_cast<double>(s.ascii_letters) < kMinLetterFraction * static_cast<double>(s.non_space)) return false;
  if (s.words < kFunctionTestWords) return true;
  return static_cast<double>(s.function_words) >= kMinFunctionFraction * static_cast<double>(s.words);
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace nibble::train
