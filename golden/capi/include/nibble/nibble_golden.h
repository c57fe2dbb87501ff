/* The golden model's C API: Nibble's bit-exact specification of 4-bit block-scaled
 * quantization and dot products, callable from C, C++ and SystemVerilog (DPI-C).
 *
 * Every function here calls the C++ golden model (golden/include/nibble/); none
 * computes anything itself. docs/numerics.md states the arithmetic; docs/golden-c-api.md
 * is the reference of this header.
 *
 * Conventions
 *   - Every function returns an int status: NIBBLE_OK (0) or one of NIBBLE_ERR_*.
 *     Results are written through pointer arguments, only on success.
 *   - nibble_last_error() returns the calling thread's message for its last call
 *     (empty after a success). No C++ exception ever leaves this API.
 *   - Enumerations are plain ints with the values below; they are checked equal to
 *     the golden model's C++ enums at compile time.
 *   - Floats are IEEE binary32. Element codes are one per byte (low nibble); scale
 *     codes are uint32_t (FP32 scales: the bit pattern; E4M3 and UE8M0: 0..255).
 *   - Tensors are row-major [rows, cols]; cols is the contraction axis.
 * The header is C99 and C++ compatible. */
#ifndef NIBBLE_GOLDEN_H
#define NIBBLE_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define NIBBLE_GOLDEN_EXPORT
#else
#define NIBBLE_GOLDEN_EXPORT __attribute__((visibility("default")))
#endif

/* The API's version: incremented whenever a signature, an enum value or a behaviour
 * documented here changes. nibble_golden_api_version() returns the library's.
 *   1  the first API.
 *   2  the quantizer's policies (signed zero, non-finite inputs): the enums
 *      NIBBLE_ZERO_* and NIBBLE_NONFINITE_*, nibble_quant_policy and the *_with_policy
 *      functions. Nothing of version 1 changed: its functions use the default
 *      policies, and its structs keep their layout, so a version-1 caller, compiled
 *      or linked, runs unchanged. */
#define NIBBLE_GOLDEN_API_VERSION 2

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
enum {
  NIBBLE_OK = 0,
  NIBBLE_ERR_NULL_POINTER = 1,     /* a required pointer was NULL */
  NIBBLE_ERR_INVALID_ENUM = 2,     /* a format, scale format, mode, rounding or block shape out of range */
  NIBBLE_ERR_INVALID_ARGUMENT = 3, /* a value outside its domain (code > 15, NaN input to encode, RHT settings, ...) */
  NIBBLE_ERR_SIZE = 4,             /* a length that does not match the shape, or a size that overflows */
  NIBBLE_ERR_OUT_OF_MEMORY = 5,
  NIBBLE_ERR_INTERNAL = 6          /* an unexpected failure inside the golden model */
};

/* Element formats (golden nibble::Format). */
enum { NIBBLE_FMT_E2M1 = 0, NIBBLE_FMT_E1M2 = 1, NIBBLE_FMT_INT4 = 2, NIBBLE_FMT_COUNT = 3 };
/* Scale formats (nibble::ScaleFormat). */
enum { NIBBLE_SCALE_FMT_E4M3 = 0, NIBBLE_SCALE_FMT_UE8M0 = 1, NIBBLE_SCALE_FMT_FP32 = 2, NIBBLE_SCALE_FMT_COUNT = 3 };
/* Scale modes (nibble::ScaleMode): fp32 stores FP32 scales, nvfp4 E4M3 scales plus a
 * per-tensor FP32 level, mx-floor and mx-ceil UE8M0 scales. */
