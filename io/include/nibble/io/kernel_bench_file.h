// The results of `nibble bench-kernels` as a file: every row of the tables it
// prints, the device that ran them and the settings they were run with, in
// JSON ("schema": "nibble-bench-kernels", version 1). `nibble bench-kernels
// --json` writes it; `nibble bench-compare` reads runs of two builds (or two
// GPUs) and prints their times side by side.
//
// Plain C++: the CUDA benchmark fills these structures, and everything that
// reads them builds without CUDA.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nibble::io {

// A defect in a results file (not JSON, another schema, a missing or
// ill-typed field, a duplicate row); the message names the file.
class BenchFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a run measures. The defaults are those of `nibble bench-kernels`.
struct KernelBenchOptions {
  int64_t quant_rows = 8192;
  int64_t quant_cols = 8192;
  // M, N, K. 8192^3 (square, compute-bound) and two weight-gradient-like
  // shapes: two 4096-wide activations contracted over a 16384-token batch,
  // and two 1024-wide ones (a narrow layer: too few 128 x 128 tiles for the SMs).
  std::vector<std::array<int64_t, 3>> gemm_shapes = {{8192, 8192, 8192}, {4096, 4096, 16384}, {1024, 1024, 16384}};
  int warmup = 3;       // untimed calls before each measurement
  int iterations = 20;  // timed calls; a row's time is their mean
};

struct KernelBenchDevice {
  std::string name;
  int sm_count = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int64_t memory_mib = 0;
  int driver_version = 0;   // as cudaDriverGetVersion reports it (13000: 13.0)
  int runtime_version = 0;  // as cudaRuntimeGetVersion reports it
};

// One timed line. `section` is "quantize" (shape [rows, cols], `input` "fp32"
// or "bf16", rate in GB/s of the operation's minimum traffic, against a
// device-to-device copy of the input) or "gemm" (shape [M, N, K], rate in
// TFLOP/s, against cuBLAS BF16). `tiles` is the tile shape a GEMM row asked
// for ("auto": the library's own choice) and `tile` the one it ran. `kind`
// says what the row times: "kernel" (the library's quantize or bit-exact
// GEMM), "yardstick" (the copy, cuBLAS BF16), "bound" (the contract's adds
// alone) or "emulation" (dequantize to BF16, then cuBLAS). `recipe` names the
// quantization a kernel or emulation row runs (its operands', for the GEMM),
// and `library_default` marks the row of the path the library's API takes for
// it by default (every quantize row; for the GEMM, the default version on its
// own tiles), which reports show.
struct KernelBenchRow {
  std::string section;
  std::string kind;
  std::string input;
  std::vector<int64_t> shape;
  std::string name;
  std::string recipe;
  bool library_default = false;
  std::string tiles;
  std::string tile;
  std::string datapath;
  double ms = 0.0;
  double rate = 0.0;
  double vs_baseline = 0.0;             // baseline time / this time, by rate
  std::optional<double> vs_no_rht;      // quantize: the RHT16 recipe above over this one
  std::optional<double> device_mib;     // quantize: memory taken during the calls; GEMM: operands + output
};

struct KernelBenchRun {
  std::string command;  // the command line that made the run
  KernelBenchDevice device;
  KernelBenchOptions options;
  std::vector<KernelBenchRow> rows;
  std::vector<std::string> failures;  // validations that failed: those rows were not timed
};

// What identifies a row across runs: section, input, shape, name and the
// tiles asked for (not the tile or datapath chosen, which a change may move).
std::string kernel_bench_key(const KernelBenchRow& row);

std::string kernel_bench_json(const KernelBenchRun& run);  // indented, newline-terminated
// `source` names the text in error messages (the file's path).
KernelBenchRun parse_kernel_bench(const std::string& text, const std::string& source);
KernelBenchRun read_kernel_bench(const std::string& path);

// One row across several runs: the row as each run that has it holds it, in
// run order (rows.front(): the first such run's).
struct KernelBenchSeries {
  std::string key;  // kernel_bench_key
  std::vector<KernelBenchRow> rows;
};
// Every row of `runs`, in the order the rows first appear.
std::vector<KernelBenchSeries> kernel_bench_series(const std::vector<KernelBenchRun>& runs);

// Runs of two builds (or GPUs), several runs a side, matched row by row.
struct KernelBenchMatch {
  KernelBenchRow row;              // as the first "after" run has it
  std::vector<double> before_ms;   // one time per run of the side that has the row
  std::vector<double> after_ms;
};
struct KernelBenchComparison {
  std::vector<KernelBenchMatch> matched;  // in the first "after" run's order
  std::vector<std::string> only_before;   // keys of rows one side lacks
  std::vector<std::string> only_after;
  std::vector<std::string> before_devices;  // distinct device names a side ran on
  std::vector<std::string> after_devices;
};
KernelBenchComparison compare_kernel_bench(const std::vector<KernelBenchRun>& before,
                                           const std::vector<KernelBenchRun>& after);

}  // namespace nibble::io
