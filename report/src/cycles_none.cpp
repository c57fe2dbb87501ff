// The cycle section without SystemC: nothing to run; the page says so.
#include "nibble/report/report.h"

namespace nibble::report {

CycleResults run_cycle_sweep(uint64_t, const std::function<void(const std::string&)>&) { return {}; }

}  // namespace nibble::report
