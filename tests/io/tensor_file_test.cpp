// Tests for nibble::io: .npy and .safetensors round trips (the float32 readers
// and the raw, any-dtype one), decoding of hand-built files in every supported
// dtype and layout, and one test per defect a reader must reject.
#include "nibble/io/tensor_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "scratch_dir.h"

namespace nibble::io {
namespace {

namespace fs = std::filesystem;

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

double double_from_bits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint64_t bits_of(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

template <typename UInt>
void append_le(std::string& out, UInt value) {
  for (std::size_t i = 0; i < sizeof(UInt); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

template <typename UInt>
void append_be(std::string& out, UInt value) {
  for (std::size_t i = sizeof(UInt); i-- > 0;) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

// The reference decodings, written from the format definitions with ldexp
// rather than by moving bits, so they do not share the library's method.
float f16_reference(uint16_t half) {
  const int exponent = (half >> 10) & 0x1f;
  const int mantissa = half & 0x3ff;
  double magnitude;
  if (exponent == 0x1f) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -24);
  } else {
    magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return static_cast<float>((half & 0x8000) ? -magnitude : magnitude);
}

float bf16_reference(uint16_t half) {
  const int exponent = (half >> 7) & 0xff;
  const int mantissa = half & 0x7f;
  double magnitude;
  if (exponent == 0xff) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -133);
  } else {
    magnitude = std::ldexp(128 + mantissa, exponent - 134);
  }
  return static_cast<float>((half & 0x8000) ? -magnitude : magnitude);
}

// NaN matches any NaN of the same sign; everything else must match bit for bit.
void ExpectSameFloat(float expected, float actual, std::size_t index) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << "index " << index << ": got " << actual;
    EXPECT_EQ(std::signbit(expected), std::signbit(actual)) << "index " << index;
  } else {
    EXPECT_EQ(bits_of(expected), bits_of(actual)) << "index " << index << ": expected " << expected << ", got " << actual;
  }
}

void ExpectBitwiseEqual(const std::vector<float>& expected, const std::vector<float>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(bits_of(expected[i]), bits_of(actual[i])) << "index " << i;
  }
}

// The values every round trip must preserve exactly.
std::vector<float> SpecialValues() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f,
          -0.0f,
          1.0f,
          -2.5f,
          3.14159265f,
          inf,
          -inf,
          std::numeric_limits<float>::quiet_NaN(),
          float_from_bits(0xffc00000u),  // negative NaN
          float_from_bits(0x7fc12345u),  // NaN with a payload
          std::numeric_limits<float>::denorm_min(),
          -std::numeric_limits<float>::denorm_min(),
          float_from_bits(0x00400001u),  // a mid-range subnormal
          std::numeric_limits<float>::min(),
          std::numeric_limits<float>::max(),
          std::numeric_limits<float>::lowest(),
          1e-30f,
          -6.5e30f};
}

std::vector<float> TestValues(std::size_t count) {
  const std::vector<float> special = SpecialValues();
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = i < special.size() ? special[i] : static_cast<float>(i) * 0.37f - 11.0f;
  }
  return values;
}

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t product = 1;
  for (const int64_t dim : shape) product *= dim;
  return product;
}

// An .npy file: preamble, the header dict padded with spaces and ended by '\n'
// so that the data starts at a multiple of 64, then the data bytes.
std::string NpyBytes(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string bytes("\x93NUMPY", 6);
  bytes.push_back(static_cast<char>(major));
  bytes.push_back('\0');
  if (major == 1) {
    append_le(bytes, static_cast<uint16_t>(header.size()));
  } else {
    append_le(bytes, static_cast<uint32_t>(header.size()));
  }
  return bytes + header + data;
}

std::string NpyDict(const std::string& descr, const std::string& shape, bool fortran_order = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") + ", 'shape': " + shape +
         ", }";
}

std::string SafetensorsBytes(const std::string& json, const std::string& data) {
  std::string bytes;
  append_le(bytes, static_cast<uint64_t>(json.size()));
  return bytes + json + data;
}

std::string F32Bytes(const std::vector<float>& values) {
  std::string bytes;
  for (const float value : values) append_le(bytes, bits_of(value));
  return bytes;
}

class TensorFileTest : public ScratchDirTest {
 protected:
  std::string WriteFile(const std::string& file, const std::string& bytes) const {
    const std::string path = PathOf(file);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good()) << path;
    return path;
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

};

// Asserts that `read` throws TensorFileError whose message starts with `path`
// and contains `phrase`.
void ExpectFileError(const std::function<void()>& read, const std::string& path, const std::string& phrase) {
  EXPECT_THROW(read(), TensorFileError);
  try {
    read();
  } catch (const TensorFileError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(phrase), std::string::npos) << "missing '" << phrase << "' in: " << message;
  }
}

// ---------------------------------------------------------------- Tensor

TEST(TensorTest, MatrixViewUsesTheLastAxisAsColumns) {
  const Tensor scalar{"s", {}, {1.0f}};
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.rows(), 1);
  EXPECT_EQ(scalar.cols(), 1);

  const Tensor vector{"v", {5}, std::vector<float>(5)};
  EXPECT_EQ(vector.numel(), 5);
  EXPECT_EQ(vector.rows(), 1);
  EXPECT_EQ(vector.cols(), 5);

  const Tensor cube{"c", {2, 3, 4}, std::vector<float>(24)};
  EXPECT_EQ(cube.numel(), 24);
  EXPECT_EQ(cube.rows(), 6);
  EXPECT_EQ(cube.cols(), 4);

  const Tensor empty{"e", {3, 0}, {}};
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.rows(), 3);
  EXPECT_EQ(empty.cols(), 0);
}

// ---------------------------------------------------------------- .npy round trips

const std::vector<std::vector<int64_t>> kShapes = {{}, {1}, {7}, {3, 4}, {2, 3, 5}, {1, 1, 2, 1, 9}, {0}, {4, 0, 2}};

