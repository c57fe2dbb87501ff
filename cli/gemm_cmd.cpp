// `nibble gemm`: run a quantized GEMM C = A * B^T on a device (golden, the
// SystemC cycle model of the tile, the Verilated RTL tile, or the event-skipping
// model with values in bulk or timing only), report its timing, and check every
// output bit for bit against golden::gemm. With --bench, time the RTL, the
// SystemC model and the event model on the same tile and stimulus side by side.
// The work is nibble::sim.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "commands.h"
#include "sim_report.h"
#include "nibble/fp32.h"
#include "nibble/io/json.h"
#include "nibble/io/tensor_file.h"
#include "nibble/limits.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"
#include "nibble/sim/event_device.h"
#include "nibble/sim/rtl_device.h"
#include "nibble/sim/systemc_device.h"

namespace nibble::cli {
namespace {

// Options arrive as text and are converted here, so that a bad value is a
// UsageError (exit 2) naming the option.
struct GemmArgs {
  std::string backend = "systemc";
  std::string m = "64", n = "64", k = "256";
  std::string format_a = "e2m1", format_b = "e2m1", scale = "nvfp4", block = "1x16";
  std::string config, arch, seed = "1", a_file, b_file, json_out;
  std::string rows, cols, lanes, latency, bandwidth;
  std::string trace;
  std::string stall_in = "0", stall_out = "0", stall_seed = "1";
  bool bench = false;
  std::string repeat = "3";
};

template <class T>
T to_number(const std::string& option, const std::string& text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw UsageError(option + ": expected a number, got '" + text + "'");
  }
  return v;
}

double to_double(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(option + ": expected a number, got '" + text + "'");
}

template <class T, size_t N, class Parse>
T to_name(const std::string& option, const std::string& text, const std::array<T, N>& all, Parse parse) {
  const std::optional<T> v = parse(text);
  if (v) return *v;
  std::string known;
  for (const T& x : all) known += (known.empty() ? "" : ", ") + std::string(name(x));
  throw UsageError(option + ": unknown name '" + text + "' (expected one of " + known + ")");
}

model::TileConfig tile_config(const GemmArgs& a) {
  note_input(a.config, "--config");
  model::TileConfig c;
  try {
    if (!a.config.empty()) c = model::config_from_json_file(a.config);
  } catch (const model::ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  if (!a.rows.empty()) c.rows = to_number<int>("--rows", a.rows);
  if (!a.cols.empty()) c.cols = to_number<int>("--cols", a.cols);
  if (!a.lanes.empty()) c.lanes = to_number<int>("--lanes", a.lanes);
  if (!a.latency.empty()) c.latency = to_number<int>("--latency", a.latency);
  if (!a.bandwidth.empty()) c.bandwidth = to_double("--bandwidth", a.bandwidth);
  try {
    model::validate(c);
  } catch (const model::ConfigError& e) {
    throw UsageError(e.what());
  }
  return c;
}

// --arch: an array of tiles for the event model (sim/include/nibble/sim/arch.h).
// It describes the tile itself, so the tile options may not come with it.
std::optional<sim::ArchConfig> arch_config(const GemmArgs& a) {
  if (a.arch.empty()) return std::nullopt;
  if (a.bench) throw UsageError("--arch: not with --bench (the RTL and the SystemC model are one tile)");
  if (a.backend != "event" && a.backend != "event-timing") {
    throw UsageError("--arch: an array of tiles runs on the event model only (--backend event or event-timing), not '" +
                     a.backend + "'");
  }
  for (const auto& [option, value] : {std::pair<const char*, const std::string*>{"--config", &a.config},
                                      {"--rows", &a.rows},
                                      {"--cols", &a.cols},
                                      {"--lanes", &a.lanes},
                                      {"--latency", &a.latency},
                                      {"--bandwidth", &a.bandwidth}}) {
    if (!value->empty()) throw UsageError(std::string("--arch: describes the tile; ") + option + " cannot go with it");
  }
  note_input(a.arch, "--arch");
  try {
    return sim::arch_from_json_file(a.arch);
  } catch (const model::ConfigError& e) {
    throw UsageError(std::string("--arch: ") + e.what());
  }
}

// [rows, cols] operand: from a file (viewed as a matrix over its last axis) or Gaussian from the seed.
std::vector<float> operand(const std::string& file, const char* which, int64_t& rows, int64_t& cols,
                           std::mt19937_64& rng) {
  if (!file.empty()) {
    note_input(file, std::string("--") + (which[0] == 'A' ? "a" : "b"));
    io::Tensor t = io::read_tensor(file);
    bool finite = t.data.empty();
    for (const float v : t.data) finite = finite || f32_is_finite(v);
    if (!finite) throw UsageError(fmt::format("{}: tensor '{}' has no finite values", file, t.name));
    rows = t.rows();
    cols = t.cols();
    return std::move(t.data);
  }
  if (rows <= 0 || cols <= 0) throw UsageError(std::string("operand ") + which + ": sizes must be at least 1");
  if (!limits::checked_product({rows, cols}, int64_t{1} << 26)) {
    throw UsageError(std::string("operand ") + which + ": too large (over 2^26 elements)");
  }
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (float& v : x) v = g(rng);
  return x;
}

void progress_bar(uint64_t done, uint64_t total) {
  constexpr int kWidth = 40;
  const int fill = static_cast<int>(static_cast<double>(kWidth) * static_cast<double>(done) / static_cast<double>(total));
  fmt::print(stderr, "\r[{}{}] {}/{} tiles", std::string(static_cast<size_t>(fill), '#'),
             std::string(static_cast<size_t>(kWidth - fill), '.'), done, total);
  if (done == total) fmt::print(stderr, "\n");
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --stall-in / --stall-out / --stall-seed.
sim::StallConfig stall_config(const GemmArgs& a) {
  sim::StallConfig st;
  st.input = to_double("--stall-in", a.stall_in);
  st.output = to_double("--stall-out", a.stall_out);
  st.seed = to_number<uint64_t>("--stall-seed", a.stall_seed);
  if (!(st.input >= 0.0 && st.input < 1.0)) throw UsageError("--stall-in: must be in [0, 1), got " + a.stall_in);
  if (!(st.output >= 0.0 && st.output < 1.0)) throw UsageError("--stall-out: must be in [0, 1), got " + a.stall_out);
  return st;
}

// A timed device for the tile; a device that cannot take the config or the operands is a UsageError.
std::unique_ptr<sim::GemmDevice> timed_device(const std::string& backend, const model::TileConfig& cfg,
                                              const sim::StallConfig& stalls, const sim::ProgressFn& progress,
                                              const std::string& trace, const QuantizedTensor& ta,
                                              const QuantizedTensor& tb,
                                              const std::optional<sim::ArchConfig>& arch = std::nullopt) {
  try {
    if (backend == "rtl") {
      auto dev = std::make_unique<sim::RtlDevice>(cfg, stalls, progress, trace);
      dev->check_operands(ta, tb);
      return dev;
    }
    if (backend == "event" || backend == "event-timing") {
      const auto values = backend == "event" ? sim::EventDevice::Values::kBulk : sim::EventDevice::Values::kNone;
      auto dev = arch ? std::make_unique<sim::EventDevice>(*arch, stalls, values, progress)
                      : std::make_unique<sim::EventDevice>(cfg, stalls, values, progress);
      dev->check_operands(ta, tb);
      return dev;
    }
    auto dev = std::make_unique<sim::SystemCDevice>(cfg, stalls, progress, trace);
    dev->check_operands(ta, tb);
    return dev;
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// The wall seconds of one run of `dev`: the best of `repeat` timings, each the mean
// of enough back-to-back runs to fill 20 ms (a timing-only run takes microseconds).
double best_wall(sim::GemmDevice& dev, const QuantizedTensor& ta, const QuantizedTensor& tb, int repeat,
                 sim::GemmResult& res) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  res = dev.run(ta, tb);
  const double once = std::chrono::duration<double>(clock::now() - t0).count();
  const int inner = once >= 0.02 ? 1 : static_cast<int>(std::min(1e6, std::ceil(0.02 / std::max(once, 1e-9))));
  double best = inner == 1 ? once : 1e300;  // a long first run is the first of the `repeat` timings
  for (int i = inner == 1 ? 1 : 0; i < repeat; ++i) {
    const auto t1 = clock::now();
    for (int j = 0; j < inner; ++j) res = dev.run(ta, tb);
    best = std::min(best, std::chrono::duration<double>(clock::now() - t1).count() / inner);
  }
  return best;
}

// --bench: the Verilated RTL, the SystemC model and the event model (values in
// bulk, and timing only) on the same tile and operands; each run with values
// checked against golden, every cycle count compared, the best wall time of
// `repeat` runs each.
void run_bench(const GemmArgs& a, const model::TileConfig& cfg, const QuantizedTensor& ta, const QuantizedTensor& tb,
               int64_t m, int64_t n, int64_t k) {
  const int repeat = to_number<int>("--repeat", a.repeat);
  if (repeat < 1) throw UsageError("--repeat: must be at least 1");
  fmt::print("bench {}x{}x{}  A {}  B {}  scale {}  block {}  array {}x{}x{} lanes  best of {}\n", m, n, k, a.format_a,
             a.format_b, a.scale, a.block, cfg.rows, cfg.cols, cfg.lanes, repeat);
  fmt::print("{:<13} {:>10} {:>11} {:>16} {:>12}  {}\n", "backend", "cycles", "wall s", "simulated MAC/s",
             "cycles/s", "check");
  struct Row {
    std::string backend;
    sim::GemmStats stats;
    double wall = 0.0, macs_per_s = 0.0;
  };
  std::vector<Row> rows;
  nlohmann::json runs = nlohmann::json::array();
  for (const std::string backend : {"rtl", "systemc", "event", "event-timing"}) {
    std::unique_ptr<sim::GemmDevice> dev = timed_device(backend, cfg, stall_config(a), {}, {}, ta, tb);
    Row r;
    r.backend = backend;
    sim::GemmResult res;
    r.wall = best_wall(*dev, ta, tb, repeat, res);
    const bool values = !res.c.empty();
    const sim::CheckResult check = values ? sim::check_against_golden(ta, tb, res) : sim::CheckResult{};
    r.stats = *res.stats;
    r.macs_per_s = static_cast<double>(res.stats->macs) / r.wall;
    fmt::print("{:<13} {:>10} {:>11.4e} {:>16.4g} {:>12.4g}  {}\n", backend, r.stats.cycles, r.wall, r.macs_per_s,
               static_cast<double>(r.stats.cycles) / r.wall, values ? check.describe() : "timing only");
    nlohmann::json run = {{"backend", backend},   {"cycles", r.stats.cycles},   {"wall_s", r.wall},
                          {"macs", res.stats->macs}, {"simulated_macs_per_s", r.macs_per_s}};
    run["check_ok"] = values ? nlohmann::json(check.ok()) : nlohmann::json(nullptr);
    runs.push_back(run);
    if (values && !check.ok()) throw std::runtime_error("bench: " + backend + " differs from golden: " + check.describe());
    rows.push_back(r);
  }
  const auto same_timing = [](const sim::GemmStats& x, const sim::GemmStats& y) {
    return x.cycles == y.cycles && x.beats == y.beats && x.stall_operand == y.stall_operand &&
           x.stall_output == y.stall_output && x.stall_pipeline == y.stall_pipeline &&
           x.operand_bytes == y.operand_bytes;
  };
  bool identical = true;
  for (const Row& r : rows) identical = identical && same_timing(r.stats, rows[0].stats);
  const double systemc_over_rtl = rows[1].macs_per_s / rows[0].macs_per_s;
  const double event_over_systemc = rows[2].macs_per_s / rows[1].macs_per_s;
  const double timing_over_rtl = rows[3].macs_per_s / rows[0].macs_per_s;
  fmt::print("ratios (simulated MAC/s)  SystemC model / RTL = {:.2f}x   event / SystemC model = {:.1f}x   "
             "event-timing / RTL = {:.0f}x\n",
             systemc_over_rtl, event_over_systemc, timing_over_rtl);
  fmt::print("cycles and stalls {}\n", identical ? "identical in all four" : "DIFFER");
  if (!a.json_out.empty()) {
    nlohmann::json j;
    j["m"] = m;
    j["n"] = n;
    j["k"] = k;
    j["format_a"] = a.format_a;
    j["format_b"] = a.format_b;
    j["scale"] = a.scale;
    j["block"] = a.block;
    j["config"] = io::parse_json(model::to_json_text(cfg));
    j["repeat"] = repeat;
    j["runs"] = runs;
    j["ratio_systemc_over_rtl"] = systemc_over_rtl;
    j["ratio_event_over_systemc"] = event_over_systemc;
    j["ratio_event_timing_over_rtl"] = timing_over_rtl;
    j["timing_identical"] = identical;
    write_output(a.json_out, "--json", j.dump(2) + "\n");
  }
  if (!identical) throw std::runtime_error("bench: cycle or stall counts differ between the backends");
}

void run_gemm(const GemmArgs& a) {
  const bool event = a.backend == "event" || a.backend == "event-timing";
  if (a.backend != "golden" && a.backend != "systemc" && a.backend != "rtl" && !event) {
    throw UsageError("--backend: unknown backend '" + a.backend +
                     "' (expected golden, systemc, rtl, event or event-timing)");
  }
  if (!a.trace.empty()) {
    if (a.bench) throw UsageError("--trace: not with --bench (tracing would distort the timing)");
    if (a.backend == "golden") throw UsageError("--trace: the golden backend is untimed and has nothing to trace");
    if (event) throw UsageError("--trace: the event model skips cycles and has no waveform; trace systemc or rtl");
    if (a.backend == "rtl" && !ends_with(a.trace, ".fst")) {
      throw UsageError("--trace: the rtl backend writes FST; name the file *.fst (got '" + a.trace + "')");
    }
    if (a.backend == "systemc" && !ends_with(a.trace, ".vcd")) {
      throw UsageError("--trace: the systemc backend writes a VCD of the tile's handshakes; name the file *.vcd (got '" +
                       a.trace + "')");
    }
  }
  QuantConfig qa, qb;
  qa.format = to_name("--format-a", a.format_a, kAllFormats, parse_format);
  qb.format = to_name("--format-b", a.format_b, kAllFormats, parse_format);
  qa.scale = qb.scale = to_name("--scale", a.scale, kAllScaleModes, parse_scale_mode);
  qa.block = qb.block = to_name("--block", a.block, kAllBlockShapes, parse_block_shape);
  const auto seed = to_number<uint64_t>("--seed", a.seed);
  qa.seed = qb.seed = seed;
  qb.stream = 1;
  const std::optional<sim::ArchConfig> arch = arch_config(a);
  const model::TileConfig cfg = arch ? arch->tile : tile_config(a);

  int64_t m = to_number<int64_t>("--m", a.m), n = to_number<int64_t>("--n", a.n), k = to_number<int64_t>("--k", a.k);
  int64_t kb = k;
  std::mt19937_64 rng(seed);
  const std::vector<float> xa = operand(a.a_file, "A", m, k, rng);
  const std::vector<float> xb = operand(a.b_file, "B", n, kb, rng);
  if (k != kb) throw UsageError("A and B contraction lengths differ: " + std::to_string(k) + " vs " + std::to_string(kb));
  checked_elements({m, n}, limits::kMaxWorkElements, "C [M x N]");
  checked_elements({m, n, k}, limits::kMaxMacs, "the GEMM's multiply-accumulates (M x N x K)");

  QuantizedTensor ta, tb;
  try {
    ta = quantize(xa.data(), m, k, qa);
    tb = quantize(xb.data(), n, k, qb);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }

  if (a.bench) {
    run_bench(a, cfg, ta, tb, m, n, k);
    return;
  }
  std::unique_ptr<sim::GemmDevice> dev;
  if (a.backend == "golden") {
    dev = std::make_unique<sim::GoldenDevice>();
  } else {
    // A progress bar on stderr for runs of more than a few seconds (the RTL simulates
    // 2-7 x 10^4 cycles a second, the SystemC model 0.5-2.5 x 10^5, the event model's
    // values about 10^9 MAC a second; see docs/results/cycle-sim.md).
    const uint64_t tiles = static_cast<uint64_t>(((m + cfg.rows - 1) / cfg.rows) * ((n + cfg.cols - 1) / cfg.cols));
    const uint64_t beats = tiles * static_cast<uint64_t>((k + cfg.lanes - 1) / cfg.lanes);
    const uint64_t macs = static_cast<uint64_t>(m) * static_cast<uint64_t>(n) * static_cast<uint64_t>(k);
    sim::ProgressFn progress;
    if (event) {
      if (a.backend == "event" && tiles > 1 && macs >= (uint64_t{1} << 32)) progress = progress_bar;
    } else if (tiles > 1 && (tiles >= 1024 || beats >= (a.backend == "rtl" ? 50000u : 200000u))) {
      progress = progress_bar;
    }
    dev = timed_device(a.backend, cfg, stall_config(a), progress, a.trace, ta, tb, arch);
  }
  const sim::GemmResult r = dev->run(ta, tb);
  const bool values = a.backend != "event-timing";
  const sim::CheckResult check = values ? sim::check_against_golden(ta, tb, r) : sim::CheckResult{};

  fmt::print("gemm {}x{}x{}  A {}  B {}  scale {}  block {}  backend {}\n", m, n, k, a.format_a, a.format_b, a.scale,
             a.block, dev->name());
  nlohmann::json j;
  j["backend"] = dev->name();
  j["m"] = m;
  j["n"] = n;
  j["k"] = k;
  j["format_a"] = a.format_a;
  j["format_b"] = a.format_b;
  j["scale"] = a.scale;
  j["block"] = a.block;
  j["seed"] = seed;
  if (r.stats) {
    const sim::GemmStats& s = *r.stats;
    if (arch) {
      fmt::print("array          {} tiles, each {}x{}x{} lanes, latency {}, operand buffer {} B at {} B/cycle\n",
                 arch->tiles, cfg.rows, cfg.cols, cfg.lanes, cfg.latency, arch->operand_buffer_bytes, cfg.bandwidth);
      fmt::print("{}\n", describe_memory(*arch));
      j["arch"] = io::parse_json(sim::to_json_text(*arch));
    } else {
      fmt::print("array {}x{}x{} lanes  latency {}  bandwidth {} B/cycle\n", cfg.rows, cfg.cols, cfg.lanes, cfg.latency,
                 cfg.bandwidth);
    }
    fmt::print("cycles         {}\n", s.cycles);
    fmt::print("MAC/cycle      {:.2f} (peak {})\n", s.macs_per_cycle(), s.peak_macs_per_cycle);
    fmt::print("utilization    {:.2f}%\n", 100.0 * s.utilization());
    fmt::print("tiles, beats   {}, {}\n", s.tiles, s.beats);
    // With several tiles every counter adds up over the tiles: tiles x cycles = beats + stalls.
    fmt::print("{}operand bandwidth {}  output back-pressure {}  pipeline fill/drain {}{}\n",
               arch && arch->tiles > 1 ? "stall tile-cycles (all tiles) " : "stall cycles   ",
               s.stall_operand, s.stall_output, s.stall_pipeline,
               arch ? fmt::format("  sram {}  dram {}", s.stall_sram, s.stall_dram) : std::string());
    fmt::print("operand bytes  {}\n", s.operand_bytes);
    if (arch) {
      const sim::Tiling t = static_cast<const sim::EventDevice&>(*dev).tiling(sim::shape_of(ta, tb));
      fmt::print("{}", describe_traffic(t, s));
      j["tiling"] = tiling_json(t);
      j["traffic"] = traffic_json(s.traffic);
    }
    const sim::StallConfig st = stall_config(a);
    if (st.input > 0.0 || st.output > 0.0) {
      fmt::print("injected       input bubbles p={}  output stalls p={}  seed {}\n", st.input, st.output, st.seed);
      j["injected"] = {{"input", st.input}, {"output", st.output}, {"seed", st.seed}};
    }
    j["config"] = io::parse_json(model::to_json_text(cfg));
    j["cycles"] = s.cycles;
    j["macs"] = s.macs;
    j["macs_per_cycle"] = s.macs_per_cycle();
    j["utilization"] = s.utilization();
    j["tiles"] = s.tiles;
    j["beats"] = s.beats;
    j["stalls"] = {{"operand", s.stall_operand}, {"output", s.stall_output}, {"pipeline", s.stall_pipeline}};
    if (arch) {
      j["stalls"]["sram"] = s.stall_sram;
      j["stalls"]["dram"] = s.stall_dram;
    }
    j["operand_bytes"] = s.operand_bytes;
  }
  if (!a.trace.empty()) {
    fmt::print("trace          {}\n", a.trace);
    j["trace"] = a.trace;
  }
  if (!values) {
    fmt::print("check          none (timing only: no values computed)\n");
    j["check"] = {{"computed", false}};
  } else {
    fmt::print("check          {}\n", check.describe());
    j["check"] = {{"computed", true}, {"ok", check.ok()}, {"compared", check.compared}, {"mismatches", check.mismatches}};
  }
  if (!a.json_out.empty()) {
    write_output(a.json_out, "--json", j.dump(2) + "\n");
  }
  if (values && !check.ok()) throw std::runtime_error("gemm: " + dev->name() + " differs from golden: " + check.describe());
}

}  // namespace

void add_gemm_command(CLI::App& app) {
  auto args = std::make_shared<GemmArgs>();
  CLI::App* cmd = app.add_subcommand("gemm", "Run a quantized GEMM on a device model, report cycles, check vs golden");
  GemmArgs& a = *args;
  cmd->add_option("--backend", a.backend, "golden | systemc | rtl | event | event-timing (default systemc; rtl: the Verilated tile; "
                  "event: the event-skipping model, values in bulk; event-timing: its timing only)")
      ->type_name("NAME");
  cmd->add_option("--m", a.m, "Rows of A and C (ignored with --a)")->type_name("N");
  cmd->add_option("--n", a.n, "Rows of B, columns of C (ignored with --b)")->type_name("N");
  cmd->add_option("--k", a.k, "Contraction length (ignored with --a)")->type_name("N");
  cmd->add_option("--format-a", a.format_a, "Element format of A: " + format_names(", "))->type_name("NAME");
  cmd->add_option("--format-b", a.format_b, "Element format of B")->type_name("NAME");
  cmd->add_option("--scale", a.scale, "Scale mode: " + scale_mode_names(", "))->type_name("NAME");
  cmd->add_option("--block", a.block, "Block shape: 1x16, 1x32, 16x16")->type_name("NAME");
  cmd->add_option("--config", a.config, "Tile configuration (JSON; see model/README.md)")->type_name("FILE");
  cmd->add_option("--arch", a.arch,
                  "Architecture file: an array of tiles, for the event backends (JSON; see sim/README.md)")
      ->type_name("FILE");
  cmd->add_option("--rows", a.rows, "Array rows (overrides --config)")->type_name("N");
  cmd->add_option("--cols", a.cols, "Array columns (overrides --config)")->type_name("N");
  cmd->add_option("--lanes", a.lanes, "Lanes per DPU, 16 or 32 (overrides --config)")->type_name("N");
  cmd->add_option("--latency", a.latency, "Tile latency in cycles (overrides --config)")->type_name("N");
  cmd->add_option("--bandwidth", a.bandwidth, "Operand buffer bytes/cycle (overrides --config)")->type_name("X");
  cmd->add_option("--seed", a.seed, "Seed of the random operands")->type_name("N");
  cmd->add_option("--a", a.a_file, "A [M, K] from .npy/.safetensors")->type_name("FILE");
  cmd->add_option("--b", a.b_file, "B [N, K] from .npy/.safetensors")->type_name("FILE");
  cmd->add_option("--json", a.json_out, "Write the report as JSON")->type_name("FILE");
  cmd->add_option("--trace", a.trace, "Waveform of the run: *.fst (rtl: every RTL signal) or *.vcd (systemc: handshakes)")
      ->type_name("FILE");
  cmd->add_option("--stall-in", a.stall_in, "Input bubbles: before each beat, wait a cycle with this probability")
      ->type_name("P");
  cmd->add_option("--stall-out", a.stall_out, "Output stalls: out_ready low in a cycle with this probability")
      ->type_name("P");
  cmd->add_option("--stall-seed", a.stall_seed, "Seed of the bubbles and stalls")->type_name("N");
  cmd->add_flag("--bench", a.bench, "Time the RTL, the SystemC model and the event model (values, timing only) on the same tile and "
                "operands, side by side (ignores --backend)");
  cmd->add_option("--repeat", a.repeat, "Runs per backend with --bench; the best wall time counts (default 3)")
      ->type_name("N");
  cmd->callback([args] { run_gemm(*args); });
}

}  // namespace nibble::cli
