// `nibble gemm` end to end: every backend runs and passes its check against
// golden; systemc, rtl, event and event-timing print identical timing; --json,
// --trace and --bench work; every bad input exits 2 with a message naming the
// problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../cli/run_command.h"
#include "nibble/sim/rtl_device.h"

namespace nibble::test {
namespace {

std::string tmp(const std::string& name) { return ::testing::TempDir() + "nibble_gemm_cli_" + name; }

// The lines of a report that carry timing (cycles, MAC/cycle, stalls, bytes).
std::string timing_lines(const std::string& out) {
  std::string keep;
  size_t pos = 0;
  while (pos < out.size()) {
    const size_t end = out.find('\n', pos);
    const std::string line = out.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    for (const char* key : {"cycles ", "MAC/cycle", "utilization", "tiles, beats", "stall cycles", "operand bytes"}) {
      if (line.rfind(key, 0) == 0) keep += line + "\n";
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return keep;
}

const char* kGemm = "gemm --m 23 --n 18 --k 150 --format-a int4 --format-b e1m2 --scale mx-floor --stall-in 0.2 "
                    "--stall-out 0.3 --stall-seed 11";

TEST(GemmCli, EveryBackendPassesAndTheTimedOnesAgreeCycleForCycle) {
  const CommandResult golden = run_nibble(std::string(kGemm) + " --backend golden");
  ASSERT_EQ(golden.exit_code, 0) << golden.output;
  EXPECT_NE(golden.output.find("PASS"), std::string::npos) << golden.output;

  const CommandResult sc = run_nibble(std::string(kGemm) + " --backend systemc --json " + tmp("sc.json"));
  ASSERT_EQ(sc.exit_code, 0) << sc.output;
  EXPECT_NE(sc.output.find("PASS"), std::string::npos) << sc.output;
  const CommandResult rtl = run_nibble(std::string(kGemm) + " --backend rtl --json " + tmp("rtl.json"));
  ASSERT_EQ(rtl.exit_code, 0) << rtl.output;
  EXPECT_NE(rtl.output.find("backend rtl"), std::string::npos) << rtl.output;
  EXPECT_NE(rtl.output.find("PASS"), std::string::npos) << rtl.output;

  const std::string ts = timing_lines(sc.output), tr = timing_lines(rtl.output);
  EXPECT_NE(ts.find("cycles "), std::string::npos) << sc.output;
  EXPECT_EQ(ts, tr);

  std::ifstream fs(tmp("sc.json")), fr(tmp("rtl.json"));
  const nlohmann::json js = nlohmann::json::parse(fs), jr = nlohmann::json::parse(fr);
  EXPECT_EQ(js["backend"], "systemc");
  EXPECT_EQ(jr["backend"], "rtl");
  EXPECT_GT(js["cycles"].get<uint64_t>(), 0u);
  EXPECT_EQ(js["cycles"], jr["cycles"]);
  EXPECT_EQ(js["stalls"], jr["stalls"]);
  EXPECT_TRUE(jr["check"]["ok"].get<bool>());
  EXPECT_EQ(jr["check"]["compared"], 23 * 18);

  const CommandResult ev = run_nibble(std::string(kGemm) + " --backend event --json " + tmp("ev.json"));
  ASSERT_EQ(ev.exit_code, 0) << ev.output;
  EXPECT_NE(ev.output.find("PASS"), std::string::npos) << ev.output;
  EXPECT_EQ(timing_lines(ev.output), tr);
  const CommandResult et = run_nibble(std::string(kGemm) + " --backend event-timing --json " + tmp("et.json"));
  ASSERT_EQ(et.exit_code, 0) << et.output;
  EXPECT_NE(et.output.find("timing only"), std::string::npos) << et.output;
  EXPECT_EQ(timing_lines(et.output), tr);
  std::ifstream fe(tmp("ev.json")), ft(tmp("et.json"));
  const nlohmann::json je = nlohmann::json::parse(fe), jt = nlohmann::json::parse(ft);
  EXPECT_EQ(je["backend"], "event");
  EXPECT_EQ(jt["backend"], "event-timing");
  for (const nlohmann::json* j : {&je, &jt}) {
    EXPECT_EQ((*j)["cycles"], jr["cycles"]);
    EXPECT_EQ((*j)["stalls"], jr["stalls"]);
    EXPECT_EQ((*j)["operand_bytes"], jr["operand_bytes"]);
  }
  EXPECT_TRUE(je["check"]["ok"].get<bool>());
  EXPECT_FALSE(jt["check"]["computed"].get<bool>());
}

TEST(GemmCli, TracesAreWritten) {
  const std::string fst = tmp("t.fst"), vcd = tmp("t.vcd");
  std::remove(fst.c_str());
  std::remove(vcd.c_str());
  const CommandResult rtl = run_nibble("gemm --backend rtl --m 9 --n 5 --k 40 --trace " + fst);
  ASSERT_EQ(rtl.exit_code, 0) << rtl.output;
  const CommandResult sc = run_nibble("gemm --backend systemc --m 9 --n 5 --k 40 --trace " + vcd);
  ASSERT_EQ(sc.exit_code, 0) << sc.output;
  std::ifstream f(fst, std::ios::binary), v(vcd);
  const std::string fst_bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string vcd_text((std::istreambuf_iterator<char>(v)), std::istreambuf_iterator<char>());
  EXPECT_GT(fst_bytes.size(), 1000u);
  EXPECT_NE(vcd_text.find("in_ready"), std::string::npos);
  EXPECT_NE(vcd_text.find("out_valid"), std::string::npos);
}

TEST(GemmCli, BenchPrintsEveryTimedBackendAndTheRatios) {
  const CommandResult r = run_nibble("gemm --bench --repeat 1 --m 16 --n 16 --k 64 --json " + tmp("bench.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("systemc"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rtl"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("event-timing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ratios"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("identical in all four"), std::string::npos) << r.output;
  std::ifstream f(tmp("bench.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["runs"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(j["runs"][i]["cycles"], j["runs"][0]["cycles"]);
    EXPECT_GT(j["runs"][i]["simulated_macs_per_s"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["runs"][3]["backend"], "event-timing");
  EXPECT_TRUE(j["runs"][3]["check_ok"].is_null()) << "timing only has nothing to check";
  EXPECT_TRUE(j["timing_identical"].get<bool>());
  EXPECT_GT(j["ratio_systemc_over_rtl"].get<double>(), 0.0);
  EXPECT_GT(j["ratio_event_over_systemc"].get<double>(), 0.0);
  EXPECT_GT(j["ratio_event_timing_over_rtl"].get<double>(), 0.0);
}

TEST(GemmCli, AnArrayOfTilesFromAnArchitectureFile) {
  {
    std::ofstream(tmp("arch.json")) << R"({"tiles": 4, "tile": {"rows": 4, "cols": 4, "lanes": 16, "bandwidth": 1000},
                                          "operand_buffer_bytes": 96})";
  }
  // 8 x 8 output tiles of 2 k-blocks, 16 per array tile, compute-bound: 2 + 15 * 8 + 8 - 1 cycles.
  const CommandResult r = run_nibble("gemm --backend event --arch " + tmp("arch.json") +
                                     " --m 32 --n 32 --k 32 --json " + tmp("arch_out.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 tiles, each 4x4x16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
  std::ifstream f(tmp("arch_out.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["cycles"], 2 + 15 * 8 + 8 - 1);
  EXPECT_EQ(j["arch"]["tiles"], 4);

  // With SRAM and DRAM: the memory line, the tiling and the bytes per level.
  {
    std::ofstream(tmp("mem_arch.json")) << R"({"tiles": 2, "tile": {"bandwidth": 64}, "operand_buffer_bytes": 4096,
      "sram": {"bytes": 65536, "bandwidth": 32, "latency": 5}, "dram": {"bandwidth": 8, "latency": 100}})";
  }
  const CommandResult m = run_nibble("gemm --backend event --arch " + tmp("mem_arch.json") +
                                     " --m 40 --n 24 --k 96 --json " + tmp("mem_out.json"));
  ASSERT_EQ(m.exit_code, 0) << m.output;
  for (const char* line : {"memory         output-stationary, double-buffered, SRAM 65536 B", "tiling ", "bytes moved ",
                           "PASS"}) {
    EXPECT_NE(m.output.find(line), std::string::npos) << line << "\n" << m.output;
  }
  std::ifstream fm(tmp("mem_out.json"));
  const nlohmann::json jm = nlohmann::json::parse(fm);
  EXPECT_GT(jm["stalls"]["dram"].get<uint64_t>(), 0u);
  EXPECT_EQ(jm["traffic"]["c_bytes"], 40 * 24 * 4);
  EXPECT_EQ(jm["arch"]["sram"]["bytes"], 65536);
}

TEST(GemmCli, BadInputExitsTwoWithAMessage) {
  {
    std::ofstream(tmp("bad.json")) << R"({"rows": 4, "lanes": 24})";
    std::ofstream(tmp("small_arch.json")) << R"({"tiles": 2, "tile": {}, "operand_buffer_bytes": 64})";
    std::ofstream(tmp("flow_arch.json")) << R"({"tiles": 2, "tile": {}, "operand_buffer_bytes": 96,
                                               "dataflow": "row-stationary"})";
    std::ofstream(tmp("sram_arch.json")) << R"({"tiles": 2, "tile": {}, "operand_buffer_bytes": 96,
                                               "sram": {"bytes": 100, "bandwidth": 8, "latency": 1}})";
    std::ofstream(tmp("e2m1_arch.json")) << R"({"tiles": 2, "tile": {"formats": ["e2m1"]}, "operand_buffer_bytes": 96})";
  }
  struct Case {
    std::string args, must_mention;
  };
  std::vector<Case> cases = {
      {"gemm --backend tpu", "unknown backend 'tpu'"},
      {"gemm --m 0", "at least 1"},
      {"gemm --m abc", "--m: expected a number"},
      {"gemm --format-a fp8", "--format-a: unknown name 'fp8'"},
      {"gemm --scale mx", "--scale: unknown name 'mx'"},
      {"gemm --block 2x2", "--block: unknown name"},
      {"gemm --backend systemc --rows 0", "'rows'"},
      {"gemm --backend systemc --lanes 24", "'lanes'"},
      {"gemm --backend systemc --bandwidth -3", "'bandwidth'"},
      {"gemm --backend systemc --bandwidth fast", "--bandwidth: expected a number"},
      {"gemm --backend systemc --block 1x32", "needs lanes >= 32"},
      {"gemm --backend rtl --rows 16 --cols 16", "16x16x16"},
      {"gemm --backend rtl --latency 6", "latency"},
      {"gemm --backend golden --trace x.fst", "--trace"},
      {"gemm --backend rtl --trace x.vcd", "FST"},
      {"gemm --backend systemc --trace x.fst", "VCD"},
      {"gemm --bench --trace x.fst", "--trace"},
      {"gemm --backend event --trace x.vcd", "--trace"},
      {"gemm --backend event-timing --stall-out 1", "--stall-out"},
      {"gemm --backend event --bandwidth 0", "bandwidth"},
      {"gemm --backend event-timing --bandwidth 1e-9", "2^36"},
      {"gemm --backend systemc --arch " + tmp("small_arch.json"), "event model only"},
      {"gemm --bench --arch " + tmp("small_arch.json"), "--arch"},
      {"gemm --backend event --arch " + tmp("small_arch.json") + " --lanes 32", "--lanes cannot go with it"},
      {"gemm --backend event --arch " + tmp("small_arch.json"), "'operand_buffer_bytes'"},
      {"gemm --backend event --arch " + tmp("flow_arch.json"), "unknown dataflow \"row-stationary\""},
      {"gemm --backend event --arch " + tmp("sram_arch.json"), "'sram.bytes' 100 cannot hold one beat"},
      {"gemm --backend event --arch " + tmp("bad.json"), "'tiles' is missing"},
      {"gemm --backend event --arch /nonexistent/arch.json", "/nonexistent/arch.json"},
      {"gemm --backend event-timing --arch " + tmp("e2m1_arch.json") + " --format-b int4", "not in the tile's formats"},
      {"gemm --bench --repeat 0", "--repeat"},
      {"gemm --backend systemc --stall-in 1.5", "--stall-in"},
      {"gemm --backend systemc --stall-out -0.1", "--stall-out"},
      {"gemm --backend systemc --config /nonexistent/tile.json", "/nonexistent/tile.json"},
      {"gemm --backend systemc --config " + tmp("bad.json"), "'lanes'"},
      {"gemm --a /nonexistent/a.npy", "a.npy"},
  };
  // An unbuilt RTL shape: the message lists every shape this build has.
  for (const std::string& shape : sim::RtlDevice::shapes()) cases.push_back({"gemm --backend rtl --lanes 32", shape});
  int checked = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CommandResult r = run_nibble(c.args);
    const bool refused = r.exit_code == 2 && r.output.find(c.must_mention) != std::string::npos;
    EXPECT_TRUE(refused) << "exit " << r.exit_code << ", must mention '" << c.must_mention << "':\n" << r.output;
    checked += refused ? 1 : 0;
  }
  std::printf("bad invocations refused with exit 2: %d\n", checked);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace nibble::test
