// Hostile input never crashes, hangs or half-writes: each row of the table is one
// bad invocation of the built `nibble` -- sizes that overflow, JSON nested without
// end, work beyond the limits, streams without end, malformed command lines,
// unusable or clashing output paths -- and must exit with status 2, print
// "nibble: error: " and a distinctive part of its message, and leave no output
// file (nor a temporary one) behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "nibble/io/tensor_file.h"
#include "run_command.h"

namespace nibble::test {
namespace {

namespace fs = std::filesystem;

fs::path g_dir;

std::string path(const std::string& file) { return (g_dir / file).string(); }

void write_bytes(const std::string& file, const std::string& bytes) {
  std::ofstream out(path(file), std::ios::binary);
  out << bytes;
  ASSERT_TRUE(out.good()) << file;
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(path(file), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

// A .npy v1.0 file with the given header dict and no data.
std::string npy(const std::string& dict) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header;
}

// A .safetensors file whose header is `json` and whose data is `data`.
std::string safetensors(const std::string& json, const std::string& data = "") {
  std::string bytes;
  for (int b = 0; b < 8; ++b) bytes += static_cast<char>((static_cast<uint64_t>(json.size()) >> (8 * b)) & 0xff);
  return bytes + json + data;
}

// Makes every input file the table names.
void make_inputs() {
  // Shapes whose element count is 0 but whose leading axes wrap int64 (rows of the matrix view).
  write_bytes("wrap.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967297, 4294967297, 0), }"));
  // A safetensors header, a quantized file's metadata, a tile config and a bench result, nested 100000 deep.
  write_bytes("deep.safetensors", safetensors("{\"x\": " + nested(100000) + "}"));
  const std::string deep_metadata = "{\"__metadata__\": {\"nibble.schema\": \"nibble-quantized/1\", \"q\": \"" +
                                    nested(100000) + "\"}, \"q.codes\": {\"dtype\": \"U8\", \"shape\": [1, 1], "
                                    "\"data_offsets\": [0, 1]}}";
  write_bytes("deepmeta.safetensors", safetensors(deep_metadata, std::string(1, '\0')));
  write_bytes("deep_config.json", "{\"rows\": 4, \"formats\": " + nested(100000) + "}");
  write_bytes("deep_bench.json", "{\"schema\": \"nibble-bench-kernels\", \"rows\": " + nested(100000) + "}");
  write_bytes("deep_study.json", "{\"schema\": \"nibble-train-study/1\", \"sizes\": " + nested(100000) + "}");
  write_bytes("wrap.safetensors",
              safetensors("{\"x\": {\"dtype\": \"F32\", \"shape\": [4294967297, 4294967297, 0], "
                          "\"data_offsets\": [0, 0]}}"));
  // A vector stream of one line longer than the 16 MiB a line may hold.
  write_bytes("long_line.vec", std::string((size_t{1} << 24) + 1, 'x'));
  write_bytes("version.json", "{\"schema\": \"nibble-bench-kernels\", \"schema_version\": 4294967297}");
  // Tensors of NaNs and infinities only.
  const std::vector<float> nonfinite = {NAN, INFINITY, -INFINITY, NAN};
  io::write_npy(path("nonfinite.npy"), {2, 2}, nonfinite.data());
  // A good tensor (as .npy and .safetensors) and its quantized-tensor file.
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  io::write_npy(path("x.npy"), {4, 16}, x.data());
  io::write_safetensors(path("x.safetensors"), {io::Tensor{"x", {4, 16}, x}});
  // A tall tensor of one column: its GEMM with itself has a 4.9 * 10^9-element C.
  const std::vector<float> tall(70000, 1.0f);
  io::write_npy(path("tall.npy"), {70000, 1}, tall.data());
  for (const char* name : {"x", "tall"}) {
    const CommandResult r = run_nibble(std::string("golden-quant --tensor ") + path(std::string(name) + ".npy") +
                                       " --out " + path(std::string("q") + name + ".safetensors"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
}

struct BadInput {
  BadInput(std::string a, std::string m, std::vector<std::string> o = {})
      : args(std::move(a)), message(std::move(m)), outputs(std::move(o)) {}
  std::string args;                  // after `nibble`; DIR/ stands for the scratch directory
  std::string message;               // a distinctive part of the error
  std::vector<std::string> outputs;  // files (in the scratch directory) that must not exist afterwards
};

std::string expand(std::string s) {
  for (size_t at; (at = s.find("DIR/")) != std::string::npos;) s.replace(at, 4, g_dir.string() + "/");
  return s;
}

const std::vector<BadInput>& table() {
  static const std::vector<BadInput> rows = {
      // Sizes whose products wrap.
      {"quant --rows 4294967296 --cols 4294967296 --rht off", "more than the limit of 268435456"},
      {"quant --tensor DIR/wrap.npy", "overflows: too many elements"},
      {"golden-quant --tensor DIR/wrap.npy --out DIR/o.safetensors", "overflows: too many elements", {"o.safetensors"}},
      {"golden-quant --tensor DIR/wrap.safetensors --out DIR/o.safetensors", "shape [4294967297, 4294967297, 0]",
       {"o.safetensors"}},
      // Flags CLI11 alone would wrap or saturate.
      {"quant --seed=-1", "--seed: expected an unsigned 64-bit integer, got '-1'"},
      {"golden-quant --tensor DIR/x.npy --seed=-5 --out DIR/o.safetensors", "--seed: expected an unsigned",
       {"o.safetensors"}},
      {"golden-quant --tensor DIR/x.npy --stream 4294967296 --out DIR/o.safetensors", "--stream: must be in [0, 4294967295]",
       {"o.safetensors"}},
      {"quant --rows 99999999999999999999", "--rows: expected a 64-bit integer"},
      {"report --out DIR/r --seed=-1", "--seed: expected an unsigned 64-bit integer", {"r"}},
      // JSON nested without end.
      {"golden-quant --tensor DIR/deep.safetensors --out DIR/o.safetensors", "nested more than 64 levels deep",
       {"o.safetensors"}},
      {"golden-dequant --quantized DIR/deepmeta.safetensors --out DIR/o.npy", "nested more than 64 levels deep",
       {"o.npy"}},
      {"bench-compare --before DIR/deep_bench.json --after DIR/deep_bench.json", "nested more than 64 levels deep"},
      {"quant --tensor DIR/deep.safetensors", "header is not valid JSON: JSON nested more than 64 levels deep"},
      {"golden-gemm --a DIR/deep.safetensors --b DIR/qx.safetensors --out DIR/c.npy", "nested more than 64", {"c.npy"}},
      {"bench-compare --before /dev/zero --after /dev/zero", "/dev/zero: larger than the limit of 67108864 bytes"},
      {"bench-compare --before DIR/version.json --after DIR/version.json", "'schema_version' is 4294967297, out of range"},
      // Work beyond the limits, refused before it starts.
      {"quant --chain 2000000000 --chain-width 16", "--chain: 2000000000 layers is more than the limit of 4096"},
      {"quant --chain 4096 --chain-width 4096 --json DIR/o.json", "the chain's weights and activations", {"o.json"}},
      {"golden-gemm --a DIR/qtall.safetensors --b DIR/qtall.safetensors --out DIR/c.npy", "C [M x N]: 70000 x 70000",
       {"c.npy"}},
      {"vectors check /dev/zero", "/dev/zero: line 1: a NUL byte"},
      {"vectors check - < /dev/zero", "-: line 1: a NUL byte"},
      {"vectors check DIR/long_line.vec", "line 1: longer than 16777216 bytes"},
      // Malformed command lines: CLI11's errors in nibble's words.
      {"frobnicate", "unknown command 'frobnicate'"},
      {"quant --frobnicate", "The following argument was not expected: --frobnicate"},
      {"golden-quant --out DIR/o.safetensors", "--tensor is required", {"o.safetensors"}},
      // Tensors without a finite value.
      {"golden-quant --tensor DIR/nonfinite.npy --out DIR/o.safetensors", "has no finite values", {"o.safetensors"}},
      // Unusable or clashing outputs, found before the work.
      {"quant --json DIR/absent/o.json",
       "--json: cannot open 'DIR/absent/o.json' for writing: directory 'DIR/absent' does not exist"},
      {"quant --csv DIR/", "--csv: cannot open 'DIR/' for writing: it is a directory"},
      {"quant --json /proc/o.json", "--json: cannot open '/proc/o.json' for writing"},
      {"golden-dequant --quantized DIR/qx.safetensors --out DIR/o.safetensors", "golden-dequant writes a .npy file",
       {"o.safetensors"}},
      {"golden-gemm --a DIR/qx.safetensors --b DIR/qx.safetensors --out DIR/c.safetensors", "golden-gemm writes a .npy",
       {"c.safetensors"}},
      {"golden-quant --tensor DIR/x.safetensors --out DIR/x.safetensors", "is also the input of --tensor"},
      {"golden-quant --tensor DIR/x.npy --out DIR/o.npy", "name it *.safetensors", {"o.npy"}},
      {"golden-dequant --quantized DIR/qx.safetensors --out DIR/qx.safetensors", "golden-dequant writes a .npy"},
      {"golden-dequant --quantized DIR/qx.safetensors --out DIR/absent/o.npy", "directory 'DIR/absent' does not exist"},
      {"vectors dot --out DIR/", "--out: cannot open 'DIR/' for writing: it is a directory"},
      {"bench-compare --before DIR/version.json --after DIR/version.json --json DIR/version.json",
       "--json: 'DIR/version.json' is also the input of --before"},
      // Long commands whose unusable outputs used to be found only after the work.
      {"area --json DIR/absent/a.json", "--json: cannot open 'DIR/absent/a.json' for writing"},
      {"energy --csv DIR/absent/e.csv", "--csv: cannot open 'DIR/absent/e.csv' for writing"},
      {"area --keep DIR/x.npy", "--keep: cannot use directory 'DIR/x.npy'"},
      {"area --cache DIR/x.npy/sub", "--cache: cannot use directory 'DIR/x.npy/sub'"},
      {"energy --cache DIR/x.npy", "--cache: cannot use directory 'DIR/x.npy'"},
      {"energy --dof 0", "--dof must be a finite number above 2, got '0'"},
      {"energy --dof -1", "--dof must be a finite number above 2, got '-1'"},
      {"energy --dof nan", "--dof must be a finite number above 2, got 'nan'"},
      {"energy --dof inf", "--dof must be a finite number above 2, got 'inf'"},
      // The training study: its definition file, an unknown size, a main phase before its LR sweep.
      {"train-study plan --study DIR/deep_study.json", "nested more than 64 levels deep"},
      {"train-study plan --study /dev/zero", "/dev/zero: larger than the limit of 67108864 bytes"},
      {"train-study run --runs DIR/runs --size s7m --phase lr", "unknown size 's7m'"},
      {"train-study run --runs DIR/runs --size s5m --phase main", "size s5m: the learning-rate sweep is incomplete"},
      {"train-study summarize --runs DIR/runs --json DIR/s.json --md DIR/absent/s.md", "--md: cannot open",
       {"s.json"}},
#if NIBBLE_HAVE_SYSTEMC
      {"gemm --backend golden --m 4294967296 --k 4294967296", "operand A: too large"},
      {"gemm --backend golden --m 65536 --n 65536 --k 16", "C [M x N]: 65536 x 65536"},
      {"gemm --config DIR/deep_config.json", "nested more than 64 levels deep"},
      {"gemm --config /dev/zero", "/dev/zero: larger than the limit of 67108864 bytes"},
      {"gemm --a DIR/wrap.npy", "overflows: too many elements"},
      {"gemm --bandwidth 1e-9 --m 4 --n 4 --k 16", "more than the limit of 2^36"},
      {"gemm --bandwidth 1e-300 --m 4 --n 4 --k 16", "more than the limit of 2^36"},
      {"gemm --seed=-1", "--seed: expected a number"},
      {"gemm --a DIR/nonfinite.npy --m 2 --n 2 --k 2", "has no finite values"},
      {"gemm --m 4 --n 4 --k 16 --trace DIR/absent/t.vcd", "--trace: cannot open"},
      {"gemm --m 4 --n 4 --k 16 --json DIR/absent/o.json", "--json: cannot open"},
#endif
  };
  return rows;
}

class BadInputCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = fs::temp_directory_path() / ("nibble_bad_input_" + std::to_string(::getpid()));
    fs::create_directories(g_dir);
    make_inputs();
  }
  static void TearDownTestSuite() { fs::remove_all(g_dir); }
};

// Files of the scratch directory other than the inputs: outputs and temporaries left behind.
std::vector<std::string> listing() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(g_dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(BadInputCli, EveryRowExitsTwoWithItsMessageAndLeavesNoOutput) {
  ASSERT_FALSE(table().empty());
  const std::vector<std::string> before = listing();
  const std::string input_bytes = read_bytes("x.safetensors");
  int rows = 0;
  for (const BadInput& row : table()) {
    const std::string args = expand(row.args);
    const CommandResult r = run_nibble(args);
    SCOPED_TRACE("nibble " + args + "\n" + r.output);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("nibble: error: "), std::string::npos);
    EXPECT_NE(r.output.find(expand(row.message)), std::string::npos) << "expected: " << expand(row.message);
    for (const std::string& out : row.outputs) EXPECT_FALSE(fs::exists(path(out))) << out;
    EXPECT_EQ(listing(), before) << "files left behind";
    ++rows;
  }
  EXPECT_EQ(read_bytes("x.safetensors"), input_bytes) << "an output overwrote its input";
  std::printf("%d bad inputs refused\n", rows);
}

// Writing under a temporary name and renaming must not change where good output goes: a
// device is written in place, a link is written through, an existing file keeps its mode.
TEST_F(BadInputCli, OutputsGoThroughDevicesAndLinksAndKeepTheirMode) {
  const std::string vectors = "vectors dot --seed 5 --count 2 --no-boundary --out ";
  CommandResult r = run_nibble(vectors + "/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));

  write_bytes("real.vec", "old");
  fs::permissions(path("real.vec"), fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(path("real.vec"), path("link.vec"));
  r = run_nibble(vectors + path("link.vec"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(path("link.vec")));
  const std::string written = read_bytes("real.vec");
  EXPECT_NE(written.find("\ndot e"), std::string::npos) << written.substr(0, 200);  // a dot case line
  EXPECT_EQ(fs::status(path("real.vec")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  fs::remove(path("link.vec"));
  fs::remove(path("real.vec"));
}

// The smallest address-space limit (KiB, in steps of 100 MB) under which the binary starts:
// its shared libraries alone (CUDA's, where the kernels are built) take hundreds of MB.
long startup_address_space_kib() {
  for (long kib = 100000; kib <= 8000000; kib += 100000) {
    const std::string cmd = "(ulimit -v " + std::to_string(kib) + "; " + std::string(NIBBLE_BINARY) +
                            " --version) > /dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return kib;
  }
  return -1;
}

// Memory running out (here: an address-space limit 300 MB above what the binary needs to
// start, under a 1 GiB synthetic input, which is within the element limit) is one more bad
// input: status 2, a clear message, no output left.
TEST_F(BadInputCli, OutOfMemoryExitsTwoWithAClearMessage) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves its shadow memory up front: no address-space limit leaves it room";
#endif
  const long start = startup_address_space_kib();
  ASSERT_GT(start, 0) << "nibble --version does not start under 8 GB of address space";
  const std::string cmd = "(ulimit -v " + std::to_string(start + 300000) + "; " + std::string(NIBBLE_BINARY) +
                          " quant --rows 16384 --cols 16384 --formats e2m1 --scale fp32 --block 1x16 --rht off"
                          " --rounding rne --json " + path("oom.json") + ") 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 2) << output;
  EXPECT_NE(output.find("nibble: error: out of memory"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(path("oom.json")));
  for (const std::string& name : listing()) EXPECT_NE(name.rfind(".nibble-", 0), 0u) << name << " left behind";
}

TEST_F(BadInputCli, HelpStillExitsZero) {
  for (const char* args : {"--help", "quant --help", "golden-quant --help"}) {
    const CommandResult r = run_nibble(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("Usage:"), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("nibble: error"), std::string::npos) << args << "\n" << r.output;
  }
}

#if NIBBLE_HAVE_SYSTEMC
// Heavy injected input bubbles slow a run down; they do not make it a deadlock.
TEST_F(BadInputCli, HeavyStallsFinishInsteadOfDeadlocking) {
  const CommandResult r = run_nibble("gemm --m 4 --n 4 --k 16 --stall-in 0.9999 --stall-seed 7");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("deadlock"), std::string::npos) << r.output;
}
#endif

}  // namespace
}  // namespace nibble::test
