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
  std::string formats, modes;
  for (Format f : cfg.formats) formats += (formats.empty() ? "" : ", ") + std::string(nibble::name(f));
  for (ScaleMode m : cfg.scale_modes) modes += (modes.empty() ? "" : ", ") + std::string(nibble::name(m));
  for (const QuantizedTensor* q : {&a, &b}) {
    const char* which = q == &a ? "A" : "B";
    if (!cfg.allows(q->config.format)) {
      throw std::invalid_argument(who + ": format of " + which + " '" + std::string(nibble::name(q->config.format)) +
                                  "' is not in the tile's formats (" + formats + ")");
    }
    if (!cfg.allows(q->config.scale)) {
      throw std::invalid_argument(who + ": scale mode of " + which + " '" +
                                  std::string(nibble::name(q->config.scale)) + "' is not in the tile's scale_modes (" +
                                  modes + ")");
    }
  }
  const int step = std::min(block_cols(a.config.block), block_cols(b.config.block));
  if (step > cfg.lanes) {
    throw std::invalid_argument(who + ": a k-block of " + std::to_string(step) + " elements needs lanes >= " +
                                std::to_string(step) + " (the tile has " + std::to_string(cfg.lanes) + ")");
  }
}

}  // namespace nibble::sim::detail
