// Training data as byte-level tokens: writing and loading a prepared directory
// (train.bin, val.bin, manifest.json), the Brown corpus on its own (`nibble
// train-data --corpus brown`), and the batches drawn from prepared data. The full
// corpus is built by nibble/train/corpus.h. Torch-free, so CI tests it without
// libtorch.
//
// Brown-only preparation (`nibble train-data --corpus brown`):
//   - documents: the 500 files c[a-r][0-9][0-9] of the package, sorted by name;
//   - text: each whitespace-separated "word/tag" token keeps its word (the part
//     before the last '/'); the quote tokens `` and '' become "; a sentence is
//     its words joined by one space, ending in '\n'; a blank line ends a document;
//   - split: document i (0-based, in name order) is validation when i % 10 == 9
//     (50 documents), training otherwise (450);
//   - files: train.bin and val.bin (the text's bytes: token = byte, vocabulary 256)
//     and manifest.json (sizes, SHA-256, document counts, the rules above).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace nibble::train {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kVocabSize = 256;
inline constexpr int kValidationEvery = 10;  // document i is validation when i % 10 == 9

// The corpus documents (c[a-r][0-9][0-9]) in `dir`, sorted by name. Throws DataError if none.
std::vector<std::filesystem::path> brown_documents(const std::filesystem::path& dir);

// One document's tagged text -> plain text (rules above).
std::string strip_brown_tags(const std::string& tagged);

// Whether document i goes to the validation split.
bool is_validation_document(size_t i);

struct PreparedData {
  std::vector<uint8_t> train;
  std::vector<uint8_t> val;
};

struct PrepareSummary {
  size_t train_documents = 0;
  size_t val_documents = 0;
  size_t train_bytes = 0;
  size_t val_bytes = 0;
  std::string train_sha256;
  std::string val_sha256;
};

// Reads the corpus in `corpus_dir`, writes train.bin, val.bin and manifest.json to `out_dir`.
PrepareSummary prepare_brown(const std::filesystem::path& corpus_dir, const std::filesystem::path& out_dir);

// Creates `dir` if needed and checks that a file can be written in it; DataError if not.
void ensure_writable_dir(const std::filesystem::path& dir);

// Writes train.bin, val.bin and manifest.json into `out_dir`: `manifest` gains a
// "files" entry (path, bytes, SHA-256 of each split). Each file is written under a
// ".partial" name first; then any old manifest.json is removed, the two splits are
// renamed into place and the manifest last -- so an interrupted run leaves no
// manifest that describes files it did not finish.
PrepareSummary write_prepared(const std::filesystem::path& out_dir, const std::string& train, const std::string& val,
                              nlohmann::ordered_json manifest);

// Reads a file, transparently decompressing gzip (and dictzip) data. DataError on failure.
std::string read_text_file(const std::filesystem::path& path);

// Loads a prepared directory; checks the file sizes (and, if verify_hash, the
// SHA-256 digests) against manifest.json. Throws DataError naming the problem.
PreparedData load_prepared(const std::filesystem::path& dir, bool verify_hash = true);

// SHA-256 of a file as lowercase hex (coreutils sha256sum). Throws DataError on failure.
std::string sha256_file(const std::filesystem::path& path);

// Start offsets of the `batch` training windows of step `step`: each window is
// ctx + 1 tokens (inputs and next-token targets) inside [0, n_tokens). Drawn
// with golden's Philox from (seed, step), so the data order depends on the seed
// and the step only -- never on the recipe. Throws DataError if n_tokens <= ctx + 1.
std::vector<int64_t> batch_offsets(int64_t n_tokens, int ctx, int batch, uint64_t seed, int64_t step);

// `count` validation windows of ctx + 1 tokens spread evenly over [0, n_tokens).
std::vector<int64_t> validation_offsets(int64_t n_tokens, int ctx, int count);

}  // namespace nibble::train