enum {
  NIBBLE_SCALE_MODE_FP32 = 0,
  NIBBLE_SCALE_MODE_NVFP4 = 1,
  NIBBLE_SCALE_MODE_MX_FLOOR = 2,
  NIBBLE_SCALE_MODE_MX_CEIL = 3,
  NIBBLE_SCALE_MODE_COUNT = 4
};
/* Element rounding (nibble::Rounding). */
enum { NIBBLE_ROUND_NEAREST_EVEN = 0, NIBBLE_ROUND_STOCHASTIC = 1, NIBBLE_ROUND_COUNT = 2 };
/* Block shapes (nibble::BlockShape): 1x16 and 1x32 along cols, 16x16 is 16 rows by 16 cols. */
enum { NIBBLE_BLOCK_1X16 = 0, NIBBLE_BLOCK_1X32 = 1, NIBBLE_BLOCK_16X16 = 2, NIBBLE_BLOCK_COUNT = 3 };

/* The quantizer's policies (nibble::ZeroPolicy, nibble::NonFinitePolicy; API version 2;
 * docs/numerics.md section 3 states each rule). The zero policy says which code an
 * element whose magnitude rounds to zero gets: POSITIVE code 0 (the default), SIGNED
 * the sign of v kept as IEEE/OCP MX/CUDA/Transformer Engine do (E2M1, E1M2: 0x8 for a
 * negative v; INT4 has no negative zero: 0). The non-finite policy says how NaN and
 * +-Inf reach the scales: FINITE takes the tensor amax over finite values and gives a
 * block holding NaN/Inf the NaN scale (the default); PROPAGATE is Transformer Engine's
 * NVFP4 reference: the amax of every |x|, NaN and Inf carried through the scale rules. */
enum { NIBBLE_ZERO_POSITIVE = 0, NIBBLE_ZERO_SIGNED = 1, NIBBLE_ZERO_COUNT = 2 };
enum { NIBBLE_NONFINITE_FINITE = 0, NIBBLE_NONFINITE_PROPAGATE = 1, NIBBLE_NONFINITE_COUNT = 2 };
typedef struct nibble_quant_policy {
  int zero;      /* NIBBLE_ZERO_* */
  int nonfinite; /* NIBBLE_NONFINITE_* */
} nibble_quant_policy;

/* Quantization settings (nibble::QuantConfig without its policy). Start from
 * nibble_quant_config_init(). */
typedef struct nibble_quant_config {
  int format;         /* NIBBLE_FMT_* */
  int block_shape;    /* NIBBLE_BLOCK_* */
  int scale_mode;     /* NIBBLE_SCALE_MODE_* */
  int rounding;       /* NIBBLE_ROUND_* */
  int sr_bits;        /* random bits per element for stochastic rounding, 1..8 */
  int rht_size;       /* 0 = no Random Hadamard Transform; else 16, 32, 64 or 128 (must divide cols) */
  int rht_round_bf16; /* nonzero: round the RHT's outputs to bfloat16 */
  uint64_t seed;      /* keys the stochastic-rounding bits and the RHT signs */
  uint32_t stream;    /* stochastic-rounding stream */
} nibble_quant_config;

/* A quantized tensor: the configuration and shape, and caller-owned buffers for
 * rows*cols element codes and one scale code per block (block-row-major), with
 * their lengths; nibble_quantized_sizes() gives the lengths a shape needs.
 * tensor_encode/tensor_decode are the per-tensor level (1.0 unless nvfp4). */
typedef struct nibble_quantized {
  nibble_quant_config config;
  int64_t rows;
  int64_t cols;
  uint8_t* codes;
  size_t codes_len;
  uint32_t* scales;
  size_t scales_len;
  float tensor_encode;
  float tensor_decode;
} nibble_quantized;

/* --- Library ------------------------------------------------------------------- */

/* NIBBLE_GOLDEN_API_VERSION as the library was built. */
NIBBLE_GOLDEN_EXPORT int nibble_golden_api_version(void);
/* The calling thread's message for its last call: "" after a success. Valid until
 * the thread's next call into this API; never NULL. */
NIBBLE_GOLDEN_EXPORT const char* nibble_last_error(void);
/* The same message copied into buf (at most len bytes, always NUL-terminated when
 * len > 0). Returns the message's full length. */
