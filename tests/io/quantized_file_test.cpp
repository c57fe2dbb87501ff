// Tests for quantized-tensor files (schema nibble-quantized/1, quantized_file.h):
// round trips of golden's quantizer output over every format, scale mode and
// block shape; the stored layout checked byte by byte against the schema the
// header documents (independently of pack_codes); and one check per defect that
// write_quantized and read_quantized must reject.
#include "nibble/io/quantized_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "scratch_dir.h"

namespace nibble::io {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The seed of every random matrix in this file.
constexpr uint64_t kDataSeed = 0x6e6962626c653031ull;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

std::vector<uint8_t> le_bytes(uint32_t word) {
  return {static_cast<uint8_t>(word), static_cast<uint8_t>(word >> 8), static_cast<uint8_t>(word >> 16),
          static_cast<uint8_t>(word >> 24)};
}

// A row-major [rows, cols] matrix from raw mt19937_64 words (a sequence the
// standard fixes), magnitudes spread over 2^-12 .. 2^12 so blocks get different
// scales. Every column from 32 on is zero, which gives an all-zero (and, for
// 19 x 37, partial) block in every block shape both for the matrix and for its
// transpose; a NaN, a +Inf and a -Inf sit in three other blocks.
std::vector<float> TestMatrix(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (float& v : x) {
    const uint64_t word = rng();
    const int exponent = static_cast<int>((word >> 32) % 25) - 12;
    const int32_t mantissa = static_cast<int32_t>(word & 0xFFFFFFu) - (1 << 23);
    v = std::ldexp(static_cast<float>(mantissa), exponent - 23);
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 32; c < cols; ++c) x[static_cast<size_t>(r * cols + c)] = 0.0f;
  }
  x[static_cast<size_t>(3 * cols + 20)] = kNaN;
  x[static_cast<size_t>(5 * cols + 25)] = kInf;
  x[static_cast<size_t>(17 * cols + 2)] = -kInf;
  return x;
}

std::vector<float> Transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = x[static_cast<size_t>(r * cols + c)];
  }
  return t;
}

std::string Describe(const QuantConfig& c) {
  return std::string(name(c.format)) + " " + std::string(name(c.block)) + " " + std::string(name(c.scale)) + " " +
         std::string(name(c.rounding)) + " sr_bits=" + std::to_string(c.sr_bits) +
         " rht=" + std::to_string(c.rht.size) + (c.rht.round_bf16 ? "/bf16" : "") + " seed=" + std::to_string(c.seed) +
         " stream=" + std::to_string(c.stream);
}

// Every format x scale mode x block shape, each three ways: RNE; SR with
// sr_bits 1..8 in turn and a nonzero seed and stream (the first at the largest
// seed and stream the schema holds); RHT16, rounding alternating RNE/SR and the
// bf16 rounding of the transform alternating off/on.
std::vector<QuantConfig> RoundTripConfigs() {
  std::vector<QuantConfig> configs;
  int index = 0;
  for (const Format format : kAllFormats) {
    for (const ScaleMode scale : kAllScaleModes) {
      for (const BlockShape block : kAllBlockShapes) {
        QuantConfig rne;
        rne.format = format;
        rne.scale = scale;
        rne.block = block;
        configs.push_back(rne);

        QuantConfig sr = rne;
        sr.rounding = Rounding::kStochastic;
        sr.sr_bits = 1 + index % 8;
        sr.seed = index == 0 ? std::numeric_limits<uint64_t>::max() : 0x9E3779B97F4A7C15ull + index;
        sr.stream = index == 0 ? std::numeric_limits<uint32_t>::max() : static_cast<uint32_t>(1 + 7 * index);
        configs.push_back(sr);

        QuantConfig rht = index % 2 == 0 ? rne : sr;
        rht.rht = RhtConfig{16, index % 2 == 1};
        rht.seed = 0x1234ull + index;
        configs.push_back(rht);
        ++index;
      }
    }
  }
  return configs;
}

// Two entries from one seeded source matrix: "rowwise" quantizes it, "colwise"
// its transpose. Sources are 19 x 37 (odd cols, partial blocks); with RHT16 they
// are 18 x 48, and since the transpose's 18 columns hold no whole transform its
// entry is quantized with the RHT off.
std::vector<QuantizedEntry> MakeEntries(const QuantConfig& cfg, std::mt19937_64& rng) {
  const int64_t rows = cfg.rht.enabled() ? 18 : 19;
  const int64_t cols = cfg.rht.enabled() ? 48 : 37;
  const std::vector<float> x = TestMatrix(rows, cols, rng);
  QuantConfig col_cfg = cfg;
  col_cfg.rht = RhtConfig{};
  return {QuantizedEntry{"rowwise", false, quantize(x.data(), rows, cols, cfg)},
          QuantizedEntry{"colwise", true, quantize(Transpose(x, rows, cols).data(), cols, rows, col_cfg)}};
}

// The first index where two code vectors differ, reported in hex.
template <class T>
void ExpectSameWords(const std::vector<T>& expected, const std::vector<T>& actual, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (actual[i] != expected[i]) {
      ADD_FAILURE() << what << "[" << i << "]: expected 0x" << std::hex << +expected[i] << ", got 0x" << +actual[i];
      return;
    }
  }
}

