// The quantize kernels are picked from golden's format and scale-mode lists:
// every listed value has an instantiation of its own in every tile layout, and
// a value outside the lists is refused. No device needed (nothing launches).
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "nibble/cuda/quantize.h"
#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::cuda {
namespace {

// Layouts 0 and 1 read the scale mode from their arguments; 2 and 3 (wide
// rows, both ways) are instantiated per mode.
constexpr size_t kLayouts = 4;
constexpr size_t kFirstFixedRecipeLayout = 2;

TEST(KernelDispatch, EveryListedFormatAndScaleModeHasItsOwnKernels) {
  int checked = 0;
  for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
    for (BlockShape b : {BlockShape::k1x16, BlockShape::k1x32}) {
      for (bool rht : {false, true}) {
        std::set<const void*> fixed_recipe;  // over formats and modes
        for (ScaleMode m : kAllScaleModes) {
          std::set<const void*> per_mode;  // over formats
          for (Format f : kAllFormats) {
            QuantConfig cfg;
            cfg.format = f;
            cfg.scale = m;
            cfg.rounding = r;
            cfg.block = b;
            cfg.rht.size = rht ? 16 : 0;
            const std::vector<const void*> kernels = quantize_kernels_of(cfg);
            ASSERT_EQ(kernels.size(), kLayouts);
            for (size_t l = 0; l < kLayouts; ++l) {
              ASSERT_NE(kernels[l], nullptr) << name(f) << ' ' << name(m) << " layout " << l;
              EXPECT_TRUE(per_mode.insert(kernels[l]).second) << name(f) << ' ' << name(m) << " layout " << l;
              if (l >= kFirstFixedRecipeLayout) {
                EXPECT_TRUE(fixed_recipe.insert(kernels[l]).second) << name(f) << ' ' << name(m) << " layout " << l;
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(2 * 2 * 2 * kAllScaleModes.size() * kAllFormats.size() * kLayouts));
  ASSERT_GT(checked, 0);
}

TEST(KernelDispatch, ValuesOutsideTheListsAreRefused) {
  QuantConfig cfg;
  cfg.format = static_cast<Format>(kAllFormats.size());
  EXPECT_THROW(quantize_kernels_of(cfg), std::logic_error);
  cfg.format = kAllFormats[0];
  cfg.scale = static_cast<ScaleMode>(kAllScaleModes.size());
  EXPECT_THROW(quantize_kernels_of(cfg), std::logic_error);
}

}  // namespace
}  // namespace nibble::cuda