TEST_F(TensorFileTest, NpyRoundTripPreservesShapeAndBits) {
  int index = 0;
  for (const auto& shape : kShapes) {
    SCOPED_TRACE(::testing::Message() << "shape #" << index);
    const std::vector<float> values = TestValues(static_cast<std::size_t>(Product(shape)));
    const std::string path = PathOf("tensor" + std::to_string(index++) + ".npy");
    write_npy(path, shape, values.data());
    const Tensor tensor = read_npy(path);
    EXPECT_EQ(tensor.shape, shape);
    ExpectBitwiseEqual(values, tensor.data);
  }
  EXPECT_EQ(index, 8);
}

TEST_F(TensorFileTest, NpyRoundTripKeepsEverySpecialValue) {
  const std::vector<float> values = SpecialValues();
  const std::string path = PathOf("special.npy");
  write_npy(path, {static_cast<int64_t>(values.size())}, values.data());
  const Tensor tensor = read_npy(path);
  ASSERT_EQ(tensor.data.size(), 18u);
  ExpectBitwiseEqual(values, tensor.data);
}

TEST_F(TensorFileTest, WriteNpyProducesAVersion1HeaderAlignedTo64) {
  const std::vector<float> values = {1.0f, -2.0f, 0.5f, 8.0f, 0.0f, -0.0f};
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{2, 3}, "'shape': (2, 3)"}, {{6}, "'shape': (6,)"}, {{}, "'shape': ()"}};
  for (const auto& [shape, shape_text] : cases) {
    SCOPED_TRACE(shape_text);
    const std::string path = PathOf("layout.npy");
    write_npy(path, shape, values.data());
    const std::string bytes = ReadFile(path);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
    EXPECT_EQ(bytes[6], 1);
    EXPECT_EQ(bytes[7], 0);
    const std::size_t header_size =
        static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    const std::size_t data_start = 10 + header_size;
    EXPECT_EQ(data_start % 64, 0u);
    ASSERT_LE(data_start, bytes.size());
    const std::string header = bytes.substr(10, header_size);
    EXPECT_EQ(header.back(), '\n');
    EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
    EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
    EXPECT_NE(header.find(shape_text), std::string::npos) << header;
    const std::size_t numel = static_cast<std::size_t>(Product(shape));
    EXPECT_EQ(bytes.substr(data_start), F32Bytes(std::vector<float>(values.begin(), values.begin() + numel)));
  }
}

TEST_F(TensorFileTest, ReadTensorNamesAnNpyTensorAfterTheFileStem) {
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  const std::string path = PathOf("layer0.weight.npy");
  write_npy(path, {3}, values.data());
  const Tensor tensor = read_tensor(path, "ignored for .npy");
  EXPECT_EQ(tensor.name, "layer0.weight");
  ExpectBitwiseEqual(values, tensor.data);
}

// ---------------------------------------------------------------- .npy decoding

TEST_F(TensorFileTest, NpyF16DecodesAllBitPatternsExactly) {
  for (const bool big_endian : {false, true}) {
    SCOPED_TRACE(big_endian ? ">f2" : "<f2");
    std::string data;
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
      big_endian ? append_be(data, static_cast<uint16_t>(pattern)) : append_le(data, static_cast<uint16_t>(pattern));
    }
    const std::string path =
        WriteFile("half.npy", NpyBytes(NpyDict(big_endian ? ">f2" : "<f2", "(65536,)"), data));
    const Tensor tensor = read_npy(path);
    ASSERT_EQ(tensor.data.size(), 65536u);
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
      ExpectSameFloat(f16_reference(static_cast<uint16_t>(pattern)), tensor.data[pattern], pattern);
    }
  }
}