void ExpectSameEntry(const QuantizedEntry& expected, const QuantizedEntry& actual) {
  SCOPED_TRACE(expected.name);
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_EQ(actual.transposed, expected.transposed);
  const QuantizedTensor& e = expected.tensor;
  const QuantizedTensor& a = actual.tensor;
  EXPECT_EQ(a.rows, e.rows);
  EXPECT_EQ(a.cols, e.cols);
  EXPECT_EQ(static_cast<int>(a.config.format), static_cast<int>(e.config.format));
  EXPECT_EQ(static_cast<int>(a.config.block), static_cast<int>(e.config.block));
  EXPECT_EQ(static_cast<int>(a.config.scale), static_cast<int>(e.config.scale));
  EXPECT_EQ(static_cast<int>(a.config.rounding), static_cast<int>(e.config.rounding));
  EXPECT_EQ(a.config.sr_bits, e.config.sr_bits);
  EXPECT_EQ(a.config.rht.size, e.config.rht.size);
  EXPECT_EQ(a.config.rht.round_bf16, e.config.rht.round_bf16);
  EXPECT_EQ(a.config.seed, e.config.seed);
  EXPECT_EQ(a.config.stream, e.config.stream);
  EXPECT_EQ(a.config.policy, e.config.policy);
  ExpectSameWords(e.codes, a.codes, "codes");
  ExpectSameWords(e.scales, a.scales, "scales");
  EXPECT_EQ(bits_of(a.tensor.encode), bits_of(e.tensor.encode));
  EXPECT_EQ(bits_of(a.tensor.decode), bits_of(e.tensor.decode));
}

bool Contains(const std::vector<uint32_t>& words, uint32_t word) {
  for (const uint32_t w : words) {
    if (w == word) return true;
  }
  return false;
}

// Asserts that `call` throws TensorFileError whose message starts with `path`
// and contains `phrase`.
void ExpectFileError(const std::function<void()>& call, const std::string& path, const std::string& phrase) {
  try {
    call();
    ADD_FAILURE() << "no TensorFileError; expected one containing '" << phrase << "'";
  } catch (const TensorFileError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(phrase), std::string::npos) << "missing '" << phrase << "' in: " << message;
  } catch (const std::exception& error) {
    ADD_FAILURE() << "not a TensorFileError: " << error.what();
  }
}

const StoredTensor* FindTensor(const SafetensorsFile& file, const std::string& name) {
  for (const StoredTensor& t : file.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

StoredTensor& TensorNamed(SafetensorsFile& file, const std::string& name) {
  for (StoredTensor& t : file.tensors) {
    if (t.name == name) return t;
  }
  throw std::logic_error("test file has no tensor " + name);
}

void EraseTensor(SafetensorsFile& file, const std::string& name) {
  const auto it = std::find_if(file.tensors.begin(), file.tensors.end(),
                               [&](const StoredTensor& t) { return t.name == name; });
  if (it == file.tensors.end()) throw std::logic_error("test file has no tensor " + name);
  file.tensors.erase(it);
}

// A field of a metadata object as JSON text, so that gtest compares strings.
std::string Field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? "<missing>" : it->dump();
}

using QuantizedFileTest = ScratchDirTest;

// ---------------------------------------------------------------- round trips

TEST_F(QuantizedFileTest, RoundTripKeepsEveryFieldOfEveryConfiguration) {
  std::printf("quantized_file_test: data seed 0x%016llx\n", static_cast<unsigned long long>(kDataSeed));
  RecordProperty("data_seed", std::to_string(kDataSeed));
  std::mt19937_64 rng(kDataSeed);
  const std::string path = PathOf("round_trip.safetensors");
  int files = 0;
  int entries = 0;
  int rht_entries = 0;
  for (const QuantConfig& cfg : RoundTripConfigs()) {
    SCOPED_TRACE(Describe(cfg));
    const std::vector<QuantizedEntry> written = MakeEntries(cfg, rng);
    for (const QuantizedEntry& e : written) {
      // The data exercises what the file must carry: nonzero codes, a NaN
      // block's scale code and an all-zero block's scale code 0.
      const std::vector<uint8_t>& codes = e.tensor.codes;
      EXPECT_NE(std::count(codes.begin(), codes.end(), uint8_t{0}), static_cast<std::ptrdiff_t>(codes.size()));
      EXPECT_TRUE(Contains(e.tensor.scales, nan_block_scale(cfg.scale).code)) << e.name;
      EXPECT_TRUE(Contains(e.tensor.scales, 0u)) << e.name;
    }
    write_quantized(path, written);
    const std::vector<QuantizedEntry> read = read_quantized(path);
    ASSERT_EQ(read.size(), 2u);
    for (size_t i = 0; i < read.size(); ++i) {
      ExpectSameEntry(written[i], read[i]);
      entries += 1;
      rht_entries += read[i].tensor.config.rht.enabled() ? 1 : 0;
    }
    ++files;
  }
  const int combinations = static_cast<int>(kAllFormats.size() * kAllScaleModes.size() * kAllBlockShapes.size());
  EXPECT_EQ(combinations, 36);
  EXPECT_EQ(files, 3 * combinations);
  EXPECT_EQ(entries, 2 * files);
  EXPECT_EQ(rht_entries, combinations);
}

// Names that are not alphabetical, hold dots, quotes and non-ASCII text, end
// in a tensor suffix or shadow the safetensors metadata key are all entries.
TEST_F(QuantizedFileTest, EntriesComeBackInTheirWrittenOrderWhateverTheirNames) {
  std::mt19937_64 rng(kDataSeed + 1);
  QuantConfig cfg;
  cfg.scale = ScaleMode::kNVFP4;
  std::vector<QuantizedEntry> written;
  const std::vector<std::string> names = {"zeta", "alpha", "model.layers.0.mlp.weight", "w \"q\" \xc3\xbc",
                                          "x.codes", "x", "x.scales.tensor_scale", "__metadata__"};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<float> x = TestMatrix(19, 37, rng);
    written.push_back(QuantizedEntry{names[i], i % 2 == 1, quantize(x.data(), 19, 37, cfg)});
  }
  const std::string path = PathOf("order.safetensors");
  write_quantized(path, written);
  const std::vector<QuantizedEntry> read = read_quantized(path);
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) ExpectSameEntry(written[i], read[i]);
}

// ---------------------------------------------------------------- the stored layout

