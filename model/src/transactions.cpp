#include "nibble/model/transactions.h"

#include <systemc.h>

#include "nibble/fp32.h"

namespace nibble::model {

bool DpuBlock::operator==(const DpuBlock& o) const {
  return first == o.first && last == o.last && format_a == o.format_a && format_b == o.format_b &&
         scale_format_a == o.scale_format_a && scale_format_b == o.scale_format_b && codes_a == o.codes_a &&
         codes_b == o.codes_b && scale_a == o.scale_a && scale_b == o.scale_b;
}
bool DpuAcc::operator==(const DpuAcc& o) const { return last == o.last && f32_bits(acc) == f32_bits(o.acc); }
bool TileBeat::operator==(const TileBeat& o) const {
  return first == o.first && last == o.last && format_a == o.format_a && format_b == o.format_b &&
         scale_format_a == o.scale_format_a && scale_format_b == o.scale_format_b && codes_a == o.codes_a &&
         scales_a == o.scales_a && codes_b == o.codes_b && scales_b == o.scales_b && count == o.count;
}
bool TileRow::operator==(const TileRow& o) const {
  if (row != o.row || last != o.last || c.size() != o.c.size()) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    if (f32_bits(c[i]) != f32_bits(o.c[i])) return false;
  }
  return true;
}

std::ostream& operator<<(std::ostream& os, const DpuBlock& b) {
  return os << "DpuBlock{first=" << b.first << " last=" << b.last << "}";
}
std::ostream& operator<<(std::ostream& os, const DpuAcc& a) {
  return os << "DpuAcc{last=" << a.last << " acc=0x" << std::hex << f32_bits(a.acc) << std::dec << "}";
}
std::ostream& operator<<(std::ostream& os, const TileBeat& b) {
  return os << "TileBeat{first=" << b.first << " last=" << b.last << " count=" << b.count << "}";
}
std::ostream& operator<<(std::ostream& os, const TileRow& r) {
  return os << "TileRow{row=" << r.row << " last=" << r.last << "}";
}

void sc_trace(sc_core::sc_trace_file* tf, const TileBeat& b, const std::string& name) {
  sc_core::sc_trace(tf, b.first, name + ".first");
  sc_core::sc_trace(tf, b.last, name + ".last");
}
void sc_trace(sc_core::sc_trace_file* tf, const TileRow& r, const std::string& name) {
  sc_core::sc_trace(tf, r.row, name + ".row");
  sc_core::sc_trace(tf, r.last, name + ".last");
}

}  // namespace nibble::model
