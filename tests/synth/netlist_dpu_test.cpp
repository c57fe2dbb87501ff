// The synthesized nibble_dpu netlists against golden: what the area and energy numbers are
// of. The area flow synthesizes a Yosys-readable rewrite of the RTL (rtl/synth/sv_compat.py)
// and maps it to cells; this test simulates the mapped netlist, cell by cell from the
// library's functions (nibble::power::GateSim), on the kinds of blocks tests/rtl/dpu_test.cpp
// drives into the RTL, and checks every accumulator bit for bit against golden's
// block_partial_sum / block_product / accumulate:
//   - random codes in every format the mask builds (mixed operand formats included; one dot
//     product in 32 with a format outside the mask, which must count as zero), random scale
//     formats of the scale-format mask and codes (NaN, Inf, zero and subnormal scales among
//     them), partial blocks, dot products of 1-4 blocks, random idle cycles with garbage on
//     the inputs;
//   - golden-quantized Gaussian / Student-t / RHT-rotated operand streams (the energy runs').
// The netlists (one per lane design, mask and scale-format mask the fixture builds) and the cell
// models come from the ctest fixture `synth_netlists` (tests/synth/synth_tests.py netlists) in
// NIBBLE_NETLIST_DIR; a configuration without a netlist there is skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "nibble/dot.h"
#include "nibble/format_sets.h"
#include "nibble/fp32.h"
#include "nibble/power/dpu_stream.h"
#include "nibble/power/gate_sim.h"
#include "nibble/power/lane_design.h"
#include "nibble/scale.h"

