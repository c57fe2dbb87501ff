// Training recipes: which GEMM of a linear layer is quantized, and how each of
// its two operands is quantized (format, block, scale rule, rounding, RHT).
// Torch-free: `nibble train` reads it, and the unit tests check it without a GPU.
//
// A linear layer Y = X W^T ([M,K] x [N,K]) runs three GEMMs, each C = A B^T
// with both operands quantized along the GEMM's reduction axis:
//   fprop  Y  = X  W^T     A = X   [M,K] row-wise    B = W   [N,K] row-wise     (reduce over K)
//   dgrad  dX = dY W       A = dY  [M,N] row-wise    B = W^T [K,N] column-wise  (reduce over N)
//   wgrad  dW = dY^T X     A = dY^T[N,M] column-wise B = X^T [K,M] column-wise  (reduce over M)
// "Column-wise" is golden's quantize applied to the transposed tensor (the
// kernels' colwise output). An RHT on a GEMM rotates both operands along the
// reduction axis with the same seed, so it cancels in exact arithmetic.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nibble/quantize.h"

namespace nibble::train {

// Bad recipe names or flags: the CLI turns it into a usage error (exit 2).
class RecipeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class Gemm : uint8_t { kFprop, kDgrad, kWgrad };
inline constexpr std::array<Gemm, 3> kAllGemms = {Gemm::kFprop, Gemm::kDgrad, Gemm::kWgrad};
std::string_view name(Gemm g);

enum class Operand : uint8_t { kA, kB };  // C = A * B^T
enum class Role : uint8_t { kX, kW, kDY };  // the layer tensor an operand is made of

struct OperandRole {
  Role role;
  bool transposed;  // quantized column-wise (the tensor's transpose, along its rows)
};
// The table above.
OperandRole operand_role(Gemm g, Operand op);

struct Recipe {
  std::string name;          // the preset name, plus "+flag=value" for every override
  bool quantized = true;     // false: every linear layer runs in BF16
  Format format = Format::kE2M1;
  ScaleMode scale = ScaleMode::kFP32;
  BlockShape act_block = BlockShape::k1x16;     // X and dY
  BlockShape weight_block = BlockShape::k1x16;  // W
  std::array<bool, 3> rht = {false, false, false};  // per GEMM (indexed by Gemm)
  RhtConfig rht_config{16, false};                  // size used where rht[g] is set
  bool sr_grad = true;   // stochastic rounding of dY (both GEMMs that read it)
  bool sr_fwd = false;   // stochastic rounding of X and W too (ablation)
  int sr_bits = 8;
  int bf16_first = 0;    // this many first transformer blocks keep BF16 linears
  int bf16_last = 0;     // this many last transformer blocks keep BF16 linears
  std::string description;
};

// The named presets, in sweep order: bf16, e2m1, ufp4, ufp4-int4, nvfp4, mxfp4.
const std::vector<std::string>& preset_names();
// Throws RecipeError naming the valid presets.
Recipe preset(std::string_view name);

// Overrides for ablations; every set field replaces the preset's choice.
struct RecipeFlags {
  std::optional<std::string> format;        // e2m1, e1m2, int4
  std::optional<std::string> scale;         // fp32, nvfp4, mx-floor, mx-ceil
  std::optional<std::string> act_block;     // 1x16, 1x32, 16x16
  std::optional<std::string> weight_block;  // 1x16, 1x32, 16x16
  std::optional<std::string> rht;           // none, all, or a comma list of fprop,dgrad,wgrad
  std::optional<std::string> sr;            // none, grad, all
  std::optional<int> sr_bits;               // 1..8
  std::optional<int> bf16_first;
  std::optional<int> bf16_last;
};
// Applies the flags (throws RecipeError for unknown values) and checks the result.
Recipe apply_flags(Recipe r, const RecipeFlags& flags);
// Throws RecipeError when the recipe cannot run (e.g. negative layer counts).
void validate(const Recipe& r);

// Whether transformer block `layer` (0-based, of n_layers) runs its linears quantized.
bool layer_quantized(const Recipe& r, int layer, int n_layers);

// The seed of one GEMM's quantizations: keys its RHT signs (shared by both
// operands, as golden gemm requires) and its SR bits. Derived from the run seed,
// the step, the linear layer's index and the GEMM with golden's Philox, so it is
// the same for every recipe (identical seeds make ufp4 and ufp4-int4 comparable bit for bit).
uint64_t gemm_seed(uint64_t run_seed, int64_t step, int linear_index, Gemm g);

// The quantization of one operand, or nullopt where the GEMM runs in BF16.
// `seed` is gemm_seed(...); each operand gets its own SR stream.
std::optional<QuantConfig> operand_config(const Recipe& r, Gemm g, Operand op, int layer, int n_layers,
                                          uint64_t seed);

// Diagnostic variants measured alongside every run (they do not affect
// training): E2M1 and E1M2, each without and with RHT16 on the GEMM, with
// 1x16 FP32 scales, RNE on X and W and SR on dY.
struct DiagVariant {
  std::string name;  // e.g. "e2m1", "e2m1+rht", "e1m2", "e1m2+rht"
  Recipe recipe;
};
const std::vector<DiagVariant>& diag_variants();

// One line describing what the recipe does (for logs and tables; without the name).
std::string describe(const Recipe& r);

}  // namespace nibble::train
