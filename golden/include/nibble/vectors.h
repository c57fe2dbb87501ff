// Golden test vectors: one case per line of whitespace-separated hex fields,
// operands first and then what the golden model gives for them, that any
// device under test (RTL, SystemC, CUDA) reads from a stream. docs/vectors.md
// states every field of every op; the generator mixes tables of boundary cases
// into seeded random ones, and `check` recomputes a case with golden.
//
// The three ops:
//   quantize   one block through the quantizer: inputs x_i and the SR bits ->
//              the block's scale code and element codes;
//   dot        a block-scaled dot product over nblocks blocks: codes and scale
//              codes -> every block's P_b and r_b and the final FP32 result;
//   gemm-tile  an M x N x K tile of C = A * B^T on quantized operands.
//
// Every expected field is computed by golden (quantize_block, block_scale, quantize_block_elements,
// block_partial_sum, block_product, accumulate, dot_rows, gemm); nothing here
// re-derives a number the golden model defines. FP32 fields are held as bit
// patterns so a NaN payload or the sign of zero survives writing and parsing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::vectors {

enum class Op : uint8_t { kQuantize, kDot, kGemmTile };
inline constexpr std::array<Op, 3> kAllOps = {Op::kQuantize, Op::kDot, Op::kGemmTile};

// "quantize", "dot", "gemm-tile": the first field of every case line.
std::string_view name(Op op);
std::optional<Op> parse_op(std::string_view name);

// Bounds on a line's sizes, so that a reader can size its buffers up front.
inline constexpr int kMaxDotBlocks = 1024;
inline constexpr int kMaxTileRows = 256;  // M and N
inline constexpr int kMaxTileK = 8192;

// The quiet NaN every expected NaN is written as: golden's NaN payloads are the
// host's, so files carry one canonical pattern and comparisons accept any NaN.
inline constexpr uint32_t kCanonicalNaN = 0x7FC00000u;
inline constexpr uint32_t kOneF32 = 0x3F800000u;

struct QuantizeCase {
  Format format = Format::kE2M1;
  ScaleMode mode = ScaleMode::kFP32;
  QuantPolicy policy;  // written on the line only where it is not the default
  int length = 16;  // 16 or 32 elements
  Rounding rounding = Rounding::kNearestEven;
  int sr_bits = 8;  // B, 1..8; written under rne too, where nothing reads it
  // Where the SR bits come from (philox.h): element i takes lane i % 16 of the
  // Philox call (seed, group + i / 16, stream, domain 0).
  uint64_t seed = 0;
  uint32_t stream = 0;
  uint64_t group = 0;
  uint32_t s_enc = kOneF32;      // per-tensor encode scale S_enc (1.0 unless nvfp4)
  uint32_t g = kOneF32;          // per-tensor decode scale g (1.0 unless nvfp4)
  std::vector<uint32_t> x;       // the block's inputs, FP32 bits
  std::vector<uint32_t> random;  // each element's B SR bits; 0 under rne
  // Expected.
  uint32_t scale_code = 0;     // in scale_format(mode)
  std::vector<uint8_t> codes;  // one 4-bit code per element
};

struct DotCase {
  Format fa = Format::kE2M1;
  Format fb = Format::kE2M1;
  ScaleFormat sfa = ScaleFormat::kE4M3;
  ScaleFormat sfb = ScaleFormat::kE4M3;
  int length = 16;  // elements per block, 16 or 32
  int nblocks = 1;
  std::vector<uint8_t> codes_a;  // nblocks * length, block 0 first
  std::vector<uint8_t> codes_b;
  std::vector<uint32_t> scales_a;  // one scale code per block
  std::vector<uint32_t> scales_b;
  uint32_t ga = kOneF32;  // per-tensor decode scales, FP32 bits
  uint32_t gb = kOneF32;
  // Expected.
  std::vector<int32_t> partial;    // P_b, in units 2^(lsb_a + lsb_b)
  std::vector<uint32_t> products;  // r_b, FP32 bits
  uint32_t result = 0;             // fl(acc * fl(ga * gb)), FP32 bits
};

struct GemmTileCase {
  Format fa = Format::kE2M1;
  Format fb = Format::kE2M1;
  ScaleMode mode_a = ScaleMode::kNVFP4;
  ScaleMode mode_b = ScaleMode::kNVFP4;
  BlockShape block_a = BlockShape::k1x16;
  BlockShape block_b = BlockShape::k1x16;
  int m = 4;
  int n = 4;
  int k = 64;
  std::vector<uint8_t> codes_a;    // A, row-major [m, k]
  std::vector<uint8_t> codes_b;    // B, row-major [n, k]
  std::vector<uint32_t> scales_a;  // block-row-major, QuantizedTensor::scales order
  std::vector<uint32_t> scales_b;
  uint32_t ga = kOneF32;
  uint32_t gb = kOneF32;
  // Expected.
  std::vector<uint32_t> c;  // C, row-major [m, n], FP32 bits
};

bool operator==(const QuantizeCase& a, const QuantizeCase& b);
bool operator==(const DotCase& a, const DotCase& b);
bool operator==(const GemmTileCase& a, const GemmTileCase& b);
inline bool operator!=(const QuantizeCase& a, const QuantizeCase& b) { return !(a == b); }
inline bool operator!=(const DotCase& a, const DotCase& b) { return !(a == b); }
inline bool operator!=(const GemmTileCase& a, const GemmTileCase& b) { return !(a == b); }

using Case = std::variant<QuantizeCase, DotCase, GemmTileCase>;
Op op_of(const Case& c);

