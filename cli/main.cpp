#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "nibble/io/json.h"
#include "nibble/io/kernel_bench_file.h"
#include "nibble/io/shell.h"
#include "nibble/io/tensor_file.h"
#include "nibble/power/synth_flow.h"

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
    g_command_line += " " + (plain ? arg : io::shell_quote(arg));
  }
}

const std::string& command_line() { return g_command_line; }

namespace {

// Prints "nibble: error: MESSAGE", removes the outputs not yet complete, and returns the
// exit status.
int fail(const std::string& message, int status = 2) {
  discard_outputs();
  std::fflush(stdout);
  fmt::print(stderr, "nibble: error: {}\n", message);
  return status;
}

// CLI11's message, with the word it could not place named where CLI11 does not.
std::string parse_error_message(const CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  if (argc > 1 && argv[1][0] != '-') {
    const auto known = app.get_subcommands([&](const CLI::App* sub) { return sub->check_name(argv[1]); });
    if (known.empty()) return fmt::format("unknown command '{}' (nibble --help lists the commands)", argv[1]);
  }
  return e.what();
}

// Every --json, --csv, --trace and --actions option names a file to write: checked while the
// command line is parsed, so that an unusable path fails before any work.
void check_output_options(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (CLI::Option* option : sub->get_options()) {
      const std::string name = option->get_name();
      if (name == "--json" || name == "--csv" || name == "--trace" || name == "--actions") {
        option->check(writable_file());
      }
    }
    check_output_options(*sub);
  }
}

}  // namespace

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
  nibble::cli::add_workload_command(app);
#endif
#if NIBBLE_HAVE_CUDA
  nibble::cli::add_kernel_commands(app);
#endif
  nibble::cli::check_output_options(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print their text and exit 0; every malformed command line is
    // bad input like any other: one line, status 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    return nibble::cli::fail(nibble::cli::parse_error_message(app, argc, argv, e));
  } catch (const nibble::cli::UsageError& e) {
    return nibble::cli::fail(e.what());
  } catch (const nibble::power::FlowError& e) {
    return nibble::cli::fail(e.what());
  } catch (const nibble::cli::Paused& e) {
    nibble::cli::discard_outputs();
    std::fflush(stdout);
    fmt::print(stderr, "nibble: paused: {}\n", e.what());
    return nibble::cli::kPausedStatus;
  } catch (const nibble::io::TensorFileError& e) {
    return nibble::cli::fail(e.what());
  } catch (const nibble::io::JsonError& e) {
    return nibble::cli::fail(e.what());
  } catch (const nibble::io::BenchFileError& e) {
    return nibble::cli::fail(e.what());
  } catch (const std::bad_alloc&) {
    return nibble::cli::fail("out of memory: the input or the options ask for more memory than this machine has");
  } catch (const std::length_error& e) {
    return nibble::cli::fail(fmt::format("a size is too large ({})", e.what()));
  } catch (const std::invalid_argument& e) {  // golden's and the model's refusals of a configuration
    return nibble::cli::fail(e.what());
  } catch (const std::exception& e) {  // a check that found a difference, a failed tool run
    return nibble::cli::fail(e.what(), 1);
  }
  nibble::cli::discard_outputs();  // every output of a command that succeeded is committed; this is a safeguard
  return 0;
}
