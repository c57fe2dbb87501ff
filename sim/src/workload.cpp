#include "nibble/sim/workload.h"

#include <fmt/core.h>

#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/event_device.h"
#include "nibble/train/data.h"

namespace nibble::sim {
namespace {

std::string block_of(BlockShape b) { return std::string(name(b)); }

[[noreturn]] void list_fail(const std::string& key, const std::string& what) {
  throw model::ConfigError(fmt::format("'{}' {}", key, what));
}

int64_t list_int(const nlohmann::json& v, const std::string& key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) list_fail(key, "must be an integer, got " + v.dump());
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi) : v.get<int64_t>() > hi) {
    list_fail(key, fmt::format("must be at most {}, got {}", hi, v.dump()));
  }
  if (v.get<int64_t>() < lo) list_fail(key, fmt::format("must be at least {}, got {}", lo, v.dump()));
  return v.get<int64_t>();
}

template <class T, size_t N, class Parse>
T list_name(const nlohmann::json& v, const std::string& key, const std::array<T, N>& all, Parse parse) {
  std::string known;
  for (const T& x : all) known += (known.empty() ? "" : ", ") + std::string(name(x));
  if (!v.is_string()) list_fail(key, "must be a string (one of " + known + "), got " + v.dump());
  const std::optional<T> x = parse(v.get<std::string>());
  if (!x) list_fail(key, "unknown name " + v.dump() + " (expected one of " + known + ")");
  return *x;
}

// sum += x n, refused where the total would not fit 64 bits.
void add_scaled(uint64_t& sum, uint64_t x, uint64_t n) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(x, n, &product) || __builtin_add_overflow(sum, product, &sum)) {
    throw std::invalid_argument("the workload's totals exceed 2^64 (too many runs of too large GEMMs)");
  }
}

void add_stats(GemmStats& sum, const GemmStats& s, uint64_t n) {
  add_scaled(sum.cycles, s.cycles, n);
  add_scaled(sum.tiles, s.tiles, n);
  add_scaled(sum.macs, s.macs, n);
  add_scaled(sum.beats, s.beats, n);
  add_scaled(sum.stall_operand, s.stall_operand, n);
  add_scaled(sum.stall_output, s.stall_output, n);
  add_scaled(sum.stall_pipeline, s.stall_pipeline, n);
  add_scaled(sum.stall_sram, s.stall_sram, n);
  add_scaled(sum.stall_dram, s.stall_dram, n);
  add_scaled(sum.operand_bytes, s.operand_bytes, n);
  add_scaled(sum.windows, s.windows, n);
  add_scaled(sum.traffic.dram_read_bytes, s.traffic.dram_read_bytes, n);
  add_scaled(sum.traffic.buffer_fill_bytes, s.traffic.buffer_fill_bytes, n);
  add_scaled(sum.traffic.c_bytes, s.traffic.c_bytes, n);
  add_scaled(sum.traffic.accumulator_bytes, s.traffic.accumulator_bytes, n);
  add_scaled(sum.traffic.dram_write_bytes, s.traffic.dram_write_bytes, n);
}

}  // namespace

