// The GEMM kernels' layouts and register decode (nibble/cuda/detail/
// gemm_mma_sync_layout.h, gemm_wgmma_layout.h), compiled for the host: the
// 4-bit decode against golden, and the index arithmetic of the shared-memory
// stages, fragments, copies, swizzle, tile shapes and persistent schedule
// (bounds, alignment, bank conflicts, coverage, the k order A and B share),
// and the UE8M0 FMA and fold ranges. Needs no GPU: it runs wherever the
// kernels are built.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_test_data.h"
#include "nibble/cuda/detail/gemm_mma_sync_layout.h"
#include "nibble/cuda/detail/gemm_wgmma_layout.h"
#include "nibble/cuda/quant_math.h"
#include "nibble/dot.h"
#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble {
namespace {

namespace math = cuda::math;

// ---- the mma.sync GEMM: decode, shared-memory layout and fragment mapping -------------
namespace mma_sync = cuda::mma_sync;

TEST(MmaSyncGemmLayout, DecodeOfFourAndOfEightCodesMatchesGolden) {
  // Every 16-bit value of four codes, for every format: decode_codes4 against
  // golden with junk above bit 15 (ignored), and decode_codes8 with the value
  // in either half of its word and junk in the other, which must decode alike.
  size_t cases = 0;
  for (Format f : kAllFormats) {
    uint32_t lut[4];
    mma_sync::units_table(f, lut);
    for (uint32_t v = 0; v < 65536; ++v) {
      const uint32_t junk = (v * 0x9E3779B9u) >> 16;
      const uint32_t got = mma_sync::decode_codes4(v | (junk << 16), lut);
      for (int i = 0; i < 4; ++i) {
        const int8_t want = static_cast<int8_t>(decode(f, static_cast<uint8_t>((v >> (4 * i)) & 0xFu)).signed_units());
        ASSERT_EQ(static_cast<int8_t>((got >> (8 * i)) & 0xFFu), want) << name(f) << " codes " << test::hex32(v);
      }
      for (int half = 0; half < 2; ++half) {
        const uint32_t w = half == 0 ? (v | (junk << 16)) : ((v << 16) | junk);
        uint32_t lo = 0, hi = 0;
        mma_sync::decode_codes8(w, lut, lo, hi);
        ASSERT_EQ(half == 0 ? lo : hi, got) << name(f) << " word " << test::hex32(w);
      }
      ++cases;
    }
  }
  EXPECT_EQ(cases, 3u * 65536u);
}

TEST(MmaSyncGemmLayout, BytePermuteReplicatesTheTopBitWhereTheSelectorAsks) {
  // prmt.b32's default mode, which the decode's sign masks rely on (the
  // device runs the instruction itself; this pins the host definition).
  const uint32_t x = 0x7F80017Eu, y = 0xFF00C301u;
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x3210u), x);
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x7654u), y);
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x8888u), 0x00000000u);  // byte 0x7E: top bit clear
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x9999u), 0x00000000u);  // 0x01
  EXPECT_EQ(math::byte_perm_sx(x, y, 0xAAAAu), 0xFFFFFFFFu);  // 0x80
  EXPECT_EQ(math::byte_perm_sx(x, y, 0xF8CDu), 0xFF0000FFu);  // bytes 7, 0, 4, 5: 0xFF, 0x7E, 0x01, 0xC3
  EXPECT_EQ(math::byte_perm(x, y, 0xF8CDu), math::byte_perm_sx(x, y, 0x7045u));  // bit 3 ignored
}

