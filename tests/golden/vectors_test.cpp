// The golden test-vector stream: write -> parse -> check round trips for every
// op over many seeds, the boundary tables hold what they promise, check finds
// corrupted fields, and malformed lines are rejected with their line number.
#include "nibble/vectors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"

namespace nibble::vectors {
namespace {

GenerateOptions options(Op op, uint64_t seed, int count, bool boundary = true) {
  GenerateOptions o;
  o.op = op;
  o.seed = seed;
  o.count = count;
  o.boundary = boundary;
  return o;
}

std::string stream_text(const GenerateOptions& o) {
  std::ostringstream out;
  write_stream(out, o);
  return out.str();
}

std::set<std::string> labels_of(const std::vector<Vector>& vs) {
  std::set<std::string> s;
  for (const Vector& v : vs) s.insert(v.label);
  return s;
}

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool is_nan(uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0; }
bool is_inf(uint32_t u) { return (u & 0x7FFFFFFFu) == 0x7F800000u; }
bool is_subnormal(uint32_t u) { return (u & 0x7F800000u) == 0 && (u & 0x7FFFFFu) != 0; }

// Field i (0 = the op) of a case line, and the line with field i replaced.
std::string field(const std::string& line, size_t i) {
  std::istringstream in(line);
  std::string t;
  for (size_t j = 0; j <= i; ++j) in >> t;
  return t;
}
std::string replace_field(const std::string& line, size_t i, const std::string& with) {
  std::istringstream in(line);
  std::string t, out;
  for (size_t j = 0; in >> t; ++j) out += (j ? " " : "") + (j == i ? with : t);
  return out;
}

template <class T>
std::vector<T> cases_of(const std::vector<Vector>& vs) {
  std::vector<T> out;
  for (const Vector& v : vs) out.push_back(std::get<T>(v.data));
  return out;
}

std::string op_param_name(const testing::TestParamInfo<Op>& info) {
  std::string s(name(info.param));
  s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
  return s;
}

// --- Round trip, swept over every op --------------------------------------------------

class VectorsRoundTrip : public testing::TestWithParam<Op> {};

TEST_P(VectorsRoundTrip, WriteParseCheckOverManySeeds) {
  size_t checked = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    // The boundary tables do not depend on the seed except through the SR
    // bits, so every fifth seed carries them to keep the sweep quick.
    const GenerateOptions o = options(GetParam(), seed * 0x9E3779B97F4A7C15ull, 25, seed % 5 == 1);
    const std::vector<Vector> generated = generate(o);
    std::istringstream in(stream_text(o));
    const std::vector<Vector> parsed = parse_stream(in);
    ASSERT_EQ(parsed.size(), generated.size()) << "seed " << o.seed;
    for (size_t i = 0; i < parsed.size(); ++i) {
      SCOPED_TRACE("seed " + std::to_string(o.seed) + ", line " + std::to_string(parsed[i].line));
      ASSERT_EQ(parsed[i].data.index(), generated[i].data.index());
      EXPECT_TRUE(parsed[i].data == generated[i].data) << format_case(parsed[i].data);
      EXPECT_EQ(parsed[i].label, generated[i].label);
      EXPECT_EQ(op_of(parsed[i].data), GetParam());
      const std::optional<Mismatch> m = check(parsed[i].data);
      EXPECT_FALSE(m.has_value()) << describe(*m) << "\n" << format_case(parsed[i].data);
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST_P(VectorsRoundTrip, CheckStreamCountsEveryCase) {
  const GenerateOptions o = options(GetParam(), 11, 30);
  std::istringstream in(stream_text(o));
  const CheckReport report = check_stream(in);
  EXPECT_EQ(report.cases, 30u + boundary_table(o).size());
  EXPECT_GT(report.cases, 30u);
  EXPECT_EQ(report.mismatches, 0u);
  EXPECT_TRUE(report.reported.empty());
}

TEST_P(VectorsRoundTrip, SameSeedSameStreamOtherSeedOtherStream) {
  const std::string a = stream_text(options(GetParam(), 5, 20));
  EXPECT_EQ(a, stream_text(options(GetParam(), 5, 20)));
  EXPECT_NE(a, stream_text(options(GetParam(), 6, 20)));
}

TEST_P(VectorsRoundTrip, RandomAndBoundaryCasesInterleave) {
  const GenerateOptions o = options(GetParam(), 3, 4);
  const std::vector<Vector> vs = generate(o);
  const size_t table = boundary_table(o).size();
  ASSERT_GT(table, 4u);
  ASSERT_EQ(vs.size(), 4 + table);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(vs[2 * i].label.empty()) << "position " << 2 * i << " should be random case " << i;
    EXPECT_FALSE(vs[2 * i + 1].label.empty()) << "position " << 2 * i + 1 << " should be boundary case " << i;
  }
  EXPECT_EQ(generate(options(GetParam(), 3, 4, false)).size(), 4u);
}

TEST_P(VectorsRoundTrip, HeaderNamesOpFieldsSeedAndCommand) {
  const std::string text = stream_text(options(GetParam(), 77, 3));
  const std::string op(name(GetParam()));
  EXPECT_EQ(text.rfind("# nibble golden test vectors: " + op, 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("# command: nibble vectors " + op + " --seed 77 --count 3"), std::string::npos);
  EXPECT_NE(text.find("# seed: 77"), std::string::npos);
  EXPECT_NE(text.find("# fields: " + op + " "), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(AllOps, VectorsRoundTrip, testing::ValuesIn(kAllOps), op_param_name);

// --- Options hold every case ------------------------------------------------------------

TEST(VectorsOptions, FixedFieldsHoldInRandomAndBoundaryCases) {
  GenerateOptions q = options(Op::kQuantize, 9, 40);
  q.formats_a = {Format::kInt4};
  q.modes = {ScaleMode::kMXCeil};
  q.lengths = {32};
  q.roundings = {Rounding::kStochastic};
  q.sr_bits = 3;
  for (const QuantizeCase& c : cases_of<QuantizeCase>(generate(q))) {
    EXPECT_EQ(c.format, Format::kInt4);
    EXPECT_EQ(c.mode, ScaleMode::kMXCeil);
    EXPECT_EQ(c.length, 32);
    EXPECT_EQ(c.rounding, Rounding::kStochastic);
    EXPECT_EQ(c.sr_bits, 3);
  }
  GenerateOptions d = options(Op::kDot, 9, 40);
  d.formats_a = {Format::kE1M2};
  d.scales_b = {ScaleFormat::kUE8M0};
  d.lengths = {16};
  d.nblocks = 3;
  for (const DotCase& c : cases_of<DotCase>(generate(d))) {
    EXPECT_EQ(c.fa, Format::kE1M2);
    EXPECT_EQ(c.sfb, ScaleFormat::kUE8M0);
    EXPECT_EQ(c.length, 16);
    EXPECT_EQ(c.nblocks, 3);
  }
  GenerateOptions g = options(Op::kGemmTile, 9, 20);
  g.formats_b = {Format::kE2M1};
  g.modes_a = {ScaleMode::kNVFP4};
  g.blocks_b = {BlockShape::k16x16};
  g.m = 2;
  g.n = 3;
  g.k = 48;
  for (const GemmTileCase& c : cases_of<GemmTileCase>(generate(g))) {
    EXPECT_EQ(c.fb, Format::kE2M1);
    EXPECT_EQ(c.mode_a, ScaleMode::kNVFP4);
    EXPECT_EQ(c.block_b, BlockShape::k16x16);
    EXPECT_EQ(c.m, 2);
    EXPECT_EQ(c.n, 3);
    EXPECT_EQ(c.k, 48);
    EXPECT_EQ(c.c.size(), 6u);
  }
}

// Sets of values: a device's own formats and modes give exactly its cases, each value of the
// set used, random and boundary cases alike.
TEST(VectorsOptions, SetsHoldEveryCaseToTheirValues) {
  GenerateOptions q = options(Op::kQuantize, 5, 200);
  q.formats_a = {Format::kE2M1, Format::kInt4};
  q.modes = {ScaleMode::kNVFP4, ScaleMode::kMXFloor};
  q.lengths = {16};
  std::set<std::pair<Format, ScaleMode>> seen;
  size_t random_cases = 0;
  for (const Vector& v : generate(q)) {
    const QuantizeCase& c = std::get<QuantizeCase>(v.data);
    EXPECT_TRUE(c.format == Format::kE2M1 || c.format == Format::kInt4) << v.label;
    EXPECT_TRUE(c.mode == ScaleMode::kNVFP4 || c.mode == ScaleMode::kMXFloor) << v.label;
    EXPECT_EQ(c.length, 16);
    EXPECT_EQ(c.policy, QuantPolicy{});
    seen.insert({c.format, c.mode});
    random_cases += v.label.empty();
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(random_cases, 200u);
  EXPECT_NE(stream_text(q).find("--format e2m1,int4 --scale nvfp4,mx-floor"), std::string::npos);

  GenerateOptions g = options(Op::kGemmTile, 5, 20);
  g.formats_a = {Format::kE1M2, Format::kE2M1};
  g.blocks_b = {BlockShape::k1x32, BlockShape::k16x16};
  for (const GemmTileCase& c : cases_of<GemmTileCase>(generate(g))) {
    EXPECT_NE(c.fa, Format::kInt4);
    EXPECT_NE(c.block_b, BlockShape::k1x16);
  }
  GenerateOptions one = options(Op::kDot, 6, 30);
  one.formats_a = {Format::kE1M2};
  EXPECT_NE(stream_text(one).find("--format-a e1m2\n"), std::string::npos);
  for (const DotCase& c : cases_of<DotCase>(generate(one))) EXPECT_EQ(c.fa, Format::kE1M2);
}

// The policies: the default stream carries no policy field; a stream of non-default
// policies carries them on every line, sweeps the boundary table over them, adds their
// own entries, and reads back to the same cases.
TEST(VectorsOptions, PoliciesSelectAndRoundTrip) {
  for (const Vector& v : generate(options(Op::kQuantize, 3, 50))) {
    const std::string length = field(format_case(v.data), 3);
    ASSERT_TRUE(length == "16" || length == "32") << format_case(v.data);
  }

  GenerateOptions o = options(Op::kQuantize, 3, 300);
  o.zero_policies = {ZeroPolicy::kSigned};
  o.nonfinite_policies = {NonFinitePolicy::kPropagate};
  const std::vector<Vector> vs = generate(o);
  size_t negative_zeros = 0, nan_tensor_scales = 0, inf_blocks = 0;
  for (const Vector& v : vs) {
    const QuantizeCase& c = std::get<QuantizeCase>(v.data);
    ASSERT_EQ(c.policy.zero, ZeroPolicy::kSigned);
    ASSERT_EQ(c.policy.nonfinite, NonFinitePolicy::kPropagate);
    const std::string line = format_case(c);
    EXPECT_EQ(field(line, 3), "signed") << line;
    EXPECT_EQ(field(line, 4), "propagate") << line;
    EXPECT_EQ(std::get<QuantizeCase>(parse_case(line, 1)), c);
    EXPECT_FALSE(check(c).has_value()) << line;
    if (c.format != Format::kInt4) negative_zeros += static_cast<size_t>(std::count(c.codes.begin(), c.codes.end(), 8));
    nan_tensor_scales += is_nan(c.s_enc);
    // Under propagate an infinite input saturates instead of NaN-scaling its block.
    if (std::any_of(c.x.begin(), c.x.end(), is_inf) && std::none_of(c.x.begin(), c.x.end(), is_nan) &&
        c.scale_code != info(scale_format(c.mode)).nan_code) {
      ++inf_blocks;
    }
  }
  const std::set<std::string> labels = labels_of(vs);
  for (const char* l : {"negative values rounding to zero", "NaN tensor scale (a NaN elsewhere in the tensor)",
                        "+Inf input, tensor scale from it (S_enc = 1)"}) {
    EXPECT_EQ(labels.count(l), 1u) << l;
  }
  std::printf("[ cases    ] %zu signed/propagate cases: %zu 0x8 codes, %zu NaN tensor scales, %zu Inf blocks scaled\n",
              vs.size(), negative_zeros, nan_tensor_scales, inf_blocks);
  EXPECT_GT(negative_zeros, 0u);
  EXPECT_GT(nan_tensor_scales, 0u);
  EXPECT_GT(inf_blocks, 0u);

  // Two policy sets: the table is swept over every pair, the random cases draw from them.
  o.zero_policies = {ZeroPolicy::kPositive, ZeroPolicy::kSigned};
  o.nonfinite_policies = {NonFinitePolicy::kFinite, NonFinitePolicy::kPropagate};
  std::set<std::pair<ZeroPolicy, NonFinitePolicy>> pairs, random_pairs;
  for (const Vector& v : generate(o)) {
    const QuantizeCase& c = std::get<QuantizeCase>(v.data);
    pairs.insert({c.policy.zero, c.policy.nonfinite});
    if (v.label.empty()) random_pairs.insert({c.policy.zero, c.policy.nonfinite});
  }
  EXPECT_EQ(pairs.size(), 4u);
  EXPECT_EQ(random_pairs.size(), 4u);
}

TEST(VectorsOptions, ValidateRejectsBadAndInapplicableOptions) {
  const auto rejects = [](GenerateOptions o, const std::string& needle) {
    try {
      validate(o);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted; expected an error about " << needle;
  };
  GenerateOptions o = options(Op::kQuantize, 1, 0);
  rejects(o, "--count");
  o = options(Op::kQuantize, 1, 1);
  o.nblocks = 2;
  rejects(o, "--nblocks");
  o = options(Op::kDot, 1, 1);
  o.lengths = {8};
  rejects(o, "--block-len");
  o = options(Op::kDot, 1, 1);
  o.nblocks = kMaxDotBlocks + 1;
  rejects(o, "--nblocks");
  o = options(Op::kGemmTile, 1, 1);
  o.k = 0;
  rejects(o, "--k");
  o = options(Op::kGemmTile, 1, 1);
  o.roundings = {Rounding::kStochastic};
  rejects(o, "--rounding");
  o = options(Op::kQuantize, 1, 1);
  o.sr_bits = 9;
  rejects(o, "--sr-bits");
  o = options(Op::kDot, 1, 1);
  o.zero_policies = {ZeroPolicy::kSigned};
  rejects(o, "--zero applies to quantize");
  o = options(Op::kGemmTile, 1, 1);
  o.nonfinite_policies = {NonFinitePolicy::kPropagate};
  rejects(o, "--nonfinite applies to quantize");
  o = options(Op::kQuantize, 1, 1);
  o.formats_a = {Format::kE2M1, Format::kE2M1};
  rejects(o, "--format names e2m1 twice");
  o = options(Op::kDot, 1, 1);
  o.lengths = {32, 16, 32};
  rejects(o, "--block-len names 32 twice");
  o = options(Op::kQuantize, 1, 1);
  o.zero_policies = {ZeroPolicy::kSigned, ZeroPolicy::kSigned};
  rejects(o, "--zero names signed twice");
}

// --- Boundary tables -----------------------------------------------------------------------


TEST(VectorsBoundaryQuantize, EveryEmittableCodeOfEveryFormat) {
  const std::vector<Vector> table = boundary_table(options(Op::kQuantize, 1, 1));
  std::map<Format, std::set<uint8_t>> seen;
  for (const QuantizeCase& c : cases_of<QuantizeCase>(table)) seen[c.format].insert(c.codes.begin(), c.codes.end());
  for (Format f : kAllFormats) {
    SCOPED_TRACE(std::string(name(f)));
    // The quantizer never emits 0x8: negative zero becomes 0, and INT4 is symmetric (-8 saturates to -7).
    std::set<uint8_t> want;
    for (uint8_t code = 0; code < 16; ++code) {
      if (code != 0x8) want.insert(code);
    }
    EXPECT_EQ(seen[f], want);
  }
}

TEST(VectorsBoundaryQuantize, ScaleCodesAtTheirLimits) {
  const std::vector<Vector> table = boundary_table(options(Op::kQuantize, 1, 1));
  std::map<ScaleMode, std::set<uint32_t>> codes;
  for (const QuantizeCase& c : cases_of<QuantizeCase>(table)) codes[c.mode].insert(c.scale_code);
  for (uint32_t e4m3 : {0x7Eu, 0x01u, 0x00u, 0x7Fu}) EXPECT_EQ(codes[ScaleMode::kNVFP4].count(e4m3), 1u) << e4m3;
  for (ScaleMode mx : {ScaleMode::kMXFloor, ScaleMode::kMXCeil}) {
    for (uint32_t ue8m0 : {0u, 127u, 254u, 255u}) EXPECT_EQ(codes[mx].count(ue8m0), 1u) << name(mx) << " " << ue8m0;
  }
  EXPECT_EQ(codes[ScaleMode::kFP32].count(0x7FC00000u), 1u);
  EXPECT_EQ(codes[ScaleMode::kFP32].count(0u), 1u);
}

TEST(VectorsBoundaryQuantize, SpecialInputsAndEveryFormatModeRounding) {
  const std::vector<Vector> table = boundary_table(options(Op::kQuantize, 1, 1));
  const std::set<std::string> labels = labels_of(table);
  for (const char* l : {"every code value", "grid midpoints (RNE ties)", "all-zero block", "NaN input", "+Inf input",
                        "-Inf input", "largest finite inputs", "subnormal inputs", "INT4 -8 input saturates",
                        "E4M3 scale at max 448", "E4M3 scale at min subnormal 2^-9", "UE8M0 code 0 (2^-127)",
                        "every code value (sr, B=1)", "grid midpoints (RNE ties) (sr, B=8)"}) {
    EXPECT_EQ(labels.count(l), 1u) << l;
  }
  std::set<std::tuple<Format, ScaleMode, Rounding>> combos;
  bool nan_block = false, int4_minus8 = false, zero_block = false;
  for (const Vector& v : table) {
    const QuantizeCase& c = std::get<QuantizeCase>(v.data);
    combos.insert({c.format, c.mode, c.rounding});
    const bool finite = std::all_of(c.x.begin(), c.x.end(), [](uint32_t x) { return !is_nan(x) && !is_inf(x); });
    if (!finite) {
      nan_block = true;
      EXPECT_EQ(c.scale_code, info(scale_format(c.mode)).nan_code) << v.label;
    }
    if (c.format == Format::kInt4 && c.x[0] == f32_bits(-8.0f) && c.mode == ScaleMode::kFP32) {
      int4_minus8 = true;
      EXPECT_EQ(c.codes[0], 0x9u) << "INT4 -8 quantizes to -7";
    }
    if (std::all_of(c.x.begin(), c.x.end(), [](uint32_t x) { return x == 0; })) zero_block = true;
  }
  EXPECT_EQ(combos.size(), 3u * 4u * 2u);
  EXPECT_TRUE(nan_block);
  EXPECT_TRUE(int4_minus8);
  EXPECT_TRUE(zero_block);
}

TEST(VectorsBoundaryDot, EveryCodePairOfAllNineFormatPairs) {
  const std::vector<Vector> table = boundary_table(options(Op::kDot, 1, 1));
  std::map<std::pair<Format, Format>, std::set<std::pair<int, int>>> pairs;
  for (const Vector& v : table) {
    if (v.label != "every code pair") continue;
    const DotCase& c = std::get<DotCase>(v.data);
    const size_t len = static_cast<size_t>(c.length);
    for (size_t b = 0; b < static_cast<size_t>(c.nblocks); ++b) {
      const uint8_t* a = &c.codes_a[b * len];
      const uint8_t* bb = &c.codes_b[b * len];
      // One product per block: a holds one code in every lane, b one code in one lane.
      const int cb = *std::max_element(bb, bb + len);
      pairs[{c.fa, c.fb}].insert({a[0], cb});
      EXPECT_EQ(c.partial[b],
                decode(c.fa, a[0]).signed_units() * decode(c.fb, static_cast<uint8_t>(cb)).signed_units());
    }
  }
  EXPECT_EQ(pairs.size(), 9u);
  for (const auto& [fp, seen] : pairs) EXPECT_EQ(seen.size(), 256u) << name(fp.first) << " x " << name(fp.second);
}

TEST(VectorsBoundaryDot, ScaleCodesAndResultsAtTheirLimits) {
  const std::vector<Vector> table = boundary_table(options(Op::kDot, 1, 1));
  std::map<ScaleFormat, std::set<uint32_t>> scales;
  std::set<std::pair<ScaleFormat, ScaleFormat>> scale_pairs;
  bool subnormal_r = false, inf_r = false, nan_result = false, subnormal_result = false, inf_result = false;
  int32_t int4_max_p = 0;
  for (const DotCase& c : cases_of<DotCase>(table)) {
    scales[c.sfa].insert(c.scales_a.begin(), c.scales_a.end());
    scales[c.sfb].insert(c.scales_b.begin(), c.scales_b.end());
    scale_pairs.insert({c.sfa, c.sfb});
    for (uint32_t r : c.products) {
      subnormal_r = subnormal_r || is_subnormal(r);
      inf_r = inf_r || is_inf(r);
    }
    nan_result = nan_result || is_nan(c.result);
    inf_result = inf_result || is_inf(c.result);
    subnormal_result = subnormal_result || is_subnormal(c.result);
    if (c.fa == Format::kInt4 && c.fb == Format::kInt4) {
      int4_max_p = std::max(int4_max_p, *std::max_element(c.partial.begin(), c.partial.end()));
    }
  }
  for (uint32_t code : {0x7Eu, 0x01u, 0x00u, 0x7Fu, 0x38u}) {
    EXPECT_EQ(scales[ScaleFormat::kE4M3].count(code), 1u) << code;
  }
  for (uint32_t code : {0u, 127u, 254u, 255u}) EXPECT_EQ(scales[ScaleFormat::kUE8M0].count(code), 1u) << code;
  for (uint32_t code : {0x7F7FFFFFu, 0x00000001u, 0x7F800000u, 0x7FC00000u}) {
    EXPECT_EQ(scales[ScaleFormat::kFP32].count(code), 1u) << code;
  }
  EXPECT_EQ(scale_pairs.size(), 9u);
  EXPECT_TRUE(subnormal_r);
  EXPECT_TRUE(inf_r);
  EXPECT_TRUE(nan_result);
  EXPECT_TRUE(inf_result);
  EXPECT_TRUE(subnormal_result);
  EXPECT_EQ(int4_max_p, 64 * 32) << "(-8) * (-8) in all 32 lanes";
}

TEST(VectorsBoundaryGemmTile, FormatPairsModesShapesAndSpecialResults) {
  const std::vector<Vector> table = boundary_table(options(Op::kGemmTile, 1, 1));
  std::set<std::pair<Format, Format>> formats;
  std::set<ScaleMode> modes_a, modes_b;
  std::set<BlockShape> blocks_a, blocks_b;
  bool nan_c = false, inf_c = false, subnormal_c = false, zero_tile = false;
  for (const GemmTileCase& c : cases_of<GemmTileCase>(table)) {
    formats.insert({c.fa, c.fb});
    modes_a.insert(c.mode_a);
    modes_b.insert(c.mode_b);
    blocks_a.insert(c.block_a);
    blocks_b.insert(c.block_b);
    EXPECT_EQ(c.m, 4);
    EXPECT_EQ(c.k, 64);
    for (uint32_t v : c.c) {
      nan_c = nan_c || is_nan(v);
      inf_c = inf_c || is_inf(v);
      subnormal_c = subnormal_c || is_subnormal(v);
    }
    zero_tile = zero_tile || std::all_of(c.c.begin(), c.c.end(), [](uint32_t v) { return (v & 0x7FFFFFFFu) == 0; });
  }
  EXPECT_EQ(formats.size(), 9u);
  EXPECT_EQ(modes_a.size(), 4u);
  EXPECT_EQ(modes_b.size(), 4u);
  EXPECT_EQ(blocks_a.size(), 3u);
  EXPECT_EQ(blocks_b.size(), 3u);
  EXPECT_TRUE(nan_c);
  EXPECT_TRUE(inf_c);
  EXPECT_TRUE(subnormal_c);
  EXPECT_TRUE(zero_tile);
  EXPECT_EQ(labels_of(table).count("INT4 -8 operands"), 1u);
}

// --- The vectors mean what the full golden pipeline computes --------------------------------

// Each block of a golden-quantized [2, 64] tensor, written as a quantize case
// with its Philox group and the tensor's S_enc and g, must give quantize()'s
// own scale code and codes. Returns the number of blocks compared.
size_t compare_blocks_with_quantize(const QuantConfig& cfg) {
  constexpr int kRows = 2, kCols = 64;
  std::vector<float> x;
  for (int i = 0; i < kRows * kCols; ++i) {
    x.push_back(static_cast<float>((i * 37 + static_cast<int>(cfg.seed)) % 53 - 26) * 0.37f);
  }
  const QuantizedTensor q = quantize(x.data(), kRows, kCols, cfg);
  const int len = block_cols(cfg.block);
  size_t blocks = 0;
  for (int r = 0; r < kRows; ++r) {
    for (int c0 = 0; c0 < kCols; c0 += len) {
      QuantizeCase c;
      c.format = cfg.format;
      c.mode = cfg.scale;
      c.length = len;
      c.rounding = cfg.rounding;
      c.sr_bits = cfg.sr_bits;
      c.seed = cfg.seed;
      c.stream = cfg.stream;
      c.group = sr_group(static_cast<uint64_t>(r), static_cast<uint64_t>(c0), kCols);
      c.s_enc = f32_bits(q.tensor.encode);
      c.g = f32_bits(q.tensor.decode);
      const size_t first = static_cast<size_t>(r * kCols + c0);
      for (size_t i = 0; i < static_cast<size_t>(len); ++i) c.x.push_back(f32_bits(x[first + i]));
      c.random = sr_random_bits(c);
      compute_expected(c);
      EXPECT_EQ(c.scale_code, q.scale_code_at(r, c0)) << format_case(c);
      EXPECT_TRUE(std::equal(c.codes.begin(), c.codes.end(), q.codes.begin() + static_cast<std::ptrdiff_t>(first)))
          << format_case(c);
      ++blocks;
    }
  }
  return blocks;
}

TEST(VectorsAgreeWithGolden, QuantizeCasesReproduceQuantizeOfATensor) {
  size_t blocks = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (Format f : kAllFormats) {
      for (ScaleMode m : kAllScaleModes) {
        for (BlockShape shape : {BlockShape::k1x16, BlockShape::k1x32}) {
          QuantConfig cfg;
          cfg.format = f;
          cfg.scale = m;
          cfg.block = shape;
          cfg.rounding = seed % 2 == 0 ? Rounding::kStochastic : Rounding::kNearestEven;
          cfg.sr_bits = static_cast<int>(seed);
          cfg.seed = seed;
          cfg.stream = 3;
          blocks += compare_blocks_with_quantize(cfg);
        }
      }
    }
  }
  EXPECT_EQ(blocks, 8u * 3u * 4u * (8u + 4u));
}

TEST(VectorsAgreeWithGolden, DotResultIsTheAccumulationOfItsProducts) {
  // dot.h's contract restated: acc = fl(acc + r_b) from +0 in block order, then
  // out = fl(acc * fl(ga * gb)); the case's result comes from dot_rows itself.
  size_t finite = 0;
  for (const DotCase& c : cases_of<DotCase>(generate(options(Op::kDot, 21, 300, false)))) {
    float acc = 0.0f;
    for (uint32_t r : c.products) acc = accumulate(acc, f32_from_bits(r));
    const uint32_t out = f32_bits(acc * (f32_from_bits(c.ga) * f32_from_bits(c.gb)));
    if (is_nan(out)) {
      EXPECT_EQ(c.result, kCanonicalNaN) << format_case(c);
    } else {
      EXPECT_EQ(out, c.result) << format_case(c);
      ++finite;
    }
  }
  EXPECT_GT(finite, 200u);
}

// --- check finds corrupted fields --------------------------------------------------------------

TEST(VectorsCheck, FindsEachCorruptedExpectedField) {
  const QuantizeCase q0 = cases_of<QuantizeCase>(generate(options(Op::kQuantize, 2, 1, false))).front();
  QuantizeCase q = q0;
  q.codes[5] ^= 0x1;
  std::optional<Mismatch> m = check(q);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "codes[5]");
  q = q0;
  q.scale_code ^= 0x1;
  m = check(q);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "scale_code");

  const DotCase d0 = cases_of<DotCase>(generate(options(Op::kDot, 2, 1, false))).front();
  DotCase d = d0;
  d.partial.back() += 1;
  m = check(d);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "p[" + std::to_string(d.nblocks - 1) + "]");
  EXPECT_EQ(m->golden, std::to_string(d0.partial.back()));
  d = d0;
  d.products[0] ^= 0x80000000u;
  m = check(d);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "r[0]");
  d = d0;
  d.result ^= 0x1u;
  m = check(d);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "result");

  const GemmTileCase g0 = cases_of<GemmTileCase>(generate(options(Op::kGemmTile, 2, 1, false))).front();
  GemmTileCase g = g0;
  g.c[2 * 4 + 3] ^= 0x00400001u;
  m = check(g);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "c[2][3]");
  EXPECT_NE(describe(*m).find("golden gives"), std::string::npos);
}

// A mismatch names the operands its field depends on, in the line's notation.
TEST(VectorsCheck, MismatchesCarryTheirOperands) {
  GenerateOptions qo = options(Op::kQuantize, 2, 1, false);
  qo.zero_policies = {ZeroPolicy::kSigned};
  QuantizeCase q = cases_of<QuantizeCase>(generate(qo)).front();
  q.codes[2] ^= 0x1;
  std::optional<Mismatch> m = check(q);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->operands.rfind(std::string(name(q.format)) + " " + std::string(name(q.mode)) + " signed finite", 0), 0u)
      << m->operands;
  EXPECT_NE(m->operands.find("x " + hex8(q.x[0]) + " " + hex8(q.x[1])), std::string::npos) << m->operands;
  EXPECT_NE(m->operands.find("s_enc " + hex8(q.s_enc)), std::string::npos) << m->operands;

