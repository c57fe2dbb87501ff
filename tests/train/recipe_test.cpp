// Recipe plumbing: presets, flags, which operand of which GEMM gets which
// quantization, seeds and streams.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "nibble/dot.h"
#include "nibble/train/recipe.h"

namespace nibble::train {
namespace {

constexpr int kLayers = 8;

std::optional<QuantConfig> cfg(const Recipe& r, Gemm g, Operand op, int layer = 0, uint64_t seed = 7) {
  return operand_config(r, g, op, layer, kLayers, seed);
}

TEST(Recipe, OperandTableGivesTheLayerGradientShapes) {
  // X [M,K], W [N,K], dY [M,N] with distinct sizes: each GEMM's operands must
  // share their reduction length and produce Y, dX, dW.
  const int64_t M = 6, N = 5, K = 4;
  auto shape = [&](Role r) -> std::pair<int64_t, int64_t> {
    switch (r) {
      case Role::kX: return {M, K};
      case Role::kW: return {N, K};
      case Role::kDY: return {M, N};
    }
    return {0, 0};
  };
  auto op_shape = [&](Gemm g, Operand op) {
    const OperandRole role = operand_role(g, op);
    auto s = shape(role.role);
    return role.transposed ? std::make_pair(s.second, s.first) : s;
  };
  const std::pair<int64_t, int64_t> expected[3] = {{M, N}, {M, K}, {N, K}};  // Y, dX, dW
  for (Gemm g : kAllGemms) {
    const auto a = op_shape(g, Operand::kA);
    const auto b = op_shape(g, Operand::kB);
    EXPECT_EQ(a.second, b.second) << name(g);
    EXPECT_EQ(std::make_pair(a.first, b.first), expected[static_cast<int>(g)]) << name(g);
  }
  // Every tensor appears in exactly two GEMMs.
  int uses[3] = {0, 0, 0};
  for (Gemm g : kAllGemms) {
    for (Operand op : {Operand::kA, Operand::kB}) ++uses[static_cast<int>(operand_role(g, op).role)];
  }
  EXPECT_EQ(uses[0], 2);
  EXPECT_EQ(uses[1], 2);
  EXPECT_EQ(uses[2], 2);
}

TEST(Recipe, PresetsParseAndUnknownNamesAreRefused) {
  ASSERT_EQ(preset_names().size(), 6u);
  for (const auto& n : preset_names()) EXPECT_EQ(preset(n).name, n);
  try {
    preset("fp8");
    FAIL() << "fp8 accepted";
  } catch (const RecipeError& e) {
    EXPECT_NE(std::string(e.what()).find("ufp4-int4"), std::string::npos) << e.what();
  }
}

TEST(Recipe, Bf16QuantizesNothing) {
  const Recipe r = preset("bf16");
  for (int l = 0; l < kLayers; ++l) {
    EXPECT_FALSE(layer_quantized(r, l, kLayers));
    for (Gemm g : kAllGemms) EXPECT_FALSE(cfg(r, g, Operand::kA, l).has_value());
  }
}

TEST(Recipe, E2m1HasRhtOnWgradOnlyAndSrOnDy) {
  const Recipe r = preset("e2m1");
  for (Gemm g : kAllGemms) {
    for (Operand op : {Operand::kA, Operand::kB}) {
      const auto c = cfg(r, g, op);
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ(c->format, Format::kE2M1);
      EXPECT_EQ(c->block, BlockShape::k1x16);
      EXPECT_EQ(c->scale, ScaleMode::kFP32);
      EXPECT_EQ(c->rht.size, g == Gemm::kWgrad ? 16 : 0) << name(g);
      const bool dy = operand_role(g, op).role == Role::kDY;
      EXPECT_EQ(c->rounding, dy ? Rounding::kStochastic : Rounding::kNearestEven) << name(g);
      EXPECT_EQ(c->seed, 7u);
      EXPECT_EQ(c->stream, op == Operand::kA ? 0u : 1u);
    }
  }
}

TEST(Recipe, Ufp4HasRhtEverywhereAndInt4DiffersOnlyInFormat) {
  const Recipe e = preset("ufp4");
  const Recipe i = preset("ufp4-int4");
  for (int l = 0; l < kLayers; ++l) {
    for (Gemm g : kAllGemms) {
      for (Operand op : {Operand::kA, Operand::kB}) {
        auto ce = cfg(e, g, op, l);
        auto ci = cfg(i, g, op, l);
        ASSERT_TRUE(ce && ci);
        EXPECT_EQ(ce->format, Format::kE1M2);
        EXPECT_EQ(ci->format, Format::kInt4);
        EXPECT_EQ(ce->rht.size, 16);
        ci->format = ce->format;
        EXPECT_EQ(ce->block, ci->block);
        EXPECT_EQ(ce->scale, ci->scale);
        EXPECT_EQ(ce->rounding, ci->rounding);
        EXPECT_EQ(ce->rht, ci->rht);
        EXPECT_EQ(ce->seed, ci->seed);
        EXPECT_EQ(ce->stream, ci->stream);
      }
    }
  }
}

// What makes the ufp4 and ufp4-int4 loss curves identical: every GEMM of the
// two recipes gives the same bits on the same operands (golden quantize + gemm).
TEST(Recipe, Ufp4AndInt4GemmsAreBitIdentical) {
  const uint32_t rng_seed = 20261121;
  std::printf("seed %u\n", rng_seed);
  std::mt19937 rng(rng_seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t M = 48, N = 32, K = 64;
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng) * std::exp(dist(rng));
    return v;
  };
  const auto X = random(M * K), W = random(N * K), DY = random(M * N);
  auto transpose = [](const std::vector<float>& v, int64_t r, int64_t c) {
    std::vector<float> t(v.size());
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) t[static_cast<size_t>(j * r + i)] = v[static_cast<size_t>(i * c + j)];
    return t;
  };
  auto operand = [&](Role role, bool tr) -> std::tuple<std::vector<float>, int64_t, int64_t> {
    const std::vector<float>& v = role == Role::kX ? X : role == Role::kW ? W : DY;
    const int64_t r = role == Role::kW ? N : M;
    const int64_t c = role == Role::kDY ? N : K;
    if (tr) return {transpose(v, r, c), c, r};
    return {v, r, c};
  };
  int compared = 0;
  for (int step = 0; step < 3; ++step) {
    for (Gemm g : kAllGemms) {
      const uint64_t seed = gemm_seed(5, step, 3, g);
      std::vector<float> out[2];
      for (int k = 0; k < 2; ++k) {
        const Recipe r = preset(k == 0 ? "ufp4" : "ufp4-int4");
        QuantizedTensor q[2];
        for (Operand op : {Operand::kA, Operand::kB}) {
          const OperandRole role = operand_role(g, op);
          auto [v, rows, cols] = operand(role.role, role.transposed);
          q[static_cast<int>(op)] = quantize(v.data(), rows, cols, *cfg(r, g, op, 0, seed));
        }
        out[k] = gemm(q[0], q[1]);
      }
      ASSERT_EQ(out[0].size(), out[1].size());
      EXPECT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float))) << name(g);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 9);
}

