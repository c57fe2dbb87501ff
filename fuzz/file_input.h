// The readers under fuzzing take a path: each input is written to a scratch
// file (named with the extension the reader expects) and read back from there.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace nibble::fuzz {

inline std::string scratch_file(const uint8_t* data, size_t size, const char* extension) {
  const std::string path = "/tmp/nibble-fuzz-" + std::to_string(::getpid()) + extension;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace nibble::fuzz
