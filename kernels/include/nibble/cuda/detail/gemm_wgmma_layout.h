// The shared-memory layout and the 4-bit decode of the wgmma GEMM
// (kernels/src/gemm_wgmma.cu), written once for host and device so that
// tests/kernels/gemm_layout_test.cpp checks them without a GPU.
//
// The wgmma kernel keeps the mma.sync kernel's raw stage
// (nibble/cuda/detail/gemm_mma_sync_layout.h: 128 k of packed codes and scale
// codes of a 128 x 128 CTA tile) and adds, per stage, B decoded to FP16 for the asynchronous warpgroup mma (wgmma), which reads
// it from shared memory, K-major, in its 128-byte swizzled layout (A comes
// from registers, below): per stage, two atoms of 64 k (k 0..63, then
// 64..127), each 16 groups of 8 rows x 128 B (1 KiB per group); in row r of
// a group, the 16-byte chunk c (k 8c..8c+7 of the atom) lies at chunk
// c XOR (r % 8). A wgmma of 16 k starts 32 B into its atom's rows; groups are
// 1 KiB apart (stride-dimension byte offset). The CTA's threads are one producer warpgroup, which copies the
// raw stages and decodes them, and two consumer warpgroups of 64 x 128
// outputs each (64 x 64 on half tiles), which run the wgmmas and the
// contract's adds. Producer thread t decodes row t of B (on half tiles, of 64
// rows, threads t and t + 64 each one half of row t % 64): it reads the
// row's 64 raw bytes with 16-byte loads, and writes per 16-k slice two
// 16-byte chunks (the k-halves). Eight
// consecutive lanes take the eight rows of a group, so the XOR spreads their
// writes over all 32 banks, and the raw stage's 80-byte row pitch spreads
// their reads. The consumers decode A themselves, into registers (below).
#pragma once

#include <cstdint>

#include "nibble/cuda/gemm.h"
#include "nibble/cuda/detail/gemm_mma_sync_layout.h"
#include "nibble/cuda/quant_math.h"

