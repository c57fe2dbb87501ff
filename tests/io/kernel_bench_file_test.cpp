// Tests for the bench-kernels results file: a round trip of every field, the
// row key, one test per defect the reader must reject, and the matching of
// two sides' runs.
#include "nibble/io/kernel_bench_file.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nibble::io {
namespace {

KernelBenchRow quant_row(const std::string& input, const std::string& name, const char* kind, double ms) {
  KernelBenchRow r;
  r.section = "quantize";
  r.kind = kind;
  r.input = input;
  r.shape = {8192, 8192};
  r.name = name;
  if (r.kind == "kernel") {
    r.recipe = name;
    r.library_default = true;
  }
  r.ms = ms;
  r.rate = 3000.0;
  r.vs_baseline = 0.95;
  r.device_mib = 0.0;
  return r;
}

KernelBenchRow gemm_row(const std::string& name, const std::string& tiles, const std::string& tile, double ms) {
  KernelBenchRow r;
  r.section = "gemm";
  r.kind = "kernel";
  r.shape = {8192, 8192, 8192};
  r.name = name;
  r.recipe = name.substr(name.find(' ', std::string("bit-exact wgmma").size()) + 1);
  r.library_default = tiles == "auto";
  r.tiles = tiles;
  r.tile = tile;
  r.datapath = "FP16 wgmma";
  r.ms = ms;
  r.rate = 261.5;
  r.vs_baseline = 0.34;
  r.device_mib = 96.5;
  return r;
}

KernelBenchRun sample_run() {
  KernelBenchRun run;
  run.command = "nibble bench-kernels --json r.json";
  run.device = {"NVIDIA H100 80GB HBM3", 132, 9, 0, 81559, 13000, 13000};
  run.options.gemm_shapes = {{8192, 8192, 8192}};
  run.options.iterations = 7;
  run.rows.push_back(quant_row("fp32", "cudaMemcpy D2D of the input", "yardstick", 0.1234567));
  run.rows.push_back(quant_row("fp32", "e1m2 1x16 fp32 SR RHT16 (ufp4 dY)", "kernel", 0.107));
  run.rows.back().vs_no_rht = 1.0071;
  run.rows.push_back(quant_row("bf16", "e1m2 1x16 fp32 SR RHT16 (ufp4 dY)", "kernel", 0.069));
  run.rows.push_back(gemm_row("bit-exact wgmma e2m1 1x16 nvfp4", "auto", "128x128", 4.2));
  run.rows.push_back(gemm_row("bit-exact wgmma e2m1 1x16 nvfp4", "128x64", "128x64", 5.1));
  run.rows.push_back(gemm_row("bound: the contract's adds alone, 16-wide blocks", "", "", 1.3));
  run.rows.back().kind = "bound";
  run.rows.back().recipe.clear();
  run.rows.back().device_mib.reset();
  run.failures = {"bench-kernels: GEMM mma.sync differs"};
  return run;
}

TEST(KernelBenchFile, RoundTripKeepsEveryField) {
  const KernelBenchRun in = sample_run();
  const KernelBenchRun out = parse_kernel_bench(kernel_bench_json(in), "mem");
  EXPECT_EQ(out.command, in.command);
  EXPECT_EQ(out.device.name, in.device.name);
  EXPECT_EQ(out.device.sm_count, 132);
  EXPECT_EQ(out.device.compute_major, 9);
  EXPECT_EQ(out.device.compute_minor, 0);
  EXPECT_EQ(out.device.memory_mib, 81559);
  EXPECT_EQ(out.device.driver_version, 13000);
  EXPECT_EQ(out.device.runtime_version, 13000);
  EXPECT_EQ(out.options.quant_rows, in.options.quant_rows);
  EXPECT_EQ(out.options.gemm_shapes, in.options.gemm_shapes);
  EXPECT_EQ(out.options.warmup, in.options.warmup);
  EXPECT_EQ(out.options.iterations, 7);
  EXPECT_EQ(out.failures, in.failures);
  ASSERT_EQ(out.rows.size(), in.rows.size());
  for (size_t i = 0; i < in.rows.size(); ++i) {
    SCOPED_TRACE(kernel_bench_key(in.rows[i]));
    const KernelBenchRow &a = in.rows[i], &b = out.rows[i];
    EXPECT_EQ(b.section, a.section);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.input, a.input);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.recipe, a.recipe);
    EXPECT_EQ(b.library_default, a.library_default);
    EXPECT_EQ(b.tiles, a.tiles);
    EXPECT_EQ(b.tile, a.tile);
    EXPECT_EQ(b.datapath, a.datapath);
    EXPECT_EQ(b.ms, a.ms);  // doubles are written exactly
    EXPECT_EQ(b.rate, a.rate);
    EXPECT_EQ(b.vs_baseline, a.vs_baseline);
    EXPECT_EQ(b.vs_no_rht, a.vs_no_rht);
    EXPECT_EQ(b.device_mib, a.device_mib);
  }
}

