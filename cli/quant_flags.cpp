// The quantization options shared by the commands that quantize a user's tensor.
#include "quant_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fmt/ranges.h>

#include "commands.h"
#include "nibble/fp32.h"
#include "nibble/io/quantized_file.h"

namespace nibble::cli {

std::vector<CLI::Option*> QuantFlags::add_to(CLI::App* cmd, const std::string& prefix, const std::string& rht_sizes) {
  std::vector<CLI::Option*> added;
  added.push_back(
      cmd->add_option("--" + prefix + "format", format, "element format: " + format_names(", "))->capture_default_str());
  added.push_back(
      cmd->add_option("--" + prefix + "block", block, "block shape: 1x16, 1x32, 16x16")->capture_default_str());
  added.push_back(cmd->add_option("--" + prefix + "scale", scale, "scale mode: " + scale_mode_names(", "))
                      ->capture_default_str());
  added.push_back(cmd->add_option("--" + prefix + "rounding", rounding, "rne or sr")->capture_default_str());
  if (!prefix.empty()) return added;  // the remaining options are shared by both operands
  added.push_back(cmd->add_option("--sr-bits", sr_bits, "stochastic-rounding bits B (1..8)")->capture_default_str());
  added.push_back(cmd->add_option("--rht", rht, "RHT size along the contraction axis: " + rht_sizes)
                      ->capture_default_str());
  added.push_back(cmd->add_flag("--rht-bf16", rht_bf16, "round the RHT output to bfloat16"));
  added.push_back(cmd->add_option("--seed", seed, "seed of the SR bits and RHT signs")
                      ->capture_default_str()
                      ->check(unsigned_integer()));
  added.push_back(cmd->add_option("--stream", stream, "SR stream id of the tensor")
                      ->capture_default_str()
                      ->check(unsigned_integer(UINT32_MAX)));
  added.push_back(cmd->add_option("--zero", zero,
                                  "code of a value that rounds to zero: positive (code 0) or signed (keep the sign: "
                                  "0x8 in e2m1/e1m2, as IEEE, OCP MX, CUDA and Transformer Engine)")
                      ->capture_default_str());
  added.push_back(cmd->add_option("--nonfinite", nonfinite,
                                  "NaN/Inf inputs: finite (finite amax, NaN block scale) or propagate (amax over "
                                  "every value, NaN and Inf through the scale rules, as Transformer Engine's NVFP4 "
                                  "reference)")
                      ->capture_default_str());
  return added;
}

QuantConfig QuantFlags::config() const {
  QuantConfig c;
  const auto f = parse_format(format);
  const auto b = parse_block_shape(block);
  const auto s = parse_scale_mode(scale);
  const auto r = parse_rounding(rounding);
  if (!f) throw UsageError(fmt::format("unknown format '{}'; valid: {}", format, format_names(", ")));
  if (!b) throw UsageError(fmt::format("unknown block shape '{}'; valid: 1x16, 1x32, 16x16", block));
  if (!s) throw UsageError(fmt::format("unknown scale mode '{}'; valid: {}", scale, scale_mode_names(", ")));
  if (!r) throw UsageError(fmt::format("unknown rounding '{}'; valid: rne, sr", rounding));
  const auto z = parse_zero_policy(zero);
  const auto p = parse_nonfinite_policy(nonfinite);
  if (!z) throw UsageError(fmt::format("--zero: unknown policy '{}'; valid: positive, signed", zero));
  if (!p) throw UsageError(fmt::format("--nonfinite: unknown policy '{}'; valid: finite, propagate", nonfinite));
  c.policy = QuantPolicy{*z, *p};
  c.format = *f;
  c.block = *b;
  c.scale = *s;
  c.rounding = *r;
  c.sr_bits = sr_bits;
  c.rht = RhtConfig{rht, rht_bf16};
  c.seed = seed;
  c.stream = stream;
  try {
    validate(c);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return c;
}

std::string describe(const QuantConfig& c) {
  return fmt::format("{} {} {} {}{}{}{}", name(c.format), name(c.block), name(c.scale), name(c.rounding),
                     c.rounding == Rounding::kStochastic ? fmt::format(" B={}", c.sr_bits) : "",
                     c.rht.enabled() ? fmt::format(" RHT{}{}", c.rht.size, c.rht.round_bf16 ? "+bf16" : "") : "",
                     c.policy == QuantPolicy{} ? std::string()
                                               : fmt::format(" zero={} nonfinite={}", name(c.policy.zero),
                                                             name(c.policy.nonfinite)));
}

QuantizedTensor golden_quantize(const io::Tensor& t, bool transpose, const QuantConfig& cfg) {
  const int64_t rows = t.rows(), cols = t.cols();
  try {
    if (!transpose) return quantize(t.data.data(), rows, cols, cfg);
    std::vector<float> xt(t.data.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        xt[static_cast<size_t>(c * rows + r)] = t.data[static_cast<size_t>(r * cols + c)];
      }
    }
    return quantize(xt.data(), cols, rows, cfg);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}{}", transpose ? "the transposed tensor: " : "", e.what()));
  }
}

