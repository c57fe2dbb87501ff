// nibble_rht16 against golden's rht_group(x, 16, signs, bf16): every output bit for bit (NaN
// by NaN-ness, and the RTL's NaN canonical), with the golden Philox sign vectors of many seeds
// and random sign masks, bfloat16 rounding on and off, random bubbles, and the documented
// latency RhtLatency (read from the Verilated nibble_quant_pkg, where it is public).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>
#include <string>

#include "Vnibble_rht16.h"
#include "Vnibble_rht16_nibble_quant_pkg.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"
#include "nibble/rht.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

constexpr int kN = 16;
// The RTL's own constant, not a copy: a group must come out exactly this many cycles later.
constexpr uint64_t kRhtLatency = Vnibble_rht16_nibble_quant_pkg::RhtLatency;
static_assert(kRhtLatency >= 1, "nibble_rht16 registers its outputs");

struct Group {
  std::array<uint32_t, kN> x{};
  uint32_t signs = 0;  // bit i set: -1
  bool bf16 = false;
  std::string what;
};

struct Pending {
  std::array<uint32_t, kN> y;
  const Group* group;
  uint64_t cycle;
};

bool is_nan(uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0; }

std::array<uint32_t, kN> golden_rht(const Group& g) {
  std::array<float, kN> v;
  for (int i = 0; i < kN; ++i) v[static_cast<size_t>(i)] = f32_from_bits(g.x[static_cast<size_t>(i)]);
  const PhiloxWords signs = {g.signs, 0u, 0u, 0u};
  rht_group(v.data(), kN, signs, g.bf16);
  std::array<uint32_t, kN> y;
  for (int i = 0; i < kN; ++i) y[static_cast<size_t>(i)] = f32_bits(v[static_cast<size_t>(i)]);
  return y;
}

Group random_group(std::mt19937_64& rng, uint32_t signs) {
  Group g;
  g.signs = signs;
  g.bf16 = rng() % 2;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const unsigned pattern = static_cast<unsigned>(rng() % 12);
  const int exps[] = {0, 0, -20, 20, -126, -140, -149, 100, 126, 127};
  const int e = exps[rng() % 10];
  for (int i = 0; i < kN; ++i) {
    float v = std::ldexp(normal(rng), e + static_cast<int>(rng() % 5) - 2);
    uint32_t u = f32_bits(v);
    if (pattern == 0) u = static_cast<uint32_t>(rng());                        // any pattern
    if (pattern == 1 && rng() % 4 == 0) u = 0x7F800000u | (static_cast<uint32_t>(rng() & 1u) << 31);  // Inf
    if (pattern == 2 && rng() % 8 == 0) u = 0x7FC00000u | static_cast<uint32_t>(rng() & 0x3FFFFFu);  // NaN
    if (pattern == 3) u = static_cast<uint32_t>(rng() & 1u) << 31;            // zeros of both signs
    if (pattern == 4) u = (static_cast<uint32_t>(rng() & 1u) << 31) | 0x7F7FFFFFu;  // FLT_MAX: sums overflow
    if (pattern == 5) u = (static_cast<uint32_t>(rng() & 1u) << 31) | static_cast<uint32_t>(rng() % 64);  // subnormal
    if (pattern == 6) u = f32_bits(static_cast<float>(static_cast<int>(rng() % 9) - 4));  // small integers: exact
    if (pattern == 7) u = (u & 0xFFFF0000u) | (rng() % 2 ? 0x8000u : 0x7FFFu);   // bf16 ties / near ties
    g.x[static_cast<size_t>(i)] = u;
  }
  g.what = "random group, pattern " + std::to_string(pattern);
  return g;
}

class RtlRht16 : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(RtlRht16, GoldenRhtGroupSeedsAndRandomInputs) {
  std::vector<Group> groups;
  uint64_t philox_groups = 0;
  for (uint64_t s = 0; s < 200; ++s) {
    const uint64_t seed = s < 100 ? s : rng_();
    const uint32_t signs = rht_signs(seed)[0] & 0xFFFFu;
    for (int i = 0; i < 20; ++i) {
      groups.push_back(random_group(rng_, signs));
      groups.back().what += ", rht_signs(seed " + std::to_string(seed) + ")";
      ++philox_groups;
    }
  }
  for (int i = 0; i < 4000; ++i) {
    const uint32_t signs = i == 0 ? 0u : i == 1 ? 0xFFFFu : static_cast<uint32_t>(rng_() & 0xFFFFu);
    groups.push_back(random_group(rng_, signs));
    groups.back().what += ", random signs";
  }

