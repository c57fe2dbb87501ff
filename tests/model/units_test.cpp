// nibble_dpu and the latency-insensitive channel, under randomized stalls.
// Every test prints its seed (NIBBLE_MODEL_SEED overrides it).
#include <gtest/gtest.h>
#include <systemc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/model/channel.h"
#include "nibble/model/nibble_dpu.h"
#include "nibble/scale.h"

#include "model_test_util.h"

namespace nibble::model {
namespace {

using model_test::test_seed;

// Each test elaborates its own modules: give it a fresh SystemC context. The
// previous one made here has no modules left by then, so it is deleted, not leaked
// (a context SystemC made itself is left alone: its own statics refer to it).
void fresh_context() {
  static sc_core::sc_simcontext* previous = nullptr;
  setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  delete previous;
  previous = new sc_core::sc_simcontext;
  sc_core::sc_curr_simcontext = previous;
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

SC_MODULE(channel_bench) {
  sc_core::sc_clock clk;
  sc_core::sc_in<bool> clk_i;
  Channel<DpuAcc> ch;
  std::vector<float> sent, received;
  StallInjector push_stall, pop_stall;
  int count;

  channel_bench(sc_core::sc_module_name n, int messages, double p_push, double p_pop, uint64_t seed)
      : sc_core::sc_module(n), clk("clk", 1, sc_core::SC_NS), clk_i("clk_i"), ch("ch"), push_stall(p_push, seed),
        pop_stall(p_pop, seed + 1), count(messages) {
    clk_i(clk);
    SC_CTHREAD(producer, clk_i.pos());
    SC_CTHREAD(consumer, clk_i.pos());
  }
  SC_HAS_PROCESS(channel_bench);

  void producer() {
    for (int i = 0; i < count; ++i) {
      push_stall.maybe_stall();
      const float v = static_cast<float>(i) * 0.5f;
      ch.Push(DpuAcc{i == count - 1, v});
      sent.push_back(v);
      sc_core::wait();
    }
    for (;;) sc_core::wait();
  }
  void consumer() {
    for (;;) {
      pop_stall.maybe_stall();
      const DpuAcc a = ch.Pop();
      received.push_back(a.acc);
      if (a.last) sc_core::sc_stop();
      sc_core::wait();
    }
  }
};

TEST(ModelChannel, OrderAndCountUnderRandomStalls) {
  const uint64_t seed = test_seed();
  int runs = 0;
  for (const double p : {0.0, 0.3, 0.7}) {
    fresh_context();
    channel_bench tb("tb", 500, p, 0.5 * p, seed + static_cast<uint64_t>(p * 100));
    sc_core::sc_start(sc_core::sc_time(100000, sc_core::SC_NS));
    ASSERT_EQ(tb.received.size(), 500u) << "stall probability " << p;
    EXPECT_EQ(tb.received, tb.sent);
    ++runs;
  }
  EXPECT_EQ(runs, 3);
}

struct Sent {
  DpuBlock block;
  uint64_t cycle;
};

SC_MODULE(dpu_bench) {
  sc_core::sc_clock clk;
  sc_core::sc_in<bool> clk_i;
  Channel<DpuBlock> in;
  Channel<DpuAcc> out;
  nibble_dpu dpu;
  std::vector<Sent> sent;
  std::vector<std::pair<DpuAcc, uint64_t>> got;
  std::vector<DpuBlock> blocks;
  double bubble;
  std::mt19937_64 rng;

  dpu_bench(sc_core::sc_module_name n, int lanes, std::vector<DpuBlock> b, double p, uint64_t seed)
      : sc_core::sc_module(n), clk("clk", 1, sc_core::SC_NS), clk_i("clk_i"), in("in"), out("out"),
        dpu("nibble_dpu", lanes, in, out), blocks(std::move(b)), bubble(p), rng(seed) {
    clk_i(clk);
    dpu.clk_i(clk);
    SC_CTHREAD(producer, clk_i.pos());
    SC_CTHREAD(consumer, clk_i.pos());
  }
  SC_HAS_PROCESS(dpu_bench);

  uint64_t now() const { return static_cast<uint64_t>(sc_core::sc_time_stamp() / clk.period()); }
  void producer() {
    std::bernoulli_distribution gap(bubble);
    for (const DpuBlock& b : blocks) {
      while (gap(rng)) sc_core::wait();
      in.Push(b);
      sent.push_back({b, now()});
      sc_core::wait();
    }
    for (;;) sc_core::wait();
  }
  void consumer() {
    for (;;) {
      const DpuAcc a = out.Pop();
      got.emplace_back(a, now());
      if (got.size() == blocks.size()) sc_core::sc_stop();
      sc_core::wait();
    }
  }
};

TEST(ModelDpu, GoldenAccumulatorAndLatencyWithBubbles) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  uint64_t checked = 0;
  for (const int lanes : {16, 32}) {
    std::vector<DpuBlock> blocks;
    for (int i = 0; i < 600; ++i) {
      DpuBlock b;
      b.first = i == 0 || rng() % 5 == 0;
      b.format_a = kAllFormats[rng() % 3];
      b.format_b = kAllFormats[rng() % 3];
      b.scale_format_a = kAllScaleFormats[rng() % 3];
      b.scale_format_b = kAllScaleFormats[rng() % 3];
      for (int l = 0; l < lanes; ++l) {
        b.codes_a.push_back(static_cast<uint8_t>(rng() & 0xF));
        b.codes_b.push_back(static_cast<uint8_t>(rng() & 0xF));
      }
      auto scale = [&](ScaleFormat f) -> uint32_t {
        if (f == ScaleFormat::kFP32) return f32_bits(std::ldexp(1.0f + static_cast<float>(rng() % 100) / 64.0f,
                                                                static_cast<int>(rng() % 20) - 10));
        return static_cast<uint32_t>(rng() & 0xFF);
      };
      b.scale_a = scale(b.scale_format_a);
      b.scale_b = scale(b.scale_format_b);
      blocks.push_back(b);
    }
    for (size_t i = 0; i + 1 < blocks.size(); ++i) blocks[i].last = blocks[i + 1].first;
    blocks.back().last = true;

    fresh_context();
    dpu_bench tb("tb", lanes, blocks, 0.25, seed + static_cast<uint64_t>(lanes));
    sc_core::sc_start(sc_core::sc_time(100000, sc_core::SC_NS));
    ASSERT_EQ(tb.got.size(), blocks.size()) << "lanes " << lanes;
    float acc = 0.0f;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const DpuBlock& b = blocks[i];
      const int32_t p = block_partial_sum(b.codes_a.data(), b.format_a, b.codes_b.data(), b.format_b,
                                          static_cast<size_t>(lanes));
      const float r = block_product(p, b.format_a, b.format_b, decode_scale(b.scale_format_a, b.scale_a),
                                    decode_scale(b.scale_format_b, b.scale_b));
      acc = accumulate(b.first ? 0.0f : acc, r);
      ASSERT_EQ(f32_bits(tb.got[i].first.acc), f32_bits(acc)) << "block " << i << " lanes " << lanes;
      ASSERT_EQ(tb.got[i].first.last, b.last) << "block " << i;
      // push -> (channel) -> DPU pops -> kRtlDpuLatency -> push -> (channel) -> pop
      ASSERT_EQ(tb.got[i].second - tb.sent[i].cycle, static_cast<uint64_t>(kRtlDpuLatency + 2)) << "block " << i;
      ++checked;
    }
  }
  std::printf("DPU blocks checked: %llu\n", static_cast<unsigned long long>(checked));
  EXPECT_EQ(checked, 1200u);
}

}  // namespace
}  // namespace nibble::model