TEST(KernelBenchFile, KeyNamesSectionInputShapeNameAndTilesAsked) {
  const KernelBenchRun run = sample_run();
  EXPECT_EQ(kernel_bench_key(run.rows[1]), "quantize fp32 8192x8192 e1m2 1x16 fp32 SR RHT16 (ufp4 dY)");
  EXPECT_EQ(kernel_bench_key(run.rows[3]), "gemm 8192x8192x8192 bit-exact wgmma e2m1 1x16 nvfp4 (tiles auto)");
  // The tile and datapath chosen are not part of the key: a change that moves
  // them still compares with the run before it.
  KernelBenchRow moved = run.rows[3];
  moved.tile = "64x128";
  moved.datapath = "FP16 wgmma, scaled";
  EXPECT_EQ(kernel_bench_key(moved), kernel_bench_key(run.rows[3]));
  EXPECT_NE(kernel_bench_key(run.rows[3]), kernel_bench_key(run.rows[4]));
}

// Each defect, applied to a valid file, and a piece of the message it must give.
TEST(KernelBenchFile, RejectsEachDefectWithAMessageNamingIt) {
  using Json = nlohmann::ordered_json;
  const Json good = Json::parse(kernel_bench_json(sample_run()));
  const std::vector<std::pair<std::function<void(Json&)>, std::string>> defects = {
      {[](Json& j) { j["schema"] = "nibble-quant"; }, "not a bench-kernels result"},
      {[](Json& j) { j.erase("schema"); }, "not a bench-kernels result"},
      {[](Json& j) { j["schema_version"] = 2; }, "schema_version 2"},
      {[](Json& j) { j.erase("command"); }, "'command' is missing"},
      {[](Json& j) { j["device"] = 3; }, "'device' is missing or not an object"},
      {[](Json& j) { j["device"]["sm_count"] = "many"; }, "'device.sm_count' has the wrong type"},
      {[](Json& j) { j["device"]["compute_capability"] = "nine"; }, "not MAJOR.MINOR"},
      {[](Json& j) { j["options"].erase("iterations"); }, "'options.iterations' is missing"},
      {[](Json& j) { j["options"]["gemm_shapes"] = Json::array({Json::array({1, 2})}); }, "not [M, N, K]"},
      {[](Json& j) { j["rows"] = 1; }, "'rows' has the wrong type"},
      {[](Json& j) { j["rows"][0] = "row"; }, "'rows[0]' is not an object"},
      {[](Json& j) { j["rows"][1]["section"] = "copy"; }, "'rows[1].section' is 'copy'"},
      {[](Json& j) { j["rows"][1]["kind"] = "fast"; }, "'rows[1].kind' is 'fast'"},
      {[](Json& j) { j["rows"][2]["shape"] = Json::array({8192, 0.5}); }, "'rows[2].shape' holds a non-integer"},
      {[](Json& j) { j["rows"][2].erase("name"); }, "'rows[2].name' is missing"},
      {[](Json& j) { j["rows"][2]["library_default"] = 1; }, "'rows[2].library_default' has the wrong type"},
      {[](Json& j) { j["rows"][3]["ms"] = 0.0; }, "'rows[3].ms' is 0"},
      {[](Json& j) { j["rows"][3]["ms"] = -1.5; }, "'rows[3].ms' is -1.5"},
      {[](Json& j) { j["rows"][3]["vs_no_rht"] = "x"; }, "'rows[3].vs_no_rht' has the wrong type"},
      {[](Json& j) { j["rows"].push_back(j["rows"][1]); }, "repeats the row"},
      {[](Json& j) { j["failures"] = Json::array({1}); }, "'failures' holds a non-string"},
  };
  int checked = 0;
  for (const auto& [apply, message] : defects) {
    Json j = good;
    apply(j);
    SCOPED_TRACE(message);
    try {
      parse_kernel_bench(j.dump(), "r.json");
      ADD_FAILURE() << "accepted";
    } catch (const BenchFileError& e) {
      EXPECT_NE(std::string(e.what()).find("r.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(defects.size()));
  EXPECT_THROW(parse_kernel_bench("{\"schema\": ", "r.json"), BenchFileError);
  EXPECT_THROW(parse_kernel_bench("[1, 2]", "r.json"), BenchFileError);
  EXPECT_THROW(read_kernel_bench("/nonexistent/r.json"), BenchFileError);
}

TEST(KernelBenchFile, SeriesKeepEachRowsRunsInFirstAppearanceOrder) {
  const KernelBenchRun a = sample_run();
  KernelBenchRun b = sample_run();
  for (KernelBenchRow& r : b.rows) r.ms *= 2.0;
  std::swap(b.rows[0], b.rows[5]);
  b.rows.push_back(gemm_row("bit-exact wgmma e1m2 1x16 fp32 (ufp4)", "auto", "128x128", 6.3));
  const std::vector<KernelBenchSeries> series = kernel_bench_series({a, b});
  ASSERT_EQ(series.size(), a.rows.size() + 1);
  for (size_t i = 0; i < a.rows.size(); ++i) {
    SCOPED_TRACE(kernel_bench_key(a.rows[i]));
    EXPECT_EQ(series[i].key, kernel_bench_key(a.rows[i]));
    ASSERT_EQ(series[i].rows.size(), 2u);
    EXPECT_EQ(series[i].rows[0].ms, a.rows[i].ms);
    EXPECT_EQ(series[i].rows[1].ms, 2.0 * a.rows[i].ms);
  }
  EXPECT_EQ(series.back().rows.size(), 1u);
  EXPECT_EQ(series.back().rows[0].ms, 6.3);
  EXPECT_TRUE(kernel_bench_series({}).empty());
}

TEST(KernelBenchFile, CompareMatchesRowsByKeyAcrossRuns) {
  const KernelBenchRun a = sample_run();
  KernelBenchRun a2 = sample_run();
  for (KernelBenchRow& r : a2.rows) r.ms *= 1.01;
  KernelBenchRun b = sample_run();
  b.device.name = "NVIDIA H200";
  b.rows.erase(b.rows.begin() + 4);                                          // only before: the 128x64 row
  b.rows.push_back(gemm_row("bit-exact wgmma e1m2 1x16 fp32 (ufp4)", "auto", "128x128", 6.3));  // only after
  b.rows[3].tile = "64x128";  // the auto row moved to other tiles: still matched
  std::swap(b.rows[1], b.rows[2]);

  const KernelBenchComparison c = compare_kernel_bench({a, a2}, {b});
  ASSERT_EQ(c.matched.size(), 5u);
  // The after run's order, with every before run's time.
  EXPECT_EQ(c.matched[0].row.name, "cudaMemcpy D2D of the input");
  EXPECT_EQ(c.matched[1].row.input, "bf16");
  EXPECT_EQ(c.matched[2].row.input, "fp32");
  EXPECT_EQ(c.matched[3].row.tile, "64x128");
  EXPECT_EQ(c.matched[3].before_ms, (std::vector<double>{4.2, 4.2 * 1.01}));
  EXPECT_EQ(c.matched[3].after_ms, (std::vector<double>{4.2}));
  ASSERT_EQ(c.only_before.size(), 1u);
  EXPECT_EQ(c.only_before[0], "gemm 8192x8192x8192 bit-exact wgmma e2m1 1x16 nvfp4 (tiles 128x64)");
  ASSERT_EQ(c.only_after.size(), 1u);
  EXPECT_EQ(c.only_after[0], "gemm 8192x8192x8192 bit-exact wgmma e1m2 1x16 fp32 (ufp4) (tiles auto)");
  EXPECT_EQ(c.before_devices, (std::vector<std::string>{"NVIDIA H100 80GB HBM3"}));
  EXPECT_EQ(c.after_devices, (std::vector<std::string>{"NVIDIA H200"}));

  EXPECT_TRUE(compare_kernel_bench({a}, {}).matched.empty());
}

}  // namespace
}  // namespace nibble::io