namespace nibble::cuda::wgmma {

inline constexpr int kProducerThreads = mma_sync::kBM;           // one warpgroup, a row of A and B each
inline constexpr int kConsumerThreads = 256;                // two warpgroups of 64 rows
inline constexpr int kThreads = kProducerThreads + kConsumerThreads;
// A CTA's two consumer warpgroups run a tile of kBM x kBN outputs or, where
// that leaves SMs idle, a half tile of kBM x kBN / 2 (TileShape, half_tiles;
// below); the producer warpgroup and the stages are the same.
inline constexpr int kGroupRows = 64;                       // a consumer warpgroup's rows
inline constexpr int kSliceK = 16;                          // one wgmma k step
inline constexpr int kSlices = mma_sync::kBK / kSliceK;           // 8 per stage
inline constexpr int kAtomK = 64;                           // k per 128-byte row of an atom
inline constexpr int kGroupBytes = 8 * 128;                 // 8 rows of an atom
inline constexpr int kAtomBytes = mma_sync::kBN * 128;            // 16 KiB: 128 rows x 64 k
inline constexpr int kDecodedBytes = (mma_sync::kBK / kAtomK) * kAtomBytes;  // 32 KiB: B of one stage
// Raw stages (the producer copies stage st + 1 and decodes stage st while the
// consumers read stage st - 1's scales), two buffers of decoded B (the
// producer writes one while the consumers' wgmmas read the other) and room
// for two more (the E4M3 datapath's decoded A scales use it; the scaled
// datapath's third buffer and fourth raw stage: RingOf), two scale
// tables, and 1 KiB to align the decoded buffers to the swizzle's 1 KiB period:
// 227 KiB, all an SM offers one CTA.
inline constexpr int kSmemBytes =
    mma_sync::kStages * mma_sync::kStageBytes + 4 * kDecodedBytes + mma_sync::kLutBytes + 1024;
static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM must fit");

// The scaled datapath (scale pairs other than E4M3 x E4M3) applies both
// scales in its epilogue, so its consumers read, per k-block, the binary32
// scale of each of their rows of A and columns of B. The producer decodes
// them once per stage into the raw stage, where nothing else reads: A's into
// the row's own scale window (block b at byte 4 b), B's into the 16 padding
// bytes ("slots") after each of the stage's 256 code rows (kBlocks x 128
// columns = 1024 words = 256 x 4). A consumer thread of quad q needs, per
// block, the column pairs 8 i + 2 q, +1 (i = 0..15): slot 32 b + q + 4 m holds
// its pairs i = 2 m and 2 m + 1, so that its 32 scales of a block are eight
// 16-byte loads at constant offsets from one address per thread
// (b_scales_offset), with no index arithmetic per load.
inline constexpr int kMaxBlocksPerStage = mma_sync::kBK / kSliceK;  // 8
inline constexpr int kBScaleSlotsPerBlock = 32;
NIBBLE_HD int a_scale_offset(int row, int block) { return mma_sync::scale_offset(0, row) + 4 * block; }
// The slot of block b, quad q, pair-of-pairs m, as a byte offset.
NIBBLE_HD int b_scales_offset(int block, int quad, int m) {
  return (kBScaleSlotsPerBlock * block + quad + 4 * m) * mma_sync::kRowBytes + mma_sync::kCodeBytesPerRow;
}
// The word of column n (i = n / 8, quad = n / 2 % 4, n % 2) in its slot.
NIBBLE_HD int b_scale_offset(int block, int n) {
  const int i = n / 8;
  return b_scales_offset(block, (n / 2) % 4, i / 2) + 4 * (2 * (i % 2) + n % 2);
}
static_assert(4 * kBScaleSlotsPerBlock == mma_sync::kBN, "a block's slots hold one scale per column");
static_assert(kMaxBlocksPerStage * mma_sync::kBN ==
                  (mma_sync::kBM + mma_sync::kBN) * (mma_sync::kRowBytes - mma_sync::kCodeBytesPerRow) / 4,
              "B's decoded scales fill the code rows' padding");
static_assert(4 * kMaxBlocksPerStage <= mma_sync::kScaleRowBytes, "A's decoded scales fit the row's scale window");

// Byte offset in a decoded stage of the 8 FP16 of row n, k = 16 slice + 8 half .. +7.
NIBBLE_HD int decoded_offset(int n, int slice, int half) {
  const int chunk = 2 * (slice % (kAtomK / kSliceK)) + half;  // 16-byte chunk of the atom row
  return (slice / (kAtomK / kSliceK)) * kAtomBytes + (n / 8) * kGroupBytes + (n % 8) * 128 +
         ((chunk ^ (n % 8)) * 16);
}

// The wgmma shared-memory matrix descriptor of rows row0.. (a multiple of 8)
// of the decoded operand at shared address `base` (1 KiB aligned), at slice
// 0: start address, leading byte offset 1 (unused with a swizzle), stride
// byte offset 1 KiB (all in 16-byte units), 128-byte swizzle, base offset 0.
NIBBLE_HD uint64_t rows_descriptor(uint32_t base, int row0) {
  const uint32_t addr = base + static_cast<uint32_t>((row0 / 8) * kGroupBytes);
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(kGroupBytes >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}
// What slice `slice` adds to that descriptor: its offset in 16-byte units, in
// the start address field (14 bits; shared addresses stay below 2^18, so the
// sum never carries into the next field).
NIBBLE_HD constexpr uint64_t slice_step(int slice) {
  return static_cast<uint64_t>(((slice / (kAtomK / kSliceK)) * kAtomBytes + (slice % (kAtomK / kSliceK)) * 32) >> 4);
}

// The FP16 bit pattern of v * 2^exp2 for a small integer v (|v| < 2048) and
// an exponent that keeps it normal, and its high byte. Every unit of the three
// formats (|units| <= 12, at most 3 significant bits) has a zero low byte, at
// any such exponent (half_high_table checks it).
NIBBLE_HD uint32_t half_bits(int32_t v, int exp2 = 0) {
  if (v == 0) return 0u;
  const uint32_t sign = v < 0 ? 0x8000u : 0u;
  const uint32_t mag = static_cast<uint32_t>(v < 0 ? -v : v);
  const int e = math::msb_index32(mag);
  return sign | (static_cast<uint32_t>(e + exp2 + 15) << 10) | ((mag << (10 - e)) & 0x3FFu);
}
NIBBLE_HD uint8_t half_high_byte(int32_t v, int exp2 = 0) { return static_cast<uint8_t>(half_bits(v, exp2) >> 8); }

// The table decode_codes8_half reads for format f: the FP16 high bytes of the
// units of codes 0..15 times 2^exp2, four per word (exp2 = 0: the units, as
// the E4M3 datapath wants them; exp2 = lsb_exp(f): the codes' values, as the
// scaled datapath does). False where a value's FP16 would need its low byte or
// leave the normal range (none of the three formats' at exp2 in [-4, 0]; the
// host test checks them).
inline bool half_high_table(Format f, uint32_t (&high)[4], int exp2 = 0) {
  bool fits = true;
  high[0] = high[1] = high[2] = high[3] = 0u;
  for (uint32_t code = 0; code < 16; ++code) {
    const int32_t units = decode(f, static_cast<uint8_t>(code)).signed_units();
    high[code / 4] |= static_cast<uint32_t>(half_high_byte(units, exp2)) << (8 * (code % 4));
    const uint32_t mag = static_cast<uint32_t>(units < 0 ? -units : units);
    const int biased = mag == 0u ? 15 : math::msb_index32(mag) + exp2 + 15;  // FP16 exponent field
    fits = fits && (half_bits(units, exp2) & 0xFFu) == 0u && biased >= 1 && biased <= 30;
  }
  return fits;
}

// Eight codes (nibbles 0..7 of w) -> four half2 of their units: h[j] =
// (code 2j, code 2j + 1). `high` holds the FP16 high bytes of codes 0..15
// (the low bytes are zero): decode_codes8's table lookups give the high
// bytes, four per word, and a byte permute spreads each pair into a half2.
NIBBLE_HD void decode_codes8_half(uint32_t w, const uint32_t (&high)[4], uint32_t (&h)[4]) {
  uint32_t lo = 0, hi = 0;
  mma_sync::decode_codes8(w, high, lo, hi);
  h[0] = math::byte_perm(lo, 0u, 0x1404u);
  h[1] = math::byte_perm(lo, 0u, 0x3424u);
  h[2] = math::byte_perm(hi, 0u, 0x1404u);
  h[3] = math::byte_perm(hi, 0u, 0x3424u);
}

// ---- the k order of A's register fragments ------------------------------------------
// On both datapaths A comes from registers (wgmma's register-A form): each
// consumer thread decodes its own fragment of a 16-k slice from the raw
// stage. wgmma's A fragment (mma.m16n8k16's, per warp of 16 rows) gives
// thread (group g, quad q) rows g and g + 8 at k 2q, 2q + 1, 2q + 8, 2q + 9, as
// four f16x2 registers: (g, 2q..), (g + 8, 2q..), (g, 2q + 8..), (g + 8, 2q + 8..).
// Within a block the k order is free (P is an exact sum), as long as A and B
// agree; this datapath maps those four k of quad q to codes 4q .. 4q + 3 of
// the slice, two adjacent bytes of the raw row, so that a thread's fragment is
// one 16-bit half of one raw word per row: logical k 2q + i (i = 0, 1) is
// code 4q + i, and 2q + 8 + i is code 4q + 2 + i. B is decoded in the same
// order: in its decoded row, the 16-byte chunk of k 8h .. 8h + 7 holds the
// code pairs (2j + h) for j = 0..3 (pair p: codes 2p, 2p + 1).

// The raw stage's word (byte offset) holding quad q's codes of slice s in
// A's row `row`, and the byte-permute selector that takes its half from the
// words of rows g (x) and g + 8 (y).
NIBBLE_HD int a_fragment_offset(int row, int slice, int quad) {
  return mma_sync::code_offset(0, row, 8 * slice + 4 * (quad / 2));
}
NIBBLE_HD uint32_t a_fragment_selector(int quad) { return quad % 2 == 0 ? 0x5410u : 0x7632u; }

// Eight codes (two rows' four codes, from a_fragment_selector's permute) ->
// the thread's four A registers in wgmma's order.
NIBBLE_HD void decode_a_fragment(uint32_t w, const uint32_t (&high)[4], uint32_t (&a)[4]) {
  uint32_t h[4];
  decode_codes8_half(w, high, h);  // (g: 4q, 4q+1), (g: 4q+2, 4q+3), (g+8: 4q, ..), (g+8: 4q+2, ..)
  a[0] = h[0];
  a[1] = h[2];
  a[2] = h[1];
  a[3] = h[3];
}

// The E4M3 datapath's decoded A scales of a stage (binary32 dec(s) * 2^lsb_a,
// written by the producer): word a_scale_word(block, row), so that a
// consumer's rows row and row + 8 (row % 16 < 8) are one aligned 8-byte load,
// and 32 consecutive rows of one block are 32 distinct banks.
inline constexpr int kAScaleBytes = kMaxBlocksPerStage * mma_sync::kBM * 4;
NIBBLE_HD int a_scale_word(int block, int row) {
  return block * mma_sync::kBM + (row / 16) * 16 + (row % 8) * 2 + (row / 8) % 2;
}

// The pair of codes at position j (0..3) of the k-half chunk `half` of a
// decoded slice, in the k order of A's register fragments, which both
// datapaths decode B in (the natural order would be pair 4 half + j).
NIBBLE_HD int chunk_pair(int half, int j) { return 2 * j + half; }

// ---- UE8M0 scales on both operands: the product and the add as one FMA ----------------
// Golden's step for a k-block is s = fl(sa sb), r = fl(P' s), acc = fl(acc + r),
// P' the block's exact partial sum of the operands' values. Where s is a power
// of two and P' s is exact, r = P' s and the step is fma(P', s, acc): one
// rounding of the same exact sum, and one instruction fewer per output and
// block. P' is 0 or, in magnitude, between 2^-4 (a unit of E1M2 times one of
// E1M2) and 2^11 (32 products of INT4's -8), so P' s is exact for s from
// 2^-145 (its lowest bit no lower than the smallest subnormal's, 2^-149) to
// 2^116 (below 2^128). UE8M0 codes (2^(c - 127)) within [kFmaCodeLo,
// kFmaCodeHi] on both operands keep s a power of two from 2^-144 to 2^116,
// exact itself; golden's NaN code 255 is outside. gemm_layout_test checks the
// equality over those codes, every format pair and partial sums up to the
// largest, and that it fails one code past either end. The wgmma GEMM takes the FMA
// for a whole call when every scale code of both operands lies in the range
// (a check kernel runs first, on the call's stream).
inline constexpr uint32_t kFmaCodeLo = 55;   // 2^-72
inline constexpr uint32_t kFmaCodeHi = 185;  // 2^58
NIBBLE_HD bool fma_scale_code(uint32_t code) { return code - kFmaCodeLo <= kFmaCodeHi - kFmaCodeLo; }
// The range of P' over every pair of golden's formats, from the table: its
// lowest bit is at least 2^(2 min lsb_exp), and a block step's 32 = 2^5
// products of magnitudes below 2^ceil(log2 max decodable) stay within
// 2^(2 max + 5). Both bounds keep P' s exact over the codes above.
constexpr int partial_sum_lsb_exp() {
  int m = lsb_exp(kAllFormats[0]);
  for (Format f : kAllFormats) m = lsb_exp(f) < m ? lsb_exp(f) : m;
  return 2 * m;
}
constexpr int partial_sum_max_exp() {
  int m = -1000;
  for (Format f : kAllFormats) {
    const uint32_t units = max_decode_units(f);
    const int e = msb_index(units) + ((units & (units - 1u)) != 0u ? 1 : 0) + lsb_exp(f);  // ceil(log2)
    m = e > m ? e : m;
  }
  return 2 * m + 5;
}
inline constexpr int kUe8m0ScaleBias = info(ScaleFormat::kUE8M0).bias;
static_assert(partial_sum_lsb_exp() + 2 * (static_cast<int>(kFmaCodeLo) - kUe8m0ScaleBias) >= -149,
              "P' s keeps its lowest bit within binary32's subnormals at the lowest FMA code");
static_assert(partial_sum_max_exp() + 2 * (static_cast<int>(kFmaCodeHi) - kUe8m0ScaleBias) < 128,
              "P' s stays below 2^128 at the highest FMA code");
static_assert(kFmaCodeHi < info(ScaleFormat::kUE8M0).nan_code, "the NaN code is outside the FMA range");
// The check is a kernel launch of its own: calls of fewer multiply-adds
// (M N K) than this skip it and keep golden's three roundings, where the
// check costs as much as the FMA saves or more (docs/results/kernels.md#design-choices-measured).
inline constexpr double kFmaMinMacs = 0x1p33;

// UE8M0 scales of B folded into B's FP16 values. Where B's codes also leave
// every value of B's format times sb = 2^(c - 127) a normal FP16 with a zero
// low byte (half_high_table at exponent lsb + c - 127), the E4M3 datapath's
// decode holds q * 2^lsb_b * sb exactly, the wgmma of A's values against it
// gives P' sb exactly (a k-block's products are multiples of one power of two,
// fewer than 2^13 of them), and its epilogue fma(P' sb, sa, acc) is the FMA
// step above, with A's scale its only factor. The codes that fold, for B's
// format f: [lo, hi], inside [kFmaCodeLo, kFmaCodeHi]; false if none. Where
// A's codes fold into A's format and B's do not, the wgmma kernel runs C^T = B A^T the same
// way: golden's block sums and its product of the two scales do not depend
// on the operands' order.
inline bool ue8m0_fold_codes(Format f, uint32_t& lo, uint32_t& hi) {
  lo = 256u;
  hi = 0u;
  for (uint32_t code = kFmaCodeLo; code <= kFmaCodeHi; ++code) {
    uint32_t high[4];
    if (!half_high_table(f, high, lsb_exp(f) + static_cast<int>(code) - 127)) continue;
    lo = code < lo ? code : lo;
    hi = code;
  }
  return lo <= hi;
}

// ---- tile shapes, and where a consumer thread's outputs lie -------------------------
// A CTA's tile: kBM x kCols outputs over two consumer warpgroups of 64 rows
// x kCols, stacked by rows. Full tiles are 128 x 128; half tiles, where full
// tiles would leave SMs idle (half_tiles), 128 x 64: the producer then
// decodes 64 rows of B instead of 128, and each warpgroup the A fragments of
// its own rows. They replaced half tiles of 64 x 128 (one warpgroup of 128
// columns, whose warps, one per scheduler, waited on their instruction fetch
// and on latencies; or two of 64 columns side by side, which decoded the same
// A fragments twice and B's 128 rows), being faster on every datapath:
// docs/results/kernels.md#design-choices-measured.
//
// A consumer warpgroup's 64 x kCols outputs are kParts n-parts of kPartN
// columns: one wgmma (m64n32k16) per 16-k slice and one partial-sum buffer of
// kPartRegs registers per thread each; a thread holds kAcc outputs, element j
// of part p at acc[kPartRegs p + j]. Four parts on full tiles, two on half
// tiles (where four of 16 columns took more wgmma, fence and wait
// instructions per output, and the UFP4 recipes' GEMM measured slower so).
inline constexpr int kPartN = 32;
inline constexpr int kPartRegs = kPartN / 2;
template <int kColsT>
struct TileShape {
  static constexpr int kRows = mma_sync::kBM;
  static constexpr int kCols = kColsT;  // the tile's and each warpgroup's
  static constexpr int kParts = kCols / kPartN;
  static constexpr int kAcc = kCols / 2;
  static constexpr bool kHalf = kCols < mma_sync::kBN;
  static_assert(kCols == mma_sync::kBN || kCols == mma_sync::kBN / 2, "full or half tiles");
};
using FullTile = TileShape<mma_sync::kBN>;
using HalfTile = TileShape<mma_sync::kBN / 2>;

// A consumer thread's place (ctid: its index among the CTA's consumer
// threads; warpgroup w takes rows 64 w ..): its warp's 16 rows from
// warp_row, and in wgmma's accumulator layout its group (rows row0 =
// warp_row + group and row0 + 8) and quad.
struct ConsumerPlace {
  int warp_row;
  int group;
  int quad;
  int row0;
};
NIBBLE_HD ConsumerPlace consumer_place(int ctid) {
  const int warp = ctid / 32, lane = ctid % 32;
  const int warp_row = (warp / 4) * kGroupRows + (warp % 4) * 16;
  return {warp_row, lane / 4, lane % 4, warp_row + lane / 4};
}
// The first tile column of n-part `part`: its rows of decoded B start there
// (the wgmma's descriptor).
NIBBLE_HD constexpr int part_col0(int part) { return kPartN * part; }
// The tile row and column of element j of that part in the m64n32k16
// accumulator layout: row group + 8 ((j / 2) % 2), column
// 8 (j / 4) + 2 quad + j % 2 of the part.
NIBBLE_HD int part_row(const ConsumerPlace& c, int j) { return c.row0 + 8 * ((j / 2) % 2); }
NIBBLE_HD int part_col(const ConsumerPlace& c, int part, int j) {
  return part_col0(part) + 8 * (j / 4) + 2 * c.quad + j % 2;
}
// The scaled datapath's B scales of that part: b_scales_offset's slots m and
// m + 1, one per 16 columns; slot m + h holds the scales of the thread's
// columns part_col(c, part, j) for j / 4 = 2 h, 2 h + 1.
NIBBLE_HD constexpr int part_scale_slot(int part) { return part_col0(part) / 16; }

// ---- the persistent schedule ----------------------------------------------------------
// The wgmma GEMM's CTAs are persistent: CTA b of `ctas` computes the output tiles
// b, b + ctas, b + 2 ctas, ... (tile_m x tile_n each: a TileShape's kRows x
// kCols; numbered row by row: n fastest, the order a grid of one
// CTA per tile starts them in), each `stages` k-stages of kBK, and its
// producer and consumers count stages G across its tiles, so that the producer
// copies and decodes the next tile's first stages while the consumers finish
// the tile before. Counts are 32-bit: the launch checks counts_fit first.
struct Tiles {
  int count;
  int cols;    // tiles along n
  int stages;  // k-stages of a tile
  int tile_m;  // rows of a tile
  int tile_n;  // columns of a tile
  NIBBLE_HD Tiles(int64_t m, int64_t n, int64_t k, int rows, int tile_cols)
      : count(static_cast<int>(((m + rows - 1) / rows) * ((n + tile_cols - 1) / tile_cols))),
        cols(static_cast<int>((n + tile_cols - 1) / tile_cols)),
        stages(static_cast<int>(mma_sync::k_stages(k))),
        tile_m(rows),
        tile_n(tile_cols) {}
  NIBBLE_HD int64_t m0(int tile) const { return static_cast<int64_t>(tile / cols) * tile_m; }
  NIBBLE_HD int64_t n0(int tile) const { return static_cast<int64_t>(tile % cols) * tile_n; }
};

// Tiles' count for an m x n output in 64 bits: what the launch checks with
// counts_fit before Tiles holds it in an int.
inline int64_t tile_count(int64_t m, int64_t n, int rows, int tile_cols) {
  return ((m + rows - 1) / rows) * ((n + tile_cols - 1) / tile_cols);
}

// Whether an m x n output may run half tiles on a device of `sms` SMs: where
// every half tile has an SM of its own. Full tiles would then leave at least
// half the SMs idle, or give some SM a second tile after every other has
// finished, while a half tile takes its SM for well under a full tile's time
// (docs/results/kernels.md#design-choices-measured).
inline bool half_tiles(int64_t m, int64_t n, int sms) {
  return tile_count(m, n, HalfTile::kRows, HalfTile::kCols) <= sms;
}

// The rounds of `tiles` tiles on `sms` SMs (persistent CTAs, one per SM).
inline int64_t waves(int64_t tiles, int sms) { return (tiles + sms - 1) / sms; }

// A half tile's time as a percentage of a full tile's over the same k, per
// datapath (1024 x 1024 outputs, K = 16384, one round of tiles either way, on
// an H100 and an H200: docs/results/kernels.md#design-choices-measured).
inline constexpr int kHalfTileCostScaled = 59;  // the scaled datapath: FP32 scales (UFP4), mixed pairs
inline constexpr int kHalfTileCostE4m3 = 71;    // the E4M3 datapath; UE8M0 pairs too (0.68 on an H200)

// The tiles GemmTiles::kAuto runs an m x n output on (nibble/cuda/gemm.h):
// kHalf where every half tile has an SM (half_tiles); else kWide (half tiles
// on the operands swapped) where C's rows fit a half tile's columns, kHalf
// where its columns do (a full tile would compute no more outputs, the same
// count of tiles); else whichever takes less time by rounds of persistent
// CTAs, each round a tile's time (half_cost: a half tile's, in percent of a
// full tile's): 3072 x 768 outputs are 144 full tiles, two rounds on 132 SMs,
// the second 12 tiles, or 288 half tiles in three rounds, 1.77 full tiles'
// time on the scaled datapath and 2.13 on the E4M3 one. Where every 128 x 64
// tile has an SM, an output of at most 64 rows keeps them although their rows
// are half empty: both are one wave there, and the two shapes measured alike
// (docs/results/kernels.md#design-choices-measured).
inline GemmTiles auto_tiles(int64_t m, int64_t n, int sms, int half_cost) {
  if (half_tiles(m, n, sms)) return GemmTiles::kHalf;
  if (m <= HalfTile::kCols) return GemmTiles::kWide;
  if (n <= HalfTile::kCols) return GemmTiles::kHalf;
  const int64_t full = waves(tile_count(m, n, FullTile::kRows, FullTile::kCols), sms);
  const int64_t half = waves(tile_count(m, n, HalfTile::kRows, HalfTile::kCols), sms);
  return half * half_cost < full * 100 ? GemmTiles::kHalf : GemmTiles::kFull;
}

// Whether a UE8M0 call whose kernel takes operands of m and n rows may run
// them swapped instead (its other operand's scales folded), on tiles of
// shape S: where that order's tiles take no more waves.
template <class S>
bool other_order_fits(int64_t m, int64_t n, int sms) {
  return waves(tile_count(n, m, S::kRows, S::kCols), sms) <= waves(tile_count(m, n, S::kRows, S::kCols), sms);
}

// ---- the ordered split ---------------------------------------------------------------
// Persistent CTAs taking whole tiles leave SMs idle in the last round where
// the tiles are not a multiple of the CTAs: 144 tiles on 132 SMs take two
// tiles' time for 1.09 tiles of work. Splitting a tile's k range between two
// CTAs, each adding its part to partial sums of its own, would change each
// output's order of binary32 adds, which the contract fixes (k order). The
// ordered split hands the sums over instead, so one k order is kept:
// McNaughton's wrap-around rule on the line of a call's (tile, stage) units
// (tile by tile, each tile's stages in k order), every CTA taking a run of
// `per` units (per >= stages, the last CTA what is left). A tile that
// straddles the boundary between CTA c and c + 1 is split there, and its
// order kept by running its first stages on CTA c + 1, first of all its work
// (the "head", which leaves its partial sums in the call's workspace), and
// its last stages on CTA c, last of all (the "tail", which resumes from
// them and stores the outputs). The head ends at its length, stages - o, and
// the tail starts at per - o, no earlier, since per >= stages: each CTA waits
// for the sums only where the other runs slower. CTA c is blockIdx.x
// gridDim.x - 1 - c, so that a tail waits for a CTA launched before it (the
// hardware starts CTAs in index order: a waiting CTA never holds the SM the
// CTA it waits for needs, even beside another such kernel on another stream).
// per = 0: the classic schedule, CTA b taking tiles b, b + ctas, ...
struct Segment {
  int tile;
  int k0;       // its first stage
  int k1;       // past its last
  bool resume;  // starts from the sums of the head of `tile` (slot: the next CTA's)
  bool handoff; // leaves its sums for the tail of `tile` (slot: this CTA's) instead of storing them
};

struct Schedule {
  int count;   // tiles
  int stages;  // per tile
  int ctas;
  int cta;     // this CTA's place: blockIdx.x (classic), or its place on the line
  int head;    // ordered: stages of the head segment (0: none)
  int first;   // ordered: whole tiles [first, end)
  int end;
  int tail;    // ordered: stages of the tail segment (0: none)
  bool ordered;

  // CTA `block` of `ctas`, per units each (0: classic).
  NIBBLE_HD Schedule(const Tiles& t, int64_t per, int block, int ctas_)
      : count(t.count), stages(t.stages), ctas(ctas_), cta(per > 0 ? ctas_ - 1 - block : block), head(0),
        first(0), end(0), tail(0), ordered(per > 0) {
    if (!ordered) return;
    const int64_t line = static_cast<int64_t>(t.count) * t.stages;
    const int64_t u0 = cta * per;
    const int64_t u1 = u0 + per < line ? u0 + per : line;
    const int64_t o0 = u0 % t.stages, o1 = u1 % t.stages;
    head = o0 > 0 ? static_cast<int>(t.stages - o0) : 0;
    first = static_cast<int>((u0 + t.stages - 1) / t.stages);
    end = static_cast<int>(u1 / t.stages);
    tail = static_cast<int>(o1);
  }
  NIBBLE_HD int segments() const {
    if (!ordered) return (count - cta + ctas - 1) / ctas;
    return (head > 0 ? 1 : 0) + (end - first) + (tail > 0 ? 1 : 0);
  }
  NIBBLE_HD Segment segment(int i) const {
    if (!ordered) return {cta + i * ctas, 0, stages, false, false};
    if (head > 0) {
      if (i == 0) return {first - 1, 0, head, false, true};
      --i;
    }
    if (i < end - first) return {first + i, 0, stages, false, false};
    return {end, stages - tail, stages, true, false};
  }
  // Every stage the CTA runs (the rings' count, consumers_hand_back).
  NIBBLE_HD int total_stages() const {
    if (!ordered) return segments() * stages;
    return head + (end - first) * stages + tail;
  }
};

// The units per CTA of the ordered split of `count` tiles of `stages` stages
// over at most `sms` CTAs (at least a tile's, so that no tile is split
// twice), and the CTAs that takes.
inline int64_t ordered_per(int64_t count, int64_t stages, int sms) {
  const int64_t line = count * stages;
  const int64_t per = (line + sms - 1) / sms;
  return per > stages ? per : stages;
}
inline int64_t ordered_ctas(int64_t count, int64_t stages, int64_t per) { return (count * stages + per - 1) / per; }

// The ordered split's workspace (a call's nibble::cuda::GemmWorkspace): one
// flag word per CTA, padded to 256 bytes, then one slot of a full tile's
// sums per CTA (each consumer thread's kAcc registers, kConsumerThreads apart).
inline constexpr int kSplitSlotFloats = mma_sync::kBM * mma_sync::kBN;
inline int64_t split_flag_bytes(int64_t ctas) { return (ctas * 4 + 255) / 256 * 256; }
inline int64_t split_workspace_bytes(int64_t ctas) { return split_flag_bytes(ctas) + ctas * kSplitSlotFloats * 4; }

// ---- B decoded once per call ---------------------------------------------------------
// The producer decodes each stage of B for every tile that reads it: the
// activation GEMMs of a training step (M = 16384 tokens) decode each row of
// the weights 128 times, about 30 M of the kernel's 253 M instructions at
// 16384 x 2304 x 768 (docs/results/training-speed.md). With a workspace, the
// scaled datapath's calls whose B each CTA row of tiles reads again
// (at least kPredecodeMinTileRows rows of tiles) and whose decoded B fits
// kPredecodeMaxBytes decode B once, in a kernel of its own, to the FP16
// stages the producer would write, in global memory; the producer then
// copies a stage where it decoded one. The layout: per stage, per 64-k atom,
// the rows of B (padded to kPredecodeRowPad, zero past B's end) of 128 bytes,
// in the decoded stage's swizzle (decoded_offset): a tile's rows of an atom
// are one run of bytes, copied as they lie.
inline constexpr int kPredecodeMinTileRows = 16;
inline constexpr int64_t kPredecodeMaxBytes = int64_t{8} << 20;
inline constexpr int kPredecodeRowPad = mma_sync::kBN;
NIBBLE_HD int64_t predecoded_rows(int64_t n) { return (n + kPredecodeRowPad - 1) / kPredecodeRowPad * kPredecodeRowPad; }
NIBBLE_HD int64_t predecoded_bytes(int64_t n, int64_t k) {
  return predecoded_rows(n) * mma_sync::k_stages(k) * (mma_sync::kBK / kAtomK) * 128;
}
// The byte of row n's 16-byte chunk (slice, half) of stage st, B's rows padded to `rows`.
NIBBLE_HD int64_t predecoded_offset(int64_t rows, int64_t st, int64_t n, int slice, int half) {
  const int64_t atom = st * (mma_sync::kBK / kAtomK) + slice / (kAtomK / kSliceK);
  const int chunk = 2 * (slice % (kAtomK / kSliceK)) + half;
  return (atom * rows + n) * 128 + ((chunk ^ static_cast<int>(n % 8)) * 16);
}
static_assert(kAtomBytes == kPredecodeRowPad * 128, "a full tile's rows of an atom are the atom");
inline bool predecode_b(int64_t m, int64_t n, int64_t k) {
  return (m + mma_sync::kBM - 1) / mma_sync::kBM >= kPredecodeMinTileRows && predecoded_bytes(n, k) <= kPredecodeMaxBytes;
}
// A call's whole workspace on `sms` SMs (nibble::cuda::gemm_workspace_bytes):
// the ordered split's, then the room for B decoded once.
inline int64_t workspace_bytes(int64_t sms) { return split_workspace_bytes(sms) + kPredecodeMaxBytes; }

// The tiles and schedule of a call that may take the ordered split: by
// auto_tiles's measure (a round of full tiles costs 100, of half tiles
// half_cost; an ordered CTA's `per` units cost per / stages rounds), the
// ordered split on full or half tiles where it takes less time than the
// classic schedule on the tiles auto_tiles picks (or on `forced`, kFull or
// kHalf), and where its tiles are at most two rounds (kSplitMaxRounds). A
// full tile's split pays where the last round is partly idle: a weight
// gradient of 3072 x 768 outputs (144 tiles on 132 SMs, or 288 half tiles in
// three rounds: 177) takes 109 ordered, and measured 1.53x faster. Over more
// rounds the rule gains little, and the order of the tiles costs more: the
// classic schedule runs neighbouring tiles at once, which share their rows of
// A, where the ordered split runs a CTA's tiles one after another; an
// activation GEMM of 16384 x 2304 outputs, K 768 (18 rounds, 105 of 108
// ordered) measured 1.11x slower ordered
// (docs/results/kernels.md#design-choices-measured). An output of at most 64
// rows keeps auto_tiles's 64 x 128 tiles.
inline constexpr int kSplitMaxRounds = 2;
struct TilePlan {
  GemmTiles shape;
  int64_t per;  // units per CTA of the ordered split, 0: classic
};
inline TilePlan split_tiles(int64_t m, int64_t n, int64_t k, int sms, int half_cost, GemmTiles forced) {
  const int64_t stages = mma_sync::k_stages(k);
  const GemmTiles classic = forced != GemmTiles::kAuto ? forced : auto_tiles(m, n, sms, half_cost);
  if (classic == GemmTiles::kWide || stages == 0) return {classic, 0};
  auto cost = [&](GemmTiles shape) { return shape == GemmTiles::kHalf ? int64_t{half_cost} : int64_t{100}; };
  auto count = [&](GemmTiles shape) {
    return shape == GemmTiles::kHalf ? tile_count(m, n, HalfTile::kRows, HalfTile::kCols)
                                     : tile_count(m, n, FullTile::kRows, FullTile::kCols);
  };
  TilePlan best{classic, 0};
  int64_t best_cost = waves(count(classic), sms) * stages * cost(classic);
  for (GemmTiles shape : {GemmTiles::kFull, GemmTiles::kHalf}) {
    if (forced != GemmTiles::kAuto && shape != forced) continue;
    if (count(shape) > kSplitMaxRounds * sms) continue;
    const int64_t per = ordered_per(count(shape), stages, sms);
    if (per * cost(shape) < best_cost) {
      best = {shape, per};
      best_cost = per * cost(shape);
    }
  }
  return best;
}

// Whether `tiles` tiles of `stages` stages on `ctas` CTAs keep every count of
// Tiles and Ring (tile + ctas included) within int.
inline bool counts_fit(int64_t tiles, int64_t ctas, int64_t stages) {
  return tiles <= INT32_MAX - ctas && (tiles + ctas - 1) / ctas * stages <= INT32_MAX - 2;
}

// The CTA's stage count G, and where it stands in the two rings of a
// pipeline kBufs stages deep: decoded buffer buf = G % kBufs and raw stage
// buffer raw = G % (kBufs + 1). The E4M3 datapath runs two decoded buffers
// (its decoded A scales take the room of two more), the scaled datapath three
// (its scales stay in the raw stages, so the room holds a third buffer and a
// fourth raw stage: kFourthRawSlot), which lets its producer run two stages
// ahead of the consumers instead of one
// (docs/results/kernels.md#design-choices-measured).
template <int kBufs>
struct RingOf {
  static_assert(kBufs == 2 || kBufs == 3, "the room after the raw stages holds four decoded buffers");
  static constexpr int kRaw = kBufs + 1;
  int stage = 0;
  int buf = 0;
  int raw = 0;
  NIBBLE_HD int next_raw() const { return raw == kRaw - 1 ? 0 : raw + 1; }
  NIBBLE_HD void advance() {
    ++stage;
    buf = buf == kBufs - 1 ? 0 : buf + 1;
    raw = next_raw();
  }
};
using Ring = RingOf<2>;
static_assert(Ring::kRaw == mma_sync::kStages, "the two-buffer ring's raw stages are the mma.sync kernel's");

// A three-buffer ring's fourth raw stage lies in the room of decoded buffer
// kFourthRawSlot, after the three buffers it decodes into.
inline constexpr int kFourthRawSlot = 3;
static_assert(mma_sync::kStageBytes <= kDecodedBytes, "a raw stage fits a decoded buffer's room");

// The hand-over of the kBufs decoded buffers (and of the raw stage the
// producer copies into next): before it fills stage G the producer waits for
// the consumers to hand back stage G - kBufs (same decoded buffer; its raw
// stage, (G - kBufs) % (kBufs + 1), is the one stage G + 1's copy goes into),
// and the consumers hand back every stage the producer will wait for: all but
// the CTA's last kBufs. Each wait and hand-back is one use of the buffer's
// named barrier, so their counts must match buffer by buffer.
template <int kBufs>
NIBBLE_HD bool producer_waits(int stage) {
  return stage >= kBufs;
}
template <int kBufs>
NIBBLE_HD bool consumers_hand_back(int stage, int cta_stages) {
  return stage + kBufs < cta_stages;
}

}  // namespace nibble::cuda::wgmma
