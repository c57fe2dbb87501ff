// The case types themselves: op names and case equality (nibble/vectors.h).
#include "nibble/vectors.h"

namespace nibble::vectors {

std::string_view name(Op op) {
  switch (op) {
    case Op::kQuantize: return "quantize";
    case Op::kDot: return "dot";
    case Op::kGemmTile: return "gemm-tile";
  }
  return "?";
}

std::optional<Op> parse_op(std::string_view n) {
  for (Op op : kAllOps) {
    if (name(op) == n) return op;
  }
  return std::nullopt;
}

Op op_of(const Case& c) { return static_cast<Op>(c.index()); }

bool operator==(const QuantizeCase& a, const QuantizeCase& b) {
  return a.format == b.format && a.mode == b.mode && a.policy == b.policy && a.length == b.length &&
         a.rounding == b.rounding &&
         a.sr_bits == b.sr_bits && a.seed == b.seed && a.stream == b.stream && a.group == b.group &&
         a.s_enc == b.s_enc && a.g == b.g && a.x == b.x && a.random == b.random && a.scale_code == b.scale_code &&
         a.codes == b.codes;
}

bool operator==(const DotCase& a, const DotCase& b) {
  return a.fa == b.fa && a.fb == b.fb && a.sfa == b.sfa && a.sfb == b.sfb && a.length == b.length &&
         a.nblocks == b.nblocks && a.codes_a == b.codes_a && a.codes_b == b.codes_b && a.scales_a == b.scales_a &&
         a.scales_b == b.scales_b && a.ga == b.ga && a.gb == b.gb && a.partial == b.partial &&
         a.products == b.products && a.result == b.result;
}

bool operator==(const GemmTileCase& a, const GemmTileCase& b) {
  return a.fa == b.fa && a.fb == b.fb && a.mode_a == b.mode_a && a.mode_b == b.mode_b && a.block_a == b.block_a &&
         a.block_b == b.block_b && a.m == b.m && a.n == b.n && a.k == b.k && a.codes_a == b.codes_a &&
         a.codes_b == b.codes_b && a.scales_a == b.scales_a && a.scales_b == b.scales_b && a.ga == b.ga &&
         a.gb == b.gb && a.c == b.c;
}

}  // namespace nibble::vectors
