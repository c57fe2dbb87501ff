// The `nibble` program's subcommands. Each add_* registers one subcommand on
// the top-level CLI11 app; its callback runs the command and throws on error.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

namespace CLI {
class App;
}

namespace nibble::cli {

// Bad user input (unknown names, impossible sizes, unusable files). main()
// prints the message and exits with status 2; other exceptions exit with 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The command line nibble was started with ("nibble" and its arguments, shell-quoted
// where needed), recorded in the JSON results it writes; set by main().
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Output files (output.cpp). open_output opens `path` for writing before any work, so a bad
// path fails at once ("OPTION: cannot open 'PATH' for writing"); an empty path gives a closed
// stream. finish_output closes it and fails if anything could not be written. write_output
// does both for a text written in one go.
std::ofstream open_output(const std::string& path, const std::string& option);
void finish_output(std::ofstream& file, const std::string& path);
void write_output(const std::string& path, const std::string& option, const std::string& text);

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
