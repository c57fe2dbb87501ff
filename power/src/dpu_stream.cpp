// DPU netlist driver and the energy estimator's operand streams (dpu_stream.h).
#include "nibble/power/dpu_stream.h"

#include <fmt/core.h>

#include <random>
#include <stdexcept>

#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::power {

DpuNetlist::DpuNetlist(GateSim& sim) : sim_(sim) {
  const int w = sim.port_width("codes_a_i");
  if (w % 4 != 0 || w / 4 < 1 || w / 4 > 16) {
    throw NetlistError(fmt::format("codes_a_i is {} bits: want 4 x lanes, lanes <= 16", w));
  }
  lanes_ = static_cast<unsigned>(w / 4);
}

void DpuNetlist::reset() {
  sim_.set_input("valid_i", 0);
  sim_.set_input("rst_ni", 0);
  sim_.tick();
  sim_.tick();
  sim_.set_input("rst_ni", 1);
  sim_.tick();
}

DpuOutput DpuNetlist::step(const DpuBlock* b) {
  sim_.set_input("valid_i", b != nullptr);
  if (b != nullptr) {
    if (b->a.size() > lanes_ || b->b.size() > lanes_) throw std::invalid_argument("block longer than the lanes");
    sim_.set_input("first_i", b->first);
    sim_.set_input("last_i", b->last);
    sim_.set_input("format_a_i", static_cast<uint64_t>(b->fa));
    sim_.set_input("format_b_i", static_cast<uint64_t>(b->fb));
    sim_.set_input("scale_format_a_i", static_cast<uint64_t>(b->sfa));
    sim_.set_input("scale_format_b_i", static_cast<uint64_t>(b->sfb));
    uint64_t ca = 0, cb = 0;
    for (size_t i = 0; i < b->a.size(); ++i) ca |= static_cast<uint64_t>(b->a[i] & 0xF) << (4 * i);
    for (size_t i = 0; i < b->b.size(); ++i) cb |= static_cast<uint64_t>(b->b[i] & 0xF) << (4 * i);
    sim_.set_input("codes_a_i", ca);
    sim_.set_input("codes_b_i", cb);
    sim_.set_input("scale_a_i", b->scale_a);
    sim_.set_input("scale_b_i", b->scale_b);
  }
  sim_.tick();
  DpuOutput o;
  o.valid = sim_.get("acc_valid_o") != 0;
  o.last = sim_.get("acc_last_o") != 0;
  o.acc = static_cast<uint32_t>(sim_.get("acc_o"));
  return o;
}

OperandRfNetlist::OperandRfNetlist(GateSim& sim) : sim_(sim) {
  entry_bits_ = static_cast<unsigned>(sim.port_width("wdata_i"));
  if (entry_bits_ <= 32 || (entry_bits_ - 32) % 4 != 0 || (entry_bits_ - 32) / 4 > 16 ||
      sim.port_width("rdata_o") != static_cast<int>(entry_bits_)) {
    throw NetlistError(fmt::format("wdata_i / rdata_o are {} / {} bits: want 4 x lanes + 32, lanes <= 16",
                                   entry_bits_, sim.port_width("rdata_o")));
  }
  lanes_ = (entry_bits_ - 32) / 4;
  const int aw = sim.port_width("waddr_i");
  if (aw < 1 || aw > 8 || sim.port_width("raddr_i") != aw) throw NetlistError("waddr_i / raddr_i: want equal widths of 1..8 bits");
  depth_ = 1u << aw;
  if (depth_ < 2) throw NetlistError("the register file needs two entries or more");
}

EnergyReport OperandRfNetlist::run(const std::vector<DpuBlock>& blocks, bool b_side, double clock_ns) {
  const unsigned lag = depth_ / 2;
  if (blocks.size() <= 2 * lag) throw std::invalid_argument("too few blocks to fill the register file");
  auto codes = [&](const DpuBlock& blk) {
    const std::vector<uint8_t>& c = b_side ? blk.b : blk.a;
    if (c.size() > lanes_) throw std::invalid_argument("block longer than the register file's lanes");
    uint64_t w = 0;
    for (size_t i = 0; i < c.size(); ++i) w |= static_cast<uint64_t>(c[i] & 0xF) << (4 * i);
    return w;
  };
  auto scale = [&](const DpuBlock& blk) { return b_side ? blk.scale_b : blk.scale_a; };
  const int code_bits = static_cast<int>(4 * lanes_);
  EnergyReport steady;
  for (size_t t = 0; t < blocks.size() + lag; ++t) {
    if (t == lag) sim_.clear_activity();
    if (t == blocks.size()) steady = sim_.energy(clock_ns);  // the drain's reads only: not counted
    const bool write = t < blocks.size();
    sim_.set_input("we_i", write);
    if (write) {
      sim_.set_input("waddr_i", t % depth_);
      sim_.set_input("wdata_i", codes(blocks[t]), 0, code_bits);
      sim_.set_input("wdata_i", scale(blocks[t]), code_bits, 32);
    }
    sim_.set_input("raddr_i", (t + depth_ - lag) % depth_);
    sim_.tick();
    if (t < lag) continue;
    const DpuBlock& want = blocks[t - lag];
    const uint64_t got_codes = sim_.get("rdata_o", 0, code_bits);
    const uint64_t got_scale = sim_.get("rdata_o", code_bits, 32);
    if (got_codes != codes(want) || got_scale != scale(want)) {
      throw NetlistError(fmt::format("operand register file: block {} read back as {:x}/{:x}, written {:x}/{:x}",
                                     t - lag, got_codes, got_scale, codes(want), scale(want)));
    }
  }
  return steady;
}