namespace nibble::power {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kLatency = 3;  // nibble_pkg::DpuLatency

uint64_t test_seed() {
  uint64_t seed = 0x5EED'2026u;
  if (const char* s = std::getenv("NIBBLE_RTL_SEED"); s != nullptr && *s != '\0') seed = std::strtoull(s, nullptr, 0);
  std::printf("[ seed     ] NIBBLE_RTL_SEED=0x%llx\n", static_cast<unsigned long long>(seed));
  return seed;
}

bool same_f32(uint32_t got, uint32_t want) {
  auto nan = [](uint32_t u) { return (u & 0x7F80'0000u) == 0x7F80'0000u && (u & 0x007F'FFFFu) != 0; };
  return nan(want) ? nan(got) : got == want;
}

fs::path netlist_dir() {
  const char* d = std::getenv("NIBBLE_NETLIST_DIR");
  return d != nullptr ? fs::path(d) : fs::path();
}

// Random scale code in a scale format: mostly ordinary magnitudes, sometimes special.
uint32_t random_scale(ScaleFormat f, std::mt19937_64& rng) {
  const unsigned pick = rng() % 16;
  switch (f) {
    case ScaleFormat::kE4M3:
      if (pick == 0) return 0x7F;  // NaN
      if (pick == 1) return static_cast<uint32_t>(rng() % 8);  // zero / subnormal
      return static_cast<uint32_t>(0x20 + rng() % 0x40);       // around 1
    case ScaleFormat::kUE8M0:
      if (pick == 0) return 0xFF;  // NaN
      if (pick == 1) return static_cast<uint32_t>(rng() & 0xFF);
      return static_cast<uint32_t>(127 - 20 + rng() % 40);
    case ScaleFormat::kFP32:
      if (pick == 0) return 0x7F80'0000u | static_cast<uint32_t>(rng() % 2 << 22);  // Inf / NaN
      if (pick == 1) return static_cast<uint32_t>(rng());                          // anything
      if (pick == 2) return static_cast<uint32_t>(rng() % 0x80'0000u);             // subnormal
      return (static_cast<uint32_t>(rng() & 1) << 31) | ((127u - 30 + static_cast<uint32_t>(rng() % 60)) << 23) |
             static_cast<uint32_t>(rng() & 0x7F'FFFFu);
  }
  return 0;
}

class NetlistChecker {
 public:
  NetlistChecker(GateSim& sim, unsigned mask, std::mt19937_64& rng) : dpu_(sim), mask_(mask), rng_(rng) {
    dpu_.reset();
  }

  void run(const std::vector<DpuBlock>& blocks, unsigned bubble_percent) {
    for (const DpuBlock& b : blocks) {
      while (rng_() % 100 < bubble_percent) idle();
      expect(b);
      check(dpu_.step(&b));
    }
    for (int i = 0; i < 6; ++i) idle();
    EXPECT_TRUE(pending_.empty()) << pending_.size() << " results never came";
  }

  uint64_t checked() const { return checked_; }

 private:
  void expect(const DpuBlock& b) {
    // A block with a format outside the mask (the RTL assumes none) contributes P = 0.
    const bool enabled = ((mask_ >> static_cast<unsigned>(b.fa)) & (mask_ >> static_cast<unsigned>(b.fb)) & 1u) != 0;
    const int32_t p = enabled ? block_partial_sum(b.a.data(), b.fa, b.b.data(), b.fb, b.a.size()) : 0;
    const float r = block_product(p, b.fa, b.fb, decode_scale(b.sfa, b.scale_a), decode_scale(b.sfb, b.scale_b));
    acc_ = accumulate(b.first ? 0.0f : acc_, r);
    pending_.push_back({f32_bits(acc_), b.last, cycle_, b});
  }

  void idle() {
    GateSim& s = dpu_.sim();
    // garbage on the data inputs while idle: the DPU must ignore it
    s.set_input("first_i", rng_() & 1u);
    s.set_input("last_i", rng_() & 1u);
    s.set_input("scale_a_i", static_cast<uint32_t>(rng_()));
    s.set_input("codes_a_i", rng_());
    check(dpu_.step(nullptr));
  }

  void check(const DpuOutput& o) {
    ++cycle_;
    if (!o.valid) {
      EXPECT_FALSE(o.last) << "acc_last_o without acc_valid_o";
      return;
    }
    if (pending_.empty()) {
      ADD_FAILURE() << "unexpected acc_valid_o in cycle " << cycle_;
      return;
    }
    const Pending e = pending_.front();
    pending_.pop_front();
    ++checked_;
    if (cycle_ - e.cycle != kLatency && !reported_latency_) {
      reported_latency_ = true;
      ADD_FAILURE() << "block of cycle " << e.cycle << " accumulated in cycle " << cycle_;
    }
    if ((!same_f32(o.acc, e.acc) || o.last != e.last) && !reported_) {
      reported_ = true;
      std::string ca, cb;
      for (size_t i = 0; i < e.block.a.size(); ++i) {
        ca += "0123456789abcdef"[e.block.a[i] & 0xF];
        cb += "0123456789abcdef"[e.block.b[i] & 0xF];
      }
      char buf[256];
      std::snprintf(buf, sizeof buf, "mask %u: %s x %s, codes a %s b %s, scales 0x%08x (%s) 0x%08x (%s): ", mask_,
                    std::string(name(e.block.fa)).c_str(), std::string(name(e.block.fb)).c_str(), ca.c_str(),
                    cb.c_str(), e.block.scale_a, std::string(name(e.block.sfa)).c_str(), e.block.scale_b,
                    std::string(name(e.block.sfb)).c_str());
      ADD_FAILURE() << "first mismatch: " << buf << "netlist acc 0x" << std::hex << o.acc << " last " << o.last
                    << ", golden 0x" << e.acc << " last " << e.last;
    }
  }

  struct Pending {
    uint32_t acc;
    bool last;
    uint64_t cycle;
    DpuBlock block;
  };
  DpuNetlist dpu_;
  unsigned mask_;
  std::mt19937_64& rng_;
  float acc_ = 0;
  uint64_t cycle_ = 0, checked_ = 0;
  std::deque<Pending> pending_;
  bool reported_ = false, reported_latency_ = false;
};

std::vector<Format> mask_formats(unsigned mask) {
  std::vector<Format> out;
  for (Format f : kAllFormats) {
    if ((mask >> static_cast<unsigned>(f)) & 1u) out.push_back(f);
  }
  return out;
}

// Random dot products in the mask's formats and the scale mask's scale formats; one in 32 has
// an operand in a format outside the mask (where there is one), which the DPU must count as
// zero.
std::vector<DpuBlock> random_blocks(unsigned mask, unsigned scale_mask, unsigned lanes, size_t dots,
                                    std::mt19937_64& rng) {
  const std::vector<Format> fmts = mask_formats(mask);
  const std::vector<Format> others = mask_formats(~mask & kAllFormatsMask);
  std::vector<ScaleFormat> scales;
  for (ScaleFormat f : kAllScaleFormats) {
    if ((scale_mask >> static_cast<unsigned>(f)) & 1u) scales.push_back(f);
  }
  std::vector<DpuBlock> out;
  for (size_t d = 0; d < dots; ++d) {
    Format fa = fmts[rng() % fmts.size()], fb = fmts[rng() % fmts.size()];
    if (!others.empty() && rng() % 32 == 0) (rng() & 1 ? fa : fb) = others[rng() % others.size()];
    const ScaleFormat sfa = scales[rng() % scales.size()], sfb = scales[rng() % scales.size()];
    const size_t nblocks = 1 + rng() % 4;
    for (size_t k = 0; k < nblocks; ++k) {
      DpuBlock b;
      b.fa = fa;
      b.fb = fb;
      b.sfa = sfa;
      b.sfb = sfb;
      const size_t len = rng() % 4 == 0 ? 1 + rng() % lanes : lanes;
      for (size_t i = 0; i < len; ++i) {
        b.a.push_back(static_cast<uint8_t>(rng() & 0xF));
        b.b.push_back(static_cast<uint8_t>(rng() & 0xF));
      }
      b.scale_a = random_scale(sfa, rng);
      b.scale_b = random_scale(sfb, rng);
      b.first = k == 0;
      b.last = k + 1 == nblocks;
      out.push_back(std::move(b));
    }
  }
  return out;
}

class NetlistDpu : public ::testing::TestWithParam<std::tuple<LaneDesign, unsigned, unsigned>> {};

TEST_P(NetlistDpu, MatchesGolden) {
  const LaneDesign design = std::get<0>(GetParam());
  const unsigned mask = std::get<1>(GetParam());
  const unsigned scale_mask = std::get<2>(GetParam());
  const fs::path dir = netlist_dir();
  ASSERT_FALSE(dir.empty()) << "NIBBLE_NETLIST_DIR is not set (ctest sets it; fixture synth_netlists)";
  const fs::path netlist = dir / ("dpu16_d" + std::to_string(static_cast<unsigned>(design)) + "_m" +
                                  std::to_string(mask) + (scale_mask == kAllScaleFormatsMask ? "" : "_s" + std::to_string(scale_mask)) +
                                  ".netlist.json");
  if (!fs::exists(netlist)) {
    GTEST_SKIP() << "no netlist for lane design " << info(design).name << ", mask " << mask << ", scale formats "
                 << scale_mask << " in " << dir
                 << " (the fixture builds the configurations listed in NIBBLE_NETLIST_CONFIGS)";
  }
  GateSim sim((dir / "generic.cells.json").string(), netlist.string());
  const uint64_t seed = test_seed() + mask;
  std::mt19937_64 rng(seed);
  NetlistChecker checker(sim, mask, rng);
  const DpuNetlist probe(sim);
  checker.run(random_blocks(mask, scale_mask, probe.lanes(), 2000, rng), 15);
  for (Format f : mask_formats(mask)) {
    for (Distribution dist : {Distribution::kGaussian, Distribution::kStudentT, Distribution::kRht}) {
      StreamSpec s;
      s.dist = dist;
      s.format = f;
      s.lanes = probe.lanes();
      s.k = 64;
      s.blocks = 128;
      s.seed = seed;
      s.scale_mode = (scale_mask & 1u) != 0 ? "nvfp4" : "fp32";  // E4M3 scales where the DPU has them
      checker.run(make_stream(s), 5);
    }
  }
  std::printf(
      "lane design %s, mask %u, scale formats %u: %llu accumulator outputs checked against golden (%zu cells, %zu "
      "flops)\n",
      std::string(info(design).name).c_str(), mask, scale_mask, static_cast<unsigned long long>(checker.checked()),
      sim.num_cells(), sim.num_flops());
  EXPECT_GT(checker.checked(), 1000u);
}

// Every non-empty set of formats, and each scale-format set of golden's table (the fixture
// builds a few of these; the others skip).
std::vector<unsigned> scale_format_set_masks() {
  std::vector<unsigned> out;
  for (const ScaleFormatSet& s : kScaleFormatSets) out.push_back(s.mask);
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    DesignsAndMasks, NetlistDpu,
    ::testing::Combine(::testing::Values(LaneDesign::kCommonUnit, LaneDesign::kOwnUnit, LaneDesign::kSplit,
                                         LaneDesign::kSplitLateSign, LaneDesign::kSplitShortShift),
                       ::testing::Range(1u, kAllFormatsMask + 1u), ::testing::ValuesIn(scale_format_set_masks())),
    [](const ::testing::TestParamInfo<std::tuple<LaneDesign, unsigned, unsigned>>& i) {
      std::string name(power::info(std::get<0>(i.param)).name);
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name + "_mask" + std::to_string(std::get<1>(i.param)) + "_scales" + std::to_string(std::get<2>(i.param));
    });

}  // namespace
}  // namespace nibble::power