struct LayoutCase {
  QuantConfig cfg;
  const char* format;  // the names as the schema spells them, written out here
  const char* block;
  const char* scale;
  const char* rounding;
};

QuantConfig Config(Format format, BlockShape block, ScaleMode scale, Rounding rounding, int sr_bits, RhtConfig rht,
                   uint64_t seed, uint32_t stream) {
  QuantConfig c;
  c.format = format;
  c.block = block;
  c.scale = scale;
  c.rounding = rounding;
  c.sr_bits = sr_bits;
  c.rht = rht;
  c.seed = seed;
  c.stream = stream;
  return c;
}

// One case per scale mode, every format, block shape and rounding among them, two with RHT16.
std::vector<LayoutCase> LayoutCases() {
  constexpr Rounding kRne = Rounding::kNearestEven;
  constexpr Rounding kSr = Rounding::kStochastic;
  return {
      {Config(Format::kE2M1, BlockShape::k1x16, ScaleMode::kFP32, kRne, 8, {}, 0, 0), "e2m1", "1x16", "fp32", "rne"},
      {Config(Format::kE1M2, BlockShape::k1x32, ScaleMode::kNVFP4, kSr, 3, {}, 77, 5), "e1m2", "1x32", "nvfp4", "sr"},
      {Config(Format::kInt4, BlockShape::k16x16, ScaleMode::kMXFloor, kSr, 5, {}, 1, 4000000000u), "int4", "16x16",
       "mx-floor", "sr"},
      {Config(Format::kE2M1, BlockShape::k16x16, ScaleMode::kMXCeil, kRne, 8, RhtConfig{16, true}, 99, 0), "e2m1",
       "16x16", "mx-ceil", "rne"},
      {Config(Format::kE1M2, BlockShape::k1x32, ScaleMode::kFP32, kSr, 1, RhtConfig{16, false},
              std::numeric_limits<uint64_t>::max(), 12),
       "e1m2", "1x32", "fp32", "sr"},
  };
}

// Checks one entry's three tensors and metadata in the raw file against the
// schema, computing every expected byte from the unpacked codes and scales.
void ExpectStoredAsDocumented(const SafetensorsFile& raw, const std::string& path, const QuantizedEntry& e,
                              const LayoutCase& c) {
  SCOPED_TRACE(e.name);
  const QuantizedTensor& q = e.tensor;

  const StoredTensor* codes = FindTensor(raw, e.name + ".codes");
  ASSERT_NE(codes, nullptr);
  const int64_t row_bytes = (q.cols + 1) / 2;
  EXPECT_EQ(codes->dtype, "U8");
  EXPECT_EQ(codes->shape, (std::vector<int64_t>{q.rows, row_bytes}));
  ASSERT_EQ(codes->bytes.size(), static_cast<size_t>(q.rows * row_bytes));
  int nibble_mismatches = 0;
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t k = 0; k < row_bytes; ++k) {
      const uint8_t byte = codes->bytes[static_cast<size_t>(r * row_bytes + k)];
      const unsigned low = q.codes[static_cast<size_t>(r * q.cols + 2 * k)];
      const unsigned high = 2 * k + 1 < q.cols ? q.codes[static_cast<size_t>(r * q.cols + 2 * k + 1)] : 0u;
      if ((byte & 0xFu) != low || (byte >> 4) != high) {
        if (nibble_mismatches++ == 0) {
          ADD_FAILURE() << "row " << r << " byte " << k << ": 0x" << std::hex << +byte << ", expected low 0x" << low
                        << " high 0x" << high;
        }
      }
    }
  }
  EXPECT_EQ(nibble_mismatches, 0);

  const StoredTensor* scales = FindTensor(raw, e.name + ".scales");
  ASSERT_NE(scales, nullptr);
  const int64_t grid_rows = q.block_grid_rows();
  const int64_t grid_cols = q.block_grid_cols();
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{grid_rows, grid_cols}));
  if (q.config.scale == ScaleMode::kFP32) {
    EXPECT_EQ(scales->dtype, "F32");
    ASSERT_EQ(scales->bytes.size(), 4 * q.scales.size());
    for (size_t i = 0; i < q.scales.size(); ++i) {
      const std::vector<uint8_t> word(scales->bytes.begin() + 4 * i, scales->bytes.begin() + 4 * i + 4);
      EXPECT_EQ(word, le_bytes(q.scales[i])) << "scale " << i;
    }
    // The float32 reader (what PyTorch sees) returns the same binary32 scales.
    const Tensor floats = read_safetensors(path, e.name + ".scales");
    EXPECT_EQ(floats.shape, (std::vector<int64_t>{grid_rows, grid_cols}));
    ASSERT_EQ(floats.data.size(), q.scales.size());
    for (size_t i = 0; i < q.scales.size(); ++i) EXPECT_EQ(bits_of(floats.data[i]), q.scales[i]) << "scale " << i;
  } else {
    EXPECT_EQ(scales->dtype, "U8");
    ASSERT_EQ(scales->bytes.size(), q.scales.size());
    for (size_t i = 0; i < q.scales.size(); ++i) EXPECT_EQ(scales->bytes[i], q.scales[i]) << "scale " << i;
  }

  const StoredTensor* tensor_scale = FindTensor(raw, e.name + ".tensor_scale");
  ASSERT_NE(tensor_scale, nullptr);
  EXPECT_EQ(tensor_scale->dtype, "F32");
  EXPECT_EQ(tensor_scale->shape, (std::vector<int64_t>{2}));
  std::vector<uint8_t> expected_ts = le_bytes(bits_of(q.tensor.encode));
  const std::vector<uint8_t> decode_bytes = le_bytes(bits_of(q.tensor.decode));
  expected_ts.insert(expected_ts.end(), decode_bytes.begin(), decode_bytes.end());
  EXPECT_EQ(tensor_scale->bytes, expected_ts);
  const Tensor ts = read_safetensors(path, e.name + ".tensor_scale");
  ASSERT_EQ(ts.data.size(), 2u);
  EXPECT_EQ(bits_of(ts.data[0]), bits_of(q.tensor.encode));
  EXPECT_EQ(bits_of(ts.data[1]), bits_of(q.tensor.decode));
  if (q.config.scale == ScaleMode::kNVFP4) {
    EXPECT_NE(q.tensor.encode, 1.0f);  // the data has a real tensor scale to store
  } else {
    EXPECT_EQ(ts.data[0], 1.0f);
    EXPECT_EQ(ts.data[1], 1.0f);
  }

  const auto text = raw.metadata.find(e.name);
  ASSERT_NE(text, raw.metadata.end());
  const Json meta = Json::parse(text->second);
  ASSERT_TRUE(meta.is_object()) << text->second;
  EXPECT_EQ(meta.size(), 12u) << text->second;
  EXPECT_EQ(Field(meta, "rows"), Json(q.rows).dump());
  EXPECT_EQ(Field(meta, "cols"), Json(q.cols).dump());
  EXPECT_EQ(Field(meta, "transposed"), e.transposed ? "true" : "false");
  EXPECT_EQ(Field(meta, "format"), Json(c.format).dump());
  EXPECT_EQ(Field(meta, "block"), Json(c.block).dump());
  EXPECT_EQ(Field(meta, "scale"), Json(c.scale).dump());
  EXPECT_EQ(Field(meta, "rounding"), Json(c.rounding).dump());
  EXPECT_EQ(Field(meta, "sr_bits"), std::to_string(c.cfg.sr_bits));
  EXPECT_EQ(Field(meta, "rht"), std::to_string(q.config.rht.size));
  EXPECT_EQ(Field(meta, "rht_bf16"), q.config.rht.round_bf16 ? "true" : "false");
  EXPECT_EQ(Field(meta, "seed"), std::to_string(c.cfg.seed));
  EXPECT_EQ(Field(meta, "stream"), std::to_string(c.cfg.stream));
}