// One case as it sits in a stream.
struct Vector {
  Case data;
  std::string label;  // the boundary-table entry it came from; empty for a seeded random case
  size_t line = 0;    // 1-based line it was parsed from; 0 when generated
};

// --- Golden -------------------------------------------------------------------

// The SR bits a quantize case's seed/stream/group select (all 0 under rne).
std::vector<uint32_t> sr_random_bits(const QuantizeCase& c);

// Fill a case's expected fields from its inputs with golden. The inputs must be
// well formed (the sizes parse_case enforces); std::invalid_argument otherwise.
void compute_expected(QuantizeCase& c);
void compute_expected(DotCase& c);
void compute_expected(GemmTileCase& c);
void compute_expected(Case& c);

// The first field, in line order, where a case disagrees with golden. Expected
// FP32 results match when their bits are equal or both are NaN; every other
// field must match exactly. Besides the expected outputs this checks the
// inputs golden constrains: a quantize case's SR bits must be the Philox bits
// it names (0 under rne), and S_enc = g = 1.0 outside nvfp4. A case whose
// inputs are malformed (parse_case never yields one) throws std::invalid_argument.
struct Mismatch {
  std::string field;     // as docs/vectors.md names it: "codes[3]", "r[1]", "c[2][0]"
  std::string file;      // the value the case holds
  std::string golden;    // the value golden gives
  std::string operands;  // the inputs that field depends on, in the line's notation
};
std::optional<Mismatch> check(const Case& c);
// "field codes[3]: file has 5, golden gives 6"
std::string describe(const Mismatch& m);

// --- Text form ------------------------------------------------------------------

// The case as one line, without a newline.
std::string format_case(const Case& c);
// The line, preceded by "# boundary: <label>" when the vector has a label.
void write_vector(std::ostream& out, const Vector& v);

// A line that is not a well-formed case. what() is "line N: <op>: <problem>".
class ParseError : public std::runtime_error {
 public:
  ParseError(size_t line, const std::string& message);
  size_t line() const { return line_; }

 private:
  size_t line_;
};

// Parse one case line (not blank, not a comment); line_number goes into errors.
Case parse_case(std::string_view line, size_t line_number);

// Reads a stream a case at a time: blank lines and '#' comments are skipped,
// and a "# boundary: <label>" comment labels the case on the next line.
class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) {}
  // The next case, or nullopt at the end of the stream; throws ParseError.
  std::optional<Vector> next();
  size_t line() const { return line_; }

 private:
  std::istream& in_;
  size_t line_ = 0;
};
std::vector<Vector> parse_stream(std::istream& in);

// Check every case of a stream. Parse errors propagate as ParseError.
struct CheckReport {
  size_t cases = 0;
  size_t mismatches = 0;
  // The first kMaxReported mismatches: "line 12: dot field r[1]: file has ..., golden gives ...",
  // then on a line of its own, indented, "operands: " and the inputs of that field.
  std::vector<std::string> reported;
  static constexpr size_t kMaxReported = 20;
};
CheckReport check_stream(std::istream& in);

// --- Generation -------------------------------------------------------------------

// What to generate. A set left empty is drawn per random case and swept in the
// boundary tables over every value; a non-empty set holds every case to its
// values (so a device's own formats, modes and policies give exactly its
// cases). The policies are the exception: left empty they are the default
// policy alone, so that streams written before they existed stay the same.
struct GenerateOptions {
  Op op = Op::kQuantize;
  uint64_t seed = 1;
  int count = 100;                         // seeded random cases, >= 1
  bool boundary = true;                    // interleave the boundary tables
  std::vector<Format> formats_a;           // quantize: the format; dot, gemm-tile: A's
  std::vector<Format> formats_b;           // dot, gemm-tile
  std::vector<ScaleMode> modes;            // quantize
  std::vector<ScaleMode> modes_a;          // gemm-tile
  std::vector<ScaleMode> modes_b;          // gemm-tile
  std::vector<ScaleFormat> scales_a;       // dot
  std::vector<ScaleFormat> scales_b;       // dot
  std::vector<int> lengths;                // quantize, dot: 16 and/or 32
  std::vector<Rounding> roundings;         // quantize
  std::vector<ZeroPolicy> zero_policies;   // quantize (empty: positive only)
  std::vector<NonFinitePolicy> nonfinite_policies;  // quantize (empty: finite only)
  std::optional<int> sr_bits;              // quantize: 1..8
  std::optional<int> nblocks;              // dot: 1..kMaxDotBlocks (random cases draw 1..8, tables use 16)
  std::vector<BlockShape> blocks_a;        // gemm-tile
  std::vector<BlockShape> blocks_b;        // gemm-tile
  int m = 4;                               // gemm-tile
  int n = 4;
  int k = 64;
};
// Throws std::invalid_argument naming the first bad or inapplicable option (a
// repeated value in a set included).
void validate(const GenerateOptions& opts);

// The command that regenerates a stream: "nibble vectors dot --seed 7 --count 10 ...".
std::string command_line(const GenerateOptions& opts);

// The boundary cases for these options, in stream order, each with its label.
std::vector<Vector> boundary_table(const GenerateOptions& opts);

// Every vector of the stream, in order: random case i, then boundary case i,
// until both run out. Deterministic in the options (std::mt19937_64 draws the
// random cases, whose raw output the C++ standard fixes).
void generate(const GenerateOptions& opts, const std::function<void(const Vector&)>& sink);
std::vector<Vector> generate(const GenerateOptions& opts);

struct StreamCounts {
  size_t random = 0;
  size_t boundary = 0;
};
// The header comment (op, field order, seed, counts, command), then every vector.
StreamCounts write_stream(std::ostream& out, const GenerateOptions& opts);

}  // namespace nibble::vectors
