// The tile model's configuration: one typed struct, loaded from JSON or flags
// and checked strictly (unknown keys, wrong types and impossible values are
// errors that name the key).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "nibble/formats.h"
#include "nibble/scale.h"

namespace nibble::model {

// The RTL's documented tile latency: DpuLatency (3) + 1 cycle into the output
// buffer (rtl/README.md, nibble_tile).
inline constexpr int kRtlTileLatency = 4;

class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct TileConfig {
  int rows = 4;                                   // M of the array (A rows per panel)
  int cols = 4;                                   // N of the array (B rows per panel)
  int lanes = 16;                                 // k elements per beat: 16 or 32
  std::vector<Format> formats{kAllFormats.begin(), kAllFormats.end()};          // element formats built
  std::vector<ScaleMode> scale_modes{kAllScaleModes.begin(), kAllScaleModes.end()};  // scale modes accepted
  int latency = kRtlTileLatency;                  // last beat accepted -> first C row pushed
  double bandwidth = 64.0;                        // operand buffer, bytes per cycle

  bool allows(Format f) const;
  bool allows(ScaleMode m) const;
};

// Throws ConfigError naming the first bad key.
void validate(const TileConfig& cfg);

// JSON object with keys rows, cols, lanes, formats (array of names), scale_modes
// (array of names), latency, bandwidth; every key optional, no other key allowed.
// Starts from `base` (defaults) and validates the result.
TileConfig config_from_json_text(const std::string& text, const TileConfig& base = {});
TileConfig config_from_json_file(const std::string& path, const TileConfig& base = {});
std::string to_json_text(const TileConfig& cfg);

}  // namespace nibble::model