const char* name(Distribution d) {
  switch (d) {
    case Distribution::kGaussian: return "gaussian";
    case Distribution::kStudentT: return "student-t";
    case Distribution::kRht: return "student-t+rht16";
    case Distribution::kUser: return "user";
  }
  return "?";
}

std::vector<DpuBlock> make_stream(const StreamSpec& s) {
  if (s.lanes != 16 && s.lanes != 32) throw std::invalid_argument("lanes must be 16 or 32");
  const int64_t k = s.k;
  if (k <= 0 || k % s.lanes != 0) throw std::invalid_argument(fmt::format("k = {} is not a multiple of {}", k, s.lanes));
  const int64_t kb = k / s.lanes;
  std::vector<float> a, b;
  int64_t ra = 0, rb = 0;
  if (s.dist == Distribution::kUser) {
    if (s.user_a == nullptr) throw std::invalid_argument("user stream without a tensor");
    a = *s.user_a;
    b = s.user_b != nullptr ? *s.user_b : *s.user_a;
    if (a.size() % static_cast<size_t>(k) != 0 || b.size() % static_cast<size_t>(k) != 0) {
      throw std::invalid_argument("user tensor size is not a multiple of k");
    }
    ra = static_cast<int64_t>(a.size()) / k;
    rb = static_cast<int64_t>(b.size()) / k;
  } else {
    // enough rows for the blocks asked: ra x rb dot products of kb blocks
    ra = rb = 1;
    while (static_cast<size_t>(ra * rb * kb) < s.blocks) (ra <= rb ? ra : rb) *= 2;
    std::mt19937_64 rng(s.seed);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::student_t_distribution<float> student(static_cast<float>(s.student_t_dof));
    auto draw = [&](int64_t rows) {
      std::vector<float> x(static_cast<size_t>(rows * k));
      for (float& v : x) v = s.dist == Distribution::kGaussian ? gauss(rng) : student(rng);
      return x;
    };
    a = draw(ra);
    b = draw(rb);
  }
  QuantConfig cfg;
  cfg.format = s.format;
  cfg.block = s.lanes == 32 ? BlockShape::k1x32 : BlockShape::k1x16;
  if (ra == 0 || rb == 0) throw std::invalid_argument("an operand tensor has no rows of k elements");
  const auto mode = parse_scale_mode(s.scale_mode);
  if (!mode) throw std::invalid_argument(fmt::format("unknown scale mode {}", s.scale_mode));
  cfg.scale = *mode;
  cfg.seed = s.seed;
  if (s.dist == Distribution::kRht) cfg.rht.size = 16;
  const QuantizedTensor qa = quantize(a.data(), ra, k, cfg);
  const QuantizedTensor qb = quantize(b.data(), rb, k, cfg);
  const ScaleFormat sf = scale_format(cfg.scale);
  std::vector<DpuBlock> out;
  out.reserve(s.blocks);
  for (int64_t i = 0; out.size() < s.blocks; ++i) {
    const int64_t r = i % ra, c = (i / ra) % rb;
    for (int64_t kk = 0; kk < kb && out.size() < s.blocks; ++kk) {
      DpuBlock blk;
      blk.fa = blk.fb = s.format;
      blk.sfa = blk.sfb = sf;
      const size_t off_a = static_cast<size_t>(r * k + kk * s.lanes), off_b = static_cast<size_t>(c * k + kk * s.lanes);
      blk.a.assign(qa.codes.begin() + off_a, qa.codes.begin() + off_a + s.lanes);
      blk.b.assign(qb.codes.begin() + off_b, qb.codes.begin() + off_b + s.lanes);
      blk.scale_a = qa.scale_code_at(r, kk * s.lanes);
      blk.scale_b = qb.scale_code_at(c, kk * s.lanes);
      blk.first = kk == 0;
      blk.last = kk + 1 == kb;
      out.push_back(std::move(blk));
    }
  }
  return out;
}

}  // namespace nibble::power