  DotCase d = cases_of<DotCase>(generate(options(Op::kDot, 2, 1, false))).front();
  d.products.back() ^= 0x00800000u;
  m = check(d);
  ASSERT_TRUE(m);
  const size_t b = static_cast<size_t>(d.nblocks - 1), len = static_cast<size_t>(d.length);
  std::string codes_a;
  for (size_t i = 0; i < len; ++i) codes_a += "0123456789abcdef"[d.codes_a[b * len + i]];
  EXPECT_NE(m->operands.find("block " + std::to_string(b) + ": codes_a " + codes_a), std::string::npos)
      << m->operands;

  GemmTileCase g = cases_of<GemmTileCase>(generate(options(Op::kGemmTile, 2, 1, false))).front();
  g.c[static_cast<size_t>(g.n) + 1] ^= 0x00800000u;  // c[1][1]
  m = check(g);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "c[1][1]");
  EXPECT_NE(m->operands.find("A row 1 ("), std::string::npos) << m->operands;
  EXPECT_NE(m->operands.find("B row 1 ("), std::string::npos) << m->operands;

  // check_stream puts them on the line after the mismatch.
  std::istringstream in(format_case(q) + "\n");
  const CheckReport report = check_stream(in);
  ASSERT_EQ(report.reported.size(), 1u);
  EXPECT_NE(report.reported[0].find("\n    operands: " + std::string(name(q.format))), std::string::npos)
      << report.reported[0];
}

