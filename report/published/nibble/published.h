// The published figures Nibble prints beside its own: one table, read by the
// report, by `nibble area` / `nibble energy` and by the training study's
// verdicts. Header-only (target nibble::published), so that the torch-free
// training library uses it without linking the report.
//
// Source of every figure: MixFP4 (arXiv 2605.31035).
#pragma once

#include <array>

namespace nibble::published {

inline constexpr const char* kMixFp4 = "MixFP4 (arXiv 2605.31035)";

// Adding E1M2 next to E2M1 in a tensor core: +3.1 % area, +1.5 % power.
inline constexpr double kMixFp4AreaPercent = 3.1;
inline constexpr double kMixFp4PowerPercent = 1.5;

// The paper's training results: the BF16-relative loss gap of UFP4 (E1M2, 1x16
// FP32 scales, RHT16 on all three GEMMs, SR on dY) against its E2M1 baseline
// (the same, RHT16 on Wgrad only), as the relative change of E2M1's gap:
// (gap_ufp4 - gap_e2m1) / gap_e2m1. The dense model also gives both gaps.
struct TrainingEffect {
  const char* model;         // what was trained
  double relative_change;    // (gap_ufp4 - gap_e2m1) / gap_e2m1
  double e2m1_gap_percent;   // 0 where the paper gives only the change
  double ufp4_gap_percent;
};
inline constexpr std::array<TrainingEffect, 3> kMixFp4Training = {{
    {"dense 1.5 B", (0.9673 - 1.2570) / 1.2570, 1.2570, 0.9673},
    {"MoE 7.9 B", -0.22, 0, 0},
    {"MoE 124 B", -0.20, 0, 0},
}};

// The effect a study compares with: the smallest reduction the paper reports
// (about -20 % of E2M1's gap), so that "consistent with the paper" is the
// weakest claim the paper makes.
constexpr double weakest_training_effect() {
  double weakest = kMixFp4Training[0].relative_change;
  for (const auto& e : kMixFp4Training) weakest = e.relative_change > weakest ? e.relative_change : weakest;
  return weakest;
}
inline constexpr double kMixFp4TrainingEffect = weakest_training_effect();

}  // namespace nibble::published
