// nibble golden-dequant: golden's dequantization of a tensor of a
// quantized-tensor file (golden-quant, gpu-quant --out, or a quantizer under
// test), written as .npy, or a dequantized tensor from elsewhere (gpu-quant
// --dequant-out, a dequantizer under test) checked against it bit for bit.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <stdexcept>
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
  const QuantizedTensor q = read_quantized_operand(o.quantized, o.name, "--quantized");
  std::vector<float> got;
  if (!o.check.empty()) {  // read first: a tensor of the wrong shape fails before the work
    const io::Tensor t = io::read_tensor(o.check);
    if (t.shape.size() != 2 || t.shape[0] != q.rows || t.shape[1] != q.cols) {
      throw UsageError(fmt::format("--check {}: the tensor has shape [{}], expected [{}, {}] (the quantized tensor's)",
                                   o.check, fmt::join(t.shape, ", "), q.rows, q.cols));
    }
    got = t.data;
  }
  const std::vector<float> want = dequantize(q);
  fmt::print("{}{} [{} x {}] ({}), dequantized by golden{}\n", o.quantized, o.name.empty() ? "" : " '" + o.name + "'",
             q.rows, q.cols, describe(q.config),
             q.config.rht.enabled() ? " (values in the RHT domain: the transform is not undone)" : "");
  if (!o.out.empty()) {
    io::write_npy(o.out, {q.rows, q.cols}, want.data());
    fmt::print("  written to {}\n", o.out);
  }
  if (!o.check.empty()) {
    size_t differ = 0;
    const std::string what = describe_float_difference(got, want, q.cols, "elements", &differ);
    fmt::print("  {} vs golden: {}\n", o.check, differ == 0 ? "bit-exact" : "DIFFERS: " + what);
    if (differ != 0) throw std::runtime_error(fmt::format("{} differs from golden", o.check));
  }
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
