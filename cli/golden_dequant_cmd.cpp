// nibble golden-dequant: golden's dequantization of a tensor of a
// quantized-tensor file (golden-quant, gpu-quant --out, or a quantizer under
// test), written as .npy, or a dequantized tensor from elsewhere (gpu-quant
// --dequant-out, a dequantizer under test) checked against it bit for bit.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "nibble/io/tensor_file.h"
#include "nibble/quantize.h"
#include "quant_flags.h"

namespace nibble::cli {
namespace {

struct GoldenDequantOptions {
  std::string quantized, name, out, check;
};

void run_golden_dequant(const GoldenDequantOptions& o) {
  if (o.out.empty() && o.check.empty()) throw UsageError("golden-dequant takes --out FILE, --check FILE or both");
  note_input(o.quantized, "--quantized");
  note_input(o.check, "--check");
  const std::string temporary = o.out.empty() ? "" : reserve_npy_output(o.out, "--out", "golden-dequant");
  const QuantizedTensor q = read_quantized_operand(o.quantized, o.name, "--quantized");
  std::vector<float> got;  // read first: a tensor of the wrong shape fails before the work
  if (!o.check.empty()) got = read_matrix_to_check(o.check, q.rows, q.cols, "the tensor", "the quantized tensor's");
  const std::vector<float> want = dequantize(q);
  fmt::print("{}{} [{} x {}] ({}), dequantized by golden{}\n", o.quantized, o.name.empty() ? "" : " '" + o.name + "'",
             q.rows, q.cols, describe(q.config),
             q.config.rht.enabled() ? " (values in the RHT domain: the transform is not undone)" : "");
  if (!o.out.empty()) {
    io::write_npy(temporary, {q.rows, q.cols}, want.data());
    commit_output(o.out);
    fmt::print("  written to {}\n", o.out);
  }
  if (!o.check.empty()) report_check(o.check, got, want, q.cols, "elements");
}

}  // namespace

void add_golden_dequant_command(CLI::App& app) {
  auto opts = std::make_shared<GoldenDequantOptions>();
  CLI::App* cmd = app.add_subcommand(
      "golden-dequant", "Dequantize a tensor of a quantized-tensor file with the golden model, or check a dequantized "
                        "tensor against it");
  cmd->add_option("--quantized", opts->quantized, "a quantized-tensor file (golden-quant, gpu-quant --out)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--name", opts->name, "the quantized tensor in the file (needed where it holds several)");
  cmd->add_option("--out", opts->out, "write golden's dequantized tensor [rows, cols] to this .npy file")
      ->type_name("FILE");
  cmd->add_option("--check", opts->check,
                  "compare this tensor [rows, cols] (.npy or .safetensors) with golden's dequantization bit for bit, "
                  "any NaN matching any NaN (exit 1 if different)")
      ->type_name("FILE");
  cmd->callback([opts] { run_golden_dequant(*opts); });
}

}  // namespace nibble::cli
