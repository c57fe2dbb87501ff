#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <exception>
#include <string>

#include "commands.h"
#include "synth_flow.h"
#include "nibble/io/tensor_file.h"

namespace nibble::cli {
namespace {
std::string g_command_line;
}  // namespace

void set_command_line(int argc, char** argv) {
  g_command_line = "nibble";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:+@%") == std::string::npos;
    g_command_line += " " + (plain ? arg : shell_quote(arg));
  }
}

const std::string& command_line() { return g_command_line; }

}  // namespace nibble::cli

int main(int argc, char** argv) {
  nibble::cli::set_command_line(argc, argv);
  CLI::App app{"Nibble: a co-design suite for 4-bit tensor-core formats (E2M1, E1M2, INT4)", "nibble"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nibble 0.1.0");
  nibble::cli::add_quant_command(app);
  nibble::cli::add_golden_quant_command(app);
  nibble::cli::add_golden_gemm_command(app);
  nibble::cli::add_golden_dequant_command(app);
  nibble::cli::add_vectors_command(app);
  nibble::cli::add_area_command(app);
  nibble::cli::add_energy_command(app);
  nibble::cli::add_report_command(app);
  nibble::cli::add_train_commands(app);
  nibble::cli::add_bench_compare_command(app);
#if NIBBLE_HAVE_SYSTEMC
  nibble::cli::add_gemm_command(app);
#endif
#if NIBBLE_HAVE_CUDA
  nibble::cli::add_kernel_commands(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every malformed command line exits 2, like other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const nibble::cli::UsageError& e) {
    fmt::print(stderr, "nibble: error: {}\n", e.what());
    return 2;
  } catch (const nibble::io::TensorFileError& e) {
    fmt::print(stderr, "nibble: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "nibble: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
