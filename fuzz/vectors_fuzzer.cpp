// Vector streams: checking any text against golden either counts its cases or
// raises vectors::ParseError.
#include <cstdint>
#include <sstream>
#include <string>

#include "nibble/vectors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)nibble::vectors::check_stream(in);
  } catch (const nibble::vectors::ParseError&) {
  }
  return 0;
}
