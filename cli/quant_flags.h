// The quantization options of the commands that quantize a user's tensor
// (golden-quant, gpu-quant, gpu-gemm), the one-line name of a configuration,
// and the transpose that a column-wise output quantizes.
#pragma once

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

  // Registers --<prefix>format, --<prefix>block, --<prefix>scale and
  // --<prefix>rounding, and without a prefix the options both operands share
  // (--sr-bits, --rht, --rht-bf16, --seed, --stream); `rht_sizes` is --rht's
  // help text. Returns the options registered.
  std::vector<CLI::Option*> add_to(CLI::App* cmd, const std::string& prefix = "",
                                   const std::string& rht_sizes = "0 (off), 16, 32, 64 or 128");
  // The configuration, checked by golden's rules (UsageError naming the option).
  QuantConfig config() const;
};

// "e2m1 1x16 nvfp4 sr B=8 RHT16".
std::string describe(const QuantConfig& c);

// The tensor's [rows, cols] matrix view transposed, row-major [cols, rows].
std::vector<float> transposed(const io::Tensor& t);

}  // namespace nibble::cli
