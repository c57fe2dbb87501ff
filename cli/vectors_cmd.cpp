// `nibble vectors`: write golden test vectors for a device under test, or check
// a stream of them (the generator's own, or one a testbench filled in) against
// golden. The line format is docs/vectors.md; the work is nibble::vectors.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "commands.h"
#include "nibble/vectors.h"

namespace nibble::cli {
namespace {

namespace vec = nibble::vectors;

// Every option arrives as text and is converted here, so that a bad value is a
// UsageError (exit 2) with a message naming the option, like any other bad input.
struct VectorsArgs {
  std::string seed = "1";
  std::string count = "100";
  std::string out;
  bool no_boundary = false;
  std::string format;  // quantize
  std::string format_a, format_b;
  std::string scale;             // quantize: a scale mode
  std::string scale_a, scale_b;  // dot: scale formats; gemm-tile: scale modes
  std::string block_len, rounding, sr_bits, nblocks;
  std::string block_a, block_b;
  std::string zero, nonfinite;  // quantize: the policies
  std::string m = "4", n = "4", k = "64";
  std::string file;  // check
};

template <class T>
std::optional<T> parse_integer(const std::string& text) {
  T v{};
  int base = 10;
  std::string_view digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

int to_int(const std::string& option, const std::string& text) {
  const std::optional<int> v = parse_integer<int>(text);
  if (!v) throw UsageError(option + ": expected an integer, got '" + text + "'");
  return *v;
}

// A comma-separated list of names ("e2m1,int4"), each checked against all's names;
// empty text is the empty set (every value). A repeated name is caught by vec::validate.
template <class T, size_t N, class Parse>
std::vector<T> to_names(const std::string& option, const std::string& text, const std::array<T, N>& all,
                        Parse parse) {
  std::vector<T> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::optional<T> v = parse(item);
    if (!v) {
      std::string known;
      for (const T& x : all) known += (known.empty() ? "" : ", ") + std::string(name(x));
      throw UsageError(option + ": unknown name '" + item + "' (expected one or more of " + known +
                       ", separated by commas)");
    }
    out.push_back(*v);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::optional<int> to_optional_int(const std::string& option, const std::string& text) {
  if (text.empty()) return std::nullopt;
  return to_int(option, text);
}

// --block-len: "16", "32" or "16,32".
std::vector<int> to_lengths(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(to_int("--block-len", text.substr(start, comma == std::string::npos ? std::string::npos
                                                                                       : comma - start)));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

vec::GenerateOptions generate_options(vec::Op op, const VectorsArgs& a) {
  vec::GenerateOptions o;
  o.op = op;
  const std::optional<uint64_t> seed = parse_integer<uint64_t>(a.seed);
  if (!seed) throw UsageError("--seed: expected a non-negative integer, got '" + a.seed + "'");
  o.seed = *seed;
  o.count = to_int("--count", a.count);
  if (o.count <= 0) throw UsageError("--count must be at least 1, got " + a.count);
  o.boundary = !a.no_boundary;
  o.lengths = to_lengths(a.block_len);
  switch (op) {
    case vec::Op::kQuantize:
      o.formats_a = to_names("--format", a.format, kAllFormats, parse_format);
      o.modes = to_names("--scale", a.scale, kAllScaleModes, parse_scale_mode);
      o.roundings = to_names("--rounding", a.rounding, kAllRoundings, parse_rounding);
      o.zero_policies = to_names("--zero", a.zero, kAllZeroPolicies, parse_zero_policy);
      o.nonfinite_policies = to_names("--nonfinite", a.nonfinite, kAllNonFinitePolicies, parse_nonfinite_policy);
      o.sr_bits = to_optional_int("--sr-bits", a.sr_bits);
      break;
    case vec::Op::kDot:
      o.formats_a = to_names("--format-a", a.format_a, kAllFormats, parse_format);
      o.formats_b = to_names("--format-b", a.format_b, kAllFormats, parse_format);
      o.scales_a = to_names("--scale-a", a.scale_a, kAllScaleFormats, parse_scale_format);
      o.scales_b = to_names("--scale-b", a.scale_b, kAllScaleFormats, parse_scale_format);
      o.nblocks = to_optional_int("--nblocks", a.nblocks);
      break;
    case vec::Op::kGemmTile:
      o.formats_a = to_names("--format-a", a.format_a, kAllFormats, parse_format);
      o.formats_b = to_names("--format-b", a.format_b, kAllFormats, parse_format);
      o.modes_a = to_names("--scale-a", a.scale_a, kAllScaleModes, parse_scale_mode);
      o.modes_b = to_names("--scale-b", a.scale_b, kAllScaleModes, parse_scale_mode);
      o.blocks_a = to_names("--block-a", a.block_a, kAllBlockShapes, parse_block_shape);
      o.blocks_b = to_names("--block-b", a.block_b, kAllBlockShapes, parse_block_shape);
      o.m = to_int("--m", a.m);
      o.n = to_int("--n", a.n);
      o.k = to_int("--k", a.k);
      break;
  }
  try {
    vec::validate(o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return o;
}

void run_generate(vec::Op op, const VectorsArgs& a) {
  const vec::GenerateOptions o = generate_options(op, a);
  if (a.out.empty()) {
    vec::write_stream(std::cout, o);
    std::cout.flush();
    if (!std::cout) throw std::runtime_error("writing the vectors to stdout failed");
    return;
  }
  std::ofstream file = open_output(a.out, "--out");
  const vec::StreamCounts counts = vec::write_stream(file, o);
  finish_output(file, a.out);
  fmt::print("wrote {} {} cases ({} seeded random, {} boundary) to {}\n", counts.random + counts.boundary,
             vec::name(op), counts.random, counts.boundary, a.out);
}

void run_check(const VectorsArgs& a) {
  if (a.file.empty()) throw UsageError("vectors check: name the file to check ('-' reads stdin)");
  vec::CheckReport report;
  try {
    if (a.file == "-") {
      report = vec::check_stream(std::cin);
    } else {
      std::error_code ec;
      if (std::filesystem::is_directory(a.file, ec)) throw UsageError("vectors check: '" + a.file + "' is a directory");
      std::ifstream in(a.file);
      if (!in) throw UsageError("vectors check: cannot open '" + a.file + "' for reading");
      report = vec::check_stream(in);
    }
  } catch (const vec::ParseError& e) {
    throw UsageError(a.file + ": " + e.what());
  }
  for (const std::string& line : report.reported) fmt::print("{}\n", line);
  if (report.mismatches > report.reported.size()) {
    fmt::print("({} more mismatches not shown)\n", report.mismatches - report.reported.size());
  }
  fmt::print("{} cases checked, {} mismatches\n", report.cases, report.mismatches);
  std::fflush(stdout);
  // A run that checked nothing must not pass.
  if (report.cases == 0) throw std::runtime_error(a.file + ": no cases to check");
  if (report.mismatches > 0) {
    throw std::runtime_error(a.file + ": " + std::to_string(report.mismatches) + " of " + std::to_string(report.cases) +
                             " cases disagree with golden");
  }
}

// Subcommands collect what they do not know instead of letting CLI11 exit with
// its own status, so that every bad argument exits 2 with a message.
void reject_extras(const CLI::App& sub) {
  const std::vector<std::string> extra = sub.remaining();
  if (!extra.empty()) {
    throw UsageError("vectors " + sub.get_name() + ": unknown option or argument '" + extra.front() + "' (see --help)");
  }
}

void add_generate_options(CLI::App& sub, vec::Op op, VectorsArgs& a) {
  const auto number = [&sub](const char* flag, std::string& value, const char* help) {
    return sub.add_option(flag, value, help)->type_name("N");
  };
  const auto named = [&sub](const char* flag, std::string& value, const std::string& help) {
    return sub.add_option(flag, value, help)->type_name("NAME");
  };
  number("--seed", a.seed, "Seed of the random cases (decimal, or hex with 0x)")->capture_default_str();
  number("--count", a.count, "Number of seeded random cases (the boundary table comes on top)")->capture_default_str();
  sub.add_option("--out", a.out, "Write the stream to this file instead of stdout")->type_name("FILE");
  sub.add_flag("--no-boundary", a.no_boundary, "Leave out the boundary table");
  switch (op) {
    case vec::Op::kQuantize:
      named("--format,--format-a", a.format, "Element formats: " + format_names(", ") + ", comma-separated (default: all)");
      named("--scale,--scale-a", a.scale, "Scale modes: " + scale_mode_names(", ") + " (default: all)");
      number("--block-len", a.block_len, "Block lengths: 16, 32 or 16,32 (default: both)");
      named("--rounding", a.rounding, "Roundings: rne, sr (default: both)");
      named("--zero", a.zero, "Zero policies: positive, signed (default: positive only)");
      named("--nonfinite", a.nonfinite, "Non-finite policies: finite, propagate (default: finite only)");
      number("--sr-bits", a.sr_bits, "Stochastic-rounding bits B, 1..8 (default: drawn; tables use 1 and 8)");
      break;
    case vec::Op::kDot:
      named("--format-a", a.format_a, "Formats of a: " + format_names(", ") + ", comma-separated (default: all)");
      named("--format-b", a.format_b, "Formats of b (default: all)");
      named("--scale-a", a.scale_a, "Scale formats of a: e4m3, ue8m0, fp32 (default: all)");
      named("--scale-b", a.scale_b, "Scale formats of b (default: all)");
      number("--block-len", a.block_len, "Block lengths: 16, 32 or 16,32 (default: both)");
      number("--nblocks", a.nblocks, "Blocks per case (default: random cases 1..8, tables 16)");
      break;
    case vec::Op::kGemmTile:
      named("--format-a", a.format_a, "Formats of A: " + format_names(", ") + ", comma-separated (default: all)");
      named("--format-b", a.format_b, "Formats of B (default: all)");
      named("--scale-a", a.scale_a, "Scale modes of A: " + scale_mode_names(", ") + " (default: all)");
      named("--scale-b", a.scale_b, "Scale modes of B (default: all)");
      named("--block-a", a.block_a, "Block shapes of A: 1x16, 1x32, 16x16 (default: all)");
      named("--block-b", a.block_b, "Block shapes of B (default: all)");
      number("--m", a.m, "Rows of A and of C (1..256)")->capture_default_str();
      number("--n", a.n, "Rows of B, columns of C (1..256)")->capture_default_str();
      number("--k", a.k, "Contraction length (1..8192)")->capture_default_str();
      break;
  }
}

}  // namespace

void add_vectors_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("vectors", "Write golden test vectors (hex lines), or check a stream against golden");
  auto args = std::make_shared<VectorsArgs>();
  for (vec::Op op : vec::kAllOps) {
    const std::string op_name(vec::name(op));
    CLI::App* sub =
        cmd->add_subcommand(op_name, "Write " + op_name + " vectors: seeded random cases and boundary tables");
    add_generate_options(*sub, op, *args);
    sub->allow_extras();
    sub->callback([op, args, sub] {
      reject_extras(*sub);
      run_generate(op, *args);
    });
  }
  CLI::App* check =
      cmd->add_subcommand("check", "Recompute every case of a stream with golden; exit 1 on any mismatch");
  check->add_option("file", args->file, "The stream to check ('-' for stdin)")->type_name("FILE");
  check->allow_extras();
  check->callback([args, check] {
    reject_extras(*check);
    run_check(*args);
  });
  // An unknown operation is bad input like any other: collect it and say so.
  cmd->allow_extras();
  cmd->callback([cmd] {
    if (!cmd->remaining().empty()) {
      throw UsageError("vectors: unknown operation or argument '" + cmd->remaining().front() +
                       "' (expected quantize, dot, gemm-tile or check)");
    }
    if (cmd->get_subcommands().empty()) {
      throw UsageError("vectors: name an operation: quantize, dot, gemm-tile or check");
    }
  });
}

}  // namespace nibble::cli