TEST_F(QuantizedFileTest, StoredLayoutIsTheDocumentedSchema) {
  std::printf("quantized_file_test: data seed 0x%016llx\n", static_cast<unsigned long long>(kDataSeed + 2));
  std::mt19937_64 rng(kDataSeed + 2);
  int checked = 0;
  for (const LayoutCase& c : LayoutCases()) {
    SCOPED_TRACE(Describe(c.cfg));
    const std::vector<QuantizedEntry> entries = MakeEntries(c.cfg, rng);
    const std::string path = PathOf("layout.safetensors");
    write_quantized(path, entries);
    const SafetensorsFile raw = read_safetensors_file(path);
    EXPECT_EQ(raw.tensors.size(), 6u);
    EXPECT_EQ(raw.metadata.size(), 3u);
    const auto schema = raw.metadata.find("nibble.schema");
    ASSERT_NE(schema, raw.metadata.end());
    EXPECT_EQ(schema->second, "nibble-quantized/1");
    EXPECT_EQ(std::string(kQuantizedSchema), "nibble-quantized/1");
    for (const QuantizedEntry& e : entries) {
      ExpectStoredAsDocumented(raw, path, e, c);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);
}

TEST_F(QuantizedFileTest, OddRowsStoreAZeroHighNibbleInTheirLastByte) {
  // Codes 0x1..0xF in turn on 3 rows of 5: every last byte holds only element 4.
  QuantizedTensor q;
  q.rows = 3;
  q.cols = 5;
  for (int i = 0; i < 15; ++i) q.codes.push_back(static_cast<uint8_t>(i + 1));
  q.scales = {bits_of(1.0f), bits_of(2.0f), bits_of(0.5f)};
  const std::string path = PathOf("odd.safetensors");
  write_quantized(path, {QuantizedEntry{"w", false, q}});
  const SafetensorsFile raw = read_safetensors_file(path);
  const StoredTensor* codes = FindTensor(raw, "w.codes");
  ASSERT_NE(codes, nullptr);
  EXPECT_EQ(codes->bytes, (std::vector<uint8_t>{0x21, 0x43, 0x05, 0x76, 0x98, 0x0A, 0xCB, 0xED, 0x0F}));
  ExpectSameEntry(QuantizedEntry{"w", false, q}, read_quantized(path).at(0));
}

// ---------------------------------------------------------------- write errors

// A valid small entry: 3 x 5 (odd cols) quantized from fixed data.
QuantizedEntry SmallEntry(const std::string& entry_name, ScaleMode scale = ScaleMode::kFP32, int64_t rows = 3,
                          int64_t cols = 5) {
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 7.0f) * 0.75f;
  QuantConfig cfg;
  cfg.scale = scale;
  return QuantizedEntry{entry_name, false, quantize(x.data(), rows, cols, cfg)};
}

class QuantizedWriteTest : public QuantizedFileTest {
 protected:
  // Asserts the write fails with `phrase` and leaves no file behind.
  void ExpectWriteError(const std::vector<QuantizedEntry>& entries, const std::string& phrase) {
    const std::string path = PathOf("bad.safetensors");
    ExpectFileError([&] { write_quantized(path, entries); }, path, phrase);
    EXPECT_FALSE(fs::exists(path)) << phrase;
    ++defects_;
  }
  int defects_ = 0;
};

TEST_F(QuantizedWriteTest, SmallEntriesAreValid) {
  const std::string path = PathOf("good.safetensors");
  for (const ScaleMode m : kAllScaleModes) {
    SCOPED_TRACE(name(m));
    write_quantized(path, {SmallEntry("w", m)});
    ExpectSameEntry(SmallEntry("w", m), read_quantized(path).at(0));
  }
}