TEST(VectorsCheck, EveryCorruptedLineOfAStreamIsFound) {
  for (Op op : kAllOps) {
    std::vector<Vector> vs = generate(options(op, 8, 30));
    std::ostringstream out;
    for (Vector& v : vs) {
      // The last field is always an expected one: flip a code, or an FP32
      // exponent bit (so that a NaN or Inf becomes a finite value).
      std::string line = format_case(v.data);
      if (op == Op::kQuantize) {
        line.back() = line.back() == '0' ? '1' : '0';
      } else {
        const uint32_t last = static_cast<uint32_t>(std::stoul(line.substr(line.size() - 8), nullptr, 16));
        line = replace_field(line, std::count(line.begin(), line.end(), ' '), hex8(last ^ 0x00800000u));
      }
      out << line << '\n';
    }
    std::istringstream in(out.str());
    const CheckReport report = check_stream(in);
    EXPECT_EQ(report.cases, vs.size()) << name(op);
    EXPECT_EQ(report.mismatches, vs.size()) << name(op);
    ASSERT_EQ(report.reported.size(), std::min(vs.size(), CheckReport::kMaxReported));
    EXPECT_EQ(report.reported[0].rfind("line 1: " + std::string(name(op)) + " field ", 0), 0u) << report.reported[0];
  }
}