TEST(Float16ReferenceTest, MatchesKnownValues) {
  EXPECT_EQ(f16_reference(0x3c00), 1.0f);
  EXPECT_EQ(f16_reference(0xc000), -2.0f);
  EXPECT_EQ(f16_reference(0x7bff), 65504.0f);
  EXPECT_EQ(f16_reference(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_reference(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_reference(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(bits_of(f16_reference(0x8000)), 0x80000000u);
  EXPECT_EQ(f16_reference(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_reference(0x7e00)));
  EXPECT_EQ(bf16_reference(0x3f80), 1.0f);
  EXPECT_EQ(bf16_reference(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(bf16_reference(0xff80), -std::numeric_limits<float>::infinity());
}

// float64 inputs and the float32 that IEEE round-to-nearest-even gives, written
// out by hand.
struct DoubleCase {
  double input;
  float expected;
};

std::vector<DoubleCase> DoubleCases() {
  const float inf = std::numeric_limits<float>::infinity();
  return {
      {1.0, 1.0f},
      {-0.0, -0.0f},
      {0.1, float_from_bits(0x3dcccccdu)},
      {1.0 + std::ldexp(1.0, -24), 1.0f},                                   // tie, rounds to even
      {1.0 + 3 * std::ldexp(1.0, -24), 1.0f + std::ldexp(1.0f, -22)},       // tie, rounds to even
      {1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40), 1.0f + std::ldexp(1.0f, -23)},  // above the tie
      {1e300, inf},
      {-1e300, -inf},
      {1e-50, 0.0f},
      {-1e-50, -0.0f},
      {std::ldexp(1.0, -149), std::numeric_limits<float>::denorm_min()},
      {std::ldexp(1.0, -150), 0.0f},                                        // tie with zero, rounds to even
      {std::ldexp(3.0, -151), std::numeric_limits<float>::denorm_min()},
      {static_cast<double>(std::numeric_limits<float>::max()), std::numeric_limits<float>::max()},
      {std::numeric_limits<double>::infinity(), inf},
      {double_from_bits(0x7ff8000000000000u), std::numeric_limits<float>::quiet_NaN()},
  };
}

TEST_F(TensorFileTest, NpyF64RoundsToNearestEvenInBothByteOrders) {
  const std::vector<DoubleCase> cases = DoubleCases();
  for (const bool big_endian : {false, true}) {
    SCOPED_TRACE(big_endian ? ">f8" : "<f8");
    std::string data;
    for (const DoubleCase& c : cases) {
      big_endian ? append_be(data, bits_of(c.input)) : append_le(data, bits_of(c.input));
    }
    const std::string shape = "(" + std::to_string(cases.size()) + ",)";
    const std::string path = WriteFile("double.npy", NpyBytes(NpyDict(big_endian ? ">f8" : "<f8", shape), data));
    const Tensor tensor = read_npy(path);
    ASSERT_EQ(tensor.data.size(), 16u);
    for (std::size_t i = 0; i < cases.size(); ++i) ExpectSameFloat(cases[i].expected, tensor.data[i], i);
  }
}

TEST_F(TensorFileTest, NpyBigEndianF4) {
  const std::vector<float> values = SpecialValues();
  std::string data;
  for (const float value : values) append_be(data, bits_of(value));
  const std::string path = WriteFile("big.npy", NpyBytes(NpyDict(">f4", "(3, 6)"), data));
  const Tensor tensor = read_npy(path);
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{3, 6}));
  ExpectBitwiseEqual(values, tensor.data);
}

TEST_F(TensorFileTest, NpyFortranOrderIsTransposedIntoCOrder) {
  // Element (i, j, k) of a 2x3x4 array holds its C-order index; the file
  // stores the elements with the first axis varying fastest.
  std::string data;
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 3; ++j) {
      for (int i = 0; i < 2; ++i) append_le(data, bits_of(static_cast<float>(i * 12 + j * 4 + k)));
    }
  }
  const std::string path = WriteFile("fortran.npy", NpyBytes(NpyDict("<f4", "(2, 3, 4)", true), data));
  const Tensor tensor = read_npy(path);
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(tensor.data.size(), 24u);
  for (std::size_t i = 0; i < 24; ++i) EXPECT_EQ(tensor.data[i], static_cast<float>(i)) << "index " << i;
}

TEST_F(TensorFileTest, NpyFortranOrderMatrixAndVector) {
  // [[0, 1, 2], [3, 4, 5]] stored column by column.
  const std::string matrix =
      WriteFile("matrix.npy", NpyBytes(NpyDict("<f4", "(2, 3)", true), F32Bytes({0, 3, 1, 4, 2, 5})));
  ExpectBitwiseEqual({0, 1, 2, 3, 4, 5}, read_npy(matrix).data);
  const std::string vector =
      WriteFile("vector.npy", NpyBytes(NpyDict("<f4", "(4,)", true), F32Bytes({7, 8, 9, 10})));
  ExpectBitwiseEqual({7, 8, 9, 10}, read_npy(vector).data);
}

TEST_F(TensorFileTest, NpyVersion2And3HeadersUseAFourByteLength) {
  for (const int major : {2, 3}) {
    SCOPED_TRACE(major);
    const std::string path =
        WriteFile("v" + std::to_string(major) + ".npy", NpyBytes(NpyDict("<f4", "(2, 2)"), F32Bytes({1, 2, 3, 4}), major));
    const Tensor tensor = read_npy(path);
    EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 2}));
    ExpectBitwiseEqual({1, 2, 3, 4}, tensor.data);
  }
}

TEST_F(TensorFileTest, NpyHeaderParsingAcceptsPythonLiteralVariants) {
  const std::vector<std::string> dicts = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{ 'descr' :'<f4' ,\t'fortran_order':False,\n'shape':( 2 ,3 , ) , }",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L)}",
  };
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  for (const std::string& dict : dicts) {
    SCOPED_TRACE(dict);
    const Tensor tensor = read_npy(WriteFile("variant.npy", NpyBytes(dict, F32Bytes(values))));
    EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 3}));
    ExpectBitwiseEqual(values, tensor.data);
  }
}

TEST_F(TensorFileTest, NpyScalarAndOneElementShapes) {
  const Tensor scalar = read_npy(WriteFile("scalar.npy", NpyBytes(NpyDict("<f4", "()"), F32Bytes({42.0f}))));
  EXPECT_TRUE(scalar.shape.empty());
  ExpectBitwiseEqual({42.0f}, scalar.data);
  const Tensor single = read_npy(WriteFile("single.npy", NpyBytes(NpyDict("<f4", "(1,)"), F32Bytes({-1.0f}))));
  EXPECT_EQ(single.shape, (std::vector<int64_t>{1}));
  ExpectBitwiseEqual({-1.0f}, single.data);
}

// ---------------------------------------------------------------- .npy errors

TEST_F(TensorFileTest, NpyMissingFile) {
  const std::string path = PathOf("absent.npy");
  ExpectFileError([&] { read_npy(path); }, path, "cannot open for reading");
}

TEST_F(TensorFileTest, NpyBadMagic) {
  std::string bytes = NpyBytes(NpyDict("<f4", "(1,)"), F32Bytes({1.0f}));
  bytes[5] = 'X';
  const std::string path = WriteFile("magic.npy", bytes);
  ExpectFileError([&] { read_npy(path); }, path, "bad magic");
  const std::string tiny = WriteFile("tiny.npy", "\x93NU");
  ExpectFileError([&] { read_npy(tiny); }, tiny, "bad magic");
}

TEST_F(TensorFileTest, NpyUnsupportedVersion) {
  std::string bytes = NpyBytes(NpyDict("<f4", "(1,)"), F32Bytes({1.0f}));
  bytes[6] = 4;
  const std::string path = WriteFile("v4.npy", bytes);
  ExpectFileError([&] { read_npy(path); }, path, "unsupported .npy format version 4.0");
  bytes[6] = 1;
  bytes[7] = 1;
  const std::string minor = WriteFile("v11.npy", bytes);
  ExpectFileError([&] { read_npy(minor); }, minor, "unsupported .npy format version 1.1");
}

TEST_F(TensorFileTest, NpyHeaderLongerThanTheFile) {
  std::string bytes = NpyBytes(NpyDict("<f4", "(1,)"), "");
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  const std::string path = WriteFile("header.npy", bytes);
  ExpectFileError([&] { read_npy(path); }, path, "truncated: the .npy header needs 32767 bytes");
}

