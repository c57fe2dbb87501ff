// nibble golden-quant: quantize a user's tensor with the golden model and write
// the codes, block scales and tensor scale as a quantized-tensor file
// (nibble/io/quantized_file.h), or check such a file -- written by gpu-quant,
// or by a design under test -- against golden bit for bit.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"
#include "nibble/quantize.h"
#include "quant_flags.h"

namespace nibble::cli {
namespace {

struct GoldenQuantOptions {
  std::string tensor;
  std::string name;
  QuantFlags quant;
  bool colwise = false;
  std::string out;
  std::string check;
};

void write_file(const GoldenQuantOptions& o, const io::Tensor& t, const std::string& temporary) {
  const QuantConfig cfg = o.quant.config();
  std::vector<io::QuantizedEntry> entries;
  entries.push_back({"rowwise", false, golden_quantize(t, false, cfg)});
  if (o.colwise) entries.push_back({"colwise", true, golden_quantize(t, true, cfg)});
  io::write_quantized(temporary, entries);
  commit_output(o.out);
  fmt::print("{} [{} x {}]{}: {} (golden)\n", t.name, t.rows(), t.cols(), t.bf16 ? " (BF16)" : "", describe(cfg));
  for (const io::QuantizedEntry& e : entries) {
    fmt::print("  {} [{} x {}]{}\n", e.name, e.tensor.rows, e.tensor.cols, e.transposed ? " (transposed)" : "");
  }
  fmt::print("  written to {} ({} bytes)\n", o.out, std::filesystem::file_size(o.out));
}

void check_file(const GoldenQuantOptions& o, const io::Tensor& t) {
  const std::vector<io::QuantizedEntry> entries = io::read_quantized(o.check);
  for (const io::QuantizedEntry& e : entries) require_finite(t, o.tensor, e.tensor.config.policy.nonfinite);
  fmt::print("{}: {} quantized tensor{} against golden on {} [{} x {}]\n", o.check, entries.size(),
             entries.size() == 1 ? "" : "s", t.name, t.rows(), t.cols());
  int differ = 0;
  for (const io::QuantizedEntry& e : entries) {
    const int64_t rows = e.transposed ? t.cols() : t.rows();
    const int64_t cols = e.transposed ? t.rows() : t.cols();
    if (e.tensor.rows != rows || e.tensor.cols != cols) {
      throw UsageError(fmt::format("{}: '{}' is [{} x {}]{}, but {} makes it [{} x {}]", o.check, e.name,
                                   e.tensor.rows, e.tensor.cols, e.transposed ? " (transposed)" : "", o.tensor,
                                   rows, cols));
    }
    const QuantizedTensor want = golden_quantize(t, e.transposed, e.tensor.config);
    const io::QuantizedDiff d = io::diff_quantized(e.tensor, want);
    fmt::print("  {} [{} x {}]{} {}: {}\n", e.name, rows, cols, e.transposed ? " (transposed)" : "",
               describe(e.tensor.config), d.same() ? "bit-exact" : "DIFFERS: " + io::describe(d, e.tensor, want));
    differ += d.same() ? 0 : 1;
  }
  if (differ != 0) {
    throw std::runtime_error(fmt::format("{} of {} quantized tensors in {} differ from golden", differ,
                                         entries.size(), o.check));
  }
}

}  // namespace

void add_golden_quant_command(CLI::App& app) {
  auto opts = std::make_shared<GoldenQuantOptions>();
  CLI::App* cmd = app.add_subcommand(
      "golden-quant",
      "Quantize a tensor (.npy/.safetensors) with the golden model into a quantized-tensor file, or check one");
  cmd->add_option("--tensor", opts->tensor, "input tensor file (.npy or .safetensors)")->required();
  cmd->add_option("--name", opts->name, "tensor name inside a .safetensors file");
  const std::vector<CLI::Option*> quant = opts->quant.add_to(cmd);
  CLI::Option* colwise =
      cmd->add_flag("--colwise", opts->colwise, "also write the transposed tensor's quantization ('colwise')");
  CLI::Option* out = cmd->add_option("--out", opts->out,
                                     "write the codes, block scales and tensor scale to this .safetensors file")
                         ->type_name("FILE");
  CLI::Option* check = cmd->add_option("--check", opts->check,
                                       "compare every quantized tensor of this file with golden's quantization of "
                                       "--tensor under the file's own settings (exit 1 if any differs)")
                           ->type_name("FILE");
  out->excludes(check);
  for (CLI::Option* o : quant) o->excludes(check);
  colwise->excludes(check);
  cmd->callback([opts] {
    if (opts->out.empty() == opts->check.empty()) throw UsageError("golden-quant takes --out FILE or --check FILE");
    note_input(opts->tensor, "--tensor");
    note_input(opts->check, "--check");
    std::string temporary;
    if (!opts->out.empty()) {
      opts->quant.config();  // bad settings fail before the tensor is read
      temporary = reserve_quantized_output(opts->out, "--out");
    }
    const io::Tensor t = io::read_tensor(opts->tensor, opts->name);
    if (!opts->out.empty()) {
      require_finite(t, opts->tensor, opts->quant.config().policy.nonfinite);
      write_file(*opts, t, temporary);
    } else {
      check_file(*opts, t);
    }
  });
}

}  // namespace nibble::cli
