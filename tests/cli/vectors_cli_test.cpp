// `nibble vectors` end to end: generate through the binary, check the stream
// through the binary, determinism, and the exit status of every kind of failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "nibble/vectors.h"
#include "run_command.h"

namespace nibble::test {
namespace {

namespace vec = nibble::vectors;

class VectorsCli : public testing::Test {
 protected:
  // A fresh path per test and process, removed afterwards.
  std::string temp_path(const std::string& stem) {
    const testing::TestInfo* t = testing::UnitTest::GetInstance()->current_test_info();
    const std::string path =
        testing::TempDir() + "nibble_vectors_" + t->name() + "_" + std::to_string(getpid()) + "_" + stem;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : paths_) std::remove(p.c_str());
  }

 private:
  std::vector<std::string> paths_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

size_t case_count(const std::string& text) {
  std::istringstream in(text);
  return vec::parse_stream(in).size();
}

TEST_F(VectorsCli, GeneratesAndChecksEveryOp) {
  for (const char* op : {"quantize", "dot", "gemm-tile"}) {
    SCOPED_TRACE(op);
    const std::string path = temp_path(std::string(op) + ".vec");
    const CommandResult gen = run_nibble(std::string("vectors ") + op + " --seed 7 --count 25 --out " + path);
    ASSERT_EQ(gen.exit_code, 0) << gen.output;
    EXPECT_NE(gen.output.find("25 seeded random"), std::string::npos) << gen.output;
    const size_t cases = case_count(read_file(path));
    ASSERT_GT(cases, 25u);
    const CommandResult chk = run_nibble("vectors check " + path);
    EXPECT_EQ(chk.exit_code, 0) << chk.output;
    EXPECT_NE(chk.output.find(std::to_string(cases) + " cases checked, 0 mismatches"), std::string::npos) << chk.output;
  }
}

TEST_F(VectorsCli, WritesToStdoutByDefaultAndChecksFromStdin) {
  const CommandResult gen = run_nibble("vectors dot --seed 3 --count 4 --no-boundary --nblocks 2");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  EXPECT_EQ(gen.output.rfind("# nibble golden test vectors: dot", 0), 0u) << gen.output.substr(0, 200);
  EXPECT_NE(gen.output.find("# command: nibble vectors dot --seed 3 --count 4 --nblocks 2 --no-boundary"),
            std::string::npos);
  EXPECT_EQ(case_count(gen.output), 4u);
  const std::string path = temp_path("stdin.vec");
  write_file(path, gen.output);
  const CommandResult chk = run_nibble("vectors check - < " + path);
  EXPECT_EQ(chk.exit_code, 0) << chk.output;
  EXPECT_NE(chk.output.find("4 cases checked, 0 mismatches"), std::string::npos) << chk.output;
}

TEST_F(VectorsCli, SameSeedSameBytes) {
  for (const char* op : {"quantize", "dot", "gemm-tile"}) {
    const std::string cmd = std::string("vectors ") + op + " --count 30 --seed ";
    const CommandResult a = run_nibble(cmd + "123");
    const CommandResult b = run_nibble(cmd + "123");
    const CommandResult c = run_nibble(cmd + "124");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.output, b.output) << op;
    EXPECT_NE(a.output, c.output) << op;
  }
  // The seed may be given in hex; the header records it in decimal either way.
  EXPECT_EQ(run_nibble("vectors quantize --count 3 --seed 0x10").output,
            run_nibble("vectors quantize --count 3 --seed 16").output);
}

TEST_F(VectorsCli, OptionsFixEveryCase) {
  const CommandResult gen = run_nibble(
      "vectors gemm-tile --seed 5 --count 6 --m 2 --n 3 --k 40 --format-a int4 --scale-b mx-ceil --block-a 16x16");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  std::istringstream in(gen.output);
  const std::vector<vec::Vector> vs = vec::parse_stream(in);
  ASSERT_GT(vs.size(), 6u);
  for (const vec::Vector& v : vs) {
    const auto& c = std::get<vec::GemmTileCase>(v.data);
    EXPECT_EQ(c.m, 2);
    EXPECT_EQ(c.n, 3);
    EXPECT_EQ(c.k, 40);
    EXPECT_EQ(c.fa, Format::kInt4);
    EXPECT_EQ(c.mode_b, ScaleMode::kMXCeil);
    EXPECT_EQ(c.block_a, BlockShape::k16x16);
  }
  const CommandResult q = run_nibble(
      "vectors quantize --count 5 --no-boundary --format e1m2 --scale nvfp4 --rounding sr "
      "--sr-bits 3 --block-len 32");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  std::istringstream qin(q.output);
  for (const vec::Vector& v : vec::parse_stream(qin)) {
    const auto& c = std::get<vec::QuantizeCase>(v.data);
    EXPECT_EQ(c.format, Format::kE1M2);
    EXPECT_EQ(c.mode, ScaleMode::kNVFP4);
    EXPECT_EQ(c.rounding, Rounding::kStochastic);
    EXPECT_EQ(c.sr_bits, 3);
    EXPECT_EQ(c.length, 32);
  }
}

// A design's own configuration: sets of formats and modes, and the policies, hold every
// case; the stream checks clean, and the case lines carry the policies.
TEST_F(VectorsCli, SetsAndPoliciesGiveExactlyTheDesignsCases) {
  const CommandResult gen = run_nibble(
      "vectors quantize --seed 4 --count 300 --format e2m1,e1m2 --scale nvfp4,mx-ceil --block-len 16 "
      "--zero signed --nonfinite propagate");
  ASSERT_EQ(gen.exit_code, 0) << gen.output.substr(0, 500);
  EXPECT_NE(gen.output.find("# command: nibble vectors quantize --seed 4 --count 300 --format e2m1,e1m2 --scale "
                            "nvfp4,mx-ceil --zero signed --nonfinite propagate --block-len 16"),
            std::string::npos)
      << gen.output.substr(0, 500);
  std::istringstream in(gen.output);
  std::set<std::pair<Format, ScaleMode>> seen;
  size_t negative_zeros = 0;
  const std::vector<vec::Vector> vs = vec::parse_stream(in);
  for (const vec::Vector& v : vs) {
    const auto& c = std::get<vec::QuantizeCase>(v.data);
    ASSERT_TRUE(c.format == Format::kE2M1 || c.format == Format::kE1M2);
    ASSERT_TRUE(c.mode == ScaleMode::kNVFP4 || c.mode == ScaleMode::kMXCeil);
    ASSERT_EQ(c.length, 16);
    ASSERT_EQ(c.policy.zero, ZeroPolicy::kSigned);
    ASSERT_EQ(c.policy.nonfinite, NonFinitePolicy::kPropagate);
    seen.insert({c.format, c.mode});
    negative_zeros += static_cast<size_t>(std::count(c.codes.begin(), c.codes.end(), 8));
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_GT(negative_zeros, 0u);
  const std::string path = temp_path("policy.vec");
  write_file(path, gen.output);
  const CommandResult chk = run_nibble("vectors check " + path);
  EXPECT_EQ(chk.exit_code, 0) << chk.output;
  EXPECT_NE(chk.output.find(std::to_string(vs.size()) + " cases checked, 0 mismatches"), std::string::npos)
      << chk.output;
  // The same stream checked as if its lines had no policy fields: the signed zeros differ.
  std::string stripped = gen.output;
  for (size_t at; (at = stripped.find(" signed propagate ")) != std::string::npos;) stripped.replace(at, 17, " ");
  write_file(path, stripped);
  const CommandResult wrong = run_nibble("vectors check " + path);
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
}

TEST_F(VectorsCli, CheckReportsMismatchesAndExitsOne) {
  const CommandResult gen = run_nibble("vectors quantize --seed 9 --count 10 --no-boundary");
  ASSERT_EQ(gen.exit_code, 0);
  // Flip the last code of the third case line.
  std::istringstream in(gen.output);
  std::string line, text;
  size_t case_line = 0, line_no = 0, corrupted_line = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line[0] != '#' && ++case_line == 3) {
      line.back() = line.back() == '0' ? '1' : '0';
      corrupted_line = line_no;
    }
    text += line + "\n";
  }
  const std::string path = temp_path("bad.vec");
  write_file(path, text);
  const CommandResult chk = run_nibble("vectors check " + path);
  EXPECT_EQ(chk.exit_code, 1) << chk.output;
  EXPECT_NE(chk.output.find("10 cases checked, 1 mismatches"), std::string::npos) << chk.output;
  EXPECT_NE(chk.output.find("line " + std::to_string(corrupted_line) + ": quantize field codes[15]"), std::string::npos)
      << chk.output;
  // The operands of the mismatch follow on the next line: the case's configuration and inputs.
  const size_t at = chk.output.find("\n    operands: ");
  ASSERT_NE(at, std::string::npos) << chk.output;
  EXPECT_NE(chk.output.find("; x ", at), std::string::npos) << chk.output;
}

