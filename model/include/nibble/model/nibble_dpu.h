// nibble_dpu: the block dot-product unit (rtl/nibble_dpu.sv). Function: golden's
// block_partial_sum, block_product and accumulate, called for every block.
// Timing: a block popped in cycle t is pushed (accumulated) in cycle t + latency
// (the RTL's DpuLatency = 3); one block per cycle, never stalls its input.
#pragma once

#include <systemc.h>

#include <cstdint>
#include <deque>

#include "nibble/model/channel.h"
#include "nibble/model/transactions.h"

namespace nibble::model {

inline constexpr int kRtlDpuLatency = 3;

// The DPU's function on one block: fl(acc + r_b) with the accumulator restarting
// from +0 on a first block. Every value comes from golden.
float dpu_accumulate(float acc, bool first, const uint8_t* codes_a, Format fa, uint32_t scale_a, ScaleFormat sfa,
                     const uint8_t* codes_b, Format fb, uint32_t scale_b, ScaleFormat sfb, size_t count);

SC_MODULE(nibble_dpu) {
  sc_core::sc_in<bool> clk_i;

  nibble_dpu(sc_core::sc_module_name name, int lanes, Channel<DpuBlock>& in, Channel<DpuAcc>& out,
             int latency = kRtlDpuLatency);
  SC_HAS_PROCESS(nibble_dpu);

  uint64_t blocks() const { return blocks_; }

 private:
  void run();

  int lanes_;
  int latency_;
  Channel<DpuBlock>& in_;
  Channel<DpuAcc>& out_;
  float acc_ = 0.0f;
  uint64_t blocks_ = 0;
  struct InFlight {
    uint64_t due;
    DpuAcc acc;
  };
  std::deque<InFlight> pipe_;
};

}  // namespace nibble::model