  ClockedSim<Vnibble_rht16> sim(seed_);
  sim.reset();
  std::deque<Pending> pending;
  uint64_t checked = 0, outputs = 0, bf16_groups = 0, nan_outputs = 0, inf_outputs = 0, subnormal_outputs = 0;
  bool reported = false, reported_latency = false;
  auto step = [&]() {
    sim.tick();
    Vnibble_rht16& m = sim.model();
    if (!m.valid_o) return;
    if (pending.empty()) {
      ADD_FAILURE() << "unexpected valid_o in cycle " << sim.cycles();
      return;
    }
    const Pending p = pending.front();
    pending.pop_front();
    ++checked;
    if (sim.cycles() - p.cycle != kRhtLatency && !reported_latency) {
      reported_latency = true;
      ADD_FAILURE() << "group presented in cycle " << p.cycle << " came out in cycle " << sim.cycles()
                    << ", documented latency " << kRhtLatency;
    }
    for (int i = 0; i < kN; ++i) {
      const uint32_t rtl = static_cast<uint32_t>(field(m.y_o, 32 * static_cast<unsigned>(i), 32));
      const uint32_t gold = p.y[static_cast<size_t>(i)];
      ++outputs;
      if (is_nan(gold)) ++nan_outputs;
      if ((gold & 0x7FFFFFFFu) == 0x7F800000u) ++inf_outputs;
      if ((gold & 0x7F800000u) == 0 && (gold & 0x7FFFFFu) != 0) ++subnormal_outputs;
      const bool ok = same_f32(rtl, gold) && (!is_nan(rtl) || rtl == 0x7FC00000u);
      if (!ok && !reported) {
        reported = true;
        std::string xs;
        for (uint32_t x : p.group->x) xs += " " + hex32(x).substr(0, 10);
        char signs[16];
        std::snprintf(signs, sizeof signs, "0x%04x", p.group->signs);
        ADD_FAILURE() << "first mismatch (" << p.group->what << "), output " << i << ": rtl " << hex32(rtl)
                      << ", golden " << hex32(gold) << "\n  signs " << signs << " bf16 " << p.group->bf16
                      << "\n  x" << xs;
      }
    }
  };
  for (const Group& g : groups) {
    while (rng_() % 100 < 20) {
      sim->valid_i = 0;
      sim->bf16_i = rng_() & 1u;  // garbage while idle
      step();
    }
    sim->valid_i = 1;
    sim->bf16_i = g.bf16;
    sim->signs_i = static_cast<uint16_t>(g.signs);
    for (int i = 0; i < kN; ++i) set_field(sim->x_i, 32 * static_cast<unsigned>(i), 32, g.x[static_cast<size_t>(i)]);
    pending.push_back({golden_rht(g), &g, sim.cycles()});
    if (g.bf16) ++bf16_groups;
    step();
  }
  sim->valid_i = 0;
  for (uint64_t i = 0; i < kRhtLatency + 2; ++i) step();
  EXPECT_TRUE(pending.empty()) << pending.size() << " groups never came out";
  std::printf("[ cases    ] %llu groups (%llu with golden Philox signs of 200 seeds, %llu with bf16), %llu outputs"
              " (%llu NaN, %llu Inf, %llu subnormal) vs golden rht_group\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(philox_groups),
              static_cast<unsigned long long>(bf16_groups), static_cast<unsigned long long>(outputs),
              static_cast<unsigned long long>(nan_outputs), static_cast<unsigned long long>(inf_outputs),
              static_cast<unsigned long long>(subnormal_outputs));
  EXPECT_EQ(checked, groups.size());
  EXPECT_GT(checked, 0u);
  EXPECT_GT(subnormal_outputs, 0u);
}

}  // namespace
}  // namespace nibble::rtl_test