TEST(VectorsCheck, RandomBitsMustBeThePhiloxBitsTheCaseNames) {
  GenerateOptions o = options(Op::kQuantize, 4, 1, false);
  o.roundings = {Rounding::kStochastic};
  o.sr_bits = 8;
  QuantizeCase c = cases_of<QuantizeCase>(generate(o)).front();
  const PhiloxWords w = philox4x32_10(c.seed, c.group, c.stream, PhiloxDomain::kStochasticRounding);
  EXPECT_EQ(c.random[3], sr_lane_bits(w, 3, 8));
  c.random[3] ^= 0x10;
  std::optional<Mismatch> m = check(c);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "random[3]");
  c.random[3] ^= 0x10;
  c.group += 1;
  m = check(c);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field.rfind("random[", 0), 0u);

  o.roundings = {Rounding::kNearestEven};
  QuantizeCase rne = cases_of<QuantizeCase>(generate(o)).front();
  rne.random[0] = 1;
  m = check(rne);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "random[0]");
}

TEST(VectorsCheck, TensorScaleIsOneOutsideNvfp4) {
  GenerateOptions o = options(Op::kQuantize, 4, 1, false);
  o.modes = {ScaleMode::kMXFloor};
  QuantizeCase c = cases_of<QuantizeCase>(generate(o)).front();
  c.s_enc = f32_bits(2.0f);
  const std::optional<Mismatch> m = check(c);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "s_enc");
  EXPECT_EQ(m->golden, "3f800000");
}

