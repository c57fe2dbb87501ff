// Hugging Face .safetensors reader and writer.
// Format: an 8-byte little-endian header size N, N bytes of JSON mapping each
// tensor name to {"dtype", "shape", "data_offsets"}, then the data buffer that
// the offsets index. https://github.com/huggingface/safetensors
#include "nibble/io/tensor_file.h"

#include "bytes.h"
#include "nibble/io/json.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace nibble::io {
namespace {

// nlohmann::json sorts object keys; ordered_json keeps the file's tensor order.
using Json = nlohmann::ordered_json;

constexpr std::size_t kHeaderSizeField = 8;
constexpr std::size_t kHeaderAlignment = 8;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr uint64_t kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// Error messages list at most this many tensor names; checkpoints can hold thousands.
constexpr std::size_t kMaxNamesShown = 16;

using detail::bit_cast;
using detail::fail;
using detail::half_to_float;
using detail::load_le;
using detail::read_bytes;
using detail::write_f32_le;

float f32_to_float(const unsigned char* p) { return bit_cast<float>(load_le<uint32_t>(p)); }
float f64_to_float(const unsigned char* p) { return static_cast<float>(bit_cast<double>(load_le<uint64_t>(p))); }
float f16_to_float(const unsigned char* p) { return half_to_float(load_le<uint16_t>(p)); }
float bf16_to_float(const unsigned char* p) {
  return bit_cast<float>(static_cast<uint32_t>(load_le<uint16_t>(p)) << 16);
}

struct Dtype {
  std::string_view name;
  std::size_t size;
  float (*to_float)(const unsigned char*);
};

constexpr std::array<Dtype, 4> kDtypes{{
    {"F32", 4, f32_to_float},
    {"F64", 8, f64_to_float},
    {"F16", 2, f16_to_float},
    {"BF16", 2, bf16_to_float},
}};

// Every dtype of the format and its element size, for the raw reader and writer.
constexpr std::array<std::pair<std::string_view, std::size_t>, 15> kStoredSizes{{
    {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
    {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4}, {"U64", 8}, {"I64", 8}, {"F64", 8},
}};

std::optional<std::size_t> stored_size(std::string_view dtype) {
  for (const auto& [name, size] : kStoredSizes) {
    if (name == dtype) return size;
  }
  return std::nullopt;
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct Layout {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data buffer
};

std::string json_shape(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string name_list(const std::vector<Entry>& entries) {
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < entries.size() && i < kMaxNamesShown; ++i) names.emplace_back(entries[i].name);
  std::string list = fmt::format("{}", fmt::join(names, ", "));
  if (entries.size() > kMaxNamesShown) list += fmt::format(", ... and {} more", entries.size() - kMaxNamesShown);
  return list;
}

// Element count of `shape`, or nothing when the count or its byte size in
// `item_size`-byte elements does not fit in int64, or the product of the
// non-zero dimensions does not (the matrix view would wrap). Dimensions are
// non-negative.
std::optional<uint64_t> checked_numel(const std::vector<int64_t>& shape, std::size_t item_size) {
  uint64_t numel = 1;
  for (const int64_t dim : shape) {
    if (dim == 0) continue;
    if (numel > kMaxCount / static_cast<uint64_t>(dim)) return std::nullopt;
    numel *= static_cast<uint64_t>(dim);
  }
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  if (numel > kMaxCount / item_size) return std::nullopt;
  return numel;
}

std::optional<uint64_t> as_count(const Json& value) {
  if (value.is_number_unsigned()) {
    const auto count = value.get<uint64_t>();
    if (count <= kMaxCount) return count;
  }
  return std::nullopt;
}

std::optional<std::vector<uint64_t>> as_counts(const Json& value) {
  if (!value.is_array()) return std::nullopt;
  std::vector<uint64_t> counts;
  for (const Json& element : value) {
    const auto count = as_count(element);
    if (!count) return std::nullopt;
    counts.push_back(*count);
  }
  return counts;
}

Entry parse_entry(const std::string& name, const Json& value, uint64_t data_size, const std::string& path) {
  const auto entry_fail = [&](std::string_view defect) { fail(path, fmt::format("tensor '{}': {}", name, defect)); };
  if (!value.is_object()) entry_fail("entry is not a JSON object");
  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) entry_fail("missing or malformed 'dtype' (expected a string)");
  const auto shape = value.find("shape");
  const auto dims = shape == value.end() ? std::nullopt : as_counts(*shape);
  if (!dims) entry_fail("missing or malformed 'shape' (expected an array of non-negative integers)");
  const auto offsets_field = value.find("data_offsets");
  const auto offsets = offsets_field == value.end() ? std::nullopt : as_counts(*offsets_field);
  if (!offsets || offsets->size() != 2) {
    entry_fail("missing or malformed 'data_offsets' (expected [begin, end] as non-negative integers)");
  }
  const uint64_t begin = (*offsets)[0];
  const uint64_t end = (*offsets)[1];
  if (begin > end) entry_fail(fmt::format("data_offsets [{}, {}] have begin after end", begin, end));
  if (end > data_size) {
    entry_fail(fmt::format("data_offsets [{}, {}] lie outside the {}-byte data buffer", begin, end, data_size));
  }
  return Entry{name, dtype->get<std::string>(), std::vector<int64_t>(dims->begin(), dims->end()), begin, end};
}

Json parse_header_json(const std::vector<unsigned char>& text, const std::string& path) {
  try {
    return parse_ordered_json(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()));
  } catch (const JsonError& error) {
    fail(path, fmt::format("header is not valid JSON: {}", error.what()));
  }
}

Layout read_layout(detail::InputFile& file, const std::string& path) {
  if (file.size < kHeaderSizeField) {
    fail(path, fmt::format("file is too short ({} bytes) for the 8-byte header size", file.size));
  }
  const uint64_t header_size = load_le<uint64_t>(read_bytes(file.stream, kHeaderSizeField, path).data());
  if (header_size > file.size - kHeaderSizeField) {
    fail(path, fmt::format("header size {} is larger than the file ({} bytes)", header_size, file.size));
  }
  const Json header = parse_header_json(read_bytes(file.stream, header_size, path), path);
  if (!header.is_object()) fail(path, "header is not a JSON object");

  Layout layout;
  layout.data_start = kHeaderSizeField + header_size;
  const uint64_t data_size = file.size - layout.data_start;
  for (const auto& [name, value] : header.items()) {
    if (name != kMetadataKey) {
      layout.entries.push_back(parse_entry(name, value, data_size, path));
      continue;
    }
    if (!value.is_object()) fail(path, "'__metadata__' is not a JSON object");
    for (const auto& [key, text] : value.items()) {
      if (!text.is_string()) fail(path, fmt::format("'__metadata__' entry '{}' is not a string", key));
      layout.metadata.emplace(key, text.get<std::string>());
    }
  }
  return layout;
}

const Entry& select_entry(const Layout& layout, const std::string& name, const std::string& path) {
  const std::vector<Entry>& entries = layout.entries;
  if (entries.empty()) fail(path, "the file holds no tensors");
  if (name.empty()) {
    if (entries.size() == 1) return entries.front();
    fail(path, fmt::format("the file holds {} tensors ({}); pick one by name", entries.size(), name_list(entries)));
  }
  const auto found = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == name; });
  if (found == entries.end()) {
    fail(path, fmt::format("no tensor named '{}'; the file holds: {}", name, name_list(entries)));
  }
  return *found;
}

