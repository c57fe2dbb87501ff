// The FP8 (E4M3) and BF16 calibration MACs (rtl/synth/calib_fpmac.v) as `nibble energy
// --calibration` measures them: synthesized with the generic library by the area flow
// (nibble_synth.py, cached in NIBBLE_SYNTH_CACHE), the mapped netlists simulated cell by cell
// (nibble::power::GateSim) and every result compared bit for bit with std::fma(a, b, acc) on
// floats, NaN canonicalized to 0x7FC00000 (the block's one NaN):
//   - calib_fpmac_core E4M3: all 256 x 256 code pairs against fixed accumulators (signed zeros,
//     subnormals, values near the products, the cancelling -448*448, the largest finite,
//     infinities, NaN) and against two random accumulators per pair near the product's
//     magnitude (rounding and cancellation);
//   - calib_fpmac_core BF16: seeded random codes (products from far below the binary32
//     subnormals to past overflow, subnormal and special operands) against accumulators chosen
//     around the product (cancellation, rounding, subnormal, special), plus a table of edges;
//   - calib_fpmac E4M3 and BF16: the registered accumulator from reset through random
//     sequences, acc_o checked every cycle against a running std::fma.
// E4M3 values come from golden (decode_scale), BF16 values are the top half of a binary32.
// The seed is printed (NIBBLE_RTL_SEED overrides); a test that checked nothing fails.
// Skips with a message without yosys.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/power/gate_sim.h"

#include "synth_test_util.h"
#include "nibble/scale.h"

namespace nibble::power {
namespace {

namespace fs = std::filesystem;

using synth_test::env;
using synth_test::run;

uint64_t test_seed() {
  uint64_t seed = 0xF9AC'2026u;
  if (const std::string s = env("NIBBLE_RTL_SEED", ""); !s.empty()) seed = std::strtoull(s.c_str(), nullptr, 0);
  std::printf("[ seed     ] NIBBLE_RTL_SEED=0x%llx\n", static_cast<unsigned long long>(seed));
  return seed;
}

// The operand formats of the block: (ExpBits, ManBits) and the exact value of a code.
struct OpFormat {
  const char* name;
  int exp_bits, man_bits;
};
constexpr OpFormat kE4M3{"e4m3", 4, 3};
constexpr OpFormat kBF16{"bf16", 8, 7};

float value(const OpFormat& f, uint32_t code) {
  if (f.exp_bits == 4) return decode_scale(ScaleFormat::kE4M3, code);  // golden's E4M3
  return f32_from_bits(code << 16);                                   // BF16: exact
}

uint32_t reference(float a, float b, uint32_t acc) {
  return f32_bits(canonical(std::fma(a, b, f32_from_bits(acc))));
}

// The four netlists, synthesized once for the whole run.
struct Netlists {
  std::string skip, error;
  fs::path cells, dir;
  fs::path path(const std::string& top, const OpFormat& f) const { return dir / (top + "_" + f.name + ".json"); }
};

const Netlists& netlists() {
  static const Netlists n = [] {
    Netlists r;
    const std::string src = env("NIBBLE_SOURCE_DIR", "");
    if (src.empty()) {
      r.error = "NIBBLE_SOURCE_DIR not set (ctest sets it)";
      return r;
    }
    const std::string yosys = env("NIBBLE_YOSYS", "yosys");
    std::string out;
    if (run("command -v " + yosys, out) != 0 || out.empty()) {
      r.skip = "yosys not found (" + yosys + "): apt-get install yosys (scripts/setup.sh)";
      return r;
    }
    const std::string synth = src + "/rtl/synth";
    r.dir = fs::temp_directory_path() / ("nibble_fpmac_" + std::to_string(::getpid()));
    fs::create_directories(r.dir);
    r.cells = r.dir / "cells.json";
    if (run("python3 " + synth + "/liberty_cells.py " + synth + "/nibble_generic.lib " + r.cells.string(), out) != 0) {
      r.error = "liberty_cells.py failed:\n" + out;
      return r;
    }
    const std::string cache = env("NIBBLE_SYNTH_CACHE", "");
    for (const char* top : {"calib_fpmac_core", "calib_fpmac"}) {
      for (const OpFormat& f : {kE4M3, kBF16}) {
        std::string cmd = "python3 " + synth + "/nibble_synth.py --top " + top + " --source " + synth +
                          "/calib_fpmac.v --param ExpBits=" + std::to_string(f.exp_bits) +
                          " --param ManBits=" + std::to_string(f.man_bits) + " --yosys " + yosys + " --netlist " +
                          r.path(top, f).string() + " --json " + (r.dir / "rec.json").string();
        if (!cache.empty()) cmd += " --cache " + cache;
        if (run(cmd, out) != 0) {
          r.error = std::string("synthesis of ") + top + " " + f.name + " failed:\n" + out;
          return r;
        }
      }
    }
    return r;
  }();
  return n;
}

class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    if (netlists().dir.empty()) return;
    std::error_code ec;
    fs::remove_all(netlists().dir, ec);
  }
};
[[maybe_unused]] const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