TEST_F(QuantizedWriteTest, RejectsBadNames) {
  ExpectWriteError({}, "no quantized tensor to write");
  ExpectWriteError({SmallEntry("")}, "quantized tensor '': is not a valid name");
  ExpectWriteError({SmallEntry("nibble.schema")}, "quantized tensor 'nibble.schema': is not a valid name");
  ExpectWriteError({SmallEntry("w"), SmallEntry("v"), SmallEntry("w")}, "quantized tensor 'w': the name is used twice");
  EXPECT_EQ(defects_, 4);
}

TEST_F(QuantizedWriteTest, RejectsInvalidConfigurationsAndShapes) {
  QuantizedEntry sr_bits = SmallEntry("w");
  sr_bits.tensor.config.sr_bits = 9;
  ExpectWriteError({sr_bits}, "quantized tensor 'w': stochastic-rounding bits must be in 1..8");
  QuantizedEntry rht_size = SmallEntry("w", ScaleMode::kFP32, 2, 32);
  rht_size.tensor.config.rht = RhtConfig{24, false};
  ExpectWriteError({rht_size}, "quantized tensor 'w': RHT size must be 16, 32, 64 or 128, got 24");
  QuantizedEntry rht_cols = SmallEntry("w", ScaleMode::kFP32, 2, 20);
  rht_cols.tensor.config.rht = RhtConfig{16, false};
  ExpectWriteError({rht_cols}, "quantized tensor 'w': 20 columns are not a whole number of RHT16 transforms");
  QuantizedEntry no_rows = SmallEntry("w");
  no_rows.tensor.rows = 0;
  no_rows.tensor.codes.clear();
  ExpectWriteError({no_rows}, "quantized tensor 'w': shape [0, 5] holds no element");
  QuantizedEntry no_cols = SmallEntry("w");
  no_cols.tensor.cols = 0;
  no_cols.tensor.codes.clear();
  ExpectWriteError({no_cols}, "quantized tensor 'w': shape [3, 0] holds no element");
  QuantizedEntry too_wide = SmallEntry("w");  // the reader's limit, checked before the (absent) codes
  too_wide.tensor.cols = int64_t{1} << 31;
  ExpectWriteError({too_wide}, "quantized tensor 'w': shape [3, 2147483648] has an axis beyond 2^31 - 1");
  EXPECT_EQ(defects_, 6);
}

TEST_F(QuantizedWriteTest, RejectsCodesAndScalesTheShapeCannotHold) {
  QuantizedEntry short_codes = SmallEntry("w");
  short_codes.tensor.codes.pop_back();
  ExpectWriteError({SmallEntry("v"), short_codes}, "quantized tensor 'w': 14 codes for 15 elements");
  QuantizedEntry wide_code = SmallEntry("w");
  wide_code.tensor.codes[7] = 0x10;
  ExpectWriteError({wide_code}, "quantized tensor 'w': code 16 is not 4 bits");
  QuantizedEntry long_scales = SmallEntry("w");
  long_scales.tensor.scales.push_back(0);
  ExpectWriteError({long_scales}, "quantized tensor 'w': 4 block scales for a grid of 3 x 1 blocks");
  for (const ScaleMode m : {ScaleMode::kNVFP4, ScaleMode::kMXFloor, ScaleMode::kMXCeil}) {
    SCOPED_TRACE(name(m));
    QuantizedEntry wide_scale = SmallEntry("w", m);
    wide_scale.tensor.scales[1] = 0x100;
    ExpectWriteError({wide_scale}, "quantized tensor 'w': block scale code 0x100 is not 8 bits");
  }
  for (const ScaleMode m : {ScaleMode::kFP32, ScaleMode::kMXFloor, ScaleMode::kMXCeil}) {
    SCOPED_TRACE(name(m));
    QuantizedEntry tensor_scale = SmallEntry("w", m);
    tensor_scale.tensor.tensor = TensorScale{2.0f, 0.5f};
    ExpectWriteError({tensor_scale}, "quantized tensor 'w': tensor scale {2, 0.5} in " + std::string(name(m)) +
                                         " (only nvfp4 has one)");
  }
  EXPECT_EQ(defects_, 9);
}

TEST_F(QuantizedWriteTest, Fp32ScalesMayExceed8BitsAndNvfp4HasATensorScale) {
  const std::string path = PathOf("edge.safetensors");
  QuantizedEntry wide_fp32_scale = SmallEntry("w", ScaleMode::kFP32);
  wide_fp32_scale.tensor.scales[1] = bits_of(1024.0f);  // binary32 bits, far above 0xFF
  QuantizedEntry nvfp4_scale = SmallEntry("v", ScaleMode::kNVFP4);
  nvfp4_scale.tensor.tensor = TensorScale{2.0f, 0.5f};
  write_quantized(path, {wide_fp32_scale, nvfp4_scale});
  const std::vector<QuantizedEntry> read = read_quantized(path);
  ASSERT_EQ(read.size(), 2u);
  ExpectSameEntry(wide_fp32_scale, read[0]);
  ExpectSameEntry(nvfp4_scale, read[1]);
}

// ---------------------------------------------------------------- read errors

class QuantizedReadTest : public QuantizedFileTest {
 protected:
  // A valid file: "w" (fp32, 3 x 5, odd cols) then "v" (nvfp4, 4 x 6).
  std::string WriteValid() const {
    const std::string path = PathOf("file.safetensors");
    write_quantized(path, {SmallEntry("w"), SmallEntry("v", ScaleMode::kNVFP4, 4, 6)});
    return path;
  }

  // Writes a valid file, edits its raw form, and asserts read_quantized rejects it with `phrase`.
  void ExpectReadError(const std::function<void(SafetensorsFile&)>& edit, const std::string& phrase) {
    const std::string path = WriteValid();
    SafetensorsFile file = read_safetensors_file(path);
    edit(file);
    write_safetensors_file(path, file);
    ExpectFileError([&] { read_quantized(path); }, path, phrase);
    ++defects_;
  }

