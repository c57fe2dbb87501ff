// Driving a synthesized nibble_dpu netlist (GateSim) with block streams, and the operand
// streams of the energy estimator: codes and scales from golden's quantizer over synthetic
// (Gaussian, Student-t, RHT-rotated) or user tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nibble/formats.h"
#include "nibble/power/gate_sim.h"

namespace nibble::power {

// One k-block as nibble_dpu takes it (codes zero-padded to the DPU's lanes).
struct DpuBlock {
  Format fa = Format::kE2M1, fb = Format::kE2M1;
  ScaleFormat sfa = ScaleFormat::kFP32, sfb = ScaleFormat::kFP32;
  std::vector<uint8_t> a, b;
  uint32_t scale_a = 0, scale_b = 0;
  bool first = true, last = true;
};

struct DpuOutput {
  bool valid = false, last = false;
  uint32_t acc = 0;
};

// The DPU's ports on a GateSim (names of rtl/nibble_dpu.sv).
class DpuNetlist {
 public:
  explicit DpuNetlist(GateSim& sim);
  unsigned lanes() const { return lanes_; }
  void reset();                               // rst_ni low for two cycles, then high
  DpuOutput step(const DpuBlock* block);      // one clock; nullptr = idle cycle (valid_i low)
  GateSim& sim() { return sim_; }

 private:
  GateSim& sim_;
  unsigned lanes_;
};

// Operand statistics of an energy run.
enum class Distribution { kGaussian, kStudentT, kRht, kUser };
const char* name(Distribution d);

// Blocks of dot products of rows of A with rows of B (each [rows, k], k a multiple of the
// lanes), quantized by golden's quantize() in format f with 1 x lanes blocks and the given
// scale mode; kRht quantizes Student-t data after a 16-point RHT. For kUser, a and b are the
// user's tensors (row-major, [rows, k]); otherwise they are drawn from the seed.
struct StreamSpec {
  Distribution dist = Distribution::kGaussian;
  Format format = Format::kE2M1;
  unsigned lanes = 16;
  int64_t k = 256;
  size_t blocks = 1024;  // blocks to emit
  uint64_t seed = 1;
  double student_t_dof = 3.0;
  std::string scale_mode = "nvfp4";
  const std::vector<float>* user_a = nullptr;  // [rows_a, k]
  const std::vector<float>* user_b = nullptr;  // [rows_b, k]
};
std::vector<DpuBlock> make_stream(const StreamSpec& spec);

}  // namespace nibble::power