NIBBLE_GOLDEN_EXPORT size_t nibble_last_error_copy(char* buf, size_t len);
/* Names as used on Nibble's command lines ("e2m1", "ue8m0", "mx-floor", "sr", "1x16"),
 * or "" for a value out of range (never NULL: SystemVerilog imports them as string). */
NIBBLE_GOLDEN_EXPORT const char* nibble_format_name(int format);
NIBBLE_GOLDEN_EXPORT const char* nibble_scale_format_name(int scale_format);
NIBBLE_GOLDEN_EXPORT const char* nibble_scale_mode_name(int scale_mode);
NIBBLE_GOLDEN_EXPORT const char* nibble_rounding_name(int rounding);
NIBBLE_GOLDEN_EXPORT const char* nibble_block_shape_name(int block_shape);
/* "positive", "signed"; "finite", "propagate" (API version 2). */
NIBBLE_GOLDEN_EXPORT const char* nibble_zero_policy_name(int zero_policy);
NIBBLE_GOLDEN_EXPORT const char* nibble_nonfinite_policy_name(int nonfinite_policy);
/* The scale format a scale mode stores. */
NIBBLE_GOLDEN_EXPORT int nibble_scale_mode_format(int scale_mode, int* scale_format);

/* --- Elements ------------------------------------------------------------------ */

/* The exact value of a 4-bit code (0..15); every code decodes (E2M1/E1M2 0x8 is -0). */
NIBBLE_GOLDEN_EXPORT int nibble_element_decode(int format, uint8_t code, float* value);
/* value -> code, rounded onto the format's grid (golden convert_to_format): RNE with
 * ties to the even code, or stochastic with `random` holding sr_bits (1..8) random
 * bits (< 2^sr_bits; ignored under RNE). Saturates to the largest magnitude (+-Inf
 * included); keeps the sign of zero. NaN is NIBBLE_ERR_INVALID_ARGUMENT. */
NIBBLE_GOLDEN_EXPORT int nibble_element_encode(int format, float value, int rounding, uint32_t random, int sr_bits,
                                               uint8_t* code);

/* --- Scales -------------------------------------------------------------------- */

/* The value of a scale code (E4M3/UE8M0 codes must be <= 255). */
NIBBLE_GOLDEN_EXPORT int nibble_scale_decode(int scale_format, uint32_t code, float* value);
/* value -> scale code. E4M3: round to nearest even, saturate to +-448, NaN -> 0x7F
 * (golden encode_e4m3). FP32: the bit pattern. UE8M0: exact powers of two 2^-127..2^127
 * and NaN (-> 0xFF) only; any other value is NIBBLE_ERR_INVALID_ARGUMENT. */
NIBBLE_GOLDEN_EXPORT int nibble_scale_encode(int scale_format, float value, uint32_t* code);
/* The per-tensor level of a scale mode for a tensor whose largest finite |x| is
 * amax_tensor (golden tensor_scale): 1.0, 1.0 unless nvfp4. */
NIBBLE_GOLDEN_EXPORT int nibble_tensor_scale(int scale_mode, int format, float amax_tensor, float* encode,
                                             float* decode);
/* The same under a non-finite policy (API version 2): amax_tensor is the tensor's amax
 * as the policy takes it (golden scale_amax), finite and >= 0 under FINITE; under
 * PROPAGATE also NaN (S_enc = g = NaN) or +Inf (S_enc = g = 1). */
NIBBLE_GOLDEN_EXPORT int nibble_tensor_scale_with_policy(int scale_mode, int format, int nonfinite,
                                                         float amax_tensor, float* encode, float* decode);
/* The block scale of a finite block with largest |x| = amax under the tensor level
 * (tensor_encode, tensor_decode) (golden block_scale): the stored code, its decoded
 * value and the encode multiplier. A non-finite amax gives the scale format's NaN code
 * (golden nan_block_scale). Any output pointer may be NULL. */
