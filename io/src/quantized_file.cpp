// Quantized tensors in .safetensors files (schema in quantized_file.h).
#include "nibble/io/quantized_file.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bytes.h"
#include "nibble/io/json.h"
#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/scale.h"

namespace nibble::io {
namespace {

using Json = nlohmann::ordered_json;
using detail::fail;
using detail::load_le;

constexpr const char* kSchemaKey = "nibble.schema";
constexpr const char* kCodes = ".codes";
constexpr const char* kScales = ".scales";
constexpr const char* kTensorScale = ".tensor_scale";

int64_t packed_cols(int64_t cols) { return (cols + 1) / 2; }

void expect_extension(const std::string& path) {
  if (std::filesystem::path(path).extension() != ".safetensors") {
    fail(path, "a quantized-tensor file is a .safetensors file (name it *.safetensors)");
  }
}

const char* scale_dtype(ScaleMode m) { return scale_format(m) == ScaleFormat::kFP32 ? "F32" : "U8"; }

std::vector<uint8_t> le_bytes(const std::vector<uint32_t>& words, int width) {
  std::vector<uint8_t> bytes;
  bytes.reserve(words.size() * static_cast<size_t>(width));
  for (const uint32_t w : words) {
    for (int b = 0; b < width; ++b) bytes.push_back(static_cast<uint8_t>(w >> (8 * b)));
  }
  return bytes;
}

// Only nvfp4 has a tensor scale; every other mode stores the identity {1, 1}.
std::optional<std::string> tensor_scale_defect(const QuantizedTensor& q) {
  if (q.config.scale == ScaleMode::kNVFP4 || (q.tensor.encode == 1.0f && q.tensor.decode == 1.0f)) {
    return std::nullopt;
  }
  return fmt::format("tensor scale {{{}, {}}} in {} (only nvfp4 has one)", q.tensor.encode, q.tensor.decode,
                     name(q.config.scale));
}

Json config_json(const QuantizedEntry& e) {
  const QuantConfig& c = e.tensor.config;
  Json j{{"rows", e.tensor.rows},
         {"cols", e.tensor.cols},
         {"transposed", e.transposed},
         {"format", std::string(name(c.format))},
         {"block", std::string(name(c.block))},
         {"scale", std::string(name(c.scale))},
         {"rounding", std::string(name(c.rounding))},
         {"sr_bits", c.sr_bits},
         {"rht", c.rht.size},
         {"rht_bf16", c.rht.round_bf16},
         {"seed", c.seed},
         {"stream", c.stream}};
  // The policies only where they are not the defaults: files of the default policies are
  // what they were before the policies existed, and readers of that version take them.
  if (c.policy != QuantPolicy{}) {
    j["zero"] = std::string(name(c.policy.zero));
    j["nonfinite"] = std::string(name(c.policy.nonfinite));
  }
  return j;
}

// The configuration rules both directions share: golden's own, and the RHT's
// axis a whole number of transforms.
std::optional<std::string> config_defect(const QuantizedTensor& q) {
  if (q.rows < 1 || q.cols < 1) return fmt::format("shape [{}, {}] holds no element", q.rows, q.cols);
  if (q.rows > INT32_MAX || q.cols > INT32_MAX) {
    return fmt::format("shape [{}, {}] has an axis beyond 2^31 - 1", q.rows, q.cols);
  }
  try {
    validate(q.config);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  if (q.config.rht.enabled() && q.cols % q.config.rht.size != 0) {
    return fmt::format("{} columns are not a whole number of RHT{} transforms", q.cols, q.config.rht.size);
  }
  return std::nullopt;
}

// ---- reading the metadata of one entry --------------------------------------------
struct FieldReader {
  const Json& object;
  const std::string& path;
  const std::string& entry;

  [[noreturn]] void defect(std::string_view what) const {
    fail(path, fmt::format("quantized tensor '{}': {}", entry, what));
  }
  const Json& field(const char* key) const {
    const auto it = object.find(key);
    if (it == object.end()) defect(fmt::format("metadata has no '{}'", key));
    return *it;
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const Json& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      defect(fmt::format("metadata '{}' is {}, not an integer in [{}, {}]", key, v.dump(), lo, hi));
    }
    return v.get<int64_t>();
  }
  uint64_t unsigned_integer(const char* key) const {
    const Json& v = field(key);
    if (!v.is_number_unsigned()) defect(fmt::format("metadata '{}' is {}, not an unsigned integer", key, v.dump()));
    return v.get<uint64_t>();
  }
  bool boolean(const char* key) const {
    const Json& v = field(key);
    if (!v.is_boolean()) defect(fmt::format("metadata '{}' is {}, not true or false", key, v.dump()));
    return v.get<bool>();
  }
  template <class T>
  T named(const char* key, std::optional<T> (*parse)(std::string_view), const std::string& valid) const {
    const Json& v = field(key);
    const std::optional<T> parsed = v.is_string() ? parse(v.get<std::string>()) : std::nullopt;
    if (!parsed) defect(fmt::format("metadata '{}' is {}; valid: {}", key, v.dump(), valid));
    return *parsed;
  }
};

QuantizedEntry parse_entry_metadata(const std::string& name, const std::string& text, const std::string& path) {
  Json object;
  try {
    object = parse_ordered_json(text);
  } catch (const JsonError& e) {
    fail(path, fmt::format("quantized tensor '{}': metadata is not valid JSON: {}", name, e.what()));
  }
  if (!object.is_object()) fail(path, fmt::format("quantized tensor '{}': metadata is not a JSON object", name));
  const FieldReader r{object, path, name};
  static const std::set<std::string_view> kKeys = {"rows",     "cols",    "transposed", "format",
                                                   "block",    "scale",   "rounding",   "sr_bits",
                                                   "rht",      "rht_bf16", "seed",      "stream",
                                                   "zero",     "nonfinite"};
  for (const auto& [key, value] : object.items()) {
    if (kKeys.count(key) == 0) r.defect(fmt::format("metadata has an unknown field '{}'", key));
  }
  QuantizedEntry e;
  e.name = name;
  QuantizedTensor& q = e.tensor;
  q.rows = r.integer("rows", 1, INT32_MAX);
  q.cols = r.integer("cols", 1, INT32_MAX);
  e.transposed = r.boolean("transposed");
  QuantConfig& c = q.config;
  c.format = r.named<Format>("format", parse_format, format_names(", "));
  c.block = r.named<BlockShape>("block", parse_block_shape, "1x16, 1x32, 16x16");
  c.scale = r.named<ScaleMode>("scale", parse_scale_mode, scale_mode_names(", "));
  c.rounding = r.named<Rounding>("rounding", parse_rounding, "rne, sr");
  c.sr_bits = static_cast<int>(r.integer("sr_bits", 1, 8));
  c.rht.size = static_cast<int>(r.integer("rht", 0, 128));
  c.rht.round_bf16 = r.boolean("rht_bf16");
  c.seed = r.unsigned_integer("seed");
  const uint64_t stream = r.unsigned_integer("stream");
  if (stream > UINT32_MAX) r.defect(fmt::format("metadata 'stream' is {}, above 2^32 - 1", stream));
  c.stream = static_cast<uint32_t>(stream);
  // The policies are optional (absent: the defaults); they come as a pair.
  if (object.contains("zero") || object.contains("nonfinite")) {
    c.policy.zero = r.named<ZeroPolicy>("zero", parse_zero_policy, "positive, signed");
    c.policy.nonfinite = r.named<NonFinitePolicy>("nonfinite", parse_nonfinite_policy, "finite, propagate");
  }
  if (const auto defect = config_defect(q)) r.defect(*defect);
  return e;
}

// The tensor `name` of the file with the given dtype and shape, or a defect.
const StoredTensor& expect_tensor(const SafetensorsFile& file, const std::string& name, std::string_view dtype,
                                  const std::vector<int64_t>& shape, const std::string& path) {
  for (const StoredTensor& t : file.tensors) {
    if (t.name != name) continue;
    if (t.dtype != dtype || t.shape != shape) {
      fail(path, fmt::format("tensor '{}' is {} [{}], expected {} [{}]", name, t.dtype, fmt::join(t.shape, ", "),
                             dtype, fmt::join(shape, ", ")));
    }
    return t;
  }
  fail(path, fmt::format("the quantized tensor's '{}' is missing", name));
}

}  // namespace

std::optional<std::string> quantized_defect(const QuantizedTensor& q) {
  if (const auto defect = config_defect(q)) return defect;
  const auto count = static_cast<size_t>(q.rows * q.cols);
  if (q.codes.size() != count) return fmt::format("{} codes for {} elements", q.codes.size(), count);
  for (const uint8_t code : q.codes) {
    if (code > 0xF) return fmt::format("code {} is not 4 bits", code);
  }
  const int64_t grid_rows = q.block_grid_rows(), grid_cols = q.block_grid_cols();
  if (q.scales.size() != static_cast<size_t>(grid_rows * grid_cols)) {
    return fmt::format("{} block scales for a grid of {} x {} blocks", q.scales.size(), grid_rows, grid_cols);
  }
  const bool fp32 = scale_format(q.config.scale) == ScaleFormat::kFP32;
  for (const uint32_t s : q.scales) {
    if (!fp32 && s > 0xFF) return fmt::format("block scale code {:#x} is not 8 bits", s);
  }
  return tensor_scale_defect(q);
}

void write_quantized(const std::string& path, const std::vector<QuantizedEntry>& entries) {
  expect_extension(path);
  if (entries.empty()) fail(path, "no quantized tensor to write");
  SafetensorsFile file;
  file.metadata[kSchemaKey] = kQuantizedSchema;
  for (const QuantizedEntry& e : entries) {
    const QuantizedTensor& q = e.tensor;
    const auto entry_fail = [&](std::string_view what) {
      fail(path, fmt::format("quantized tensor '{}': {}", e.name, what));
    };
    if (e.name.empty() || e.name == kSchemaKey) entry_fail("is not a valid name");
    if (file.metadata.count(e.name) != 0) entry_fail("the name is used twice");
    if (const auto defect = quantized_defect(q)) entry_fail(*defect);
    const int64_t grid_rows = q.block_grid_rows(), grid_cols = q.block_grid_cols();
    const bool fp32 = scale_format(q.config.scale) == ScaleFormat::kFP32;

    const int64_t pc = packed_cols(q.cols);
    StoredTensor codes{e.name + kCodes, "U8", {q.rows, pc}, std::vector<uint8_t>(static_cast<size_t>(q.rows * pc))};
    for (int64_t r = 0; r < q.rows; ++r) {
      pack_codes(q.codes.data() + r * q.cols, static_cast<size_t>(q.cols), codes.bytes.data() + r * pc);
    }
    StoredTensor scales{e.name + kScales, scale_dtype(q.config.scale), {grid_rows, grid_cols},
                        le_bytes(q.scales, fp32 ? 4 : 1)};
    StoredTensor tensor_scale{e.name + kTensorScale, "F32", {2},
                              le_bytes({f32_bits(q.tensor.encode), f32_bits(q.tensor.decode)}, 4)};
    file.tensors.push_back(std::move(codes));
    file.tensors.push_back(std::move(scales));
    file.tensors.push_back(std::move(tensor_scale));
    file.metadata[e.name] = config_json(e).dump();
  }
  write_safetensors_file(path, file);
}

std::vector<QuantizedEntry> read_quantized(const std::string& path) {
  expect_extension(path);
  const SafetensorsFile file = read_safetensors_file(path);
  const auto schema = file.metadata.find(kSchemaKey);
  if (schema == file.metadata.end()) {
    fail(path, fmt::format("not a quantized-tensor file: its metadata has no '{}' (expected '{}')", kSchemaKey,
                           kQuantizedSchema));
  }
  if (schema->second != kQuantizedSchema) {
    fail(path, fmt::format("schema '{}' is not '{}'", schema->second, kQuantizedSchema));
  }
  // The entries in the order of their codes in the file.
  std::vector<QuantizedEntry> entries;
  const std::string_view codes_suffix(kCodes);
  for (const StoredTensor& t : file.tensors) {
    const std::string_view n(t.name);
    if (n.size() <= codes_suffix.size() || n.substr(n.size() - codes_suffix.size()) != codes_suffix) continue;
    const std::string entry(n.substr(0, n.size() - codes_suffix.size()));
    const auto text = file.metadata.find(entry);
    if (entry != kSchemaKey && text != file.metadata.end()) {
      entries.push_back(parse_entry_metadata(entry, text->second, path));
    }
  }
  for (const auto& item : file.metadata) {
    const std::string& key = item.first;  // a structured binding cannot be captured in C++17 (clang refuses it)
    if (key != kSchemaKey &&
        std::none_of(entries.begin(), entries.end(), [&](const QuantizedEntry& e) { return e.name == key; })) {
      fail(path, fmt::format("quantized tensor '{}' has metadata but no '{}{}'", key, key, kCodes));
    }
  }
  if (entries.empty()) fail(path, "the file holds no quantized tensor");

  for (QuantizedEntry& e : entries) {
    QuantizedTensor& q = e.tensor;
    const int64_t pc = packed_cols(q.cols);
    const StoredTensor& codes = expect_tensor(file, e.name + kCodes, "U8", {q.rows, pc}, path);
    q.codes.resize(static_cast<size_t>(q.rows * q.cols));
    for (int64_t r = 0; r < q.rows; ++r) {
      const uint8_t* row = codes.bytes.data() + r * pc;
      if (q.cols % 2 == 1 && (row[pc - 1] >> 4) != 0) {
        fail(path, fmt::format("quantized tensor '{}': row {} of {} columns has a padding nibble {:#x}, not 0",
                               e.name, r, q.cols, row[pc - 1] >> 4));
      }
      unpack_codes(row, static_cast<size_t>(q.cols), q.codes.data() + r * q.cols);
    }
    const bool fp32 = scale_format(q.config.scale) == ScaleFormat::kFP32;
    const std::vector<int64_t> grid{q.block_grid_rows(), q.block_grid_cols()};
    const StoredTensor& scales = expect_tensor(file, e.name + kScales, scale_dtype(q.config.scale), grid, path);
    q.scales.resize(static_cast<size_t>(grid[0] * grid[1]));
    for (size_t i = 0; i < q.scales.size(); ++i) {
      q.scales[i] = fp32 ? load_le<uint32_t>(scales.bytes.data() + 4 * i) : scales.bytes[i];
    }
    const StoredTensor& ts = expect_tensor(file, e.name + kTensorScale, "F32", {2}, path);
    q.tensor.encode = f32_from_bits(load_le<uint32_t>(ts.bytes.data()));
    q.tensor.decode = f32_from_bits(load_le<uint32_t>(ts.bytes.data() + 4));
    if (const auto defect = tensor_scale_defect(q)) {
      fail(path, fmt::format("quantized tensor '{}': {}", e.name, *defect));
    }
  }
  if (file.tensors.size() != 3 * entries.size()) {  // each entry's three were found by name above
    for (const StoredTensor& t : file.tensors) {
      const bool owned = std::any_of(entries.begin(), entries.end(), [&](const QuantizedEntry& e) {
        return t.name == e.name + kCodes || t.name == e.name + kScales || t.name == e.name + kTensorScale;
      });
      if (!owned) fail(path, fmt::format("tensor '{}' belongs to no quantized tensor", t.name));
    }
  }
  return entries;
}

QuantizedDiff diff_quantized(const QuantizedTensor& got, const QuantizedTensor& want) {
  if (got.rows != want.rows || got.cols != want.cols || got.config.block != want.config.block ||
      got.codes.size() != want.codes.size() || got.scales.size() != want.scales.size()) {
    throw std::invalid_argument(fmt::format("diff_quantized: [{} x {}] in {} blocks against [{} x {}] in {} blocks",
                                            got.rows, got.cols, name(got.config.block), want.rows, want.cols,
                                            name(want.config.block)));
  }
  QuantizedDiff d;
  for (size_t i = 0; i < want.codes.size(); ++i) {
    if (got.codes[i] == want.codes[i]) continue;
    if (d.codes++ == 0) d.first_code = static_cast<int64_t>(i);
  }
  for (size_t i = 0; i < want.scales.size(); ++i) {
    if (got.scales[i] == want.scales[i]) continue;
    if (d.scales++ == 0) d.first_scale = static_cast<int64_t>(i);
  }
  d.tensor_scale = f32_bits(got.tensor.encode) != f32_bits(want.tensor.encode) ||
                   f32_bits(got.tensor.decode) != f32_bits(want.tensor.decode);
  return d;
}

std::string describe(const QuantizedDiff& d, const QuantizedTensor& got, const QuantizedTensor& want) {
  if (d.same()) return "bit-exact";
  std::vector<std::string> parts;
  if (d.codes != 0) {
    const auto i = static_cast<size_t>(d.first_code);
    parts.push_back(fmt::format("{} of {} codes (first at [{}, {}]: {:#x}, expected {:#x})", d.codes,
                                want.codes.size(), d.first_code / want.cols, d.first_code % want.cols, got.codes[i],
                                want.codes[i]));
  }
  if (d.scales != 0) {
    const auto i = static_cast<size_t>(d.first_scale);
    const int64_t grid_cols = want.block_grid_cols();
    parts.push_back(fmt::format("{} of {} block scales (first at block [{}, {}]: {:#x}, expected {:#x})", d.scales,
                                want.scales.size(), d.first_scale / grid_cols, d.first_scale % grid_cols,
                                got.scales[i], want.scales[i]));
  }
  if (d.tensor_scale) {
    parts.push_back(fmt::format("tensor scale {{{}, {}}}, expected {{{}, {}}}", got.tensor.encode, got.tensor.decode,
                                want.tensor.encode, want.tensor.decode));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace nibble::io