TEST(VectorsCheck, AnyNaNMatchesAnExpectedNaNButNothingElseDoes) {
  DotCase c;
  c.sfa = ScaleFormat::kFP32;
  c.nblocks = 1;
  c.codes_a.assign(16, 0x2);
  c.codes_b.assign(16, 0x2);
  c.scales_a = {kCanonicalNaN};
  c.scales_b = {0x38};  // E4M3 1.0
  compute_expected(c);
  ASSERT_EQ(c.result, kCanonicalNaN);
  ASSERT_EQ(c.products[0], kCanonicalNaN);
  c.result = 0xFFC01234u;
  c.products[0] = 0x7F800001u;
  EXPECT_FALSE(check(c).has_value());
  c.result = 0x7F800000u;
  const std::optional<Mismatch> m = check(c);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->field, "result");
}

// --- Malformed lines ------------------------------------------------------------------------------

TEST(VectorsParse, MalformedLinesNameTheirLineAndField) {
  const std::string good_q = format_case(generate(options(Op::kQuantize, 1, 1, false)).front().data);
  const std::string good_d = format_case(generate(options(Op::kDot, 1, 1, false)).front().data);
  const std::string good_g = format_case(generate(options(Op::kGemmTile, 1, 1, false)).front().data);
  struct Bad {
    std::string line;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"frobnicate 1 2 3", "unknown op"},
      {"quantize e2m1 fp32", "missing field length"},
      {good_q + " 00", "extra field"},
      {replace_field(good_q, 1, "e3m0"), "field format: expected e2m1, e1m2 or int4"},
      {replace_field(good_q, 3, "17"), "field length: expected 16 or 32"},
      {replace_field(good_q, 5, "9"), "field sr_bits"},
      {replace_field(good_q, 11, "3f80000"), "field x[0]: expected 8 hex digits"},
      {replace_field(good_q, 11, "3f80000g"), "field x[0]"},
      {replace_field(good_d, 5, "8"), "field length: expected 16 or 32"},
      {replace_field(good_d, 6, "0"), "field nblocks"},
      {replace_field(good_d, 7, field(good_d, 7) + "0"), "field codes_a[0]"},
      {replace_field(good_d, 3, "bf16"), "field sfa"},
      {replace_field(good_g, 7, "300"), "field m"},
      {replace_field(good_g, 3, "mx"), "field mode_a"},
      {replace_field(good_g, 5, "8x8"), "field block_a"},
  };
  for (const Bad& b : bad) {
    std::istringstream in("# header\n\n" + good_q + "\n" + b.line + "\n" + good_d + "\n");
    try {
      parse_stream(in);
      ADD_FAILURE() << "parsed: " << b.line;
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), 4u) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("line 4: ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
}