TEST(Recipe, Nvfp4KeepsTheLastBlockInBf16WithSquareWeightBlocks) {
  const Recipe r = preset("nvfp4");
  EXPECT_EQ(r.bf16_last, 1);
  for (int l = 0; l < kLayers; ++l) EXPECT_EQ(layer_quantized(r, l, kLayers), l < kLayers - 1) << l;
  EXPECT_FALSE(cfg(r, Gemm::kFprop, Operand::kA, kLayers - 1).has_value());
  for (Gemm g : kAllGemms) {
    for (Operand op : {Operand::kA, Operand::kB}) {
      const auto c = cfg(r, g, op, 2);
      ASSERT_TRUE(c);
      EXPECT_EQ(c->scale, ScaleMode::kNVFP4);
      EXPECT_EQ(c->block, operand_role(g, op).role == Role::kW ? BlockShape::k16x16 : BlockShape::k1x16);
      EXPECT_EQ(c->rht.size, g == Gemm::kWgrad ? 16 : 0);
    }
  }
}

TEST(Recipe, Mxfp4Uses1x32Ue8m0) {
  const Recipe r = preset("mxfp4");
  for (Gemm g : kAllGemms) {
    for (Operand op : {Operand::kA, Operand::kB}) {
      const auto c = cfg(r, g, op);
      ASSERT_TRUE(c);
      EXPECT_EQ(c->format, Format::kE2M1);
      EXPECT_EQ(c->block, BlockShape::k1x32);
      EXPECT_EQ(scale_format(c->scale), ScaleFormat::kUE8M0);
      EXPECT_FALSE(c->rht.enabled());
    }
  }
}

