// The quantization options of the commands that quantize a user's tensor
// (golden-quant, gpu-quant, gpu-gemm), the one-line name of a configuration,
// golden's quantization of a tensor or its transpose, and the helpers the
// commands on quantized-tensor files share.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nibble/io/tensor_file.h"
#include "nibble/quantize.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace nibble::cli {

struct QuantFlags {
  std::string format = "e2m1";
  std::string block = "1x16";
  std::string scale = "nvfp4";
  std::string rounding = "rne";
  int sr_bits = 8;
  int rht = 0;
  bool rht_bf16 = false;
  uint64_t seed = 0;
  uint32_t stream = 0;
  std::string zero = "positive";
  std::string nonfinite = "finite";

  // Registers --<prefix>format, --<prefix>block, --<prefix>scale and
  // --<prefix>rounding, and without a prefix the options both operands share
  // (--sr-bits, --rht, --rht-bf16, --seed, --stream, and the policies --zero
  // and --nonfinite); `rht_sizes` is --rht's help text. Returns the options registered.
  std::vector<CLI::Option*> add_to(CLI::App* cmd, const std::string& prefix = "",
                                   const std::string& rht_sizes = "0 (off), 16, 32, 64 or 128");
  // The configuration, checked by golden's rules (UsageError naming the option).
  QuantConfig config() const;
};

// "e2m1 1x16 nvfp4 sr B=8 RHT16", and "zero=signed nonfinite=propagate" where the policies
// are not the defaults.
std::string describe(const QuantConfig& c);

// Golden's quantization of the tensor's [rows, cols] matrix view, or with
// `transpose` of its transpose [cols, rows] (a column-wise output); a shape or
// configuration golden rejects is a UsageError.
QuantizedTensor golden_quantize(const io::Tensor& t, bool transpose, const QuantConfig& cfg);

// Quantized tensor `entry` of a quantized-tensor file (nibble/io/quantized_file.h):
// with no entry named, the file's only one. UsageError naming `option` and
// listing the file's entries where it holds several or not that one.
QuantizedTensor read_quantized_operand(const std::string& path, const std::string& entry, const std::string& option);

// reserve_output (commands.h) for a .npy output of `command`; another extension is a
// UsageError (the file would hold .npy bytes under a name that says otherwise).
std::string reserve_npy_output(const std::string& path, const std::string& option, const std::string& command);

// reserve_output for a quantized-tensor file, which must be named *.safetensors.
std::string reserve_quantized_output(const std::string& path, const std::string& option);

// A UsageError where `t` (read from `path`) has values but none finite: under the
// finite policy a tensor of NaNs and infinities has no scale to quantize it with
// (under 'propagate' its scales are NaN or saturated, and it quantizes).
void require_finite(const io::Tensor& t, const std::string& path, NonFinitePolicy policy = NonFinitePolicy::kFinite);

// The float matrix of a file to be checked (`--check`: .npy or .safetensors),
// which must be [rows, cols]: otherwise a UsageError saying that `what` ("C")
// has another shape than the one `why` ("A's rows, B's rows") gives.
std::vector<float> read_matrix_to_check(const std::string& path, int64_t rows, int64_t cols, const std::string& what,
                                        const std::string& why);

// Compares a row-major matrix `got` of `cols` columns with golden's `want`
// bit for bit (two NaNs agree whatever their payloads) and prints
// "  LABEL vs golden: bit-exact", or how many of its `noun` ("outputs",
// "elements") differ and the first with its index and both values, and then
// throws: the end of every check of a float matrix against golden (LABEL: the
// file checked, or what the GPU computed).
void report_check(const std::string& label, const std::vector<float>& got, const std::vector<float>& want,
                  int64_t cols, const char* noun);

}  // namespace nibble::cli
