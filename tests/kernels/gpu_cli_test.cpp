// The GPU commands end to end: `nibble gpu-quant` and `nibble gpu-gemm` on
// tensor files, BF16 .safetensors going to the device as BF16 (the BF16
// kernels) and float32 files as float32, each checked against golden by the
// command's own --check; the quantized-tensor files gpu-quant writes, checked
// by golden-quant, and its dequantized tensors by golden-dequant. Skips (saying so) where there is no CUDA device.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "../cli/run_command.h"
#include "gpu_test_util.h"
#include "nibble/io/kernel_bench_file.h"
#include "nibble/io/tensor_file.h"

namespace nibble {
namespace {

namespace fs = std::filesystem;

// A one-tensor .safetensors file of BF16 bits (little-endian), written by hand:
// io writes float32 only.
void write_bf16_safetensors(const std::string& path, const std::string& name, int64_t rows, int64_t cols,
                            const std::vector<uint16_t>& bits) {
  const std::string json = "{\"" + name + "\":{\"dtype\":\"BF16\",\"shape\":[" + std::to_string(rows) + "," +
                           std::to_string(cols) + "],\"data_offsets\":[0," + std::to_string(2 * bits.size()) + "]}}";
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = json.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((size >> (8 * i)) & 0xFFu));
  out << json;
  for (uint16_t b : bits) {
    out.put(static_cast<char>(b & 0xFFu));
    out.put(static_cast<char>(b >> 8));
  }
}

// A golden command's --check of `file` (golden-gemm, golden-dequant) on what
// the GPU wrote: exit 0 and the file bit-exact.
void expect_host_check_passes(const std::string& command, const std::string& file) {
  const auto r = test::run_nibble(command + " --check " + file);
  SCOPED_TRACE(command + " --check " + file + "\n" + r.output);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find(file + " vs golden: bit-exact"), std::string::npos);
}

class GpuCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nibble_gpu_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  // The same values as a BF16 file and as a float32 file.
  void write_pair(const std::string& stem, int64_t rows, int64_t cols, uint64_t seed) {
    const std::vector<uint16_t> bits = test::to_bf16_bits(test::wide_range_tensor(rows, cols, seed));
    write_bf16_safetensors(path(stem + "_bf16.safetensors"), stem, rows, cols, bits);
    io::write_safetensors(path(stem + "_f32.safetensors"),
                          {io::Tensor{stem, {rows, cols}, test::from_bf16_bits(bits)}});
  }

  fs::path dir_;
};

TEST_F(GpuCliTest, QuantizeKeepsBf16FilesBf16AndMatchesGolden) {
  NIBBLE_REQUIRE_GPU();
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  write_pair("x", 64, 608, test::kKernelTestSeed);  // a whole wide-rows tile and a partial one
  int runs = 0;
  for (const char* recipe : {"--format e1m2 --block 1x16 --scale fp32 --rounding sr --rht 16",
                             "--format e2m1 --block 1x16 --scale nvfp4 --rounding rne"}) {
    for (const char* colwise : {"", " --colwise"}) {
      for (const auto& [file, kind] :
           {std::pair{"x_bf16.safetensors", "BF16"}, std::pair{"x_f32.safetensors", "FP32"}}) {
        const std::string out = path("q.safetensors");
        const std::string deq = path("d.npy");
        const auto r = test::run_nibble("gpu-quant --tensor " + path(file) + " " + recipe + colwise +
                                        " --check --out " + out + " --dequant-out " + deq);
        SCOPED_TRACE(std::string(recipe) + colwise + " " + file + "\n" + r.output);
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_NE(r.output.find(std::string("(") + kind + " on the device)"), std::string::npos);
        EXPECT_NE(r.output.find("row-wise vs golden: bit-exact"), std::string::npos);
        if (*colwise != '\0') {
          EXPECT_NE(r.output.find("column-wise vs golden: bit-exact"), std::string::npos);
        }
        EXPECT_NE(r.output.find("GPU dequantization vs golden: bit-exact"), std::string::npos);
        // The file the GPU wrote, checked on the host by golden-quant under its own recorded settings.
        const auto c = test::run_nibble("golden-quant --tensor " + path(file) + " --check " + out);
        SCOPED_TRACE(c.output);
        EXPECT_EQ(c.exit_code, 0);
        EXPECT_NE(c.output.find("rowwise [64 x 608] "), std::string::npos);
        EXPECT_EQ(c.output.find("colwise [608 x 64] (transposed) ") != std::string::npos, *colwise != '\0');
        size_t exact = 0;
        for (size_t at = c.output.find(": bit-exact"); at != std::string::npos;
             at = c.output.find(": bit-exact", at + 1)) {
          ++exact;
        }
        EXPECT_EQ(exact, *colwise != '\0' ? 2u : 1u);
        // The GPU's dequantized tensor, checked on the host by golden-dequant of the file's row-wise tensor.
        expect_host_check_passes("golden-dequant --quantized " + out + " --name rowwise", deq);
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 8);
}

TEST_F(GpuCliTest, GemmOfBf16FilesMatchesGolden) {
  NIBBLE_REQUIRE_GPU();
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed + 1));
  write_pair("a", 48, 544, test::kKernelTestSeed + 1);
  write_pair("b", 40, 544, test::kKernelTestSeed + 2);
  const auto r = test::run_nibble("gpu-gemm --a " + path("a_bf16.safetensors") + " --b " + path("b_bf16.safetensors") +
                                  " --format e1m2 --block 1x16 --scale fp32 --check");
  SCOPED_TRACE(r.output);
  EXPECT_EQ(r.exit_code, 0);
  const size_t a_in = r.output.find(", BF16 in) * B [40 x 544]^T");  // A's input, then B's
  ASSERT_NE(a_in, std::string::npos);
  EXPECT_NE(r.output.find(", BF16 in) on ", a_in), std::string::npos);
  EXPECT_NE(r.output.find("GPU GEMM vs golden: bit-exact"), std::string::npos);
}