#define NEED_NETLISTS()                                            \
  do {                                                             \
    if (!netlists().skip.empty()) GTEST_SKIP() << netlists().skip; \
    ASSERT_TRUE(netlists().error.empty()) << netlists().error;     \
  } while (0)

// Counts cases and failures, printing the first few failures in hex.
struct Tally {
  const char* what;
  uint64_t cases = 0, failures = 0;
  void check(uint32_t a, uint32_t b, uint32_t acc, uint32_t got, uint32_t want) {
    ++cases;
    if (got == want) return;
    if (++failures <= 20) {
      ADD_FAILURE() << what << ": a=0x" << std::hex << a << " b=0x" << b << " acc=0x" << acc << " -> got 0x" << got
                    << ", fma 0x" << want;
    }
  }
  void finish() const {
    std::printf("[ cases    ] %s: %llu checked, %llu failed\n", what, static_cast<unsigned long long>(cases),
                static_cast<unsigned long long>(failures));
    EXPECT_GT(cases, 0u) << what << ": nothing checked";
    EXPECT_EQ(failures, 0u) << what;
  }
};

// The combinational core for one (a, b, acc).
uint32_t core(GateSim& sim, uint32_t a, uint32_t b, uint32_t acc) {
  sim.set_input("a_i", a);
  sim.set_input("b_i", b);
  sim.set_input("acc_i", acc);
  sim.settle();
  return static_cast<uint32_t>(sim.get("sum_o"));
}

