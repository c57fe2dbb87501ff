// `nibble bench-kernels` (see kernel_benchmark.h). Calls the library's
// kernels through its public API: there is no second copy of any kernel here,
// only the yardsticks (cudaMemcpy, cuBLAS) and a data generator.
#include "kernel_benchmark.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include "nibble/cuda/check.h"
#include "nibble/cuda/device_buffer.h"
#include "nibble/cuda/gemm.h"
#include "nibble/cuda/quantize.h"
#include "nibble/dot.h"
#include "nibble/fp32.h"

namespace nibble::cuda::bench {

// cuBLAS is opened when a GEMM benchmark first needs it, not linked: loading
// libcublasLt (half a gigabyte) at start-up would cost every `nibble` command
// about 0.4 s on a machine with the toolkit, GPU or none.
const CublasApi& cublas() {
  static const CublasApi api = [] {
    void* lib = nullptr;
    std::string tried;
    for (const char* name : {NIBBLE_CUBLAS_SONAME, NIBBLE_CUBLAS_PATH}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
      const char* why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (why != nullptr ? why : name);
    }
    if (lib == nullptr) throw CudaError("cuBLAS, the GEMM benchmark's yardstick, cannot be loaded: " + tried);
    auto symbol = [lib](const char* name) {
      void* f = dlsym(lib, name);
      if (f == nullptr) throw CudaError(std::string("cuBLAS has no ") + name);
      return f;
    };
    CublasApi a;
    a.create = reinterpret_cast<decltype(a.create)>(symbol("cublasCreate_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(symbol("cublasDestroy_v2"));
    a.gemm_ex = reinterpret_cast<decltype(a.gemm_ex)>(symbol("cublasGemmEx"));
    a.status_string = reinterpret_cast<decltype(a.status_string)>(symbol("cublasGetStatusString"));
    a.get_property = reinterpret_cast<decltype(a.get_property)>(symbol("cublasGetProperty"));
    return a;
  }();
  return api;
}

namespace {

void check_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " +
                  cublas().status_string(status));
}
#define NIBBLE_CUBLAS_CHECK(call) check_cublas((call), #call, __FILE__, __LINE__)

// Gaussian-like test data (sum of four uniforms, centred), scaled per 16x16
// region by 2^(0..7) so block scales differ, and all of it by `gain` (a power
// of two); deterministic in (seed, index). T = uint16_t stores BF16 bit
// patterns: the float's top half (rounded toward zero).
template <typename T>
__global__ void fill_test_data_kernel(T* x, int64_t rows, int64_t cols, uint32_t seed, float gain) {
  const int64_t n = rows * cols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B9u ^ seed ^ static_cast<uint32_t>(i >> 32) * 0x85EBCA6Bu;
    float sum = 0.0f;
    for (int j = 0; j < 4; ++j) {
      h ^= h >> 16;
      h *= 0x7FEB352Du;
      h ^= h >> 15;
      h *= 0x846CA68Bu;
      h ^= h >> 16;
      sum += static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
    }
    const int64_t region = ((i / cols) / 16) * 7 + (i % cols) / 16;
    const float v = (sum - 2.0f) * 1.7320508f * static_cast<float>(1 << (region % 8)) * gain;
    if constexpr (sizeof(T) == 2) {
      x[i] = static_cast<T>(__float_as_uint(v) >> 16);
    } else {
      x[i] = v;
    }
  }
}

template <typename T>
void fill_test_data(T* x, int64_t rows, int64_t cols, uint32_t seed, int gain_exp2 = 0) {
  fill_test_data_kernel<<<1024, 256>>>(x, rows, cols, seed, std::ldexp(1.0f, gain_exp2));
  NIBBLE_CUDA_CHECK_LAUNCH("fill_test_data_kernel");
}

// Mean milliseconds per call of f over `iterations` calls after `warmup`.
template <class F>
double time_ms(F&& f, int warmup, int iterations) {
  for (int i = 0; i < warmup; ++i) f();
  cudaEvent_t start, stop;
  NIBBLE_CUDA_CHECK(cudaEventCreate(&start));
  NIBBLE_CUDA_CHECK(cudaEventCreate(&stop));
  NIBBLE_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < iterations; ++i) f();
  NIBBLE_CUDA_CHECK(cudaEventRecord(stop));
  NIBBLE_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  NIBBLE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  NIBBLE_CUDA_CHECK(cudaEventDestroy(start));
  NIBBLE_CUDA_CHECK(cudaEventDestroy(stop));
  return static_cast<double>(ms) / iterations;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

size_t free_device_bytes() {
  size_t free_bytes = 0, total = 0;
  NIBBLE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

// Which outputs a quantize call writes: the row-wise one, the column-wise one
// (x^T quantized: what a GEMM that contracts over x's rows takes), or both.
enum class Outputs { kRow, kColumn, kBoth };
bool has_row(Outputs w) { return w != Outputs::kColumn; }
bool has_column(Outputs w) { return w != Outputs::kRow; }

// Validates a configuration before it is timed: the first `rows` rows of x
// ([rows_total, cols], row-major, FP32 or BF16) quantized on the device in the
// requested directions, compared with golden (of the values as floats) in full.
void validate_quantize(const void* dx, InputType type, int64_t rows, int64_t cols, const QuantConfig& cfg,
                       Outputs outputs, const std::string& label) {
  std::vector<float> host(static_cast<size_t>(rows * cols));
  if (type == InputType::kBFloat16) {
    std::vector<uint16_t> bits(host.size());
    NIBBLE_CUDA_CHECK(cudaMemcpy(bits.data(), dx, bits.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bits.size(); ++i) host[i] = f32_from_bf16_bits(bits[i]);
  } else {
    NIBBLE_CUDA_CHECK(cudaMemcpy(host.data(), dx, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  DeviceQuantized row;
  DeviceQuantized col;
  if (has_row(outputs)) row = allocate_quantized(rows, cols, cfg);
  if (has_column(outputs)) col = allocate_quantized(cols, rows, cfg);
  quantize(dx, type, rows, cols, cfg, has_row(outputs) ? &row : nullptr, has_column(outputs) ? &col : nullptr);
  auto same = [](const QuantizedTensor& a, const QuantizedTensor& b) {
    return a.codes == b.codes && a.scales == b.scales && f32_bits(a.tensor.decode) == f32_bits(b.tensor.decode);
  };
  if (has_row(outputs) && !same(to_host(row), nibble::quantize(host.data(), rows, cols, cfg))) {
    throw std::runtime_error("bench-kernels: " + label + " row-wise differs from golden");
  }
  if (has_column(outputs)) {
    std::vector<float> t(host.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = host[static_cast<size_t>(r * cols + c)];
    if (!same(to_host(col), nibble::quantize(t.data(), cols, rows, cfg))) {
      throw std::runtime_error("bench-kernels: " + label + " column-wise differs from golden");
    }
  }
}

struct QuantRecipe {
  const char* name;
  Format format;
  BlockShape block;
  ScaleMode scale;
  Rounding rounding;
  int rht;
  Outputs outputs;
};

// The quantize recipes on one input type (FP32 or BF16), against a copy of
// that input's bytes.
void bench_quantize(const BenchOptions& o, InputType type, std::ostream& out, io::KernelBenchRun& run) {
  const int64_t rows = o.quant_rows, cols = o.quant_cols;
  const bool bf16 = type == InputType::kBFloat16;
  const size_t in_bytes = static_cast<size_t>(rows * cols) * (bf16 ? sizeof(uint16_t) : sizeof(float));
  DeviceBuffer<uint8_t> x(in_bytes);
  DeviceBuffer<uint8_t> copy(in_bytes);
  if (bf16) {
    fill_test_data(reinterpret_cast<uint16_t*>(x.data()), rows, cols, 1u);
  } else {
    fill_test_data(reinterpret_cast<float*>(x.data()), rows, cols, 1u);
  }

  // Yardstick: a device-to-device copy reads and writes in_bytes each.
  const double copy_ms = time_ms(
      [&] { NIBBLE_CUDA_CHECK(cudaMemcpyAsync(copy.data(), x.data(), in_bytes, cudaMemcpyDeviceToDevice)); },
      o.warmup, o.iterations);
  const double copy_gbs = 2.0 * static_cast<double>(in_bytes) / (copy_ms * 1e-3) / 1e9;
  out << format("\nquantize: %s [%lld, %lld] (%.0f MiB in)\n", bf16 ? "BF16" : "FP32", static_cast<long long>(rows),
                static_cast<long long>(cols), mib(static_cast<double>(in_bytes)));
  out << format("  %-44s %9.3f ms %8.0f GB/s  (bytes read + written)\n", "cudaMemcpy D2D of the input", copy_ms,
                copy_gbs);
  io::KernelBenchRow row_of_run;
  row_of_run.section = "quantize";
  row_of_run.input = bf16 ? "bf16" : "fp32";
  row_of_run.shape = {rows, cols};
  {
    io::KernelBenchRow copy_row = row_of_run;
    copy_row.kind = "yardstick";
    copy_row.name = "cudaMemcpy D2D of the input";
    copy_row.ms = copy_ms;
    copy_row.rate = copy_gbs;
    copy_row.vs_baseline = 1.0;
    run.rows.push_back(copy_row);
  }
  out << format("  %-44s %9s    %8s %9s %9s %8s\n", "recipe", "time", "GB/s", "vs copy", "vs noRHT", "extra MiB");

  const QuantRecipe recipes[] = {
      {"e2m1 1x16 nvfp4 SR RHT16 (slowest)", Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4, Rounding::kStochastic,
       16, Outputs::kRow},
      {"e2m1 1x16 nvfp4 SR", Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4, Rounding::kStochastic, 0,
       Outputs::kRow},
      {"e2m1 1x16 nvfp4 RNE", Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4, Rounding::kNearestEven, 0,
       Outputs::kRow},
      {"e2m1 1x32 mx-floor SR RHT16", Format::kE2M1, BlockShape::k1x32, ScaleMode::kMXFloor, Rounding::kStochastic, 16,
       Outputs::kRow},
      {"e2m1 1x32 mx-floor SR", Format::kE2M1, BlockShape::k1x32, ScaleMode::kMXFloor, Rounding::kStochastic, 0,
       Outputs::kRow},
      {"e2m1 1x16 fp32 SR RHT16", Format::kE2M1, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kStochastic, 16,
       Outputs::kRow},
      {"e2m1 1x16 fp32 SR", Format::kE2M1, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kStochastic, 0,
       Outputs::kRow},
      {"e2m1 1x16 nvfp4 SR RHT16 row+col", Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4, Rounding::kStochastic,
       16, Outputs::kBoth},
      {"e2m1 1x16 nvfp4 SR row+col", Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4, Rounding::kStochastic, 0,
       Outputs::kBoth},
      // The UFP4 recipes' own quantizations (train/src/recipe.cpp): uniform
      // grids, 1x16 blocks, FP32 scales, RHT16; SR for dY, RNE for X and W.
      {"e1m2 1x16 fp32 SR RHT16 (ufp4 dY)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kStochastic,
       16, Outputs::kRow},
      {"e1m2 1x16 fp32 SR", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kStochastic, 0,
       Outputs::kRow},
      {"e1m2 1x16 fp32 RNE RHT16 (ufp4 X, W)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32,
       Rounding::kNearestEven, 16, Outputs::kRow},
      {"e1m2 1x16 fp32 RNE", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kNearestEven, 0,
       Outputs::kRow},
      {"int4 1x16 fp32 SR RHT16 (ufp4-int4 dY)", Format::kInt4, BlockShape::k1x16, ScaleMode::kFP32,
       Rounding::kStochastic, 16, Outputs::kRow},
      {"int4 1x16 fp32 SR", Format::kInt4, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kStochastic, 0,
       Outputs::kRow},
      {"e1m2 1x16 fp32 SR RHT16 row+col (ufp4 dY)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32,
       Rounding::kStochastic, 16, Outputs::kBoth},
      {"e1m2 1x16 fp32 SR row+col", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32, Rounding::kStochastic, 0,
       Outputs::kBoth},
      {"e1m2 1x16 fp32 RNE RHT16 row+col (ufp4 X)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32,
       Rounding::kNearestEven, 16, Outputs::kBoth},
      // The column-wise output alone, as the training harness quantizes the
      // operands of dW = dY^T X (each GEMM operand by a call of its own).
      {"e1m2 1x16 fp32 SR RHT16 col (ufp4 dY, dW)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32,
       Rounding::kStochastic, 16, Outputs::kColumn},
      {"e1m2 1x16 fp32 RNE RHT16 col (ufp4 X, dW)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32,
       Rounding::kNearestEven, 16, Outputs::kColumn},
  };
  double previous_rht_ms = 0.0;
  for (const QuantRecipe& r : recipes) {
    QuantConfig cfg;
    cfg.format = r.format;
    cfg.block = r.block;
    cfg.scale = r.scale;
    cfg.rounding = r.rounding;
    cfg.rht = RhtConfig{r.rht, false};
    cfg.seed = 42;
    validate_quantize(x.data(), type, std::min<int64_t>(rows, 256), cols, cfg, r.outputs, r.name);
    DeviceQuantized row;
    DeviceQuantized col;
    if (has_row(r.outputs)) row = allocate_quantized(rows, cols, cfg);
    if (has_column(r.outputs)) col = allocate_quantized(cols, rows, cfg);
    DeviceQuantized* row_out = has_row(r.outputs) ? &row : nullptr;
    DeviceQuantized* col_out = has_column(r.outputs) ? &col : nullptr;
    const size_t before = free_device_bytes();
    const double ms =
        time_ms([&] { quantize(x.data(), type, rows, cols, cfg, row_out, col_out); }, o.warmup, o.iterations);
    const size_t after = free_device_bytes();
    // The minimum traffic of the operation: the input read once, every output written once.
    const double bytes = static_cast<double>(in_bytes) + static_cast<double>(row.device_bytes()) +
                         static_cast<double>(col.device_bytes());
    const double gbs = bytes / (ms * 1e-3) / 1e9;
    const bool has_rht = r.rht != 0;
    io::KernelBenchRow row_result = row_of_run;
    row_result.kind = "kernel";
    row_result.name = r.name;
    row_result.recipe = r.name;
    row_result.library_default = true;
    row_result.ms = ms;
    row_result.rate = gbs;
    row_result.vs_baseline = gbs / copy_gbs;
    row_result.device_mib = mib(static_cast<double>(before) - static_cast<double>(after));
    std::string vs_no_rht = "";
    if (has_rht) {
      previous_rht_ms = ms;
    } else if (previous_rht_ms > 0.0) {
      row_result.vs_no_rht = previous_rht_ms / ms;
      vs_no_rht = format("%.3fx", *row_result.vs_no_rht);
      previous_rht_ms = 0.0;
    }
    out << format("  %-44s %9.3f ms %8.0f %8.2fx %9s %8.1f\n", r.name, ms, gbs, row_result.vs_baseline,
                  vs_no_rht.c_str(), *row_result.device_mib);
    run.rows.push_back(row_result);
  }
  out << "  (vs noRHT: time of the RHT16 recipe above / this one; extra MiB: device memory taken during the calls)\n";
}

struct GemmShape {
  int64_t m;
  int64_t n;
  int64_t k;
};

// The CUDA-core work the bit-exact contract cannot avoid: one binary32 add per
// output per k-block, in k order (acc = fl(acc + r)). This kernel does only
// that, with nothing loaded and no tensor-core work, over the same 128 x 128
// CTA tiles as the mma.sync GEMM (128 independent accumulators per thread, two CTAs per
// SM), so its time bounds from below any GEMM that keeps the contract on the
// CUDA cores of this GPU.
__global__ void __launch_bounds__(128, 2) per_block_adds_kernel(float* c, int64_t m, int64_t n, int64_t k_blocks) {
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = __uint_as_float(0x3F800000u + threadIdx.x * 128u + static_cast<uint32_t>(i));
  for (int64_t b = 0; b < k_blocks; ++b) {
    const float r = __uint_as_float(0x3A800000u + static_cast<uint32_t>(b & 0xFFFF));  // varies: nothing to hoist
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = __fadd_rn(acc[i], r);
  }
  const int64_t row = static_cast<int64_t>(blockIdx.y) * 128 + threadIdx.x;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * 128;
  if (row >= m) return;
#pragma unroll
  for (int i = 0; i < 128; ++i) {
    if (col0 + i < n) c[row * n + col0 + i] = acc[i];
  }
}

double per_block_adds_ms(const GemmShape& s, int block, float* c, const BenchOptions& o) {
  const dim3 grid(static_cast<unsigned>((s.n + 127) / 128), static_cast<unsigned>((s.m + 127) / 128));
  const int64_t k_blocks = (s.k + block - 1) / block;
  return time_ms(
      [&] {
        per_block_adds_kernel<<<grid, 128>>>(c, s.m, s.n, k_blocks);
        NIBBLE_CUDA_CHECK_LAUNCH("per_block_adds_kernel");
      },
      o.warmup, o.iterations);
}

struct GemmRecipe {
  const char* name;
  Format format;
  BlockShape block;
  ScaleMode scale;
  int b_gain_exp2 = 0;  // B's data times 2^this, as a gradient's might be
};

// C = A * B^T with A [M, K], B [N, K] row-major and C [M, N] row-major, in
// cuBLAS's column-major terms: C^T [N, M] = B [N, K] * A^T.
void cublas_bf16_gemm(cublasHandle_t h, const uint16_t* a, const uint16_t* b, float* c, int64_t m, int64_t n,
                      int64_t k) {
  const float alpha = 1.0f, beta = 0.0f;
  NIBBLE_CUBLAS_CHECK(cublas().gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                   static_cast<int>(k), &alpha, b, CUDA_R_16BF, static_cast<int>(k), a, CUDA_R_16BF,
                                   static_cast<int>(k), &beta, c, CUDA_R_32F, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

void bench_gemm(const BenchOptions& o, const GemmShape& s, std::ostream& out, io::KernelBenchRun& result) {
  std::vector<std::string>& failures = result.failures;
  io::KernelBenchRow row_of_shape;
  row_of_shape.section = "gemm";
  row_of_shape.shape = {s.m, s.n, s.k};
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  auto add_row = [&](const char* kind, std::string name, double ms, double vs_cublas,
                     std::optional<double> device_mib) {
    io::KernelBenchRow row = row_of_shape;
    row.kind = kind;
    row.name = std::move(name);
    row.ms = ms;
    row.rate = flops / (ms * 1e-3) / 1e12;
    row.vs_baseline = vs_cublas;
    row.device_mib = device_mib;
    result.rows.push_back(row);
    return &result.rows.back();  // valid until the next row is added
  };
  out << format("\nGEMM C[%lld, %lld] = A[%lld, %lld] * B[%lld, %lld]^T, FP32 out\n", static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.m), static_cast<long long>(s.k),
                static_cast<long long>(s.n), static_cast<long long>(s.k));
  cublasHandle_t handle;
  NIBBLE_CUBLAS_CHECK(cublas().create(&handle));
  const GemmRecipe recipes[] = {
      {"e2m1 1x16 nvfp4", Format::kE2M1, BlockShape::k1x16, ScaleMode::kNVFP4},
      {"e2m1 1x32 mx-floor", Format::kE2M1, BlockShape::k1x32, ScaleMode::kMXFloor},
      // B's scale codes below its fold range (the wgmma kernel folds A's instead).
      {"e2m1 1x32 mx-floor, B x 2^-24", Format::kE2M1, BlockShape::k1x32, ScaleMode::kMXFloor, -24},
      {"e2m1 1x16 fp32", Format::kE2M1, BlockShape::k1x16, ScaleMode::kFP32},
      // The UFP4 recipes' GEMM operands (train/src/recipe.cpp: 1x16 blocks, FP32 scales).
      {"e1m2 1x16 fp32 (ufp4)", Format::kE1M2, BlockShape::k1x16, ScaleMode::kFP32},
      {"int4 1x16 fp32 (ufp4-int4)", Format::kInt4, BlockShape::k1x16, ScaleMode::kFP32},
  };
  out << format("  %-80s %9s %9s %9s %10s %8s\n", "path", "time ms", "TFLOP/s", "vs cuBLAS", "device MiB", "tile");
  bool cublas_done = false;
  double cublas_ms = 0.0;
  // The wgmma kernel's workspace for the rows that take one, zeroed once: every call leaves its flags zero.
  DeviceBuffer<uint8_t> workspace(gemm_workspace_bytes());
  NIBBLE_CUDA_CHECK(cudaMemset(workspace.data(), 0, workspace.bytes()));
  for (const GemmRecipe& r : recipes) {
    QuantConfig cfg;
    cfg.format = r.format;
    cfg.block = r.block;
    cfg.scale = r.scale;
    DeviceQuantized qa = allocate_quantized(s.m, s.k, cfg);
    DeviceQuantized qb = allocate_quantized(s.n, s.k, cfg);
    {
      DeviceBuffer<float> a(static_cast<size_t>(s.m * s.k));
      DeviceBuffer<float> b(static_cast<size_t>(s.n * s.k));
      fill_test_data(a.data(), s.m, s.k, 7u);
      fill_test_data(b.data(), s.n, s.k, 8u, r.b_gain_exp2);
      quantize(a.data(), InputType::kFloat32, s.m, s.k, cfg, &qa, nullptr);
      quantize(b.data(), InputType::kFloat32, s.n, s.k, cfg, &qb, nullptr);
      NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
    }  // the FP32 inputs are freed: the GEMM sees only the quantized operands
    DeviceBuffer<float> c(static_cast<size_t>(s.m * s.n));

    // Every kernel that applies to this recipe (the wgmma kernel runs the mma.sync kernel where it
    // does not, and is then not timed twice), on its own tiles, and the wgmma kernel on each of
    // its other tile shapes too (128 x 128, 128 x 64, and 64 x 128 on the operands swapped), so
    // that every row shows what kAuto's choice gains: validate sampled outputs against golden
    // dot_rows, then time.
    const QuantizedTensor ha = to_host(qa), hb = to_host(qb);
    // The wgmma kernel with a workspace (GemmWorkspace) too: its ordered split, B decoded once.
    struct Run {
      GemmKernel kernel;
      GemmTiles tiles;
      double ms;
      bool workspace = false;
    };
    std::vector<Run> runs;
    for (GemmKernel kernel : kAllGemmKernels) {
      if (gemm_kernel_for(qa, qb, kernel) != kernel) continue;
      runs.push_back({kernel, GemmTiles::kAuto, 0.0});
      const std::string own = gemm_tile_shape(qa, qb, kernel);
      if (kernel == GemmKernel::kWgmma) runs.push_back({kernel, GemmTiles::kAuto, 0.0, true});
      for (GemmTiles tiles : {GemmTiles::kFull, GemmTiles::kHalf, GemmTiles::kWide}) {
        if (own != gemm_tile_shape(qa, qb, kernel, tiles)) runs.push_back({kernel, tiles, 0.0});
      }
    }
    for (Run& run : runs) {
      const GemmKernel kernel = run.kernel;
      // A kernel that fails (differs from golden, or a CUDA error) is reported
      // and left untimed, and the other kernels still run; the benchmark
      // throws at the end (run_kernel_benchmark).
      try {
        const GemmWorkspace ws = run.workspace ? GemmWorkspace{workspace.data(), workspace.bytes()} : GemmWorkspace{};
        NIBBLE_CUDA_CHECK(cudaMemset(c.data(), 0xFF, c.bytes()));  // no stale result can pass
        gemm(qa, qb, c.data(), nullptr, kernel, run.tiles, ws);
        const std::vector<float> got = c.download();
        std::mt19937_64 rng(5);
        for (int i = 0; i < 256; ++i) {
          const int64_t m = static_cast<int64_t>(rng() % static_cast<uint64_t>(s.m));
          const int64_t n = static_cast<int64_t>(rng() % static_cast<uint64_t>(s.n));
          const float want = dot_rows(ha, m, hb, n);
          const float have = got[static_cast<size_t>(m * s.n + n)];
          if (f32_bits(want) != f32_bits(have)) {
            throw std::runtime_error(format(
                "GEMM %s (%s tiles) %s differs from golden at (%lld, %lld): got 0x%08x want 0x%08x", name(kernel),
                gemm_tile_shape(qa, qb, kernel, run.tiles, run.workspace), r.name, static_cast<long long>(m),
                static_cast<long long>(n), f32_bits(have), f32_bits(want)));
          }
        }
        const size_t before = free_device_bytes();
        run.ms = time_ms([&] { gemm(qa, qb, c.data(), nullptr, kernel, run.tiles, ws); }, o.warmup, o.iterations);
        const size_t after = free_device_bytes();
        if (after < before) throw std::runtime_error(std::string("GEMM ") + name(kernel) + " allocated device memory");
      } catch (const std::exception& e) {
        failures.push_back(std::string("bench-kernels: ") + e.what());
        out << "  FAILED (not timed): " << e.what() << "\n";
      }
    }
    const double ours_mib = mib(static_cast<double>(qa.device_bytes() + qb.device_bytes() + c.bytes()));

    // The emulation: dequantize both operands to BF16, then cuBLAS.
    DeviceBuffer<uint16_t> a16(static_cast<size_t>(s.m * s.k));
    DeviceBuffer<uint16_t> b16(static_cast<size_t>(s.n * s.k));
    const double emu_ms = time_ms(
        [&] {
          dequantize_bf16(qa, a16.data());
          dequantize_bf16(qb, b16.data());
          cublas_bf16_gemm(handle, a16.data(), b16.data(), c.data(), s.m, s.n, s.k);
        },
        o.warmup, o.iterations);
    if (!cublas_done) {
      cublas_ms = time_ms([&] { cublas_bf16_gemm(handle, a16.data(), b16.data(), c.data(), s.m, s.n, s.k); }, o.warmup,
                          o.iterations);
      const double cublas_mib = mib(static_cast<double>(a16.bytes() + b16.bytes() + c.bytes()));
      out << format("  %-80s %9.3f %9.1f %8.2fx %10.0f\n", "cuBLAS BF16 (FP32 accumulate)", cublas_ms,
                    flops / (cublas_ms * 1e-3) / 1e12, 1.0, cublas_mib);
      add_row("yardstick", "cuBLAS BF16 (FP32 accumulate)", cublas_ms, 1.0, cublas_mib);
      cublas_done = true;
      for (int block : {16, 32}) {
        const double t = per_block_adds_ms(s, block, c.data(), o);
        const std::string bound = format("bound: the contract's adds alone, %d-wide blocks", block);
        out << format("  %-80s %9.3f %9.1f %8.2fx %10s\n", bound.c_str(), t, flops / (t * 1e-3) / 1e12,
                      cublas_ms / t, "-");
        add_row("bound", bound, t, cublas_ms / t, std::nullopt);
      }
    }
    const double emu_mib = ours_mib + mib(static_cast<double>(a16.bytes() + b16.bytes()));
    for (const Run& run : runs) {
      const double t = run.ms;
      if (t <= 0.0) continue;  // failed above
      const std::string path =
          std::string("bit-exact ") + name(run.kernel) + " " + r.name + (run.workspace ? " (workspace)" : "");
      const std::string datapath = gemm_datapath(qa, qb, run.kernel, run.tiles);
      const std::string label = path + " [" + datapath + "]";
      const char* tile = gemm_tile_shape(qa, qb, run.kernel, run.tiles, run.workspace);
      out << format("  %-80s %9.3f %9.1f %8.2fx %10.0f %8s\n", label.c_str(), t, flops / (t * 1e-3) / 1e12,
                    cublas_ms / t, ours_mib, tile);
      io::KernelBenchRow* row = add_row("kernel", path, t, cublas_ms / t, ours_mib);
      row->recipe = r.name;
      row->library_default = run.tiles == GemmTiles::kAuto && !run.workspace &&
                             run.kernel == gemm_kernel_for(qa, qb, kDefaultGemmKernel);
      row->tiles = run.tiles == GemmTiles::kAuto ? "auto" : tile;  // a forced shape runs as asked
      row->tile = tile;
      row->datapath = datapath;
    }
    const std::string emulation = std::string("emulation ") + r.name + " (dequant+cuBLAS)";
    out << format("  %-80s %9.3f %9.1f %8.2fx %10.0f\n", emulation.c_str(), emu_ms, flops / (emu_ms * 1e-3) / 1e12,
                  cublas_ms / emu_ms, emu_mib);
    add_row("emulation", emulation, emu_ms, cublas_ms / emu_ms, emu_mib)->recipe = r.name;
  }
  out << "  (bound: one FP32 add per output per k-block and nothing else, no loads, no tensor cores:\n"
         "   no GEMM that keeps the contract on this GPU's CUDA cores can be faster)\n";
  out << "  (device MiB: operands + output each path holds; cuBLAS's own workspace not counted;\n"
         "   the bit-exact GEMM allocates nothing per call: free device memory is checked unchanged;\n"
         "   the wgmma kernel's FMA check takes its 4-byte verdict from a memory pool the library keeps per device)\n";
  NIBBLE_CUBLAS_CHECK(cublas().destroy(handle));
}

}  // namespace

io::KernelBenchRun run_kernel_benchmark(const BenchOptions& options, std::ostream& out) {
  io::KernelBenchRun run;
  run.options = options;
  int device = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  NIBBLE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  run.device.name = device_name();
  run.device.sm_count = prop.multiProcessorCount;
  run.device.compute_major = prop.major;
  run.device.compute_minor = prop.minor;
  run.device.memory_mib = static_cast<int64_t>(prop.totalGlobalMem / (1024 * 1024));
  NIBBLE_CUDA_CHECK(cudaDriverGetVersion(&run.device.driver_version));
  NIBBLE_CUDA_CHECK(cudaRuntimeGetVersion(&run.device.runtime_version));
  out << "device: " << run.device.name << "\n";
  bench_quantize(options, InputType::kFloat32, out, run);
  bench_quantize(options, InputType::kBFloat16, out, run);
  for (const auto& [m, n, k] : options.gemm_shapes) bench_gemm(options, GemmShape{m, n, k}, out, run);
  return run;
}

}  // namespace nibble::cuda::bench
