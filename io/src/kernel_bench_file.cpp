// `nibble bench-kernels` results as JSON, and the matching of two sides' runs
// (kernel_bench_file.h).
#include "nibble/io/kernel_bench_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "nibble/io/json.h"
#include "nibble/limits.h"

namespace nibble::io {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kSchema = "nibble-bench-kernels";
constexpr int kSchemaVersion = 1;
constexpr std::string_view kKinds[] = {"kernel", "yardstick", "bound", "emulation"};

[[noreturn]] void fail(const std::string& source, const std::string& defect) {
  throw BenchFileError(fmt::format("{}: {}", source, defect));
}

// Reads `key` of `obj` as T, failing with the field's path (`where`.key) if
// it is absent or of another type.
template <typename T>
T get(const Json& obj, const char* key, const std::string& where, const std::string& source) {
  const std::string path = where.empty() ? key : where + "." + key;
  if (!obj.contains(key)) fail(source, fmt::format("'{}' is missing", path));
  const Json& v = obj.at(key);
  bool ok = false;
  if constexpr (std::is_same_v<T, std::string>) {
    ok = v.is_string();
  } else if constexpr (std::is_floating_point_v<T>) {
    ok = v.is_number();
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    ok = v.is_number_integer();
    // In T's range: a schema_version of 2^32 + 1 must not read as 1.
    const bool in_range =
        !ok || (v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                                       : v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                             v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()));
    if (!in_range) fail(source, fmt::format("'{}' is {}, out of range", path, v.dump()));
  } else {
    ok = v.is_array();
  }
  if (!ok) fail(source, fmt::format("'{}' has the wrong type ({})", path, v.type_name()));
  return v.get<T>();
}

