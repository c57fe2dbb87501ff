// Byte-level helpers shared by the .npy and .safetensors code; see bytes.h.
#include "bytes.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "nibble/io/tensor_file.h"

namespace nibble::io::detail {

void fail(const std::string& path, std::string_view defect) {
  throw TensorFileError(fmt::format("{}: {}", path, defect));
}

float half_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return bit_cast<float>(sign);
  // Subnormal half: mantissa * 2^-24 is normal in float; shift its leading one
  // into the implicit-bit position and lower the exponent to match.
  uint32_t float_exponent = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return bit_cast<float>(sign | (float_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

InputFile open_for_reading(const std::string& path) {
  std::error_code error;
  const uint64_t size = std::filesystem::file_size(path, error);
  if (error) fail(path, fmt::format("cannot open for reading: {}", error.message()));
  std::ifstream stream(path, std::ios::binary);
  if (!stream) fail(path, "cannot open for reading");
  return InputFile{std::move(stream), size};
}

std::vector<unsigned char> read_bytes(std::ifstream& stream, uint64_t count, const std::string& path) {
  std::vector<unsigned char> bytes(count);
  stream.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(count));
  if (static_cast<uint64_t>(stream.gcount()) != count) fail(path, "read failed: the file changed or is unreadable");
  return bytes;
}

void write_f32_le(std::ofstream& stream, const float* data, uint64_t count) {
  std::array<char, 16384> chunk{};
  constexpr std::size_t kPerChunk = chunk.size() / 4;
  for (uint64_t done = 0; done < count;) {
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(count - done, kPerChunk));
    for (std::size_t i = 0; i < n; ++i) {
      const auto bits = bit_cast<uint32_t>(data[done + i]);
      for (std::size_t b = 0; b < 4; ++b) chunk[4 * i + b] = static_cast<char>((bits >> (8 * b)) & 0xffu);
    }
    stream.write(chunk.data(), static_cast<std::streamsize>(4 * n));
    done += n;
  }
}

}  // namespace nibble::io::detail