TEST_F(VectorsCli, CheckingNothingFails) {
  const std::string path = temp_path("empty.vec");
  write_file(path, "# nibble golden test vectors: dot\n\n# no cases\n");
  const CommandResult chk = run_nibble("vectors check " + path);
  EXPECT_EQ(chk.exit_code, 1) << chk.output;
  EXPECT_NE(chk.output.find("0 cases checked, 0 mismatches"), std::string::npos) << chk.output;
  EXPECT_NE(chk.output.find("no cases"), std::string::npos) << chk.output;
}

TEST_F(VectorsCli, MalformedFileIsAUsageErrorWithItsLine) {
  const CommandResult gen = run_nibble("vectors dot --seed 2 --count 2 --no-boundary");
  ASSERT_EQ(gen.exit_code, 0);
  const std::string path = temp_path("malformed.vec");
  write_file(path, gen.output + "dot e2m1 e2m1 e4m3 e4m3 16 1 0123\n");
  const size_t bad_line = static_cast<size_t>(std::count(gen.output.begin(), gen.output.end(), '\n')) + 1;
  const CommandResult chk = run_nibble("vectors check " + path);
  EXPECT_EQ(chk.exit_code, 2) << chk.output;
  EXPECT_NE(chk.output.find(path + ": line " + std::to_string(bad_line) + ": dot: field codes_a[0]"), std::string::npos)
      << chk.output;
}