  // The same, for an edit of entry "w"'s metadata object.
  void ExpectMetadataError(const std::function<void(Json&)>& edit, const std::string& phrase) {
    ExpectReadError(
        [&](SafetensorsFile& file) {
          Json meta = Json::parse(file.metadata.at("w"));
          edit(meta);
          file.metadata["w"] = meta.dump();
        },
        phrase);
  }

  int defects_ = 0;
};

TEST_F(QuantizedReadTest, TheUneditedFileReads) {
  const std::string path = WriteValid();
  const std::vector<QuantizedEntry> read = read_quantized(path);
  ASSERT_EQ(read.size(), 2u);
  ExpectSameEntry(SmallEntry("w"), read[0]);
  ExpectSameEntry(SmallEntry("v", ScaleMode::kNVFP4, 4, 6), read[1]);
  // A raw read and rewrite without edits keeps the file readable.
  write_safetensors_file(path, read_safetensors_file(path));
  EXPECT_EQ(read_quantized(path).size(), 2u);
}

TEST_F(QuantizedReadTest, RejectsFilesOfAnotherSchema) {
  ExpectReadError([](SafetensorsFile& f) { f.metadata.erase("nibble.schema"); },
                  "not a quantized-tensor file: its metadata has no 'nibble.schema' (expected 'nibble-quantized/1')");
  ExpectReadError([](SafetensorsFile& f) { f.metadata["nibble.schema"] = "nibble-quantized/2"; },
                  "schema 'nibble-quantized/2' is not 'nibble-quantized/1'");
  ExpectReadError([](SafetensorsFile& f) { f.metadata["nibble.schema"] = "nibble-quantized"; },
                  "schema 'nibble-quantized' is not 'nibble-quantized/1'");
  EXPECT_EQ(defects_, 3);
}

TEST_F(QuantizedReadTest, RejectsPlainTensorFiles) {
  const std::string path = PathOf("plain.safetensors");
  write_safetensors(path, {Tensor{"w", {2}, {1.0f, 2.0f}}});
  ExpectFileError([&] { read_quantized(path); }, path, "not a quantized-tensor file");
}

TEST_F(QuantizedReadTest, RejectsMetadataThatIsNotAJsonObject) {
  ExpectReadError([](SafetensorsFile& f) { f.metadata["w"] = "{\"rows\": 3"; },
                  "quantized tensor 'w': metadata is not valid JSON");
  ExpectReadError([](SafetensorsFile& f) { f.metadata["w"] = "rows=3"; },
                  "quantized tensor 'w': metadata is not valid JSON");
  ExpectReadError([](SafetensorsFile& f) { f.metadata["w"] = "[3, 5]"; },
                  "quantized tensor 'w': metadata is not a JSON object");
  ExpectReadError([](SafetensorsFile& f) { f.metadata["w"] = "\"rows\""; },
                  "quantized tensor 'w': metadata is not a JSON object");
  EXPECT_EQ(defects_, 4);
}

TEST_F(QuantizedReadTest, RejectsEachMissingField) {
  const std::vector<std::string> keys = {"rows",     "cols", "transposed", "format", "block", "scale",
                                         "rounding", "sr_bits", "rht",     "rht_bf16", "seed", "stream"};
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    ExpectMetadataError([&](Json& m) { ASSERT_EQ(m.erase(key), 1u); },
                        "quantized tensor 'w': metadata has no '" + key + "'");
  }
  EXPECT_EQ(defects_, 12);
}

TEST_F(QuantizedReadTest, RejectsAnUnknownField) {
  ExpectMetadataError([](Json& m) { m["dtype"] = "fp4"; },
                      "quantized tensor 'w': metadata has an unknown field 'dtype'");
  ExpectMetadataError([](Json& m) { m["Rows"] = 3; }, "metadata has an unknown field 'Rows'");
  EXPECT_EQ(defects_, 2);
}

TEST_F(QuantizedReadTest, RejectsUnknownNames) {
  ExpectMetadataError([](Json& m) { m["format"] = "e3m0"; },
                      "quantized tensor 'w': metadata 'format' is \"e3m0\"; valid: e2m1, e1m2, int4");
  ExpectMetadataError([](Json& m) { m["format"] = "E2M1"; }, "metadata 'format' is \"E2M1\"; valid:");
  ExpectMetadataError([](Json& m) { m["format"] = 0; }, "metadata 'format' is 0; valid: e2m1, e1m2, int4");
  ExpectMetadataError([](Json& m) { m["block"] = "8x8"; },
                      "quantized tensor 'w': metadata 'block' is \"8x8\"; valid: 1x16, 1x32, 16x16");
  ExpectMetadataError([](Json& m) { m["scale"] = "fp16"; },
                      "quantized tensor 'w': metadata 'scale' is \"fp16\"; valid: fp32, nvfp4, mx-floor, mx-ceil");
  ExpectMetadataError([](Json& m) { m["rounding"] = "rtz"; },
                      "quantized tensor 'w': metadata 'rounding' is \"rtz\"; valid: rne, sr");
  EXPECT_EQ(defects_, 6);
}