TEST(VectorsParse, RandomBitsWiderThanSrBitsAndNonDecimalPartialSums) {
  GenerateOptions o = options(Op::kQuantize, 1, 1, false);
  o.sr_bits = 2;
  o.roundings = {Rounding::kStochastic};
  QuantizeCase q = cases_of<QuantizeCase>(generate(o)).front();
  q.random[4] = 0x7;
  EXPECT_THROW(parse_case(format_case(q), 1), ParseError);
  const DotCase d = std::get<DotCase>(generate(options(Op::kDot, 1, 1, false)).front().data);
  const size_t p0 = 7 + 4 * static_cast<size_t>(d.nblocks) + 2;  // op, 6 sizes, 4 x nblocks blocks' fields, ga, gb
  const std::string line = format_case(d);
  ASSERT_EQ(field(line, p0), std::to_string(d.partial[0]));
  EXPECT_NO_THROW(parse_case(replace_field(line, p0, "-17"), 1));
  for (const char* bad : {"0x1", "1.5", "--2", "99999999999"}) {
    try {
      parse_case(replace_field(line, p0, bad), 7);
      ADD_FAILURE() << "accepted p[0] = " << bad;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("line 7: dot: field p[0]: expected a signed decimal integer"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(VectorsParse, LabelsCommentsAndBlankLines) {
  const std::string q = format_case(generate(options(Op::kQuantize, 1, 1, false)).front().data);
  std::istringstream in("# header\n# boundary: first label\n\n" + q + "\r\n   \n" + q + "\n# trailing comment\n");
  const std::vector<Vector> vs = parse_stream(in);
  ASSERT_EQ(vs.size(), 2u);
  EXPECT_EQ(vs[0].label, "first label");
  EXPECT_EQ(vs[0].line, 4u);
  EXPECT_EQ(vs[1].label, "");
  EXPECT_EQ(vs[1].line, 6u);
  std::istringstream empty("# only comments\n\n");
  EXPECT_EQ(check_stream(empty).cases, 0u);
}

// --- The documented examples are real cases -------------------------------------------------------

TEST(VectorsDocs, ExampleLinesParseAndMatchGolden) {
  const std::string here = __FILE__;
  const std::string path = here.substr(0, here.rfind("/tests/")) + "/docs/vectors.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::set<Op> seen;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    // Example lines start with an op and a format; the field-order lines start "quantize format", "dot fa", ...
    const std::optional<Op> op = parse_op(field(line, 0));
    if (!op || !parse_format(field(line, 1))) continue;
    const Case c = parse_case(line, line_no);
    const std::optional<Mismatch> m = check(c);
    EXPECT_FALSE(m.has_value()) << path << ":" << line_no << ": " << describe(*m);
    seen.insert(*op);
  }
  EXPECT_EQ(seen.size(), kAllOps.size()) << "docs/vectors.md should show one example line per op";
}

}  // namespace
}  // namespace nibble::vectors
