#include <fmt/format.h>
#include <fmt/ostream.h>

#include <string>

#include "nibble/analysis/render.h"

namespace nibble::analysis {
namespace {

// RFC 4180 quoting, needed only by input names: a tensor name may hold a comma.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char ch : s) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + '"';
}

}  // namespace

// Full precision ({} is the shortest round-trip form), so the file can be
// compared with the JSON to the bit.
void write_matrix_csv(std::ostream& out, const std::vector<MatrixRow>& rows) {
  fmt::print(out,
             "input,format,scale,block,rht,rounding,sr_bits,sqnr_db,delta_sqnr_rht,nmse,alpha,rel_mag_error,"
             "code_entropy_bits,b_eff\n");
  for (const MatrixRow& r : rows) {
    const QuantConfig& c = r.config;
    const ErrorMetrics& m = r.measurement.metrics;
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.input), name(c.format), name(c.scale),
               name(c.block), rht_name(c.rht), name(c.rounding), c.sr_bits, m.sqnr_db, r.delta_sqnr_rht, m.nmse,
               m.alpha, m.rel_mag_error, r.measurement.code_entropy_bits, r.measurement.b_eff);
  }
}

}  // namespace nibble::analysis
