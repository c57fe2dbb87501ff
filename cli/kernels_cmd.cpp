// GPU subcommands (built only when CUDA is enabled):
//   nibble gpu-quant     quantize a user tensor on the GPU (optionally check it against golden)
//   nibble gpu-gemm      C = A * B^T with the bit-exact block-scaled GEMM
//   nibble bench-kernels the kernel benchmark (kernels/bench)
// Without a CUDA device each exits with status 2 and says so.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "kernel_benchmark.h"
#include "nibble/cuda/check.h"
#include "nibble/cuda/device_buffer.h"
#include "nibble/cuda/gemm.h"
#include "nibble/cuda/quantize.h"
#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/io/kernel_bench_file.h"
#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"
#include "nibble/limits.h"
#include "quant_flags.h"

namespace nibble::cli {
namespace {

void require_gpu() {
  if (cuda::device_count() == 0) {
    throw UsageError("no CUDA device: this command runs its kernels on a GPU (cudaGetDeviceCount found none)");
  }
}

// The quantization flags, with the GPU's one RHT size.
QuantConfig gpu_config(const QuantFlags& flags) {
  if (flags.rht != 0 && flags.rht != 16) {
    throw UsageError(fmt::format("--rht must be 0 or 16 on the GPU, got {}", flags.rht));
  }
  return flags.config();
}

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A tensor on the device in its file's precision: a BF16 tensor stays two
// bytes per element (its float32 values are exact BF16, so their top halves
// are the bits) and goes through the BF16 kernels; any other, float32.
struct DeviceInput {
  cuda::DeviceBuffer<float> f32;
  cuda::DeviceBuffer<uint16_t> bf16;
  cuda::InputType type = cuda::InputType::kFloat32;

