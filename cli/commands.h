// The `nibble` program's subcommands. Each add_* registers one subcommand on
// the top-level CLI11 app; its callback runs the command and throws on error.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <fstream>
#include <stdexcept>
#include <string>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace nibble::power {
struct FlowOptions;
}  // namespace nibble::power

namespace nibble::cli {

// Bad user input (unknown names, impossible sizes, unusable files). main()
// prints "nibble: error: MESSAGE" and exits with status 2, as it does for the
// other exceptions that mean bad input (a malformed command line, a malformed
// file, a size beyond nibble/limits.h, memory exhausted, an area or energy
// flow's power::FlowError); a check that found a
// difference exits with 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Work stopped where it can go on (a training run at its checkpoint once
// --time-limit passed): main() prints "nibble: paused: MESSAGE" and exits with
// kPausedStatus; the same command continues it.
class Paused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
inline constexpr int kPausedStatus = 3;

// The command line nibble was started with ("nibble" and its arguments, shell-quoted
// where needed), recorded in the JSON results it writes; set by main().
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Output files (output.cpp). Every output is written under a temporary name in its own
// directory and renamed into place once complete, so a failed command leaves no output
// behind and never half-overwrites an old one. An existing path that is not a regular
// file (/dev/null, /dev/stdout, a pipe) is written in place.
//
// note_input records a file the command reads: an output naming the same file is refused.
// reserve_output checks `path` before any work -- not a directory, not an input, its
// directory writable -- and returns the temporary file to write instead ("OPTION: ..."
// on failure); commit_output renames that file to `path`. open_output reserves and opens
// the temporary file (an empty path gives a closed stream); finish_output closes it, fails
// if anything could not be written, and commits it. write_output does both for a text
// written in one go. discard_outputs removes every temporary file not yet committed (main
// calls it when a command fails).
void note_input(const std::string& path, const std::string& option);
std::string reserve_output(const std::string& path, const std::string& option);
void commit_output(const std::string& path);
std::ofstream open_output(const std::string& path, const std::string& option);
void finish_output(std::ofstream& file, const std::string& path);
void write_output(const std::string& path, const std::string& option, const std::string& text);
void discard_outputs();
// Why a new file cannot be written at `path` ("cannot open 'PATH' for writing: ..."), or
// nothing; with `probe`, a file is created in its directory and removed again to find out.
std::string output_defect(const std::string& path, bool probe);
// A directory a command writes many files into (a flow's --keep or --cache): made where
// missing, then probed with a file; "OPTION: cannot use directory 'DIR': ..." otherwise.
void prepare_directory(const std::string& dir, const std::string& option);
// The options `nibble area` and `nibble energy` share: the results files (--json, --csv) and
// the flow's tools and directories (--yosys, --python, --synth-dir, --cache; area_cmd.cpp).
void add_flow_options(CLI::App* sub, power::FlowOptions& flow, std::string& json_out, std::string& csv_out,
                      const std::string& cache_help);

// Checks of option values (flags.cpp), run by CLI11 while it parses, so that a bad value
// fails before any command starts ("--OPTION: ..."). writable_file: a file that can be
// created where it is named (its directory exists and takes a new file). integer_in and
// unsigned_integer: a decimal integer that fits in 64 bits and lies in [lo, hi]: what CLI11
// alone would wrap or saturate (a negative number for an unsigned option, a 20-digit
// number) is refused.
CLI::Validator writable_file();
CLI::Validator integer_in(int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
CLI::Validator unsigned_integer(uint64_t hi = UINT64_MAX);
// The product of `dims` (sizes of a tensor, a GEMM, a chain); a UsageError naming `what`
// where a size is negative or the product exceeds `max` (nibble/limits.h) or wraps.
int64_t checked_elements(std::initializer_list<int64_t> dims, int64_t max, const std::string& what);

void add_quant_command(CLI::App& app);
// golden-quant: a user tensor quantized by golden into a quantized-tensor file, or such a file checked.
void add_golden_quant_command(CLI::App& app);
// golden-gemm: golden's C of two quantized-tensor files, or a C checked against it.
void add_golden_gemm_command(CLI::App& app);
// golden-dequant: golden's dequantization of a quantized-tensor file, or a dequantized tensor checked against it.
void add_golden_dequant_command(CLI::App& app);
void add_vectors_command(CLI::App& app);
void add_area_command(CLI::App& app);
// energy: activity-based energy of the synthesized DPU per format configuration.
void add_energy_command(CLI::App& app);
// report: the co-design report (HTML with the data behind every figure).
void add_report_command(CLI::App& app);
// gemm: a GEMM on the golden, SystemC or Verilated-RTL backend, and --bench (only in builds with SystemC).
void add_gemm_command(CLI::App& app);
// workload: a training step or a GEMM list on an array, by the event model (with SystemC).
void add_workload_command(CLI::App& app);
// bench-compare: runs of bench-kernels --json side by side (every build).
void add_bench_compare_command(CLI::App& app);
// gpu-quant, gpu-gemm, bench-kernels (only in builds with CUDA).
void add_kernel_commands(CLI::App& app);
// train-data, train, train-sweep (train and train-sweep need a build with libtorch).
void add_train_commands(CLI::App& app);
// Whether this build can train on a GPU now (libtorch, the CUDA kernels, a device);
// `why` says what is missing.
bool can_train_on_gpu(std::string* why);
// The training sweep of `nibble report`: every recipe over `seeds` for `steps` steps
// on the GPU, default model, into `out` (summary.json, summary.md, runs/).
void run_report_training(const std::string& data, int64_t steps, const std::string& seeds, const std::string& out);

}  // namespace nibble::cli
