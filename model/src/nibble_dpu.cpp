#include "nibble/model/nibble_dpu.h"

#include <stdexcept>
#include <string>

#include "nibble/dot.h"
#include "nibble/scale.h"

namespace nibble::model {

float dpu_accumulate(float acc, bool first, const uint8_t* codes_a, Format fa, uint32_t scale_a, ScaleFormat sfa,
                     const uint8_t* codes_b, Format fb, uint32_t scale_b, ScaleFormat sfb, size_t count) {
  const int32_t p = block_partial_sum(codes_a, fa, codes_b, fb, count);
  const float r = block_product(p, fa, fb, decode_scale(sfa, scale_a), decode_scale(sfb, scale_b));
  return accumulate(first ? 0.0f : acc, r);
}

nibble_dpu::nibble_dpu(sc_core::sc_module_name name, int lanes, Channel<DpuBlock>& in, Channel<DpuAcc>& out,
                       int latency)
    : sc_core::sc_module(name), lanes_(lanes), latency_(latency), in_(in), out_(out) {
  if (lanes != 16 && lanes != 32) throw std::invalid_argument("nibble_dpu: lanes must be 16 or 32");
  if (latency < 1) throw std::invalid_argument("nibble_dpu: latency must be at least 1");
  SC_CTHREAD(run, clk_i.pos());
}

void nibble_dpu::run() {
  for (uint64_t cycle = 0;; ++cycle) {
    DpuBlock b;
    if (in_.PopNB(b)) {
      const size_t n = static_cast<size_t>(lanes_);
      if (b.codes_a.size() != n || b.codes_b.size() != n) {
        throw std::invalid_argument("nibble_dpu: a block must carry " + std::to_string(lanes_) + " codes per operand");
      }
      acc_ = dpu_accumulate(acc_, b.first, b.codes_a.data(), b.format_a, b.scale_a, b.scale_format_a, b.codes_b.data(),
                            b.format_b, b.scale_b, b.scale_format_b, n);
      ++blocks_;
      pipe_.push_back({cycle + static_cast<uint64_t>(latency_), DpuAcc{b.last, acc_}});
    }
    // Valid-only output, as in the RTL: a result leaves exactly `latency` cycles later.
    if (!pipe_.empty() && pipe_.front().due == cycle) {
      if (!out_.PushNB(pipe_.front().acc)) {
        SC_REPORT_ERROR("nibble_dpu", "output not accepted: the DPU's output never stalls");
      }
      pipe_.pop_front();
    }
    sc_core::wait();
  }
}

}  // namespace nibble::model
