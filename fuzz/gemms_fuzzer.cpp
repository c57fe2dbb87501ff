// The GEMM list of nibble workload --gemms: any text either reads as a list of
// GEMMs whose sizes and counts are in range and whose quantizer work is
// (m + n) k elements, or raises model::ConfigError.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "nibble/model/config.h"
#include "nibble/sim/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::vector<nibble::sim::WorkloadGemm> list =
        nibble::sim::gemm_list_from_json_text(std::string(reinterpret_cast<const char*>(data), size));
    if (list.empty()) std::abort();
    constexpr int64_t kMax = int64_t{1} << 32;
    for (const nibble::sim::WorkloadGemm& g : list) {
      const nibble::sim::GemmShape& s = g.shape;
      if (s.m < 1 || s.m > kMax || s.n < 1 || s.n > kMax || s.k < 1 || s.k > kMax) std::abort();
      if (g.count < 1 || g.count > static_cast<uint64_t>(kMax) || g.bf16 || g.name.empty()) std::abort();
      const uint64_t elements = static_cast<uint64_t>(s.m + s.n) * static_cast<uint64_t>(s.k);
      if (g.quantize_elements != elements || (g.rht_elements != 0 && g.rht_elements != elements)) std::abort();
      if (s.scale_a != s.scale_b) std::abort();
    }
  } catch (const nibble::model::ConfigError&) {
  }
  return 0;
}
