// The cycle simulator's architecture file (nibble gemm --arch, nibble workload
// --arch), with the tile configuration inside it (the gemm --config reader):
// any text either reads as a configuration that passes validate(), or raises
// model::ConfigError.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "nibble/model/config.h"
#include "nibble/sim/arch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nibble::sim::ArchConfig a =
        nibble::sim::arch_from_json_text(std::string(reinterpret_cast<const char*>(data), size));
    nibble::sim::validate(a);  // a configuration that was read must be a valid one
    (void)nibble::sim::to_json_text(a);
  } catch (const nibble::model::ConfigError&) {
  }
  return 0;
}
