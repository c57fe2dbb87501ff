// The shared-memory layout, copy plan and fragment mapping of the mma.sync GEMM
// (kernels/src/gemm_mma_sync.cu), written once for host and device so that
// tests/kernels/gemm_layout_test.cpp can check the index arithmetic (bounds,
// alignment, bank conflicts, coverage, the k permutation shared by A and B)
// and the 4-bit decode on the host, without a GPU.
//
// Stage = 128 k of a 128 x 128 CTA tile, kept as raw packed codes and raw
// scale codes (what cp.async copies, no decode on the way in):
//   codes:  256 rows (A rows 0..127, then B rows) x 80 B: 64 B of codes
//           (128 k) + 16 B of padding. 80 B = 20 words, and 20 * g mod 32 for
//           g = 0..7 is {0,20,8,28,16,4,24,12}: the 8 rows of an mma fragment
//           start 4 banks apart, so the 2-byte (k16) and 4-byte (k32) reads of
//           8 rows x 4 quads never conflict. Every 16-byte copy lands aligned.
//   scales: 256 rows x 48 B: the row's scale codes for the stage's 128 k
//           (4 or 8 codes of 1 B, or of 4 B for FP32 scales: 4..32 B).
//           48 B = 12 words, 12 * g mod 32 distinct for 8 rows.
// Stage bytes: 256 * 80 + 256 * 48 = 32 KiB; 3 stages + two 256-entry scale
// decode tables (2 KiB) = 98 KiB, so two CTAs fit in an SM's 228 KiB.
#pragma once

#include <cstdint>

#include "nibble/cuda/quant_math.h"

