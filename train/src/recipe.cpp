#include "nibble/train/recipe.h"

#include <fmt/format.h>

#include <cctype>
#include <sstream>

#include "nibble/philox.h"

namespace nibble::train {
namespace {

size_t idx(Gemm g) { return static_cast<size_t>(g); }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Recipe make_bf16() {
  Recipe r;
  r.name = "bf16";
  r.quantized = false;
  r.sr_grad = false;
  r.description = "every GEMM in BF16 (FP32 accumulate): the baseline";
  return r;
}

Recipe make_e2m1() {
  Recipe r;
  r.name = "e2m1";
  r.format = Format::kE2M1;
  r.scale = ScaleMode::kFP32;
  r.rht = {false, false, true};
  r.description = "E2M1, 1x16 blocks, FP32 scales, RHT16 on wgrad, SR on dY";
  return r;
}

Recipe make_ufp4(Format f, const char* name) {
  Recipe r;
  r.name = name;
  r.format = f;
  r.scale = ScaleMode::kFP32;
  r.rht = {true, true, true};
  std::string upper(nibble::name(f));
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  r.description = fmt::format("{}, 1x16 blocks, FP32 scales, RHT16 on all three GEMMs, SR on dY", upper);
  return r;
}

Recipe make_nvfp4() {
  Recipe r;
  r.name = "nvfp4";
  r.format = Format::kE2M1;
  r.scale = ScaleMode::kNVFP4;
  r.weight_block = BlockShape::k16x16;
  r.rht = {false, false, true};
  r.bf16_last = 1;
  r.description =
      "E2M1, E4M3 block scales + FP32 tensor scale, 1x16 activations/gradients, 16x16 weight blocks, "
      "RHT16 on wgrad, SR on dY, last transformer block in BF16";
  return r;
}

Recipe make_mxfp4() {
  Recipe r;
  r.name = "mxfp4";
  r.format = Format::kE2M1;
  r.scale = ScaleMode::kMXFloor;
  r.act_block = BlockShape::k1x32;
  r.weight_block = BlockShape::k1x32;
  r.description = "E2M1, 1x32 blocks, UE8M0 scales (OCP MX floor rule), no RHT, SR on dY";
  return r;
}

Format parse_format_or_throw(const std::string& s) {
  const auto f = parse_format(s);
  if (!f) throw RecipeError(fmt::format("unknown format '{}'; valid: {}", s, format_names(", ")));
  return *f;
}
BlockShape parse_block_or_throw(const std::string& s) {
  const auto b = parse_block_shape(s);
  if (!b) throw RecipeError(fmt::format("unknown block shape '{}'; valid: 1x16, 1x32, 16x16", s));
  return *b;
}

}  // namespace

std::string_view name(Gemm g) {
  switch (g) {
    case Gemm::kFprop: return "fprop";
    case Gemm::kDgrad: return "dgrad";
    case Gemm::kWgrad: return "wgrad";
  }
  return "?";
}

OperandRole operand_role(Gemm g, Operand op) {
  const bool a = op == Operand::kA;
  switch (g) {
    case Gemm::kFprop: return a ? OperandRole{Role::kX, false} : OperandRole{Role::kW, false};
    case Gemm::kDgrad: return a ? OperandRole{Role::kDY, false} : OperandRole{Role::kW, true};
    case Gemm::kWgrad: return a ? OperandRole{Role::kDY, true} : OperandRole{Role::kX, true};
  }
  throw std::logic_error("operand_role: bad GEMM");
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"bf16", "e2m1", "ufp4", "ufp4-int4", "nvfp4", "mxfp4"};
  return names;
}

Recipe preset(std::string_view n) {
  if (n == "bf16") return make_bf16();
  if (n == "e2m1") return make_e2m1();
  if (n == "ufp4") return make_ufp4(Format::kE1M2, "ufp4");
  if (n == "ufp4-int4") return make_ufp4(Format::kInt4, "ufp4-int4");
  if (n == "nvfp4") return make_nvfp4();
  if (n == "mxfp4") return make_mxfp4();
  throw RecipeError(fmt::format("unknown recipe '{}'; valid: {}", n, join(preset_names())));
}

Recipe apply_flags(Recipe r, const RecipeFlags& f) {
  auto tag = [&r](const char* key, const std::string& value) { r.name += fmt::format("+{}={}", key, value); };
  const bool touches_quant = f.format || f.scale || f.act_block || f.weight_block || f.rht || f.sr || f.sr_bits ||
                             f.bf16_first || f.bf16_last;
  if (!r.quantized && touches_quant) {
    throw RecipeError("recipe '" + r.name + "' runs every GEMM in BF16: quantization flags do not apply");
  }
  if (f.format) {
    r.format = parse_format_or_throw(*f.format);
    tag("format", *f.format);
  }
  if (f.scale) {
    const auto s = parse_scale_mode(*f.scale);
    if (!s) throw RecipeError(fmt::format("unknown scale mode '{}'; valid: {}", *f.scale, scale_mode_names(", ")));
    r.scale = *s;
    tag("scale", *f.scale);
  }
  if (f.act_block) {
    r.act_block = parse_block_or_throw(*f.act_block);
    tag("act-block", *f.act_block);
  }
  if (f.weight_block) {
    r.weight_block = parse_block_or_throw(*f.weight_block);
    tag("weight-block", *f.weight_block);
  }
  if (f.rht) {
    std::array<bool, 3> rht = {false, false, false};
    if (*f.rht == "all") {
      rht = {true, true, true};
    } else if (*f.rht != "none") {
      std::stringstream ss(*f.rht);
      std::string item;
      int count = 0;
      while (std::getline(ss, item, ',')) {
        bool found = false;
        for (Gemm g : kAllGemms) {
          if (item == name(g)) {
            rht[idx(g)] = true;
            found = true;
          }
        }
        if (!found) {
          throw RecipeError(fmt::format("unknown --rht item '{}'; valid: none, all, or a comma list of "
                                        "fprop, dgrad, wgrad", item));
        }
        ++count;
      }
      if (count == 0) throw RecipeError("--rht is empty; valid: none, all, or a comma list of fprop, dgrad, wgrad");
    }
    r.rht = rht;
    tag("rht", *f.rht);
  }
  if (f.sr) {
    if (*f.sr == "none") {
      r.sr_grad = false;
      r.sr_fwd = false;
    } else if (*f.sr == "grad") {
      r.sr_grad = true;
      r.sr_fwd = false;
    } else if (*f.sr == "all") {
      r.sr_grad = true;
      r.sr_fwd = true;
    } else {
      throw RecipeError(fmt::format("unknown --sr '{}'; valid: none, grad, all", *f.sr));
    }
    tag("sr", *f.sr);
  }
  if (f.sr_bits) {
    r.sr_bits = *f.sr_bits;
    tag("sr-bits", std::to_string(*f.sr_bits));
  }
  if (f.bf16_first) {
    r.bf16_first = *f.bf16_first;
    tag("bf16-first", std::to_string(*f.bf16_first));
  }
  if (f.bf16_last) {
    r.bf16_last = *f.bf16_last;
    tag("bf16-last", std::to_string(*f.bf16_last));
  }
  validate(r);
  return r;
}

