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

// The tensor core's operand staging (rtl/nibble_operand_rf.sv) on a GateSim, fed one operand
// (A or B) of a block stream as the array's A-row and B-column files are in steady state:
// every cycle one block is written (its codes in bits 4i.., its scale code above them) and the
// block written kLag cycles earlier is read, so one half of the file is read while the other
// is written. Every read is checked against the block written there: a mismatch throws
// NetlistError, so an energy figure is only given for a netlist that stores and returns its
// data.
class OperandRfNetlist {
 public:
  explicit OperandRfNetlist(GateSim& sim);
  unsigned lanes() const { return lanes_; }
  unsigned depth() const { return depth_; }
  unsigned entry_bits() const { return entry_bits_; }
  // Runs the blocks' operand `b_side` ? b : a through the file and returns the energy of the
  // cycles that both write and read (from the first read to the last write; report.cycles of
  // them), leakage at clock_ns per cycle.
  EnergyReport run(const std::vector<DpuBlock>& blocks, bool b_side, double clock_ns);

 private:
  GateSim& sim_;
  unsigned lanes_, depth_, entry_bits_;
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
