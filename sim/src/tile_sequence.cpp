#include "tile_sequence.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "nibble/formats.h"
#include "nibble/scale.h"

namespace nibble::sim::detail {

void check_tile_operands(const std::string& who, const model::TileConfig& cfg, const QuantizedTensor& a,
                         const QuantizedTensor& b) {
  if (a.rows <= 0 || b.rows <= 0 || a.cols <= 0) throw std::invalid_argument(who + ": empty operands");
  if (a.cols != b.cols) {
    throw std::invalid_argument(who + ": contraction lengths differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.cols) + ")");
  }
  if (!(a.config.rht == b.config.rht) || (a.config.rht.enabled() && a.config.seed != b.config.seed)) {
    throw std::invalid_argument(who + ": operands must share the RHT size, bf16 option and seed");
  }
  check_tile_shape(who, cfg, shape_of(a, b));
}

}  // namespace nibble::sim::detail
