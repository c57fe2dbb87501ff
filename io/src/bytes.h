// Byte-level helpers shared by the .npy and .safetensors readers and writers:
// endian-aware integer loads, float16 -> float32 conversion, reading a whole
// file region with errors that name the file, and the little-endian float32
// writer. Private to nibble_io; not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace nibble::io::detail {

// Throws TensorFileError "<path>: <defect>".
[[noreturn]] void fail(const std::string& path, std::string_view defect);

template <typename To, typename From>
To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

template <typename UInt>
UInt load_le(const unsigned char* bytes) {
  UInt value = 0;
  for (std::size_t i = 0; i < sizeof(UInt); ++i) value |= static_cast<UInt>(UInt{bytes[i]} << (8 * i));
  return value;
}

template <typename UInt>
UInt load_be(const unsigned char* bytes) {
  UInt value = 0;
  for (std::size_t i = 0; i < sizeof(UInt); ++i) value = static_cast<UInt>((value << 8) | bytes[i]);
  return value;
}

// IEEE binary16 bits to float32; exact for every input (NaN payloads kept).
float half_to_float(uint16_t half);

struct InputFile {
  std::ifstream stream;
  uint64_t size = 0;
};

// Opens `path` for binary reading and records its size.
InputFile open_for_reading(const std::string& path);

// Reads exactly `count` bytes from the stream's position.
std::vector<unsigned char> read_bytes(std::ifstream& stream, uint64_t count, const std::string& path);

// Writes `count` floats as little-endian IEEE binary32, whatever the host order.
void write_f32_le(std::ofstream& stream, const float* data, uint64_t count);

}  // namespace nibble::io::detail