std::optional<double> get_optional(const Json& obj, const char* key, const std::string& where,
                                   const std::string& source) {
  if (!obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  return get<double>(obj, key, where, source);
}

Json optional_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

std::string kernel_bench_key(const KernelBenchRow& row) {
  std::string key = row.section;
  if (!row.input.empty()) key += " " + row.input;
  key += " " + fmt::format("{}", fmt::join(row.shape, "x")) + " " + row.name;
  if (!row.tiles.empty()) key += " (tiles " + row.tiles + ")";
  return key;
}

std::string kernel_bench_json(const KernelBenchRun& run) {
  Json j;
  j["schema"] = kSchema;
  j["schema_version"] = kSchemaVersion;
  j["command"] = run.command;
  const KernelBenchDevice& d = run.device;
  j["device"] = {{"name", d.name},
                 {"sm_count", d.sm_count},
                 {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                 {"memory_mib", d.memory_mib},
                 {"driver_version", d.driver_version},
                 {"runtime_version", d.runtime_version}};
  const KernelBenchOptions& o = run.options;
  j["options"] = {{"quant_rows", o.quant_rows},
                  {"quant_cols", o.quant_cols},
                  {"gemm_shapes", o.gemm_shapes},
                  {"warmup", o.warmup},
                  {"iterations", o.iterations}};
  Json rows = Json::array();
  for (const KernelBenchRow& r : run.rows) {
    rows.push_back({{"section", r.section},
                    {"kind", r.kind},
                    {"input", r.input},
                    {"shape", r.shape},
                    {"name", r.name},
                    {"recipe", r.recipe},
                    {"library_default", r.library_default},
                    {"tiles", r.tiles},
                    {"tile", r.tile},
                    {"datapath", r.datapath},
                    {"ms", r.ms},
                    {"rate", r.rate},
                    {"rate_unit", r.section == "gemm" ? "TFLOP/s" : "GB/s"},
                    {"vs_baseline", r.vs_baseline},
                    {"vs_no_rht", optional_json(r.vs_no_rht)},
                    {"device_mib", optional_json(r.device_mib)}});
  }
  j["rows"] = rows;
  j["failures"] = run.failures;
  return j.dump(2) + "\n";
}

KernelBenchRun parse_kernel_bench(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = parse_ordered_json(text);
  } catch (const JsonError& e) {
    fail(source, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) fail(source, "not a JSON object");
  if (!j.contains("schema") || j["schema"] != kSchema) {
    fail(source, fmt::format("not a bench-kernels result (its \"schema\" is not \"{}\")", kSchema));
  }
  const int version = get<int>(j, "schema_version", "", source);
  if (version != kSchemaVersion) {
    fail(source, fmt::format("schema_version {} (this build reads version {})", version, kSchemaVersion));
  }
  KernelBenchRun run;
  run.command = get<std::string>(j, "command", "", source);
  if (!j.contains("device") || !j["device"].is_object()) fail(source, "'device' is missing or not an object");
  const Json& d = j["device"];
  run.device.name = get<std::string>(d, "name", "device", source);
  run.device.sm_count = get<int>(d, "sm_count", "device", source);
  const std::string cc = get<std::string>(d, "compute_capability", "device", source);
  if (std::sscanf(cc.c_str(), "%d.%d", &run.device.compute_major, &run.device.compute_minor) != 2) {
    fail(source, fmt::format("'device.compute_capability' is '{}', not MAJOR.MINOR", cc));
  }
  run.device.memory_mib = get<int64_t>(d, "memory_mib", "device", source);
  run.device.driver_version = get<int>(d, "driver_version", "device", source);
  run.device.runtime_version = get<int>(d, "runtime_version", "device", source);
  if (!j.contains("options") || !j["options"].is_object()) fail(source, "'options' is missing or not an object");
  const Json& o = j["options"];
  run.options.quant_rows = get<int64_t>(o, "quant_rows", "options", source);
  run.options.quant_cols = get<int64_t>(o, "quant_cols", "options", source);
  run.options.warmup = get<int>(o, "warmup", "options", source);
  run.options.iterations = get<int>(o, "iterations", "options", source);
  run.options.gemm_shapes.clear();
  for (const Json& s : get<Json>(o, "gemm_shapes", "options", source)) {
    if (!s.is_array() || s.size() != 3 || !std::all_of(s.begin(), s.end(), [](const Json& v) {
          return v.is_number_integer();
        })) {
      fail(source, "'options.gemm_shapes' holds an entry that is not [M, N, K]");
    }
    run.options.gemm_shapes.push_back({s[0].get<int64_t>(), s[1].get<int64_t>(), s[2].get<int64_t>()});
  }
  std::set<std::string> keys;
  const Json rows = get<Json>(j, "rows", "", source);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Json& r = rows[i];
    const std::string where = fmt::format("rows[{}]", i);
    if (!r.is_object()) fail(source, fmt::format("'{}' is not an object", where));
    KernelBenchRow row;
    row.section = get<std::string>(r, "section", where, source);
    if (row.section != "quantize" && row.section != "gemm") {
      fail(source, fmt::format("'{}.section' is '{}' (quantize or gemm)", where, row.section));
    }
    row.kind = get<std::string>(r, "kind", where, source);
    if (std::find(std::begin(kKinds), std::end(kKinds), row.kind) == std::end(kKinds)) {
      fail(source, fmt::format("'{}.kind' is '{}' ({})", where, row.kind, fmt::join(kKinds, ", ")));
    }
    row.input = get<std::string>(r, "input", where, source);
    const Json shape = get<Json>(r, "shape", where, source);
    for (const Json& v : shape) {
      if (!v.is_number_integer()) fail(source, fmt::format("'{}.shape' holds a non-integer", where));
      row.shape.push_back(v.get<int64_t>());
    }
    row.name = get<std::string>(r, "name", where, source);
    row.recipe = get<std::string>(r, "recipe", where, source);
    row.library_default = get<bool>(r, "library_default", where, source);
    row.tiles = get<std::string>(r, "tiles", where, source);
    row.tile = get<std::string>(r, "tile", where, source);
    row.datapath = get<std::string>(r, "datapath", where, source);
    row.ms = get<double>(r, "ms", where, source);
    if (!(row.ms > 0.0) || !std::isfinite(row.ms)) {
      fail(source, fmt::format("'{}.ms' is {}: a time must be positive and finite", where, row.ms));
    }
    row.rate = get<double>(r, "rate", where, source);
    row.vs_baseline = get<double>(r, "vs_baseline", where, source);
    row.vs_no_rht = get_optional(r, "vs_no_rht", where, source);
    row.device_mib = get_optional(r, "device_mib", where, source);
    if (!keys.insert(kernel_bench_key(row)).second) {
      fail(source, fmt::format("'{}' repeats the row '{}'", where, kernel_bench_key(row)));
    }
    run.rows.push_back(std::move(row));
  }
  for (const Json& f : get<Json>(j, "failures", "", source)) {
    if (!f.is_string()) fail(source, "'failures' holds a non-string");
    run.failures.push_back(f.get<std::string>());
  }
  return run;
}

KernelBenchRun read_kernel_bench(const std::string& path) {
  std::string text;
  try {
    text = read_text_file(path, limits::kMaxJsonBytes);
  } catch (const JsonError& e) {
    throw BenchFileError(e.what());
  }
  return parse_kernel_bench(text, path);
}

std::vector<KernelBenchSeries> kernel_bench_series(const std::vector<KernelBenchRun>& runs) {
  std::vector<KernelBenchSeries> series;
  std::map<std::string, size_t> index;
  for (const KernelBenchRun& run : runs) {
    for (const KernelBenchRow& row : run.rows) {
      const std::string key = kernel_bench_key(row);
      const auto [at, added] = index.emplace(key, series.size());
      if (added) series.push_back({key, {}});
      series[at->second].rows.push_back(row);
    }
  }
  return series;
}

KernelBenchComparison compare_kernel_bench(const std::vector<KernelBenchRun>& before,
                                           const std::vector<KernelBenchRun>& after) {
  KernelBenchComparison c;
  auto times = [](const KernelBenchSeries& s) {
    std::vector<double> ms;
    for (const KernelBenchRow& r : s.rows) ms.push_back(r.ms);
    return ms;
  };
  auto devices = [](const std::vector<KernelBenchRun>& side) {
    std::vector<std::string> names;
    for (const KernelBenchRun& run : side) {
      if (std::find(names.begin(), names.end(), run.device.name) == names.end()) names.push_back(run.device.name);
    }
    return names;
  };
  c.before_devices = devices(before);
  c.after_devices = devices(after);
  const std::vector<KernelBenchSeries> b = kernel_bench_series(before), a = kernel_bench_series(after);
  std::map<std::string, const KernelBenchSeries*> before_of;
  for (const KernelBenchSeries& s : b) before_of[s.key] = &s;
  std::set<std::string> after_keys;
  for (const KernelBenchSeries& s : a) {
    after_keys.insert(s.key);
    const auto found = before_of.find(s.key);
    if (found == before_of.end()) {
      c.only_after.push_back(s.key);
    } else {
      c.matched.push_back({s.rows.front(), times(*found->second), times(s)});
    }
  }
  for (const KernelBenchSeries& s : b) {
    if (after_keys.count(s.key) == 0) c.only_before.push_back(s.key);
  }
  return c;
}

}  // namespace nibble::io
