// TileConfig: every bad configuration is refused with an error naming its key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "nibble/model/config.h"

namespace nibble::model {
namespace {

TEST(ModelConfig, DefaultsAreTheRtlTile) {
  const TileConfig c;
  EXPECT_NO_THROW(validate(c));
  EXPECT_EQ(c.rows, 4);
  EXPECT_EQ(c.cols, 4);
  EXPECT_EQ(c.lanes, 16);
  EXPECT_EQ(c.latency, kRtlTileLatency);
  EXPECT_EQ(c.formats.size(), 3u);
  EXPECT_EQ(c.scale_modes.size(), 4u);
}

TEST(ModelConfig, GoodJsonRoundTrips) {
  const TileConfig c = config_from_json_text(
      R"({"rows": 8, "cols": 2, "lanes": 32, "formats": ["e1m2", "int4"], "scale_modes": ["nvfp4"],
          "latency": 6, "bandwidth": 12.5})");
  EXPECT_EQ(c.rows, 8);
  EXPECT_EQ(c.cols, 2);
  EXPECT_EQ(c.lanes, 32);
  EXPECT_EQ(c.latency, 6);
  EXPECT_DOUBLE_EQ(c.bandwidth, 12.5);
  EXPECT_TRUE(c.allows(Format::kInt4));
  EXPECT_FALSE(c.allows(Format::kE2M1));
  EXPECT_TRUE(c.allows(ScaleMode::kNVFP4));
  EXPECT_FALSE(c.allows(ScaleMode::kFP32));
  const TileConfig back = config_from_json_text(to_json_text(c));
  EXPECT_EQ(to_json_text(back), to_json_text(c));
  // Missing keys keep the base's values.
  EXPECT_EQ(config_from_json_text("{}").rows, 4);
}

struct BadCase {
  const char* json;
  const char* must_mention;
};

TEST(ModelConfig, EveryBadConfigNamesItsKey) {
  const std::vector<BadCase> cases = {
      {R"({"rowz": 4})", "'rowz'"},
      {R"({"rows": 0})", "'rows'"},
      {R"({"rows": -3})", "'rows'"},
      {R"({"rows": 4.5})", "'rows'"},
      {R"({"rows": "4"})", "'rows'"},
      {R"({"rows": true})", "'rows'"},
      {R"({"rows": 100000000000})", "'rows'"},
      {R"({"cols": 0})", "'cols'"},
      {R"({"cols": [4]})", "'cols'"},
      {R"({"lanes": 8})", "'lanes'"},
      {R"({"lanes": 64})", "'lanes'"},
      {R"({"lanes": 16.0})", "'lanes'"},
      {R"({"formats": []})", "'formats'"},
      {R"({"formats": "e2m1"})", "'formats'"},
      {R"({"formats": ["e2m1", "fp4"]})", "'formats'"},
      {R"({"formats": [1]})", "'formats'"},
      {R"({"formats": ["e2m1", "e2m1"]})", "'formats'"},
      {R"({"scale_modes": ["mx"]})", "'scale_modes'"},
      {R"({"scale_modes": []})", "'scale_modes'"},
      {R"({"scale_modes": {"fp32": 1}})", "'scale_modes'"},
      {R"({"latency": 0})", "'latency'"},
      {R"({"latency": 1000})", "'latency'"},
      {R"({"latency": null})", "'latency'"},
      {R"({"bandwidth": 0})", "'bandwidth'"},
      {R"({"bandwidth": -1.5})", "'bandwidth'"},
      {R"({"bandwidth": "fast"})", "'bandwidth'"},
      {R"([1, 2])", "JSON object"},
      {R"({"rows": 4,)", "not valid JSON"},
      {R"({"rows": 257})", "'rows'"},
      {R"({"rows": 18446744073709551615})", "'rows'"},
      {R"({"rows": 4, "rows": 8})", "'rows' is given twice"},
      {R"({"ROWS": 4})", "'ROWS'"},
      {R"({"cols": 300})", "'cols'"},
      {R"({"cols": -1})", "'cols'"},
      {R"({"cols": 2.5})", "'cols'"},
      {R"({"lanes": "16"})", "'lanes'"},
      {R"({"lanes": 0})", "'lanes'"},
      {R"({"lanes": 24})", "'lanes'"},
      {R"({"formats": null})", "'formats'"},
      {R"({"formats": ["E2M1"]})", "'formats'"},
      {R"({"scale_modes": "nvfp4"})", "'scale_modes'"},
      {R"({"scale_modes": [2]})", "'scale_modes'"},
      {R"({"scale_modes": ["nvfp4", "nvfp4"]})", "'scale_modes'"},
      {R"({"latency": 65})", "'latency'"},
      {R"({"latency": -2})", "'latency'"},
      {R"({"latency": 4.5})", "'latency'"},
      {R"({"latency": "4"})", "'latency'"},
      {R"({"bandwidth": true})", "'bandwidth'"},
      {R"({"bandwidth": null})", "'bandwidth'"},
      {R"({"bandwidth": [64]})", "'bandwidth'"},
      {R"({"bandwidth": 1e400})", "not valid JSON"},
      {R"({"formats": ["e2m1"], "formats": ["int4"]})", "'formats' is given twice"},
      {"", "not valid JSON"},
      {"null", "JSON object"},
      {R"("tile")", "JSON object"},
      {R"({"rows": 4} 5)", "not valid JSON"},
  };
  int checked = 0;
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.json);
    try {
      (void)config_from_json_text(c.json);
      ADD_FAILURE() << "accepted: " << c.json;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(c.must_mention), std::string::npos) << e.what();
      ++checked;
    }
  }
  std::printf("bad configs refused: %d\n", checked);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
}

