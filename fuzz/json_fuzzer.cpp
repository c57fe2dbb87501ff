// JSON from outside: the bounded parser (both object orders) raises only
// JsonError, and the bench-kernels result reader only BenchFileError.
#include <cstdint>
#include <string_view>

#include "nibble/io/json.h"
#include "nibble/io/kernel_bench_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)nibble::io::parse_json(text).dump();
  } catch (const nibble::io::JsonError&) {
  }
  try {
    (void)nibble::io::parse_ordered_json(text);
  } catch (const nibble::io::JsonError&) {
  }
  try {
    (void)nibble::io::parse_kernel_bench(std::string(text), "input");
  } catch (const nibble::io::BenchFileError&) {
  }
  return 0;
}