// The quantizer's policies: written only where they are not the defaults (so a file of the
// default policies is what it was before they existed), read back, and as a pair.
TEST_F(QuantizedReadTest, PoliciesAreAnOptionalPair) {
  const std::string path = PathOf("policy.safetensors");
  QuantizedEntry signed_entry = SmallEntry("s", ScaleMode::kNVFP4, 4, 6);
  QuantConfig cfg = signed_entry.tensor.config;
  cfg.policy = QuantPolicy{ZeroPolicy::kSigned, NonFinitePolicy::kPropagate};
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 7.0f) * 0.75f;
  signed_entry.tensor = quantize(x.data(), 4, 6, cfg);
  write_quantized(path, {SmallEntry("w"), signed_entry});
  const SafetensorsFile file = read_safetensors_file(path);
  const Json plain = Json::parse(file.metadata.at("w"));
  const Json with_policy = Json::parse(file.metadata.at("s"));
  EXPECT_EQ(Field(plain, "zero"), "<missing>");
  EXPECT_EQ(Field(plain, "nonfinite"), "<missing>");
  EXPECT_EQ(Field(with_policy, "zero"), "\"signed\"");
  EXPECT_EQ(Field(with_policy, "nonfinite"), "\"propagate\"");
  const std::vector<QuantizedEntry> read = read_quantized(path);
  ASSERT_EQ(read.size(), 2u);
  ExpectSameEntry(SmallEntry("w"), read[0]);
  ExpectSameEntry(signed_entry, read[1]);

  ExpectMetadataError([](Json& m) { m["zero"] = "signed"; }, "quantized tensor 'w': metadata has no 'nonfinite'");
  ExpectMetadataError([](Json& m) { m["nonfinite"] = "propagate"; }, "quantized tensor 'w': metadata has no 'zero'");
  ExpectMetadataError(
      [](Json& m) {
        m["zero"] = "keep";
        m["nonfinite"] = "finite";
      },
      "metadata 'zero' is \"keep\"; valid: positive, signed");
  ExpectMetadataError(
      [](Json& m) {
        m["zero"] = "positive";
        m["nonfinite"] = true;
      },
      "metadata 'nonfinite' is true; valid: finite, propagate");
  EXPECT_EQ(defects_, 4);
}

TEST_F(QuantizedReadTest, RejectsIllTypedAndOutOfRangeIntegers) {
  ExpectMetadataError([](Json& m) { m["rows"] = 3.5; },
                      "quantized tensor 'w': metadata 'rows' is 3.5, not an integer in [1, 2147483647]");
  ExpectMetadataError([](Json& m) { m["rows"] = "3"; }, "metadata 'rows' is \"3\", not an integer in [1, 2147483647]");
  ExpectMetadataError([](Json& m) { m["rows"] = 0; }, "metadata 'rows' is 0, not an integer in [1, 2147483647]");
  ExpectMetadataError([](Json& m) { m["rows"] = 2147483648ll; }, "metadata 'rows' is 2147483648, not an integer");
  ExpectMetadataError([](Json& m) { m["rows"] = std::numeric_limits<uint64_t>::max(); },
                      "metadata 'rows' is 18446744073709551615, not an integer");
  ExpectMetadataError([](Json& m) { m["cols"] = -5; }, "metadata 'cols' is -5, not an integer in [1, 2147483647]");
  ExpectMetadataError([](Json& m) { m["cols"] = true; }, "metadata 'cols' is true, not an integer");
  ExpectMetadataError([](Json& m) { m["sr_bits"] = 0; }, "metadata 'sr_bits' is 0, not an integer in [1, 8]");
  ExpectMetadataError([](Json& m) { m["sr_bits"] = 9; }, "metadata 'sr_bits' is 9, not an integer in [1, 8]");
  ExpectMetadataError([](Json& m) { m["rht"] = 256; }, "metadata 'rht' is 256, not an integer in [0, 128]");
  ExpectMetadataError([](Json& m) { m["rht"] = 17; }, "quantized tensor 'w': RHT size must be 16, 32, 64 or 128");
  ExpectMetadataError([](Json& m) { m["rht"] = 16; },
                      "quantized tensor 'w': 5 columns are not a whole number of RHT16 transforms");
  EXPECT_EQ(defects_, 12);
}

TEST_F(QuantizedReadTest, RejectsIllTypedBooleansSeedsAndStreams) {
  ExpectMetadataError([](Json& m) { m["transposed"] = 1; },
                      "quantized tensor 'w': metadata 'transposed' is 1, not true or false");
  ExpectMetadataError([](Json& m) { m["transposed"] = "false"; }, "metadata 'transposed' is \"false\", not true");
  ExpectMetadataError([](Json& m) { m["rht_bf16"] = 0; }, "metadata 'rht_bf16' is 0, not true or false");
  ExpectMetadataError([](Json& m) { m["stream"] = 4294967296ull; },
                      "quantized tensor 'w': metadata 'stream' is 4294967296, above 2^32 - 1");
  ExpectMetadataError([](Json& m) { m["stream"] = -1; }, "metadata 'stream' is -1, not an unsigned integer");
  ExpectMetadataError([](Json& m) { m["seed"] = -1; },
                      "quantized tensor 'w': metadata 'seed' is -1, not an unsigned integer");
  ExpectMetadataError([](Json& m) { m["seed"] = 1.5; }, "metadata 'seed' is 1.5, not an unsigned integer");
  ExpectMetadataError([](Json& m) { m["seed"] = "7"; }, "metadata 'seed' is \"7\", not an unsigned integer");
  EXPECT_EQ(defects_, 8);
}

TEST_F(QuantizedReadTest, AcceptsTheLimitsOfEachField) {
  const std::string path = WriteValid();
  SafetensorsFile file = read_safetensors_file(path);
  Json meta = Json::parse(file.metadata.at("w"));
  meta["seed"] = std::numeric_limits<uint64_t>::max();
  meta["stream"] = std::numeric_limits<uint32_t>::max();
  meta["sr_bits"] = 1;
  meta["rounding"] = "sr";
  meta["transposed"] = true;
  file.metadata["w"] = meta.dump();
  write_safetensors_file(path, file);
  const QuantizedEntry w = read_quantized(path).at(0);
  EXPECT_EQ(w.tensor.config.seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(w.tensor.config.stream, std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(w.tensor.config.sr_bits, 1);
  EXPECT_EQ(w.tensor.config.rounding, Rounding::kStochastic);
  EXPECT_TRUE(w.transposed);
}

TEST_F(QuantizedReadTest, RejectsCodesOfTheWrongDtypeOrShape) {
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.codes").dtype = "I8"; },
                  "tensor 'w.codes' is I8 [3, 3], expected U8 [3, 3]");
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.codes").shape = {1, 9}; },
                  "tensor 'w.codes' is U8 [1, 9], expected U8 [3, 3]");
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.codes").shape = {9}; },
                  "tensor 'w.codes' is U8 [9], expected U8 [3, 3]");
  // Unpacked codes, one a byte, are not the schema's packed layout.
  ExpectReadError(
      [](SafetensorsFile& f) {
        StoredTensor& codes = TensorNamed(f, "w.codes");
        codes.shape = {3, 5};
        codes.bytes.assign(15, 0);
      },
      "tensor 'w.codes' is U8 [3, 5], expected U8 [3, 3]");
  EXPECT_EQ(defects_, 4);
}