const Dtype& find_dtype(const Entry& entry, const std::string& path) {
  for (const Dtype& dtype : kDtypes) {
    if (dtype.name == entry.dtype) return dtype;
  }
  std::string supported;
  for (const Dtype& dtype : kDtypes) supported += fmt::format(" {}", dtype.name);
  fail(path, fmt::format("tensor '{}': '{}' is not a supported dtype; expected one of{}", entry.name, entry.dtype,
                         supported));
}

// A tensor to be written: its header fields and how to write its bytes.
struct Outgoing {
  std::string_view name;
  std::string_view dtype;
  const std::vector<int64_t>* shape;
  uint64_t size;  // bytes
  std::function<void(std::ofstream&)> write;
};

// The shape's element count, checked: a valid name used once, no negative
// dimension, no overflow in `item_size`-byte elements.
uint64_t checked_entry_numel(std::string_view name, const std::vector<int64_t>& shape, std::size_t item_size,
                             std::unordered_set<std::string>& names, const std::string& path) {
  const auto tensor_fail = [&](std::string_view defect) { fail(path, fmt::format("tensor '{}': {}", name, defect)); };
  if (name.empty() || name == kMetadataKey) tensor_fail("is not a valid tensor name");
  if (!names.insert(std::string(name)).second) tensor_fail("the name is used twice");
  if (std::any_of(shape.begin(), shape.end(), [](int64_t dim) { return dim < 0; })) {
    tensor_fail(fmt::format("shape {} has a negative dimension", json_shape(shape)));
  }
  const auto numel = checked_numel(shape, item_size);
  if (!numel) tensor_fail(fmt::format("shape {} overflows", json_shape(shape)));
  return *numel;
}

// The header (the tensors back to back in the given order, then the
// metadata), then the data.
void write_file(const std::string& path, const std::vector<Outgoing>& tensors,
                const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  uint64_t offset = 0;
  for (const Outgoing& tensor : tensors) {
    const uint64_t end = offset + tensor.size;
    header[std::string(tensor.name)] = {
        {"dtype", std::string(tensor.dtype)}, {"shape", *tensor.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& error) {
    fail(path, fmt::format("cannot encode the header: {}", error.what()));
  }
  text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) fail(path, "cannot open for writing");
  std::array<char, kHeaderSizeField> size_field{};
  for (std::size_t b = 0; b < size_field.size(); ++b) {
    size_field[b] = static_cast<char>((static_cast<uint64_t>(text.size()) >> (8 * b)) & 0xffu);
  }
  stream.write(size_field.data(), static_cast<std::streamsize>(size_field.size()));
  stream.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const Outgoing& tensor : tensors) tensor.write(stream);
  stream.close();
  if (!stream) fail(path, "write failed");
}

}  // namespace