TEST(ModelConfig, StructValidationNamesTheKey) {
  struct StructCase {
    void (*spoil)(TileConfig&);
    const char* must_mention;
  };
  const std::vector<StructCase> cases = {
      {[](TileConfig& c) { c.rows = 0; }, "'rows'"},
      {[](TileConfig& c) { c.rows = 257; }, "'rows'"},
      {[](TileConfig& c) { c.cols = -4; }, "'cols'"},
      {[](TileConfig& c) { c.cols = 1000; }, "'cols'"},
      {[](TileConfig& c) { c.lanes = 8; }, "'lanes'"},
      {[](TileConfig& c) { c.formats.clear(); }, "'formats'"},
      {[](TileConfig& c) { c.formats = {Format::kInt4, Format::kE2M1, Format::kInt4}; }, "'formats'"},
      {[](TileConfig& c) { c.scale_modes.clear(); }, "'scale_modes'"},
      {[](TileConfig& c) { c.scale_modes = {ScaleMode::kMXCeil, ScaleMode::kMXCeil}; }, "'scale_modes'"},
      {[](TileConfig& c) { c.latency = 0; }, "'latency'"},
      {[](TileConfig& c) { c.latency = 65; }, "'latency'"},
      {[](TileConfig& c) { c.bandwidth = 0.0; }, "'bandwidth'"},
      {[](TileConfig& c) { c.bandwidth = -1.0; }, "'bandwidth'"},
      {[](TileConfig& c) { c.bandwidth = std::numeric_limits<double>::infinity(); }, "'bandwidth'"},
      {[](TileConfig& c) { c.bandwidth = std::numeric_limits<double>::quiet_NaN(); }, "'bandwidth'"},
  };
  int checked = 0;
  for (const StructCase& sc : cases) {
    TileConfig c;
    sc.spoil(c);
    try {
      validate(c);
      ADD_FAILURE() << "accepted a config that must mention " << sc.must_mention;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(sc.must_mention), std::string::npos) << e.what();
      ++checked;
    }
  }
  std::printf("bad structs refused: %d\n", checked);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
}

TEST(ModelConfig, FileErrorsNameTheFile) {
  EXPECT_THROW((void)config_from_json_file("/nonexistent/tile.json"), ConfigError);
  const std::string path = ::testing::TempDir() + "nibble_tile_bad.json";
  std::ofstream(path) << R"({"lanes": 24})";
  try {
    (void)config_from_json_file(path);
    ADD_FAILURE() << "lanes 24 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'lanes'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nibble::model
