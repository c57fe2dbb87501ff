// The GEMM benchmark's yardstick library is opened on first use, never at start-up:
// a process that links the benchmark has no cuBLAS mapped until it asks for it, and
// then gets the toolkit's own (no GPU needed).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kernel_benchmark.h"

namespace nibble::cuda::bench {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int lines = 0;
  bool found = false;
  while (std::getline(maps, line)) {
    ++lines;
    found = found || line.find("libcublas") != std::string::npos;
  }
  EXPECT_GT(lines, 0) << "/proc/self/maps could not be read";
  return found;
}

TEST(CublasLoad, OpenedAtFirstUseOnly) {
  ASSERT_FALSE(cublas_mapped()) << "cuBLAS was loaded at start-up";
  const CublasApi& api = cublas();
  ASSERT_NE(api.get_property, nullptr);
  int major = -1;
  ASSERT_EQ(api.get_property(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, NIBBLE_CUDA_TOOLKIT_MAJOR);  // the toolkit's cuBLAS, the one the header describes
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);
  // The messages the benchmark's errors quote: one per status.
  const std::string ok = api.status_string(CUBLAS_STATUS_SUCCESS);
  const std::string not_initialized = api.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_FALSE(ok.empty());
  EXPECT_FALSE(not_initialized.empty());
  EXPECT_NE(ok, not_initialized);
  EXPECT_TRUE(cublas_mapped());
  EXPECT_EQ(&cublas(), &api);  // opened once
}

}  // namespace
}  // namespace nibble::cuda::bench