// gpu-gemm on quantized-tensor files written by golden-quant (odd shapes,
// partial blocks, an RHT size the GPU quantizer does not fuse), alone and
// beside a tensor quantized on the device; its C checked by its own --check
// and again by golden-gemm.
TEST_F(GpuCliTest, GemmOfQuantizedFilesMatchesGolden) {
  NIBBLE_REQUIRE_GPU();
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed + 3));
  write_pair("a", 48, 544, test::kKernelTestSeed + 3);
  write_pair("b", 48, 544, test::kKernelTestSeed + 4);  // its transpose takes RHT16 too (--colwise)
  write_pair("o", 19, 37, test::kKernelTestSeed + 5);
  write_pair("p", 23, 37, test::kKernelTestSeed + 6);
  const auto quantize = [&](const std::string& stem, const std::string& settings) {
    const std::string out = path(stem + "_" + std::to_string(std::hash<std::string>{}(settings)) + ".safetensors");
    const auto r = test::run_nibble("golden-quant --tensor " + path(stem + "_f32.safetensors") + " " + settings +
                                    " --out " + out);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return out;
  };
  const std::string ufp4 = " --scale fp32 --rht 16 --seed 3";
  const struct {
    std::string a, b, expect;
  } runs[] = {
      {"--a-quantized " + quantize("a", "--format e1m2 --rounding sr" + ufp4),
       "--b-quantized " + quantize("b", "--format int4" + ufp4 + " --colwise") + " --b-name rowwise",
       "RHT16, quantized file) * B [48 x 544]^T (int4 1x16 fp32 rne RHT16, quantized file)"},
      {"--a " + path("a_bf16.safetensors") + " --format e1m2 --rounding sr" + ufp4,
       "--b-quantized " + quantize("b", "--format int4" + ufp4), "(e1m2 1x16 fp32 sr B=8 RHT16, BF16 in) * B"},
      {"--a-quantized " + quantize("a", "--format e2m1 --scale nvfp4 --rht 32 --seed 5"),
       "--b-quantized " + quantize("b", "--format e2m1 --scale nvfp4 --rht 32 --seed 5"), "RHT32, quantized file"},
      {"--a-quantized " + quantize("o", "--format e2m1 --scale nvfp4"),
       "--b-quantized " + quantize("p", "--format e1m2 --scale mx-floor --block 1x32"), "C [19 x 23]"},
      {"--a-quantized " + quantize("o", "--format int4 --scale fp32 --block 16x16"),
       "--b-quantized " + quantize("p", "--format e2m1 --scale mx-ceil"), "C [19 x 23]"},
  };
  int n = 0;
  for (const auto& run : runs) {
    const std::string c = path("c.npy");
    const auto r = test::run_nibble("gpu-gemm " + run.a + " " + run.b + " --check --out " + c);
    SCOPED_TRACE(run.a + " " + run.b + "\n" + r.output);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.output.find(run.expect), std::string::npos);
    EXPECT_NE(r.output.find("GPU GEMM vs golden: bit-exact"), std::string::npos);
    if (run.a.rfind("--a-quantized ", 0) == 0) {  // the same C from golden-gemm on the same files
      const std::string files = "--a " + run.a.substr(14) + " --b " + run.b.substr(14);
      expect_host_check_passes("golden-gemm " + files, c);
    }
    ++n;
  }
  EXPECT_EQ(n, 5);
  const auto both = test::run_nibble("gpu-gemm " + runs[0].a + " " + runs[0].b + " --format int4");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("--format quantizes a tensor, but both operands are quantized files"), std::string::npos)
      << both.output;
}

