// Quantized tensors as files: the codes, block scales and tensor scale of a
// QuantizedTensor (golden's, or a device's copied to the host) with the
// configuration that made them, in a .safetensors file that PyTorch and the
// safetensors library read as it is. `nibble golden-quant` and
// `nibble gpu-quant` write it; `nibble golden-quant --check` compares one,
// from those or from a design under test, with golden bit for bit.
//
// Schema "nibble-quantized", version 1. A quantized tensor named N is three
// tensors and one metadata entry:
//   N.codes         U8  [rows, ceil(cols / 2)]  two codes a byte, element 2k of
//                       a row in the low nibble of its byte k (golden
//                       pack_codes, row by row); an odd row's last high nibble is 0
//   N.scales        [block rows, block cols]: U8 E4M3 or UE8M0 codes (nvfp4,
//                       mx-floor, mx-ceil), or F32 binary32 scales (fp32)
//   N.tensor_scale  F32 [2]: {S_enc, g}, {1, 1} in every mode but nvfp4
//   __metadata__ "N": a JSON object {"rows", "cols", "transposed", "format",
//                       "block", "scale", "rounding", "sr_bits", "rht",
//                       "rht_bf16", "seed", "stream"} (names as the command
//                       line spells them; rht 0 = off), and the pair "zero",
//                       "nonfinite" (the quantizer's policies) where they are
//                       not the defaults "positive", "finite": absent, they are
//                       those, so files written before the policies read as before
//   __metadata__ "nibble.schema": "nibble-quantized/1"
// transposed: N holds the quantized transpose of its source tensor (a
// column-wise output), [rows, cols] = the source's [cols, rows].
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nibble/io/tensor_file.h"
#include "nibble/quantize.h"

namespace nibble::io {

inline constexpr const char* kQuantizedSchema = "nibble-quantized/1";

struct QuantizedEntry {
  std::string name;
  bool transposed = false;
  QuantizedTensor tensor;
};

// What makes q unfit to be a quantized tensor, or nothing: a shape without
// elements or with an axis beyond 2^31 - 1, a configuration golden refuses or
// whose RHT does not divide cols, codes or block scales in numbers the shape
// and block grid do not hold, a code above 4 bits, an E4M3/UE8M0 scale code
// above 8 bits, or a tensor scale other than {1, 1} outside nvfp4. The checks
// of write_quantized, for callers that build a QuantizedTensor from outside data.
std::optional<std::string> quantized_defect(const QuantizedTensor& q);

// Writes the entries in order. Raises TensorFileError naming the file and the
// entry for an empty, reserved or repeated name, an invalid configuration, or
// codes, scales or a tensor scale that the configuration and shape cannot hold.
void write_quantized(const std::string& path, const std::vector<QuantizedEntry>& entries);

// Every entry of a file, in its order. Raises TensorFileError for anything
// but this schema: another schema or version, a metadata entry whose fields
// are missing, ill-typed or unknown names, a tensor of the wrong dtype or
// shape, a padding nibble that is not 0, a tensor scale other than {1, 1}
// outside nvfp4, tensors that belong to no entry, or no entry at all.
std::vector<QuantizedEntry> read_quantized(const std::string& path);

// Where two quantized tensors of one shape differ: the elements whose codes
// differ, the blocks whose scale codes differ (each with the first in
// row-major order, -1 if none) and whether the tensor scales' bits differ.
struct QuantizedDiff {
  int64_t codes = 0;
  int64_t first_code = -1;
  int64_t scales = 0;
  int64_t first_scale = -1;
  bool tensor_scale = false;

  bool same() const { return codes == 0 && scales == 0 && !tensor_scale; }
};
// Throws std::invalid_argument if the shapes or block shapes differ.
QuantizedDiff diff_quantized(const QuantizedTensor& got, const QuantizedTensor& want);
// "bit-exact", or what differs with the first of each kind and both values:
// "2 of 703 codes (first at [0, 5]: 0x3, expected 0x4); 1 of 57 block scales
// (first at block [0, 1]: 0x38, expected 0x39); tensor scale {...}, expected {...}".
std::string describe(const QuantizedDiff& d, const QuantizedTensor& got, const QuantizedTensor& want);

}  // namespace nibble::io
