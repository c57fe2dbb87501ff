// Checks of option values run while CLI11 parses, and checked size products (commands.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <string>

#include "commands.h"
#include "nibble/limits.h"

namespace nibble::cli {
namespace {

// `text` as a T, exactly: decimal digits (a '-' only for a signed T), nothing
// after them, no overflow.
template <class T>
bool parse_exact(const std::string& text, T* value) {
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && stop == end;
}

}  // namespace

CLI::Validator writable_file() {
  return CLI::Validator([](std::string& path) { return output_defect(path, true); }, "");
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t v = 0;
        if (!parse_exact(text, &v)) return fmt::format("expected a 64-bit integer, got '{}'", text);
        if (v < lo || v > hi) return fmt::format("must be in [{}, {}], got {}", lo, hi, text);
        return "";
      },
      "");
}

CLI::Validator unsigned_integer(uint64_t hi) {
  return CLI::Validator(
      [hi](std::string& text) -> std::string {
        uint64_t v = 0;
        if (!parse_exact(text, &v)) return fmt::format("expected an unsigned 64-bit integer, got '{}'", text);
        if (v > hi) return fmt::format("must be in [0, {}], got {}", hi, text);
        return "";
      },
      "");
}

int64_t checked_elements(std::initializer_list<int64_t> dims, int64_t max, const std::string& what) {
  for (const int64_t d : dims) {
    if (d < 0) throw UsageError(fmt::format("{}: size {} is negative", what, d));
  }
  const std::optional<int64_t> n = limits::checked_product(dims, max);
  if (!n) {
    std::string sizes;
    for (const int64_t d : dims) sizes += (sizes.empty() ? "" : " x ") + std::to_string(d);
    throw UsageError(fmt::format("{}: {} is more than the limit of {} (see README, Limits)", what, sizes, max));
  }
  return *n;
}

}  // namespace nibble::cli
