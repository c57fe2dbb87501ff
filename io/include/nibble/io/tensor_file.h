// Reading and writing tensors in the two file formats users bring:
// NumPy .npy (format versions 1.0-3.0) and Hugging Face .safetensors.
//
// The tensor readers convert to float32 (exactly for f16/bf16, by IEEE RNE for
// f64) and return the tensor in row-major (C) order; read_safetensors_file
// keeps a file's bytes as stored, in any of its dtypes. Any defect in a file -- bad
// magic, truncated data, a header that does not parse, an unsupported dtype,
// a shape that disagrees with the byte count -- raises TensorFileError whose
// message names the file and the defect. No reader ever returns a partial tensor.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace nibble::io {

class TensorFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Tensor {
  std::string name;               // safetensors key, or the file stem for .npy
  std::vector<int64_t> shape;     // row-major; empty shape = scalar
  std::vector<float> data;        // product(shape) elements
  bool bf16 = false;              // read from bfloat16 (safetensors BF16): every value is exactly a BF16,
                                  // so its bit pattern's low 16 bits are zero

  int64_t numel() const;
  // The tensor seen as a matrix [rows, cols] whose cols is the last axis
  // (the contraction axis for quantization). A scalar is 1x1, a vector 1xN.
  int64_t rows() const;
  int64_t cols() const;
};

// .npy: dtypes <f4 <f8 <f2 (and big-endian >f4 >f8 >f2); fortran_order is
// accepted and the data is returned transposed into C order.
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data);

// .safetensors: dtypes F32, F64, F16, BF16. `name` selects a tensor; an empty
// name is allowed only when the file holds exactly one tensor.
Tensor read_safetensors(const std::string& path, const std::string& name = "");
std::vector<std::string> list_safetensors(const std::string& path);
void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors);

// A .safetensors file as stored: every tensor's little-endian bytes in any of
// the format's dtypes (BOOL, U8, I8, F8_E4M3, F8_E5M2, U16, I16, F16, BF16,
// U32, I32, F32, U64, I64, F64), and the header's "__metadata__" (a map of
// strings). The readers above are this one's float32 view; files of other
// dtypes (the quantized tensors of quantized_file.h) go through it.
struct StoredTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // product(shape) elements of the dtype's size
};
struct SafetensorsFile {
  std::vector<StoredTensor> tensors;  // in the file's order
  std::map<std::string, std::string> metadata;
};
SafetensorsFile read_safetensors_file(const std::string& path);
void write_safetensors_file(const std::string& path, const SafetensorsFile& file);

// Dispatches on the extension (.npy or .safetensors); anything else is an error.
Tensor read_tensor(const std::string& path, const std::string& name = "");

}  // namespace nibble::io
