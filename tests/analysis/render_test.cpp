// The report renderings: every row appears, the JSON carries the documented
// keys (non-finite numbers as null), and the CSV has one line per row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "nibble/analysis/render.h"
#include "nibble/analysis/synthetic.h"

namespace nibble::analysis {
namespace {

std::vector<MatrixRow> small_matrix(uint64_t seed) {
  MatrixSpec s;
  s.formats = {Format::kE2M1, Format::kInt4};
  s.scales = {ScaleMode::kFP32};
  s.blocks = {BlockShape::k1x16};
  s.rht_sizes = {0, 16};
  s.roundings = {Rounding::kNearestEven};
  s.seed = seed;
  return run_quant_matrix({"in,put", 8, 32, synthetic_tensor(Distribution::kLaplace, 8, 32, seed)}, s);
}

TEST(Report, TableJsonAndCsvCoverEveryRow) {
  const uint64_t seed = 6;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const std::vector<MatrixRow> rows = small_matrix(seed);
  ASSERT_EQ(rows.size(), 4u);

  const std::string table = matrix_table(rows);
  EXPECT_EQ(static_cast<size_t>(std::count(table.begin(), table.end(), '\n')), rows.size() + 1);

  for (const MatrixRow& r : rows) {
    const std::string dumped = matrix_row_json(r).dump();
    const nlohmann::json j = nlohmann::json::parse(dumped);
    for (const char* key : {"input", "format", "scale", "block", "rht", "rounding", "sr_bits", "sqnr_db",
                            "delta_sqnr_rht", "nmse", "alpha", "rel_mag_error", "code_entropy_bits", "b_eff",
                            "level_bias"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_EQ(j["level_bias"].size(), 7u);
    EXPECT_EQ(j["delta_sqnr_rht"].is_null(), !r.config.rht.enabled());
  }

  std::ostringstream csv;
  write_matrix_csv(csv, rows);
  const std::string text = csv.str();
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), rows.size() + 1);
  EXPECT_NE(text.find("\"in,put\",e2m1,fp32,1x16,off,rne,8,"), std::string::npos) << text;
}

TEST(Report, LevelAndChainTables) {
  const std::vector<MatrixRow> rows = small_matrix(7);
  const std::string levels = level_bias_table(Format::kE2M1, {&rows[0], &rows[1]});
  EXPECT_NE(levels.find("measured rht16"), std::string::npos) << levels;
  EXPECT_NE(levels.find("-0.1250"), std::string::npos) << levels;
  EXPECT_NE(levels.find("-0.2500"), std::string::npos) << levels;
  EXPECT_EQ(grid_level_bias_json(Format::kE2M1)[3]["bias"], -0.125);

  const ChainShape shape{2, 16, 4};
  QuantConfig c;
  const std::vector<ChainRun> runs = {{c, {{1, 0.99, 0.98}, {2, 0.98, 0.97}}}};
  const std::string table = chain_table(shape, runs);
  EXPECT_NE(table.find("e2m1 no-rht"), std::string::npos) << table;
  EXPECT_NE(table.find("0.98000"), std::string::npos) << table;
  const nlohmann::json j = chain_json(shape, runs);
  EXPECT_EQ(j["runs"][0]["depths"][1]["eta"], 0.98);
  EXPECT_EQ(j["layers"], 2);
}

}  // namespace
}  // namespace nibble::analysis