NIBBLE_GOLDEN_EXPORT int nibble_block_scale(int scale_mode, int format, float amax, float tensor_encode,
                                            float tensor_decode, uint32_t* code, float* decode, float* encode);
/* The same under a non-finite policy (API version 2), amax being the block's IEEE amax
 * (NaN if it holds a NaN, else +Inf if it holds an infinity): FINITE gives a non-finite
 * amax the NaN code, as nibble_block_scale does; PROPAGATE evaluates the scale rules on
 * it (NaN: the NaN code; +Inf: E4M3 448, UE8M0 2^127, FP32 +Inf with encode 0). */
NIBBLE_GOLDEN_EXPORT int nibble_block_scale_with_policy(int scale_mode, int format, int nonfinite, float amax,
                                                        float tensor_encode, float tensor_decode, uint32_t* code,
                                                        float* decode, float* encode);

/* --- Quantization -------------------------------------------------------------- */

/* The defaults: E2M1, 1x16, fp32 scales, RNE, sr_bits 8, no RHT, seed 0, stream 0. */
NIBBLE_GOLDEN_EXPORT int nibble_quant_config_init(nibble_quant_config* config);
/* The default policies: NIBBLE_ZERO_POSITIVE, NIBBLE_NONFINITE_FINITE (API version 2). */
NIBBLE_GOLDEN_EXPORT int nibble_quant_policy_init(nibble_quant_policy* policy);
/* The buffer lengths a [rows, cols] tensor needs (rows, cols >= 1). */
NIBBLE_GOLDEN_EXPORT int nibble_quantized_sizes(const nibble_quant_config* config, int64_t rows, int64_t cols,
                                                size_t* codes_len, size_t* scales_len);
/* Quantize x ([q->rows, q->cols], row-major) with q->config into q's buffers (golden
 * quantize); sets q->tensor_encode and q->tensor_decode. With an RHT the codes are in
 * the rotated domain. */
NIBBLE_GOLDEN_EXPORT int nibble_quantize(const float* x, nibble_quantized* q);
/* nibble_quantize under the given policies (API version 2). */
NIBBLE_GOLDEN_EXPORT int nibble_quantize_with_policy(const float* x, nibble_quantized* q,
                                                     const nibble_quant_policy* policy);
/* Quantize exactly one block: count must be the block's element count (16, 32 or 256;
 * a 16x16 block is 16 rows of 16, row-major). Writes count codes and one scale code;
 * tensor_encode/tensor_decode (may be NULL) receive the per-tensor level, which for
 * nvfp4 is computed from this block alone, as for a one-block tensor. */
NIBBLE_GOLDEN_EXPORT int nibble_quantize_block(const nibble_quant_config* config, const float* x, size_t count,
                                               uint8_t* codes, uint32_t* scale_code, float* tensor_encode,
                                               float* tensor_decode);
/* nibble_quantize_block under the given policies (API version 2); under PROPAGATE the
 * per-tensor level comes from this block's IEEE amax. */
NIBBLE_GOLDEN_EXPORT int nibble_quantize_block_with_policy(const nibble_quant_config* config,
                                                           const nibble_quant_policy* policy, const float* x,
                                                           size_t count, uint8_t* codes, uint32_t* scale_code,
                                                           float* tensor_encode, float* tensor_decode);
/* Element values fl(fl(q * s_block) * tensor_decode) of q (golden dequantize) into
 * out[out_len], out_len = rows * cols. */
NIBBLE_GOLDEN_EXPORT int nibble_dequantize(const nibble_quantized* q, float* out, size_t out_len);

/* --- Dot products -------------------------------------------------------------- */

