// The installed C++ golden model (Nibble::golden, static): no Random123 or other
// dependency is needed to use it. Checks E2M1's largest value and a 1x16 quantization.
#include <cstdio>
#include <vector>

#include "nibble/quantize.h"

int main() {
  std::vector<float> x(16, 0.0f);
  x[0] = 6.0f;
  x[1] = -3.0f;
  const nibble::QuantizedTensor q = nibble::quantize(x.data(), 1, 16, nibble::QuantConfig{});
  const bool ok = nibble::max_value(nibble::Format::kE2M1) == 6.0f && q.codes[0] == 0x7 && q.codes[1] == 0xD &&
                  q.scales.size() == 1 && q.scales[0] == 0x3F800000u;
  std::printf("nibble golden consumer: %s\n", ok ? "pass" : "FAIL");
  return ok ? 0 : 1;
}