  explicit DeviceInput(const io::Tensor& t) {
    if (!t.bf16) {
      f32 = cuda::DeviceBuffer<float>(t.data);
      return;
    }
    std::vector<uint16_t> bits(t.data.size());
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(f32_bits(t.data[i]) >> 16);
    bf16 = cuda::DeviceBuffer<uint16_t>(bits);
    type = cuda::InputType::kBFloat16;
  }
  const void* data() const {
    return type == cuda::InputType::kBFloat16 ? static_cast<const void*>(bf16.data()) : f32.data();
  }
  const char* name() const { return type == cuda::InputType::kBFloat16 ? "BF16" : "FP32"; }
};

// ---- gpu-quant -------------------------------------------------------------------
struct GpuQuantOptions {
  std::string tensor;
  std::string name;
  QuantFlags quant;
  bool colwise = false;
  bool check = false;
  std::string dequant_out;
  std::string out;
};

void run_gpu_quant(const GpuQuantOptions& o) {
  require_gpu();
  const QuantConfig cfg = gpu_config(o.quant);
  note_input(o.tensor, "--tensor");
  const std::string out_temporary = o.out.empty() ? "" : reserve_quantized_output(o.out, "--out");
  const std::string dequant_temporary =
      o.dequant_out.empty() ? "" : reserve_npy_output(o.dequant_out, "--dequant-out", "gpu-quant");
  const io::Tensor t = io::read_tensor(o.tensor, o.name);
  const int64_t rows = t.rows(), cols = t.cols();
  try {
    cuda::validate_gpu_config(cfg, rows, cols);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const DeviceInput x(t);
  cuda::DeviceQuantized row = cuda::allocate_quantized(rows, cols, cfg);
  std::optional<cuda::DeviceQuantized> col;
  if (o.colwise) col = cuda::allocate_quantized(cols, rows, cfg);
  const auto start = std::chrono::steady_clock::now();
  try {
    cuda::quantize(x.data(), x.type, rows, cols, cfg, &row, col ? &*col : nullptr);
  } catch (const std::invalid_argument& e) {  // a shape the configuration cannot take (RHT16 axis)
    throw UsageError(e.what());
  }
  NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
  const double ms = elapsed_ms(start);
  fmt::print("{} [{} x {}] ({} on the device) on {}: {}\n", t.name, rows, cols, x.name(), cuda::device_name(),
             describe(cfg));
  fmt::print("  quantized in {:.3f} ms (wall clock, first call); row-wise {} bytes{}\n", ms, row.device_bytes(),
             col ? fmt::format(", column-wise {} bytes", col->device_bytes()) : "");
  const QuantizedTensor h = cuda::to_host(row);
  std::optional<QuantizedTensor> h_col;
  if (col) h_col = cuda::to_host(*col);
  fmt::print("  tensor scale S_enc {} g {}\n", h.tensor.encode, h.tensor.decode);
  if (!o.out.empty()) {
    std::vector<io::QuantizedEntry> entries{{"rowwise", false, h}};
    if (h_col) entries.push_back({"colwise", true, *h_col});
    io::write_quantized(out_temporary, entries);
    commit_output(o.out);
    fmt::print("  codes, block scales and tensor scale written to {}{}\n", o.out,
               h_col ? " ('rowwise', and the transposed tensor's 'colwise')" : " ('rowwise')");
  }
  if (o.check) {
    const QuantizedTensor want = golden_quantize(t, false, cfg);
    const io::QuantizedDiff d = io::diff_quantized(h, want);
    fmt::print("  row-wise vs golden: {}\n", d.same() ? "bit-exact" : "DIFFERS: " + io::describe(d, h, want));
    bool col_same = true;
    if (h_col) {
      const QuantizedTensor want_col = golden_quantize(t, true, cfg);
      const io::QuantizedDiff dc = io::diff_quantized(*h_col, want_col);
      col_same = dc.same();
      fmt::print("  column-wise vs golden: {}\n",
                 col_same ? "bit-exact" : "DIFFERS: " + io::describe(dc, *h_col, want_col));
    }
    if (!d.same() || !col_same) throw std::runtime_error("GPU quantization differs from golden");
  }
  if (!o.dequant_out.empty()) {
    cuda::DeviceBuffer<float> deq(t.data.size());
    cuda::dequantize(row, deq.data());
    const std::vector<float> host = deq.download();
    io::write_npy(dequant_temporary, {rows, cols}, host.data());
    commit_output(o.dequant_out);
    fmt::print("  dequantized tensor written to {}\n", o.dequant_out);
    // The dequantize kernel against golden's dequantize of the same codes and scales.
    if (o.check) report_check("GPU dequantization", host, dequantize(h), cols, "elements");
  }
}

// ---- gpu-gemm ---------------------------------------------------------------------
struct GpuGemmOptions {
  std::string a, b, a_quantized, b_quantized, a_name, b_name, out;
  QuantFlags quant;   // both operands, unless overridden below
  QuantFlags b_quant;  // --b-format etc.
  bool check = false;
};

// One GEMM operand: a tensor file, quantized on the device, or a
// quantized-tensor file, whose codes and scales the device takes as they are.
struct GemmOperand {
  std::optional<io::Tensor> tensor;
  std::optional<QuantizedTensor> quantized;
  std::string file;

  GemmOperand(const std::string& tensor_file, const std::string& quantized_file, const std::string& name,
              const char* side) {
    if (tensor_file.empty() == quantized_file.empty()) {
      throw UsageError(fmt::format("gpu-gemm takes --{0} FILE or --{0}-quantized FILE", side));
    }
    if (!tensor_file.empty()) {
      tensor = io::read_tensor(tensor_file, name);
      file = tensor_file;
    } else {
      quantized = read_quantized_operand(quantized_file, name, fmt::format("--{}-quantized", side));
      file = quantized_file;
    }
  }
  int64_t rows() const { return tensor ? tensor->rows() : quantized->rows; }
  int64_t cols() const { return tensor ? tensor->cols() : quantized->cols; }

  // The operand in device storage, quantized under cfg if it is a tensor;
  // `from` says what the device took.
  cuda::DeviceQuantized to_device(const QuantConfig& cfg, std::string* from) const {
    try {
      if (quantized) {
        *from = "quantized file";
        return cuda::to_device(*quantized);
      }
      cuda::DeviceQuantized q = cuda::allocate_quantized(rows(), cols(), cfg);
      const DeviceInput in(*tensor);  // freed here: the GEMM holds only the quantized operands
      cuda::quantize(in.data(), in.type, rows(), cols(), cfg, &q, nullptr);
      *from = fmt::format("{} in", in.name());
      return q;
    } catch (const std::invalid_argument& e) {  // a configuration or shape the device path cannot take
      throw UsageError(fmt::format("{}: {}", file, e.what()));
    }
  }
};

void run_gpu_gemm(const GpuGemmOptions& o, const CLI::App& cmd, const std::vector<CLI::Option*>& quant_options) {
  require_gpu();
  const QuantConfig ca = gpu_config(o.quant);
  QuantConfig cb = ca;
  const QuantConfig b_override = gpu_config(o.b_quant);
  if (cmd.count("--b-format") != 0) cb.format = b_override.format;
  if (cmd.count("--b-block") != 0) cb.block = b_override.block;
  if (cmd.count("--b-scale") != 0) cb.scale = b_override.scale;
  if (cmd.count("--b-rounding") != 0) cb.rounding = b_override.rounding;
  for (const auto& [file, option] : {std::pair{o.a, "--a"}, std::pair{o.b, "--b"},
                                      std::pair{o.a_quantized, "--a-quantized"},
                                      std::pair{o.b_quantized, "--b-quantized"}}) {
    note_input(file, option);
  }
  const std::string out_temporary = o.out.empty() ? "" : reserve_npy_output(o.out, "--out", "gpu-gemm");
  const GemmOperand a(o.a, o.a_quantized, o.a_name, "a");
  const GemmOperand b(o.b, o.b_quantized, o.b_name, "b");
  if (a.quantized && b.quantized) {
    for (const CLI::Option* opt : quant_options) {
      if (opt->count() != 0) {
        throw UsageError(opt->get_name() + " quantizes a tensor, but both operands are quantized files");
      }
    }
  }
  if (a.cols() != b.cols()) {
    throw UsageError(fmt::format("A [{} x {}] and B [{} x {}] must share the last (contraction) axis", a.rows(),
                                 a.cols(), b.rows(), b.cols()));
  }
  const int64_t m = a.rows(), n = b.rows(), k = a.cols();
  checked_elements({m, n}, limits::kMaxWorkElements, "C [M x N]");
  std::string a_in, b_in;
  const cuda::DeviceQuantized qa = a.to_device(ca, &a_in);
  const cuda::DeviceQuantized qb = b.to_device(cb, &b_in);
  cuda::DeviceBuffer<float> c(static_cast<size_t>(m * n));
  const auto start = std::chrono::steady_clock::now();
  try {
    cuda::gemm(qa, qb, c.data());
  } catch (const std::invalid_argument& e) {  // operands golden's contract cannot pair (their RHT)
    throw UsageError(e.what());
  }
  NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
  const double ms = elapsed_ms(start);
  const std::vector<float> result = c.download();
  fmt::print("C [{} x {}] = A [{} x {}] ({}, {}) * B [{} x {}]^T ({}, {}) on {} in {:.3f} ms (wall clock, "
             "first call)\n",
             m, n, m, k, describe(qa.config), a_in, n, k, describe(qb.config), b_in, cuda::device_name(), ms);
  if (o.check) report_check("GPU GEMM", result, gemm(cuda::to_host(qa), cuda::to_host(qb)), n, "outputs");
  if (!o.out.empty()) {
    io::write_npy(out_temporary, {m, n}, result.data());
    commit_output(o.out);
    fmt::print("  C written to {}\n", o.out);
  }
}

}  // namespace

void add_kernel_commands(CLI::App& app) {
  {
    auto opts = std::make_shared<GpuQuantOptions>();
    CLI::App* cmd = app.add_subcommand("gpu-quant", "Quantize a tensor (.npy/.safetensors) with the GPU kernels");
    cmd->add_option("--tensor", opts->tensor, "input tensor file (.npy or .safetensors)")->required();
    cmd->add_option("--name", opts->name, "tensor name inside a .safetensors file");
    opts->quant.add_to(cmd, "", "0 (off) or 16");
    cmd->add_flag("--colwise", opts->colwise, "also quantize the transposed tensor in the same pass");
    cmd->add_flag("--check", opts->check,
                  "compare with the golden model bit for bit, with --dequant-out the dequantized tensor too (exit 1 "
                  "if different)");
    cmd->add_option("--dequant-out", opts->dequant_out, "write the dequantized tensor to this .npy file");
    cmd->add_option("--out", opts->out,
                    "write the codes, block scales and tensor scale to this .safetensors file (golden-quant --check "
                    "reads it)")
        ->type_name("FILE");
    cmd->callback([opts] { run_gpu_quant(*opts); });
  }
  {
    auto opts = std::make_shared<GpuGemmOptions>();
    CLI::App* cmd = app.add_subcommand("gpu-gemm", "C = A * B^T with the bit-exact block-scaled GEMM on the GPU");
    CLI::Option* a = cmd->add_option("--a", opts->a, "A [M, K] tensor file (.npy or .safetensors)");
    CLI::Option* b = cmd->add_option("--b", opts->b, "B [N, K] tensor file");
    cmd->add_option("--a-quantized", opts->a_quantized,
                    "A as a quantized-tensor file (golden-quant, gpu-quant --out), taken as it is")
        ->type_name("FILE")
        ->excludes(a);
    cmd->add_option("--b-quantized", opts->b_quantized, "B as a quantized-tensor file")->type_name("FILE")->excludes(b);
    cmd->add_option("--a-name", opts->a_name, "tensor name of A inside a .safetensors file (or quantized file)");
    cmd->add_option("--b-name", opts->b_name, "tensor name of B inside a .safetensors file (or quantized file)");
    std::vector<CLI::Option*> quant = opts->quant.add_to(cmd, "", "0 (off) or 16");
    for (CLI::Option* opt : opts->b_quant.add_to(cmd, "b-")) quant.push_back(opt);
    cmd->add_option("--out", opts->out, "write C to this .npy file");
    cmd->add_flag("--check", opts->check, "compare with golden gemm bit for bit (exit 1 if different)");
    cmd->callback([opts, cmd, quant] { run_gpu_gemm(*opts, *cmd, quant); });
  }
  {
    auto opts = std::make_shared<cuda::bench::BenchOptions>();
    auto shapes = std::make_shared<std::vector<int64_t>>();
    auto json = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("bench-kernels", "Benchmark the GPU kernels against cudaMemcpy and cuBLAS");
    constexpr int64_t kMaxSize = INT32_MAX;
    cmd->add_option("--quant-rows", opts->quant_rows, "rows of the quantize benchmark tensor")
        ->check(CLI::Range(int64_t{1}, kMaxSize))
        ->capture_default_str();
    cmd->add_option("--quant-cols", opts->quant_cols, "cols of the quantize benchmark tensor")
        ->check(CLI::Range(int64_t{1}, kMaxSize))
        ->capture_default_str();
    cmd->add_option("--gemm", *shapes,
                    "GEMM shapes as M N K triples (default: 8192 8192 8192 4096 4096 16384 1024 1024 16384)");
    cmd->add_option("--warmup", opts->warmup, "untimed calls before each measurement")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    cmd->add_option("--iterations", opts->iterations, "timed calls per measurement (a row's time is their mean)")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    cmd->add_option("--json", *json, "also write every row, the device and the settings as JSON (nibble bench-compare "
                                     "reads it)")
        ->type_name("FILE");
    cmd->callback([opts, shapes, json] {
      if (!shapes->empty()) {
        if (shapes->size() % 3 != 0) throw UsageError("--gemm takes M N K triples");
        opts->gemm_shapes.clear();
        for (size_t i = 0; i < shapes->size(); i += 3) {
          const std::array<int64_t, 3> s{(*shapes)[i], (*shapes)[i + 1], (*shapes)[i + 2]};
          if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0) {
            throw UsageError(fmt::format("--gemm: {} x {} x {} is not a GEMM shape (every size must be positive)",
                                         s[0], s[1], s[2]));
          }
          opts->gemm_shapes.push_back(s);
        }
      }
      std::ofstream json_file = open_output(*json, "--json");
      require_gpu();
      io::KernelBenchRun run = cuda::bench::run_kernel_benchmark(*opts, std::cout);
      run.command = command_line();
      if (json_file.is_open()) {
        json_file << io::kernel_bench_json(run);
        finish_output(json_file, *json);
        std::cout << "\nwrote " << *json << " (" << run.rows.size() << " rows)\n";
      }
      // Written first: the file lists the failures beside every row that was timed.
      if (!run.failures.empty()) throw std::runtime_error(run.failures.front());
    });
  }
}

}  // namespace nibble::cli