TEST(MmaSyncGemmLayout, StageFitsTwoCtasPerSmAndCopiesCoverEveryChunkOnce) {
  static_assert(mma_sync::kSmemBytes <= 227 * 1024 / 2 - 1024, "two CTAs per SM");
  static_assert(mma_sync::kStageBytes % 16 == 0 && mma_sync::kCodeBytes % 16 == 0 && mma_sync::kRowBytes % 16 == 0);
  static_assert(mma_sync::kScaleRowBytes % 16 == 0 && mma_sync::kRowBytes >= mma_sync::kCodeBytesPerRow);
  std::set<std::tuple<int, int, int>> seen;
  for (int tid = 0; tid < mma_sync::kThreads; ++tid) {
    for (int i = 0; i < mma_sync::kCodeCopiesPerThread; ++i) {
      const mma_sync::CodeCopy c = mma_sync::code_copy(i, tid);
      ASSERT_TRUE(c.op == 0 || c.op == 1);
      ASSERT_TRUE(c.row >= 0 && c.row < mma_sync::kBM && c.chunk >= 0 && c.chunk < mma_sync::kChunksPerRow);
      EXPECT_EQ(c.op, i / (mma_sync::kCodeCopiesPerThread / 2)) << "the operand must be known at compile time";
      const int dst = mma_sync::code_offset(c.op, c.row, c.chunk * 16);
      EXPECT_EQ(dst % 16, 0);
      EXPECT_LE(dst + 16, mma_sync::kCodeBytes);
      EXPECT_TRUE(seen.insert({c.op, c.row, c.chunk}).second);
    }
    for (int op = 0; op < 2; ++op) {
      const int dst = mma_sync::scale_offset(op, tid);
      EXPECT_EQ(dst % 16, 0);
      EXPECT_GE(dst, mma_sync::kCodeBytes);
      EXPECT_LE(dst + mma_sync::kScaleRowBytes, mma_sync::kStageBytes);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(2 * mma_sync::kBM * mma_sync::kChunksPerRow));
}

// Every code copy reads inside its own row, and the copies of a row's stages
// read each of its bytes exactly once, for every row length the kernels take
// (codes_ld a multiple of 16, shorter and longer than a stage's 64 bytes):
// the source arithmetic of gemm_stage.cuh's code_source and issue_code.
TEST(MmaSyncGemmLayout, CodeCopiesReadInsideTheirRowAndCoverItOnce) {
  size_t copies = 0;
  for (int64_t ld = 16; ld <= 8 * mma_sync::kCodeBytesPerRow; ld += 16) {
    std::vector<int> reads(static_cast<size_t>(ld), 0);
    const int64_t stages = (2 * ld + mma_sync::kBK - 1) / mma_sync::kBK;
    for (int64_t st = 0; st <= stages; ++st) {  // one stage past the end, as a tile's padding
      for (int chunk = 0; chunk < mma_sync::kChunksPerRow; ++chunk) {
        const uint32_t left = mma_sync::code_bytes_left(ld, chunk);
        const uint32_t byte = static_cast<uint32_t>(st * mma_sync::kBK / 2);
        if (byte >= left) continue;  // zero fill: nothing read
        const int64_t begin = int64_t{16} * chunk + byte;
        ASSERT_GE(begin, 0);
        ASSERT_LE(begin + 16, ld) << "codes_ld " << ld << ", stage " << st << ", chunk " << chunk;
        for (int64_t b = begin; b < begin + 16; ++b) ++reads[static_cast<size_t>(b)];
        ++copies;
      }
    }
    for (int64_t b = 0; b < ld; ++b) ASSERT_EQ(reads[static_cast<size_t>(b)], 1) << "codes_ld " << ld << ", byte " << b;
  }
  EXPECT_EQ(mma_sync::code_bytes_left(32, 3), 0u) << "a chunk past a short row's end";
  EXPECT_GT(copies, 0u);
}

// Shared-memory words read by one warp-wide load: conflict-free when no bank
// is asked for two different words.
bool conflict_free(const std::vector<std::pair<int, int>>& lane_byte_ranges) {
  std::map<int, std::set<int>> words_of_bank;
  for (const auto& [begin, bytes] : lane_byte_ranges) {
    for (int b = begin; b < begin + bytes; b += 4) words_of_bank[(b / 4) % 32].insert(b / 4);
  }
  for (const auto& [bank, words] : words_of_bank) {
    if (words.size() > 1) return false;
  }
  return true;
}

TEST(MmaSyncGemmLayout, FragmentReadsAreAlignedInBoundsAndConflictFree) {
  size_t loads = 0;
  for (int step : {16, 32}) {
    for (int bi = 0; bi < mma_sync::kBK / step; ++bi) {
      for (int op = 0; op < 2; ++op) {
        for (int base = 0; base < mma_sync::kBM; base += 8) {  // the 8 rows (groups) of one fragment read
          for (int ch = 0; ch < step / 16 + 1; ++ch) {
            const bool half = ch < step / 16;  // the FP16 path's chunk reads, then the INT8 read
            std::vector<std::pair<int, int>> ranges;
            for (int lane = 0; lane < 32; ++lane) {
              const int group = lane / 4, quad = lane % 4;
              const int byte = half ? mma_sync::half_fragment_byte(step, bi, ch, quad) : mma_sync::int8_fragment_byte(step, bi, quad);
              const int bytes = half || step == 16 ? 2 : 4;
              ASSERT_EQ(byte % bytes, 0);
              ASSERT_LE(byte + bytes, mma_sync::kCodeBytesPerRow);
              const int at = mma_sync::code_offset(op, base + group, byte);
              ranges.push_back({at - at % 4, 4});  // the word holding it
            }
            EXPECT_TRUE(conflict_free(ranges)) << "step " << step << " block " << bi << " rows " << base;
            ++loads;
          }
        }
        // Scale reads: INT8 path rows group (A) and 2 * quad (+1) (B); FP32 scales are words.
        for (int base = 0; base < mma_sync::kBM; base += 8) {
          std::vector<std::pair<int, int>> a_rows, b_rows;
          for (int lane = 0; lane < 32; ++lane) {
            a_rows.push_back({mma_sync::scale_offset(op, base + lane / 4) + 4 * bi % 32, 4});
            b_rows.push_back({mma_sync::scale_offset(op, base + 2 * (lane % 4)) + 4 * bi % 32, 4});
          }
          EXPECT_TRUE(conflict_free(a_rows));
          EXPECT_TRUE(conflict_free(b_rows));
        }
      }
    }
  }
  EXPECT_GT(loads, 0u);
}

// The k permutation: each mma k slot (PTX fragment layouts of m16n8k32/k16
// s8 and m16n8k16 f16) must receive the same element of the block from A as
// from B, and the slots must take every element of the block exactly once.
TEST(MmaSyncGemmLayout, FragmentsGiveAAndBTheSameElementPerSlot) {
  for (int step : {16, 32}) {
    for (int bi = 0; bi < mma_sync::kBK / step; ++bi) {
      // INT8 path. slot_of[register][byte] for lane quad q (A and B registers alike).
      std::map<int, int> a_slot_element, b_slot_element;
      for (int quad = 0; quad < 4; ++quad) {
        const int byte = mma_sync::int8_fragment_byte(step, bi, quad);
        const int first = 2 * byte - bi * step;  // element (within the block) of the first code read
        for (int j = 0; j < 4; ++j) {
          // register 0 (a0 / b0): slots 4q + j <- nibble j; register 2 / b1 (k32): slots 16 + 4q + j <- nibble 4 + j.
          a_slot_element[4 * quad + j] = first + j;
          b_slot_element[4 * quad + j] = first + j;
          if (step == 32) {
            a_slot_element[16 + 4 * quad + j] = first + 4 + j;
            b_slot_element[16 + 4 * quad + j] = first + 4 + j;
          }
        }
      }
      std::set<int> elements;
      for (const auto& [slot, e] : a_slot_element) {
        EXPECT_EQ(b_slot_element[slot], e);
        EXPECT_TRUE(e >= 0 && e < step) << "step " << step << " slot " << slot;
        elements.insert(e);
      }
      EXPECT_EQ(elements.size(), static_cast<size_t>(step)) << "int8 step " << step;

      // FP16 path: per chunk, a0/b0 (slots 2q, 2q+1) <- elements 4q, 4q+1 of the
      // chunk's codes; a2/b1 (slots 2q+8, 2q+9) <- 4q+2, 4q+3.
      std::set<int> half_elements;
      for (int ch = 0; ch < step / 16; ++ch) {
        std::set<int> slots;
        for (int quad = 0; quad < 4; ++quad) {
          const int first = 2 * mma_sync::half_fragment_byte(step, bi, ch, quad) - bi * step;
          for (int j = 0; j < 4; ++j) {
            const int slot = j < 2 ? 2 * quad + j : 2 * quad + 8 + (j - 2);
            EXPECT_TRUE(slots.insert(slot).second);
            EXPECT_TRUE(half_elements.insert(first + j).second);
            EXPECT_TRUE(first + j >= 16 * ch && first + j < 16 * ch + 16);
          }
        }
        EXPECT_EQ(slots.size(), 16u);
      }
      EXPECT_EQ(half_elements.size(), static_cast<size_t>(step)) << "fp16 step " << step;
    }
  }
}

// The scale window a stage copies (quantize.cu's layout: scales_ld = the
// block-grid width rounded up to 16 codes) lies inside the row, is aligned for
// its copy size, and column scale_column() of it is golden's scale of the
// k-block (k / block_cols).
TEST(MmaSyncGemmLayout, ScaleWindowsAreInsideTheRowAndPickGoldensScale) {
  size_t checked = 0;
  for (BlockShape ba : kAllBlockShapes) {
    for (BlockShape bb : kAllBlockShapes) {
      const int step = std::min(block_cols(ba), block_cols(bb));
      for (int scale_bytes : {1, 4}) {
        for (int64_t cols : {1, 15, 16, 17, 96, 127, 128, 129, 200, 544, 912, 1040, 4095, 4096, 8192}) {
          const int bc = block_cols(ba);
          const int64_t scale_cols = (cols + bc - 1) / bc;
          const int64_t scales_ld = (scale_cols + 15) / 16 * 16;
          const int window = mma_sync::scale_window_bytes(bc, scale_bytes);
          ASSERT_TRUE(window == 4 || window == 8 || window == 16 || window == 32);
          ASSERT_LE(window, mma_sync::kScaleRowBytes);
          const int64_t k_blocks = (cols + step - 1) / step;
          for (int64_t k0 = 0; k0 < cols; k0 += mma_sync::kBK) {
            const int64_t first = k0 / bc;  // in codes
            EXPECT_LE((first * scale_bytes) + window, scales_ld * scale_bytes) << cols;
            EXPECT_EQ((first * scale_bytes) % std::min(window, 16), 0);
            for (int bi = 0; bi < mma_sync::kBK / step; ++bi) {
              if (k0 / step + bi >= k_blocks) break;
              const int col = mma_sync::scale_column(step, bi, bc == 16 ? 4 : 5);
              EXPECT_EQ(first + col, (k0 + bi * step) / bc);
              EXPECT_LT((col + 1) * scale_bytes, window + 1);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

// ---- the wgmma GEMM: FP16 decode and the wgmma shared-memory layout ----------------
namespace wgmma = cuda::wgmma;

// An FP16 bit pattern as a double (normal and subnormal numbers, no Inf/NaN).
double half_value(uint32_t h) {
  const int e = static_cast<int>((h >> 10) & 0x1Fu);
  const double m = static_cast<double>(h & 0x3FFu);
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0 + m, e - 25);
  return (h & 0x8000u) != 0u ? -mag : mag;
}

TEST(WgmmaGemmLayout, HalfDecodeOfEightCodesMatchesGolden) {
  // Every 16-bit value of each half of the word (codes 0..3 or 4..7) under
  // varying junk in the other half, which must not matter; with the units
  // table (E4M3 datapath) and the values table (scaled datapath, units *
  // 2^lsb), the two tables gemm_stage.cuh and gemm_wgmma.cu build.
  size_t cases = 0;
  for (Format f : kAllFormats) {
    for (int exp2 : {0, lsb_exp(f)}) {
      uint32_t high[4];
      ASSERT_TRUE(wgmma::half_high_table(f, high, exp2)) << name(f) << ": a value's FP16 needs its low byte";
      for (uint32_t v = 0; v < 65536; ++v) {
        const uint32_t junk = (v * 0x9E3779B9u) >> 16;
        for (int part = 0; part < 2; ++part) {
          const uint32_t w = part == 0 ? (v | (junk << 16)) : ((v << 16) | junk);
          uint32_t h[4];
          wgmma::decode_codes8_half(w, high, h);
          for (int i = 0; i < 4; ++i) {
            const uint32_t pair = h[2 * part + i / 2];
            const uint32_t bits = (pair >> (16 * (i % 2))) & 0xFFFFu;
            const uint8_t code = static_cast<uint8_t>((v >> (4 * i)) & 0xFu);
            const int32_t units = decode(f, code).signed_units();
            ASSERT_EQ(half_value(bits), std::ldexp(static_cast<double>(units), exp2))
                << name(f) << " 2^" << exp2 << " word " << test::hex32(w);
            if (exp2 != 0) {
              ASSERT_EQ(half_value(bits), static_cast<double>(decode_value(f, code))) << name(f);
            }
            if (units == 0) {
              ASSERT_EQ(bits, 0u) << "zero codes must give +0";
            }
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3u * 2u * 2u * 65536u);
}

TEST(WgmmaGemmLayout, RegisterAFragmentsAndDecodedBAgreeOnEveryK) {
  // Both datapaths' consumers decode A's register fragments from the raw
  // stage, and the producer writes B's decoded rows in the matching k order
  // (chunk_pair). For every thread of a consumer warpgroup, slice, register
  // and element: wgmma's A layout gives a logical (row, k); the FP16 there
  // must be the units of the raw code that B's decoded row holds at that k,
  // and each row's 16 logical k must come from 16 distinct codes. Raw rows are
  // seeded random codes; the gathers' loads are checked for bank conflicts.
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed + 13));
  std::mt19937_64 rng(test::kKernelTestSeed + 13);
  std::vector<uint8_t> stage(mma_sync::kStageBytes);
  for (uint8_t& b : stage) b = static_cast<uint8_t>(rng());
  std::set<int> pairs;
  for (int half = 0; half < 2; ++half) {
    for (int j = 0; j < 4; ++j) pairs.insert(wgmma::chunk_pair(half, j));
  }
  EXPECT_EQ(pairs.size(), 8u);
  const auto code_at = [&](int row, int index) {  // code `index` of a slice-0-relative index in A's raw row
    const uint8_t byte = stage[static_cast<size_t>(mma_sync::code_offset(0, row, index / 2))];
    return static_cast<uint8_t>(index % 2 == 0 ? byte & 0xFu : byte >> 4);
  };
  size_t elements = 0;
  for (Format f : kAllFormats) {
    uint32_t high[4];
    ASSERT_TRUE(wgmma::half_high_table(f, high));
    for (int s = 0; s < wgmma::kSlices; ++s) {
      for (int warp = 0; warp < 4; ++warp) {
        std::map<int, std::set<int>> codes_of_row;  // row -> physical codes its logical k read
        std::vector<std::pair<int, int>> loads_x, loads_y;  // the two load instructions (rows g, g + 8)
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, q = lane % 4, row0 = 16 * warp + g;
          const int x_off = wgmma::a_fragment_offset(row0, s, q), y_off = wgmma::a_fragment_offset(row0 + 8, s, q);
          ASSERT_EQ(x_off % 4, 0);
          ASSERT_EQ(y_off % 4, 0);
          loads_x.push_back({x_off, 4});
          loads_y.push_back({y_off, 4});
          uint32_t x = 0, y = 0;
          std::memcpy(&x, &stage[static_cast<size_t>(x_off)], 4);
          std::memcpy(&y, &stage[static_cast<size_t>(y_off)], 4);
          uint32_t a[4];
          wgmma::decode_a_fragment(math::byte_perm(x, y, wgmma::a_fragment_selector(q)), high, a);
          for (int i = 0; i < 4; ++i) {
            for (int e = 0; e < 2; ++e) {
              const int row = row0 + (i % 2 == 1 ? 8 : 0);   // a1, a3: row g + 8
              const int k = 2 * q + e + (i >= 2 ? 8 : 0);     // a2, a3: k + 8
              const int index = 2 * wgmma::chunk_pair(k / 8, (k % 8) / 2) + k % 2;  // B's code at k
              const uint8_t code = code_at(row, 16 * s + index);
              const uint32_t bits = (a[i] >> (16 * e)) & 0xFFFFu;
              ASSERT_EQ(half_value(bits), static_cast<double>(decode(f, code).signed_units()))
                  << name(f) << " slice " << s << " lane " << lane << " register " << i << " element " << e;
              EXPECT_TRUE(codes_of_row[row].insert(index).second) << "row " << row << " k " << k;
              ++elements;
            }
          }
        }
        for (const auto& [row, codes] : codes_of_row) EXPECT_EQ(codes.size(), 16u) << "row " << row;
        EXPECT_TRUE(conflict_free(loads_x)) << "slice " << s << " warp " << warp;
        EXPECT_TRUE(conflict_free(loads_y)) << "slice " << s << " warp " << warp;
      }
    }
  }
  EXPECT_EQ(elements, 3u * wgmma::kSlices * 4 * 32 * 8);
}

TEST(WgmmaGemmLayout, E4M3DatapathAScalesLoadInRowPairsWithoutBankConflicts) {
  // The producer writes word a_scale_word(block, t) for its row t; a consumer
  // thread loads rows row0 and row0 + 8 (row0 % 16 < 8) as one 8-byte load.
  std::set<int> words;
  int phases = 0;
  for (int bi = 0; bi < wgmma::kMaxBlocksPerStage; ++bi) {
    for (int row = 0; row < mma_sync::kBM; ++row) {
      const int w = wgmma::a_scale_word(bi, row);
      ASSERT_GE(w, 0);
      ASSERT_LE(4 * w + 4, wgmma::kAScaleBytes);
      EXPECT_TRUE(words.insert(w).second) << "block " << bi << " row " << row;
      if (row % 16 < 8) {
        EXPECT_EQ(w % 2, 0);
        EXPECT_EQ(wgmma::a_scale_word(bi, row + 8), w + 1) << "block " << bi << " row " << row;
      }
    }
    for (int warp = 0; warp < wgmma::kProducerThreads / 32; ++warp) {  // producer stores: lane l is row 32 warp + l
      std::vector<std::pair<int, int>> stores;
      for (int lane = 0; lane < 32; ++lane) stores.push_back({4 * wgmma::a_scale_word(bi, 32 * warp + lane), 4});
      EXPECT_TRUE(conflict_free(stores)) << "block " << bi << " warp " << warp;
      ++phases;
    }
    for (int warp = 0; warp < wgmma::kConsumerThreads / 32; ++warp) {  // consumer loads: rows 16 warp + group, + 8
      std::vector<std::pair<int, int>> loads;
      for (int lane = 0; lane < 32; ++lane) loads.push_back({4 * wgmma::a_scale_word(bi, 16 * warp + lane / 4), 8});
      EXPECT_TRUE(conflict_free(loads)) << "block " << bi << " warp " << warp;
      ++phases;
    }
  }
  EXPECT_EQ(words.size(), static_cast<size_t>(wgmma::kMaxBlocksPerStage * mma_sync::kBM));
  EXPECT_EQ(phases, wgmma::kMaxBlocksPerStage * (4 + 8));
}

TEST(WgmmaGemmLayout, ScaledDatapathScalesFillThePaddingAndLoadWithoutBankConflicts) {
  // A's decoded scales stay in the row's own scale window; B's fill the 16
  // padding bytes of the stage's 256 code rows, each word once, and nothing
  // the copies or the decode touch.
  std::set<int> words;
  for (int bi = 0; bi < wgmma::kMaxBlocksPerStage; ++bi) {
    for (int row = 0; row < mma_sync::kBM; ++row) {
      const int a = wgmma::a_scale_offset(row, bi);
      EXPECT_GE(a, mma_sync::scale_offset(0, row));
      EXPECT_LE(a + 4, mma_sync::scale_offset(0, row) + mma_sync::kScaleRowBytes);
      const int b = wgmma::b_scale_offset(bi, row);
      ASSERT_EQ(b % 4, 0);
      ASSERT_GE(b, 0);
      ASSERT_LE(b + 4, mma_sync::kCodeBytes);
      EXPECT_GE(b % mma_sync::kRowBytes, mma_sync::kCodeBytesPerRow) << "block " << bi << " column " << row;
      EXPECT_TRUE(words.insert(b / 4).second);
      if (row % 2 == 0) {
        EXPECT_EQ(wgmma::b_scale_offset(bi, row + 1), b + 4);  // a column pair is one 8-byte load
        EXPECT_EQ(b % 8, 0);
      }
    }
  }
  EXPECT_EQ(words.size(), static_cast<size_t>((mma_sync::kBM + mma_sync::kBN) * (mma_sync::kRowBytes - mma_sync::kCodeBytesPerRow) / 4));
  int phases = 0;
  for (int bi = 0; bi < wgmma::kMaxBlocksPerStage; ++bi) {
    // The producer's stores: warp w's lane l writes column 32 w + l.
    for (int warp = 0; warp < wgmma::kProducerThreads / 32; ++warp) {
      std::vector<std::pair<int, int>> writes;
      for (int lane = 0; lane < 32; ++lane) writes.push_back({wgmma::b_scale_offset(bi, 32 * warp + lane), 4});
      EXPECT_TRUE(conflict_free(writes)) << "block " << bi << " warp " << warp;
      ++phases;
    }
    // A consumer's loads: lane (group, quad) reads columns 8 i + 2 quad, +1
    // for i = 2 m, 2 m + 1 (the same for every group: broadcast), one 16-byte
    // load per lane and m, at a constant step from m = 0.
    const int step = wgmma::b_scales_offset(0, 0, 1) - wgmma::b_scales_offset(0, 0, 0);
    for (int m = 0; m < 8; ++m) {
      std::vector<std::pair<int, int>> reads;
      for (int quad = 0; quad < 4; ++quad) {
        const int off = wgmma::b_scales_offset(bi, quad, m);
        EXPECT_EQ(off % 16, 0);
        EXPECT_EQ(off - wgmma::b_scales_offset(bi, quad, 0), m * step);
        for (int w = 0; w < 4; ++w) {
          const int column = 8 * (2 * m + w / 2) + 2 * quad + w % 2;
          EXPECT_EQ(wgmma::b_scale_offset(bi, column), off + 4 * w) << "block " << bi << " column " << column;
        }
        reads.push_back({off, 16});
      }
      EXPECT_TRUE(conflict_free(reads)) << "block " << bi << " m " << m;
      ++phases;
    }
  }
  EXPECT_EQ(phases, wgmma::kMaxBlocksPerStage * (4 + 8));
}

TEST(WgmmaGemmLayout, BinaryScalesOfOneBlockPerStepNeedNoMoveForA) {
  // The scaled datapath's binary32 case (fp32_scales in gemm_wgmma.cu: both
  // operands with FP32 scales and blocks one k-block wide) leaves A's scales
  // where the stage copy puts them: the copy writes row t's window, whose
  // word bi is the scale of the stage's k-block bi, and the consumers must
  // read exactly that word. B's window is read whole by its own producer
  // thread and moved to code-row padding, which no scale window overlaps.
  EXPECT_LE(mma_sync::kCodeBytes, mma_sync::scale_offset(0, 0)) << "the scale windows follow every code row";
  int checked = 0;
  for (int step : {16, 32}) {
    const int blocks = mma_sync::kBK / step;
    const int window = mma_sync::scale_window_bytes(step, 4);
    EXPECT_EQ(window, 4 * blocks);
    EXPECT_EQ(window % 16, 0) << "fp32_scales loads B's window by 16 bytes";
    EXPECT_LE(window, mma_sync::kScaleRowBytes);
    EXPECT_LE(blocks, wgmma::kMaxBlocksPerStage);
    for (int row = 0; row < mma_sync::kBM; ++row) {
      for (int bi = 0; bi < blocks; ++bi) {
        EXPECT_EQ(wgmma::a_scale_offset(row, bi), mma_sync::scale_offset(0, row) + 4 * bi) << "step " << step;
        const int b = wgmma::b_scale_offset(bi, row);
        EXPECT_LE(b + 4, mma_sync::kCodeBytes);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, mma_sync::kBM * (mma_sync::kBK / 16 + mma_sync::kBK / 32));
}

TEST(WgmmaGemmLayout, DecodedStageIsTheSwizzledLayoutWrittenOnceWithoutBankConflicts) {
  static_assert(wgmma::kSmemBytes <= 227 * 1024, "one CTA per SM");
  static_assert(wgmma::kProducerThreads == mma_sync::kBN && mma_sync::kBM == mma_sync::kBN, "a producer thread per row of A and B");
  std::set<int> chunks;  // every 16-byte chunk of a decoded operand stage, once
  int phases = 0;
  for (int warp = 0; warp < wgmma::kProducerThreads / 32; ++warp) {
    // Producer thread t reads its raw row t with four 16-byte loads: per
    // load, each wavefront of 8 lanes conflict-free.
    for (int op = 0; op < 2; ++op) {
      for (int c = 0; c < mma_sync::kCodeBytesPerRow / 16; ++c) {
        std::vector<std::pair<int, int>> reads;
        for (int lane = 0; lane < 32; ++lane) {
          const int off = mma_sync::code_offset(op, warp * 32 + lane, 16 * c);
          ASSERT_EQ(off % 16, 0);
          reads.push_back({off, 16});
        }
        for (int q = 0; q < 4; ++q) {
          EXPECT_TRUE(conflict_free({reads.begin() + 8 * q, reads.begin() + 8 * q + 8})) << "raw chunk " << c;
          ++phases;
        }
      }
    }
    // ... and writes, per slice and k-half, one 16-byte chunk of row t.
    for (int s = 0; s < wgmma::kSlices; ++s) {
      for (int half = 0; half < 2; ++half) {
        std::vector<std::pair<int, int>> writes;
        for (int lane = 0; lane < 32; ++lane) {
          const int n = warp * 32 + lane;
          const int off = wgmma::decoded_offset(n, s, half);
          ASSERT_EQ(off % 16, 0);
          ASSERT_LT(off, wgmma::kDecodedBytes);
          // The 128-byte swizzle: the chunk of k = 16 s + 8 half within its
          // atom's row, XORed with the row's position in its group of 8.
          const int k = 16 * s + 8 * half;
          const int atom = k / wgmma::kAtomK;
          EXPECT_EQ(off, atom * wgmma::kAtomBytes + (n / 8) * 1024 + (n % 8) * 128 + (((k % 64) / 8) ^ (n % 8)) * 16);
          EXPECT_TRUE(chunks.insert(off / 16).second);
          writes.push_back({off, 16});
        }
        for (int q = 0; q < 4; ++q) {
          EXPECT_TRUE(conflict_free({writes.begin() + 8 * q, writes.begin() + 8 * q + 8})) << "slice " << s;
          ++phases;
        }
      }
    }
  }
  EXPECT_EQ(chunks.size(), static_cast<size_t>(wgmma::kDecodedBytes / 16));
  EXPECT_EQ(phases, 4 * (2 * 4 + wgmma::kSlices * 2) * 4);
  // The descriptor: start address at the slice's 32-byte column of its atom,
  // leading offset 1 (unused), stride 1 KiB, 128-byte swizzle.
  const uint64_t d = wgmma::rows_descriptor(0x10000u, 64) + wgmma::slice_step(5);
  EXPECT_EQ((d & 0x3FFFu) * 16, 0x10000u + wgmma::kAtomBytes + 8 * 1024 + 32);
  EXPECT_EQ((d >> 16) & 0x3FFFu, 1u);
  EXPECT_EQ((d >> 32) & 0x3FFFu, 1024u / 16);
  EXPECT_EQ(d >> 62, 1u);
  EXPECT_EQ((d >> 46) & 0xFFFFu, 0u);
  // Slice s's descriptor is slice 0's plus slice_step(s), without a carry out
  // of the start address field, for every 1 KiB-aligned base that fits.
  int descriptors = 0;
  for (uint32_t base = 0; base + wgmma::kDecodedBytes <= 256u * 1024u; base += 1024u) {
    for (int row0 : {0, 64}) {
      for (int s = 0; s < wgmma::kSlices; ++s) {
        const uint64_t ds = wgmma::rows_descriptor(base, row0) + wgmma::slice_step(s);  // as the consumers form it
        const uint32_t addr = base + static_cast<uint32_t>((s / 4) * wgmma::kAtomBytes + (row0 / 8) * 1024 + (s % 4) * 32);
        ASSERT_EQ((ds & 0x3FFFu) * 16, addr) << "base " << base << " slice " << s;
        ASSERT_EQ(ds >> 14, wgmma::rows_descriptor(base, row0) >> 14);
        ++descriptors;
      }
    }
  }
  EXPECT_EQ(descriptors, (256 - 32 + 1) * 2 * wgmma::kSlices);
}

// On full tiles every chunk of A's and B's 128 rows once; on half tiles
// (wgmma::HalfTile: 64 columns) every chunk of A's rows and of B's first 64 once,
// and none of B's others.
TEST(WgmmaGemmLayout, TheProducerWarpgroupCopiesEveryChunkOnce) {
  for (int b_rows : {wgmma::FullTile::kCols, wgmma::HalfTile::kCols}) {
    std::set<std::tuple<int, int, int>> seen;
    const int per_thread = mma_sync::code_copies(wgmma::kProducerThreads, b_rows);
    EXPECT_EQ(per_thread * wgmma::kProducerThreads, (mma_sync::kBM + b_rows) * mma_sync::kChunksPerRow);
    for (int tid = 0; tid < wgmma::kProducerThreads; ++tid) {
      for (int i = 0; i < per_thread; ++i) {
        const mma_sync::CodeCopy c = mma_sync::code_copy(i, tid, wgmma::kProducerThreads);
        ASSERT_TRUE(c.row >= 0 && c.row < (c.op == 0 ? mma_sync::kBM : b_rows) && c.chunk >= 0 &&
                    c.chunk < mma_sync::kChunksPerRow)
            << "B rows " << b_rows << ", thread " << tid << ", copy " << i;
        EXPECT_TRUE(seen.insert({c.op, c.row, c.chunk}).second);
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>((mma_sync::kBM + b_rows) * mma_sync::kChunksPerRow));
  }
}

// One CTA's barrier protocol over `total` stages on a kBufs-deep ring: Ring at
// G % kBufs and G % (kBufs + 1); on each decoded buffer's barrier the
// producer's waits and the consumers' hand-backs pair up in order, the wait
// before stage G taking the hand-back of stage G - kBufs, whose raw stage is
// the one stage G + 1's copy goes into, and no copy goes into a raw stage the
// consumers may still read. (An unpaired hand-back or wait leaves the named
// barrier a generation off: a hang or a race.)
template <int kBufs>
void check_ring_protocol(int total, int cta, int ctas) {
  using R = wgmma::RingOf<kBufs>;
  std::vector<int> waits[kBufs], hand_backs[kBufs];
  R ring;
  for (int g = 0; g < total; ++g) {
    ASSERT_EQ(ring.stage, g);
    ASSERT_EQ(ring.buf, g % kBufs);
    ASSERT_EQ(ring.raw, g % R::kRaw);
    if (wgmma::producer_waits<kBufs>(g)) {
      waits[g % kBufs].push_back(g);
      // The consumers have handed back stage g - kBufs and may still read
      // stages g - kBufs + 1 .. g - 1: the copy of g + 1 goes into the first's raw stage.
      ASSERT_EQ(ring.next_raw(), (g - kBufs) % R::kRaw) << "stage " << g << " copies into a raw stage in use";
      for (int live = g - kBufs + 1; live <= g; ++live) ASSERT_NE(ring.next_raw(), live % R::kRaw);
    } else {
      for (int used = 0; used <= g; ++used) ASSERT_NE(ring.next_raw(), used % R::kRaw);
    }
    if (wgmma::consumers_hand_back<kBufs>(g, total)) hand_backs[g % kBufs].push_back(g);
    ring.advance();
  }
  for (int b = 0; b < kBufs; ++b) {
    ASSERT_EQ(waits[b].size(), hand_backs[b].size()) << "buffer " << b << ", cta " << cta << " of " << ctas;
    for (size_t i = 0; i < waits[b].size(); ++i) ASSERT_EQ(waits[b][i], hand_backs[b][i] + kBufs);
  }
}

// The wgmma GEMM's persistent schedule, on full and half tiles, for shapes and CTA
// counts the GPU tests do not reach (a GPU launches one CTA per SM, or per
// tile where there are fewer): the CTAs' tiles are every output tile once,
// each where its m0 and n0 say; a CTA's stage count runs over its tiles'
// stages; and the barrier protocol holds on both rings (check_ring_protocol:
// the E4M3 datapath's two buffers, the scaled datapath's three).
TEST(WgmmaGemmLayout, PersistentScheduleCoversEveryTileAndPairsEveryHandBack) {
  static_assert(wgmma::Ring::kRaw == mma_sync::kStages, "the two-buffer ring");
  static_assert(3 * wgmma::kDecodedBytes + mma_sync::kStageBytes <= 4 * wgmma::kDecodedBytes &&
                    wgmma::kFourthRawSlot == 3,
                "the three-buffer ring's fourth raw stage lies in the room after its three buffers");
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1},         {128, 128, 128},  {129, 257, 129},    {1735, 3032, 300},
                          {300, 5000, 64},   {1000, 130, 1000}, {4096, 4096, 16384}, {8192, 8192, 8192},
                          {2000, 2000, 0}};
  const int cta_counts[] = {1, 2, 3, 7, 64, 132, 133, 1000};
  size_t schedules = 0, stages_checked = 0;
  for (int tile_n : {wgmma::FullTile::kCols, wgmma::HalfTile::kCols}) {  // full tiles and half tiles
    ASSERT_TRUE(tile_n == mma_sync::kBN || tile_n == 64);
    const int tile_m = wgmma::FullTile::kRows;
    ASSERT_EQ(wgmma::HalfTile::kRows, tile_m);
    const bool half = tile_n < mma_sync::kBN;
    for (const Shape& sh : shapes) {
      const wgmma::Tiles t(sh.m, sh.n, sh.k, tile_m, tile_n);
      const int64_t rows = (sh.m + tile_m - 1) / tile_m, cols = (sh.n + tile_n - 1) / tile_n;
      ASSERT_EQ(t.count, rows * cols);
      ASSERT_EQ(wgmma::tile_count(sh.m, sh.n, tile_m, tile_n), rows * cols);
      ASSERT_EQ(t.cols, cols);
      ASSERT_EQ(t.stages, (sh.k + mma_sync::kBK - 1) / mma_sync::kBK);
      for (int requested : cta_counts) {
        // The launch's count: at most one CTA per tile, but on half tiles a
        // grid sized for the other operand order may hold more, whose CTAs
        // past the last tile leave at once (gemm_cta).
        const int ctas = half ? std::max(requested, 1) : std::min(requested, t.count);
        ASSERT_TRUE(wgmma::counts_fit(t.count, ctas, t.stages));
        std::vector<int> seen(static_cast<size_t>(t.count), 0);
        int64_t all_stages = 0;
        for (int cta = 0; cta < ctas && cta < t.count; ++cta) {
          int tiles_of_cta = 0;
          for (int tile = cta; tile < t.count; tile += ctas) {
            ++seen[static_cast<size_t>(tile)];
            ++tiles_of_cta;
            const int64_t m0 = t.m0(tile), n0 = t.n0(tile);
            ASSERT_TRUE(m0 >= 0 && m0 < sh.m && n0 >= 0 && n0 < sh.n && m0 % tile_m == 0 && n0 % tile_n == 0);
            ASSERT_EQ(m0 / tile_m * cols + n0 / tile_n, tile);
          }
          const int total = wgmma::Schedule(t, 0, cta, ctas).total_stages();  // the classic schedule's
          ASSERT_EQ(total, tiles_of_cta * t.stages) << "cta " << cta << " of " << ctas;
          all_stages += total;
          check_ring_protocol<2>(total, cta, ctas);
          check_ring_protocol<3>(total, cta, ctas);
          if (::testing::Test::HasFatalFailure()) return;
          stages_checked += static_cast<size_t>(total);
          ++schedules;
        }
        for (int v : seen) ASSERT_EQ(v, 1);
        EXPECT_EQ(all_stages, static_cast<int64_t>(t.count) * t.stages);
      }
    }
  }
  std::printf("%zu CTA schedules, %zu stages checked\n", schedules, stages_checked);
  EXPECT_GT(stages_checked, 0u);
  // The launch refuses what 32-bit counts cannot hold.
  EXPECT_FALSE(wgmma::counts_fit(int64_t{INT32_MAX}, 132, 1));
  EXPECT_FALSE(wgmma::counts_fit(int64_t{1} << 20, 1, int64_t{1} << 12));
  EXPECT_TRUE(wgmma::counts_fit(int64_t{1} << 20, 132, int64_t{1} << 12));
}

// The schedules' segments (wgmma::Schedule). Classic (per 0): CTA b takes
// tiles b, b + ctas, ... whole. Ordered: over random tile counts, stages and
// SM counts, every (tile, stage) unit is run exactly once; a tile is run
// whole by one CTA or split once, its head (stages 0 .. h) the first segment
// of the CTA after the tail's (on the line), handing off, and its tail (h ..)
// the last segment of that CTA, resuming, where the tail starts no earlier
// than the head ends (each CTA's stages counted from its start); each CTA
// runs at most `per` units and the last what is left; the rings' hand-backs
// pair (check_ring_protocol); and a tail waits for a CTA of a lower blockIdx.
TEST(WgmmaGemmLayout, OrderedSplitKeepsEachTilesKOrderAndFillsTheRounds) {
  for (int count : {1, 5, 144}) {
    for (int ctas : {1, 3, 132}) {
      const wgmma::Tiles t(int64_t{count} * 128, 128, 300, 128, 128);
      for (int b = 0; b < ctas && b < count; ++b) {
        const wgmma::Schedule s(t, 0, b, ctas);
        ASSERT_EQ(s.segments(), (count - b + ctas - 1) / ctas);
        for (int i = 0; i < s.segments(); ++i) {
          const wgmma::Segment g = s.segment(i);
          ASSERT_TRUE(g.tile == b + i * ctas && g.k0 == 0 && g.k1 == t.stages && !g.resume && !g.handoff);
        }
        ASSERT_EQ(s.total_stages(), s.segments() * t.stages);
      }
    }
  }
  const uint64_t seed = 4242;
  std::mt19937_64 rng(seed);
  size_t schedules = 0, splits = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t count = 1 + static_cast<int64_t>(rng() % 700);
    const int64_t stages = 1 + static_cast<int64_t>(rng() % 40);
    const int sms = 1 + static_cast<int>(rng() % 200);
    const wgmma::Tiles t(count * 128, 128, stages * mma_sync::kBK, 128, 128);
    ASSERT_EQ(t.count, count);
    ASSERT_EQ(t.stages, stages);
    const int64_t per = wgmma::ordered_per(count, stages, sms);
    const int64_t ctas = wgmma::ordered_ctas(count, stages, per);
    ASSERT_GE(per, stages);
    ASSERT_LE(ctas, std::min<int64_t>(count, sms)) << "seed " << seed << " trial " << trial;
    std::vector<std::vector<int>> runs(static_cast<size_t>(count * stages));  // the CTA (line place) of each unit
    struct Piece {
      int64_t cta, start, k0, k1;  // start: the CTA's stages before it
      bool resume, handoff, first, last;
    };
    std::vector<std::vector<Piece>> pieces(static_cast<size_t>(count));
    int64_t all = 0;
    for (int64_t b = 0; b < ctas; ++b) {
      const wgmma::Schedule s(t, per, static_cast<int>(b), static_cast<int>(ctas));
      ASSERT_EQ(s.cta, ctas - 1 - b);
      int64_t start = 0;
      for (int i = 0; i < s.segments(); ++i) {
        const wgmma::Segment g = s.segment(i);
        ASSERT_TRUE(g.tile >= 0 && g.tile < count && g.k0 >= 0 && g.k0 < g.k1 && g.k1 <= stages);
        for (int k = g.k0; k < g.k1; ++k) runs[static_cast<size_t>(g.tile * stages + k)].push_back(s.cta);
        pieces[static_cast<size_t>(g.tile)].push_back(
            {s.cta, start, g.k0, g.k1, g.resume, g.handoff, i == 0, i == s.segments() - 1});
        start += g.k1 - g.k0;
      }
      ASSERT_EQ(start, s.total_stages());
      ASSERT_LE(start, per);
      if (s.cta + 1 < ctas) {
        ASSERT_EQ(start, per) << "only the last CTA on the line runs less";
      }
      all += start;
      check_ring_protocol<2>(s.total_stages(), static_cast<int>(b), static_cast<int>(ctas));
      check_ring_protocol<3>(s.total_stages(), static_cast<int>(b), static_cast<int>(ctas));
      if (::testing::Test::HasFatalFailure()) return;
      ++schedules;
    }
    ASSERT_EQ(all, count * stages);
    for (const std::vector<int>& r : runs) ASSERT_EQ(r.size(), 1u) << "seed " << seed << " trial " << trial;
    for (int64_t tile = 0; tile < count; ++tile) {
      const std::vector<Piece>& p = pieces[static_cast<size_t>(tile)];
      if (p.size() == 1) {
        ASSERT_TRUE(p[0].k0 == 0 && p[0].k1 == stages && !p[0].resume && !p[0].handoff);
        continue;
      }
      ASSERT_EQ(p.size(), 2u);
      const Piece& head = p[0].k0 == 0 ? p[0] : p[1];
      const Piece& tail = p[0].k0 == 0 ? p[1] : p[0];
      ASSERT_TRUE(head.handoff && !head.resume && head.first && head.start == 0);
      ASSERT_TRUE(tail.resume && !tail.handoff && tail.last && tail.k1 == stages && tail.k0 == head.k1);
      ASSERT_EQ(head.cta, tail.cta + 1) << "the head's slot is the one the tail reads";
      ASSERT_GE(tail.start, head.k1 - head.k0) << "the tail starts no earlier than the head ends";
      // blockIdx.x = ctas - 1 - cta: the tail's CTA starts after the head's.
      ASSERT_GT(ctas - 1 - tail.cta, ctas - 1 - head.cta);
      ++splits;
    }
  }
  std::printf("seed %llu: %zu ordered CTA schedules, %zu tiles split\n", static_cast<unsigned long long>(seed),
              schedules, splits);
  EXPECT_GT(splits, 1000u);
}

// B decoded once (wgmma::predecode_b): the producer's copy of a tile's rows
// of each atom, as they lie (copy_decoded_b), puts every chunk the decode
// kernel writes (predecoded_offset) where the per-stage decode writes it
// (decoded_offset), on full and half tiles, inside the call's buffer
// (predecoded_bytes); calls decode B once only with enough rows of tiles.
TEST(WgmmaGemmLayout, BDecodedOnceIsCopiedWhereTheProducerDecodesIt) {
  size_t chunks = 0;
  for (int64_t n_rows : {1, 64, 130, 768}) {
    const int64_t rows = wgmma::predecoded_rows(n_rows);
    ASSERT_EQ(rows % mma_sync::kBN, 0);
    ASSERT_GE(rows, n_rows);
    for (int64_t k : {16, 128, 300}) {
      const int64_t stages = mma_sync::k_stages(k);
      const int64_t bytes = wgmma::predecoded_bytes(n_rows, k);
      for (int cols : {wgmma::FullTile::kCols, wgmma::HalfTile::kCols}) {
        for (int64_t n0 = 0; n0 < n_rows; n0 += cols) {
          for (int64_t st = 0; st < stages; ++st) {
            for (int n = 0; n < cols; ++n) {
              for (int slice = 0; slice < wgmma::kSlices; ++slice) {
                for (int half = 0; half < 2; ++half) {
                  const int atom = slice / (wgmma::kAtomK / wgmma::kSliceK);
                  const int64_t src = ((st * (mma_sync::kBK / wgmma::kAtomK) + atom) * rows + n0) * 128;
                  const int64_t g = wgmma::predecoded_offset(rows, st, n0 + n, slice, half);
                  ASSERT_TRUE(g >= src && g < src + cols * 128 && g + 16 <= bytes);
                  ASSERT_EQ(atom * wgmma::kAtomBytes + (g - src), wgmma::decoded_offset(n, slice, half))
                      << "row " << n0 + n << " stage " << st << " slice " << slice << " half " << half;
                  ++chunks;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(chunks, 0u);
  EXPECT_TRUE(wgmma::predecode_b(16384, 2304, 768));   // a training step's activation GEMM: 3.4 MiB
  EXPECT_FALSE(wgmma::predecode_b(1920, 2304, 768));   // 15 rows of tiles
  EXPECT_FALSE(wgmma::predecode_b(3072, 768, 16384));  // a weight gradient: 24 MiB of decoded B
}

// The tiles and schedule a call with a workspace takes (wgmma::split_tiles):
// the ordered split where it takes fewer units of time than the classic
// schedule on auto_tiles's tiles, on full or half tiles of at most
// kSplitMaxRounds rounds, and never on 64 x 128.
TEST(WgmmaGemmLayout, SplitTilesTakeTheOrderedSplitWhereItIsFaster) {
  using cuda::GemmTiles;
  const int cost = wgmma::kHalfTileCostScaled;
  struct Case {
    int64_t m, n, k;
    GemmTiles forced, shape;
    int64_t per;
  };
  const Case cases[] = {
      {3072, 768, 16384, GemmTiles::kAuto, GemmTiles::kFull, 140},  // 144 tiles: classic half tiles, 3 rounds of 59
      {768, 3072, 16384, GemmTiles::kAuto, GemmTiles::kFull, 140},
      {16384, 2304, 768, GemmTiles::kAuto, GemmTiles::kFull, 0},    // 2304 tiles: 18 rounds, past kSplitMaxRounds
      {16384, 768, 768, GemmTiles::kAuto, GemmTiles::kFull, 0},     // 768 tiles: 6 rounds
      {3456, 1024, 768, GemmTiles::kAuto, GemmTiles::kFull, 10},    // 216 tiles of 6 stages: 2 rounds, 1.64 ordered
      {2304, 768, 16384, GemmTiles::kAuto, GemmTiles::kHalf, 210},  // 108 tiles: 216 half tiles, 0.965 of a round
      {2304, 768, 16384, GemmTiles::kHalf, GemmTiles::kHalf, 210},  // the same, forced
      {768, 768, 16384, GemmTiles::kAuto, GemmTiles::kHalf, 0},     // 72 half tiles: one round each way
      {1024, 1024, 16384, GemmTiles::kAuto, GemmTiles::kHalf, 0},
      {1408, 1536, 256, GemmTiles::kAuto, GemmTiles::kFull, 0},     // 132 tiles: one round
      {48, 9000, 256, GemmTiles::kAuto, GemmTiles::kWide, 0},       // at most 64 rows: 64 x 128, classic
      {3072, 768, 16384, GemmTiles::kHalf, GemmTiles::kHalf, 0},    // forced half tiles: 288, three rounds
      {3072, 768, 16384, GemmTiles::kWide, GemmTiles::kWide, 0},
      {100, 100, 0, GemmTiles::kAuto, GemmTiles::kHalf, 0},         // no k: nothing to split
  };
  for (const Case& c : cases) {
    const wgmma::TilePlan p = wgmma::split_tiles(c.m, c.n, c.k, 132, cost, c.forced);
    EXPECT_EQ(p.shape, c.shape) << c.m << "x" << c.n << "x" << c.k;
    EXPECT_EQ(p.per, c.per) << c.m << "x" << c.n << "x" << c.k;
  }
  // Over a grid of shapes: never slower than the classic schedule by the measure.
  size_t shapes = 0;
  for (int64_t m : {64, 128, 700, 3072, 16384}) {
    for (int64_t n : {64, 200, 768, 3072}) {
      for (int64_t k : {128, 1000, 16384}) {
        const GemmTiles classic = wgmma::auto_tiles(m, n, 132, cost);
        const wgmma::TilePlan p = wgmma::split_tiles(m, n, k, 132, cost, GemmTiles::kAuto);
        const int64_t stages = mma_sync::k_stages(k);
        auto count = [&](GemmTiles s) { return wgmma::tile_count(m, n, 128, s == GemmTiles::kHalf ? 64 : 128); };
        auto unit = [&](GemmTiles s) { return s == GemmTiles::kHalf ? int64_t{cost} : int64_t{100}; };
        if (classic == GemmTiles::kWide) {
          EXPECT_EQ(p.per, 0);
          continue;
        }
        const int64_t before = wgmma::waves(count(classic), 132) * stages * unit(classic);
        const int64_t after = p.per > 0 ? p.per * unit(p.shape) : wgmma::waves(count(p.shape), 132) * stages * unit(p.shape);
        EXPECT_LE(after, before) << m << "x" << n << "x" << k;
        if (p.per == 0) {
          EXPECT_EQ(p.shape, classic);
        }
        ++shapes;
      }
    }
  }
  EXPECT_GT(shapes, 0u);
}

// The consumers of each tile shape (wgmma::TileShape): every output of the tile
// lies in exactly one thread's accumulators, where store_outputs (the m16n8
// fragment layout: acc index 4 ni + 2 h + e is row warp_row + group + 8 h,
// column 8 ni + 2 quad + e) expects it; each part's columns lie in
// the decoded B rows its wgmma reads; and the B scales a thread loads for an
// element (scaled datapath) are its column's.
template <class S>
size_t check_tile_shape() {
  static_assert(wgmma::kPartRegs * S::kParts == S::kAcc, "a thread's outputs are its parts' partial sums");
  std::vector<int> seen(static_cast<size_t>(S::kRows * S::kCols), 0);
  size_t elements = 0;
  for (int ctid = 0; ctid < wgmma::kConsumerThreads; ++ctid) {
    const wgmma::ConsumerPlace c = wgmma::consumer_place(ctid);
    for (int part = 0; part < S::kParts; ++part) {
      const int col0 = wgmma::part_col0(part);
      EXPECT_EQ(col0 % 8, 0);  // the descriptor's rows start at a group of 8
      for (int j = 0; j < wgmma::kPartRegs; ++j) {
        const int row = wgmma::part_row(c, j), col = wgmma::part_col(c, part, j);
        if (row < 0 || row >= S::kRows || col < 0 || col >= S::kCols) {
          ADD_FAILURE() << "thread " << ctid << " part " << part << " element " << j << " outside the tile";
          continue;
        }
        ++seen[static_cast<size_t>(row * S::kCols + col)];
        EXPECT_TRUE(row == c.row0 || row == c.row0 + 8);  // the rows of its A fragments and scales
        EXPECT_TRUE(col >= col0 && col < col0 + wgmma::kPartN);
        const int idx = wgmma::kPartRegs * part + j;
        EXPECT_EQ(row, c.warp_row + c.group + 8 * ((idx % 4) / 2)) << "thread " << ctid << " acc " << idx;
        EXPECT_EQ(col, 8 * (idx / 4) + 2 * c.quad + idx % 2) << "thread " << ctid << " acc " << idx;
        // b_scales_of_part: sb[2 (j / 4) + j % 2], word (that index) % 4 of
        // slot part_scale_slot + (that index) / 4.
        const int sb = 2 * (j / 4) + j % 2;
        for (int bi = 0; bi < wgmma::kMaxBlocksPerStage; ++bi) {
          EXPECT_EQ(wgmma::b_scales_offset(bi, c.quad, wgmma::part_scale_slot(part) + sb / 4) + 4 * (sb % 4),
                    wgmma::b_scale_offset(bi, col))
              << "thread " << ctid << " part " << part << " element " << j << " block " << bi;
        }
        ++elements;
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "output " << i / S::kCols << ", " << i % S::kCols;
  return elements;
}

TEST(WgmmaGemmLayout, ConsumersOfEveryTileShapeHoldEachOutputOnce) {
  EXPECT_EQ(wgmma::kThreads, wgmma::kProducerThreads + wgmma::kConsumerThreads);
  EXPECT_EQ((wgmma::FullTile::kRows), 128);
  EXPECT_EQ((wgmma::FullTile::kCols), 128);
  EXPECT_EQ((wgmma::HalfTile::kRows), 128);
  EXPECT_EQ((wgmma::HalfTile::kCols), 64);
  EXPECT_FALSE(wgmma::FullTile::kHalf);
  EXPECT_TRUE(wgmma::HalfTile::kHalf);
  EXPECT_EQ((wgmma::FullTile::kParts), 4);
  EXPECT_EQ((wgmma::HalfTile::kParts), 2);
  const size_t full = check_tile_shape<wgmma::FullTile>();
  const size_t half = check_tile_shape<wgmma::HalfTile>();
  std::printf("outputs placed: %zu (128 x 128), %zu (128 x 64)\n", full, half);
  EXPECT_EQ(full, static_cast<size_t>(mma_sync::kBM * mma_sync::kBN));
  EXPECT_EQ(half, static_cast<size_t>(mma_sync::kBM * 64));
}

// Half tiles where every one has an SM of its own (132 SMs: an H100 or H200).
TEST(WgmmaGemmLayout, HalfTilesWhereEachHasAnSm) {
  struct Case {
    int64_t m, n;
    int sms;
    bool half;
  };
  const Case cases[] = {
      {1024, 1024, 132, true},    // 64 full tiles, 128 half: half the SMs idle on full tiles
      {1024, 1088, 132, false},   // 136 half tiles
      {1088, 1024, 132, false},   // 144
      {2048, 2048, 132, false},   // 256 full tiles: two waves either way
      {8192, 8192, 132, false},
      {64, 8448, 132, true},      // one row of 66 full tiles, each half empty
      {64, 8512, 132, false},     // 133 half tiles
      {1, 1, 1, true},
      {4160, 4096, 132, false},
      {130, 1000, 32, true},      // 32 half tiles
      {1000, 130, 24, true},      // 24
      {1000, 130, 23, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(wgmma::half_tiles(c.m, c.n, c.sms), c.half) << c.m << "x" << c.n << " on " << c.sms << " SMs";
    EXPECT_EQ(wgmma::half_tiles(c.m, c.n, c.sms), wgmma::tile_count(c.m, c.n, 128, 64) <= c.sms);
  }
}

// kAuto's tiles (132 SMs unless named): 128 x 64 where every one has an SM;
// else 64 x 128 for at most 64 rows, 128 x 64 for at most 64 columns, and
// otherwise 128 x 128 on the E4M3 datapath, whose half tiles cost too much for
// rounds of tiles to favour them (WgmmaGemmLayout.AutoTilesTakeTheFewerRounds).
TEST(WgmmaGemmLayout, AutoTilesKeepEveryRowOfATileInC) {
  using cuda::GemmTiles;
  struct Case {
    int64_t m, n;
    int sms;
    GemmTiles tiles;
  };
  const Case cases[] = {
      {64, 8448, 132, GemmTiles::kHalf},     // 132 tiles of 128 x 64, one an SM, half their rows empty
      {64, 8512, 132, GemmTiles::kWide},     // 133 of them; 67 of 64 x 128 (128 x 128 tiles before)
      {1, 16384, 132, GemmTiles::kWide},
      {64, 65, 132, GemmTiles::kHalf},
      {65, 8512, 132, GemmTiles::kFull},     // 65 rows: a wide tile would leave its second row of tiles near empty
      {64, 64, 132, GemmTiles::kHalf},       // one tile either way
      {1, 1, 1, GemmTiles::kHalf},
      {32768, 64, 132, GemmTiles::kHalf},    // 256 tiles either way, half tiles computing every output
      {32768, 65, 132, GemmTiles::kFull},
      {1024, 1024, 132, GemmTiles::kHalf},   // 128 half tiles
      {1024, 1088, 132, GemmTiles::kFull},   // 136
      {8192, 8192, 132, GemmTiles::kFull},
      {130, 1000, 32, GemmTiles::kHalf},
      {1000, 130, 23, GemmTiles::kFull},
      {40, 1000, 10, GemmTiles::kWide},      // 16 half tiles on 10 SMs
  };
  for (const Case& c : cases) {
    EXPECT_EQ(wgmma::auto_tiles(c.m, c.n, c.sms, wgmma::kHalfTileCostE4m3), c.tiles)
        << c.m << "x" << c.n << " on " << c.sms << " SMs";
  }
}

// Beyond one round of half tiles, kAuto takes the shape whose rounds of
// persistent CTAs cost less, a round a tile's time: the training step's weight
// gradients on 132 SMs (K = tokens) on both datapaths, and, over a grid of
// shapes and SM counts, the choice's time never more than the other shape's.
TEST(WgmmaGemmLayout, AutoTilesTakeTheFewerRounds) {
  using cuda::GemmTiles;
  struct Case {
    int64_t m, n;
    GemmTiles scaled, e4m3;
  };
  const Case cases[] = {
      // 144 full tiles (2 rounds) or 288 half (3 rounds: 1.77 on the scaled datapath, 2.13 on E4M3)
      {3072, 768, GemmTiles::kHalf, GemmTiles::kFull},
      {768, 3072, GemmTiles::kHalf, GemmTiles::kFull},
      {2304, 768, GemmTiles::kFull, GemmTiles::kFull},   // 108 full tiles, one round; 216 half (2 rounds)
      {768, 768, GemmTiles::kHalf, GemmTiles::kHalf},    // 72 half tiles: one round
      {16384, 768, GemmTiles::kFull, GemmTiles::kFull},  // 768 full tiles (6 rounds) or 1536 half (12)
      {16384, 3072, GemmTiles::kFull, GemmTiles::kFull},
      {4608, 1024, GemmTiles::kHalf, GemmTiles::kFull},  // 288 full tiles (3 rounds) or 576 half (5: 2.95)
      {1100, 1000, GemmTiles::kFull, GemmTiles::kFull},  // 72 full tiles or 144 half: one round or two
      {10000, 130, GemmTiles::kHalf, GemmTiles::kHalf},  // 158 full tiles or 237 half: two rounds either way
  };
  for (const Case& c : cases) {
    EXPECT_EQ(wgmma::auto_tiles(c.m, c.n, 132, wgmma::kHalfTileCostScaled), c.scaled) << c.m << "x" << c.n;
    EXPECT_EQ(wgmma::auto_tiles(c.m, c.n, 132, wgmma::kHalfTileCostE4m3), c.e4m3) << c.m << "x" << c.n;
  }
  size_t shapes = 0;
  size_t half_by_rounds[2] = {0, 0};
  for (int sms : {8, 24, 78, 114, 132, 144}) {
    for (int64_t m = 65; m <= 40000; m += m < 2048 ? 61 : 977) {
      for (int64_t n = 65; n <= 40000; n += n < 2048 ? 67 : 1013) {
        const int64_t full = wgmma::waves(wgmma::tile_count(m, n, 128, 128), sms);
        const int64_t half = wgmma::waves(wgmma::tile_count(m, n, 128, 64), sms);
        const bool one_round = wgmma::half_tiles(m, n, sms);
        int i = 0;
        for (int cost : {wgmma::kHalfTileCostScaled, wgmma::kHalfTileCostE4m3}) {
          const GemmTiles tiles = wgmma::auto_tiles(m, n, sms, cost);
          ASSERT_NE(tiles, GemmTiles::kWide) << m << "x" << n << " on " << sms;
          if (one_round) {
            ASSERT_EQ(tiles, GemmTiles::kHalf) << m << "x" << n << " on " << sms;
          }
          const int64_t chosen = tiles == GemmTiles::kHalf ? half * cost : full * 100;
          const int64_t other = tiles == GemmTiles::kHalf ? full * 100 : half * cost;
          ASSERT_LE(chosen, other) << m << "x" << n << " on " << sms << ", half tile cost " << cost;
          half_by_rounds[i++] += tiles == GemmTiles::kHalf && !one_round;
        }
        ++shapes;
      }
    }
  }
  std::printf("%zu shapes; on half tiles by rounds alone: %zu (scaled), %zu (E4M3)\n", shapes, half_by_rounds[0],
              half_by_rounds[1]);
  EXPECT_GT(shapes, 10000u);
  EXPECT_GT(half_by_rounds[0], half_by_rounds[1]);  // the cheaper half tile takes more shapes
  EXPECT_GT(half_by_rounds[1], 0u);
}

// A UE8M0 call runs its operands swapped (the other one's scales folded)
// only where that order's tiles take no more waves on the device's SMs.
TEST(WgmmaGemmLayout, OtherOperandOrderOnlyWhereItTakesNoMoreWaves) {
  struct Case {
    int64_t m, n;
    int sms;
    bool full, half;
  };
  const Case cases[] = {
      {8448, 64, 132, true, true},   // wide tiles' order: 66 half tiles, 132 the other way (one wave each)
      {9000, 64, 132, true, false},  // 71 half tiles, 141 the other way: two waves
      {64, 9000, 132, true, true},   // fewer the other way
      {130, 1000, 132, true, true},
      {4160, 4096, 132, true, true},  // 2112 and 2080 half tiles: 16 waves each
  };
  for (const Case& c : cases) {
    EXPECT_EQ(wgmma::other_order_fits<wgmma::FullTile>(c.m, c.n, c.sms), c.full) << c.m << "x" << c.n;
    EXPECT_EQ(wgmma::other_order_fits<wgmma::HalfTile>(c.m, c.n, c.sms), c.half) << c.m << "x" << c.n;
    EXPECT_EQ(wgmma::other_order_fits<wgmma::HalfTile>(c.m, c.n, c.sms),
              wgmma::waves(wgmma::tile_count(c.n, c.m, 128, 64), c.sms) <= wgmma::waves(wgmma::tile_count(c.m, c.n, 128, 64),
                                                                                c.sms));
  }
}

// The wgmma GEMM's FMA for UE8M0 scales on both operands (wgmma::fma_scale_code): for
// every code of A in and around the range beside codes of B at its ends and
// inside it, every format pair, partial sums from 0 to the largest a 32-wide
// block holds, and accumulators next to which a rounding or an overflow shows,
// golden's step fl(acc + block_product(P, fa, fb, sa, sb)) is fma(P', fl(sa sb),
// acc). One code past either end some case differs: the range is not wider
// than its bounds allow.
TEST(WgmmaGemmLayout, Ue8m0ScalesInRangeMakeTheBlockStepOneFma) {
  constexpr int64_t kBlock = 32;  // the widest k-block
  const uint64_t seed = test::kKernelTestSeed;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const uint32_t lo = wgmma::kFmaCodeLo, hi = wgmma::kFmaCodeHi;
  std::vector<uint32_t> codes_b = {lo - 1, lo, lo + 1, 127, hi - 1, hi, hi + 1};
  for (int i = 0; i < 4; ++i) codes_b.push_back(std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
  const float max = std::numeric_limits<float>::max();
  const float accs[] = {0.0f,      1.0f,        -1.0f,      0x1p-149f,   -0x1p-149f, 0x3p-149f,
                        -0x3p-149f, 0x1p-126f,  -0x1p-126f, 0x1.8p127f,  -0x1.8p127f, max,
                        -max,       0x1.2345p-20f, -0x1.fffffep100f};
  size_t checks = 0, differ_inside = 0, differ_below = 0, differ_above = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      const int32_t pmax = static_cast<int32_t>(kBlock * max_decode_units(fa) * max_decode_units(fb));
      const float unit = std::ldexp(1.0f, lsb_exp(fa) + lsb_exp(fb));
      ASSERT_LE(static_cast<float>(pmax) * unit, 0x1p11f) << "P' above the range's bound";
      ASSERT_GE(unit, 0x1p-4f) << "P' below the range's bound";
      std::vector<int32_t> sums = {0, 1, 2, 3, 5, 7, 1024, pmax - 1, pmax};
      for (int i = 0; i < 6; ++i) sums.push_back(std::uniform_int_distribution<int32_t>(0, pmax)(rng));
      for (uint32_t ca = lo - 1; ca <= hi + 1; ++ca) {
        for (uint32_t cb : codes_b) {
          const float sa = decode_scale(ScaleFormat::kUE8M0, ca), sb = decode_scale(ScaleFormat::kUE8M0, cb);
          const bool inside = wgmma::fma_scale_code(ca) && wgmma::fma_scale_code(cb);
          for (int32_t p : sums) {
            if (p > pmax) continue;
            for (int32_t sign : {1, -1}) {
              const int32_t ps = sign * p;
              const float q = static_cast<float>(ps) * unit;  // exact: |ps| < 2^24
              for (float acc : accs) {
                const float want = accumulate(acc, block_product(ps, fa, fb, sa, sb));
                const float got = canonical(std::fma(q, sa * sb, acc));
                ++checks;
                if (f32_bits(got) == f32_bits(want)) continue;
                if (inside) {
                  if (++differ_inside <= 5) {
                    ADD_FAILURE() << name(fa) << " x " << name(fb) << " codes " << ca << ", " << cb << " P " << ps
                                  << " acc " << acc << ": fma " << got << ", golden " << want;
                  }
                } else if (std::min(ca, cb) < lo) {
                  ++differ_below;
                } else {
                  ++differ_above;
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf("%zu steps compared: %zu differ inside the range, %zu below it, %zu above it\n", checks,
              differ_inside, differ_below, differ_above);
  EXPECT_GT(checks, 0u);
  EXPECT_EQ(differ_inside, 0u);
  EXPECT_GT(differ_below, 0u);
  EXPECT_GT(differ_above, 0u);
  EXPECT_FALSE(wgmma::fma_scale_code(0xFFu));  // NaN
  EXPECT_FALSE(wgmma::fma_scale_code(0u));     // the padding's zero codes
}

// An operand's UE8M0 codes that fold into its FP16 values (wgmma::ue8m0_fold_codes): for
// each format a range inside the FMA's, every code of which leaves every
// value of the format times 2^(c - 127) zero or a normal FP16 (2^-14 to
// 65504) with at most 11 significant bits, and one code past either end
// leaves some value outside (or lies outside the FMA's range).
TEST(WgmmaGemmLayout, Ue8m0FoldRangesKeepEveryValueAnExactFp16) {
  auto exact_fp16 = [](Format f, uint32_t code) {
    for (uint32_t c = 0; c < 16; ++c) {
      const int32_t units = decode(f, static_cast<uint8_t>(c)).signed_units();
      if (units == 0) continue;
      const double v = std::ldexp(std::fabs(static_cast<double>(units)), lsb_exp(f) + static_cast<int>(code) - 127);
      int e = 0;
      const double m = std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1)
      if (v < 0x1p-14 || v > 65504.0 || std::ldexp(m, 11) != std::floor(std::ldexp(m, 11))) return false;
    }
    return true;
  };
  size_t formats = 0;
  for (Format f : kAllFormats) {
    uint32_t lo = 0, hi = 0;
    ASSERT_TRUE(wgmma::ue8m0_fold_codes(f, lo, hi)) << name(f);
    std::printf("%s: codes %u..%u fold (2^%d..2^%d)\n", std::string(name(f)).c_str(), lo, hi,
                static_cast<int>(lo) - 127, static_cast<int>(hi) - 127);
    EXPECT_TRUE(wgmma::fma_scale_code(lo) && wgmma::fma_scale_code(hi)) << name(f);
    for (uint32_t code = lo; code <= hi; ++code) EXPECT_TRUE(exact_fp16(f, code)) << name(f) << " " << code;
    for (uint32_t code : {lo - 1, hi + 1}) {
      EXPECT_TRUE(!exact_fp16(f, code) || !wgmma::fma_scale_code(code)) << name(f) << " " << code;
    }
    ++formats;
  }
  EXPECT_EQ(formats, kAllFormats.size());
}

}  // namespace
}  // namespace nibble