std::vector<WorkloadGemm> training_step_gemms(const train::ModelConfig& model, int64_t tokens,
                                              const train::Recipe& recipe) {
  std::vector<WorkloadGemm> items;
  std::map<std::string, size_t> merged;  // a GEMM's description -> its item
  const auto add = [&](WorkloadGemm it, int layer) {
    const GemmShape& s = it.shape;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", it.name, it.bf16, s.m, s.n, s.k,
                                        name(s.format_a), name(s.format_b), name(s.scale_a), block_of(s.block_a),
                                        block_of(s.block_b), it.quantize_elements, it.rht_elements);
    const auto found = merged.find(key);
    if (found == merged.end()) {
      it.layers = std::to_string(layer);
      merged[key] = items.size();
      items.push_back(it);
    } else {
      WorkloadGemm& prev = items[found->second];
      ++prev.count;
      prev.layers = prev.layers.substr(0, prev.layers.find('-')) + "-" + std::to_string(layer);
    }
  };
  for (int layer = 0; layer < model.layers; ++layer) {
    for (const train::LinearShape& lin : train::block_linears(model)) {
      for (const train::Gemm g : train::kAllGemms) {
        WorkloadGemm it;
        it.name = fmt::format("{}.{}", lin.name, train::name(g));
        GemmShape& s = it.shape;
        s.m = g == train::Gemm::kWgrad ? lin.out : tokens;
        s.n = g == train::Gemm::kFprop ? lin.out : lin.in;
        s.k = g == train::Gemm::kFprop ? lin.in : (g == train::Gemm::kDgrad ? lin.out : tokens);
        const auto qa = train::operand_config(recipe, g, train::Operand::kA, layer, model.layers, 0);
        const auto qb = train::operand_config(recipe, g, train::Operand::kB, layer, model.layers, 0);
        if (!qa || !qb) {
          it.bf16 = true;
        } else {
          s.format_a = qa->format;
          s.format_b = qb->format;
          s.scale_a = qa->scale;
          s.scale_b = qb->scale;
          s.block_a = qa->block;
          s.block_b = qb->block;
          const uint64_t elements = static_cast<uint64_t>(s.m * s.k + s.n * s.k);
          it.quantize_elements = elements;
          it.rht_elements = qa->rht.enabled() ? elements : 0;
        }
        add(it, layer);
      }
    }
  }
  // Attention's batched products, per sequence and head: forward S = Q K^T [ctx, ctx] over d_head
  // and O = P V [ctx, d_head] over ctx; backward dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q.
  // BF16 in the trainer (fused attention). Counted dense: a causal kernel skips about half.
  const int64_t d = model.d_model, vocab = train::kVocabSize;
  const int64_t ctx = model.ctx, d_head = d / model.heads, sequences = tokens / ctx;
  const struct {
    const char* name;
    int64_t m, n, k;
  } attention[] = {{"attn.scores", ctx, ctx, d_head},   {"attn.mix", ctx, d_head, ctx},
                   {"attn.d_scores", ctx, ctx, d_head}, {"attn.d_values", ctx, d_head, ctx},
                   {"attn.d_queries", ctx, d_head, ctx}, {"attn.d_keys", ctx, d_head, ctx}};
  if (sequences > 0) {
    for (const auto& a : attention) {
      WorkloadGemm it;
      it.name = a.name;
      it.layers = model.layers > 1 ? fmt::format("0-{}", model.layers - 1) : "0";
      it.bf16 = true;
      it.count = static_cast<uint64_t>(model.layers) * static_cast<uint64_t>(sequences) *
                 static_cast<uint64_t>(model.heads);
      it.shape.m = a.m;
      it.shape.n = a.n;
      it.shape.k = a.k;
      items.push_back(it);
    }
  }
  // The untied LM head, [T, d] x [vocab, d]^T, and its two gradients: BF16 in the trainer.
  const int64_t shapes[3][3] = {{tokens, vocab, d}, {tokens, d, vocab}, {vocab, d, tokens}};
  for (const train::Gemm g : train::kAllGemms) {
    WorkloadGemm it;
    it.name = fmt::format("head.{}", train::name(g));
    it.layers = "head";
    it.bf16 = true;
    const auto& sh = shapes[static_cast<int>(g)];
    it.shape.m = sh[0];
    it.shape.n = sh[1];
    it.shape.k = sh[2];
    items.push_back(it);
  }
  return items;
}

std::vector<WorkloadGemm> gemm_list_from_json_text(const std::string& text) {
  nlohmann::json j;
  try {
    j = io::parse_json(text, io::refuse_repeated_keys([](const std::string& key) { list_fail(key, "is given twice"); }));
  } catch (const io::JsonError& e) {
    throw model::ConfigError(e.what());
  }
  if (!j.is_object() || !j.contains("gemms") || j.size() != 1) {
    throw model::ConfigError("must be an object with the one key \"gemms\"");
  }
  const nlohmann::json& list = j["gemms"];
  if (!list.is_array() || list.empty()) list_fail("gemms", "must be a non-empty array");
  std::vector<WorkloadGemm> items;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& g = list[i];
    const std::string at = fmt::format("gemms[{}]", i);
    if (!g.is_object()) list_fail(at, "must be an object, got " + g.dump());
    for (const char* required : {"m", "n", "k"}) {
      if (!g.contains(required)) list_fail(at + "." + required, "is missing (required: m, n, k)");
    }
    WorkloadGemm it;
    it.name = at;
    GemmShape& s = it.shape;
    ScaleMode scale = ScaleMode::kNVFP4;
    bool rht = false;
    for (auto kv = g.begin(); kv != g.end(); ++kv) {
      const std::string key = at + "." + kv.key();
      const nlohmann::json& v = kv.value();
      if (kv.key() == "name") {
        if (!v.is_string() || v.get<std::string>().empty()) list_fail(key, "must be a non-empty string");
        it.name = v.get<std::string>();
      } else if (kv.key() == "m") {
        s.m = list_int(v, key, 1, int64_t{1} << 32);
      } else if (kv.key() == "n") {
        s.n = list_int(v, key, 1, int64_t{1} << 32);
      } else if (kv.key() == "k") {
        s.k = list_int(v, key, 1, int64_t{1} << 32);
      } else if (kv.key() == "count") {
        it.count = static_cast<uint64_t>(list_int(v, key, 1, int64_t{1} << 32));
      } else if (kv.key() == "format_a") {
        s.format_a = list_name(v, key, kAllFormats, parse_format);
      } else if (kv.key() == "format_b") {
        s.format_b = list_name(v, key, kAllFormats, parse_format);
      } else if (kv.key() == "scale") {
        scale = list_name(v, key, kAllScaleModes, parse_scale_mode);
      } else if (kv.key() == "block_a") {
        s.block_a = list_name(v, key, kAllBlockShapes, parse_block_shape);
      } else if (kv.key() == "block_b") {
        s.block_b = list_name(v, key, kAllBlockShapes, parse_block_shape);
      } else if (kv.key() == "rht") {
        if (!v.is_boolean()) list_fail(key, "must be true or false, got " + v.dump());
        rht = v.get<bool>();
      } else {
        list_fail(key, "is an unknown key (known: name, m, n, k, format_a, format_b, scale, block_a, block_b, count, "
                       "rht)");
      }
    }
    s.scale_a = s.scale_b = scale;
    // Every run's MACs, m n k count, at most 2^62: then (m + n) k <= 2 m n k fits too, and so do the
    // workload's totals of them.
    const uint64_t limit = uint64_t{1} << 62;
    uint64_t macs = static_cast<uint64_t>(s.m);
    for (const uint64_t x : {static_cast<uint64_t>(s.n), static_cast<uint64_t>(s.k), it.count}) {
      if (macs > limit / x) {
        list_fail(at, fmt::format("runs more than 2^62 MACs (m {} x n {} x k {} x count {})", s.m, s.n, s.k, it.count));
      }
      macs *= x;
    }
    const uint64_t elements = static_cast<uint64_t>(s.m + s.n) * static_cast<uint64_t>(s.k);
    it.quantize_elements = elements;
    it.rht_elements = rht ? elements : 0;
    items.push_back(it);
  }
  return items;
}