// A binary32 near |p| (within 2^+-span, random low bits, random sign), or -fl(p) moved by a
// few ulps (cancellation); p is the exact product (a double holds it).
uint32_t acc_near(double p, int span, std::mt19937_64& rng) {
  const float fp = static_cast<float>(p);
  if (!std::isfinite(fp) || fp == 0.0f) return static_cast<uint32_t>(rng()) & 0xBFFF'FFFFu;  // not Inf/NaN-heavy
  if (rng() % 4 == 0) {
    const uint32_t c = f32_bits(-fp);
    const uint32_t moved = c + static_cast<uint32_t>(static_cast<int>(rng() % 5) - 2);
    return (moved & 0x7F80'0000u) == 0x7F80'0000u ? c : moved;
  }
  const int e = std::ilogb(fp) + static_cast<int>(rng() % static_cast<uint64_t>(2 * span + 1)) - span;
  const int be = std::clamp(e + 127, 0, 254);
  return (static_cast<uint32_t>(rng() & 1) << 31) | (static_cast<uint32_t>(be) << 23) |
         static_cast<uint32_t>(rng() & 0x7F'FFFFu);
}

constexpr uint32_t kSpecialAcc[] = {
    0x0000'0000u, 0x8000'0000u,                // signed zeros
    0x0000'0001u, 0x8040'0000u, 0x007F'FFFFu,  // subnormals
    0x3F80'0000u, 0xBFC0'0000u, 0x3DCC'CCCDu,  // 1, -1.5, 0.1
    0x4B80'0001u, 0xC844'0000u,                // 2^24 + 2 (products below an ulp), -448*448
    0x7F7F'FFFFu, 0xFF80'0000u, 0x7F80'0000u,  // largest finite, -Inf, +Inf
    0x7FC0'0000u, 0xFF80'0001u,                // NaNs
};

TEST(FpmacNetlist, E4m3CoreAllCodePairs) {
  NEED_NETLISTS();
  std::mt19937_64 rng(test_seed());
  GateSim sim(netlists().cells.string(), netlists().path("calib_fpmac_core", kE4M3).string());
  Tally t{"e4m3 core, all code pairs"};
  for (uint32_t a = 0; a < 256; ++a) {
    const float va = value(kE4M3, a);
    for (uint32_t b = 0; b < 256; ++b) {
      const float vb = value(kE4M3, b);
      for (uint32_t acc : kSpecialAcc) t.check(a, b, acc, core(sim, a, b, acc), reference(va, vb, acc));
      const double p = static_cast<double>(va) * static_cast<double>(vb);
      for (int i = 0; i < 2; ++i) {
        const uint32_t acc = acc_near(p, 26, rng);
        t.check(a, b, acc, core(sim, a, b, acc), reference(va, vb, acc));
      }
    }
  }
  t.finish();
}

// A BF16 code: mostly ordinary magnitudes; subnormals, extremes, specials and any code too.
uint32_t random_bf16(std::mt19937_64& rng, int exp_lo, int exp_hi) {
  const uint32_t s = static_cast<uint32_t>(rng() & 1) << 15, m = static_cast<uint32_t>(rng() & 0x7F);
  switch (rng() % 16) {
    case 0: return static_cast<uint32_t>(rng() & 0xFFFF);  // anything, NaN and Inf included
    case 1: {
      constexpr uint32_t kSpecial[] = {0x0000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0x7F80, 0x7FC0, 0x3F80};
      return s | kSpecial[rng() % 8];
    }
    case 2: return s | m;  // subnormal (or zero)
    default: {
      const int e = exp_lo + static_cast<int>(rng() % static_cast<uint64_t>(exp_hi - exp_lo + 1));
      return s | (static_cast<uint32_t>(std::clamp(e, 0, 254)) << 7) | m;
    }
  }
}

TEST(FpmacNetlist, Bf16CoreRandomAndEdges) {
  NEED_NETLISTS();
  std::mt19937_64 rng(test_seed());
  GateSim sim(netlists().cells.string(), netlists().path("calib_fpmac_core", kBF16).string());
  Tally t{"bf16 core, random and edges"};
  // Edges: (a, b, acc) as codes.
  const std::array<std::array<uint32_t, 3>, 18> edges = {{
      {0x3F80, 0x3F80, 0xBF80'0000u},  // 1*1 - 1 = +0
      {0x8000, 0x3F80, 0x8000'0000u},  // -0*1 + -0 = -0
      {0x0000, 0x8000, 0x0000'0000u},  // +0 + -0 = +0
      {0x7F80, 0x0000, 0x3F80'0000u},  // Inf * 0 = NaN
      {0x7F80, 0x3F80, 0xFF80'0000u},  // Inf - Inf = NaN
      {0x7F80, 0xBF80, 0xFF80'0000u},  // -Inf - Inf = -Inf
      {0x7F80, 0x0001, 0x0000'0000u},  // Inf * subnormal = Inf
      {0x7FC1, 0x3F80, 0x3F80'0000u},  // NaN operand
      {0x7F7F, 0x7F7F, 0x0000'0000u},  // max*max overflows
      {0x7F7F, 0x4000, 0xFF7F'FFFFu},  // 2 max - max = max (product out of range, sum in)
      {0x0001, 0x0001, 0x0000'0000u},  // 2^-266: +0 after rounding
      {0x8001, 0x0001, 0x0000'0001u},  // min subnormal - 2^-266 -> min subnormal
      {0x0040, 0x3F00, 0x0000'0000u},  // 2^-127 * 0.5: subnormal product
      {0x0081, 0x3400, 0x0000'0001u},  // 2^-149 (1 + 2^-7) + 2^-149: subnormal, sticky bit
      {0x0080, 0x3F80, 0x807F'FFFFu},  // 2^-126 - (2^-126 - 2^-149) = 2^-149
      {0x4B80, 0x3F80, 0x3F00'0000u},  // 2^24 + 0.5: tie to even
      {0x4B80, 0x3F80, 0x3FC0'0000u},  // 2^24 + 1.5: round up
      {0x3F81, 0x3F81, 0xBF82'0000u},  // (1+2^-7)^2 - (1+2^-6): 2^-14, exact cancellation
  }};
  for (const auto& e : edges) t.check(e[0], e[1], e[2], core(sim, e[0], e[1], e[2]), reference(value(kBF16, e[0]), value(kBF16, e[1]), e[2]));
  for (int i = 0; i < 300000; ++i) {
    uint32_t a, b;
    if (i % 2 == 0) {  // products anywhere in [2^-280, 2^260]
      a = random_bf16(rng, 0, 254);
      b = random_bf16(rng, 0, 254);
    } else {           // products around the binary32 subnormals and the overflow threshold
      a = random_bf16(rng, 127 - 70, 127 - 55);
      b = random_bf16(rng, 127 - 80, 127 - 60);
      if (i % 4 == 1) {
        a = random_bf16(rng, 127 + 60, 127 + 70);
        b = random_bf16(rng, 127 + 55, 127 + 66);
      }
    }
    const float va = value(kBF16, a), vb = value(kBF16, b);
    uint32_t acc;
    switch (rng() % 8) {
      case 0: acc = static_cast<uint32_t>(rng()); break;
      case 1: acc = kSpecialAcc[rng() % std::size(kSpecialAcc)]; break;
      case 2: acc = (static_cast<uint32_t>(rng() & 1) << 31) | static_cast<uint32_t>(rng() & 0x7F'FFFFu); break;
      default: acc = acc_near(static_cast<double>(va) * static_cast<double>(vb), 30, rng);
    }
    t.check(a, b, acc, core(sim, a, b, acc), reference(va, vb, acc));
  }
  t.finish();
}

// The registered MAC from reset: acc_o after each cycle against a running std::fma. Eight runs;
// the operands of the first seven are finite (E4M3: no NaN code; BF16: moderate magnitudes) so
// the sum stays finite, the last one draws special codes too.
void check_mac(const OpFormat& f, int cycles, Tally& t) {
  std::mt19937_64 rng(test_seed());
  GateSim sim(netlists().cells.string(), netlists().path("calib_fpmac", f).string());
  for (int run_i = 0; run_i < 8; ++run_i) {
    const bool specials = run_i == 7;
    auto operand = [&] {
      if (f.exp_bits == 4) {
        const uint32_t c = static_cast<uint32_t>(rng() & 0xFF);
        return !specials && (c & 0x7F) == 0x7F ? c ^ 1 : c;
      }
      if (specials) return random_bf16(rng, 127 - 12, 127 + 12);
      return static_cast<uint32_t>(rng() & 0x807F) | (static_cast<uint32_t>(127 - 12 + rng() % 25) << 7);
    };
    sim.set_input("rst_ni", 0);
    sim.set_input("a_i", operand());
    sim.set_input("b_i", operand());
    sim.settle();
    t.check(0, 0, 0, static_cast<uint32_t>(sim.get("acc_o")), 0);  // cleared
    sim.set_input("rst_ni", 1);
    uint32_t acc = 0;
    for (int c = 0; c < cycles; ++c) {
      const uint32_t a = operand(), b = operand();
      sim.set_input("a_i", a);
      sim.set_input("b_i", b);
      sim.tick();
      const uint32_t want = reference(value(f, a), value(f, b), acc);
      t.check(a, b, acc, static_cast<uint32_t>(sim.get("acc_o")), want);
      acc = want;
    }
  }
}

TEST(FpmacNetlist, E4m3MacAccumulates) {
  NEED_NETLISTS();
  Tally t{"e4m3 registered MAC"};
  check_mac(kE4M3, 2000, t);
  t.finish();
}

TEST(FpmacNetlist, Bf16MacAccumulates) {
  NEED_NETLISTS();
  Tally t{"bf16 registered MAC"};
  check_mac(kBF16, 2000, t);
  t.finish();
}

}  // namespace
}  // namespace nibble::power
