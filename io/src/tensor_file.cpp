// Tensor's matrix view and the extension-based dispatch over the file formats.
#include "nibble/io/tensor_file.h"

#include <filesystem>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "nibble/limits.h"

namespace nibble::io {

namespace {

int64_t product(std::vector<int64_t>::const_iterator begin, std::vector<int64_t>::const_iterator end,
                const std::string& name) {
  int64_t n = 1;
  for (auto it = begin; it != end; ++it) {
    const std::optional<int64_t> p = *it < 0 ? std::nullopt : limits::checked_mul(n, *it);
    if (!p) throw TensorFileError(fmt::format("tensor '{}': its shape overflows", name));
    n = *p;
  }
  return n;
}

}  // namespace

int64_t Tensor::numel() const { return product(shape.begin(), shape.end(), name); }

int64_t Tensor::rows() const {
  if (shape.empty()) return 1;
  return product(shape.begin(), shape.end() - 1, name);
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
