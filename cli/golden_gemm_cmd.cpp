// nibble golden-gemm: C = A * B^T by golden's block-scaled dot-product
// contract on quantized-tensor files (golden-quant, gpu-quant --out, or a
// quantizer under test), written as .npy, or a C from elsewhere (gpu-gemm
// --out, a GEMM under test) checked against it bit for bit.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "nibble/dot.h"
#include "nibble/io/tensor_file.h"
#include "nibble/limits.h"
#include "quant_flags.h"

namespace nibble::cli {
namespace {

struct GoldenGemmOptions {
  std::string a, b, a_name, b_name, out, check;
};

void run_golden_gemm(const GoldenGemmOptions& o) {
  if (o.out.empty() && o.check.empty()) throw UsageError("golden-gemm takes --out FILE, --check FILE or both");
  note_input(o.a, "--a");
  note_input(o.b, "--b");
  note_input(o.check, "--check");
  const std::string temporary = o.out.empty() ? "" : reserve_npy_output(o.out, "--out", "golden-gemm");
  const QuantizedTensor a = read_quantized_operand(o.a, o.a_name, "--a");
  const QuantizedTensor b = read_quantized_operand(o.b, o.b_name, "--b");
  if (a.cols != b.cols) {
    throw UsageError(fmt::format("A [{} x {}] and B [{} x {}] must share the last (contraction) axis", a.rows, a.cols,
                                 b.rows, b.cols));
  }
  checked_elements({a.rows, b.rows}, limits::kMaxWorkElements, "C [M x N]");
  checked_elements({a.rows, b.rows, a.cols}, limits::kMaxMacs, "the GEMM's multiply-accumulates (M x N x K)");
  std::vector<float> got;  // read first: a C of the wrong shape fails before the GEMM
  if (!o.check.empty()) got = read_matrix_to_check(o.check, a.rows, b.rows, "C", "A's rows, B's rows");
  std::vector<float> want;
  try {
    want = gemm(a, b);
  } catch (const std::invalid_argument& e) {  // the operands were rotated differently
    throw UsageError(e.what());
  }
  fmt::print("C [{} x {}] = A [{} x {}] ({}) * B [{} x {}]^T ({}) (golden)\n", a.rows, b.rows, a.rows, a.cols,
             describe(a.config), b.rows, b.cols, describe(b.config));
  if (!o.out.empty()) {
    io::write_npy(temporary, {a.rows, b.rows}, want.data());
    commit_output(o.out);
    fmt::print("  C written to {}\n", o.out);
  }
  if (!o.check.empty()) report_check(o.check, got, want, b.rows, "outputs");
}

}  // namespace

void add_golden_gemm_command(CLI::App& app) {
  auto opts = std::make_shared<GoldenGemmOptions>();
  CLI::App* cmd = app.add_subcommand(
      "golden-gemm", "C = A * B^T of two quantized-tensor files by the golden dot-product contract, or a C checked");
  cmd->add_option("--a", opts->a, "A [M, K]: a quantized-tensor file (golden-quant, gpu-quant --out)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--b", opts->b, "B [N, K]: a quantized-tensor file")->required()->type_name("FILE");
  cmd->add_option("--a-name", opts->a_name, "A's quantized tensor in its file (needed where it holds several)");
  cmd->add_option("--b-name", opts->b_name, "B's quantized tensor in its file");
  cmd->add_option("--out", opts->out, "write golden's C [M, N] to this .npy file")->type_name("FILE");
  cmd->add_option("--check", opts->check,
                  "compare this C [M, N] (.npy or .safetensors) with golden's bit for bit, any NaN matching any "
                  "NaN (exit 1 if different)")
      ->type_name("FILE");
  cmd->callback([opts] { run_golden_gemm(*opts); });
}

}  // namespace nibble::cli