void validate(const Recipe& r) {
  if (r.bf16_first < 0 || r.bf16_last < 0) throw RecipeError("BF16 layer counts must be >= 0");
  if (r.sr_bits < 1 || r.sr_bits > 8) throw RecipeError(fmt::format("--sr-bits must be 1..8, got {}", r.sr_bits));
  if (!r.quantized) return;
  if (r.act_block == BlockShape::k16x16) {
    throw RecipeError("activations and gradients take 1-D blocks (1x16 or 1x32); 16x16 is a weight block");
  }
  for (Gemm g : kAllGemms) {
    for (Operand op : {Operand::kA, Operand::kB}) {
      QuantConfig c;
      c.format = r.format;
      c.scale = r.scale;
      c.block = operand_role(g, op).role == Role::kW ? r.weight_block : r.act_block;
      c.sr_bits = r.sr_bits;
      c.rht = r.rht[idx(g)] ? r.rht_config : RhtConfig{};
      try {
        nibble::validate(c);
      } catch (const std::invalid_argument& e) {
        throw RecipeError(fmt::format("recipe '{}': {} operand of {}: {}", r.name,
                                      op == Operand::kA ? "A" : "B", name(g), e.what()));
      }
    }
  }
}

bool layer_quantized(const Recipe& r, int layer, int n_layers) {
  return r.quantized && layer >= r.bf16_first && layer < n_layers - r.bf16_last;
}

uint64_t gemm_seed(uint64_t run_seed, int64_t step, int linear_index, Gemm g) {
  // group: the step in the high bits, then the linear layer and the GEMM.
  const uint64_t group = (static_cast<uint64_t>(step) << 20) | (static_cast<uint64_t>(linear_index) << 2) |
                         static_cast<uint64_t>(idx(g));
  const PhiloxWords w = philox4x32_10(run_seed, group, 0xC0DE5EEDu, PhiloxDomain::kStochasticRounding);
  return static_cast<uint64_t>(w[0]) | (static_cast<uint64_t>(w[1]) << 32);
}

std::optional<QuantConfig> operand_config(const Recipe& r, Gemm g, Operand op, int layer, int n_layers,
                                          uint64_t seed) {
  if (!layer_quantized(r, layer, n_layers)) return std::nullopt;
  const OperandRole role = operand_role(g, op);
  QuantConfig c;
  c.format = r.format;
  c.scale = r.scale;
  c.block = role.role == Role::kW ? r.weight_block : r.act_block;
  const bool sr = role.role == Role::kDY ? r.sr_grad : r.sr_fwd;
  c.rounding = sr ? Rounding::kStochastic : Rounding::kNearestEven;
  c.sr_bits = r.sr_bits;
  c.rht = r.rht[idx(g)] ? r.rht_config : RhtConfig{};
  c.seed = seed;
  c.stream = op == Operand::kA ? 0u : 1u;
  return c;
}

const std::vector<DiagVariant>& diag_variants() {
  static const std::vector<DiagVariant> variants = [] {
    std::vector<DiagVariant> v;
    for (Format f : {Format::kE2M1, Format::kE1M2}) {
      for (bool rht : {false, true}) {
        Recipe r = make_ufp4(f, "diag");
        r.rht = {rht, rht, rht};
        r.name = std::string(nibble::name(f)) + (rht ? "+rht" : "");
        r.description = "diagnostic variant";
        v.push_back({r.name, r});
      }
    }
    return v;
  }();
  return variants;
}

std::string describe(const Recipe& r) {
  if (!r.quantized) return r.description;
  std::string rht;
  for (Gemm g : kAllGemms) {
    if (r.rht[idx(g)]) rht += (rht.empty() ? "" : ",") + std::string(name(g));
  }
  return fmt::format("format {}, scale {}, blocks act {} / weight {}, RHT{} on {}, SR on {}, BF16 blocks "
                     "first {} last {}",
                     nibble::name(r.format), nibble::name(r.scale), nibble::name(r.act_block),
                     nibble::name(r.weight_block), r.rht_config.size, rht.empty() ? "none" : rht,
                     r.sr_fwd ? "x,w,dy" : (r.sr_grad ? "dy" : "none"), r.bf16_first, r.bf16_last);
}

}  // namespace nibble::train
