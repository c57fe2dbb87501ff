#include "nibble/philox.h"

#include <Random123/philox.h>

namespace nibble {

PhiloxWords philox4x32_10(uint64_t seed, uint64_t group, uint32_t stream, PhiloxDomain domain) {
  using Philox = r123::Philox4x32_R<10>;
  const Philox::key_type key = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const Philox::ctr_type ctr = {{static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), stream,
                                 static_cast<uint32_t>(domain)}};
  const Philox::ctr_type out = Philox()(ctr, key);
  return {out[0], out[1], out[2], out[3]};
}

}  // namespace nibble
