// .npy reader: any bytes either read as a tensor whose element count matches its
// shape, or raise TensorFileError; nothing else (no crash, no other exception).
#include <cstdint>
#include <cstdlib>

#include "file_input.h"
#include "nibble/io/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nibble::fuzz::scratch_file(data, size, ".npy");
  try {
    const nibble::io::Tensor t = nibble::io::read_npy(path);
    if (static_cast<size_t>(t.numel()) != t.data.size() || t.rows() * t.cols() != t.numel()) std::abort();
  } catch (const nibble::io::TensorFileError&) {
  }
  return 0;
}