std::vector<std::string> list_safetensors(const std::string& path) {
  detail::InputFile file = detail::open_for_reading(path);
  const Layout layout = read_layout(file, path);
  std::vector<std::string> names;
  names.reserve(layout.entries.size());
  for (const Entry& entry : layout.entries) names.push_back(entry.name);
  return names;
}

Tensor read_safetensors(const std::string& path, const std::string& name) {
  detail::InputFile file = detail::open_for_reading(path);
  const Layout layout = read_layout(file, path);
  const Entry& entry = select_entry(layout, name, path);
  const Dtype& dtype = find_dtype(entry, path);
  const auto numel = checked_numel(entry.shape, dtype.size);
  const uint64_t span = entry.end - entry.begin;
  if (!numel || *numel * dtype.size != span) {
    fail(path, fmt::format("tensor '{}': shape {} of {} needs {} bytes, but data_offsets [{}, {}] span {}", entry.name,
                           json_shape(entry.shape), entry.dtype,
                           numel ? fmt::format("{}", *numel * dtype.size) : std::string("too many"), entry.begin,
                           entry.end, span));
  }
  file.stream.seekg(static_cast<std::streamoff>(layout.data_start + entry.begin));
  const auto bytes = read_bytes(file.stream, span, path);
  std::vector<float> values(static_cast<std::size_t>(*numel));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = dtype.to_float(bytes.data() + i * dtype.size);
  Tensor t{entry.name, entry.shape, std::move(values)};
  t.bf16 = dtype.to_float == bf16_to_float;  // the values are the file's BF16, exactly
  return t;
}

void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors) {
  std::vector<Outgoing> out;
  std::unordered_set<std::string> names;
  for (const Tensor& tensor : tensors) {
    const uint64_t numel = checked_entry_numel(tensor.name, tensor.shape, 4, names, path);
    if (numel != tensor.data.size()) {
      fail(path, fmt::format("tensor '{}': shape {} needs {} values, data has {}", tensor.name,
                             json_shape(tensor.shape), numel, tensor.data.size()));
    }
    out.push_back({tensor.name, "F32", &tensor.shape, numel * 4,
                   [&tensor](std::ofstream& s) { write_f32_le(s, tensor.data.data(), tensor.data.size()); }});
  }
  write_file(path, out, {});
}

SafetensorsFile read_safetensors_file(const std::string& path) {
  detail::InputFile file = detail::open_for_reading(path);
  Layout layout = read_layout(file, path);
  SafetensorsFile result;
  result.metadata = std::move(layout.metadata);
  for (const Entry& entry : layout.entries) {
    const auto size = stored_size(entry.dtype);
    if (!size) fail(path, fmt::format("tensor '{}': '{}' is not a safetensors dtype", entry.name, entry.dtype));
    const auto numel = checked_numel(entry.shape, *size);
    const uint64_t span = entry.end - entry.begin;
    if (!numel || *numel * *size != span) {
      fail(path, fmt::format("tensor '{}': shape {} of {} does not match data_offsets [{}, {}] ({} bytes)",
                             entry.name, json_shape(entry.shape), entry.dtype, entry.begin, entry.end, span));
    }
    file.stream.seekg(static_cast<std::streamoff>(layout.data_start + entry.begin));
    std::vector<unsigned char> bytes = read_bytes(file.stream, span, path);
    result.tensors.push_back(StoredTensor{entry.name, entry.dtype, entry.shape, {bytes.begin(), bytes.end()}});
  }
  return result;
}

void write_safetensors_file(const std::string& path, const SafetensorsFile& file) {
  std::vector<Outgoing> out;
  std::unordered_set<std::string> names;
  for (const StoredTensor& tensor : file.tensors) {
    const auto size = stored_size(tensor.dtype);
    if (!size) fail(path, fmt::format("tensor '{}': '{}' is not a safetensors dtype", tensor.name, tensor.dtype));
    const uint64_t numel = checked_entry_numel(tensor.name, tensor.shape, *size, names, path);
    if (numel * *size != tensor.bytes.size()) {
      fail(path, fmt::format("tensor '{}': shape {} of {} needs {} bytes, data has {}", tensor.name,
                             json_shape(tensor.shape), tensor.dtype, numel * *size, tensor.bytes.size()));
    }
    out.push_back({tensor.name, tensor.dtype, &tensor.shape, tensor.bytes.size(), [&tensor](std::ofstream& s) {
                     s.write(reinterpret_cast<const char*>(tensor.bytes.data()),
                             static_cast<std::streamsize>(tensor.bytes.size()));
                   }});
  }
  write_file(path, out, file.metadata);
}

}  // namespace nibble::io