namespace nibble::cuda::mma_sync {

inline constexpr int kBM = 128;
inline constexpr int kBN = 128;
inline constexpr int kBK = 128;
// The k-stages of kBK that cover k (both GEMM kernels).
NIBBLE_HD constexpr int64_t k_stages(int64_t k) { return (k + kBK - 1) / kBK; }
inline constexpr int kStages = 3;
inline constexpr int kThreads = 128;  // 4 warps, 2 (M) x 2 (N), warp tile 64 x 64
inline constexpr int kWarpM = 64;
inline constexpr int kWarpN = 64;
inline constexpr int kRowBytes = 80;
inline constexpr int kCodeBytesPerRow = kBK / 2;  // 64
inline constexpr int kScaleRowBytes = 48;
inline constexpr int kCodeBytes = (kBM + kBN) * kRowBytes;
inline constexpr int kScaleBytes = (kBM + kBN) * kScaleRowBytes;
inline constexpr int kStageBytes = kCodeBytes + kScaleBytes;
inline constexpr int kLutEntries = 256;
inline constexpr int kLutBytes = 2 * kLutEntries * 4;
inline constexpr int kSmemBytes = kStages * kStageBytes + kLutBytes;
inline constexpr int kChunksPerRow = kCodeBytesPerRow / 16;                     // 16-byte copies per row
// A thread's code copies of a stage (code_copy, below).
NIBBLE_HD constexpr int code_copies(int threads, int b_rows = kBN) { return (kBM + b_rows) * kChunksPerRow / threads; }
inline constexpr int kCodeCopiesPerThread = code_copies(kThreads);  // 8

// Byte offset in a stage of byte `byte` of the codes of row `row` of operand
// `op` (0 = A, 1 = B).
NIBBLE_HD int code_offset(int op, int row, int byte) { return (op * kBM + row) * kRowBytes + byte; }
// Byte offset in a stage of the scale window of row `row` of operand `op`.
NIBBLE_HD int scale_offset(int op, int row) { return kCodeBytes + (op * kBM + row) * kScaleRowBytes; }

// The i-th 16-byte code copy of thread tid of `threads`: operand, row in the
// tile, chunk. The copies run over A's rows, then B's: a stage of b_rows rows
// of B (the wgmma GEMM's half tiles: 64) takes the first code_copies(threads, b_rows)
// of each thread.
struct CodeCopy {
  int op;
  int row;
  int chunk;
};
NIBBLE_HD CodeCopy code_copy(int i, int tid, int threads = kThreads) {
  const int c = i * threads + tid;
  const int row = c / kChunksPerRow;
  return {row / kBM, row % kBM, c % kChunksPerRow};
}

// Bytes of a row of codes_ld bytes from chunk `chunk` of a stage's row on: a
// copy at stage byte b reads 16 bytes there when b < this, else zero-fills.
// A stage spans kCodeBytesPerRow bytes, so a row shorter than that (K < kBK)
// has chunks that start past its end: 0, not a wrapped difference that would
// read the next row, or past the operand's end after its last row.
NIBBLE_HD constexpr uint32_t code_bytes_left(int64_t codes_ld, int chunk) {
  const int64_t start = int64_t{16} * chunk;
  return codes_ld > start ? static_cast<uint32_t>(codes_ld - start) : 0u;
}

// Bytes of scale codes a row needs for one stage: 128 / block_cols codes.
NIBBLE_HD int scale_window_bytes(int block_cols, int scale_bytes) { return (kBK / block_cols) * scale_bytes; }

// Where the codes of the mma fragment of lane quad `quad` lie in a row, for
// k-block bi of width step (16 or 32) of a stage. INT8 path: 4 bytes (k32:
// elements 8q..8q+7 of the block) or 2 bytes (k16: elements 4q..4q+3).
NIBBLE_HD int int8_fragment_byte(int step, int bi, int quad) {
  return step == 32 ? bi * 16 + 4 * quad : bi * 8 + 2 * quad;
}
// FP16 path: 2 bytes (elements 4q..4q+3 of 16-element chunk ch of the block).
NIBBLE_HD int half_fragment_byte(int step, int bi, int chunk, int quad) {
  return bi * (step / 2) + chunk * 8 + 2 * quad;
}

// The scale code of k-block bi (width step) of a stage: index in the row's
// window, for an operand whose blocks are 2^block_cols_log2 wide (>= step).
NIBBLE_HD int scale_column(int step, int bi, int block_cols_log2) { return (bi * step) >> block_cols_log2; }

// ---- the 4-bit decode -----------------------------------------------------------
// The table decode_codes4 reads for format f: the int8 units of codes 0..15,
// four per word (host side: the GEMMs' operand setup).
constexpr bool units_fit_int8() {
  for (Format f : kAllFormats) {
    if (max_decode_units(f) > 127u) return false;
  }
  return true;
}
static_assert(units_fit_int8(), "every format of golden's table decodes to int8 units");
inline void units_table(Format f, uint32_t (&lut)[4]) {
  lut[0] = lut[1] = lut[2] = lut[3] = 0u;
  for (uint32_t code = 0; code < 16; ++code) {
    const int32_t units = decode(f, static_cast<uint8_t>(code)).signed_units();
    lut[code / 4] |= (static_cast<uint32_t>(units) & 0xFFu) << (8 * (code % 4));
  }
}

// Four codes -> four int8 units of the format whose 16 units are lut (four
// per word): byte i = units of code i. sel: the codes' low three bits
// (nibble i = code i & 7); neg: 0xFF in byte i where code i has bit 3 set.
// Two table lookups (codes 0..7, codes 8..15), then a select per byte.
NIBBLE_HD uint32_t decode_selected4(uint32_t sel, uint32_t neg, const uint32_t (&lut)[4]) {
  const uint32_t low = math::byte_perm_sx(lut[0], lut[1], sel);   // codes 0..7
  const uint32_t high = math::byte_perm_sx(lut[2], lut[3], sel);  // codes 8..15
  return (low & ~neg) | (high & neg);
}

// The neg masks of decode_selected4 for codes 0..3 and 4..7 of w: the top bit
// of code i is the top bit of byte i / 2 of w (odd i) or of w << 4 (even i),
// and a selector nibble with bit 3 set replicates a byte's top bit.
NIBBLE_HD uint32_t sign_bytes_low(uint32_t w) { return math::byte_perm_sx(w << 4, w, 0xD9C8u); }
NIBBLE_HD uint32_t sign_bytes_high(uint32_t w) { return math::byte_perm_sx(w << 4, w, 0xFBEAu); }

// Four codes (nibbles 0..3 of w; higher bits ignored) -> four int8 units.
NIBBLE_HD uint32_t decode_codes4(uint32_t w, const uint32_t (&lut)[4]) {
  return decode_selected4(w & 0x7777u, sign_bytes_low(w), lut);
}

// Eight codes (nibbles 0..7 of w) -> codes 0..3 in lo, codes 4..7 in hi, as
// decode_codes4 of w and of w >> 16, sharing the masking and the shift.
NIBBLE_HD void decode_codes8(uint32_t w, const uint32_t (&lut)[4], uint32_t& lo, uint32_t& hi) {
  const uint32_t sel = w & 0x77777777u;
  lo = decode_selected4(sel, sign_bytes_low(w), lut);
  hi = decode_selected4(sel >> 16, sign_bytes_high(w), lut);
}

}  // namespace nibble::cuda::mma_sync