TEST_F(VectorsCli, BadInputExitsTwoWithAMessage) {
  struct Bad {
    std::string args;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"vectors", "name an operation"},
      {"vectors frobnicate --count 3", "unknown operation or argument 'frobnicate'"},
      {"vectors quantize --count 0", "--count must be at least 1"},
      {"vectors dot --count -4", "--count must be at least 1"},
      {"vectors dot --count many", "--count: expected an integer"},
      {"vectors quantize --seed -1", "--seed"},
      {"vectors quantize --format e3m0", "--format: unknown name 'e3m0'"},
      {"vectors quantize --scale mx", "--scale: unknown name 'mx'"},
      {"vectors quantize --rounding rtz", "--rounding: unknown name 'rtz'"},
      {"vectors quantize --sr-bits 9", "--sr-bits must be in 1..8"},
      {"vectors dot --block-len 64", "--block-len must be 16 or 32"},
      {"vectors dot --scale-a nvfp4", "--scale-a: unknown name 'nvfp4'"},
      {"vectors dot --nblocks 0", "--nblocks must be in"},
      {"vectors gemm-tile --scale-a e4m3", "--scale-a: unknown name 'e4m3'"},
      {"vectors gemm-tile --k 0", "--k must be in"},
      {"vectors gemm-tile --block-b 8x8", "--block-b: unknown name '8x8'"},
      {"vectors quantize --nblocks 4", "unknown option or argument '--nblocks'"},
      {"vectors quantize --format e2m1,e3m0", "--format: unknown name 'e3m0'"},
      {"vectors quantize --format e2m1,e2m1", "--format names e2m1 twice"},
      {"vectors quantize --zero keep", "--zero: unknown name 'keep'"},
      {"vectors quantize --nonfinite te", "--nonfinite: unknown name 'te'"},
      {"vectors dot --zero signed", "unknown option or argument '--zero'"},
      {"vectors dot --block-len 16,64", "--block-len must be 16 or 32"},
      {"vectors check", "name the file to check"},
      {"vectors check /nonexistent/nibble.vec", "cannot open '/nonexistent/nibble.vec'"},
      {"vectors check /", "is a directory"},
      {"vectors dot --out /nonexistent/dir/x.vec", "--out: cannot open"},
  };
  for (const Bad& b : bad) {
    const CommandResult r = run_nibble(b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.output;
    EXPECT_NE(r.output.find("nibble: error: "), std::string::npos) << b.args << "\n" << r.output;
    EXPECT_NE(r.output.find(b.message), std::string::npos) << b.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace nibble::test
