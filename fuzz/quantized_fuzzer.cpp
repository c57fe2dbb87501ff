// Quantized-tensor files: read_quantized either returns entries whose codes and
// scales fill their shapes, or raises TensorFileError.
#include <cstdint>
#include <cstdlib>

#include "file_input.h"
#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nibble::fuzz::scratch_file(data, size, ".safetensors");
  try {
    for (const nibble::io::QuantizedEntry& e : nibble::io::read_quantized(path)) {
      const nibble::QuantizedTensor& q = e.tensor;
      if (q.codes.size() != static_cast<size_t>(q.rows * q.cols)) std::abort();
      if (q.scales.size() != static_cast<size_t>(q.block_grid_rows() * q.block_grid_cols())) std::abort();
    }
  } catch (const nibble::io::TensorFileError&) {
  }
  return 0;
}