QuantizedTensor read_quantized_operand(const std::string& path, const std::string& entry, const std::string& option) {
  std::vector<io::QuantizedEntry> entries = io::read_quantized(path);
  std::vector<std::string> names;
  for (io::QuantizedEntry& e : entries) {
    if (e.name == entry || (entry.empty() && entries.size() == 1)) return std::move(e.tensor);
    names.push_back(e.name);
  }
  const std::string problem =
      entry.empty() ? "name the quantized tensor to use" : "no quantized tensor '" + entry + "'";
  throw UsageError(fmt::format("{} {}: {}; it holds {}", option, path, problem, fmt::join(names, ", ")));
}

std::string reserve_npy_output(const std::string& path, const std::string& option, const std::string& command) {
  if (std::filesystem::path(path).extension() != ".npy") {
    throw UsageError(fmt::format("{}: {} writes a .npy file; name it *.npy (got '{}')", option, command, path));
  }
  return reserve_output(path, option);
}

std::string reserve_quantized_output(const std::string& path, const std::string& option) {
  if (std::filesystem::path(path).extension() != ".safetensors") {
    throw UsageError(fmt::format("{}: a quantized-tensor file is a .safetensors file; name it *.safetensors (got '{}')",
                                 option, path));
  }
  return reserve_output(path, option);
}

void require_finite(const io::Tensor& t, const std::string& path, NonFinitePolicy policy) {
  if (t.data.empty() || policy == NonFinitePolicy::kPropagate) return;  // golden refuses an empty tensor itself
  for (const float v : t.data) {
    if (f32_is_finite(v)) return;
  }
  throw UsageError(fmt::format("{}: tensor '{}' has no finite values", path, t.name));
}

std::vector<float> read_matrix_to_check(const std::string& path, int64_t rows, int64_t cols, const std::string& what,
                                        const std::string& why) {
  io::Tensor t = io::read_tensor(path);
  if (t.shape.size() != 2 || t.shape[0] != rows || t.shape[1] != cols) {
    throw UsageError(fmt::format("--check {}: {} has shape [{}], expected [{}, {}] ({})", path, what,
                                 fmt::join(t.shape, ", "), rows, cols, why));
  }
  return std::move(t.data);
}

namespace {

// Where got differs from want (report_check); empty when nowhere.
std::string describe_float_difference(const std::vector<float>& got, const std::vector<float>& want, int64_t cols,
                                      const char* noun, size_t* count) {
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if ((std::isnan(got[i]) && std::isnan(want[i])) || f32_bits(got[i]) == f32_bits(want[i])) continue;
    if (differ++ == 0) first = i;
  }
  *count = differ;
  if (differ == 0) return "";
  const auto r0 = static_cast<int64_t>(first) / cols, c0 = static_cast<int64_t>(first) % cols;
  return fmt::format("{} of {} {} (first at [{}, {}]: {} ({:#010x}), expected {} ({:#010x}))", differ, want.size(),
                     noun, r0, c0, got[first], f32_bits(got[first]), want[first], f32_bits(want[first]));
}

}  // namespace

void report_check(const std::string& label, const std::vector<float>& got, const std::vector<float>& want,
                  int64_t cols, const char* noun) {
  size_t differ = 0;
  const std::string what = describe_float_difference(got, want, cols, noun, &differ);
  fmt::print("  {} vs golden: {}\n", label, differ == 0 ? "bit-exact" : "DIFFERS: " + what);
  if (differ != 0) throw std::runtime_error(fmt::format("{} differs from golden", label));
}

}  // namespace nibble::cli