TEST_F(TensorFileTest, NpyUnparsableHeader) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not a dict", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'fortran_order': False, 'shape': (1,)}", "missing key 'descr'"},
      {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,)}", "expected True or False"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", "expected '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "a one-element shape must be written '(n,)'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", "unexpected text after"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (x,)}", "expected an integer dimension"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "expected '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1", "expected ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "expected '('"},
      {"{'descr': 'a\\'b', 'fortran_order': False, 'shape': (1,)}", "escape sequences"},
  };
  for (const auto& [dict, phrase] : cases) {
    SCOPED_TRACE(dict);
    const std::string path = WriteFile("header.npy", NpyBytes(dict, F32Bytes({1.0f})));
    ExpectFileError([&] { read_npy(path); }, path, "cannot parse .npy header: " + phrase);
  }
}

TEST_F(TensorFileTest, NpyUnsupportedDtype) {
  const std::string path = WriteFile("int.npy", NpyBytes(NpyDict("<i4", "(1,)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(path); }, path,
                  "'<i4' is not a supported dtype; expected one of <f4 <f8 <f2 >f4 >f8 >f2");
  const std::string native = WriteFile("native.npy", NpyBytes(NpyDict("|f4", "(1,)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(native); }, native, "'|f4' is not a supported dtype");
}

TEST_F(TensorFileTest, NpyNegativeDimension) {
  const std::string path = WriteFile("negative.npy", NpyBytes(NpyDict("<f4", "(3, -1)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(path); }, path, "shape (3, -1) has a negative dimension");
}

TEST_F(TensorFileTest, NpyOverflowingShape) {
  const std::string product =
      WriteFile("product.npy", NpyBytes(NpyDict("<f4", "(4294967296, 4294967296)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(product); }, product, "overflows: too many elements");
  const std::string bytes =
      WriteFile("bytes.npy", NpyBytes(NpyDict("<f8", "(2305843009213693952,)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(bytes); }, bytes, "overflows: too many bytes");
  const std::string literal =
      WriteFile("literal.npy", NpyBytes(NpyDict("<f4", "(99999999999999999999,)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(literal); }, literal, "shape dimension 99999999999999999999 overflows");
}

TEST_F(TensorFileTest, NpyHugeShapeIsRejectedBeforeAllocating) {
  // 10^15 float32 elements would need 4 PB; a reader that allocated first would
  // throw std::bad_alloc, not TensorFileError.
  const std::string path = WriteFile("huge.npy", NpyBytes(NpyDict("<f4", "(1000000000000000,)"), F32Bytes({1.0f})));
  ExpectFileError([&] { read_npy(path); }, path,
                  "truncated: shape (1000000000000000,) needs 4000000000000000 bytes of data, file has 4");
}

TEST_F(TensorFileTest, NpyTruncatedData) {
  const std::string path = WriteFile("short.npy", NpyBytes(NpyDict("<f4", "(3, 4)"), F32Bytes({1, 2, 3, 4, 5})));
  ExpectFileError([&] { read_npy(path); }, path, "truncated: shape (3, 4) needs 48 bytes of data, file has 20");
}

TEST_F(TensorFileTest, NpyTrailingBytes) {
  const std::string path =
      WriteFile("long.npy", NpyBytes(NpyDict("<f4", "(3, 4)"), F32Bytes(std::vector<float>(13, 1.0f))));
  ExpectFileError([&] { read_npy(path); }, path, "trailing bytes: shape (3, 4) needs 48 bytes of data, file has 52");
}

TEST_F(TensorFileTest, NpyEveryProperPrefixOfAFileIsRejected) {
  const std::string whole = NpyBytes(NpyDict("<f2", "(2, 3)", true), std::string(12, '\x11'));
  ASSERT_NO_THROW(read_npy(WriteFile("whole.npy", whole)));
  for (std::size_t size = 0; size < whole.size(); ++size) {
    const std::string path = WriteFile("prefix.npy", whole.substr(0, size));
    EXPECT_THROW(read_npy(path), TensorFileError) << "prefix of " << size << " bytes";
  }
}

TEST_F(TensorFileTest, WriteNpyErrors) {
  const std::vector<float> values = {1.0f};
  const std::string unwritable = PathOf("no/such/dir/out.npy");
  ExpectFileError([&] { write_npy(unwritable, {1}, values.data()); }, unwritable, "cannot open for writing");
  const std::string negative = PathOf("negative.npy");
  ExpectFileError([&] { write_npy(negative, {2, -1}, values.data()); }, negative, "negative dimension");
}

// ---------------------------------------------------------------- .safetensors round trips

TEST_F(TensorFileTest, SafetensorsRoundTripPreservesOrderShapesAndBits) {
  std::vector<Tensor> tensors;
  const std::vector<std::string> names = {"zeta", "alpha", "model.layers.0.weight", "beta", "gamma", "delta", "empty",
                                          "also_empty"};
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    tensors.push_back(Tensor{names[i], kShapes[i], TestValues(static_cast<std::size_t>(Product(kShapes[i])))});
  }
  const std::string path = PathOf("model.safetensors");
  write_safetensors(path, tensors);
  EXPECT_EQ(list_safetensors(path), names);
  for (const Tensor& expected : tensors) {
    SCOPED_TRACE(expected.name);
    const Tensor tensor = read_safetensors(path, expected.name);
    EXPECT_EQ(tensor.name, expected.name);
    EXPECT_EQ(tensor.shape, expected.shape);
    ExpectBitwiseEqual(expected.data, tensor.data);
  }
}

TEST_F(TensorFileTest, SafetensorsSingleTensorNeedsNoName) {
  const std::vector<float> values = SpecialValues();
  const std::string path = PathOf("one.safetensors");
  write_safetensors(path, {Tensor{"only", {2, 9}, values}});
  for (const Tensor& tensor : {read_safetensors(path), read_tensor(path)}) {
    EXPECT_EQ(tensor.name, "only");
    EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 9}));
    ExpectBitwiseEqual(values, tensor.data);
  }
}

TEST_F(TensorFileTest, WriteSafetensorsPadsTheHeaderWithSpacesToAMultipleOf8) {
  for (const std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    SCOPED_TRACE(name);
    const std::string path = PathOf("pad.safetensors");
    write_safetensors(path, {Tensor{name, {2}, {1.5f, -3.0f}}});
    const std::string bytes = ReadFile(path);
    ASSERT_GE(bytes.size(), 8u);
    uint64_t header_size = 0;
    for (std::size_t i = 0; i < 8; ++i) header_size |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    EXPECT_EQ(header_size % 8, 0u);
    ASSERT_EQ(bytes.size(), 8 + header_size + 8);
    const std::string header = bytes.substr(8, header_size);
    const std::size_t close = header.rfind('}');
    ASSERT_NE(close, std::string::npos);
    EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << header;
    EXPECT_NE(header.find("\"dtype\":\"F32\""), std::string::npos) << header;
    EXPECT_NE(header.find("\"data_offsets\":[0,8]"), std::string::npos) << header;
    EXPECT_EQ(bytes.substr(8 + header_size), F32Bytes({1.5f, -3.0f}));
  }
}

// ---------------------------------------------------------------- .safetensors decoding

TEST_F(TensorFileTest, SafetensorsF16AndBf16DecodeAllBitPatternsExactly) {
  std::string data;
  for (uint32_t pattern = 0; pattern < 65536; ++pattern) append_le(data, static_cast<uint16_t>(pattern));
  const std::string json = "{\"half\":{\"dtype\":\"F16\",\"shape\":[256,256],\"data_offsets\":[0,131072]},"
                           "\"brain\":{\"dtype\":\"BF16\",\"shape\":[65536],\"data_offsets\":[131072,262144]}}";
  const std::string path = WriteFile("halves.safetensors", SafetensorsBytes(json, data + data));
  const Tensor half = read_safetensors(path, "half");
  const Tensor brain = read_safetensors(path, "brain");
  EXPECT_EQ(half.shape, (std::vector<int64_t>{256, 256}));
  ASSERT_EQ(half.data.size(), 65536u);
  ASSERT_EQ(brain.data.size(), 65536u);
  for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
    ExpectSameFloat(f16_reference(static_cast<uint16_t>(pattern)), half.data[pattern], pattern);
    ExpectSameFloat(bf16_reference(static_cast<uint16_t>(pattern)), brain.data[pattern], pattern);
  }
  // BF16 is the top half of a float32, so even NaN payloads survive.
  for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
    EXPECT_EQ(bits_of(brain.data[pattern]), pattern << 16) << pattern;
  }
  // Only the BF16 tensor says so (the GPU commands then upload it as BF16).
  EXPECT_TRUE(brain.bf16);
  EXPECT_FALSE(half.bf16);
}

TEST_F(TensorFileTest, SafetensorsF64RoundsToNearestEven) {
  const std::vector<DoubleCase> cases = DoubleCases();
  std::string data;
  for (const DoubleCase& c : cases) append_le(data, bits_of(c.input));
  const std::string json = "{\"d\":{\"dtype\":\"F64\",\"shape\":[4,4],\"data_offsets\":[0,128]}}";
  const Tensor tensor = read_safetensors(WriteFile("double.safetensors", SafetensorsBytes(json, data)));
  ASSERT_EQ(tensor.data.size(), 16u);
  for (std::size_t i = 0; i < cases.size(); ++i) ExpectSameFloat(cases[i].expected, tensor.data[i], i);
}

TEST_F(TensorFileTest, SafetensorsIgnoresMetadataAndKeepsFileOrder) {
  const std::string json = "{\"__metadata__\":{\"format\":\"pt\"},"
                           "\"z\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]},"
                           "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  const std::string path = WriteFile("meta.safetensors", SafetensorsBytes(json, F32Bytes({1.0f, 2.0f})));
  EXPECT_EQ(list_safetensors(path), (std::vector<std::string>{"z", "a"}));
  const Tensor z = read_safetensors(path, "z");
  EXPECT_TRUE(z.shape.empty());
  ExpectBitwiseEqual({2.0f}, z.data);
  ExpectBitwiseEqual({1.0f}, read_safetensors(path, "a").data);
}

TEST_F(TensorFileTest, SafetensorsReadsOneTensorBesideAnUnsupportedOne) {
  const std::string json = "{\"ids\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                           "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
  const std::string path =
      WriteFile("mixed.safetensors", SafetensorsBytes(json, std::string(8, '\0') + F32Bytes({3.0f, 4.0f})));
  ExpectBitwiseEqual({3.0f, 4.0f}, read_safetensors(path, "w").data);
}

// ---------------------------------------------------------------- .safetensors errors

TEST_F(TensorFileTest, SafetensorsMissingFile) {
  const std::string path = PathOf("absent.safetensors");
  ExpectFileError([&] { read_safetensors(path); }, path, "cannot open for reading");
  ExpectFileError([&] { list_safetensors(path); }, path, "cannot open for reading");
}

TEST_F(TensorFileTest, SafetensorsFileShorterThanTheSizeField) {
  const std::string path = WriteFile("short.safetensors", "abc");
  ExpectFileError([&] { read_safetensors(path); }, path, "too short (3 bytes) for the 8-byte header size");
}

TEST_F(TensorFileTest, SafetensorsHeaderSizeLargerThanTheFile) {
  std::string bytes;
  append_le(bytes, uint64_t{1000});
  bytes += "{}";
  const std::string path = WriteFile("size.safetensors", bytes);
  ExpectFileError([&] { read_safetensors(path); }, path, "header size 1000 is larger than the file (10 bytes)");
  std::string huge;
  append_le(huge, ~uint64_t{0});
  const std::string huge_path = WriteFile("huge.safetensors", huge + "{}");
  ExpectFileError([&] { list_safetensors(huge_path); }, huge_path, "is larger than the file");
}

TEST_F(TensorFileTest, SafetensorsHeaderIsNotJson) {
  const std::string path = WriteFile("json.safetensors", SafetensorsBytes("{\"w\": [", ""));
  ExpectFileError([&] { read_safetensors(path); }, path, "header is not valid JSON");
}

TEST_F(TensorFileTest, SafetensorsHeaderIsNotAnObject) {
  const std::string path = WriteFile("array.safetensors", SafetensorsBytes("[1, 2]", ""));
  ExpectFileError([&] { read_safetensors(path); }, path, "header is not a JSON object");
}

TEST_F(TensorFileTest, SafetensorsMalformedEntries) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"w\":7}", "tensor 'w': entry is not a JSON object"},
      {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", "malformed 'dtype'"},
      {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", "malformed 'shape'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "malformed 'shape'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", "malformed 'shape'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", "malformed 'data_offsets'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", "malformed 'data_offsets'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}}", "malformed 'data_offsets'"},
  };
  for (const auto& [json, phrase] : cases) {
    SCOPED_TRACE(json);
    const std::string path = WriteFile("entry.safetensors", SafetensorsBytes(json, F32Bytes({1.0f})));
    ExpectFileError([&] { read_safetensors(path); }, path, phrase);
  }
}

TEST_F(TensorFileTest, SafetensorsOffsetsOutOfRange) {
  const std::string json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
  const std::string path = WriteFile("range.safetensors", SafetensorsBytes(json, F32Bytes({1.0f, 2.0f})));
  ExpectFileError([&] { read_safetensors(path); }, path,
                  "tensor 'w': data_offsets [0, 12] lie outside the 8-byte data buffer");
}

TEST_F(TensorFileTest, SafetensorsOffsetsBeginAfterEnd) {
  const std::string json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}";
  const std::string path = WriteFile("reversed.safetensors", SafetensorsBytes(json, F32Bytes({1.0f, 2.0f})));
  ExpectFileError([&] { read_safetensors(path); }, path, "data_offsets [8, 4] have begin after end");
}

TEST_F(TensorFileTest, SafetensorsByteCountDisagreesWithShape) {
  const std::string json = "{\"w\":{\"dtype\":\"BF16\",\"shape\":[3, 4],\"data_offsets\":[0,20]}}";
  const std::string path = WriteFile("count.safetensors", SafetensorsBytes(json, std::string(20, '\0')));
  ExpectFileError([&] { read_safetensors(path); }, path,
                  "tensor 'w': shape [3, 4] of BF16 needs 24 bytes, but data_offsets [0, 20] span 20");
  const std::string huge_json =
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[1000000000,1000000000,1000000000],\"data_offsets\":[0,4]}}";
  const std::string huge = WriteFile("huge.safetensors", SafetensorsBytes(huge_json, F32Bytes({1.0f})));
  ExpectFileError([&] { read_safetensors(huge); }, huge, "needs too many bytes");
}

TEST_F(TensorFileTest, SafetensorsUnsupportedDtype) {
  const std::string json = "{\"w\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  const std::string path = WriteFile("int.safetensors", SafetensorsBytes(json, F32Bytes({1.0f})));
  ExpectFileError([&] { read_safetensors(path); }, path,
                  "tensor 'w': 'I32' is not a supported dtype; expected one of F32 F64 F16 BF16");
}

TEST_F(TensorFileTest, SafetensorsMissingName) {
  const std::string path = PathOf("two.safetensors");
  write_safetensors(path, {Tensor{"first", {1}, {1.0f}}, Tensor{"second", {1}, {2.0f}}});
  ExpectFileError([&] { read_safetensors(path, "third"); }, path,
                  "no tensor named 'third'; the file holds: first, second");
}

TEST_F(TensorFileTest, SafetensorsEmptyNameWithSeveralTensors) {
  const std::string path = PathOf("two.safetensors");
  write_safetensors(path, {Tensor{"first", {1}, {1.0f}}, Tensor{"second", {1}, {2.0f}}});
  ExpectFileError([&] { read_safetensors(path); }, path, "the file holds 2 tensors (first, second); pick one by name");
  ExpectFileError([&] { read_tensor(path); }, path, "pick one by name");
}

TEST_F(TensorFileTest, SafetensorsLongNameListsAreCut) {
  std::vector<Tensor> tensors;
  for (int i = 0; i < 20; ++i) tensors.push_back(Tensor{"t" + std::to_string(i), {1}, {0.0f}});
  const std::string path = PathOf("many.safetensors");
  write_safetensors(path, tensors);
  ExpectFileError([&] { read_safetensors(path, "x"); }, path, "t14, t15, ... and 4 more");
}

TEST_F(TensorFileTest, SafetensorsWithoutTensors) {
  const std::string path = WriteFile("none.safetensors", SafetensorsBytes("{\"__metadata__\":{}}", ""));
  EXPECT_TRUE(list_safetensors(path).empty());
  ExpectFileError([&] { read_safetensors(path); }, path, "the file holds no tensors");
}

TEST_F(TensorFileTest, SafetensorsEveryProperPrefixOfAFileIsRejected) {
  const std::string path = PathOf("whole.safetensors");
  write_safetensors(path, {Tensor{"a", {2}, {1.0f, 2.0f}}, Tensor{"b", {1}, {3.0f}}});
  const std::string whole = ReadFile(path);
  ASSERT_NO_THROW(read_safetensors(path, "b"));
  for (std::size_t size = 0; size < whole.size(); ++size) {
    const std::string prefix = WriteFile("prefix.safetensors", whole.substr(0, size));
    EXPECT_THROW(read_safetensors(prefix, "b"), TensorFileError) << "prefix of " << size << " bytes";
  }
}

TEST_F(TensorFileTest, WriteSafetensorsErrors) {
  const std::string path = PathOf("bad.safetensors");
  ExpectFileError([&] { write_safetensors(path, {Tensor{"w", {2, 2}, {1.0f}}}); }, path,
                  "tensor 'w': shape [2, 2] needs 4 values, data has 1");
  ExpectFileError([&] { write_safetensors(path, {Tensor{"w", {1}, {1.0f}}, Tensor{"w", {1}, {2.0f}}}); }, path,
                  "tensor 'w': the name is used twice");
  ExpectFileError([&] { write_safetensors(path, {Tensor{"", {1}, {1.0f}}}); }, path, "is not a valid tensor name");
  ExpectFileError([&] { write_safetensors(path, {Tensor{"__metadata__", {1}, {1.0f}}}); }, path,
                  "is not a valid tensor name");
  ExpectFileError([&] { write_safetensors(path, {Tensor{"w", {-1}, {}}}); }, path, "negative dimension");
  const std::string unwritable = PathOf("no/such/dir/out.safetensors");
  ExpectFileError([&] { write_safetensors(unwritable, {Tensor{"w", {1}, {1.0f}}}); }, unwritable,
                  "cannot open for writing");
}

// ---------------------------------------------------------------- stored .safetensors (any dtype)

std::vector<uint8_t> LeBytes(uint64_t value, std::size_t size) {
  std::vector<uint8_t> bytes;
  for (std::size_t i = 0; i < size; ++i) bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
  return bytes;
}

std::vector<uint8_t> I64Bytes(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes;
  for (const int64_t value : values) {
    const std::vector<uint8_t> word = LeBytes(static_cast<uint64_t>(value), 8);
    bytes.insert(bytes.end(), word.begin(), word.end());
  }
  return bytes;
}

std::vector<uint8_t> U16Bytes(const std::vector<uint16_t>& values) {
  std::vector<uint8_t> bytes;
  for (const uint16_t value : values) {
    const std::vector<uint8_t> half = LeBytes(value, 2);
    bytes.insert(bytes.end(), half.begin(), half.end());
  }
  return bytes;
}

void ExpectSameStoredFile(const SafetensorsFile& expected, const SafetensorsFile& actual) {
  ASSERT_EQ(actual.tensors.size(), expected.tensors.size());
  for (std::size_t i = 0; i < expected.tensors.size(); ++i) {
    const StoredTensor& e = expected.tensors[i];
    const StoredTensor& a = actual.tensors[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(a.name, e.name);
    EXPECT_EQ(a.dtype, e.dtype);
    EXPECT_EQ(a.shape, e.shape);
    EXPECT_EQ(a.bytes, e.bytes);
  }
  EXPECT_EQ(actual.metadata, expected.metadata);
}

// Tensors named out of alphabetical order, in dtypes the float readers do not
// decode and two they do, holding every byte value, NaN payloads and integer
// extremes; metadata with quotes, a newline, non-ASCII text and an empty value.
SafetensorsFile MixedStoredFile() {
  SafetensorsFile file;
  std::vector<uint8_t> every_byte(256);
  for (std::size_t i = 0; i < every_byte.size(); ++i) every_byte[i] = static_cast<uint8_t>(i);
  file.tensors = {
      {"zeta.ids", "I64", {2, 2}, I64Bytes({-1, std::numeric_limits<int64_t>::min(), 42,
                                            std::numeric_limits<int64_t>::max()})},
      {"codes", "U8", {16, 16}, every_byte},
      {"alpha.bf16", "BF16", {4}, U16Bytes({0x3f80, 0xffc1, 0x8001, 0x7f80})},
      {"fp8", "F8_E4M3", {2, 3}, {0x00, 0x7f, 0xff, 0x80, 0x38, 0x7e}},
      {"scalar", "F32", {}, LeBytes(bits_of(1.5f), 4)},
      {"empty", "U8", {4, 0}, {}},
  };
  file.metadata = {{"format", "pt"}, {"note", "a \"quoted\"\nline: \xc3\xbcnic\xc3\xb6" "de"}, {"blank", ""}};
  return file;
}

TEST_F(TensorFileTest, StoredSafetensorsRoundTripKeepsBytesShapesOrderAndMetadata) {
  const SafetensorsFile file = MixedStoredFile();
  const std::string path = PathOf("stored.safetensors");
  write_safetensors_file(path, file);
  ExpectSameStoredFile(file, read_safetensors_file(path));

  // The data buffer is every tensor's bytes back to back, in the given order.
  const std::string bytes = ReadFile(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t header_size = 0;
  for (std::size_t i = 0; i < 8; ++i) header_size |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  EXPECT_EQ(header_size % 8, 0u);
  std::string data;
  for (const StoredTensor& t : file.tensors) data.append(t.bytes.begin(), t.bytes.end());
  ASSERT_EQ(bytes.size(), 8 + header_size + data.size());
  EXPECT_EQ(bytes.substr(8 + header_size), data);

  // The float view sees the same file: its order, and the BF16 and F32 values bit for bit.
  EXPECT_EQ(list_safetensors(path),
            (std::vector<std::string>{"zeta.ids", "codes", "alpha.bf16", "fp8", "scalar", "empty"}));
  const Tensor brain = read_safetensors(path, "alpha.bf16");
  ASSERT_EQ(brain.data.size(), 4u);
  const std::vector<uint32_t> expected = {0x3f800000u, 0xffc10000u, 0x80010000u, 0x7f800000u};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(bits_of(brain.data[i]), expected[i]) << i;
  const Tensor scalar = read_safetensors(path, "scalar");
  EXPECT_TRUE(scalar.shape.empty());
  ExpectBitwiseEqual({1.5f}, scalar.data);
}

TEST_F(TensorFileTest, StoredSafetensorsWithoutMetadataOrTensors) {
  const std::string path = PathOf("bare.safetensors");
  SafetensorsFile bare;
  bare.tensors = {{"w", "U8", {3}, {1, 2, 3}}};
  write_safetensors_file(path, bare);
  ExpectSameStoredFile(bare, read_safetensors_file(path));
  SafetensorsFile metadata_only;
  metadata_only.metadata = {{"k", "v"}};
  write_safetensors_file(path, metadata_only);
  ExpectSameStoredFile(metadata_only, read_safetensors_file(path));
}

TEST_F(TensorFileTest, StoredSafetensorsCarryEveryDtypeOfTheFormat) {
  const std::vector<std::pair<std::string, std::size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
      {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8}};
  SafetensorsFile file;
  for (std::size_t d = 0; d < dtypes.size(); ++d) {
    std::vector<uint8_t> bytes(3 * dtypes[d].second);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(37 * i + 11 * d + 1);
    file.tensors.push_back({"t_" + dtypes[d].first, dtypes[d].first, {1, 3}, bytes});
  }
  const std::string path = PathOf("dtypes.safetensors");
  write_safetensors_file(path, file);
  ExpectSameStoredFile(file, read_safetensors_file(path));
  EXPECT_EQ(file.tensors.size(), 15u);
}

TEST_F(TensorFileTest, SafetensorsFloatReaderStillRejectsAU8Tensor) {
  SafetensorsFile file;
  file.tensors = {{"u", "U8", {4}, {1, 2, 3, 4}}, {"f", "F32", {1}, LeBytes(bits_of(-2.0f), 4)}};
  const std::string path = PathOf("u8.safetensors");
  write_safetensors_file(path, file);
  ExpectFileError([&] { read_safetensors(path, "u"); }, path,
                  "tensor 'u': 'U8' is not a supported dtype; expected one of F32 F64 F16 BF16");
  ExpectBitwiseEqual({-2.0f}, read_safetensors(path, "f").data);
}

TEST_F(TensorFileTest, WriteSafetensorsFileErrors) {
  const std::string path = PathOf("bad.safetensors");
  const auto expect_write_error = [&](const std::vector<StoredTensor>& tensors, const std::string& phrase) {
    SafetensorsFile file;
    file.tensors = tensors;
    ExpectFileError([&] { write_safetensors_file(path, file); }, path, phrase);
    EXPECT_FALSE(fs::exists(path)) << phrase;
  };
  expect_write_error({{"w", "F4", {2}, {0, 0}}}, "tensor 'w': 'F4' is not a safetensors dtype");
  expect_write_error({{"w", "u8", {2}, {0, 0}}}, "tensor 'w': 'u8' is not a safetensors dtype");
  expect_write_error({{"w", "I64", {2}, std::vector<uint8_t>(15)}},
                     "tensor 'w': shape [2] of I64 needs 16 bytes, data has 15");
  expect_write_error({{"w", "U8", {2, 3}, std::vector<uint8_t>(7)}},
                     "tensor 'w': shape [2, 3] of U8 needs 6 bytes, data has 7");
  expect_write_error({{"w", "U8", {1}, {0}}, {"v", "U8", {1}, {0}}, {"w", "BF16", {1}, {0, 0}}},
                     "tensor 'w': the name is used twice");
  expect_write_error({{"", "U8", {1}, {0}}}, "is not a valid tensor name");
  expect_write_error({{"__metadata__", "U8", {1}, {0}}}, "is not a valid tensor name");
  expect_write_error({{"w", "U8", {-1}, {}}}, "negative dimension");
}

TEST_F(TensorFileTest, ReadSafetensorsFileErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"w\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       "tensor 'w': 'Q4' is not a safetensors dtype"},
      {"{\"w\":{\"dtype\":\"U16\",\"shape\":[3],\"data_offsets\":[0,8]}}",
       "tensor 'w': shape [3] of U16 does not match data_offsets [0, 8] (8 bytes)"},
      {"{\"w\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       "tensor 'w': shape [2] of I64 does not match data_offsets [0, 8] (8 bytes)"},
      {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1000000000,1000000000,1000000000],\"data_offsets\":[0,8]}}",
       "tensor 'w': shape [1000000000, 1000000000, 1000000000] of U8 does not match"},
      {"{\"__metadata__\":[\"pt\"],\"w\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}",
       "'__metadata__' is not a JSON object"},
      {"{\"__metadata__\":\"pt\",\"w\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}",
       "'__metadata__' is not a JSON object"},
      {"{\"__metadata__\":{\"format\":\"pt\",\"step\":3},"
       "\"w\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}",
       "'__metadata__' entry 'step' is not a string"},
      {"{\"__metadata__\":{\"nested\":{}}}", "'__metadata__' entry 'nested' is not a string"},
  };
  for (const auto& [json, phrase] : cases) {
    SCOPED_TRACE(json);
    const std::string path = WriteFile("raw.safetensors", SafetensorsBytes(json, std::string(8, '\x5a')));
    ExpectFileError([&] { read_safetensors_file(path); }, path, phrase);
  }
  const std::string missing = PathOf("absent.safetensors");
  ExpectFileError([&] { read_safetensors_file(missing); }, missing, "cannot open for reading");
}

// ---------------------------------------------------------------- dispatch and robustness

TEST_F(TensorFileTest, ReadTensorRejectsOtherExtensions) {
  const std::vector<float> values = {1.0f};
  for (const std::string file : {"weights.bin", "weights.NPY", "weights.SafeTensors", "weights"}) {
    SCOPED_TRACE(file);
    const std::string path = PathOf(file);
    write_npy(path, {1}, values.data());
    ExpectFileError([&] { read_tensor(path); }, path, "unsupported file extension; expected .npy or .safetensors");
  }
}

TEST_F(TensorFileTest, CorruptedBytesNeverEscapeAsAnythingButTensorFileError) {
  const std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  write_npy(PathOf("good.npy"), {2, 3}, values.data());
  write_safetensors(PathOf("good.safetensors"), {Tensor{"a", {2, 3}, values}, Tensor{"b", {6}, values}});
  int accepted = 0;
  int rejected = 0;
  for (const std::string file : {"good.npy", "good.safetensors"}) {
    const std::string original = ReadFile(PathOf(file));
    ASSERT_FALSE(original.empty());
    const std::string path = PathOf("corrupt" + fs::path(file).extension().string());
    for (std::size_t position = 0; position < original.size(); ++position) {
      for (const int flip : {0x01, 0x20, 0x80, 0xff}) {
        std::string bytes = original;
        bytes[position] = static_cast<char>(static_cast<unsigned char>(bytes[position]) ^ flip);
        WriteFile(fs::path(path).filename().string(), bytes);
        try {
          read_tensor(path, "a");
          ++accepted;
        } catch (const TensorFileError&) {
          ++rejected;
        } catch (const std::exception& error) {
          ADD_FAILURE() << file << " byte " << position << " ^ " << flip << ": " << error.what();
        }
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace nibble::io