// bench-kernels on small shapes: every row it prints is in its --json file,
// each timed, with its ratio to the yardstick of its table; the file compares
// with itself row for row.
TEST_F(GpuCliTest, BenchKernelsWritesEveryRowAsJson) {
  NIBBLE_REQUIRE_GPU();
  const std::string json = path("bench.json");
  const auto r = test::run_nibble("bench-kernels --quant-rows 64 --quant-cols 512 --gemm 128 256 64 --warmup 1 "
                                  "--iterations 2 --json " + json);
  SCOPED_TRACE(r.output);
  ASSERT_EQ(r.exit_code, 0);
  const io::KernelBenchRun run = io::read_kernel_bench(json);
  EXPECT_FALSE(run.device.name.empty());
  EXPECT_GT(run.device.sm_count, 0);
  EXPECT_GT(run.device.runtime_version, 0);
  EXPECT_EQ(run.options.quant_rows, 64);
  EXPECT_EQ(run.options.iterations, 2);
  EXPECT_EQ(run.options.gemm_shapes, (std::vector<std::array<int64_t, 3>>{{128, 256, 64}}));
  EXPECT_NE(run.command.find("bench-kernels --quant-rows 64"), std::string::npos);
  EXPECT_TRUE(run.failures.empty());
  std::map<std::string, int> rows_of;  // section and kind
  std::map<std::string, double> copy_rate;
  double cublas_ms = 0.0;
  std::map<std::string, int> defaults_of_recipe;  // GEMM rows marked as the library's default path
  for (const io::KernelBenchRow& row : run.rows) {
    SCOPED_TRACE(io::kernel_bench_key(row));
    ++rows_of[row.section + " " + row.kind];
    EXPECT_GT(row.ms, 0.0);
    EXPECT_GT(row.rate, 0.0);
    EXPECT_NE(r.output.find(row.name), std::string::npos);
    if (row.section == "quantize" && row.kind == "yardstick") copy_rate[row.input] = row.rate;
    if (row.section == "quantize" && row.kind == "kernel") {
      EXPECT_NEAR(row.vs_baseline, row.rate / copy_rate.at(row.input), 1e-9 * row.vs_baseline);
    }
    if (row.section == "gemm" && row.kind == "yardstick") cublas_ms = row.ms;
    if (row.section == "gemm" && row.kind != "yardstick") {
      EXPECT_NEAR(row.vs_baseline, cublas_ms / row.ms, 1e-9 * row.vs_baseline);
    }
    if (row.section == "quantize") {
      EXPECT_EQ(row.library_default, row.kind == "kernel");
    }
    if (row.kind == "kernel" || row.kind == "emulation") {
      EXPECT_FALSE(row.recipe.empty());
    }
    if (row.section == "gemm" && row.kind == "kernel") {
      defaults_of_recipe[row.recipe] += row.library_default;
      EXPECT_FALSE(row.tile.empty());
      EXPECT_FALSE(row.datapath.empty());
      EXPECT_NE(r.output.find(row.name + " [" + row.datapath + "]"), std::string::npos);
    }
  }
  EXPECT_EQ(rows_of["quantize yardstick"], 2);  // FP32 and BF16 input
  EXPECT_GE(rows_of["quantize kernel"], 2 * 20);
  EXPECT_EQ(rows_of["gemm yardstick"], 1);
  EXPECT_EQ(rows_of["gemm bound"], 2);
  EXPECT_GE(rows_of["gemm kernel"], 6);
  EXPECT_EQ(rows_of["gemm emulation"], 6);
  EXPECT_EQ(defaults_of_recipe.size(), 6u);
  for (const auto& [recipe, defaults] : defaults_of_recipe) EXPECT_EQ(defaults, 1) << recipe;

  const auto same = test::run_nibble("bench-compare --before " + json + " --after " + json);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("0 faster and 0 slower beyond the noise; geometric mean speedup 1.000x"),
            std::string::npos)
      << same.output;
}

}  // namespace
}  // namespace nibble