TEST(Recipe, FlagsOverrideAndAreNamed) {
  RecipeFlags f;
  f.rht = "fprop,wgrad";
  f.format = "e1m2";
  f.sr = "all";
  f.bf16_first = 1;
  const Recipe r = apply_flags(preset("e2m1"), f);
  EXPECT_EQ(r.name, "e2m1+format=e1m2+rht=fprop,wgrad+sr=all+bf16-first=1");
  EXPECT_FALSE(layer_quantized(r, 0, kLayers));
  EXPECT_TRUE(layer_quantized(r, 1, kLayers));
  EXPECT_EQ(cfg(r, Gemm::kFprop, Operand::kB, 1)->rht.size, 16);
  EXPECT_EQ(cfg(r, Gemm::kDgrad, Operand::kB, 1)->rht.size, 0);
  EXPECT_EQ(cfg(r, Gemm::kFprop, Operand::kB, 1)->rounding, Rounding::kStochastic);
  EXPECT_EQ(cfg(r, Gemm::kFprop, Operand::kB, 1)->format, Format::kE1M2);

  RecipeFlags none;
  none.rht = "none";
  none.sr = "none";
  const Recipe n = apply_flags(preset("ufp4"), none);
  for (Gemm g : kAllGemms) {
    EXPECT_FALSE(cfg(n, g, Operand::kA)->rht.enabled());
    EXPECT_EQ(cfg(n, g, Operand::kA)->rounding, Rounding::kNearestEven);
  }
}

TEST(Recipe, BadFlagsAreRefused) {
  auto refused = [](const char* base, RecipeFlags f) {
    EXPECT_THROW(apply_flags(preset(base), f), RecipeError) << base;
  };
  RecipeFlags f;
  f.rht = "fprop,bogus";
  refused("e2m1", f);
  f = {};
  f.rht = "";
  refused("e2m1", f);
  f = {};
  f.format = "e3m0";
  refused("e2m1", f);
  f = {};
  f.act_block = "16x16";
  refused("e2m1", f);
  f = {};
  f.sr_bits = 9;
  refused("e2m1", f);
  f = {};
  f.sr = "sometimes";
  refused("e2m1", f);
  f = {};
  f.scale = "fp16";
  refused("e2m1", f);
  f = {};
  f.bf16_last = -1;
  refused("e2m1", f);
  f = {};
  f.format = "e2m1";
  refused("bf16", f);  // quantization flags on the BF16 baseline
}

TEST(Recipe, GemmSeedsAreDistinctAndStable) {
  std::set<uint64_t> seen;
  for (int64_t step = 0; step < 200; ++step)
    for (int site = 0; site < 32; ++site)
      for (Gemm g : kAllGemms) seen.insert(gemm_seed(3, step, site, g));
  EXPECT_EQ(seen.size(), 200u * 32u * 3u);
  EXPECT_EQ(gemm_seed(3, 17, 5, Gemm::kDgrad), gemm_seed(3, 17, 5, Gemm::kDgrad));
  EXPECT_NE(gemm_seed(3, 17, 5, Gemm::kDgrad), gemm_seed(4, 17, 5, Gemm::kDgrad));
}

TEST(Recipe, DiagVariantsCoverE2m1AndE1m2WithAndWithoutRht) {
  const auto& v = diag_variants();
  ASSERT_EQ(v.size(), 4u);
  std::set<std::pair<Format, bool>> kinds;
  for (const auto& d : v) {
    for (Gemm g : kAllGemms) {
      const auto a = operand_config(d.recipe, g, Operand::kA, 0, 1, 1);
      const auto b = operand_config(d.recipe, g, Operand::kB, 0, 1, 1);
      ASSERT_TRUE(a && b);
      EXPECT_EQ(a->rht, b->rht);
      kinds.insert({a->format, a->rht.enabled()});
    }
  }
  EXPECT_EQ(kinds.size(), 4u);
  EXPECT_TRUE(kinds.count({Format::kE2M1, true}) && kinds.count({Format::kE1M2, false}));
}

}  // namespace
}  // namespace nibble::train