TEST_F(QuantizedReadTest, RejectsMissingOrMistypedScales) {
  ExpectReadError([](SafetensorsFile& f) { EraseTensor(f, "w.scales"); },
                  "the quantized tensor's 'w.scales' is missing");
  ExpectReadError(
      [](SafetensorsFile& f) {
        StoredTensor& scales = TensorNamed(f, "w.scales");
        scales.dtype = "U8";
        scales.bytes.resize(3);
      },
      "tensor 'w.scales' is U8 [3, 1], expected F32 [3, 1]");
  ExpectReadError(
      [](SafetensorsFile& f) {
        StoredTensor& scales = TensorNamed(f, "v.scales");
        scales.dtype = "F32";
        scales.bytes.resize(16);
      },
      "tensor 'v.scales' is F32 [4, 1], expected U8 [4, 1]");
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.scales").shape = {1, 3}; },
                  "tensor 'w.scales' is F32 [1, 3], expected F32 [3, 1]");
  EXPECT_EQ(defects_, 4);
}

TEST_F(QuantizedReadTest, RejectsANonzeroPaddingNibble) {
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.codes").bytes[1 * 3 + 2] |= 0x30; },
                  "quantized tensor 'w': row 1 of 5 columns has a padding nibble 0x3, not 0");
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.codes").bytes[2 * 3 + 2] |= 0xF0; },
                  "quantized tensor 'w': row 2 of 5 columns has a padding nibble 0xf, not 0");
  EXPECT_EQ(defects_, 2);
}

TEST_F(QuantizedReadTest, RejectsATensorScaleOutsideNvfp4) {
  ExpectReadError(
      [](SafetensorsFile& f) {
        StoredTensor& ts = TensorNamed(f, "w.tensor_scale");
        const std::vector<uint8_t> two = le_bytes(bits_of(2.0f));
        std::copy(two.begin(), two.end(), ts.bytes.begin());
      },
      "quantized tensor 'w': tensor scale {2, 1} in fp32 (only nvfp4 has one)");
  ExpectReadError(
      [](SafetensorsFile& f) {
        StoredTensor& ts = TensorNamed(f, "w.tensor_scale");
        const std::vector<uint8_t> half = le_bytes(bits_of(0.5f));
        std::copy(half.begin(), half.end(), ts.bytes.begin() + 4);
      },
      "quantized tensor 'w': tensor scale {1, 0.5} in fp32");
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.tensor_scale").shape = {1, 2}; },
                  "tensor 'w.tensor_scale' is F32 [1, 2], expected F32 [2]");
  ExpectReadError([](SafetensorsFile& f) { TensorNamed(f, "w.tensor_scale").dtype = "U32"; },
                  "tensor 'w.tensor_scale' is U32 [2], expected F32 [2]");
  ExpectReadError([](SafetensorsFile& f) { EraseTensor(f, "w.tensor_scale"); },
                  "the quantized tensor's 'w.tensor_scale' is missing");
  EXPECT_EQ(defects_, 5);
}

TEST_F(QuantizedReadTest, RejectsTensorsAndMetadataThatBelongToNoEntry) {
  ExpectReadError([](SafetensorsFile& f) { f.tensors.push_back(StoredTensor{"extra", "U8", {1}, {0}}); },
                  "tensor 'extra' belongs to no quantized tensor");
  ExpectReadError([](SafetensorsFile& f) { f.tensors.push_back(StoredTensor{"w.codes2", "U8", {1}, {0}}); },
                  "tensor 'w.codes2' belongs to no quantized tensor");
  ExpectReadError([](SafetensorsFile& f) { f.metadata.erase("v"); }, "tensor 'v.codes' belongs to no quantized tensor");
  ExpectReadError([](SafetensorsFile& f) { f.metadata["ghost"] = f.metadata.at("w"); },
                  "quantized tensor 'ghost' has metadata but no 'ghost.codes'");
  ExpectReadError([](SafetensorsFile& f) { EraseTensor(f, "w.codes"); },
                  "quantized tensor 'w' has metadata but no 'w.codes'");
  EXPECT_EQ(defects_, 5);
}

TEST_F(QuantizedReadTest, RejectsAFileWithTheSchemaButNoEntry) {
  const std::string path = PathOf("empty.safetensors");
  SafetensorsFile file;
  file.metadata["nibble.schema"] = kQuantizedSchema;
  write_safetensors_file(path, file);
  ExpectFileError([&] { read_quantized(path); }, path, "the file holds no quantized tensor");
  ExpectReadError(
      [](SafetensorsFile& f) {
        f.metadata = {{"nibble.schema", kQuantizedSchema}};
        f.tensors.clear();
      },
      "the file holds no quantized tensor");
}

TEST_F(QuantizedReadTest, FileErrorsOfTheContainerPropagate) {
  const std::string missing = PathOf("absent.safetensors");
  ExpectFileError([&] { read_quantized(missing); }, missing, "cannot open for reading");
  const std::string path = WriteValid();
  fs::resize_file(path, fs::file_size(path) - 1);
  ExpectFileError([&] { read_quantized(path); }, path, "lie outside the");
}

}  // namespace
}  // namespace nibble::io