/* One block step of the dot product (golden block_partial_sum, block_product,
 * accumulate): acc_out = fl(acc_in + fl(P * 2^(lsb_a+lsb_b) * fl(sa * sb))) for
 * `count` (1..32) code pairs with scale codes scale_a, scale_b. Start a dot product
 * from acc_in = +0.0f; no per-tensor scale is applied. */
NIBBLE_GOLDEN_EXPORT int nibble_block_dot(int format_a, int scale_format_a, const uint8_t* codes_a, uint32_t scale_a,
                                          int format_b, int scale_format_b, const uint8_t* codes_b, uint32_t scale_b,
                                          size_t count, float acc_in, float* acc_out);
/* Row ra of a times row rb of b, per-tensor scales included (golden dot_rows). */
NIBBLE_GOLDEN_EXPORT int nibble_dot_rows(const nibble_quantized* a, int64_t ra, const nibble_quantized* b, int64_t rb,
                                         float* out);
/* C = A * B^T (golden gemm): a is [M, K], b is [N, K], c is row-major [M, N] with
 * c_len = M * N. The operands must share K and their RHT settings. */
NIBBLE_GOLDEN_EXPORT int nibble_gemm(const nibble_quantized* a, const nibble_quantized* b, float* c, size_t c_len);

/* --- DPI-C entry points ----------------------------------------------------------
 * Scalar and bit-vector forms of the functions above for SystemVerilog's DPI-C
 * (package nibble_golden_dpi, golden/capi/sv/nibble_golden_dpi.sv). Floats travel as
 * their 32-bit patterns; a block of 16 binary32 values is 16 words (word i = element i,
 * SV `bit [15:0][31:0]`); 16 codes are 2 words with code i in bits 4i+3..4i (SV
 * `bit [15:0][3:0]`), the layout of the RTL's packed code ports. */

NIBBLE_GOLDEN_EXPORT int nibble_dpi_element_decode(int format, int code, uint32_t* value_bits);
NIBBLE_GOLDEN_EXPORT int nibble_dpi_element_encode(int format, uint32_t value_bits, int rounding, int random,
                                                   int sr_bits, int* code);
/* nibble_quantize_block on a 1x16 block with the given settings (RHT off). */
NIBBLE_GOLDEN_EXPORT int nibble_dpi_quantize_block16(int format, int scale_mode, int rounding, int sr_bits,
                                                     uint64_t seed, uint32_t stream, const uint32_t* x_bits,
                                                     uint32_t* codes, uint32_t* scale_code,
                                                     uint32_t* tensor_encode_bits, uint32_t* tensor_decode_bits);
/* The same under the policies zero (NIBBLE_ZERO_*) and nonfinite (NIBBLE_NONFINITE_*)
 * (API version 2). */
NIBBLE_GOLDEN_EXPORT int nibble_dpi_quantize_block16_with_policy(int format, int scale_mode, int rounding,
                                                                 int sr_bits, int zero, int nonfinite, uint64_t seed,
                                                                 uint32_t stream, const uint32_t* x_bits,
                                                                 uint32_t* codes, uint32_t* scale_code,
                                                                 uint32_t* tensor_encode_bits,
                                                                 uint32_t* tensor_decode_bits);
/* The stochastic-rounding bits golden uses for the 16 elements of that block (Philox
 * group 0, domain 0): 4 words, element i's sr_bits random bits in byte i. */
NIBBLE_GOLDEN_EXPORT int nibble_dpi_sr_random16(uint64_t seed, uint32_t stream, int sr_bits, uint32_t* random);
/* nibble_block_dot on 16 code pairs. */
NIBBLE_GOLDEN_EXPORT int nibble_dpi_block_dot16(int format_a, int scale_format_a, const uint32_t* codes_a,
                                                uint32_t scale_a, int format_b, int scale_format_b,
                                                const uint32_t* codes_b, uint32_t scale_b, uint32_t acc_in_bits,
                                                uint32_t* acc_out_bits);

#ifdef __cplusplus
}
#endif

#endif /* NIBBLE_GOLDEN_H */
