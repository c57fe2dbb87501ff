// Tensor's matrix view and the extension-based dispatch over the file formats.
#include "nibble/io/tensor_file.h"

#include <filesystem>
#include <functional>
#include <numeric>

#include <fmt/format.h>

namespace nibble::io {

int64_t Tensor::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t Tensor::rows() const {
  if (shape.empty()) return 1;
  return std::accumulate(shape.begin(), shape.end() - 1, int64_t{1}, std::multiplies<>());
}

int64_t Tensor::cols() const { return shape.empty() ? 1 : shape.back(); }

Tensor read_tensor(const std::string& path, const std::string& name) {
  const std::string extension = std::filesystem::path(path).extension().string();
  // A .npy file holds one unnamed array, so `name` has nothing to select there.
  if (extension == ".npy") return read_npy(path);
  if (extension == ".safetensors") return read_safetensors(path, name);
  throw TensorFileError(fmt::format("{}: unsupported file extension; expected .npy or .safetensors", path));
}

}  // namespace nibble::io
