// .safetensors readers: the raw reader and the float32 view either succeed with
// consistent sizes or raise TensorFileError.
#include <cstdint>
#include <cstdlib>

#include "file_input.h"
#include "nibble/io/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nibble::fuzz::scratch_file(data, size, ".safetensors");
  try {
    const nibble::io::SafetensorsFile file = nibble::io::read_safetensors_file(path);
    for (const nibble::io::StoredTensor& t : file.tensors) {
      if (t.name.empty()) std::abort();
    }
  } catch (const nibble::io::TensorFileError&) {
  }
  try {
    const nibble::io::Tensor t = nibble::io::read_safetensors(path);
    if (static_cast<size_t>(t.numel()) != t.data.size()) std::abort();
  } catch (const nibble::io::TensorFileError&) {
  }
  return 0;
}
