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
  TileConfig c;
  c.bandwidth = std::numeric_limits<double>::infinity();
  EXPECT_THROW(validate(c), ConfigError);
  c = TileConfig{};
  c.formats.clear();
  try {
    validate(c);
    ADD_FAILURE() << "empty formats accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'formats'"), std::string::npos);
  }
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