void check_workload(const ArchConfig& arch, const std::vector<WorkloadGemm>& gemms) {
  for (const WorkloadGemm& it : gemms) {
    if (!it.bf16) check_tile_shape(it.name, arch.tile, it.shape);
  }
}

WorkloadRun time_workload(const ArchConfig& arch, const std::vector<WorkloadGemm>& gemms,
                          const std::function<void()>& on_gemm) {
  const EventDevice dev(arch, {}, EventDevice::Values::kNone);
  WorkloadRun w;
  for (const WorkloadGemm& it : gemms) {
    if (on_gemm) on_gemm();
    GemmRun r;
    r.gemm = &it;
    if (it.bf16) {
      add_scaled(w.bf16_macs,
                 static_cast<uint64_t>(it.shape.m) * static_cast<uint64_t>(it.shape.n) * static_cast<uint64_t>(it.shape.k),
                 it.count);
      w.gemms.push_back(r);
      continue;
    }
    r.stats = dev.time(it.shape);
    r.actions = count_actions(arch, r.stats);
    r.actions[Action::kQuantize] = it.quantize_elements;
    r.actions[Action::kRht] = it.rht_elements;
    if (arch.quantizer) {
      r.quantizer_cycles =
          static_cast<uint64_t>(std::ceil(static_cast<double>(it.quantize_elements) / arch.quantizer->elements_per_cycle)) +
          static_cast<uint64_t>(std::ceil(static_cast<double>(it.rht_elements) / arch.quantizer->rht_elements_per_cycle));
    }
    const uint64_t n = it.count;
    add_stats(w.total, r.stats, n);
    for (int i = 0; i < kActionCount; ++i) add_scaled(w.actions.n[i], r.actions.n[i], n);
    add_scaled(w.dpu_ops[{it.shape.format_a, it.shape.format_b}], r.actions[Action::kDpuBlockOp], n);
    add_scaled(w.quantizer_cycles, r.quantizer_cycles, n);
    add_scaled(w.array_macs, r.stats.macs, n);
    w.gemms.push_back(r);
  }
  const uint64_t peak = static_cast<uint64_t>(arch.tiles) * static_cast<uint64_t>(arch.tile.rows) *
                        static_cast<uint64_t>(arch.tile.cols) * static_cast<uint64_t>(arch.tile.lanes);
  w.total.peak_macs_per_cycle = peak;
  w.utilization = w.total.cycles && peak ? static_cast<double>(w.array_macs) /
                                               (static_cast<double>(w.total.cycles) * static_cast<double>(peak))
                                         : 0.0;
  if (arch.clock_ghz) w.seconds = static_cast<double>(w.total.cycles) / (*arch.clock_ghz * 1e9);
  return w;
}

Energy price(const EnergyTable& table, const ArchConfig& arch, const WorkloadRun& run) {
  return price(table, mask_name(arch.tile.formats), run.actions, run.dpu_ops);
}

Energy price(const EnergyTable& table, const ArchConfig& arch, const GemmRun& run) {
  DpuOpsByFormat ops;
  if (run.gemm && !run.gemm->bf16) {
    ops[{run.gemm->shape.format_a, run.gemm->shape.format_b}] = run.actions[Action::kDpuBlockOp];
  }
  return price(table, mask_name(arch.tile.formats), run.actions, ops);
}

}  // namespace nibble::sim
